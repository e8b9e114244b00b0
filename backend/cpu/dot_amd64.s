//go:build amd64 && !purego

#include "textflag.h"

// func dotAccF32x8(acc *float64, a, b *float32, offA, offB *int, np, n int)
// For each lane i < n (a multiple of 8): acc[i] += float64(a[offA[p]+i] *
// b[offB[p]+i]) for p = 0 … np-1 in order; 16 or 8 lanes held in registers
// over all the points.
TEXT ·dotAccF32x8(SB), NOSPLIT, $0-56
	MOVQ acc+0(FP), DI
	MOVQ a+8(FP), SI
	MOVQ b+16(FP), DX
	MOVQ offA+24(FP), R8
	MOVQ offB+32(FP), R9
	MOVQ np+40(FP), R10
	MOVQ n+48(FP), CX
strip16:
	CMPQ CX, $16
	JLT strip8
	VMOVUPD (DI), Y0
	VMOVUPD 32(DI), Y1
	VMOVUPD 64(DI), Y2
	VMOVUPD 96(DI), Y3
	XORQ R11, R11
p16:
	MOVQ (R8)(R11*8), R12
	MOVQ (R9)(R11*8), R13
	VMOVUPS (SI)(R12*4), Y4
	VMOVUPS 32(SI)(R12*4), Y5
	VMULPS (DX)(R13*4), Y4, Y4
	VMULPS 32(DX)(R13*4), Y5, Y5
	VCVTPS2PD X4, Y6
	VEXTRACTF128 $1, Y4, X4
	VCVTPS2PD X4, Y7
	VADDPD Y6, Y0, Y0
	VADDPD Y7, Y1, Y1
	VCVTPS2PD X5, Y8
	VEXTRACTF128 $1, Y5, X5
	VCVTPS2PD X5, Y9
	VADDPD Y8, Y2, Y2
	VADDPD Y9, Y3, Y3
	INCQ R11
	CMPQ R11, R10
	JLT p16
	VMOVUPD Y0, (DI)
	VMOVUPD Y1, 32(DI)
	VMOVUPD Y2, 64(DI)
	VMOVUPD Y3, 96(DI)
	ADDQ $128, DI
	ADDQ $64, SI
	ADDQ $64, DX
	SUBQ $16, CX
	JMP strip16
strip8:
	CMPQ CX, $8
	JLT done
	VMOVUPD (DI), Y0
	VMOVUPD 32(DI), Y1
	XORQ R11, R11
p8:
	MOVQ (R8)(R11*8), R12
	MOVQ (R9)(R11*8), R13
	VMOVUPS (SI)(R12*4), Y4
	VMULPS (DX)(R13*4), Y4, Y4
	VCVTPS2PD X4, Y6
	VEXTRACTF128 $1, Y4, X4
	VCVTPS2PD X4, Y7
	VADDPD Y6, Y0, Y0
	VADDPD Y7, Y1, Y1
	INCQ R11
	CMPQ R11, R10
	JLT p8
	VMOVUPD Y0, (DI)
	VMOVUPD Y1, 32(DI)
done:
	VZEROUPPER
	RET

// func sumAccF32x8(acc *float64, a *float32, offA *int, np, n int)
// For each lane i < n (a multiple of 8): acc[i] += float64(a[offA[p]+i])
// for p = 0 … np-1 in order.
TEXT ·sumAccF32x8(SB), NOSPLIT, $0-40
	MOVQ acc+0(FP), DI
	MOVQ a+8(FP), SI
	MOVQ offA+16(FP), R8
	MOVQ np+24(FP), R10
	MOVQ n+32(FP), CX
sstrip16:
	CMPQ CX, $16
	JLT sstrip8
	VMOVUPD (DI), Y0
	VMOVUPD 32(DI), Y1
	VMOVUPD 64(DI), Y2
	VMOVUPD 96(DI), Y3
	XORQ R11, R11
s16:
	MOVQ (R8)(R11*8), R12
	VCVTPS2PD (SI)(R12*4), Y6
	VCVTPS2PD 16(SI)(R12*4), Y7
	VCVTPS2PD 32(SI)(R12*4), Y8
	VCVTPS2PD 48(SI)(R12*4), Y9
	VADDPD Y6, Y0, Y0
	VADDPD Y7, Y1, Y1
	VADDPD Y8, Y2, Y2
	VADDPD Y9, Y3, Y3
	INCQ R11
	CMPQ R11, R10
	JLT s16
	VMOVUPD Y0, (DI)
	VMOVUPD Y1, 32(DI)
	VMOVUPD Y2, 64(DI)
	VMOVUPD Y3, 96(DI)
	ADDQ $128, DI
	ADDQ $64, SI
	SUBQ $16, CX
	JMP sstrip16
sstrip8:
	CMPQ CX, $8
	JLT sdone
	VMOVUPD (DI), Y0
	VMOVUPD 32(DI), Y1
	XORQ R11, R11
s8:
	MOVQ (R8)(R11*8), R12
	VCVTPS2PD (SI)(R12*4), Y6
	VCVTPS2PD 16(SI)(R12*4), Y7
	VADDPD Y6, Y0, Y0
	VADDPD Y7, Y1, Y1
	INCQ R11
	CMPQ R11, R10
	JLT s8
	VMOVUPD Y0, (DI)
	VMOVUPD Y1, 32(DI)
sdone:
	VZEROUPPER
	RET

// func axpyF32x8(d, a *float32, w float32, n int)
// d[i] += w·a[i] for i < n (a multiple of 8), the product rounded first.
TEXT ·axpyF32x8(SB), NOSPLIT, $0-32
	MOVQ d+0(FP), DI
	MOVQ a+8(FP), SI
	VBROADCASTSS w+16(FP), Y7
	MOVQ n+24(FP), CX
axpy1:
	VMULPS (SI), Y7, Y0
	VADDPS (DI), Y0, Y0
	VMOVUPS Y0, (DI)
	ADDQ $32, SI
	ADDQ $32, DI
	SUBQ $8, CX
	JNZ axpy1
	VZEROUPPER
	RET

// func axpy2F32x8(d, a *float32, w float32, n int)
// d[i] += w·a[2i] for i < n (a multiple of 8), reading a[0 … 2n-1].
TEXT ·axpy2F32x8(SB), NOSPLIT, $0-32
	MOVQ d+0(FP), DI
	MOVQ a+8(FP), SI
	VBROADCASTSS w+16(FP), Y7
	MOVQ n+24(FP), CX
axpy2:
	VMOVUPS (SI), Y0
	VMOVUPS 32(SI), Y1
	VSHUFPS $0x88, Y1, Y0, Y2 // a0 a2 a8 a10 | a4 a6 a12 a14
	VPERMPD $0xD8, Y2, Y2     // a0 a2 a4 a6 a8 a10 a12 a14
	VMULPS Y2, Y7, Y2
	VADDPS (DI), Y2, Y2
	VMOVUPS Y2, (DI)
	ADDQ $64, SI
	ADDQ $32, DI
	SUBQ $8, CX
	JNZ axpy2
	VZEROUPPER
	RET

// func axpyF32x16(d, a *float32, w float32, n int)
// d[i] += w·a[i] for i < n, the product rounded first, with AVX-512: the
// last n mod 16 elements under a mask, reading nothing past a[n-1].
TEXT ·axpyF32x16(SB), NOSPLIT, $0-32
	MOVQ d+0(FP), DI
	MOVQ a+8(FP), SI
	VBROADCASTSS w+16(FP), Z7
	MOVQ n+24(FP), CX
axpy16:
	CMPQ CX, $16
	JLT axpy16tail
	VMULPS (SI), Z7, Z0
	VADDPS (DI), Z0, Z0
	VMOVUPS Z0, (DI)
	ADDQ $64, SI
	ADDQ $64, DI
	SUBQ $16, CX
	JMP axpy16
axpy16tail:
	TESTQ CX, CX
	JEQ axpy16done
	MOVL $1, AX
	SHLL CX, AX
	DECL AX
	KMOVW AX, K1
	VMOVUPS.Z (SI), K1, Z0
	VMOVUPS.Z (DI), K1, Z1
	VMULPS Z0, Z7, Z0
	VADDPS Z1, Z0, Z0
	VMOVUPS Z0, K1, (DI)
axpy16done:
	VZEROUPPER
	RET

// The even elements of two vectors of 16, for VPERMT2PS.
DATA evens<>+0(SB)/4, $0
DATA evens<>+4(SB)/4, $2
DATA evens<>+8(SB)/4, $4
DATA evens<>+12(SB)/4, $6
DATA evens<>+16(SB)/4, $8
DATA evens<>+20(SB)/4, $10
DATA evens<>+24(SB)/4, $12
DATA evens<>+28(SB)/4, $14
DATA evens<>+32(SB)/4, $16
DATA evens<>+36(SB)/4, $18
DATA evens<>+40(SB)/4, $20
DATA evens<>+44(SB)/4, $22
DATA evens<>+48(SB)/4, $24
DATA evens<>+52(SB)/4, $26
DATA evens<>+56(SB)/4, $28
DATA evens<>+60(SB)/4, $30
GLOBL evens<>(SB), RODATA|NOPTR, $64

// func gather2F32x16(d, s *float32, blocks, rem int, mask uint32)
// d[i] = s[2i] for i < 16·blocks+rem with AVX-512: blocks of 16 read
// s[0 … 32·blocks-1], then rem ≤ 16 more under masks, mask selecting the
// elements of the 32 after the blocks that they read (s[0 … 2·rem-2]).
TEXT ·gather2F32x16(SB), NOSPLIT, $0-36
	MOVQ d+0(FP), DI
	MOVQ s+8(FP), SI
	MOVQ blocks+16(FP), CX
	MOVQ rem+24(FP), DX
	VMOVUPS evens<>(SB), Z6
	TESTQ CX, CX
	JEQ gather2tail
gather2loop:
	VMOVUPS (SI), Z0
	VPERMT2PS 64(SI), Z6, Z0
	VMOVUPS Z0, (DI)
	ADDQ $128, SI
	ADDQ $64, DI
	DECQ CX
	JNZ gather2loop
gather2tail:
	TESTQ DX, DX
	JEQ gather2done
	MOVL mask+32(FP), AX
	KMOVW AX, K1
	SHRL $16, AX
	KMOVW AX, K2
	VMOVUPS.Z (SI), K1, Z0
	VMOVUPS.Z 64(SI), K2, Z1
	VPERMT2PS Z1, Z6, Z0
	MOVQ DX, CX
	MOVL $1, AX
	SHLL CX, AX
	DECL AX
	KMOVW AX, K3
	VMOVUPS Z0, K3, (DI)
gather2done:
	VZEROUPPER
	RET
