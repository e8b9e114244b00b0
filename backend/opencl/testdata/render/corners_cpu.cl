// Program "corners": 8 kernels, rendered by Tartan's OpenCL backend.
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
kernel slidemax -> b4 [6]
  schedule: loops parallel=0 workers=all vector=0 unroll=0
  for x0 in [0, 6):
    acc = 0
    for r in [0, 2]:
      acc = max(acc, b0[x0 + r - 1])
    b4[x0] = acc
*/

/*
kernel prodwhere -> b5 [4]
  schedule: loops parallel=0 workers=all vector=0 unroll=0
  for x0 in [0, 4):
    acc = 0
    for r in [0, 4]:
      if 0 <= r - 2*x0 + 1 < 3:
        acc *= b1[x0, r]
    b5[x0] = acc
*/

/*
kernel assign -> b6 [4]
  schedule: loops parallel=0 workers=all vector=0 unroll=0
  for x0 in [0, 4):
    acc = 0
    for r in [0, 4]:
      acc = b1[x0, r]
    b6[x0] = acc
*/

/*
kernel gather -> b7 [7]
  schedule: loops parallel=0 workers=all vector=0 unroll=0
  for x0 in [0, 7):
    b7[x0] = b0[int(b2[x0]); fill -7.5]
*/

/*
kernel empty -> b8 [3]
  schedule: loops parallel=0 workers=all vector=0 unroll=0
  for x0 in [0, 3):
    acc = 0
    for r in [2, 1]:
      acc = max(acc, b0[x0])
    b8[x0] = acc
*/

/*
kernel floors -> b9 [9, 2]
  schedule: loops parallel=0 workers=all vector=0 unroll=0
  for x0 in [0, 9):
    for x1 in [0, 2):
      b9[x0, x1] = (i64(10*((x0 - 5) div 3)) + i64((x0 - 5 + 7*x1) mod 4 + 0))
*/

/*
kernel epilogue -> b10 [4]
  schedule: loops parallel=0 workers=all vector=0 unroll=0
  for x0 in [0, 4):
    acc = 0
    for r in [1, 4]:
      acc += (b1[x0, r] * b1[x0, r - 1])
    b10[x0] = (tanh(acc) * b0[x0])
*/

/*
kernel update -> b3 [6]
  schedule: loops parallel=0 workers=all vector=0 unroll=0
  for x0 in [0, 6):
    b3[x0] = (b3[x0] + (b0[x0] * 0.5))
*/
inline void k0_slidemax_at(__global float* restrict b4, __global const float* restrict b0, const int gid) {
	if (gid >= 6) return;
	const int x0 = gid;
	float acc = (-INFINITY);
	uchar any = 0;
	for (int r0 = 0; r0 <= 2; r0++) {
		const float v = (((x0 + r0 - 1) >= 0 && (x0 + r0 - 1) < 6) ? b0[(x0 + r0 - 1)] : 0.0f);
		if (((x0 + r0 - 1) >= 0 && (x0 + r0 - 1) < 6)) {
			acc = tt_max_f(acc, v);
			any = 1;
		}
	}
	if (!any) acc = 0.0f;
	b4[gid] = acc;
}
inline void k1_prodwhere_at(__global float* restrict b5, __global const float* restrict b1, const int gid) {
	if (gid >= 4) return;
	const int x0 = gid;
	float acc = 1.0f;
	uchar any = 0;
	for (int r0 = 0; r0 <= 4; r0++) {
		if ((r0 - (x0 * 2) + 1) >= 0 && (r0 - (x0 * 2) + 1) < 3) {
			const float v = b1[((x0 * 5) + r0)];
			acc = acc * v;
			any = 1;
		}
	}
	if (!any) acc = 0.0f;
	b5[gid] = acc;
}
inline void k2_assign_at(__global float* restrict b6, __global const float* restrict b1, const int gid) {
	if (gid >= 4) return;
	const int x0 = gid;
	float acc = 0.0f;
	for (int r0 = 0; r0 <= 4; r0++) {
		const float v = b1[((x0 * 5) + r0)];
		acc = v;
	}
	b6[gid] = acc;
}
inline void k3_gather_at(__global float* restrict b7, __global const float* restrict b0, __global const float* restrict b2, const int gid) {
	if (gid >= 7) return;
	const int x0 = gid;
	float acc = 0.0f;
	const float v = ((tt_gix_f(b2[x0]) >= 0 && tt_gix_f(b2[x0]) < 6L) ? b0[tt_gix_f(b2[x0])] : (-7.5f));
	acc = v;
	b7[gid] = acc;
}
inline void k4_empty_at(__global float* restrict b8, __global const float* restrict b0, const int gid) {
	if (gid >= 3) return;
	const int x0 = gid;
	float acc = (-INFINITY);
	uchar any = 0;
	for (int r0 = 2; r0 <= 1; r0++) {
		const float v = b0[x0];
		acc = tt_max_f(acc, v);
		any = 1;
	}
	if (!any) acc = 0.0f;
	b8[gid] = acc;
}
inline void k5_floors_at(__global long* restrict b9, const int gid) {
	if (gid >= 18) return;
	const int x1 = (gid % 2);
	const int t_x1 = gid / 2;
	const int x0 = t_x1;
	long acc = 0L;
	const long v = ((long)((ulong)(((long)(tt_fdiv_i((x0 - 5), 3) * 10))) + (ulong)(((long)(tt_fmod_i((x0 - 5 + (x1 * 7)), 4) + 0)))));
	acc = v;
	b9[gid] = acc;
}
inline void k6_epilogue_at(__global float* restrict b10, __global const float* restrict b0, __global const float* restrict b1, const int gid) {
	if (gid >= 4) return;
	const int x0 = gid;
	float acc = 0.0f;
	for (int r0 = 1; r0 <= 4; r0++) {
		const float v = (b1[((x0 * 5) + r0)] * b1[((x0 * 5) + r0 - 1)]);
		acc = acc + v;
	}
	b10[gid] = (tanh(acc) * b0[x0]);
}
inline void k7_update_at(__global float* b3, __global const float* b0, const int gid) {
	if (gid >= 6) return;
	const int x0 = gid;
	float acc = 0.0f;
	const float v = (b3[x0] + (b0[x0] * 0.5f));
	acc = v;
	b3[gid] = acc;
}
// g0_merged8: merged k0_slidemax+k1_prodwhere+k2_assign+k3_gather+k4_empty+k5_floors+k6_epilogue+k7_update
#if !defined(TT_SHARD) || TT_SHARD == 0
__kernel void g0_merged8(__global float* b4, __global const float* b0, __global float* b5, __global const float* b1, __global float* b6, __global float* b7, __global const float* b2, __global float* b8, __global long* b9, __global float* b10, __global float* b3) {
	const int w = (int)get_global_id(0);
	if (w < 64) { k0_slidemax_at(b4, b0, w - 0); return; }
	if (w < 128) { k1_prodwhere_at(b5, b1, w - 64); return; }
	if (w < 192) { k2_assign_at(b6, b1, w - 128); return; }
	if (w < 256) { k3_gather_at(b7, b0, b2, w - 192); return; }
	if (w < 320) { k4_empty_at(b8, b0, w - 256); return; }
	if (w < 384) { k5_floors_at(b9, w - 320); return; }
	if (w < 448) { k6_epilogue_at(b10, b0, b1, w - 384); return; }
	if (w < 512) { k7_update_at(b3, b0, w - 448); return; }
}
#endif
// launch g0_merged8: kernel 0, merged k0_slidemax+k1_prodwhere+k2_assign+k3_gather+k4_empty+k5_floors+k6_epilogue+k7_update, 512 work-items, local 0, args b4 b0 b5 b1 b6 b7 b2 b8 b9 b10 b3
