//go:build ignore

// This program writes kernel_amd64.s, the amd64 assembly of package gemm, and
// kernel_amd64_decl.go, its Go declarations and kernel tables. Run it with `go generate`
// in the package directory.
//
// Every micro-kernel computes, for one rows×nr tile,
//
//	C = alpha·A·B + beta·C    (C is not read when beta is ±0)
//
// reading B row p (nr values) at b + p·bs elements and writing C rows ldc elements apart.
// The kernels differ in their row count and in how they walk A:
//
//	kernel<rows>x<nr><ISA>   A[r, p] at a + p·as + r   (packed slivers, or Aᵀ stored)
//	kernel<rows>x<nr><ISA>R  A[r, p] at a + r·as + p   (A stored row-major)
//
// with the Go signature
//
//	func name(k int, a *float32, as int, b *float32, bs int, c *float32, ldc int, mask uint32, alpha, beta float32)
//
// AVX-512 kernels write only the columns whose bit is set in mask (bit j for column j);
// AVX2 kernels ignore mask and write all nr columns.
//
// transpose16x16AVX512 transposes 16×16 blocks for packing a transposed B, and
// copyRowsAVX512 copies strided rows for packing operands outside the package.
package main

import (
	"bytes"
	"fmt"
	"log"
	"os"
)

// isa describes one vector instruction set: register prefix and float32 lanes per register.
type isa struct {
	name  string // suffix in the function name
	reg   string // "Z" or "Y"
	lanes int
	regs  int    // vector registers available
	zero  string // instruction that zeroes a register
}

var (
	avx512 = isa{name: "AVX512", reg: "Z", lanes: 16, regs: 32, zero: "VPXORD"}
	avx2   = isa{name: "AVX2", reg: "Y", lanes: 8, regs: 16, zero: "VXORPS"}
)

type gen struct{ buf bytes.Buffer }

// prefetchA is how far ahead, in bytes, the kernels reading A row-major prefetch its rows.
const prefetchA = 256

func (g *gen) p(format string, args ...any) { fmt.Fprintf(&g.buf, format+"\n", args...) }

// rowAddr returns the address of row r (0 ≤ r < 18) of a matrix whose rows lie a stride
// apart, at byte offset off from the row start: rows 0–8 are reached from base SI and rows
// 9–17 from BX (SI plus nine strides), with R10, R11, R12 and R13 holding one, three, five
// and seven strides in bytes.
func rowAddr(r, off int) string {
	base := "SI"
	if r >= 9 {
		base, r = "BX", r-9
	}
	idx := []string{"", "(R10*1)", "(R10*2)", "(R11*1)", "(R10*4)", "(R12*1)", "(R11*2)", "(R13*1)", "(R10*8)"}[r]
	return fmt.Sprintf("%d(%s)%s", off, base, idx)
}

// strideRegs loads the row-stride registers rowAddr relies on from the byte stride in R10.
func (g *gen) strideRegs(rows int) {
	g.p("\tLEAQ (R10)(R10*2), R11")
	g.p("\tLEAQ (R10)(R10*4), R12")
	g.p("\tLEAQ (R12)(R10*2), R13")
	if rows > 9 {
		g.p("\tLEAQ (SI)(R10*8), BX")
		g.p("\tADDQ R10, BX")
	}
}

// kernelName names the kernel of mr rows and nr columns for an instruction set.
func kernelName(x isa, mr, nr int, rowMajorA bool) string {
	name := fmt.Sprintf("kernel%dx%d%s", mr, nr, x.name)
	if rowMajorA {
		name += "R"
	}
	return name
}

// kernel emits one mr×(vecs·lanes) micro-kernel; rowMajorA selects the R variant. Vector
// registers 0..vecs-1 hold a row of B, register vecs the broadcast element of A, and the
// accumulators start at register 4. With AVX-512, opmask registers K1.. hold the column
// mask of each vector of a C row.
func (g *gen) kernel(x isa, mr, vecs, unroll int, rowMajorA bool) {
	nr := vecs * x.lanes
	name := kernelName(x, mr, nr, rowMajorA)
	masked := x.reg == "Z"
	r := func(i int) string { return fmt.Sprintf("%s%d", x.reg, i) }
	acc := func(i, v int) string { return r(4 + i*vecs + v) }
	bcast := r(vecs)
	if 4+mr*vecs > x.regs || mr > 18 {
		log.Fatalf("%s: too many accumulators", name)
	}
	vbytes := x.lanes * 4

	g.p("")
	g.p("// func %s(k int, a *float32, as int, b *float32, bs int, c *float32, ldc int, mask uint32, alpha, beta float32)", name)
	g.p("TEXT ·%s(SB), NOSPLIT, $0-68", name)
	g.p("\tMOVQ k+0(FP), CX")
	g.p("\tMOVQ a+8(FP), SI")
	g.p("\tMOVQ as+16(FP), R10")
	g.p("\tSHLQ $2, R10")
	g.p("\tMOVQ b+24(FP), DI")
	g.p("\tMOVQ c+40(FP), DX")
	g.p("\tMOVQ ldc+48(FP), R8")
	g.p("\tSHLQ $2, R8")
	// Prefetch the C tile while the product is computed.
	g.p("\tMOVQ DX, R9")
	for i := 0; i < mr; i++ {
		for off := 0; off < nr*4; off += 64 {
			g.p("\tPREFETCHT0 %d(R9)", off)
		}
		if i < mr-1 {
			g.p("\tADDQ R8, R9")
		}
	}
	if masked {
		g.p("\tMOVL mask+56(FP), AX")
		for v := 0; v < vecs; v++ {
			g.p("\tKMOVW AX, K%d", v+1)
			if v < vecs-1 {
				g.p("\tSHRL $16, AX")
			}
		}
	}
	g.p("\tMOVQ bs+32(FP), R9")
	g.p("\tSHLQ $2, R9")
	if rowMajorA {
		g.strideRegs(mr)
	}
	for i := 0; i < mr; i++ {
		for v := 0; v < vecs; v++ {
			g.p("\t%s %s, %s, %s", x.zero, acc(i, v), acc(i, v), acc(i, v))
		}
	}
	step := func(s int) {
		for v := 0; v < vecs; v++ {
			g.p("\tVMOVUPS %d(DI), %s", v*vbytes, r(v))
		}
		g.p("\tADDQ R9, DI")
		for i := 0; i < mr; i++ {
			if rowMajorA {
				g.p("\tVBROADCASTSS %s, %s", rowAddr(i, 4*s), bcast)
			} else {
				g.p("\tVBROADCASTSS %d(SI), %s", 4*i, bcast)
			}
			for v := 0; v < vecs; v++ {
				g.p("\tVFMADD231PS %s, %s, %s", bcast, r(v), acc(i, v))
			}
		}
		if !rowMajorA {
			g.p("\tADDQ R10, SI")
		}
	}
	advanceA := func(steps int) {
		if rowMajorA {
			g.p("\tADDQ $%d, SI", 4*steps)
			if mr > 9 {
				g.p("\tADDQ $%d, BX", 4*steps)
			}
		}
	}
	g.p("\tCMPQ CX, $%d", unroll)
	g.p("\tJLT %s_tail", name)
	g.p("%s_loop:", name)
	for s := 0; s < unroll; s++ {
		step(s)
		if rowMajorA && masked && vecs > 1 && s == 0 {
			// Each row of A is a stream of its own, more than the hardware prefetchers
			// follow: fetch every row prefetchA bytes ahead. (Measured on the development
			// machine, this took 8192×32×288 from about 125 to 200 GFLOP/s on one core,
			// and slowed the one-vector kernels, whose loads already match their
			// multiply-adds.)
			for i := 0; i < mr; i++ {
				g.p("\tPREFETCHT0 %s", rowAddr(i, prefetchA))
			}
		}
	}
	advanceA(unroll)
	g.p("\tSUBQ $%d, CX", unroll)
	g.p("\tCMPQ CX, $%d", unroll)
	g.p("\tJGE %s_loop", name)
	g.p("%s_tail:", name)
	g.p("\tTESTQ CX, CX")
	g.p("\tJEQ %s_store", name)
	step(0)
	advanceA(1)
	g.p("\tDECQ CX")
	g.p("\tJMP %s_tail", name)

	// Store: scale by alpha, then add beta·C unless beta is ±0, which holds exactly when
	// the bits of beta shifted left by one are all zero.
	alpha, beta := r(0), r(1)
	g.p("%s_store:", name)
	mask := func(v int) string {
		if masked {
			return fmt.Sprintf("K%d, ", v+1)
		}
		return ""
	}
	g.p("\tVBROADCASTSS alpha+60(FP), %s", alpha)
	g.p("\tMOVL beta+64(FP), AX")
	g.p("\tSHLL $1, AX")
	g.p("\tJEQ %s_overwrite", name)
	g.p("\tVBROADCASTSS beta+64(FP), %s", beta)
	for i := 0; i < mr; i++ {
		for v := 0; v < vecs; v++ {
			// Masked-off lanes of the memory operand are not read (faults are suppressed).
			g.p("\tVMULPS %s, %s, %s", alpha, acc(i, v), acc(i, v))
			g.p("\tVFMADD231PS %d(DX), %s, %s%s", v*vbytes, beta, mask(v), acc(i, v))
			g.p("\tVMOVUPS %s, %s%d(DX)", acc(i, v), mask(v), v*vbytes)
		}
		if i < mr-1 {
			g.p("\tADDQ R8, DX")
		}
	}
	g.p("\tVZEROUPPER")
	g.p("\tRET")
	g.p("%s_overwrite:", name)
	for i := 0; i < mr; i++ {
		for v := 0; v < vecs; v++ {
			g.p("\tVMULPS %s, %s, %s", alpha, acc(i, v), acc(i, v))
			g.p("\tVMOVUPS %s, %s%d(DX)", acc(i, v), mask(v), v*vbytes)
		}
		if i < mr-1 {
			g.p("\tADDQ R8, DX")
		}
	}
	g.p("\tVZEROUPPER")
	g.p("\tRET")
}

// transpose emits transpose16x16AVX512(src *float32, lds int, dst *float32, ldd int,
// blocks int): for each block q < blocks, the 16×16 block whose row i starts at
// src + i·lds + 16q is written transposed, its row j at dst + (16q + j)·ldd.
func (g *gen) transpose() {
	const name = "transpose16x16AVX512"
	z := func(i int) string { return fmt.Sprintf("Z%d", i) }
	g.p("")
	g.p("// func %s(src *float32, lds int, dst *float32, ldd int, blocks int)", name)
	g.p("TEXT ·%s(SB), NOSPLIT, $0-40", name)
	g.p("\tMOVQ src+0(FP), SI")
	g.p("\tMOVQ lds+8(FP), R10")
	g.p("\tSHLQ $2, R10")
	g.p("\tMOVQ dst+16(FP), DI")
	g.p("\tMOVQ ldd+24(FP), R8")
	g.p("\tSHLQ $2, R8")
	g.p("\tMOVQ blocks+32(FP), CX")
	g.strideRegs(16)
	g.p("\tTESTQ CX, CX")
	g.p("\tJEQ %s_done", name)
	g.p("%s_loop:", name)
	// Rows r0..r15 in Z0..Z15.
	for i := 0; i < 16; i++ {
		g.p("\tVMOVUPS %s, %s", rowAddr(i, 0), z(i))
	}
	// Interleave 32-bit elements of row pairs: Z16+2p ← lo(r2p, r2p+1), Z17+2p ← hi.
	for p := 0; p < 8; p++ {
		g.p("\tVUNPCKLPS %s, %s, %s", z(2*p+1), z(2*p), z(16+2*p))
		g.p("\tVUNPCKHPS %s, %s, %s", z(2*p+1), z(2*p), z(17+2*p))
	}
	// Interleave 64-bit pairs within each group of four rows: for group q, Z(4q+c) holds
	// rows 4q..4q+3 at column 4L+c of each 128-bit lane L.
	for q := 0; q < 4; q++ {
		t := 16 + 4*q // t: lo(r0,r1), t+1: hi(r0,r1), t+2: lo(r2,r3), t+3: hi(r2,r3)
		g.p("\tVUNPCKLPD %s, %s, %s", z(t+2), z(t), z(4*q+0))
		g.p("\tVUNPCKHPD %s, %s, %s", z(t+2), z(t), z(4*q+1))
		g.p("\tVUNPCKLPD %s, %s, %s", z(t+3), z(t+1), z(4*q+2))
		g.p("\tVUNPCKHPD %s, %s, %s", z(t+3), z(t+1), z(4*q+3))
	}
	// Gather 128-bit lanes: output column 4L+c takes lane L of Z(c), Z(4+c), Z(8+c),
	// Z(12+c) in that order.
	for c := 0; c < 4; c++ {
		g.p("\tVSHUFF32X4 $0x44, %s, %s, %s", z(4+c), z(c), z(16+4*c))    // u_c.01, u_4+c.01
		g.p("\tVSHUFF32X4 $0xEE, %s, %s, %s", z(4+c), z(c), z(17+4*c))    // u_c.23, u_4+c.23
		g.p("\tVSHUFF32X4 $0x44, %s, %s, %s", z(12+c), z(8+c), z(18+4*c)) // u_8+c.01, u_12+c.01
		g.p("\tVSHUFF32X4 $0xEE, %s, %s, %s", z(12+c), z(8+c), z(19+4*c)) // u_8+c.23, u_12+c.23
	}
	out := make([]string, 16)
	for c := 0; c < 4; c++ {
		v, v2, w, w2 := 16+4*c, 17+4*c, 18+4*c, 19+4*c
		g.p("\tVSHUFF32X4 $0x88, %s, %s, %s", z(w), z(v), z(c))      // column c
		g.p("\tVSHUFF32X4 $0xDD, %s, %s, %s", z(w), z(v), z(4+c))    // column 4+c
		g.p("\tVSHUFF32X4 $0x88, %s, %s, %s", z(w2), z(v2), z(8+c))  // column 8+c
		g.p("\tVSHUFF32X4 $0xDD, %s, %s, %s", z(w2), z(v2), z(12+c)) // column 12+c
		out[c], out[4+c], out[8+c], out[12+c] = z(c), z(4+c), z(8+c), z(12+c)
	}
	for j := 0; j < 16; j++ {
		g.p("\tVMOVUPS %s, (DI)", out[j])
		g.p("\tADDQ R8, DI")
	}
	g.p("\tADDQ $64, SI")
	g.p("\tADDQ $64, BX")
	g.p("\tDECQ CX")
	g.p("\tJNE %s_loop", name)
	g.p("%s_done:", name)
	g.p("\tVZEROUPPER")
	g.p("\tRET")
}

// copyRows emits copyRowsAVX512(dst *float32, ldd int, src *float32, lds int, n int,
// mask uint32, rows int): for each row j < rows, the n/16·16 + popcount(mask) float32s
// at src + j·lds go to dst + j·ldd, whole vectors of 16 and then the lanes of mask. It
// packs the rows of operands (im2col) without a call per row.
func (g *gen) copyRows() {
	const name = "copyRowsAVX512"
	g.p("")
	g.p("// func %s(dst *float32, ldd int, src *float32, lds int, n int, mask uint32, rows int)", name)
	g.p("TEXT ·%s(SB), NOSPLIT, $0-56", name)
	g.p("\tMOVQ dst+0(FP), DI")
	g.p("\tMOVQ ldd+8(FP), R8")
	g.p("\tSHLQ $2, R8")
	g.p("\tMOVQ src+16(FP), SI")
	g.p("\tMOVQ lds+24(FP), R9")
	g.p("\tSHLQ $2, R9")
	g.p("\tMOVQ n+32(FP), DX")
	g.p("\tSHRQ $4, DX")
	g.p("\tMOVL mask+40(FP), AX")
	g.p("\tKMOVW AX, K1")
	g.p("\tMOVQ rows+48(FP), CX")
	g.p("\tTESTQ CX, CX")
	g.p("\tJEQ %s_done", name)
	g.p("%s_row:", name)
	g.p("\tMOVQ SI, R10")
	g.p("\tMOVQ DI, R11")
	g.p("\tMOVQ DX, R12")
	g.p("\tTESTQ R12, R12")
	g.p("\tJEQ %s_tail", name)
	g.p("%s_vec:", name)
	g.p("\tVMOVUPS (R10), Z0")
	g.p("\tVMOVUPS Z0, (R11)")
	g.p("\tADDQ $64, R10")
	g.p("\tADDQ $64, R11")
	g.p("\tDECQ R12")
	g.p("\tJNE %s_vec", name)
	g.p("%s_tail:", name)
	// Masked-off lanes are neither read (faults are suppressed) nor written. A masked
	// store is slow on some processors even with an empty mask, so rows of whole
	// vectors skip it.
	g.p("\tTESTL AX, AX")
	g.p("\tJEQ %s_next", name)
	g.p("\tVMOVUPS.Z (R10), K1, Z0")
	g.p("\tVMOVUPS Z0, K1, (R11)")
	g.p("%s_next:", name)
	g.p("\tADDQ R9, SI")
	g.p("\tADDQ R8, DI")
	g.p("\tDECQ CX")
	g.p("\tJNE %s_row", name)
	g.p("%s_done:", name)
	g.p("\tVZEROUPPER")
	g.p("\tRET")
}

// family is a set of kernels of one instruction set, one per row count 1..mr.
type family struct {
	x      isa
	mr     int
	vecs   int
	unroll int
}

func main() {
	families := []family{{avx512, 14, 2, 4}, {avx512, 18, 1, 4}, {avx2, 6, 2, 4}}
	var g gen
	g.p("// Code generated by gen_kernels.go; DO NOT EDIT.")
	g.p("")
	g.p("//go:build amd64 && !purego")
	g.p("")
	g.p("#include \"textflag.h\"")
	for _, f := range families {
		for rows := f.mr; rows >= 1; rows-- {
			g.kernel(f.x, rows, f.vecs, f.unroll, false)
			g.kernel(f.x, rows, f.vecs, f.unroll, true)
		}
	}
	g.transpose()
	g.copyRows()
	if err := os.WriteFile("kernel_amd64.s", g.buf.Bytes(), 0o644); err != nil {
		log.Fatal(err)
	}

	var d gen
	d.p("// Code generated by gen_kernels.go; DO NOT EDIT.")
	d.p("")
	d.p("//go:build amd64 && !purego")
	d.p("")
	d.p("package gemm")
	d.p("")
	d.p("// asmKernel is the Go signature of every assembly micro-kernel in kernel_amd64.s.")
	d.p("type asmKernel func(k int, a *float32, as int, b *float32, bs int, c *float32, ldc int, mask uint32, alpha, beta float32)")
	for _, f := range families {
		nr := f.vecs * f.x.lanes
		for _, rowMajor := range []bool{false, true} {
			layout := "column-major"
			if rowMajor {
				layout = "row-major"
			}
			d.p("")
			d.p("// kernels%dx%d%s%s lists the %s kernels of %d columns that read A %s, indexed by", f.mr, nr, f.x.name, map[bool]string{true: "R"}[rowMajor], f.x.name, nr, layout)
			d.p("// row count (entry 0 is unused).")
			d.p("var kernels%dx%d%s%s = [...]asmKernel{nil,", f.mr, nr, f.x.name, map[bool]string{true: "R"}[rowMajor])
			for rows := 1; rows <= f.mr; rows++ {
				d.p("\t%s,", kernelName(f.x, rows, nr, rowMajor))
			}
			d.p("}")
		}
		for rows := f.mr; rows >= 1; rows-- {
			for _, rowMajor := range []bool{false, true} {
				d.p("")
				d.p("//go:noescape")
				d.p("func %s(k int, a *float32, as int, b *float32, bs int, c *float32, ldc int, mask uint32, alpha, beta float32)", kernelName(f.x, rows, nr, rowMajor))
			}
		}
	}
	d.p("")
	d.p("//go:noescape")
	d.p("func transpose16x16AVX512(src *float32, lds int, dst *float32, ldd int, blocks int)")
	d.p("")
	d.p("//go:noescape")
	d.p("func copyRowsAVX512(dst *float32, ldd int, src *float32, lds int, n int, mask uint32, rows int)")
	if err := os.WriteFile("kernel_amd64_decl.go", d.buf.Bytes(), 0o644); err != nil {
		log.Fatal(err)
	}
}
