package spirv

import (
	"github.com/tartanml/tartan/kir"
	"github.com/tartanml/tartan/tile"
)

// The tiled matrix product: a work-group of gemmThreads invocations, a
// 16 × 16 grid, computes a block of C of rows × columns given by
// gemmBlock, each invocation (block/16) × (block/16) of it (rows ty+16i,
// columns tx+16j), with K-slices of gemmDepth of A and B staged in shared
// memory. On a target with cooperative matrices the block is computed by
// sub-groups instead (see coop.go); both share the frame below.
const gemmDepth, gemmThreads = 16, 256

// gemmBlock returns the rows and columns of C's block for a product of
// rows × cols (the view's M and N extents): 64 along each, or 32 or 16
// along one whose extent is at most that, so that a layer of 16 channels
// does not waste three quarters of every block.
func gemmBlock(rows, cols int) (bm, bn int) {
	side := func(n int) int {
		switch {
		case n <= 16:
			return 16
		case n <= 32:
			return 32
		}
		return 64
	}
	return side(rows), side(cols)
}

// shared declares a Workgroup array of n values of type t.
func (e *emitter) shared(t uint32, n int) uint32 {
	return e.m.variable(scWorkgroup, e.m.global(key("array", t, uint32(n)), opTypeArray, t, e.m.cUint(uint32(n))))
}

// barrier waits for the work-group, making its shared writes visible.
func (e *emitter) barrier() {
	e.m.do(opControlBarrier, e.m.cUint(2), e.m.cUint(2), e.m.cUint(0x108)) // Workgroup, AcquireRelease|WorkgroupMemory
}

// tiled reports whether the kernel runs as a tiled product: a "gemm"
// schedule whose view sorts every loop into one group, over a float32 sum
// of the product of the view's two float32 loads, on a device with the
// shared memory and work-group size the template needs. The view says the
// rest (validated by kir): A reads no N loop and B no M loop, which Where
// conditions belong to each, and which loads may leave their buffers.
func (e *emitter) tiled() bool {
	k, v := e.k, e.k.Schedule.GEMM
	if k.Schedule.Strategy != "gemm" || v == nil || k.Agg != tile.Sum || e.t.SharedBytes < 8192 ||
		e.t.MaxWorkGroupSize < gemmThreads || k.Body.Op != kir.Apply || k.Body.Fn != tile.Mul || len(k.Body.Args) != 2 ||
		kindOf(k.Body.DType) != kF32 {
		return false
	}
	if a := k.Body.Args; !(a[0] == v.A && a[1] == v.B || a[0] == v.B && a[1] == v.A) {
		return false
	}
	nout, group := len(k.Shape), make([]int, k.NumVars())
	for g, vs := range [][]int{v.Batch, v.M, v.N, v.K} {
		for _, x := range vs {
			if x < 0 || x >= len(group) || group[x] != 0 || (x < nout) == (g == 3) {
				return false
			}
			group[x] = g + 1
		}
	}
	for _, x := range []*kir.Expr{v.A, v.B} {
		if x.Op != kir.Load || kindOf(x.DType) != kF32 || kindOf(e.p.Buffers[x.Buf].DType) != kF32 {
			return false
		}
	}
	b, rows, cols, _ := v.Extents(k)
	bm, bn, threads := e.block(rows, cols)
	if threads > e.t.MaxWorkGroupSize {
		return false
	}
	fits := func(i, n int) bool { return n <= e.t.MaxGroupCount[i] || e.t.MaxGroupCount[i] <= 0 && n <= 65535 }
	return fits(2, b) && fits(1, (rows+bm-1)/bm) && fits(0, (cols+bn-1)/bn)
}

// block returns the block and work-group size of the target's template
// for a product of rows × cols.
func (e *emitter) block(rows, cols int) (bm, bn, threads int) {
	if e.t.Coop.M > 0 {
		c := coopBlock(e.t.Coop, e.t.SubgroupSize, rows, cols)
		return c.bm, c.bn, c.threads
	}
	bm, bn = gemmBlock(rows, cols)
	return bm, bn, gemmThreads
}

// frame is what both templates of the tiled product share: the
// invocation's place in its work-group and the block's in C, the loop
// variables at the block's batch point, the staging of operands into
// shared memory and the epilogue of each output point.
type frame struct {
	e                 *emitter
	v                 *kir.GEMMView
	ranges            []kir.Range
	vars              []uint32 // batch loops at the work-group's, the rest at their lower bounds
	rows, cols, depth int
	// lid is the invocation's index in the work-group, lo and hi its
	// remainder and quotient by the width given to newFrame; row0 and
	// col0 are the block's first row and column.
	lid, lo, hi, row0, col0 uint32
}

// newFrame starts the tiled product of view v in blocks of bm × bn for
// work-group (column block, row block, batch).
func (e *emitter) newFrame(v *kir.GEMMView, bm, bn, width int) *frame {
	m, k := e.m, e.k
	i32 := m.tInt(32, true)
	f := &frame{e: e, v: v, ranges: k.VarRanges()}
	_, f.rows, f.cols, f.depth = v.Extents(k)
	wg := func(c uint32) uint32 { return e.builtin(builtInWorkgroupID, c) }
	f.lid = e.builtin(builtInLocalInvocationID, 0)
	f.lo, f.hi = m.op(opSRem, i32, f.lid, e.ci(width)), m.op(opSDiv, i32, f.lid, e.ci(width))
	f.col0, f.row0 = m.op(opIMul, i32, wg(0), e.ci(bn)), m.op(opIMul, i32, wg(1), e.ci(bm))
	f.vars = make([]uint32, k.NumVars())
	for x := range f.vars {
		f.vars[x] = e.ci(f.ranges[x].Lo)
	}
	f.set(f.vars, v.Batch, wg(2))
	return f
}

// set sets vars of the loops vs to their values at row-major position x
// of their box.
func (f *frame) set(vars []uint32, vs []int, x uint32) {
	rs := make([]kir.Range, len(vs))
	for i, v := range vs {
		rs[i] = f.ranges[v]
	}
	for i, val := range f.e.split(x, rs) {
		vars[vs[i]] = val
	}
}

func (f *frame) add(a, b uint32) uint32 { return f.e.m.op(opIAdd, f.e.m.tInt(32, true), a, b) }
func (f *frame) lt(a uint32, n int) uint32 {
	return f.e.m.op(opSLessThan, f.e.m.tBool(), a, f.e.ci(n))
}

// operand returns A's (b false) or B's (b true) load, conditions, loops
// along the block's rows or columns, the block's first of them and their
// extent.
func (f *frame) operand(b bool) (*kir.Expr, []kir.Cond, []int, uint32, int) {
	if b {
		return f.v.B, f.v.Conds(f.e.k, true), f.v.N, f.col0, f.cols
	}
	return f.v.A, f.v.Conds(f.e.k, false), f.v.M, f.row0, f.rows
}

// output applies the kernel's epilogue to the value acc returns, C's
// element (row, col), and stores it, when the element is in C.
func (f *frame) output(row, col uint32, acc func() uint32) {
	e, m, k := f.e, f.e.m, f.e.k
	m.ifThen(m.op(opLogicalAnd, m.tBool(), f.lt(row, f.rows), f.lt(col, f.cols)), func() {
		vs := append([]uint32(nil), f.vars...)
		f.set(vs, f.v.M, row)
		f.set(vs, f.v.N, col)
		lin := e.ci(0)
		for d := range len(k.Shape) {
			lin = f.add(m.op(opIMul, m.tInt(32, true), lin, e.ci(k.Shape[d])), vs[d])
		}
		e.finish(vs, lin, acc())
	})
}

// gemm emits the tiled product of view v: the float32 template, or the
// cooperative-matrix one on a target that has them.
func (e *emitter) gemm(v *kir.GEMMView) {
	if e.t.Coop.M > 0 {
		e.coopGEMM(v)
		return
	}
	m := e.m
	i32, f32, _ := m.tInt(32, true), m.tFloat(32), m.tBool()
	_, rows, cols, _ := v.Extents(e.k)
	bm, bn := gemmBlock(rows, cols)
	tm, tn := bm/16, bn/16
	f := e.newFrame(v, bm, bn, 16)
	tx, ty := f.lo, f.hi
	as, bs := e.shared(f32, bm*gemmDepth), e.shared(f32, bn*gemmDepth)
	at := func(arr, i uint32) uint32 { return m.op(opAccessChain, m.tPtr(scWorkgroup, f32), arr, i) }
	acc := make([]uint32, tm*tn)
	for i := range acc {
		acc[i] = m.local(f32)
		m.do(opStore, acc[i], e.num(kF32, 0))
	}
	add := f.add
	depthMajor := func(ext int) func(r, d uint32) uint32 {
		return func(r, d uint32) uint32 { return add(m.op(opIMul, i32, d, e.ci(ext)), r) }
	}
	pa := f.plan(false, as, f32, bm, gemmDepth, gemmThreads, depthMajor(bm))
	pb := f.plan(true, bs, f32, bn, gemmDepth, gemmThreads, depthMajor(bn))
	m.loop(e.ci(0), e.ci(f.depth), e.ci(gemmDepth), func(k0 uint32) {
		pa.stage(k0, 0, nil)
		pb.stage(k0, 0, nil)
		e.barrier()
		m.loop(e.ci(0), e.ci(gemmDepth), e.ci(1), func(kk uint32) {
			a, b := make([]uint32, tm), make([]uint32, tn)
			for i := range a {
				a[i] = m.op(opLoad, f32, at(as, add(m.op(opIMul, i32, kk, e.ci(bm)), add(ty, e.ci(16*i)))))
			}
			for j := range b {
				b[j] = m.op(opLoad, f32, at(bs, add(m.op(opIMul, i32, kk, e.ci(bn)), add(tx, e.ci(16*j)))))
			}
			for i := range acc {
				p := m.op(opFMul, f32, a[i/tn], b[i%tn])
				m.do(opStore, acc[i], m.op(opFAdd, f32, m.op(opLoad, f32, acc[i]), p))
			}
		})
		e.barrier()
	})
	for i := range acc {
		row, col := add(f.row0, add(ty, e.ci(16*(i/tn)))), add(f.col0, add(tx, e.ci(16*(i%tn))))
		f.output(row, col, func() uint32 { return m.op(opLoad, f32, acc[i]) })
	}
}
