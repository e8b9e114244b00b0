package spirv

import (
	"github.com/tartanml/tartan/kir"
	"github.com/tartanml/tartan/tile"
)

// The tiled matrix product: a work-group of gemmThreads invocations
// computes a gemmTile × gemmTile block of C, each invocation a 4 × 4
// sub-block (rows ty+16i, columns tx+16j), with K-slices of gemmDepth of
// A and B staged in shared memory.
const gemmTile, gemmDepth, gemmThreads = 64, 16, 256

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
// of the product of the view's two loads with no Where conditions, each
// load affine, reading no loop of the other operand's group (A none of N,
// B none of M) and in range wherever it may not be filled.
func (e *emitter) tiled() bool {
	k, v := e.k, e.k.Schedule.GEMM
	if k.Schedule.Strategy != "gemm" || v == nil || k.Agg != tile.Sum || len(k.Where) > 0 || e.t.SharedBytes < 8192 ||
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
	ranges := k.VarRanges()
	for i, x := range []*kir.Expr{v.A, v.B} {
		if x.Op != kir.Load || kindOf(x.DType) != kF32 || kindOf(e.p.Buffers[x.Buf].DType) != kF32 {
			return false
		}
		for d, ix := range x.Index {
			coef, _, ok := kir.LinearForm(ix, len(group))
			lo, hi, in := kir.Bounds(ix, ranges)
			if !ok || x.OOB != kir.Fill && !(in && lo >= 0 && hi < e.p.Buffers[x.Buf].Shape[d]) {
				return false
			}
			for y, c := range coef {
				if c != 0 && group[y] == 3-i {
					return false
				}
			}
		}
	}
	b, rows, cols, _ := v.Extents(k)
	fits := func(i, n int) bool { return n <= e.t.MaxGroupCount[i] || e.t.MaxGroupCount[i] <= 0 && n <= 65535 }
	return fits(2, b) && fits(1, (rows+gemmTile-1)/gemmTile) && fits(0, (cols+gemmTile-1)/gemmTile)
}

// gemm emits the tiled product of view v for work-group (column block,
// row block, batch). Out-of-range rows, columns and depths of a block
// stage zeros; each output point then gets the kernel's epilogue.
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
	wg := func(c uint32) uint32 { return e.builtin(builtInWorkgroupID, c) }
	lid := e.builtin(builtInLocalInvocationID, 0)
	tx, ty := m.op(opSRem, i32, lid, e.ci(16)), m.op(opSDiv, i32, lid, e.ci(16))
	col0, row0 := m.op(opIMul, i32, wg(0), e.ci(gemmTile)), m.op(opIMul, i32, wg(1), e.ci(gemmTile))
	vars := make([]uint32, k.NumVars())
	for x := range vars {
		vars[x] = e.ci(ranges[x].Lo)
	}
	set(vars, v.Batch, wg(2))
	as, bs := e.shared(f32, gemmTile*gemmDepth), e.shared(f32, gemmTile*gemmDepth)
	at := func(arr, i uint32) uint32 { return m.op(opAccessChain, m.tPtr(scWorkgroup, f32), arr, i) }
	var acc [16]uint32
	for i := range acc {
		acc[i] = m.local(f32)
		m.do(opStore, acc[i], e.num(kF32, 0))
	}
	lt := func(a uint32, n int) uint32 { return m.op(opSLessThan, bl, a, e.ci(n)) }
	add := func(a, b uint32) uint32 { return m.op(opIAdd, i32, a, b) }
	// stage copies the block's K-slice from depth k0 of operand x (rows
	// along group g of extent n from r0) to shared array sh[depth][row],
	// in the order that reads memory contiguously along x's innermost
	// depth loop if it moves by one element, else along its rows.
	stage := func(sh uint32, x *kir.Expr, g []int, r0, k0 uint32, ext int) {
		kFast := false
		if len(v.K) > 0 {
			coef, _, ok := kir.LinearForm(kir.Offset(x.Index, e.p.Buffers[x.Buf].Shape, ranges), len(vars))
			kFast = ok && coef[v.K[len(v.K)-1]] == 1
		}
		for q := range gemmTile * gemmDepth / gemmThreads {
			t := add(lid, e.ci(q*gemmThreads))
			r, d := m.op(opSRem, i32, t, e.ci(gemmTile)), m.op(opSDiv, i32, t, e.ci(gemmTile))
			if kFast {
				r, d = m.op(opSDiv, i32, t, e.ci(gemmDepth)), m.op(opSRem, i32, t, e.ci(gemmDepth))
			}
			row, kk := add(r0, r), add(k0, d)
			in := m.op(opLogicalAnd, bl, lt(row, ext), lt(kk, depth))
			vs := append([]uint32(nil), vars...)
			set(vs, g, m.op(opSelect, i32, in, row, e.ci(0)))
			set(vs, v.K, m.op(opSelect, i32, in, kk, e.ci(0)))
			val := m.op(opSelect, f32, in, e.scope(vs, ranges).load(x), e.num(kF32, 0))
			m.do(opStore, at(sh, add(m.op(opIMul, i32, d, e.ci(gemmTile)), r)), val)
		}
	}
	m.loop(e.ci(0), e.ci(depth), e.ci(gemmDepth), func(k0 uint32) {
		stage(as, v.A, v.M, row0, k0, rows)
		stage(bs, v.B, v.N, col0, k0, cols)
		e.barrier()
		m.loop(e.ci(0), e.ci(gemmDepth), e.ci(1), func(kk uint32) {
			base := m.op(opIMul, i32, kk, e.ci(gemmTile))
			var a, b [4]uint32
			for i := range 4 {
				a[i] = m.op(opLoad, f32, at(as, add(base, add(ty, e.ci(16*i)))))
				b[i] = m.op(opLoad, f32, at(bs, add(base, add(tx, e.ci(16*i)))))
			}
			for i := range 16 {
				p := m.op(opFMul, f32, a[i/4], b[i%4])
				m.do(opStore, acc[i], m.op(opFAdd, f32, m.op(opLoad, f32, acc[i]), p))
			}
		})
		e.barrier()
	})
	nout := len(k.Shape)
	for i := range 16 {
		row, col := add(row0, add(ty, e.ci(16*(i/4)))), add(col0, add(tx, e.ci(16*(i%4))))
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
