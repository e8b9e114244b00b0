// Program "product": 2 kernels, rendered by Tartan's OpenCL backend.
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
kernel gates -> b2 [6, 40]
  schedule: gemm batch=[] m=[x0] n=[x1] k=[k] parallel=2 workers=all vector=0 unroll=0
  for x0 in [0, 6) parallel:
    for x1 in [0, 40) parallel:
      acc = 0
      for k in [0, 39]:
        acc += (b0[x0, k] * b1[k, x1])
      b2[x0, x1] = acc
*/
inline float k0_gates_A(__global const float* b0, const int bt, const int i, const int kk) {
	return b0[(int)i * 40 + (int)kk];
}
inline float k0_gates_B(__global const float* b1, const int bt, const int i, const int kk) {
	return b1[(int)i + (int)kk * 40];
}
inline void k0_gates_store(__global float* b2, const int bt, const int m, const int n, float acc) {
	const int x0 = m;
	const int x1 = n;
	b2[((x0 * 40) + x1)] = acc;
}
// gemm 64x64x16 per-item 4x4 split 1
#if !defined(TT_SHARD) || TT_SHARD == 0
__kernel __attribute__((reqd_work_group_size(256, 1, 1)))
void k0_gates(__global float* restrict b2, __global const float* restrict b0, __global const float* restrict b1) {
	__local float As[2][1152] __attribute__((aligned(16)));
	__local float Bs[2][1152] __attribute__((aligned(16)));
	const int tid = get_local_id(0);
	const int grp = get_group_id(0);
	const int tile = grp % 1, z = grp / 1;
	const int band = tile / 8, inBand = tile % 8;
	const int rows = min(1 - band * 8, 8);
	const int m0 = (band * 8 + inBand % rows) * 64, n0 = (inBand / rows) * 64;
	const int bt = z / 1, split = z % 1;
	const int kBegin = split * 48, kEnd = min(40, kBegin + 48);
	float ra[4], rb[4];
	const int tm = tid / 16, tn = tid % 16;
	float acc[4][4];
	acc[0][0] = 0;
	acc[0][1] = 0;
	acc[0][2] = 0;
	acc[0][3] = 0;
	acc[1][0] = 0;
	acc[1][1] = 0;
	acc[1][2] = 0;
	acc[1][3] = 0;
	acc[2][0] = 0;
	acc[2][1] = 0;
	acc[2][2] = 0;
	acc[2][3] = 0;
	acc[3][0] = 0;
	acc[3][1] = 0;
	acc[3][2] = 0;
	acc[3][3] = 0;
	{ const int mm = m0 + tid / 16, kk = kBegin + tid % 16; ra[0] = (mm < 6 && kk < kEnd) ? k0_gates_A(b0, bt, mm, kk) : 0; }
	{ const int mm = m0 + tid / 16 + 16, kk = kBegin + tid % 16; ra[1] = (mm < 6 && kk < kEnd) ? k0_gates_A(b0, bt, mm, kk) : 0; }
	{ const int mm = m0 + tid / 16 + 32, kk = kBegin + tid % 16; ra[2] = (mm < 6 && kk < kEnd) ? k0_gates_A(b0, bt, mm, kk) : 0; }
	{ const int mm = m0 + tid / 16 + 48, kk = kBegin + tid % 16; ra[3] = (mm < 6 && kk < kEnd) ? k0_gates_A(b0, bt, mm, kk) : 0; }
	{ const int nn = n0 + tid % 64, kk = kBegin + tid / 64; rb[0] = (nn < 40 && kk < kEnd) ? k0_gates_B(b1, bt, nn, kk) : 0; }
	{ const int nn = n0 + tid % 64, kk = kBegin + tid / 64 + 4; rb[1] = (nn < 40 && kk < kEnd) ? k0_gates_B(b1, bt, nn, kk) : 0; }
	{ const int nn = n0 + tid % 64, kk = kBegin + tid / 64 + 8; rb[2] = (nn < 40 && kk < kEnd) ? k0_gates_B(b1, bt, nn, kk) : 0; }
	{ const int nn = n0 + tid % 64, kk = kBegin + tid / 64 + 12; rb[3] = (nn < 40 && kk < kEnd) ? k0_gates_B(b1, bt, nn, kk) : 0; }
	As[0][((tid + 0) % 16) * 72 + (tid + 0) / 16] = ra[0];
	As[0][((tid + 256) % 16) * 72 + (tid + 256) / 16] = ra[1];
	As[0][((tid + 512) % 16) * 72 + (tid + 512) / 16] = ra[2];
	As[0][((tid + 768) % 16) * 72 + (tid + 768) / 16] = ra[3];
	Bs[0][((tid + 0) / 64) * 72 + (tid + 0) % 64] = rb[0];
	Bs[0][((tid + 256) / 64) * 72 + (tid + 256) % 64] = rb[1];
	Bs[0][((tid + 512) / 64) * 72 + (tid + 512) % 64] = rb[2];
	Bs[0][((tid + 768) / 64) * 72 + (tid + 768) % 64] = rb[3];
	barrier(CLK_LOCAL_MEM_FENCE);
	int buf = 0;
	for (int k0 = kBegin; k0 < kEnd; k0 += 16) {
		const int more = k0 + 16 < kEnd;
		if (more) {
			{ const int mm = m0 + tid / 16, kk = k0 + 16 + tid % 16; ra[0] = (mm < 6 && kk < kEnd) ? k0_gates_A(b0, bt, mm, kk) : 0; }
			{ const int mm = m0 + tid / 16 + 16, kk = k0 + 16 + tid % 16; ra[1] = (mm < 6 && kk < kEnd) ? k0_gates_A(b0, bt, mm, kk) : 0; }
			{ const int mm = m0 + tid / 16 + 32, kk = k0 + 16 + tid % 16; ra[2] = (mm < 6 && kk < kEnd) ? k0_gates_A(b0, bt, mm, kk) : 0; }
			{ const int mm = m0 + tid / 16 + 48, kk = k0 + 16 + tid % 16; ra[3] = (mm < 6 && kk < kEnd) ? k0_gates_A(b0, bt, mm, kk) : 0; }
			{ const int nn = n0 + tid % 64, kk = k0 + 16 + tid / 64; rb[0] = (nn < 40 && kk < kEnd) ? k0_gates_B(b1, bt, nn, kk) : 0; }
			{ const int nn = n0 + tid % 64, kk = k0 + 16 + tid / 64 + 4; rb[1] = (nn < 40 && kk < kEnd) ? k0_gates_B(b1, bt, nn, kk) : 0; }
			{ const int nn = n0 + tid % 64, kk = k0 + 16 + tid / 64 + 8; rb[2] = (nn < 40 && kk < kEnd) ? k0_gates_B(b1, bt, nn, kk) : 0; }
			{ const int nn = n0 + tid % 64, kk = k0 + 16 + tid / 64 + 12; rb[3] = (nn < 40 && kk < kEnd) ? k0_gates_B(b1, bt, nn, kk) : 0; }
		}
		__local const float* restrict sA = As[buf];
		__local const float* restrict sB = Bs[buf];
		#pragma unroll
		for (int kk = 0; kk < 16; kk++) {
			const float4 av0 = *(__local const float4*)(sA + kk * 72 + tm * 4 + 0);
			const float4 bv0 = *(__local const float4*)(sB + kk * 72 + tn * 4 + 0);
			const float a0 = av0.x;
			const float a1 = av0.y;
			const float a2 = av0.z;
			const float a3 = av0.w;
			const float b0 = bv0.x;
			const float b1 = bv0.y;
			const float b2 = bv0.z;
			const float b3 = bv0.w;
			acc[0][0] += a0 * b0; acc[0][1] += a0 * b1; acc[0][2] += a0 * b2; acc[0][3] += a0 * b3;
			acc[1][0] += a1 * b0; acc[1][1] += a1 * b1; acc[1][2] += a1 * b2; acc[1][3] += a1 * b3;
			acc[2][0] += a2 * b0; acc[2][1] += a2 * b1; acc[2][2] += a2 * b2; acc[2][3] += a2 * b3;
			acc[3][0] += a3 * b0; acc[3][1] += a3 * b1; acc[3][2] += a3 * b2; acc[3][3] += a3 * b3;
		}
		if (more) {
			As[buf ^ 1][((tid + 0) % 16) * 72 + (tid + 0) / 16] = ra[0];
			As[buf ^ 1][((tid + 256) % 16) * 72 + (tid + 256) / 16] = ra[1];
			As[buf ^ 1][((tid + 512) % 16) * 72 + (tid + 512) / 16] = ra[2];
			As[buf ^ 1][((tid + 768) % 16) * 72 + (tid + 768) / 16] = ra[3];
			Bs[buf ^ 1][((tid + 0) / 64) * 72 + (tid + 0) % 64] = rb[0];
			Bs[buf ^ 1][((tid + 256) / 64) * 72 + (tid + 256) % 64] = rb[1];
			Bs[buf ^ 1][((tid + 512) / 64) * 72 + (tid + 512) % 64] = rb[2];
			Bs[buf ^ 1][((tid + 768) / 64) * 72 + (tid + 768) % 64] = rb[3];
		}
		barrier(CLK_LOCAL_MEM_FENCE);
		buf ^= 1;
	}
	{
		const int m = m0 + tm * 4 + 0, n = n0 + tn * 4 + 0;
		if (m < 6 && n < 40) {
			k0_gates_store(b2, bt, m, n, acc[0][0]);
		}
	}
	{
		const int m = m0 + tm * 4 + 0, n = n0 + tn * 4 + 1;
		if (m < 6 && n < 40) {
			k0_gates_store(b2, bt, m, n, acc[0][1]);
		}
	}
	{
		const int m = m0 + tm * 4 + 0, n = n0 + tn * 4 + 2;
		if (m < 6 && n < 40) {
			k0_gates_store(b2, bt, m, n, acc[0][2]);
		}
	}
	{
		const int m = m0 + tm * 4 + 0, n = n0 + tn * 4 + 3;
		if (m < 6 && n < 40) {
			k0_gates_store(b2, bt, m, n, acc[0][3]);
		}
	}
	{
		const int m = m0 + tm * 4 + 1, n = n0 + tn * 4 + 0;
		if (m < 6 && n < 40) {
			k0_gates_store(b2, bt, m, n, acc[1][0]);
		}
	}
	{
		const int m = m0 + tm * 4 + 1, n = n0 + tn * 4 + 1;
		if (m < 6 && n < 40) {
			k0_gates_store(b2, bt, m, n, acc[1][1]);
		}
	}
	{
		const int m = m0 + tm * 4 + 1, n = n0 + tn * 4 + 2;
		if (m < 6 && n < 40) {
			k0_gates_store(b2, bt, m, n, acc[1][2]);
		}
	}
	{
		const int m = m0 + tm * 4 + 1, n = n0 + tn * 4 + 3;
		if (m < 6 && n < 40) {
			k0_gates_store(b2, bt, m, n, acc[1][3]);
		}
	}
	{
		const int m = m0 + tm * 4 + 2, n = n0 + tn * 4 + 0;
		if (m < 6 && n < 40) {
			k0_gates_store(b2, bt, m, n, acc[2][0]);
		}
	}
	{
		const int m = m0 + tm * 4 + 2, n = n0 + tn * 4 + 1;
		if (m < 6 && n < 40) {
			k0_gates_store(b2, bt, m, n, acc[2][1]);
		}
	}
	{
		const int m = m0 + tm * 4 + 2, n = n0 + tn * 4 + 2;
		if (m < 6 && n < 40) {
			k0_gates_store(b2, bt, m, n, acc[2][2]);
		}
	}
	{
		const int m = m0 + tm * 4 + 2, n = n0 + tn * 4 + 3;
		if (m < 6 && n < 40) {
			k0_gates_store(b2, bt, m, n, acc[2][3]);
		}
	}
	{
		const int m = m0 + tm * 4 + 3, n = n0 + tn * 4 + 0;
		if (m < 6 && n < 40) {
			k0_gates_store(b2, bt, m, n, acc[3][0]);
		}
	}
	{
		const int m = m0 + tm * 4 + 3, n = n0 + tn * 4 + 1;
		if (m < 6 && n < 40) {
			k0_gates_store(b2, bt, m, n, acc[3][1]);
		}
	}
	{
		const int m = m0 + tm * 4 + 3, n = n0 + tn * 4 + 2;
		if (m < 6 && n < 40) {
			k0_gates_store(b2, bt, m, n, acc[3][2]);
		}
	}
	{
		const int m = m0 + tm * 4 + 3, n = n0 + tn * 4 + 3;
		if (m < 6 && n < 40) {
			k0_gates_store(b2, bt, m, n, acc[3][3]);
		}
	}
}
#endif

/*
kernel cell -> b3 [6, 40]
  schedule: loops parallel=0 workers=all vector=0 unroll=0
  for x0 in [0, 6):
    for x1 in [0, 40):
      b3[x0, x1] = tanh(b2[x0, x1])
*/
#if !defined(TT_SHARD) || TT_SHARD == 0
__kernel void k1_cell(__global float* restrict b3, __global const float* restrict b2) {
	const int gid = (int)get_global_id(0);
	if (gid >= 240) return;
	const int x1 = (gid % 40);
	const int t_x1 = gid / 40;
	const int x0 = t_x1;
	float acc = 0.0f;
	const float v = tanh(b2[((x0 * 40) + x1)]);
	acc = v;
	b3[gid] = acc;
}
#endif
// launch k0_gates: kernel 0, gemm gemm 64x64x16 per-item 4x4 split 1, 256 work-items, local 256, args b2 b0 b1
// launch k1_cell: kernel 1, loops, 240 work-items, local 0, args b3 b2
