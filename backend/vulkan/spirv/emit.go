package spirv

import (
	"fmt"
	"math"
	"math/bits"

	"github.com/tartanml/tartan/kir"
	"github.com/tartanml/tartan/tile"
)

// kind is the SPIR-V type a value is computed in: f16 and bf16 values are
// computed (and held) as float32, like the reference executor computes
// them, and booleans as OpTypeBool.
type kind uint8

const (
	kBool kind = iota
	kI32
	kI64
	kF32
	kF64
)

func kindOf(dt tile.DType) kind {
	switch dt {
	case tile.Bool:
		return kBool
	case tile.Int32:
		return kI32
	case tile.Int64:
		return kI64
	case tile.Float64:
		return kF64
	}
	return kF32
}

func (k kind) isFloat() bool { return k >= kF32 }

// binding is one storage buffer of the kernel: its variables (one per
// descriptor, of 2^shift elements each where there are several), the
// element type of its storage and the SSA id of its base element offset.
type binding struct {
	vs         []uint32
	elem, base uint32
	shift      int
}

type emitter struct {
	p    *kir.Program
	k    *kir.Kernel
	t    Target
	m    *module
	bind map[int]*binding
	err  error
}

// Emit returns kernel k of p as a compute shader for a device with target
// t, with the semantics of kir.Interpret except that aggregations run in
// the kernel's own dtype rather than in float64, and that GLSL.std.450 has
// no double-precision transcendental functions: a float64 exp or log (and
// so log1p, sigmoid and pow) reduces its argument in float64 around a
// float32 core, and a float64 tanh or erf is computed in float32. Without
// 64-bit integers, floats beyond ±2³¹ convert to int32 by saturating.
//
// An invocation computes one output point, or one column of a "scatter"
// (kir.ScatterView). A "gemm" schedule runs as a tiled product with the
// schedule's tiling or the cost model's (see tiling; a tiling the
// templates cannot render is an error), and a long reduction into few
// points as a work-group per point (see lanes). Each kir buffer has a
// binding of its own, even when two share a slot (those are decorated
// Aliased), or several where its storage exceeds t.StorageRange (see
// Kernel). Index arithmetic is 32-bit: buffers, storage or loop spaces of
// 2³¹ elements or more are refused, as are 64-bit types the target lacks.
// A malformed kernel (see kir.Program.Validate) gives an error, never a
// panic or invalid module.
func Emit(p *kir.Program, k int, t Target) (out *Kernel, err error) {
	if p == nil || k < 0 || k >= len(p.Kernels) || p.Kernels[k] == nil {
		return nil, fmt.Errorf("spirv: no kernel %d in the program", k)
	}
	e := &emitter{p: p, k: p.Kernels[k], t: t, m: newModule(), bind: map[int]*binding{}}
	defer func() {
		if r := recover(); r != nil {
			out, err = nil, fmt.Errorf("spirv: program %q: kernel %d (%s) is malformed (see kir.Program.Validate): %v", p.Name, k, e.k.Name, r)
		}
	}()
	if out, err = e.kernel(); err != nil {
		return nil, fmt.Errorf("spirv: program %q: kernel %d (%s): %w", p.Name, k, e.k.Name, err)
	}
	return out, nil
}

func (e *emitter) fail(format string, args ...any) {
	if e.err == nil {
		e.err = fmt.Errorf(format, args...)
	}
}

// ci returns the int32 constant v, failing when v does not fit.
func (e *emitter) ci(v int) uint32 {
	if v < math.MinInt32 || v > math.MaxInt32 {
		e.fail("the constant %d needs 64-bit index arithmetic", v)
		return e.m.cInt(0)
	}
	return e.m.cInt(int32(v))
}

func (e *emitter) typ(k kind) uint32 {
	switch k {
	case kBool:
		return e.m.tBool()
	case kI32:
		return e.m.tInt(32, true)
	case kI64:
		return e.m.tInt(64, true)
	case kF64:
		return e.m.tFloat(64)
	}
	return e.m.tFloat(32)
}

// num returns the constant v of kind k (integers truncated toward zero).
func (e *emitter) num(k kind, v float64) uint32 {
	switch k {
	case kBool:
		return e.m.cBool(v != 0)
	case kI32:
		return e.m.cInt(int32(int64(v)))
	case kI64:
		return e.m.cLong(int64(v))
	case kF64:
		return e.m.cDouble(v)
	}
	return e.m.cFloat(float32(v))
}

// storage returns the element type and stride of a buffer of dtype dt (see
// StorageBytes): booleans are int32 0 or 1.
func (e *emitter) storage(dt tile.DType) (uint32, uint32) {
	k := kindOf(dt)
	if k == kBool {
		k = kI32
	}
	return e.typ(k), uint32(StorageBytes(dt))
}

const maxElems = math.MaxInt32 // the exclusive bound of 32-bit element offsets

// kernel emits the whole module.
func (e *emitter) kernel() (*Kernel, error) {
	p, k, m := e.p, e.k, e.m
	ids := k.Buffers()
	for _, id := range ids {
		b := p.Buffers[id]
		if b.View != nil {
			b = p.Buffers[b.View.Of]
		}
		if b.Size() >= maxElems {
			return nil, fmt.Errorf("the storage of b%d has %d elements, beyond 32-bit offsets", id, b.Size())
		}
	}
	total := k.Shape.Size()
	if total >= maxElems || total != p.Buffers[k.Out].Size() {
		return nil, fmt.Errorf("loop space %v does not fit output b%d%v in 32-bit offsets", k.Shape, k.Out, p.Buffers[k.Out].Shape)
	}
	res := &Kernel{Name: k.Name, Bindings: ids, Writes: make([]bool, len(ids)), Chunks: make([]int, len(ids))}
	res.Writes[0] = true
	sv := k.Schedule.Scatter
	scatter := k.Schedule.Strategy == "scatter" && sv != nil && scatterable(p, k, sv)
	points, lanes := total, 1
	tl, err := e.tiling()
	if err != nil {
		return nil, err
	}
	switch {
	case scatter:
		points /= k.Shape[sv.Axis]
		err = e.grid(res, points, 0)
	case tl != nil:
		b, rows, cols, _ := k.Schedule.GEMM.Extents(k)
		threads, _ := e.check(*tl)
		res.LocalSize, res.Groups = [3]int{threads, 1, 1}, [3]int{(cols + tl.BN - 1) / tl.BN, (rows + tl.BM - 1) / tl.BM, b}
		res.Tiling = tl
		if total == 0 {
			res.LocalSize, res.Groups = [3]int{}, [3]int{}
		}
	default:
		lanes = e.lanes()
		err = e.grid(res, points, lanes)
	}
	if err != nil {
		return nil, err
	}

	// Bindings: storage buffers, with one push-constant word each.
	slots := map[int]int{}
	for _, id := range ids {
		slots[p.Buffers[id].Slot]++
	}
	u32, i32 := m.tInt(32, false), m.tInt(32, true)
	members := make([]uint32, len(ids))
	for i := range members {
		members[i] = u32
	}
	pcT := m.tStruct("push", members...)
	m.decorate(pcT, decBlock)
	for i := range ids {
		inst(&m.annots, opMemberDecorate, pcT, uint32(i), decOffset, uint32(4*i))
	}
	pc := m.variable(scPushConstant, pcT)
	m.name(pc, "offsets")
	extra := len(ids)
	for i, id := range ids {
		b := p.Buffers[id]
		elem, stride := e.storage(b.DType)
		// A split binding's first descriptor is binding i, the others
		// follow the last first one.
		bd, n := &binding{elem: elem, shift: bits.TrailingZeros64(e.t.ChunkBytes() / uint64(stride))}, e.t.Chunks(p, id)
		for c := range n {
			v, at, name := m.variable(scStorageBuffer, m.tBlock(elem, stride)), i, fmt.Sprintf("b%d", id)
			if c > 0 {
				at, name, extra = extra, fmt.Sprintf("b%d_%d", id, c), extra+1
			}
			m.name(v, name)
			m.decorate(v, decDescriptorSet, 0)
			m.decorate(v, decBinding, uint32(at))
			if i > 0 {
				m.decorate(v, decNonWritable)
			}
			if slots[b.Slot] > 1 {
				m.decorate(v, decAliased)
			}
			bd.vs = append(bd.vs, v)
		}
		res.Chunks[i], e.bind[id] = n, bd
	}

	// The entry block loads every base offset, so that they dominate all
	// uses, and finds the invocation's (or work-group's) linear index.
	for i, id := range ids {
		ptr := m.op(opAccessChain, m.tPtr(scPushConstant, u32), pc, e.ci(i))
		e.bind[id].base = m.op(opBitcast, i32, m.op(opLoad, u32, ptr))
	}
	if tl != nil {
		e.gemm(k.Schedule.GEMM, tl)
	} else {
		id, per := m.op(opLoad, m.tVec(u32, 3), m.builtin(builtInGlobalInvocationID)), res.LocalSize[0]
		if lanes > 1 {
			id, per = m.op(opLoad, m.tVec(u32, 3), m.builtin(builtInWorkgroupID)), 1
		}
		lin := m.op(opCompositeExtr, u32, id, 0)
		if res.Groups[1] > 1 {
			y := m.op(opCompositeExtr, u32, id, 1)
			lin = m.op(opIAdd, u32, lin, m.op(opIMul, u32, y, m.cUint(uint32(res.Groups[0]*per))))
		}
		in := m.op(opULessThan, m.tBool(), lin, m.cUint(uint32(points)))
		lin = m.op(opBitcast, i32, lin)
		m.ifThen(in, func() {
			if scatter {
				e.scatter(lin, sv)
			} else {
				e.loops(lin, lanes)
			}
		})
	}
	m.do(opReturn)
	if e.err != nil {
		return nil, e.err
	}
	if m.caps[capInt64] && !e.t.Int64 {
		return nil, fmt.Errorf("needs 64-bit integers (shaderInt64), which the device lacks")
	}
	if m.caps[capFloat64] && !e.t.Float64 {
		return nil, fmt.Errorf("needs 64-bit floats (shaderFloat64), which the device lacks")
	}
	// NaNs and infinities must survive the driver's compiler: without this
	// mode a driver may assume there are none and fold select(x <= 0, 0, x)
	// into a maximum that drops them (NVIDIA's does).
	if e.t.NaNPreserve32 {
		m.preserve = append(m.preserve, 32)
	}
	if m.caps[capFloat64] && e.t.NaNPreserve64 {
		m.preserve = append(m.preserve, 64)
	}
	res.Words = m.words(res.LocalSize)
	return res, nil
}

// builtin returns component c of a built-in uvec3 as an int32.
func (e *emitter) builtin(b uint32, c uint32) uint32 {
	m := e.m
	v := m.op(opLoad, m.tVec(m.tInt(32, false), 3), m.builtin(b))
	return m.op(opBitcast, m.tInt(32, true), m.op(opCompositeExtr, m.tInt(32, false), v, c))
}

// grid sets the work-group size and counts for the given number of points:
// an invocation each (lanes 0 or 1), or a work-group of lanes invocations
// each. The grid is 1-D, or 2-D rows of MaxGroupCount[0] groups when the
// points need more groups than that.
func (e *emitter) grid(res *Kernel, points, lanes int) error {
	ls, n := max(64, e.t.SubgroupSize), points
	if e.t.MaxWorkGroupSize > 0 && ls > e.t.MaxWorkGroupSize {
		ls = e.t.MaxWorkGroupSize
	}
	if lanes > 1 {
		ls = lanes
	} else {
		n = (points + ls - 1) / ls
	}
	maxX, maxY := e.t.MaxGroupCount[0], e.t.MaxGroupCount[1]
	if maxX <= 0 {
		maxX = 65535 // the least every Vulkan device offers
	}
	if maxY <= 0 {
		maxY = 65535
	}
	res.LocalSize, res.Groups = [3]int{ls, 1, 1}, [3]int{n, 1, 1}
	if points == 0 {
		res.Groups = [3]int{0, 0, 0}
	}
	if n > maxX {
		res.Groups[0], res.Groups[1] = maxX, (n+maxX-1)/maxX
		if res.Groups[1] > maxY {
			return fmt.Errorf("%d invocations need more than %d×%d work-groups", points*max(lanes, 1), maxX, maxY)
		}
	}
	return nil
}

// split returns the values of the loop variables of the given ranges at
// row-major position x (an int32 id) of their box.
func (e *emitter) split(x uint32, rs []kir.Range) []uint32 {
	m, i32 := e.m, e.m.tInt(32, true)
	out := make([]uint32, len(rs))
	for d := len(rs) - 1; d >= 0; d-- {
		ext, v := rs[d].Hi-rs[d].Lo+1, x
		switch {
		case ext <= 1:
			out[d] = e.ci(rs[d].Lo)
			continue
		case d > 0:
			v = m.op(opSRem, i32, x, e.ci(ext))
			x = m.op(opSDiv, i32, x, e.ci(ext))
		}
		if out[d] = v; rs[d].Lo != 0 {
			out[d] = m.op(opIAdd, i32, v, e.ci(rs[d].Lo))
		}
	}
	return out
}

// lanes returns the invocations that share one output point's reduction:
// 64 for a reduction of many points into few outputs (the "reduce"
// strategy, or a loop nest of at least 256 reduction points and at most
// 2¹⁵ outputs) on a device with shared memory, else 1.
func (e *emitter) lanes() int {
	k, red := e.k, 1
	for _, l := range k.Reduce {
		red *= max(l.Hi-l.Lo+1, 0)
	}
	switch {
	case len(k.Reduce) == 0 || k.Agg == tile.Assign || kindOf(k.Body.DType) == kBool || e.t.SharedBytes < 8192 || e.t.MaxWorkGroupSize < 64:
		return 1
	case k.Schedule.Strategy == "reduce" && red >= 64 || red >= 256 && k.Shape.Size() <= 1<<15:
		return 64
	}
	return 1
}

// loops emits the generic loop nest for the output point whose row-major
// position is lin (an int32 id). With lanes > 1 a work-group of that many
// invocations computes the point: invocation i takes the reduction points
// i, i+lanes, … in order, and the partial results are combined in shared
// memory in a fixed tree, so that every run sums in the same order.
func (e *emitter) loops(lin uint32, lanes int) {
	m, k := e.m, e.k
	nout := len(k.Shape)
	ranges := k.VarRanges()
	vars := append(e.split(lin, ranges[:nout]), make([]uint32, len(k.Reduce))...)
	bk := kindOf(k.Body.DType)
	bt, bl := e.typ(bk), m.tBool()
	if len(k.Reduce) == 0 {
		contrib, v := e.scope(vars, ranges).point()
		if contrib != 0 {
			v = m.op(opSelect, bt, contrib, v, e.num(bk, 0))
		}
		e.finish(vars, lin, v)
		return
	}
	accVar, firstVar := m.local(bt), m.local(bl)
	m.do(opStore, accVar, e.num(bk, 0))
	m.do(opStore, firstVar, m.cBool(true))
	step := func() {
		contrib, v := e.scope(vars, ranges).point()
		a := m.op(opLoad, bt, accVar)
		first := m.op(opLoad, bl, firstVar)
		nv := m.op(opSelect, bt, first, v, e.agg(k.Agg, bk, a, v))
		if contrib != 0 {
			nv = m.op(opSelect, bt, contrib, nv, a)
			first = m.op(opLogicalAnd, bl, first, m.op(opLogicalNot, bl, contrib))
		} else {
			first = m.cBool(false)
		}
		m.do(opStore, accVar, nv)
		m.do(opStore, firstVar, first)
	}
	for _, l := range k.Reduce {
		if l.Hi >= math.MaxInt32 {
			e.fail("reduction loop %s's range [%d, %d] needs 64-bit indices", l.Name, l.Lo, l.Hi)
			return
		}
	}
	if lanes == 1 {
		var nest func(j int)
		nest = func(j int) {
			if j == len(k.Reduce) {
				step()
				return
			}
			m.loop(e.ci(k.Reduce[j].Lo), e.ci(k.Reduce[j].Hi+1), e.ci(1), func(v uint32) {
				vars[nout+j] = v
				nest(j + 1)
			})
		}
		nest(0)
		e.finish(vars, lin, m.op(opLoad, bt, accVar))
		return
	}
	red := 1
	for _, l := range k.Reduce {
		red *= l.Hi - l.Lo + 1
	}
	if red >= maxElems {
		e.fail("the reduction's %d points need 64-bit indices", red)
		return
	}
	lane := e.builtin(builtInLocalInvocationID, 0)
	m.loop(lane, e.ci(red), e.ci(lanes), func(r uint32) {
		copy(vars[nout:], e.split(r, ranges[nout:]))
		step()
	})
	accs, firsts := e.shared(bt, lanes), e.shared(bl, lanes)
	at := func(arr, t, i uint32) uint32 { return m.op(opAccessChain, m.tPtr(scWorkgroup, t), arr, i) }
	m.do(opStore, at(accs, bt, lane), m.op(opLoad, bt, accVar))
	m.do(opStore, at(firsts, bl, lane), m.op(opLoad, bl, firstVar))
	e.barrier()
	i32 := m.tInt(32, true)
	for s := lanes / 2; s >= 1; s /= 2 {
		m.ifThen(m.op(opSLessThan, bl, lane, e.ci(s)), func() {
			o := m.op(opIAdd, i32, lane, e.ci(s))
			a, b := m.op(opLoad, bt, at(accs, bt, lane)), m.op(opLoad, bt, at(accs, bt, o))
			fa, fb := m.op(opLoad, bl, at(firsts, bl, lane)), m.op(opLoad, bl, at(firsts, bl, o))
			v := m.op(opSelect, bt, fa, b, m.op(opSelect, bt, fb, a, e.agg(k.Agg, bk, a, b)))
			m.do(opStore, at(accs, bt, lane), v)
			m.do(opStore, at(firsts, bl, lane), m.op(opLogicalAnd, bl, fa, fb))
		})
		e.barrier()
	}
	m.ifThen(m.op(opIEqual, bl, lane, e.ci(0)), func() { e.finish(vars, lin, m.op(opLoad, bt, at(accs, bt, lane))) })
}

// finish applies the epilogue to the aggregated value acc of the output
// point at vars and stores the result at position lin.
func (e *emitter) finish(vars []uint32, lin, acc uint32) {
	k := e.k
	nout := len(k.Shape)
	res, rdt := acc, k.Body.DType
	if k.Epilogue != nil {
		s := e.scope(vars[:nout], k.VarRanges()[:nout])
		s.acc, s.accDT = acc, k.Body.DType
		res, rdt = s.expr(k.Epilogue), k.Epilogue.DType
	}
	e.store(k.Out, lin, e.convert(rdt, e.p.Buffers[k.Out].DType, res))
}

// point evaluates the Where conditions and the Body at the scope's point:
// contrib is the bool id of "the point contributes" (0: always).
func (s *scope) point() (contrib, v uint32) {
	e := s.e
	conds := s.conds(e.k.Where)
	v = s.expr(e.k.Body)
	return e.and(append(conds, s.skips...)), v
}

// conds returns the bool ids whose conjunction says that every condition
// of cs holds at the scope's point.
func (s *scope) conds(cs []kir.Cond) []uint32 {
	e, m := s.e, s.e.m
	var conds []uint32
	for _, c := range cs {
		lo, hi, ok := kir.Bounds(c.X, s.ranges)
		x := s.ix(c.X)
		if !ok || lo < 0 {
			conds = append(conds, m.op(opSGreaterEqual, m.tBool(), x, e.ci(0)))
		}
		if !ok || hi >= c.Bound {
			conds = append(conds, m.op(opSLessThan, m.tBool(), x, e.ci(c.Bound)))
		}
		if ok && (hi < 0 || lo >= c.Bound) {
			conds = append(conds, m.cBool(false))
		}
	}
	return conds
}

// and returns the conjunction of bool ids (0 for none).
func (e *emitter) and(conds []uint32) uint32 {
	var r uint32
	for _, c := range conds {
		if r == 0 {
			r = c
		} else {
			r = e.m.op(opLogicalAnd, e.m.tBool(), r, c)
		}
	}
	return r
}

// agg combines the accumulator a with v by aggregation g in kind k: for
// booleans a sum or maximum is an or, a product or minimum an and.
func (e *emitter) agg(g tile.Agg, k kind, a, v uint32) uint32 {
	m, t := e.m, e.typ(k)
	switch {
	case g == tile.Assign:
		return v
	case k == kBool && (g == tile.Sum || g == tile.Max):
		return m.op(opLogicalOr, t, a, v)
	case k == kBool:
		return m.op(opLogicalAnd, t, a, v)
	case g == tile.Max || g == tile.Min:
		return e.minMax(g == tile.Max, k, a, v)
	}
	ops := [2][2]uint32{{opIAdd, opIMul}, {opFAdd, opFMul}} // [float][product]
	return m.op(ops[b2i(k.isFloat())][b2i(g == tile.Prod)], t, a, v)
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// element returns the index of element off (an int32 id, relative to the
// buffer's base) of buffer id in its slot.
func (e *emitter) element(id int, off uint32) uint32 {
	return e.m.op(opIAdd, e.m.tInt(32, true), e.bind[id].base, off)
}

// access calls f with a pointer to element idx (an int32 id ≥ 0, from the
// start of the slot) of buffer id and returns what f returns, a value of
// type t (0: none). A split binding's element is element idx mod 2^shift
// of descriptor idx >> shift, reached in the case of a switch: bindings
// are not indexed, which would need non-uniform indexing.
func (e *emitter) access(id int, idx uint32, t uint32, f func(ptr uint32) uint32) uint32 {
	m, b := e.m, e.bind[id]
	pt := m.tPtr(scStorageBuffer, b.elem)
	if len(b.vs) == 1 {
		return f(m.op(opAccessChain, pt, b.vs[0], e.ci(0), idx))
	}
	i32 := m.tInt(32, true)
	c := m.op(opShiftRightArith, i32, idx, e.ci(b.shift))
	r := m.op(opBitwiseAnd, i32, idx, e.ci(1<<b.shift-1))
	return m.cases(c, len(b.vs), t, func(j int) uint32 { return f(m.op(opAccessChain, pt, b.vs[j], e.ci(0), r)) })
}

// loadAt loads element idx of buffer id's slot as its storage type.
func (e *emitter) loadAt(id int, idx uint32) uint32 {
	elem := e.bind[id].elem
	return e.access(id, idx, elem, func(ptr uint32) uint32 { return e.m.op(opLoad, elem, ptr) })
}

// store writes v, a value of buffer id's dtype, to element off.
func (e *emitter) store(id int, off, v uint32) {
	if e.p.Buffers[id].DType == tile.Bool {
		v = e.m.op(opSelect, e.m.tInt(32, true), v, e.ci(1), e.ci(0))
	}
	e.access(id, e.element(id, off), 0, func(ptr uint32) uint32 { e.m.do(opStore, ptr, v); return 0 })
}

// read loads element off of buffer id as a value of its dtype.
func (e *emitter) read(id int, off uint32) uint32 {
	v := e.loadAt(id, e.element(id, off))
	if e.p.Buffers[id].DType == tile.Bool {
		v = e.m.op(opINotEqual, e.m.tBool(), v, e.ci(0))
	}
	return v
}

// scatterable reports whether a scatter view is run as a loop over the
// indices: for the dtypes whose sums the loop nest does not round.
func scatterable(p *kir.Program, k *kir.Kernel, v *kir.ScatterView) bool {
	if v.Axis < 0 || v.Axis >= len(k.Shape) || k.Shape[v.Axis] == 0 || v.Indices < 0 || v.Indices >= len(p.Buffers) {
		return false
	}
	switch p.Buffers[k.Out].DType {
	case tile.Float32, tile.Float64, tile.Int32, tile.Int64:
		return true
	}
	return false
}

// scatter emits the indexed accumulation of kir.ScatterView for column lin
// of the output viewed as [outer][rows][inner]: the column is zeroed, then
// the indices are walked in order, each update added into the row its index
// names (indices outside the rows are skipped).
func (e *emitter) scatter(lin uint32, v *kir.ScatterView) {
	m, k := e.m, e.k
	i32 := m.tInt(32, true)
	inner := 1
	for _, n := range k.Shape[v.Axis+1:] {
		inner *= n
	}
	rows, nidx := k.Shape[v.Axis], e.p.Buffers[v.Indices].Size()
	if int64(k.Shape[:v.Axis].Size())*int64(nidx)*int64(inner) >= maxElems {
		e.fail("the updates of the scatter need 64-bit offsets")
		return
	}
	o := m.op(opSDiv, i32, lin, e.ci(inner))
	c := m.op(opSRem, i32, lin, e.ci(inner))
	dst := m.op(opIAdd, i32, m.op(opIMul, i32, o, e.ci(rows*inner)), c)
	src := m.op(opIAdd, i32, m.op(opIMul, i32, o, e.ci(nidx*inner)), c)
	dk := kindOf(e.p.Buffers[k.Out].DType)
	m.loop(e.ci(0), e.ci(rows), e.ci(1), func(r uint32) {
		e.store(k.Out, m.op(opIAdd, i32, dst, m.op(opIMul, i32, r, e.ci(inner))), e.num(dk, 0))
	})
	m.loop(e.ci(0), e.ci(nidx), e.ci(1), func(j uint32) {
		x := e.index(e.p.Buffers[v.Indices].DType, e.read(v.Indices, j))
		in := m.op(opLogicalAnd, m.tBool(), m.op(opSGreaterEqual, m.tBool(), x, e.ci(0)), m.op(opSLessThan, m.tBool(), x, e.ci(rows)))
		m.ifThen(in, func() {
			at := m.op(opIAdd, i32, dst, m.op(opIMul, i32, x, e.ci(inner)))
			u := e.read(v.Updates, m.op(opIAdd, i32, src, m.op(opIMul, i32, j, e.ci(inner))))
			e.store(k.Out, at, e.agg(tile.Sum, dk, e.read(k.Out, at), u))
		})
	})
}
