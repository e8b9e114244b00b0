// Program "conv": 1 kernels, rendered by Tartan's OpenCL backend.
// Helpers shared by every kernel of the program.

// Floor division and modulo by a positive constant c.
inline int tt_fdiv_i(int a, int c) { int q = a / c; return (a % c != 0 && a < 0) ? q - 1 : q; }
inline int tt_fmod_i(int a, int c) { int r = a % c; return r < 0 ? r + c : r; }
inline long tt_fdiv_l(long a, long c) { long q = a / c; return (a % c != 0 && a < 0) ? q - 1 : q; }
inline long tt_fmod_l(long a, long c) { long r = a % c; return r < 0 ? r + c : r; }

// A gathered index: the integer value of a loaded element. Non-finite values
// give an index that is out of range for every buffer.
inline long tt_gix_f(float x) { return (isnan(x) || isinf(x)) ? (long)(-2147483647-1) : convert_long_sat(x); }

// Float to integer conversion: toward zero, saturating, NaN to 0.
inline long tt_f2l_f(float x) { return isnan(x) ? 0L : convert_long_sat(x); }
inline long tt_gix_i(int x) { return (long)x; }
inline long tt_gix_l(long x) { return x; }
inline long tt_gix_b(uchar x) { return (long)x; }

// Max and min that propagate NaN, as the reference executor does.
inline float tt_max_f(float a, float b) { return (isnan(a) || isnan(b)) ? a + b : fmax(a, b); }
inline float tt_min_f(float a, float b) { return (isnan(a) || isnan(b)) ? a + b : fmin(a, b); }

inline float tt_sign_f(float a) { return a > 0.0f ? 1.0f : (a < 0.0f ? -1.0f : a); }
inline int tt_sign_i(int a) { return (a > 0) - (a < 0); }
inline long tt_sign_l(long a) { return (long)((a > 0) - (a < 0)); }
inline int tt_abs_i(int a) { return a < 0 ? (int)(0u - (uint)a) : a; }
inline long tt_abs_l(long a) { return a < 0 ? -a : a; }
inline float tt_sigmoid_f(float a) { return 1.0f / (1.0f + exp(-a)); }

// Integer division truncates toward zero; a zero divisor gives 0.
inline int tt_div_i(int a, int b) { return b == 0 ? 0 : (b == -1 ? (int)(0u - (uint)a) : a / b); }
inline long tt_div_l(long a, long b) { return b == 0 ? 0 : (b == -1 ? (long)(0ul - (ulong)a) : a / b); }

// Philox4x32-10 (Salmon et al., SC'11) and the uniform numbers of
// tile.RandomOp: element p is word p mod 4 of the generator applied to the
// counter (p/4, stream) under the key seed, top 24 bits scaled by 2^-24.
inline uint4 tt_philox(uint4 c, uint2 k) {
	for (int i = 0; i < 10; i++) {
		uint hi0 = mul_hi(0xD2511F53u, c.x), lo0 = 0xD2511F53u * c.x;
		uint hi1 = mul_hi(0xCD9E8D57u, c.z), lo1 = 0xCD9E8D57u * c.z;
		c = (uint4)(hi1 ^ c.y ^ k.x, lo1, hi0 ^ c.w ^ k.y, lo0);
		k.x += 0x9E3779B9u;
		k.y += 0xBB67AE85u;
	}
	return c;
}
inline float tt_uniform(ulong seed, ulong stream, long p) {
	if (p < 0) p = 0;
	ulong q = (ulong)(p / 4);
	uint4 w = tt_philox((uint4)((uint)q, (uint)(q >> 32), (uint)stream, (uint)(stream >> 32)),
		(uint2)((uint)seed, (uint)(seed >> 32)));
	int r = (int)(p % 4);
	uint x = r == 0 ? w.x : (r == 1 ? w.y : (r == 2 ? w.z : w.w));
	return (float)(x >> 8) * (1.0f / 16777216.0f);
}

/*
kernel conv -> b2 [2, 10, 8]
  schedule: gemm batch=[] m=[x0 x1] n=[x2] k=[k c] guard=a parallel=3 workers=all vector=0 unroll=0
  for x0 in [0, 2) parallel:
    for x1 in [0, 10) parallel:
      for x2 in [0, 8) parallel:
        acc = 0
        for k in [0, 2]:
          for c in [0, 3]:
            acc += (b0[x0, x1 + k - 1, c] * b1[k, c, x2])
        b2[x0, x1, x2] = acc
*/
inline float k0_conv_B(__global const float* b1, const int bt, const int i, const int kk) {
	return b1[(int)i + (int)kk * 8];
}
inline void k0_conv_store(__global float* b2, const int bt, const int m, const int n, float acc) {
	const int x1 = (m % 10);
	const int t_x1 = m / 10;
	const int x0 = t_x1;
	const int x2 = n;
	b2[((x0 * 80) + (x1 * 8) + x2)] = acc;
}
// gemm 32x32x16 per-item 2x2 split 1
#if !defined(TT_SHARD) || TT_SHARD == 0
__kernel __attribute__((reqd_work_group_size(256, 1, 1)))
void k0_conv(__global float* restrict b2, __global const float* restrict b0, __global const float* restrict b1) {
	__local float As[2][640] __attribute__((aligned(16)));
	__local float Bs[2][640] __attribute__((aligned(16)));
	const int tid = get_local_id(0);
	const int grp = get_group_id(0);
	const int tile = grp % 1, z = grp / 1;
	const int band = tile / 8, inBand = tile % 8;
	const int rows = min(1 - band * 8, 8);
	const int m0 = (band * 8 + inBand % rows) * 32, n0 = (inBand / rows) * 32;
	const int bt = z / 1, split = z % 1;
	const int kBegin = split * 16, kEnd = min(12, kBegin + 16);
	float ra[2], rb[2];
	const int tm = tid / 16, tn = tid % 16;
	float acc[2][2];
	acc[0][0] = 0;
	acc[0][1] = 0;
	acc[1][0] = 0;
	acc[1][1] = 0;
	int sA0_o, sA0_g0;
	{
		const int s_bt = bt;
		const int s_i = m0 + tid / 16;
		const int x1 = (s_i % 10);
		const int t_x1 = s_i / 10;
		const int x0 = t_x1;
		sA0_o = x0 * 40 + x1 * 4 - 4;
		sA0_g0 = x1 - 1;
	}
	int sA1_o, sA1_g0;
	{
		const int s_bt = bt;
		const int s_i = m0 + tid / 16 + 16;
		const int x1 = (s_i % 10);
		const int t_x1 = s_i / 10;
		const int x0 = t_x1;
		sA1_o = x0 * 40 + x1 * 4 - 4;
		sA1_g0 = x1 - 1;
	}
	{
		int rA0_o, rA0_g0;
		{
			const int s_kk = kBegin + tid % 16;
			const int r1 = (s_kk % 4);
			const int t_r1 = s_kk / 4;
			const int r0 = t_r1;
			rA0_o = r0 * 4 + r1;
			rA0_g0 = r0;
		}
		{ const int mm = m0 + tid / 16, kk = kBegin + tid % 16; ra[0] = (mm < 20 && kk < kEnd) ? ((sA0_g0 + rA0_g0 >= 0 && sA0_g0 + rA0_g0 < 10) ? b0[sA0_o + rA0_o] : 0) : 0; }
		{ const int mm = m0 + tid / 16 + 16, kk = kBegin + tid % 16; ra[1] = (mm < 20 && kk < kEnd) ? ((sA1_g0 + rA0_g0 >= 0 && sA1_g0 + rA0_g0 < 10) ? b0[sA1_o + rA0_o] : 0) : 0; }
	}
	{ const int nn = n0 + tid % 32, kk = kBegin + tid / 32; rb[0] = (nn < 8 && kk < kEnd) ? k0_conv_B(b1, bt, nn, kk) : 0; }
	{ const int nn = n0 + tid % 32, kk = kBegin + tid / 32 + 8; rb[1] = (nn < 8 && kk < kEnd) ? k0_conv_B(b1, bt, nn, kk) : 0; }
	As[0][((tid + 0) % 16) * 40 + (tid + 0) / 16] = ra[0];
	As[0][((tid + 256) % 16) * 40 + (tid + 256) / 16] = ra[1];
	Bs[0][((tid + 0) / 32) * 40 + (tid + 0) % 32] = rb[0];
	Bs[0][((tid + 256) / 32) * 40 + (tid + 256) % 32] = rb[1];
	barrier(CLK_LOCAL_MEM_FENCE);
	int buf = 0;
	for (int k0 = kBegin; k0 < kEnd; k0 += 16) {
		const int more = k0 + 16 < kEnd;
		if (more) {
			{
				int rA0_o, rA0_g0;
				{
					const int s_kk = k0 + 16 + tid % 16;
					const int r1 = (s_kk % 4);
					const int t_r1 = s_kk / 4;
					const int r0 = t_r1;
					rA0_o = r0 * 4 + r1;
					rA0_g0 = r0;
				}
				{ const int mm = m0 + tid / 16, kk = k0 + 16 + tid % 16; ra[0] = (mm < 20 && kk < kEnd) ? ((sA0_g0 + rA0_g0 >= 0 && sA0_g0 + rA0_g0 < 10) ? b0[sA0_o + rA0_o] : 0) : 0; }
				{ const int mm = m0 + tid / 16 + 16, kk = k0 + 16 + tid % 16; ra[1] = (mm < 20 && kk < kEnd) ? ((sA1_g0 + rA0_g0 >= 0 && sA1_g0 + rA0_g0 < 10) ? b0[sA1_o + rA0_o] : 0) : 0; }
			}
			{ const int nn = n0 + tid % 32, kk = k0 + 16 + tid / 32; rb[0] = (nn < 8 && kk < kEnd) ? k0_conv_B(b1, bt, nn, kk) : 0; }
			{ const int nn = n0 + tid % 32, kk = k0 + 16 + tid / 32 + 8; rb[1] = (nn < 8 && kk < kEnd) ? k0_conv_B(b1, bt, nn, kk) : 0; }
		}
		__local const float* restrict sA = As[buf];
		__local const float* restrict sB = Bs[buf];
		#pragma unroll
		for (int kk = 0; kk < 16; kk++) {
			const float a0 = sA[kk * 40 + tm + 0];
			const float a1 = sA[kk * 40 + tm + 16];
			const float b0 = sB[kk * 40 + tn + 0];
			const float b1 = sB[kk * 40 + tn + 16];
			acc[0][0] += a0 * b0; acc[0][1] += a0 * b1;
			acc[1][0] += a1 * b0; acc[1][1] += a1 * b1;
		}
		if (more) {
			As[buf ^ 1][((tid + 0) % 16) * 40 + (tid + 0) / 16] = ra[0];
			As[buf ^ 1][((tid + 256) % 16) * 40 + (tid + 256) / 16] = ra[1];
			Bs[buf ^ 1][((tid + 0) / 32) * 40 + (tid + 0) % 32] = rb[0];
			Bs[buf ^ 1][((tid + 256) / 32) * 40 + (tid + 256) % 32] = rb[1];
		}
		barrier(CLK_LOCAL_MEM_FENCE);
		buf ^= 1;
	}
	{
		const int m = m0 + tm + 0, n = n0 + tn + 0;
		if (m < 20 && n < 8) {
			k0_conv_store(b2, bt, m, n, acc[0][0]);
		}
	}
	{
		const int m = m0 + tm + 0, n = n0 + tn + 16;
		if (m < 20 && n < 8) {
			k0_conv_store(b2, bt, m, n, acc[0][1]);
		}
	}
	{
		const int m = m0 + tm + 16, n = n0 + tn + 0;
		if (m < 20 && n < 8) {
			k0_conv_store(b2, bt, m, n, acc[1][0]);
		}
	}
	{
		const int m = m0 + tm + 16, n = n0 + tn + 16;
		if (m < 20 && n < 8) {
			k0_conv_store(b2, bt, m, n, acc[1][1]);
		}
	}
}
#endif
// launch k0_conv: kernel 0, gemm gemm 32x32x16 per-item 2x2 split 1, 256 work-items, local 256, args b2 b0 b1
