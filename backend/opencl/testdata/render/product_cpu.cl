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
// loops: matrix product on a CPU device

/*
kernel cell -> b3 [6, 40]
  schedule: loops parallel=0 workers=all vector=0 unroll=0
  for x0 in [0, 6):
    for x1 in [0, 40):
      b3[x0, x1] = tanh(b2[x0, x1])
*/
inline void k0_gates_at(__global float* restrict b2, __global const float* restrict b0, __global const float* restrict b1, const int gid) {
	if (gid >= 240) return;
	const int x1 = (gid % 40);
	const int t_x1 = gid / 40;
	const int x0 = t_x1;
	float acc = 0.0f;
	for (int r0 = 0; r0 <= 39; r0++) {
		const float v = (b0[((x0 * 40) + r0)] * b1[(x1 + (r0 * 40))]);
		acc = acc + v;
	}
	b2[gid] = acc;
}
inline void k1_cell_at(__global float* restrict b3, __global const float* restrict b2, const int gid) {
	if (gid >= 240) return;
	const int x1 = (gid % 40);
	const int t_x1 = gid / 40;
	const int x0 = t_x1;
	float acc = 0.0f;
	const float v = tanh(b2[((x0 * 40) + x1)]);
	acc = v;
	b3[gid] = acc;
}
// g0_chain2: chain k0_gates|k1_cell
#if !defined(TT_SHARD) || TT_SHARD == 0
__kernel __attribute__((reqd_work_group_size(256, 1, 1))) void g0_chain2(__global float* b2, __global const float* b0, __global const float* b1, __global float* b3) {
	const int w = (int)get_local_id(0);
	for (int i = w; i < 240; i += 256) k0_gates_at(b2, b0, b1, i);
	barrier(CLK_GLOBAL_MEM_FENCE);
	for (int i = w; i < 240; i += 256) k1_cell_at(b3, b2, i);
}
#endif
// launch g0_chain2: kernel 0, chain k0_gates|k1_cell, 256 work-items, local 256, args b2 b0 b1 b3
