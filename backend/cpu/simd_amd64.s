//go:build amd64 && !purego

#include "textflag.h"

// AVX2 loops over float32 lanes. Every function processes n elements, n a
// multiple of 8; the Go callers handle the remainder. Destinations may be
// the same memory as sources (each vector is loaded before it is stored).

// BINOP defines func NAME(d, a, b *float32, n int): d[i] = a[i] OP b[i].
#define BINOP(NAME, INSTR) \
TEXT NAME(SB), NOSPLIT, $0-32; \
	MOVQ d+0(FP), DI; \
	MOVQ a+8(FP), SI; \
	MOVQ b+16(FP), DX; \
	MOVQ n+24(FP), CX; \
loop32: \
	CMPQ CX, $32; \
	JLT loop8; \
	VMOVUPS (SI), Y0; \
	VMOVUPS 32(SI), Y1; \
	VMOVUPS 64(SI), Y2; \
	VMOVUPS 96(SI), Y3; \
	INSTR (DX), Y0, Y0; \
	INSTR 32(DX), Y1, Y1; \
	INSTR 64(DX), Y2, Y2; \
	INSTR 96(DX), Y3, Y3; \
	VMOVUPS Y0, (DI); \
	VMOVUPS Y1, 32(DI); \
	VMOVUPS Y2, 64(DI); \
	VMOVUPS Y3, 96(DI); \
	ADDQ $128, SI; \
	ADDQ $128, DX; \
	ADDQ $128, DI; \
	SUBQ $32, CX; \
	JMP loop32; \
loop8: \
	CMPQ CX, $8; \
	JLT done; \
	VMOVUPS (SI), Y0; \
	INSTR (DX), Y0, Y0; \
	VMOVUPS Y0, (DI); \
	ADDQ $32, SI; \
	ADDQ $32, DX; \
	ADDQ $32, DI; \
	SUBQ $8, CX; \
	JMP loop8; \
done: \
	VZEROUPPER; \
	RET

BINOP(·addF32x8, VADDPS)
BINOP(·subF32x8, VSUBPS)
BINOP(·mulF32x8, VMULPS)
BINOP(·divF32x8, VDIVPS)

// EXTOP defines func NAME(d, a, b *float32, n int): d[i] = max (or min)
// of a[i] and b[i] as Go's built-in computes it: NaN if either is NaN (the
// sum a[i]+b[i]), and max(−0, +0) = +0, min(−0, +0) = −0 (the two orders
// of VMAXPS or VMINPS, which return their second operand for equal zeros,
// combined with COMB: AND for the maximum, OR for the minimum).
#define EXTOP(NAME, INSTR, COMB) \
TEXT NAME(SB), NOSPLIT, $0-32; \
	MOVQ d+0(FP), DI; \
	MOVQ a+8(FP), SI; \
	MOVQ b+16(FP), DX; \
	MOVQ n+24(FP), CX; \
extloop: \
	VMOVUPS (SI), Y0; \
	VMOVUPS (DX), Y1; \
	INSTR Y1, Y0, Y2; \
	INSTR Y0, Y1, Y3; \
	COMB Y3, Y2, Y2; \
	VCMPPS $3, Y1, Y0, Y4; \
	VADDPS Y1, Y0, Y5; \
	VBLENDVPS Y4, Y5, Y2, Y2; \
	VMOVUPS Y2, (DI); \
	ADDQ $32, SI; \
	ADDQ $32, DX; \
	ADDQ $32, DI; \
	SUBQ $8, CX; \
	JNZ extloop; \
	VZEROUPPER; \
	RET

EXTOP(·maxF32x8, VMAXPS, VANDPS)
EXTOP(·minF32x8, VMINPS, VORPS)

// CMPOP defines func NAME(d, a, b *float32, n int): d[i] = 1 if a[i] PRED
// b[i] else 0, with the quiet predicate PRED of VCMPPS.
#define CMPOP(NAME, PRED) \
TEXT NAME(SB), NOSPLIT, $0-32; \
	MOVQ d+0(FP), DI; \
	MOVQ a+8(FP), SI; \
	MOVQ b+16(FP), DX; \
	MOVQ n+24(FP), CX; \
	MOVL $0x3f800000, AX; \
	VMOVD AX, X7; \
	VBROADCASTSS X7, Y7; \
loop16: \
	CMPQ CX, $16; \
	JLT loop8; \
	VMOVUPS (SI), Y0; \
	VMOVUPS 32(SI), Y1; \
	VCMPPS $PRED, (DX), Y0, Y0; \
	VCMPPS $PRED, 32(DX), Y1, Y1; \
	VANDPS Y7, Y0, Y0; \
	VANDPS Y7, Y1, Y1; \
	VMOVUPS Y0, (DI); \
	VMOVUPS Y1, 32(DI); \
	ADDQ $64, SI; \
	ADDQ $64, DX; \
	ADDQ $64, DI; \
	SUBQ $16, CX; \
	JMP loop16; \
loop8: \
	CMPQ CX, $8; \
	JLT done; \
	VMOVUPS (SI), Y0; \
	VCMPPS $PRED, (DX), Y0, Y0; \
	VANDPS Y7, Y0, Y0; \
	VMOVUPS Y0, (DI); \
	ADDQ $32, SI; \
	ADDQ $32, DX; \
	ADDQ $32, DI; \
	SUBQ $8, CX; \
	JMP loop8; \
done: \
	VZEROUPPER; \
	RET

// Equality is false and inequality true when either side is NaN, and the
// ordered comparisons are false: the predicates EQ_OQ, NEQ_UQ, LT_OQ, LE_OQ,
// GT_OQ and GE_OQ.
CMPOP(·eqF32x8, 0x00)
CMPOP(·neF32x8, 0x04)
CMPOP(·ltF32x8, 0x11)
CMPOP(·leF32x8, 0x12)
CMPOP(·gtF32x8, 0x1e)
CMPOP(·geF32x8, 0x1d)

// func selectF32x8(d, c, a, b *float32, n int): d[i] = a[i] if c[i] != 0
// else b[i].
TEXT ·selectF32x8(SB), NOSPLIT, $0-40
	MOVQ d+0(FP), DI
	MOVQ c+8(FP), R8
	MOVQ a+16(FP), SI
	MOVQ b+24(FP), DX
	MOVQ n+32(FP), CX
	VXORPS Y6, Y6, Y6
loop16:
	CMPQ CX, $16
	JLT loop8
	VMOVUPS (R8), Y0
	VMOVUPS 32(R8), Y2
	VCMPPS $0x04, Y6, Y0, Y0
	VCMPPS $0x04, Y6, Y2, Y2
	VMOVUPS (DX), Y1
	VMOVUPS 32(DX), Y3
	VBLENDVPS Y0, (SI), Y1, Y1
	VBLENDVPS Y2, 32(SI), Y3, Y3
	VMOVUPS Y1, (DI)
	VMOVUPS Y3, 32(DI)
	ADDQ $64, R8
	ADDQ $64, SI
	ADDQ $64, DX
	ADDQ $64, DI
	SUBQ $16, CX
	JMP loop16
loop8:
	CMPQ CX, $8
	JLT done
	VMOVUPS (R8), Y0
	VCMPPS $0x04, Y6, Y0, Y0
	VMOVUPS (DX), Y1
	VBLENDVPS Y0, (SI), Y1, Y1
	VMOVUPS Y1, (DI)
	ADDQ $32, R8
	ADDQ $32, SI
	ADDQ $32, DX
	ADDQ $32, DI
	SUBQ $8, CX
	JMP loop8
done:
	VZEROUPPER
	RET

// func sqrtF32x8(d, a *float32, n int): d[i] = √a[i].
TEXT ·sqrtF32x8(SB), NOSPLIT, $0-24
	MOVQ d+0(FP), DI
	MOVQ a+8(FP), SI
	MOVQ n+16(FP), CX
loop8:
	CMPQ CX, $8
	JLT done
	VSQRTPS (SI), Y0
	VMOVUPS Y0, (DI)
	ADDQ $32, SI
	ADDQ $32, DI
	SUBQ $8, CX
	JMP loop8
done:
	VZEROUPPER
	RET

// LOGOP defines func NAME(d, a, b *float32, n int): d[i] = 1 if a[i] ≠ 0
// COMB b[i] ≠ 0 else 0 (COMB is VANDPS for And, VORPS for Or), with NaN
// nonzero as in Go (NEQ_UQ).
#define LOGOP(NAME, COMB) \
TEXT NAME(SB), NOSPLIT, $0-32; \
	MOVQ d+0(FP), DI; \
	MOVQ a+8(FP), SI; \
	MOVQ b+16(FP), DX; \
	MOVQ n+24(FP), CX; \
	MOVL $0x3f800000, AX; \
	VMOVD AX, X7; \
	VBROADCASTSS X7, Y7; \
	VXORPS Y6, Y6, Y6; \
logloop: \
	CMPQ CX, $8; \
	JLT done; \
	VCMPPS $0x04, (SI), Y6, Y0; \
	VCMPPS $0x04, (DX), Y6, Y1; \
	COMB Y1, Y0, Y0; \
	VANDPS Y7, Y0, Y0; \
	VMOVUPS Y0, (DI); \
	ADDQ $32, SI; \
	ADDQ $32, DX; \
	ADDQ $32, DI; \
	SUBQ $8, CX; \
	JMP logloop; \
done: \
	VZEROUPPER; \
	RET

LOGOP(·andF32x8, VANDPS)
LOGOP(·orF32x8, VORPS)

// SIGNOP defines func NAME(d, a *float32, n int) for n a multiple of 8: the
// sign bits of a, cleared (OP is VANDPS with 0x7fffffff: abs) or flipped
// (VXORPS with 0x80000000: neg); SHIFT makes the mask from all ones.
#define SIGNOP(NAME, SHIFT, BITS, OP) \
TEXT NAME(SB), NOSPLIT, $0-24; \
	MOVQ d+0(FP), DI; \
	MOVQ a+8(FP), SI; \
	MOVQ n+16(FP), CX; \
	VPCMPEQD Y1, Y1, Y1; \
	SHIFT $BITS, Y1, Y1; \
loop8: \
	CMPQ CX, $8; \
	JLT done; \
	OP (SI), Y1, Y0; \
	VMOVUPS Y0, (DI); \
	ADDQ $32, SI; \
	ADDQ $32, DI; \
	SUBQ $8, CX; \
	JMP loop8; \
done: \
	VZEROUPPER; \
	RET

SIGNOP(·negF32x8, VPSLLD, 31, VXORPS)
SIGNOP(·absF32x8, VPSRLD, 1, VANDPS)

// AGGOP defines func NAME(acc *float64, v *float32, n int): acc[i] =
// acc[i] OP float64(v[i]) for n a multiple of 4. MAXMIN is VMAXPD or VMINPD;
// EQFIX combines equal operands (VANDPD for max, so that max(+0, -0) = +0;
// VORPD for min), and unordered operands give their sum, a NaN, as Go's max
// and min do.
#define AGGMAXMIN(NAME, MAXMIN, EQFIX) \
TEXT NAME(SB), NOSPLIT, $0-24; \
	MOVQ acc+0(FP), DI; \
	MOVQ v+8(FP), SI; \
	MOVQ n+16(FP), CX; \
loop4: \
	CMPQ CX, $4; \
	JLT done; \
	VCVTPS2PD (SI), Y1; \
	VMOVUPD (DI), Y0; \
	MAXMIN Y1, Y0, Y2; \
	VCMPPD $0x00, Y1, Y0, Y3; \
	EQFIX Y1, Y0, Y4; \
	VBLENDVPD Y3, Y4, Y2, Y2; \
	VCMPPD $0x03, Y1, Y0, Y3; \
	VADDPD Y1, Y0, Y4; \
	VBLENDVPD Y3, Y4, Y2, Y2; \
	VMOVUPD Y2, (DI); \
	ADDQ $16, SI; \
	ADDQ $32, DI; \
	SUBQ $4, CX; \
	JMP loop4; \
done: \
	VZEROUPPER; \
	RET

AGGMAXMIN(·aggMaxF64F32x4, VMAXPD, VANDPD)
AGGMAXMIN(·aggMinF64F32x4, VMINPD, VORPD)

// func cvtF64F32x4(d *float32, s *float64, n int): d[i] = float32(s[i])
// for n a multiple of 4, rounded as Go's conversion is (to nearest).
TEXT ·cvtF64F32x4(SB), NOSPLIT, $0-24
	MOVQ d+0(FP), DI
	MOVQ s+8(FP), SI
	MOVQ n+16(FP), CX
cvtloop:
	CMPQ CX, $4
	JLT done
	VCVTPD2PSY (SI), X0
	VMOVUPS X0, (DI)
	ADDQ $32, SI
	ADDQ $16, DI
	SUBQ $4, CX
	JMP cvtloop
done:
	VZEROUPPER
	RET

// func aggSumF64F32x4(acc *float64, v *float32, n int): acc[i] +=
// float64(v[i]) for n a multiple of 4.
TEXT ·aggSumF64F32x4(SB), NOSPLIT, $0-24
	MOVQ acc+0(FP), DI
	MOVQ v+8(FP), SI
	MOVQ n+16(FP), CX
loop8:
	CMPQ CX, $8
	JLT loop4
	VCVTPS2PD (SI), Y1
	VCVTPS2PD 16(SI), Y3
	VADDPD (DI), Y1, Y1
	VADDPD 32(DI), Y3, Y3
	VMOVUPD Y1, (DI)
	VMOVUPD Y3, 32(DI)
	ADDQ $32, SI
	ADDQ $64, DI
	SUBQ $8, CX
	JMP loop8
loop4:
	CMPQ CX, $4
	JLT done
	VCVTPS2PD (SI), Y1
	VADDPD (DI), Y1, Y1
	VMOVUPD Y1, (DI)
	ADDQ $16, SI
	ADDQ $32, DI
	SUBQ $4, CX
	JMP loop4
done:
	VZEROUPPER
	RET

// MULHILO multiplies the 8 lanes of X by the constant in M (all lanes),
// leaving the low 32 bits of each product in LO and the high 32 bits in HI.
// T1 and T2 are scratch.
#define MULHILO(X, M, LO, HI, T1, T2) \
	VPMULUDQ M, X, T1; \
	VPSRLQ $32, X, T2; \
	VPMULUDQ M, T2, T2; \
	VPSLLQ $32, T2, LO; \
	VPBLENDD $0xAA, LO, T1, LO; \
	VPSRLQ $32, T1, HI; \
	VPBLENDD $0xAA, T2, HI, HI

// PHILOXROUND is one round of Philox4x32 on 8 blocks: words in Y0-Y3, key
// in Y4-Y5, multipliers in Y6-Y7, key increments in Y8-Y9.
#define PHILOXROUND \
	MULHILO(Y0, Y6, Y10, Y11, Y12, Y13); \
	MULHILO(Y2, Y7, Y14, Y15, Y12, Y13); \
	VPXOR Y15, Y1, Y0; \
	VPXOR Y4, Y0, Y0; \
	VMOVDQU Y14, Y1; \
	VPXOR Y11, Y3, Y2; \
	VPXOR Y5, Y2, Y2; \
	VMOVDQU Y10, Y3; \
	VPADDD Y8, Y4, Y4; \
	VPADDD Y9, Y5, Y5

// func philoxF32x8(d *float32, blocks int, q0, stream, seed uint64)
// writes the 4·blocks uniform numbers of Philox4x32-10 blocks q0, q0+1, …
// (counter (q, q>>32, stream, stream>>32), key (seed, seed>>32)), each word
// w becoming (w >> 8)·2⁻²⁴, in block order. blocks is a multiple of 8, and
// the low 32 bits of q0 do not wrap within the blocks.
TEXT ·philoxF32x8(SB), NOSPLIT, $0-40
	MOVQ d+0(FP), DI
	MOVQ blocks+8(FP), CX
	MOVQ q0+16(FP), AX
	MOVQ stream+24(FP), BX
	MOVQ seed+32(FP), DX
loop:
	CMPQ CX, $8
	JLT done
	// Counters: lane i holds block q0+i.
	VMOVD AX, X0
	VPBROADCASTD X0, Y0
	VPADDD iota8<>(SB), Y0, Y0
	MOVQ AX, R8
	SHRQ $32, R8
	VMOVD R8, X1
	VPBROADCASTD X1, Y1
	VMOVD BX, X2
	VPBROADCASTD X2, Y2
	MOVQ BX, R8
	SHRQ $32, R8
	VMOVD R8, X3
	VPBROADCASTD X3, Y3
	VMOVD DX, X4
	VPBROADCASTD X4, Y4
	MOVQ DX, R8
	SHRQ $32, R8
	VMOVD R8, X5
	VPBROADCASTD X5, Y5
	VPBROADCASTD philoxM0<>(SB), Y6
	VPBROADCASTD philoxM1<>(SB), Y7
	VPBROADCASTD philoxW0<>(SB), Y8
	VPBROADCASTD philoxW1<>(SB), Y9
	PHILOXROUND
	PHILOXROUND
	PHILOXROUND
	PHILOXROUND
	PHILOXROUND
	PHILOXROUND
	PHILOXROUND
	PHILOXROUND
	PHILOXROUND
	PHILOXROUND
	// Transpose: block i's four words become consecutive outputs.
	VPUNPCKLDQ Y1, Y0, Y10
	VPUNPCKHDQ Y1, Y0, Y11
	VPUNPCKLDQ Y3, Y2, Y12
	VPUNPCKHDQ Y3, Y2, Y13
	VPUNPCKLQDQ Y12, Y10, Y0
	VPUNPCKHQDQ Y12, Y10, Y1
	VPUNPCKLQDQ Y13, Y11, Y2
	VPUNPCKHQDQ Y13, Y11, Y3
	// Y0 holds blocks 0 and 4, Y1 1 and 5, Y2 2 and 6, Y3 3 and 7.
	VPERM2I128 $0x20, Y1, Y0, Y10
	VPERM2I128 $0x20, Y3, Y2, Y11
	VPERM2I128 $0x31, Y1, Y0, Y12
	VPERM2I128 $0x31, Y3, Y2, Y13
	VBROADCASTSS philoxScale<>(SB), Y14
	VPSRLD $8, Y10, Y10
	VPSRLD $8, Y11, Y11
	VPSRLD $8, Y12, Y12
	VPSRLD $8, Y13, Y13
	VCVTDQ2PS Y10, Y10
	VCVTDQ2PS Y11, Y11
	VCVTDQ2PS Y12, Y12
	VCVTDQ2PS Y13, Y13
	VMULPS Y14, Y10, Y10
	VMULPS Y14, Y11, Y11
	VMULPS Y14, Y12, Y12
	VMULPS Y14, Y13, Y13
	VMOVUPS Y10, (DI)
	VMOVUPS Y11, 32(DI)
	VMOVUPS Y12, 64(DI)
	VMOVUPS Y13, 96(DI)
	ADDQ $128, DI
	ADDQ $8, AX
	SUBQ $8, CX
	JMP loop
done:
	VZEROUPPER
	RET

DATA iota8<>+0(SB)/4, $0
DATA iota8<>+4(SB)/4, $1
DATA iota8<>+8(SB)/4, $2
DATA iota8<>+12(SB)/4, $3
DATA iota8<>+16(SB)/4, $4
DATA iota8<>+20(SB)/4, $5
DATA iota8<>+24(SB)/4, $6
DATA iota8<>+28(SB)/4, $7
GLOBL iota8<>(SB), RODATA|NOPTR, $32

DATA philoxM0<>+0(SB)/4, $0xD2511F53
GLOBL philoxM0<>(SB), RODATA|NOPTR, $4
DATA philoxM1<>+0(SB)/4, $0xCD9E8D57
GLOBL philoxM1<>(SB), RODATA|NOPTR, $4
DATA philoxW0<>+0(SB)/4, $0x9E3779B9
GLOBL philoxW0<>(SB), RODATA|NOPTR, $4
DATA philoxW1<>+0(SB)/4, $0xBB67AE85
GLOBL philoxW1<>(SB), RODATA|NOPTR, $4
DATA philoxScale<>+0(SB)/4, $0x33800000
GLOBL philoxScale<>(SB), RODATA|NOPTR, $4

// AGGMAXMIN32 defines func NAME(acc, v *float32, n int): acc[i] = acc[i] OP
// v[i] for n a multiple of 8, with Go's NaN and signed-zero rules (see
// AGGMAXMIN).
#define AGGMAXMIN32(NAME, MAXMIN, EQFIX) \
TEXT NAME(SB), NOSPLIT, $0-24; \
	MOVQ acc+0(FP), DI; \
	MOVQ v+8(FP), SI; \
	MOVQ n+16(FP), CX; \
loop8: \
	CMPQ CX, $8; \
	JLT done; \
	VMOVUPS (SI), Y1; \
	VMOVUPS (DI), Y0; \
	MAXMIN Y1, Y0, Y2; \
	VCMPPS $0x00, Y1, Y0, Y3; \
	EQFIX Y1, Y0, Y4; \
	VBLENDVPS Y3, Y4, Y2, Y2; \
	VCMPPS $0x03, Y1, Y0, Y3; \
	VADDPS Y1, Y0, Y4; \
	VBLENDVPS Y3, Y4, Y2, Y2; \
	VMOVUPS Y2, (DI); \
	ADDQ $32, SI; \
	ADDQ $32, DI; \
	SUBQ $8, CX; \
	JMP loop8; \
done: \
	VZEROUPPER; \
	RET

AGGMAXMIN32(·aggMaxF32x8, VMAXPS, VANDPS)
AGGMAXMIN32(·aggMinF32x8, VMINPS, VORPS)

// MASKAGG32 defines func NAME(acc, v *float32, mask *bool, n int): where
// mask[i], acc[i] = acc[i] OP v[i] (Go's rules, as AGGMAXMIN32); elsewhere
// acc[i] is unchanged. n is a multiple of 8.
#define MASKAGG32(NAME, MAXMIN, EQFIX) \
TEXT NAME(SB), NOSPLIT, $0-32; \
	MOVQ acc+0(FP), DI; \
	MOVQ v+8(FP), SI; \
	MOVQ mask+16(FP), DX; \
	MOVQ n+24(FP), CX; \
	VPXOR Y7, Y7, Y7; \
loop8: \
	CMPQ CX, $8; \
	JLT done; \
	VMOVUPS (SI), Y1; \
	VMOVUPS (DI), Y0; \
	MAXMIN Y1, Y0, Y2; \
	VCMPPS $0x00, Y1, Y0, Y3; \
	EQFIX Y1, Y0, Y4; \
	VBLENDVPS Y3, Y4, Y2, Y2; \
	VCMPPS $0x03, Y1, Y0, Y3; \
	VADDPS Y1, Y0, Y4; \
	VBLENDVPS Y3, Y4, Y2, Y2; \
	VPMOVZXBD (DX), Y5; \
	VPCMPEQD Y7, Y5, Y6; \
	VBLENDVPS Y6, Y0, Y2, Y2; \
	VMOVUPS Y2, (DI); \
	ADDQ $32, SI; \
	ADDQ $32, DI; \
	ADDQ $8, DX; \
	SUBQ $8, CX; \
	JMP loop8; \
done: \
	VZEROUPPER; \
	RET

MASKAGG32(·maskMaxF32x8, VMAXPS, VANDPS)
MASKAGG32(·maskMinF32x8, VMINPS, VORPS)

// func maskZeroF32x8(mask *bool, v *float32, n int): mask[i] = mask[i] &&
// v[i] == 0, for n a multiple of 8.
TEXT ·maskZeroF32x8(SB), NOSPLIT, $0-24
	MOVQ mask+0(FP), DI
	MOVQ v+8(FP), SI
	MOVQ n+16(FP), CX
	VXORPS Y7, Y7, Y7
loop8:
	CMPQ CX, $8
	JLT done
	VCMPPS $0x00, (SI), Y7, Y0
	VPSRLD $31, Y0, Y0
	VEXTRACTI128 $1, Y0, X1
	VPACKUSDW X1, X0, X0
	VPACKUSWB X0, X0, X0
	VMOVQ X0, AX
	ANDQ AX, (DI)
	ADDQ $32, SI
	ADDQ $8, DI
	SUBQ $8, CX
	JMP loop8
done:
	VZEROUPPER
	RET

// Window kernels (window.go). Every function processes n elements, n a
// multiple of 8.

// RELU sets Y0 to the ReLU of Y0, +0 where Y0 ≤ 0 (LE_OQ, false for NaN)
// and Y0 elsewhere, NaN included. Y7 holds zeros; Y1 is scratch.
#define RELU VCMPPS $0x12, Y7, Y0, Y1; VANDNPS Y0, Y1, Y0

// func reluF32x8(d, v *float32, n int): d[i] = +0 if v[i] ≤ 0 else v[i]
// (NaN stays NaN).
TEXT ·reluF32x8(SB), NOSPLIT, $0-24
	MOVQ d+0(FP), DI
	MOVQ v+8(FP), SI
	MOVQ n+16(FP), CX
	VXORPS Y7, Y7, Y7
loop8:
	CMPQ CX, $8
	JLT done
	VMOVUPS (SI), Y0
	RELU
	VMOVUPS Y0, (DI)
	ADDQ $32, SI
	ADDQ $32, DI
	SUBQ $8, CX
	JMP loop8
done:
	VZEROUPPER
	RET

// RELUAGG defines func NAME(acc, v *float32, n int): acc[i] = acc[i] OP
// relu(v[i]), with Go's NaN and signed-zero rules (see AGGMAXMIN): either
// side may be NaN, a NaN ReLU input or an earlier one in acc.
#define RELUAGG(NAME, MAXMIN, EQFIX) \
TEXT NAME(SB), NOSPLIT, $0-24; \
	MOVQ acc+0(FP), DI; \
	MOVQ v+8(FP), SI; \
	MOVQ n+16(FP), CX; \
	VXORPS Y7, Y7, Y7; \
loop8: \
	CMPQ CX, $8; \
	JLT done; \
	VMOVUPS (SI), Y0; \
	RELU; \
	VMOVUPS (DI), Y2; \
	MAXMIN Y0, Y2, Y3; \
	VCMPPS $0x00, Y0, Y2, Y4; \
	EQFIX Y0, Y2, Y5; \
	VBLENDVPS Y4, Y5, Y3, Y3; \
	VCMPPS $0x03, Y0, Y2, Y4; \
	VADDPS Y0, Y2, Y5; \
	VBLENDVPS Y4, Y5, Y3, Y3; \
	VMOVUPS Y3, (DI); \
	ADDQ $32, SI; \
	ADDQ $32, DI; \
	SUBQ $8, CX; \
	JMP loop8; \
done: \
	VZEROUPPER; \
	RET

RELUAGG(·reluMaxF32x8, VMAXPS, VANDPS)
RELUAGG(·reluMinF32x8, VMINPS, VORPS)

// FIRST defines func NAME(d, v, ext *float32, n int, p float32): where
// V(v[i]) attains ext[i], equal to it or both NaN, d[i] = min(d[i], p). The
// caller guarantees that p and d are never NaN or zero, so VMINPS gives
// Go's result.
#define FIRST(NAME, VALUE) \
TEXT NAME(SB), NOSPLIT, $0-36; \
	MOVQ d+0(FP), DI; \
	MOVQ v+8(FP), SI; \
	MOVQ ext+16(FP), DX; \
	MOVQ n+24(FP), CX; \
	VBROADCASTSS p+32(FP), Y6; \
	VXORPS Y7, Y7, Y7; \
loop8: \
	CMPQ CX, $8; \
	JLT done; \
	VMOVUPS (SI), Y0; \
	VALUE; \
	VMOVUPS (DX), Y5; \
	VCMPPS $0x00, Y5, Y0, Y2; \
	VCMPPS $0x03, Y0, Y0, Y8; \
	VCMPPS $0x03, Y5, Y5, Y9; \
	VANDPS Y9, Y8, Y8; \
	VORPS Y8, Y2, Y2; \
	VMOVUPS (DI), Y3; \
	VMINPS Y6, Y3, Y4; \
	VBLENDVPS Y2, Y4, Y3, Y3; \
	VMOVUPS Y3, (DI); \
	ADDQ $32, SI; \
	ADDQ $32, DX; \
	ADDQ $32, DI; \
	SUBQ $8, CX; \
	JMP loop8; \
done: \
	VZEROUPPER; \
	RET

#define PLAIN NOP

FIRST(·firstF32x8, PLAIN)
FIRST(·firstReluF32x8, RELU)

// func infToZeroF32x8(d *float32, n int): d[i] = 0 where d[i] is +Inf.
TEXT ·infToZeroF32x8(SB), NOSPLIT, $0-16
	MOVQ d+0(FP), DI
	MOVQ n+8(FP), CX
	MOVL $0x7f800000, AX
	VMOVD AX, X7
	VBROADCASTSS X7, Y7
loop8:
	CMPQ CX, $8
	JLT done
	VMOVUPS (DI), Y0
	VCMPPS $0x00, Y7, Y0, Y1
	VANDNPS Y0, Y1, Y0
	VMOVUPS Y0, (DI)
	ADDQ $32, DI
	SUBQ $8, CX
	JMP loop8
done:
	VZEROUPPER
	RET

// func routeF32x8(d, first, cot *float32, n int, p float32): d[i] = cot[i]
// if first[i] == p else +0.
TEXT ·routeF32x8(SB), NOSPLIT, $0-36
	MOVQ d+0(FP), DI
	MOVQ first+8(FP), SI
	MOVQ cot+16(FP), DX
	MOVQ n+24(FP), CX
	VBROADCASTSS p+32(FP), Y6
loop8:
	CMPQ CX, $8
	JLT done
	VCMPPS $0x00, (SI), Y6, Y0
	VANDPS (DX), Y0, Y0
	VMOVUPS Y0, (DI)
	ADDQ $32, SI
	ADDQ $32, DX
	ADDQ $32, DI
	SUBQ $8, CX
	JMP loop8
done:
	VZEROUPPER
	RET

// func routeActF32x8(d, act, first, cot *float32, n int, p float32): d[i] =
// cot[i] if not act[i] ≤ 0 (NLE_UQ: true for NaN) and first[i] == p, else
// +0.
TEXT ·routeActF32x8(SB), NOSPLIT, $0-44
	MOVQ d+0(FP), DI
	MOVQ act+8(FP), R8
	MOVQ first+16(FP), SI
	MOVQ cot+24(FP), DX
	MOVQ n+32(FP), CX
	VBROADCASTSS p+40(FP), Y6
	VXORPS Y7, Y7, Y7
loop8:
	CMPQ CX, $8
	JLT done
	VMOVUPS (R8), Y1
	VCMPPS $0x06, Y7, Y1, Y1
	VCMPPS $0x00, (SI), Y6, Y0
	VANDPS Y1, Y0, Y0
	VANDPS (DX), Y0, Y0
	VMOVUPS Y0, (DI)
	ADDQ $32, R8
	ADDQ $32, SI
	ADDQ $32, DX
	ADDQ $32, DI
	SUBQ $8, CX
	JMP loop8
done:
	VZEROUPPER
	RET

// func boolsToF32x8(d *float32, src *bool, n int): d[i] = 1 if src[i] else
// 0, a Go bool being a byte holding 0 or 1.
TEXT ·boolsToF32x8(SB), NOSPLIT, $0-24
	MOVQ d+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ n+16(FP), CX
loop8:
	CMPQ CX, $8
	JLT done
	VPMOVZXBD (SI), Y0
	VCVTDQ2PS Y0, Y0
	VMOVUPS Y0, (DI)
	ADDQ $8, SI
	ADDQ $32, DI
	SUBQ $8, CX
	JMP loop8
done:
	VZEROUPPER
	RET

// func f32ToBoolsx8(d *bool, v *float32, n int): d[i] = bit 29 of v[i], 1
// for a boolean lane holding 1.0 and 0 for 0.
TEXT ·f32ToBoolsx8(SB), NOSPLIT, $0-24
	MOVQ d+0(FP), DI
	MOVQ v+8(FP), SI
	MOVQ n+16(FP), CX
	VPCMPEQD Y7, Y7, Y7
	VPSRLD $31, Y7, Y7
loop8:
	CMPQ CX, $8
	JLT done
	VMOVDQU (SI), Y0
	VPSRLD $29, Y0, Y0
	VPAND Y7, Y0, Y0
	VEXTRACTI128 $1, Y0, X1
	VPACKUSDW X1, X0, X0
	VPACKUSWB X0, X0, X0
	VMOVQ X0, (DI)
	ADDQ $32, SI
	ADDQ $8, DI
	SUBQ $8, CX
	JMP loop8
done:
	VZEROUPPER
	RET
