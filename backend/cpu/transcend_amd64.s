//go:build amd64 && !purego

#include "textflag.h"

// Float32 exp, erf and sigmoid over 8 lanes with AVX2 and FMA, n a multiple
// of 8 (the Go callers pad the remainder). See transcend_amd64.go for the
// method and its accuracy.

// tk holds the constants, 4 bytes each:
//   0 89 (largest argument kept; exp overflows above 88.72)
//   4 -104 (smallest kept; exp underflows to 0 below -103.97)
//   8 log2(e)     12 -ln2 (high part)  16 -ln2 (low part)
//  20..40 exp's polynomial q(r) = (e^r - 1 - r)/r², degree 5 down to 0
//  44 1.0   48 127 (int32 exponent bias)   52 sign mask   56 abs mask   60 4.0
//  64..88 erf on [0, 1): erf(x)/x as a polynomial in x², degree 6 down to 0
//  92..128 erf on [1, 4]: erfc(x)·e^(x²) as a polynomial in 1/x, degree 9 down to 0
DATA tk<>+0(SB)/4, $0x42b20000
DATA tk<>+4(SB)/4, $0xc2d00000
DATA tk<>+8(SB)/4, $0x3fb8aa3b
DATA tk<>+12(SB)/4, $0xbf318000
DATA tk<>+16(SB)/4, $0x395e8083
DATA tk<>+20(SB)/4, $0x3950a8b7
DATA tk<>+24(SB)/4, $0x3ab6a18d
DATA tk<>+28(SB)/4, $0x3c088863
DATA tk<>+32(SB)/4, $0x3d2aaa75
DATA tk<>+36(SB)/4, $0x3e2aaaab
DATA tk<>+40(SB)/4, $0x3f000000
DATA tk<>+44(SB)/4, $0x3f800000
DATA tk<>+48(SB)/4, $127
DATA tk<>+52(SB)/4, $0x80000000
DATA tk<>+56(SB)/4, $0x7fffffff
DATA tk<>+60(SB)/4, $0x40800000
DATA tk<>+64(SB)/4, $0x38a54ed6
DATA tk<>+68(SB)/4, $0xba5235a0
DATA tk<>+72(SB)/4, $0x3baa0b1b
DATA tk<>+76(SB)/4, $0xbcdbfd9c
DATA tk<>+80(SB)/4, $0x3de7168c
DATA tk<>+84(SB)/4, $0xbec0939f
DATA tk<>+88(SB)/4, $0x3f906eba
DATA tk<>+92(SB)/4, $0x3cd532df
DATA tk<>+96(SB)/4, $0xbe1d2eba
DATA tk<>+100(SB)/4, $0x3ebfca0a
DATA tk<>+104(SB)/4, $0xbee5e1e4
DATA tk<>+108(SB)/4, $0x3e261d6d
DATA tk<>+112(SB)/4, $0x3e8bd36a
DATA tk<>+116(SB)/4, $0xbec8624a
DATA tk<>+120(SB)/4, $0x3cc50402
DATA tk<>+124(SB)/4, $0x3f0fb287
DATA tk<>+128(SB)/4, $0x3918fda7
GLOBL tk<>(SB), RODATA|NOPTR, $132

// EXP8 sets Y0 to e^Y0 in each lane, using Y1-Y6. With n = round(x·log2 e)
// and r = x - n·ln2 (in two parts, so r is nearly exact), e^x = 2^n·e^r and
// e^r = 1 + r + r²·q(r); 2^n is applied as two powers of two, so that
// results down to the subnormals round once. NaN lanes stay NaN.
#define EXP8 \
	VMOVAPS Y0, Y6; \
	VBROADCASTSS tk<>+0(SB), Y1; \
	VMINPS Y1, Y0, Y0; \
	VBROADCASTSS tk<>+4(SB), Y1; \
	VMAXPS Y1, Y0, Y0; \
	VBROADCASTSS tk<>+8(SB), Y1; \
	VMULPS Y1, Y0, Y1; \
	VROUNDPS $0, Y1, Y1; \
	VBROADCASTSS tk<>+12(SB), Y2; \
	VFMADD231PS Y2, Y1, Y0; \
	VBROADCASTSS tk<>+16(SB), Y2; \
	VFMADD231PS Y2, Y1, Y0; \
	VBROADCASTSS tk<>+20(SB), Y2; \
	VBROADCASTSS tk<>+24(SB), Y3; \
	VFMADD213PS Y3, Y0, Y2; \
	VBROADCASTSS tk<>+28(SB), Y3; \
	VFMADD213PS Y3, Y0, Y2; \
	VBROADCASTSS tk<>+32(SB), Y3; \
	VFMADD213PS Y3, Y0, Y2; \
	VBROADCASTSS tk<>+36(SB), Y3; \
	VFMADD213PS Y3, Y0, Y2; \
	VBROADCASTSS tk<>+40(SB), Y3; \
	VFMADD213PS Y3, Y0, Y2; \
	VMULPS Y0, Y0, Y3; \
	VFMADD213PS Y0, Y3, Y2; \
	VBROADCASTSS tk<>+44(SB), Y3; \
	VADDPS Y3, Y2, Y2; \
	VCVTPS2DQ Y1, Y1; \
	VPSRAD $1, Y1, Y3; \
	VPSUBD Y3, Y1, Y1; \
	VPBROADCASTD tk<>+48(SB), Y4; \
	VPADDD Y4, Y3, Y3; \
	VPADDD Y4, Y1, Y1; \
	VPSLLD $23, Y3, Y3; \
	VPSLLD $23, Y1, Y1; \
	VMULPS Y3, Y2, Y2; \
	VMULPS Y1, Y2, Y2; \
	VCMPPS $3, Y6, Y6, Y5; \
	VBLENDVPS Y5, Y6, Y2, Y0

// func expF32x8(d, a *float32, n int)
TEXT ·expF32x8(SB), NOSPLIT, $0-24
	MOVQ d+0(FP), DI
	MOVQ a+8(FP), SI
	MOVQ n+16(FP), CX
expLoop:
	CMPQ CX, $8
	JLT expDone
	VMOVUPS (SI), Y0
	EXP8
	VMOVUPS Y0, (DI)
	ADDQ $32, SI
	ADDQ $32, DI
	SUBQ $8, CX
	JMP expLoop
expDone:
	VZEROUPPER
	RET

// func sigmoidF32x8(d, a *float32, n int): 1/(1 + e^-x).
TEXT ·sigmoidF32x8(SB), NOSPLIT, $0-24
	MOVQ d+0(FP), DI
	MOVQ a+8(FP), SI
	MOVQ n+16(FP), CX
sigLoop:
	CMPQ CX, $8
	JLT sigDone
	VMOVUPS (SI), Y0
	VBROADCASTSS tk<>+52(SB), Y1
	VXORPS Y1, Y0, Y0
	EXP8
	VBROADCASTSS tk<>+44(SB), Y1
	VADDPS Y1, Y0, Y0
	VDIVPS Y0, Y1, Y0
	VMOVUPS Y0, (DI)
	ADDQ $32, SI
	ADDQ $32, DI
	SUBQ $8, CX
	JMP sigLoop
sigDone:
	VZEROUPPER
	RET

// HORNER(OFF, X, ACC) sets ACC = ACC·X + tk[OFF], using Y14.
#define HORNER(OFF, X, ACC) \
	VBROADCASTSS tk<>+OFF(SB), Y14; \
	VFMADD213PS Y14, X, ACC

// func erfF32x8(d, a *float32, n int). For |x| < 1, erf x = x·P(x²); for
// 1 ≤ |x| ≤ 4, erf x = 1 - e^(-x²)·R(1/x); beyond 4 it is ±1 in float32
// (|x| is clamped to 4, where the formula rounds to 1). The sign is x's.
TEXT ·erfF32x8(SB), NOSPLIT, $0-24
	MOVQ d+0(FP), DI
	MOVQ a+8(FP), SI
	MOVQ n+16(FP), CX
erfLoop:
	CMPQ CX, $8
	JLT erfDone
	VMOVUPS (SI), Y7
	VBROADCASTSS tk<>+56(SB), Y8
	VANDPS Y8, Y7, Y8
	VBROADCASTSS tk<>+60(SB), Y9
	VMINPS Y9, Y8, Y8
	VMULPS Y8, Y8, Y9
	// Small: Y10 = |x|·P(x²).
	VBROADCASTSS tk<>+64(SB), Y10
	HORNER(68, Y9, Y10)
	HORNER(72, Y9, Y10)
	HORNER(76, Y9, Y10)
	HORNER(80, Y9, Y10)
	HORNER(84, Y9, Y10)
	HORNER(88, Y9, Y10)
	VMULPS Y8, Y10, Y10
	// Large: Y0 = 1 - e^(-x²)·R(1/|x|).
	VBROADCASTSS tk<>+44(SB), Y13
	VDIVPS Y8, Y13, Y11
	VBROADCASTSS tk<>+92(SB), Y12
	HORNER(96, Y11, Y12)
	HORNER(100, Y11, Y12)
	HORNER(104, Y11, Y12)
	HORNER(108, Y11, Y12)
	HORNER(112, Y11, Y12)
	HORNER(116, Y11, Y12)
	HORNER(120, Y11, Y12)
	HORNER(124, Y11, Y12)
	HORNER(128, Y11, Y12)
	VBROADCASTSS tk<>+52(SB), Y0
	VXORPS Y0, Y9, Y0
	EXP8
	VMULPS Y12, Y0, Y0
	VSUBPS Y0, Y13, Y0
	// Choose by |x| < 1, then give the result x's sign and NaN.
	VCMPPS $1, Y13, Y8, Y1
	VBLENDVPS Y1, Y10, Y0, Y0
	VBROADCASTSS tk<>+52(SB), Y1
	VANDPS Y1, Y7, Y1
	VORPS Y1, Y0, Y0
	VCMPPS $3, Y7, Y7, Y1
	VBLENDVPS Y1, Y7, Y0, Y0
	VMOVUPS Y0, (DI)
	ADDQ $32, SI
	ADDQ $32, DI
	SUBQ $8, CX
	JMP erfLoop
erfDone:
	VZEROUPPER
	RET
