package spirv

import (
	"errors"
	"fmt"
	"slices"

	"github.com/tartanml/tartan/kir"
	"github.com/tartanml/tartan/tile"
)

// The tiled matrix product: a work-group of gemmThreads invocations, a
// 16 × 16 grid, computes a block of C of BM × BN of its tiling (16, 32 or
// 64 each), each invocation (BM/16) × (BN/16) of it (rows ty+16i, columns
// tx+16j), with K-slices of BK (16 or 32) of A and B staged in shared
// memory. A tiling whose Matrix is the target's (Target.Matrix) computes
// the block by sub-groups on cooperative matrices instead (see coop.go);
// both share the frame below. The schedule's tiling is obeyed or refused;
// without one, the cost model is gemmBlock, or coopBlock on a target with
// cooperative matrices.
const gemmDepth, gemmThreads = 16, 256

// sides are the blocks' sides the templates render (multiples of 16 on
// float32 cores, of the matrices' sides on cooperative matrices, from 16
// to 64 and from 32 to 128), depths the slices' depths.
var sides, depths = []int{16, 32, 64, 128}, []int{16, 32}

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

// Matrix returns the name of the target's matrix instruction in tilings
// (kir.Tiling.Matrix): "coop-f16" or "coop-bf16" for its cooperative
// matrices, "" without them.
func (t Target) Matrix() string {
	switch {
	case t.Coop.M == 0:
		return ""
	case t.Coop.BFloat16:
		return "coop-bf16"
	}
	return "coop-f16"
}

// Space returns the cost model's tiling of kernel k of p on target t and
// every tiling the templates render it with there (the model's among
// them), on float32 cores and, where t has them, on cooperative
// matrices; an empty space when the kernel does not run as a tiled
// product.
func Space(p *kir.Program, k int, t Target) (model kir.Tiling, space []kir.Tiling) {
	e := &emitter{p: p, k: p.Kernels[k], t: t}
	if !e.tileable() || !e.ok(e.model()) {
		return kir.Tiling{}, nil
	}
	for _, m := range slices.Compact([]string{"", t.Matrix()}) {
		for _, bm := range sides {
			for _, bn := range sides {
				for _, bk := range depths {
					if tl := (kir.Tiling{BM: bm, BN: bn, BK: bk, Matrix: m}); e.ok(tl) {
						space = append(space, tl)
					}
				}
			}
		}
	}
	return e.model(), space
}

// shared declares a Workgroup array of n values of type t.
func (e *emitter) shared(t uint32, n int) uint32 {
	return e.m.variable(scWorkgroup, e.m.global(key("array", t, uint32(n)), opTypeArray, t, e.m.cUint(uint32(n))))
}

// barrier waits for the work-group, making its shared writes visible.
func (e *emitter) barrier() {
	e.m.do(opControlBarrier, e.m.cUint(2), e.m.cUint(2), e.m.cUint(0x108)) // Workgroup, AcquireRelease|WorkgroupMemory
}

// tiling returns the tiling the kernel runs with: the schedule's, else
// the cost model's; nil when it does not run as a tiled product (the
// model's tiling does not fit the device either). A schedule's tiling that
// the templates cannot render on the target is an error naming it.
func (e *emitter) tiling() (*kir.Tiling, error) {
	if t := e.k.Schedule.Tiling; t != nil {
		if _, err := e.check(*t); err != nil {
			return nil, fmt.Errorf("tiling %s: %w", t, err)
		}
		return t, nil
	}
	if !e.tileable() || !e.ok(e.model()) {
		return nil, nil
	}
	m := e.model()
	return &m, nil
}

// model returns the cost model's tiling of the kernel: coopBlock's on a
// target with cooperative matrices, else gemmBlock's in slices of
// gemmDepth.
func (e *emitter) model() kir.Tiling {
	_, rows, cols, _ := e.k.Schedule.GEMM.Extents(e.k)
	if s := e.t.Coop; s.M > 0 {
		bm, bn, bk := coopBlock(s, rows, cols)
		return kir.Tiling{BM: bm, BN: bn, BK: bk, Matrix: e.t.Matrix(), From: "model"}
	}
	bm, bn := gemmBlock(rows, cols)
	return kir.Tiling{BM: bm, BN: bn, BK: gemmDepth, From: "model"}
}

// check returns the work-group size of tiling t for the kernel, or why
// the templates cannot render it on the target.
func (e *emitter) check(t kir.Tiling) (int, error) {
	if !e.tileable() {
		return 0, errors.New("the kernel is not a float32 product that the templates tile on this device")
	}
	b, rows, cols, _ := e.k.Schedule.GEMM.Extents(e.k)
	threads, shared, hi, s := gemmThreads, 4*(t.BM+t.BN)*t.BK, 64, e.t.Coop
	if t.Matrix != "" {
		if t.Matrix != e.t.Matrix() {
			return 0, fmt.Errorf("the device has no matrix instruction %q (it has %q)", t.Matrix, e.t.Matrix())
		}
		if t.BM%s.M != 0 || t.BN%s.N != 0 || t.BK%s.K != 0 || t.BM < 32 || t.BN < 32 {
			return 0, fmt.Errorf("blocks on %d×%d×%d matrices are multiples of them from 32×32", s.M, s.N, s.K)
		}
		c := coopLayout(s, e.t.SubgroupSize, t.BM, t.BN, t.BK)
		threads, shared, hi = c.threads, c.sharedBytes(s), 128
	}
	fits := func(i, n int) bool { return n <= e.t.MaxGroupCount[i] || e.t.MaxGroupCount[i] <= 0 && n <= 65535 }
	switch {
	case t.Parts > 1:
		return 0, errors.New("the templates do not split sums into parts")
	case !slices.Contains(sides, t.BM) || !slices.Contains(sides, t.BN) || t.BM > hi || t.BN > hi || !slices.Contains(depths, t.BK):
		return 0, fmt.Errorf("no such block for the template (sides of 16 to %d, depths of %v)", hi, depths)
	case threads > e.t.MaxWorkGroupSize:
		return 0, fmt.Errorf("work-groups of %d invocations, beyond the device's %d", threads, e.t.MaxWorkGroupSize)
	case shared > e.t.SharedBytes:
		return 0, fmt.Errorf("%d bytes of shared memory, beyond the device's %d", shared, e.t.SharedBytes)
	case !fits(2, b) || !fits(1, (rows+t.BM-1)/t.BM) || !fits(0, (cols+t.BN-1)/t.BN):
		return 0, errors.New("more work-groups than the device dispatches")
	}
	return threads, nil
}

// ok reports whether the templates render the kernel with tiling t.
func (e *emitter) ok(t kir.Tiling) bool { _, err := e.check(t); return err == nil }

// tileable reports whether the kernel can run as a tiled product: a
// "gemm" schedule whose view sorts every loop into one group, over a
// float32 sum of the product of the view's two float32 loads, on a device
// with the shared memory the templates need. The view says the rest
// (validated by kir): A reads no N loop and B no M loop, which Where
// conditions belong to each, and which loads may leave their buffers.
func (e *emitter) tileable() bool {
	k, v := e.k, e.k.Schedule.GEMM
	if k.Schedule.Strategy != "gemm" || v == nil || k.Agg != tile.Sum || e.t.SharedBytes < 8192 ||
		k.Body.Op != kir.Apply || k.Body.Fn != tile.Mul || len(k.Body.Args) != 2 ||
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
	return true
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

// gemm emits the tiled product of view v with tiling t: the float32
// template, or the cooperative-matrix one.
func (e *emitter) gemm(v *kir.GEMMView, t *kir.Tiling) {
	if t.Matrix != "" {
		e.coopGEMM(v, t)
		return
	}
	m := e.m
	i32, f32, _ := m.tInt(32, true), m.tFloat(32), m.tBool()
	bm, bn, bk := t.BM, t.BN, t.BK
	tm, tn := bm/16, bn/16
	f := e.newFrame(v, bm, bn, 16)
	tx, ty := f.lo, f.hi
	as, bs := e.shared(f32, bm*bk), e.shared(f32, bn*bk)
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
	pa := f.plan(false, as, f32, bm, bk, gemmThreads, depthMajor(bm))
	pb := f.plan(true, bs, f32, bn, bk, gemmThreads, depthMajor(bn))
	m.loop(e.ci(0), e.ci(f.depth), e.ci(bk), func(k0 uint32) {
		pa.stage(k0, 0, nil)
		pb.stage(k0, 0, nil)
		e.barrier()
		m.loop(e.ci(0), e.ci(bk), e.ci(1), func(kk uint32) {
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
