package cpu

import (
	"github.com/tartanml/tartan/kir"
	"github.com/tartanml/tartan/tile"
)

// A kernel's loop variables (output coordinates, then reduction loops) are
// executed as "loops": the variables themselves, or runs of adjacent
// variables merged into one loop when every index expression of the kernel
// treats the run like a single row-major coordinate. Merging makes rows
// longer (a bias add over [64, 10] becomes one loop of 640), which is what
// the chunked evaluator needs to keep its per-chunk overhead small.
//
// Elementwise kernels also merge the last output variable into the run
// before it when the only forms that treat them differently are offsets of
// direct loads that read that variable alone, such as a per-channel scale
// b[c] of an NHWC activation: the merged loop m then reads b at
// coef·(m mod extent), a periodic load (periodicTerm), and the rows are the
// whole activation instead of its channels, short rows being what the
// evaluator pays for per row.
//
// Every loop runs from 0 to its extent-1; a variable's value is its range's
// Lo plus its position within the loop.

// lin is an affine form over loops: c + Σ coef·loop.
type lin struct {
	c     int
	terms []term
}

// term is coef times the value of loop.
type term struct{ loop, coef int }

// axisLin is a lin split for a program whose vector axis is fixed: the
// coefficient of the axis loop is kept apart, so that the value at lane i of
// a chunk starting at axis position s is base + stride·(s+i). It may also
// hold terms that are not affine (floor divisions and modulos) but do not
// depend on the axis, evaluated once per chunk: such an index is
// "semi-affine", like the x div 2 of a max-pool gradient along channels.
type axisLin struct {
	c      int
	terms  []term // without the axis loop
	stride int
	// tabs are non-affine terms of a single loop, tabulated over its
	// positions; extra are the other non-affine terms.
	tabs  []tabTerm
	extra []scalarTerm
	vm    *varMap
}

// tabTerm adds t[position of loop] to a form, or, when loop2 ≥ 0,
// t[position of loop · n2 + position of loop2]: a non-affine term of two
// loops, such as the (y - k) div 2 of a strided window's gradient.
type tabTerm struct {
	loop  int
	t     []int
	loop2 int
	n2    int
}

// scalarTerm is coef times the value of an index expression that does not
// depend on the program's axis.
type scalarTerm struct {
	coef int
	x    *kir.Ix
}

// varMap finds a kernel variable's value among the loop values: variable v
// is lo[v] + vars[loop[v]]. Only variables that are alone in their loop
// appear in scalar terms.
type varMap struct{ loop, lo []int }

// scalarIx evaluates x (without loaded values) at the current loop values.
func scalarIx(x *kir.Ix, vm *varMap, vars []int) int {
	switch x.Op {
	case kir.IxConst:
		return x.C
	case kir.IxVar:
		return vm.lo[x.Var] + vars[vm.loop[x.Var]]
	case kir.IxAdd:
		return scalarIx(x.A, vm, vars) + scalarIx(x.B, vm, vars)
	case kir.IxMul:
		return scalarIx(x.A, vm, vars) * x.C
	case kir.IxFloorDiv:
		return floorDiv(scalarIx(x.A, vm, vars), x.C)
	case kir.IxMod:
		return floorMod(scalarIx(x.A, vm, vars), x.C)
	}
	return 0
}

func (l lin) forAxis(axis int) axisLin {
	a := axisLin{c: l.c}
	for _, t := range l.terms {
		if t.loop == axis {
			a.stride = t.coef
		} else {
			a.terms = append(a.terms, t)
		}
	}
	return a
}

// base returns the value at axis position 0 for the current loop values.
func (a *axisLin) base(vars []int) int {
	b := a.c
	for _, t := range a.terms {
		b += t.coef * vars[t.loop]
	}
	for _, t := range a.tabs {
		if t.loop2 < 0 {
			b += t.t[vars[t.loop]]
		} else {
			b += t.t[vars[t.loop]*t.n2+vars[t.loop2]]
		}
	}
	for _, t := range a.extra {
		b += t.coef * scalarIx(t.x, a.vm, vars)
	}
	return b
}

// scaled returns k·a.
func (a axisLin) scaled(k int) axisLin {
	out := axisLin{c: a.c * k, stride: a.stride * k, vm: a.vm}
	for _, t := range a.terms {
		out.terms = append(out.terms, term{t.loop, t.coef * k})
	}
	for _, t := range a.tabs {
		tt := make([]int, len(t.t))
		for i, x := range t.t {
			tt[i] = x * k
		}
		out.tabs = append(out.tabs, tabTerm{t.loop, tt, t.loop2, t.n2})
	}
	for _, t := range a.extra {
		out.extra = append(out.extra, scalarTerm{t.coef * k, t.x})
	}
	return out
}

// plus returns a + b.
func (a axisLin) plus(b axisLin) axisLin {
	out := axisLin{c: a.c + b.c, stride: a.stride + b.stride, vm: a.vm}
	if out.vm == nil {
		out.vm = b.vm
	}
	coef := map[int]int{}
	var order []int
	for _, t := range append(append([]term(nil), a.terms...), b.terms...) {
		if _, ok := coef[t.loop]; !ok {
			order = append(order, t.loop)
		}
		coef[t.loop] += t.coef
	}
	for _, l := range order {
		if coef[l] != 0 {
			out.terms = append(out.terms, term{l, coef[l]})
		}
	}
	out.tabs = append(append([]tabTerm(nil), a.tabs...), b.tabs...)
	out.extra = append(append([]scalarTerm(nil), a.extra...), b.extra...)
	return out
}

// affineIx is an index expression that is affine in the kernel's variables:
// konst + Σ coef[v]·var v.
type affineIx struct {
	coef  []int
	konst int
}

// loadClass says how a load's position is computed.
type loadClass uint8

const (
	// loadDirect: the load is in range at every point of the loop box and
	// its row-major offset is affine.
	loadDirect loadClass = iota
	// loadChecked: every dimension's index is affine; each is checked
	// against the buffer's shape.
	loadChecked
	// loadGeneral: some index uses floor division, modulo or a loaded
	// value; indices are computed lane by lane.
	loadGeneral
)

// loadInfo is the analysis of one Load expression.
type loadInfo struct {
	class   loadClass
	inRange bool       // in range at every point of the loop box
	dimIn   []bool     // dimension d's index is in range at every point
	flat    affineIx   // row-major offset (direct and checked)
	dims    []affineIx // per-dimension indices (checked)
	// dimForm[d] is dimension d's bound check 0 ≤ dims[d] < its extent as
	// merging may rescale it (see condForm); nil where dimIn[d] (checked).
	dimForm []*condForm
	ix      []*kir.Ix // simplified per-dimension indices
}

// space is the loop structure of one kernel and the analysis of its index
// expressions.
type space struct {
	p      *kir.Program
	k      *kir.Kernel
	nv     int
	ranges []kir.Range
	// nout is the number of output loops (at least 1: a scalar output gets a
	// loop of extent 1 that no expression mentions).
	nout int
	ext  []int   // extent of every loop, output loops first
	vars [][]int // the kernel variables each loop covers, outer to inner
	// varLoop maps a kernel variable to its loop; varLo is its range's Lo.
	varLoop []int
	varLo   []int
	vm      *varMap
	// merged reports whether a variable's loop covers several variables.
	loads map[*kir.Expr]*loadInfo
	ixs   map[*kir.Ix]*ixInfo
	// pinned variables appear inside a general index expression and are
	// never merged.
	pinned []bool
	// affines lists every affine form in use, for the merging test.
	affines []*affineIx
	// flats are the forms of direct loads' offsets; with periodicOK they
	// may become periodic (periodic[form]) when loops merge.
	flats      map[*affineIx]bool
	periodicOK bool
	periodic   map[*affineIx]periodicTerm
	// conds holds the affine Where conditions' own forms (not shared with
	// any index), which merging may rescale (see canMerge).
	conds  map[condKey]*condForm
	condOf map[*affineIx]*condForm
}

// condKey names a Where condition.
type condKey struct {
	x     *kir.Ix
	bound int
}

// condForm is an affine Where condition, or the bound check of a checked
// load's dimension, 0 ≤ aff < bound as the space sees it: merging a loop variable v into the run before it rescales a
// condition that reads the run but not v, 0 ≤ ±u + r < B (u the run's
// coordinate, r the rest), to 0 ≤ e·(±u + r) + (±(v - lo) or e-1-(v-lo)) <
// e·B, e being v's extent: the same points, now affine in the merged
// coordinate (a guard on the rows of a pooling gradient's window, which
// would otherwise keep each row one channel vector long).
type condForm struct {
	aff    *affineIx
	bound  int
	scaled bool // rescaled by some merge
}

// cond returns the space's form of Where condition c, or nil when c is not
// affine.
func (s *space) cond(c kir.Cond) *condForm {
	return s.conds[condKey{c.X, c.Bound}]
}

// periodicTerm is the part of a direct load's offset along a merged loop
// that reads only the loop's last variable v: coef·(position mod period),
// period being v's extent.
type periodicTerm struct{ v, coef, period int }

// mergeMode says which loops newSpace merges.
type mergeMode uint8

const (
	mergeNone     mergeMode = iota
	mergeAffine             // runs that act as one row-major coordinate
	mergePeriodic           // those, and the last output loop with periodic loads
)

// The parts of a kernel a space analyses.
const (
	partWhere = 1 << iota
	partBody
	partEpilogue
	partAll = partWhere | partBody | partEpilogue
)

// newSpace analyses the given parts of kernel k of program p. With merge,
// adjacent output loops and adjacent reduction loops are merged wherever
// every affine index of those parts allows it.
func newSpace(p *kir.Program, k *kir.Kernel, merge mergeMode, parts int) *space {
	s := &space{p: p, k: k, nv: k.NumVars(), ranges: k.VarRanges(),
		loads: map[*kir.Expr]*loadInfo{}, ixs: map[*kir.Ix]*ixInfo{},
		flats: map[*affineIx]bool{}, periodicOK: merge == mergePeriodic, periodic: map[*affineIx]periodicTerm{},
		conds: map[condKey]*condForm{}, condOf: map[*affineIx]*condForm{}}
	s.pinned = make([]bool, s.nv)
	if parts&partWhere != 0 {
		for _, c := range k.Where {
			key := condKey{c.X, c.Bound}
			if s.conds[key] != nil {
				continue
			}
			coef, konst, ok := kir.LinearForm(kir.Simplify(c.X, s.ranges), s.nv)
			if !ok {
				s.ix(c.X)
				continue
			}
			a := &affineIx{coef: coef, konst: konst}
			cf := &condForm{aff: a, bound: c.Bound}
			s.conds[key], s.condOf[a] = cf, cf
			s.affines = append(s.affines, a)
		}
	}
	if parts&partBody != 0 {
		s.expr(k.Body)
	}
	if parts&partEpilogue != 0 && k.Epilogue != nil {
		s.expr(k.Epilogue)
	}
	s.buildLoops(merge != mergeNone)
	return s
}

// ixInfo is the analysis of one index expression: its affine form, or the
// simplified expression that is evaluated lane by lane.
type ixInfo struct {
	aff  *affineIx
	simp *kir.Ix
}

// ix analyses an index expression.
func (s *space) ix(x *kir.Ix) *ixInfo {
	if a, ok := s.ixs[x]; ok {
		return a
	}
	simp := kir.Simplify(x, s.ranges)
	info := &ixInfo{simp: simp}
	s.ixs[x] = info
	coef, konst, ok := kir.LinearForm(simp, s.nv)
	if !ok {
		s.pin(simp)
		return info
	}
	info.aff = &affineIx{coef: coef, konst: konst}
	s.affines = append(s.affines, info.aff)
	return info
}

// pin marks every variable of x, and analyses the expressions of its loaded
// indices.
func (s *space) pin(x *kir.Ix) {
	if x == nil {
		return
	}
	switch x.Op {
	case kir.IxVar:
		if x.Var >= 0 && x.Var < s.nv {
			s.pinned[x.Var] = true
		}
	case kir.IxAdd:
		s.pin(x.A)
		s.pin(x.B)
	case kir.IxMul, kir.IxFloorDiv, kir.IxMod:
		s.pin(x.A)
	case kir.IxValue:
		s.expr(x.E)
	}
}

func (s *space) expr(e *kir.Expr) {
	switch e.Op {
	case kir.Load:
		if _, ok := s.loads[e]; !ok {
			s.loads[e] = s.load(e)
		}
	case kir.IndexValue, kir.Random:
		s.ix(e.Index[0])
	}
	for _, a := range e.Args {
		s.expr(a)
	}
}

func (s *space) load(e *kir.Expr) *loadInfo {
	shape := s.p.Buffers[e.Buf].Shape
	li := &loadInfo{ix: make([]*kir.Ix, len(e.Index)), dimIn: make([]bool, len(e.Index))}
	inRange := true
	for d, x := range e.Index {
		li.ix[d] = kir.Simplify(x, s.ranges)
		lo, hi, ok := kir.Bounds(li.ix[d], s.ranges)
		li.dimIn[d] = ok && lo >= 0 && hi < shape[d]
		inRange = inRange && li.dimIn[d]
	}
	li.inRange = inRange
	if inRange {
		if coef, konst, ok := kir.LinearForm(kir.Offset(e.Index, shape, s.ranges), s.nv); ok {
			li.class = loadDirect
			li.flat = affineIx{coef, konst}
			s.affines = append(s.affines, &li.flat)
			s.flats[&li.flat] = true
			// Loaded indices inside a direct load cannot exist (it would not
			// be affine), so nothing else to analyse.
			return li
		}
	}
	li.dims = make([]affineIx, len(e.Index))
	checked := true
	for d, x := range li.ix {
		coef, konst, ok := kir.LinearForm(x, s.nv)
		if !ok {
			checked = false
			break
		}
		li.dims[d] = affineIx{coef, konst}
	}
	if checked {
		li.class = loadChecked
		strides := shape.Strides()
		li.flat = affineIx{coef: make([]int, s.nv)}
		li.dimForm = make([]*condForm, len(li.dims))
		for d := range li.dims {
			for v, c := range li.dims[d].coef {
				li.flat.coef[v] += c * strides[d]
			}
			li.flat.konst += li.dims[d].konst * strides[d]
			if !li.dimIn[d] {
				// Checked: a condition like the Where ones.
				a := &li.dims[d]
				cf := &condForm{aff: a, bound: shape[d]}
				li.dimForm[d], s.condOf[a] = cf, cf
				s.affines = append(s.affines, a)
			}
		}
		s.affines = append(s.affines, &li.flat)
		return li
	}
	li.class = loadGeneral
	li.dims = nil
	for _, x := range li.ix {
		s.ix(x)
	}
	return li
}

// buildLoops groups the variables into loops.
func (s *space) buildLoops(merge bool) {
	nout := len(s.k.Shape)
	s.varLoop = make([]int, s.nv)
	s.varLo = make([]int, s.nv)
	for v, r := range s.ranges {
		s.varLo[v] = r.Lo
	}
	extent := func(v int) int { return max(0, s.ranges[v].Hi-s.ranges[v].Lo+1) }
	add := func(v int) {
		s.ext = append(s.ext, extent(v))
		s.vars = append(s.vars, []int{v})
		s.varLoop[v] = len(s.ext) - 1
	}
	group := func(lo, hi int) {
		for v := lo; v < hi; v++ {
			last := len(s.vars) - 1
			if merge && v > lo && s.canMerge(s.vars[last], v) {
				s.vars[last] = append(s.vars[last], v)
				s.ext[last] *= extent(v)
				s.varLoop[v] = last
				continue
			}
			add(v)
		}
	}
	group(0, nout)
	if nout == 0 {
		s.ext = append(s.ext, 1)
		s.vars = append(s.vars, nil)
	}
	s.nout = len(s.ext)
	group(nout, s.nv)
	s.vm = &varMap{loop: s.varLoop, lo: s.varLo}
}

// canMerge reports whether variable v can join the loop of the variables
// run (which ends with v-1): neither is pinned, and every affine form has
// coef[v-1] = coef[v]·extent(v), so that the run and v together act as one
// row-major coordinate; with periodicOK and v the last output variable, a
// direct load's offset may instead read v alone (see periodicTerm).
func (s *space) canMerge(run []int, v int) bool {
	u := run[len(run)-1]
	if s.pinned[u] || s.pinned[v] {
		return false
	}
	e := s.ranges[v].Hi - s.ranges[v].Lo + 1
	if e <= 0 || s.ranges[u].Hi < s.ranges[u].Lo {
		return false
	}
	var periodic, scaled []*affineIx
	for _, a := range s.affines {
		if a.coef[u] == a.coef[v]*e {
			continue
		}
		if s.condOf[a] != nil && a.coef[v] == 0 && abs(a.coef[u]) == 1 {
			scaled = append(scaled, a)
			continue
		}
		if !s.periodicOK || v != len(s.k.Shape)-1 || !s.flats[a] || a.coef[v] == 0 {
			return false
		}
		for _, w := range run {
			if a.coef[w] != 0 {
				return false
			}
		}
		periodic = append(periodic, a)
	}
	for _, a := range periodic {
		s.periodic[a] = periodicTerm{v: v, coef: a.coef[v], period: e}
	}
	for _, a := range scaled {
		sign := a.coef[u]
		for w := range a.coef {
			a.coef[w] *= e
		}
		a.konst *= e
		a.coef[v] = sign
		a.konst -= sign * s.ranges[v].Lo
		if sign < 0 {
			a.konst += e - 1
		}
		s.condOf[a].bound *= e
		s.condOf[a].scaled = true
	}
	return true
}

// lin converts an affine form over kernel variables to one over loops.
func (s *space) lin(a *affineIx) lin {
	l := lin{c: a.konst}
	for v, c := range a.coef {
		l.c += c * s.varLo[v]
	}
	pt, periodic := s.periodic[a]
	for loop, vs := range s.vars {
		if len(vs) == 0 {
			continue
		}
		if periodic && vs[len(vs)-1] == pt.v {
			// That loop's part is the periodic term, kept apart.
			continue
		}
		if c := a.coef[vs[len(vs)-1]]; c != 0 {
			l.terms = append(l.terms, term{loop, c})
		}
	}
	return l
}

// outLin returns the row-major offset of the output point as a lin.
func (s *space) outLin() lin {
	a := &affineIx{coef: make([]int, s.nv)}
	for d, st := range s.k.Shape.Strides() {
		a.coef[d] = st
	}
	return s.lin(a)
}

// reduceLoops returns the number of reduction loops.
func (s *space) reduceLoops() int { return len(s.ext) - s.nout }

// points returns the product of the extents of loops [lo, hi).
func (s *space) points(lo, hi int) int {
	n := 1
	for _, e := range s.ext[lo:hi] {
		n *= e
	}
	return n
}

// laneOf returns the evaluation lane of values of dtype dt: float32 lanes for
// f32, the narrower floats (which Tartan computes as float32) and booleans
// (0 or 1), float64 lanes for f64 and the integers.
func laneOf(dt tile.DType) lane {
	switch dt {
	case tile.Float32, tile.Float16, tile.BFloat16, tile.Bool:
		return laneF
	}
	return laneD
}
