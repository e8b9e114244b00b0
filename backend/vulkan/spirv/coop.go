package spirv

import "github.com/tartanml/tartan/kir"

// The tiled product on cooperative matrices (SPV_KHR_cooperative_matrix):
// a work-group of sub-groups computes a block of C of up to 128 × 128,
// each sub-group a grid of the target's M × N tiles of it, with K-slices
// of A and B staged in shared memory as 16-bit floats (converted from the
// float32 operands while staging, with the frame's guards and conditions)
// and double-buffered, so that one barrier per slice suffices. Each
// accumulator tile then goes through shared memory, where the sub-group's
// invocations apply the kernel's epilogue to its elements one by one, as
// the float32 template does. Such modules use the Vulkan memory model, as
// SPV_KHR_cooperative_matrix requires. Invocation i belongs to sub-group
// i / SubgroupSize, as drivers lay out the sub-groups of a 1-D
// work-group.

// coopThreads is the work-group size the template aims at; coopPad pads
// the rows of staged slices by 16 bytes, against shared-memory bank
// conflicts.
const coopThreads, coopPad = 256, 8

// coopCfg is the template's layout for one product.
type coopCfg struct {
	bm, bn, bk int // the block's rows and columns, and the slice's depth
	sgR, sgC   int // sub-groups along the block's rows and columns
	threads    int
	sa, sb     int // the row strides of staged A (bm × bk) and B (bk × bn)
}

// coopBlock returns the cost model's block and slice depth for a product
// of rows × cols: 32, 64 or 128 along each by the extent, slices of 32.
func coopBlock(s CoopShape, rows, cols int) (bm, bn, bk int) {
	side := func(n, t int) int {
		for _, b := range []int{32, 64} {
			if n <= b && b%t == 0 {
				return b
			}
		}
		return 128
	}
	return side(rows, s.M), side(cols, s.N), 32
}

// coopLayout returns the layout of blocks of bm × bn in slices of bk:
// at most coopThreads/sub sub-groups of sub invocations dividing the
// block's tiles between them, each taking a region as square as they
// allow.
func coopLayout(s CoopShape, sub, bm, bn, bk int) coopCfg {
	c := coopCfg{bm: bm, bn: bn, bk: bk, sgR: 1, sgC: 1}
	tr, tc, nsg := c.bm/s.M, c.bn/s.N, max(1, coopThreads/max(sub, 1))
	for c.sgR*c.sgC*2 <= nsg {
		wideR, wideC := tr%(2*c.sgR) == 0, tc%(2*c.sgC) == 0
		if wideC && (tc/c.sgC >= tr/c.sgR || !wideR) {
			c.sgC *= 2
		} else if wideR {
			c.sgR *= 2
		} else {
			break
		}
	}
	c.threads = c.sgR * c.sgC * max(sub, 1)
	c.sa, c.sb = c.bk+coopPad, c.bn+coopPad
	return c
}

// sharedBytes returns the shared memory the layout takes: two slices of
// each operand in 16-bit floats and an M × N float32 tile per sub-group.
func (c coopCfg) sharedBytes(s CoopShape) int {
	return 2*2*(c.bm*c.sa+c.bk*c.sb) + 4*c.sgR*c.sgC*s.M*s.N
}

// CoopSharedBytes returns the shared memory the template's largest block
// takes for shape s in sub-groups of sub invocations: the runtime checks
// it against the device's before it offers the shape.
func CoopSharedBytes(s CoopShape, sub int) int {
	return coopLayout(s, sub, 128, 128, 32).sharedBytes(s)
}

// coopGEMM emits the tiled product of view v with tiling tl on
// cooperative matrices.
func (e *emitter) coopGEMM(v *kir.GEMMView, tl *kir.Tiling) {
	m, s, sub := e.m, e.t.Coop, e.t.SubgroupSize
	i32, f32 := m.tInt(32, true), m.tFloat(32)
	h := m.tHalf(s.BFloat16)
	c := coopLayout(s, sub, tl.BM, tl.BN, tl.BK)
	f := e.newFrame(v, c.bm, c.bn, sub)
	add, mul := f.add, func(a, b uint32) uint32 { return m.op(opIMul, i32, a, b) }
	lane, sg := f.lo, f.hi
	wr, wc := c.bm/c.sgR, c.bn/c.sgC // each sub-group's region
	tr, tc := wr/s.M, wc/s.N
	rBase := mul(m.op(opSDiv, i32, sg, e.ci(c.sgC)), e.ci(wr))
	cBase := mul(m.op(opSRem, i32, sg, e.ci(c.sgC)), e.ci(wc))
	aSize, bSize := c.bm*c.sa, c.bk*c.sb
	as, bs := e.shared(h, 2*aSize), e.shared(h, 2*bSize)
	scratch := e.shared(f32, c.sgR*c.sgC*s.M*s.N)
	tA, tB, tC := m.tCoop(h, s.M, s.K, 0), m.tCoop(h, s.K, s.N, 1), m.tCoop(f32, s.M, s.N, 2)
	acc := make([]uint32, tr*tc)
	zero := m.typed(key("null", tC), opConstantNull, tC)
	for i := range acc {
		acc[i] = m.local(tC)
		m.do(opStore, acc[i], zero)
	}
	elem := func(arr uint32, t uint32, i uint32) uint32 {
		return m.op(opAccessChain, m.tPtr(scWorkgroup, t), arr, i)
	}
	conv := func(x uint32) uint32 { return m.op(opFConvert, h, x) }
	rowMajor := e.m.cUint(0)
	pa := f.plan(false, as, h, c.bm, c.bk, c.threads, func(r, d uint32) uint32 { return add(mul(r, e.ci(c.sa)), d) })
	pb := f.plan(true, bs, h, c.bn, c.bk, c.threads, func(r, d uint32) uint32 { return add(mul(d, e.ci(c.sb)), r) })
	// stage fills buffer buf (an id of 0 or 1) with the slice at depth k0.
	stage := func(k0, buf uint32) {
		pa.stage(k0, mul(buf, e.ci(aSize)), conv)
		pb.stage(k0, mul(buf, e.ci(bSize)), conv)
	}
	stage(e.ci(0), e.ci(0))
	e.barrier()
	m.loop(e.ci(0), e.ci(f.depth), e.ci(c.bk), func(k0 uint32) {
		buf := m.op(opSRem, i32, m.op(opSDiv, i32, k0, e.ci(c.bk)), e.ci(2))
		next := add(k0, e.ci(c.bk))
		m.ifThen(f.lt(next, f.depth), func() { stage(next, m.op(opISub, i32, e.ci(1), buf)) })
		offA, offB := mul(buf, e.ci(aSize)), mul(buf, e.ci(bSize))
		for kk := 0; kk < c.bk; kk += s.K {
			a, b := make([]uint32, tr), make([]uint32, tc)
			for i := range a {
				at := add(offA, add(mul(add(rBase, e.ci(i*s.M)), e.ci(c.sa)), e.ci(kk)))
				a[i] = m.op(opCoopMatrixLoad, tA, elem(as, h, at), rowMajor, e.ci(c.sa))
			}
			for j := range b {
				at := add(offB, add(e.ci(kk*c.sb), add(cBase, e.ci(j*s.N))))
				b[j] = m.op(opCoopMatrixLoad, tB, elem(bs, h, at), rowMajor, e.ci(c.sb))
			}
			for t := range acc {
				r := m.op(opCoopMatrixMulAdd, tC, a[t/tc], b[t%tc], m.op(opLoad, tC, acc[t]))
				m.do(opStore, acc[t], r)
			}
		}
		e.barrier()
	})
	sbase := mul(sg, e.ci(s.M*s.N))
	for t := range acc {
		if t > 0 {
			e.barrier() // the sub-groups are done with the previous tile
		}
		m.do(opCoopMatrixStore, elem(scratch, f32, sbase), m.op(opLoad, tC, acc[t]), rowMajor, e.ci(s.N))
		e.barrier()
		r0, c0 := add(rBase, e.ci(t/tc*s.M)), add(cBase, e.ci(t%tc*s.N))
		m.loop(lane, e.ci(s.M*s.N), e.ci(sub), func(el uint32) {
			row := add(f.row0, add(r0, m.op(opSDiv, i32, el, e.ci(s.N))))
			col := add(f.col0, add(c0, m.op(opSRem, i32, el, e.ci(s.N))))
			f.output(row, col, func() uint32 { return m.op(opLoad, f32, elem(scratch, f32, add(sbase, el))) })
		})
	}
}
