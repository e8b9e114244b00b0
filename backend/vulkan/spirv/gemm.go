package spirv

import (
	"github.com/tartanml/tartan/kir"
	"github.com/tartanml/tartan/tile"
)

// The tiled matrix product: a work-group of gemmThreads invocations, a
// 16 × 16 grid, computes a block of C of rows × columns given by
// gemmBlock, each invocation (block/16) × (block/16) of it (rows ty+16i,
// columns tx+16j), with K-slices of gemmDepth of A and B staged in shared
// memory.
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
	bm, bn := gemmBlock(rows, cols)
	fits := func(i, n int) bool { return n <= e.t.MaxGroupCount[i] || e.t.MaxGroupCount[i] <= 0 && n <= 65535 }
	return fits(2, b) && fits(1, (rows+bm-1)/bm) && fits(0, (cols+bn-1)/bn)
}

// gemm emits the tiled product of view v for work-group (column block,
// row block, batch). Out-of-range rows, columns and depths of a block
// stage zeros, and so does an operand where one of its Where conditions
// fails or its guarded load leaves its buffer (see kir.GEMMView); each
// output point then gets the kernel's epilogue.
func (e *emitter) gemm(v *kir.GEMMView) {
	m, k := e.m, e.k
	i32, f32, bl := m.tInt(32, true), m.tFloat(32), m.tBool()
	ranges := k.VarRanges()
	pick := func(vs []int) []kir.Range {
		rs := make([]kir.Range, len(vs))
		for i, x := range vs {
			rs[i] = ranges[x]
		}
		return rs
	}
	set := func(vars []uint32, vs []int, x uint32) {
		for i, val := range e.split(x, pick(vs)) {
			vars[vs[i]] = val
		}
	}
	_, rows, cols, depth := v.Extents(k)
	bm, bn := gemmBlock(rows, cols)
	tm, tn := bm/16, bn/16
	wg := func(c uint32) uint32 { return e.builtin(builtInWorkgroupID, c) }
	lid := e.builtin(builtInLocalInvocationID, 0)
	tx, ty := m.op(opSRem, i32, lid, e.ci(16)), m.op(opSDiv, i32, lid, e.ci(16))
	col0, row0 := m.op(opIMul, i32, wg(0), e.ci(bn)), m.op(opIMul, i32, wg(1), e.ci(bm))
	vars := make([]uint32, k.NumVars())
	for x := range vars {
		vars[x] = e.ci(ranges[x].Lo)
	}
	set(vars, v.Batch, wg(2))
	as, bs := e.shared(f32, bm*gemmDepth), e.shared(f32, bn*gemmDepth)
	at := func(arr, i uint32) uint32 { return m.op(opAccessChain, m.tPtr(scWorkgroup, f32), arr, i) }
	acc := make([]uint32, tm*tn)
	for i := range acc {
		acc[i] = m.local(f32)
		m.do(opStore, acc[i], e.num(kF32, 0))
	}
	lt := func(a uint32, n int) uint32 { return m.op(opSLessThan, bl, a, e.ci(n)) }
	add := func(a, b uint32) uint32 { return m.op(opIAdd, i32, a, b) }
	// stage copies the block's K-slice from depth k0 of operand x with
	// conditions conds (rows along group g of extent n from r0, ext of
	// them in a block) to shared array sh[depth][row], in the order that
	// reads memory contiguously along x's innermost depth loop if it
	// moves by one element, else along its rows.
	stage := func(sh uint32, x *kir.Expr, conds []kir.Cond, g []int, r0, k0 uint32, n, ext int) {
		kFast := false
		if len(v.K) > 0 {
			coef, _, ok := kir.LinearForm(kir.Offset(x.Index, e.p.Buffers[x.Buf].Shape, ranges), len(vars))
			kFast = ok && coef[v.K[len(v.K)-1]] == 1
		}
		for q := range ext * gemmDepth / gemmThreads {
			t := add(lid, e.ci(q*gemmThreads))
			r, d := m.op(opSRem, i32, t, e.ci(ext)), m.op(opSDiv, i32, t, e.ci(ext))
			if kFast {
				r, d = m.op(opSDiv, i32, t, e.ci(gemmDepth)), m.op(opSRem, i32, t, e.ci(gemmDepth))
			}
			row, kk := add(r0, r), add(k0, d)
			in := m.op(opLogicalAnd, bl, lt(row, n), lt(kk, depth))
			vs := append([]uint32(nil), vars...)
			set(vs, g, m.op(opSelect, i32, in, row, e.ci(0)))
			set(vs, v.K, m.op(opSelect, i32, in, kk, e.ci(0)))
			// A guarded load yields 0 (its Fill value or a Skip load's)
			// out of range, reading nothing outside its buffer.
			sc := e.scope(vs, ranges)
			val := sc.load(x)
			in = e.and(append([]uint32{in}, sc.conds(conds)...))
			m.do(opStore, at(sh, add(m.op(opIMul, i32, d, e.ci(ext)), r)), m.op(opSelect, f32, in, val, e.num(kF32, 0)))
		}
	}
	m.loop(e.ci(0), e.ci(depth), e.ci(gemmDepth), func(k0 uint32) {
		stage(as, v.A, v.Conds(k, false), v.M, row0, k0, rows, bm)
		stage(bs, v.B, v.Conds(k, true), v.N, col0, k0, cols, bn)
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
	nout := len(k.Shape)
	for i := range acc {
		row, col := add(row0, add(ty, e.ci(16*(i/tn)))), add(col0, add(tx, e.ci(16*(i%tn))))
		m.ifThen(m.op(opLogicalAnd, bl, lt(row, rows), lt(col, cols)), func() {
			vs := append([]uint32(nil), vars...)
			set(vs, v.M, row)
			set(vs, v.N, col)
			lin := e.ci(0)
			for d := range nout {
				lin = add(m.op(opIMul, i32, lin, e.ci(k.Shape[d])), vs[d])
			}
			e.finish(vs, lin, m.op(opLoad, f32, acc[i]))
		})
	}
}
