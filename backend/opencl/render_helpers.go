package opencl

// preamble is the OpenCL C code every program starts with: the helpers that
// generated kernels call. They implement the reference executor's semantics
// where C's differ: floor division and modulo for indices, NaN-propagating
// max and min, integer division by zero giving 0, gathered indices from
// non-finite values being out of range, and the Philox4x32-10 generator of
// tile.RandomOp.
const preamble = `// Helpers shared by every kernel of the program.

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
`

// preambleFP64 holds the double-precision helpers, included when a program
// uses f64 (which needs cl_khr_fp64).
const preambleFP64 = `
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
inline long tt_gix_d(double x) { return (isnan(x) || isinf(x)) ? (long)(-2147483647-1) : convert_long_sat(x); }
inline long tt_f2l_d(double x) { return isnan(x) ? 0L : convert_long_sat(x); }
inline double tt_max_d(double a, double b) { return (isnan(a) || isnan(b)) ? a + b : fmax(a, b); }
inline double tt_min_d(double a, double b) { return (isnan(a) || isnan(b)) ? a + b : fmin(a, b); }
inline double tt_sign_d(double a) { return a > 0.0 ? 1.0 : (a < 0.0 ? -1.0 : a); }
inline double tt_sigmoid_d(double a) { return 1.0 / (1.0 + exp(-a)); }
`
