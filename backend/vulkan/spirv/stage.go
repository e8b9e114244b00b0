package spirv

import (
	"math"

	"github.com/tartanml/tartan/kir"
)

// stagePlan is the staging of one operand of a tiled product into shared
// memory, K-slice by K-slice, as far as it is fixed before the reduction
// loop. Invocation lid stages the elements t = lid + q·threads of the
// slice's ext × slice, its slots q: element (r, d) at row r of the block
// and depth d of the slice, consecutive elements along the operand's
// innermost depth loop if it moves by one element (r = t / slice,
// d = t mod slice), else along its rows (r = t mod ext, d = t / ext).
// Where the threads cover whole runs of that direction the split is that
// of lid alone, plus a constant per slot, and along the depth every slot
// shares one depth. Each slot's row, shared-memory index, in-range test
// and row loops are computed once, before the reduction loop.
//
// An operand that is a kir.AffineLoad (the im2col view of a padded or
// strided convolution) is staged from its affine forms rather than
// through the generic expression scope: the offset and every guard split
// into the part over the batch and row loops, computed for each slot
// before the reduction loop, and the part over the reduction loops,
// computed in each slice once per distinct depth. A staged element is
// then a sum per form, a comparison per guard and one read.
type stagePlan struct {
	f          *frame
	x          *kir.Expr
	conds      []kir.Cond
	rows       []int // the loops along the operand's rows
	sh, elem   uint32
	ext, slice int
	slots      []stageSlot
	// sep is the operand as an affine load, or nil; forms are its
	// offset (first) and its guards, each once.
	sep   *kir.AffineLoad
	forms []form
}

// form is an affine form of an affine load, konst + Σ outer[v]·v +
// Σ red[v]·v, split into its parts over the loops that vary with the
// slot (batch and rows) and over the reduction loops; the other loops are
// at their lower bounds and in konst, with the loops of one point. A
// guard's form must lie in [0, bound) (the offset's bound is 0). A guard
// without reduction loops is tested once per slot before the reduction
// loop, one with only reduction loops once per depth in each slice.
type form struct {
	outer, red       []int
	konst, bound     int
	hasOuter, hasRed bool
}

// newForm splits coef·v + konst for operand loops along rows.
func (f *frame) newForm(coef []int, konst, bound int, rows []int) form {
	fm := form{outer: make([]int, len(coef)), red: make([]int, len(coef)), konst: konst, bound: bound}
	group := map[int]int{}
	for g, vs := range [][]int{f.v.Batch, rows, f.v.K} {
		for _, x := range vs {
			group[x] = g + 1
		}
	}
	for x, c := range coef {
		switch r := f.ranges[x]; {
		case c == 0:
		case r.Hi == r.Lo || group[x] == 0:
			fm.konst += c * r.Lo
		case group[x] == 3:
			fm.red[x], fm.hasRed = c, true
		default:
			fm.outer[x], fm.hasOuter = c, true
		}
	}
	return fm
}

// stageSlot is what a slot's staging needs that is fixed over the
// reduction loop.
type stageSlot struct {
	live  uint32 // t < ext·slice, or 0 where every invocation's slot q is
	d, at uint32 // the depth in the slice, and the element's index in the shared array
	rowIn uint32 // the row is one of the product's
	// vars holds the loop variables with the row's loops decoded (at
	// their lower bounds when the row is out); outer, for an affine
	// load, each form's part over the batch and row loops with its
	// constant (the offset's also with the buffer's base).
	vars, outer []uint32
}

// plan prepares the staging of operand b (A false, B true) in slices of
// slice depths by threads invocations into shared array sh of element
// type elem, element (r, d) of a slice at index at(r, d) (plus the offset
// given to stage). It emits code, so it must be called before the
// reduction loop and outside any branch of it.
func (f *frame) plan(b bool, sh, elem uint32, ext, slice, threads int, at func(r, d uint32) uint32) *stagePlan {
	e, m, v := f.e, f.e.m, f.v
	i32 := m.tInt(32, true)
	x, conds, g, r0, n := f.operand(b)
	p := &stagePlan{f: f, x: x, conds: conds, rows: g, sh: sh, elem: elem, ext: ext, slice: slice}
	kFast := false
	if len(v.K) > 0 {
		coef, _, ok := kir.LinearForm(kir.Offset(x.Index, e.p.Buffers[x.Buf].Shape, f.ranges), len(f.vars))
		kFast = ok && coef[v.K[len(v.K)-1]] == 1
	}
	if p.sep = e.affineOperand(v, b); p.sep != nil {
		p.forms = []form{f.newForm(p.sep.Coef, p.sep.Konst, 0, g)}
		for _, gd := range p.sep.Guards {
			p.forms = append(p.forms, f.newForm(gd.Coef, gd.Konst, gd.Bound, g))
		}
	}
	div := func(a uint32, c int) uint32 { return m.op(opSDiv, i32, a, e.ci(c)) }
	rem := func(a uint32, c int) uint32 { return m.op(opSRem, i32, a, e.ci(c)) }
	plus := func(a uint32, c int) uint32 {
		if c == 0 {
			return a
		}
		return f.add(a, e.ci(c))
	}
	var lidHi, lidLo uint32 // lid's split where the threads cover whole runs
	switch {
	case kFast && threads%slice == 0:
		lidHi, lidLo = div(f.lid, slice), rem(f.lid, slice)
	case !kFast && threads%ext == 0:
		lidHi, lidLo = div(f.lid, ext), rem(f.lid, ext)
	}
	total := ext * slice
	// The forms whose parts vary with the slot, and those parts over
	// the batch loops (the offset's with the buffer's base).
	var outerForms []int
	var outerCoef [][]int
	var outer0 []uint32
	for i, fm := range p.forms {
		if i == 0 || fm.hasOuter {
			start := uint32(0)
			if i == 0 {
				start = e.bind[p.sep.Buf].base
			}
			for _, x := range v.Batch {
				if c := fm.outer[x]; c != 0 {
					start = f.addTerm(start, c, f.vars[x])
				}
			}
			outerForms, outerCoef, outer0 = append(outerForms, i), append(outerCoef, fm.outer), append(outer0, start)
		}
	}
	for q := range (total + threads - 1) / threads {
		var s stageSlot
		var r, t uint32
		if lidHi == 0 || (q+1)*threads > total {
			t = plus(f.lid, q*threads)
		}
		switch {
		case lidHi != 0 && kFast:
			r, s.d = plus(lidHi, q*threads/slice), lidLo
		case lidHi != 0:
			r, s.d = lidLo, plus(lidHi, q*threads/ext)
		case kFast:
			r, s.d = div(t, slice), rem(t, slice)
		default:
			r, s.d = rem(t, ext), div(t, ext)
		}
		if (q+1)*threads > total {
			s.live = f.lt(t, total)
		}
		row := f.add(r0, r)
		s.rowIn = f.lt(row, n)
		s.at = at(r, s.d)
		clamped := m.op(opSelect, i32, s.rowIn, row, e.ci(0))
		if p.sep != nil {
			// Each form's part over the rows, with the batch's and
			// konst; a guard without reduction loops is tested here.
			s.outer = make([]uint32, len(p.forms))
			for j, x := range f.parts(outerCoef, g, clamped) {
				i, fm := outerForms[j], p.forms[outerForms[j]]
				x = f.sum(outer0[j], x, fm.konst)
				if i > 0 && !fm.hasRed {
					s.rowIn = m.op(opLogicalAnd, m.tBool(), s.rowIn, m.op(opULessThan, m.tBool(), x, e.ci(fm.bound)))
					continue
				}
				s.outer[i] = x
			}
		} else {
			s.vars = append([]uint32(nil), f.vars...)
			f.set(s.vars, g, clamped)
		}
		p.slots = append(p.slots, s)
	}
	return p
}

// affineOperand returns operand b (A false, B true) of the tiled
// product of view v as a kir.AffineLoad, or nil when it is none, reads a
// buffer without elements, or has a form beyond int32 arithmetic over the
// loops' ranges or a guard that can never hold.
func (e *emitter) affineOperand(v *kir.GEMMView, b bool) *kir.AffineLoad {
	x := v.A
	if b {
		x = v.B
	}
	if x.Op != kir.Load || x.Buf < 0 || x.Buf >= len(e.p.Buffers) || e.p.Buffers[x.Buf].Size() == 0 {
		return nil
	}
	a, ok := kir.AffineLoadOf(e.p, e.k, x, v.Conds(e.k, b))
	if !ok {
		return nil
	}
	ranges := e.k.VarRanges()
	fits := func(coef []int, konst int) bool {
		s := abs(konst)
		for x, c := range coef {
			s += abs(c) * max(abs(ranges[x].Lo), abs(ranges[x].Hi))
		}
		return s <= math.MaxInt32
	}
	if !fits(a.Coef, a.Konst) {
		return nil
	}
	for _, g := range a.Guards {
		if !fits(g.Coef, g.Konst) || g.Bound <= 0 {
			return nil
		}
	}
	return a
}

func abs(x int) int { return max(x, -x) }

// sum returns a + b + k, of ids a and b (0: none) and a constant k.
func (f *frame) sum(a, b uint32, k int) uint32 {
	plus := func(x uint32) {
		if a == 0 {
			a = x
		} else {
			a = f.add(a, x)
		}
	}
	if b != 0 && b != f.e.ci(0) {
		plus(b)
	}
	if k != 0 {
		plus(f.e.ci(k))
	}
	if a == 0 {
		return f.e.ci(0)
	}
	return a
}

// addTerm returns acc + c·x (acc 0: none).
func (f *frame) addTerm(acc uint32, c int, x uint32) uint32 {
	m := f.e.m
	if c != 1 {
		x = m.op(opIMul, m.tInt(32, true), x, f.e.ci(c))
	}
	if acc == 0 {
		return x
	}
	return f.add(acc, x)
}

// parts returns, for each coefficient vector of forms, Σ coef[v]·v over
// the loops vs at row-major position x of their box. A form that is a
// multiple of x itself (plus a constant) takes one product; the others
// share one decode of the loops.
func (f *frame) parts(forms [][]int, vs []int, x uint32) []uint32 {
	e := f.e
	var vals []uint32
	out := make([]uint32, len(forms))
	for i, coef := range forms {
		// Σ coef·(lo + digit) is konst + c·x when every loop's
		// coefficient is c times its row-major stride.
		konst, c, stride, linear := 0, 0, 1, true
		for j := len(vs) - 1; j >= 0; j-- {
			r, k := f.ranges[vs[j]], coef[vs[j]]
			konst += k * r.Lo
			if ext := r.Hi - r.Lo + 1; ext > 1 {
				if stride == 1 {
					c = k
				}
				linear = linear && k == c*stride
				stride *= ext
			}
		}
		var acc uint32
		switch {
		case linear && c != 0:
			acc = f.addTerm(0, c, x)
		case !linear:
			if vals == nil {
				rs := make([]kir.Range, len(vs))
				for j, v := range vs {
					rs[j] = f.ranges[v]
				}
				vals = e.split(x, rs)
			}
			konst = 0
			for j, v := range vs {
				switch r := f.ranges[v]; {
				case coef[v] == 0:
				case r.Hi == r.Lo:
					konst += coef[v] * r.Lo
				default:
					acc = f.addTerm(acc, coef[v], vals[j])
				}
			}
		}
		switch {
		case acc == 0:
			out[i] = e.ci(konst)
		case konst != 0:
			out[i] = f.add(acc, e.ci(konst))
		default:
			out[i] = acc
		}
	}
	return out
}

// stage copies the K-slice from depth k0 into the plan's shared array,
// each element at its index plus off (0: none), converted by conv (nil:
// none). Out-of-range rows and depths stage zeros, and so do points where
// one of the operand's conditions fails or its guarded load leaves its
// buffer.
func (p *stagePlan) stage(k0, off uint32, conv func(uint32) uint32) {
	f, e, m, v := p.f, p.f.e, p.f.e.m, p.f.v
	i32, f32, bl := m.tInt(32, true), m.tFloat(32), m.tBool()
	// The depths of the slots, each once: whether it is in the product,
	// and the reduction loops (or, for an affine load, the forms' parts
	// over them) there, at their lower bounds when it is out.
	type depth struct {
		in   uint32
		kk   uint32   // clamped
		red  []uint32 // affine load: the parts over the reduction loops of the forms that need one per element
		vars []uint32 // else: the reduction loops (by loop number)
	}
	depths := map[uint32]*depth{}
	for _, s := range p.slots {
		if depths[s.d] != nil {
			continue
		}
		kk := f.add(k0, s.d)
		dp := &depth{in: f.lt(kk, f.depth)}
		dp.kk = m.op(opSelect, i32, dp.in, kk, e.ci(0))
		if p.sep != nil {
			var coef [][]int
			for _, fm := range p.forms {
				coef = append(coef, fm.red)
			}
			dp.red = f.parts(coef, v.K, dp.kk)
			for i, fm := range p.forms {
				if i > 0 && !fm.hasOuter {
					x := f.sum(dp.red[i], 0, fm.konst)
					dp.in = m.op(opLogicalAnd, bl, dp.in, m.op(opULessThan, bl, x, e.ci(fm.bound)))
				}
			}
		}
		depths[s.d] = dp
	}
	var base uint32
	if p.sep != nil {
		base = e.bind[p.sep.Buf].base
	}
	for _, s := range p.slots {
		dp := depths[s.d]
		one := func() {
			in := m.op(opLogicalAnd, bl, s.rowIn, dp.in)
			var val uint32
			if p.sep != nil {
				for i, fm := range p.forms[1:] {
					if fm.hasOuter && fm.hasRed {
						x := f.add(s.outer[i+1], dp.red[i+1])
						in = m.op(opLogicalAnd, bl, in, m.op(opULessThan, bl, x, e.ci(fm.bound)))
					}
				}
				// Where a guard fails the read is of the buffer's
				// first element, which exists.
				at := m.op(opSelect, i32, in, f.sum(s.outer[0], dp.red[0], 0), base)
				val = e.loadAt(p.sep.Buf, at)
				val = e.convert(e.p.Buffers[p.sep.Buf].DType, p.x.DType, val)
			} else {
				vs := append([]uint32(nil), s.vars...)
				f.set(vs, v.K, dp.kk)
				// A guarded load yields 0 (its Fill value or a Skip
				// load's) out of range, reading nothing outside its
				// buffer.
				sc := e.scope(vs, f.ranges)
				val = sc.load(p.x)
				in = e.and(append([]uint32{in}, sc.conds(p.conds)...))
			}
			idx := s.at
			if off != 0 {
				idx = f.add(off, idx)
			}
			ptr := m.op(opAccessChain, m.tPtr(scWorkgroup, p.elem), p.sh, idx)
			val = m.op(opSelect, f32, in, val, e.num(kF32, 0))
			if conv != nil {
				val = conv(val)
			}
			m.do(opStore, ptr, val)
		}
		if s.live != 0 {
			m.ifThen(s.live, one)
		} else {
			one()
		}
	}
}
