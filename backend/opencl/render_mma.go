package opencl

// The tensor-core matrix product uses NVIDIA's warp-level instruction
// mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 through inline PTX,
// which NVIDIA's OpenCL compiler accepts. One instruction multiplies a 16×8
// tile of A by an 8×8 tile of B into a 16×8 tile of C held across the 32
// lanes of a warp; with g = lane/4 and t = lane%4 the lanes hold
//
//	A: a0 = A[g][t], a1 = A[g+8][t], a2 = A[g][t+4], a3 = A[g+8][t+4]
//	B: b0 = B[t][g], b1 = B[t+4][g]
//	C: c0 = C[g][2t], c1 = C[g][2t+1], c2 = C[g+8][2t], c3 = C[g+8][2t+1]
//
// The inputs are tf32: the instruction ignores the low 13 mantissa bits of
// each 32-bit value. Elsewhere the instruction can be emulated through local
// memory (render_gemm.go), which tests the fragment layout of the kernels on
// any OpenCL device.

// mmaPreamble returns the definitions of TT_MMA and tt_tf32_round: inline
// PTX for NVIDIA devices, the portable emulation otherwise.
func mmaPreamble(t traits) string {
	if !t.EmulateMMA {
		return mmaNative
	}
	return mmaEmulation
}

const mmaNative = `
// Tensor cores through inline PTX (NVIDIA, sm_80 and later).
#define TT_MMA(d, a0, a1, a2, a3, b0, b1) \
	asm volatile("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%10, %11, %12, %13};" \
		: "=f"((d)[0]), "=f"((d)[1]), "=f"((d)[2]), "=f"((d)[3]) \
		: "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1), \
		  "f"((d)[0]), "f"((d)[1]), "f"((d)[2]), "f"((d)[3]))
// The same with a zero accumulator: d = a·b.
#define TT_MMA0(d, a0, a1, a2, a3, b0, b1) \
	asm volatile("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%10, %11, %12, %13};" \
		: "=f"((d)[0]), "=f"((d)[1]), "=f"((d)[2]), "=f"((d)[3]) \
		: "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1), "f"(0.0f), "f"(0.0f), "f"(0.0f), "f"(0.0f))
// Rounds to tf32 (nearest, ties away from zero), as cuBLAS's TF32 mode does.
inline float tt_tf32_round(float x) {
	uint r;
	asm("cvt.rna.tf32.f32 %0, %1;" : "=r"(r) : "f"(x));
	return as_float(r);
}
`

const mmaEmulation = `
// Emulated tensor-core instruction: see the kernels' fragment exchange. The
// instruction drops the low 13 mantissa bits of its inputs; so does this.
inline float tt_tf32_trunc(uint x) { return as_float(x & 0xffffe000u); }
inline float tt_tf32_round(float x) {
	uint u = as_uint(x);
	if ((u & 0x7f800000u) != 0x7f800000u) u = (u + 0x1000u) & 0xffffe000u;
	return as_float(u);
}
`
