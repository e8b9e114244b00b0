package cpu

import (
	"math"
	"slices"

	"github.com/tartanml/tartan/kir"
	"github.com/tartanml/tartan/tile"
)

// windowKernel executes the kernels of max (or min) pooling over a layout
// whose innermost dimension is the channel, the kernels the generic loops
// executor handles worst: their rows are one channel vector long and their
// indices step over windows, so the chunked evaluator would copy every row
// and pay its per-chunk overhead on a few dozen lanes. Here every load is
// either a row (the channel vector of one point, read in place) or a single
// element, its offset a sum of per-variable tables, and the body is one fused
// loop over the channel. Three forms are recognised, over float32 buffers:
//
//   - windowReduce: O[o] = Max (or Min) over the window r of V(o, r), V being
//     a load I[…, c] or its ReLU select(I ≤ 0, 0, I) (the forward pass);
//   - windowFirst: F[o] = Min over the r where V(o, r) == O[o] of Pos[r],
//     two NaNs counting as equal, written as the condition
//     0 ≤ int(V ≠ O && (V == V || O == O)) < 1 (the first window position
//     that attains the extremum, see grad's extremeRule);
//   - windowRoute: D[x] = select(A[x] ≤ 0, 0, select(Pos[…] == F[…], G, 0)),
//     with or without the outer select (the extremum's cotangent routed to
//     that position, through the ReLU's gradient), G being a row load C[…]
//     or a product C[…] · B[…] of two (a dropout's gradient, B its mask
//     scaled);
//   - windowRouteSum: D[x] = Σ over the windows r that hold x of
//     windowRoute's body, optionally followed by the epilogue
//     select(A[x] ≤ 0, 0, acc) (overlapping windows: a point belongs to
//     several, found through floor divisions and modulos that mix x and r).
//
// NaN propagates as in the generic executor: a NaN passes the ReLU, makes
// its window's extremum NaN, is the position that attains it, and passes
// the ReLU's gradient and a dropped dropout lane (NaN · 0).
// (A routed product is computed before the route zeroes lanes, so a lane
// routed away is +0 whatever B holds.)
//
// Index expressions may mix two variables in a floor division or modulo
// (see sepForm). Before matching, guards that repeat the kernel's own bounds
// are dropped (see implier), as a padded window's value carries one, and
// the affine Where conditions are checked per reduction loop, a failing one
// skipping the loops inside it.
//
// Results equal the generic executor's (and kir.Interpret's) exactly: the
// aggregations are exact in float32 and an output point with no
// contribution, or with a skipped load, gets 0. Work is split in blocks of
// rows whose boundaries depend only on the kernel.
//
// Why it stays: measured on 2026-12-03 (AMD EPYC, 1 thread of 2 shared
// cores, `tartan bench --suite --threads 1 --profile`, medians of 2
// interleaved runs of 3 repeats), each form's kernels against the same
// kernels on the loops executor (with rewriteKernel's guard dropping):
//
//	windowReduce    cnn k1 1.6 → 4.7 ms, stem k1 4.0 → 13.5, stemblock k7 3.6 → 9.6
//	windowFirst     cnn k40 2.2 → 9.7, stem k16 5.3 → 35.7, stemblock k14 5.2 → 24.6
//	windowRoute     cnn k41 1.8 → 6.5, cnn k36 0.56 → 1.10
//	windowRouteSum  stemblock k15 2.9 → 7.8, k16 1.5 → 2.2, k17 1.7 → 3.4
//
// and whole training steps with every form off: cnn 22.8 → 36.0 ms, stem
// 49.0 → 79.0, stemblock 50.5 → 118.4. The loops executor runs these
// kernels' rows of one channel vector (32 lanes) with its per-chunk
// overhead and, for windowFirst, evaluates the value condition lane by
// lane as a general expression.
type windowKernel struct {
	form   windowForm
	agg    tile.Agg // windowReduce: Max or Min
	out    int
	ch     int   // channel extent
	outer  []int // extents of the output variables before the channel
	red    []int // extents of the reduction variables
	rows   int   // points of the outer output variables
	redPts int
	relu   bool // V is select(I ≤ 0, 0, I)
	// posFinite: every value Pos can give is finite and nonzero (a
	// constant position buffer), so windowFirst can mark lanes without a
	// contribution with +Inf.
	posFinite bool
	src       *rowAccess // I (windowReduce, windowFirst)
	ext       *rowAccess // O (windowFirst)
	pos       *rowAccess // Pos, one element (windowFirst, windowRoute)
	act       *rowAccess // A (windowRoute); nil without the outer select
	epiAct    *rowAccess // A' (windowRouteSum); nil without the epilogue
	first     *rowAccess // F (windowRoute)
	cot       *rowAccess // C (windowRoute)
	mul       *rowAccess // B (windowRoute); nil for a plain C
	conds     []rowCond  // affine Where conditions
	// levels holds conds by level: level 0 those of the output variables
	// only, level l+1 those whose innermost reduction variable is l.
	levels  [][]rowCond
	perTask int // rows per task
	workers int
	x       *Executable
}

type windowForm uint8

const (
	windowReduce windowForm = iota
	windowFirst
	windowRoute
	windowRouteSum
)

// sepForm is an integer index expression written as a constant plus one
// tabulated function per loop variable, and per pair of loop variables that
// a floor division or modulo mixes: the value at loop positions pos
// (variable v at its range's Lo plus pos[v]) is
// c + Σ t[pos[v]] + Σ pt[pos[v]·nw + pos[w]].
type sepForm struct {
	c     int
	tabs  []varTab
	pairs []pairTab
}

type varTab struct {
	v int
	t []int
}

// pairTab tabulates a term of two variables v and w, w's range having nw
// points, row-major in (v, w).
type pairTab struct {
	v, w, nw int
	t        []int
}

// maxPairTab bounds the entries of a pairTab.
const maxPairTab = 1 << 16

func (s *sepForm) at(pos []int) int {
	x := s.c
	for i := range s.tabs {
		x += s.tabs[i].t[pos[s.tabs[i].v]]
	}
	for i := range s.pairs {
		p := &s.pairs[i]
		x += p.t[pos[p.v]*p.nw+pos[p.w]]
	}
	return x
}

// bounds returns the least and greatest value of s over the loop ranges
// (a bound that a pair's table may not attain jointly with the others').
func (s *sepForm) bounds() (lo, hi int) {
	lo, hi = s.c, s.c
	span := func(t []int) {
		mn, mx := t[0], t[0]
		for _, x := range t {
			mn, mx = min(mn, x), max(mx, x)
		}
		lo, hi = lo+mn, hi+mx
	}
	for _, t := range s.tabs {
		span(t.t)
	}
	for _, p := range s.pairs {
		span(p.t)
	}
	return lo, hi
}

// uses reports whether s depends on variable v through a table.
func (s *sepForm) uses(v int) bool {
	for _, t := range s.tabs {
		if t.v == v {
			return true
		}
	}
	for _, p := range s.pairs {
		if p.v == v || p.w == v {
			return true
		}
	}
	return false
}

// add returns s + k·o, merging the tables of one variable or pair.
func (s sepForm) add(o sepForm, k int) sepForm {
	out := sepForm{c: s.c + k*o.c}
	for _, t := range s.tabs {
		out.tabs = append(out.tabs, varTab{t.v, append([]int(nil), t.t...)})
	}
	for _, p := range s.pairs {
		out.pairs = append(out.pairs, pairTab{p.v, p.w, p.nw, append([]int(nil), p.t...)})
	}
	for _, t := range o.tabs {
		merged := false
		for i := range out.tabs {
			if out.tabs[i].v == t.v {
				for j, x := range t.t {
					out.tabs[i].t[j] += k * x
				}
				merged = true
				break
			}
		}
		if !merged {
			tt := make([]int, len(t.t))
			for j, x := range t.t {
				tt[j] = k * x
			}
			out.tabs = append(out.tabs, varTab{t.v, tt})
		}
	}
	for _, p := range o.pairs {
		merged := false
		for i := range out.pairs {
			if q := &out.pairs[i]; q.v == p.v && q.w == p.w {
				for j, x := range p.t {
					q.t[j] += k * x
				}
				merged = true
				break
			}
		}
		if !merged {
			tt := make([]int, len(p.t))
			for j, x := range p.t {
				tt[j] = k * x
			}
			out.pairs = append(out.pairs, pairTab{p.v, p.w, p.nw, tt})
		}
	}
	return out
}

// ixVars adds to seen the variables x uses; it reports false when x uses a
// loaded value.
func ixVars(x *kir.Ix, seen map[int]bool) bool {
	switch x.Op {
	case kir.IxConst:
		return true
	case kir.IxVar:
		seen[x.Var] = true
		return true
	case kir.IxAdd:
		return ixVars(x.A, seen) && ixVars(x.B, seen)
	case kir.IxMul, kir.IxFloorDiv, kir.IxMod:
		return ixVars(x.A, seen)
	}
	return false
}

// separate writes x as a sepForm over the variable ranges, or reports false
// when x uses a loaded value, or a floor division or modulo mixes more than
// two variables (or two whose table would be too large).
func separate(x *kir.Ix, ranges []kir.Range) (sepForm, bool) {
	seen := map[int]bool{}
	if !ixVars(x, seen) {
		return sepForm{}, false
	}
	vals := make([]int, len(ranges))
	switch len(seen) {
	case 0:
		return sepForm{c: kir.EvalIx(x, vals, nil)}, true
	case 1:
		var v int
		for v = range seen {
		}
		r := ranges[v]
		if r.Hi < r.Lo {
			return sepForm{}, false
		}
		t := make([]int, r.Hi-r.Lo+1)
		for i := range t {
			vals[v] = r.Lo + i
			t[i] = kir.EvalIx(x, vals, nil)
		}
		return sepForm{tabs: []varTab{{v, t}}}, true
	}
	switch x.Op {
	case kir.IxAdd:
		a, ok := separate(x.A, ranges)
		if !ok {
			return sepForm{}, false
		}
		b, ok := separate(x.B, ranges)
		if !ok {
			return sepForm{}, false
		}
		return a.add(b, 1), true
	case kir.IxMul:
		a, ok := separate(x.A, ranges)
		if !ok {
			return sepForm{}, false
		}
		return sepForm{}.add(a, x.C), true
	}
	if len(seen) != 2 {
		return sepForm{}, false
	}
	// A floor division or modulo of two variables, such as the window
	// (x − k) div s of an output point x that overlapping windows share.
	var vw []int
	for u := range seen {
		vw = append(vw, u)
	}
	v, w := min(vw[0], vw[1]), max(vw[0], vw[1])
	rv, rw := ranges[v], ranges[w]
	nv, nw := rv.Hi-rv.Lo+1, rw.Hi-rw.Lo+1
	if nv <= 0 || nw <= 0 || nv > maxPairTab/nw {
		return sepForm{}, false
	}
	t := make([]int, nv*nw)
	for i := range nv {
		vals[v] = rv.Lo + i
		for j := range nw {
			vals[w] = rw.Lo + j
			t[i*nw+j] = kir.EvalIx(x, vals, nil)
		}
	}
	return sepForm{pairs: []pairTab{{v, w, nw, t}}}, true
}

// rowAccess is a load of a windowKernel: a row (the channel vector at one
// point, the last index being the channel variable) or one element (no
// index uses the channel variable).
type rowAccess struct {
	buf    int
	row    bool
	off    sepForm // the flat offset, without the channel
	checks []rowCheck
	skip   bool // out of range, the point is skipped; else it reads fill
	fill   float32
	// fillRow is a row of fill values, for out-of-range Fill rows.
	fillRow []float32
}

// rowCheck is a range condition 0 ≤ x < bound on a dimension's index.
type rowCheck struct {
	x     sepForm
	bound int
}

// rowCond is a Where condition 0 ≤ x < bound.
type rowCond = rowCheck

// at returns the flat offset of the access at loop positions pos, or -1
// when an index is out of range.
func (a *rowAccess) at(pos []int) int {
	for i := range a.checks {
		c := &a.checks[i]
		if x := c.x.at(pos); x < 0 || x >= c.bound {
			return -1
		}
	}
	return a.off.at(pos)
}

// newRowAccess builds the access of load e, or reports false when e is not a
// float32 load of that form. ch is the channel variable, chExt its extent. A
// row's last index is the channel variable plus a term without it that keeps
// the whole row in range (a channel vector inside a flattened dimension).
func newRowAccess(p *kir.Program, e *kir.Expr, ranges []kir.Range, ch, chExt int) (*rowAccess, bool) {
	if e.Op != kir.Load || e.DType != tile.Float32 || p.Buffers[e.Buf].DType != tile.Float32 {
		return nil, false
	}
	shape := p.Buffers[e.Buf].Shape
	if len(e.Index) != len(shape) {
		return nil, false
	}
	a := &rowAccess{buf: e.Buf, skip: e.OOB == kir.Skip, fill: float32(e.Value)}
	n := len(shape)
	if n > 0 {
		last := e.Index[n-1]
		seen := map[int]bool{}
		if !ixVars(last, seen) {
			return nil, false
		}
		if seen[ch] {
			rest, ok := rowStart(last, ranges, ch, chExt)
			if !ok {
				return nil, false
			}
			if lo, hi := rest.bounds(); lo < 0 || hi+chExt > shape[n-1] {
				return nil, false
			}
			a.row = true
			a.off = rest
			n--
			if !a.skip {
				a.fillRow = make([]float32, chExt)
				for i := range a.fillRow {
					a.fillRow[i] = a.fill
				}
			}
		}
	}
	stride := 1
	if a.row {
		stride = shape[n]
	}
	for d := n - 1; d >= 0; d-- {
		seen := map[int]bool{}
		if !ixVars(e.Index[d], seen) || seen[ch] {
			return nil, false
		}
		s, ok := separate(e.Index[d], ranges)
		if !ok {
			return nil, false
		}
		if lo, hi := s.bounds(); lo < 0 || hi >= shape[d] {
			a.checks = append(a.checks, rowCheck{s, shape[d]})
		}
		a.off = a.off.add(s, stride)
		stride *= shape[d]
	}
	return a, true
}

// rowStart writes x, an index that uses the channel variable ch, as ch plus
// a sepForm without it (its value at ch = 0), or reports false when x does
// not step by one along the channel.
func rowStart(x *kir.Ix, ranges []kir.Range, ch, chExt int) (sepForm, bool) {
	s, ok := separate(x, ranges)
	if !ok {
		return sepForm{}, false
	}
	for _, p := range s.pairs {
		if p.v == ch || p.w == ch {
			return sepForm{}, false
		}
	}
	rest := sepForm{c: s.c, pairs: s.pairs}
	found := false
	for _, t := range s.tabs {
		if t.v != ch {
			rest.tabs = append(rest.tabs, t)
			continue
		}
		if len(t.t) != chExt {
			return sepForm{}, false
		}
		for i, v := range t.t {
			if v != t.t[0]+i {
				return sepForm{}, false
			}
		}
		rest.c += t.t[0]
		found = true
	}
	return rest, found
}

// windowValue recognises V: a row load, or the ReLU select(L ≤ 0, 0, L) of
// one.
func windowValue(p *kir.Program, e *kir.Expr, ranges []kir.Range, ch, chExt int) (src *rowAccess, relu, ok bool) {
	if e.Op == kir.Apply && e.Fn == tile.Select {
		a, l, ok := reluGuard(e)
		if !ok || !sameLoad(a, l) {
			return nil, false, false
		}
		e, relu = l, true
	}
	src, ok = newRowAccess(p, e, ranges, ch, chExt)
	if !ok || !src.row {
		return nil, false, false
	}
	return src, relu, true
}

func finiteNonzero(v float32) bool {
	return v != 0 && !math.IsInf(float64(v), 0) && !math.IsNaN(float64(v))
}

func isZero(e *kir.Expr) bool { return e.Op == kir.Const && e.Value == 0 }

// isPosZero reports whether e is the constant +0, the zero the window forms
// write.
func isPosZero(e *kir.Expr) bool { return isZero(e) && !math.Signbit(e.Value) }

// reluGuard recognises select(A ≤ 0, 0, X), the form of a ReLU (X = A) and
// of its gradient, and returns A and X. The zero taken is +0; A ≤ 0 is false
// for NaN, which X then receives.
func reluGuard(e *kir.Expr) (a, x *kir.Expr, ok bool) {
	if e.Op != kir.Apply || e.Fn != tile.Select || len(e.Args) != 3 || !isPosZero(e.Args[1]) {
		return nil, nil, false
	}
	c := e.Args[0]
	if c.Op != kir.Apply || c.Fn != tile.Le || len(c.Args) != 2 || !isZero(c.Args[1]) {
		return nil, nil, false
	}
	return c.Args[0], e.Args[2], true
}

// nanDiffers recognises CombEq's inequality of a Where condition,
// v ≠ o && (v == v || o == o): v and o differ and are not both NaN.
func nanDiffers(e *kir.Expr) (v, o *kir.Expr, ok bool) {
	if e.Op != kir.Apply || e.Fn != tile.And || len(e.Args) != 2 {
		return nil, nil, false
	}
	ne, or := e.Args[0], e.Args[1]
	if ne.Op != kir.Apply || ne.Fn != tile.Ne || len(ne.Args) != 2 ||
		or.Op != kir.Apply || or.Fn != tile.Or || len(or.Args) != 2 {
		return nil, nil, false
	}
	v, o = ne.Args[0], ne.Args[1]
	self := func(e, x *kir.Expr) bool {
		return e.Op == kir.Apply && e.Fn == tile.Eq && len(e.Args) == 2 && sameExpr(e.Args[0], x) && sameExpr(e.Args[1], x)
	}
	if self(or.Args[0], v) && self(or.Args[1], o) || self(or.Args[0], o) && self(or.Args[1], v) {
		return v, o, true
	}
	return nil, nil, false
}

// sameExpr reports whether a and b are the same expression tree.
func sameExpr(a, b *kir.Expr) bool {
	if a == b {
		return true
	}
	if a.Op == kir.Load || b.Op == kir.Load {
		return sameLoad(a, b)
	}
	if a.Op != b.Op || a.DType != b.DType || a.Fn != b.Fn || a.OOB != b.OOB || a.Stream != b.Stream ||
		math.Float64bits(a.Value) != math.Float64bits(b.Value) || len(a.Args) != len(b.Args) || len(a.Index) != len(b.Index) {
		return false
	}
	for i := range a.Index {
		if !sameIx(a.Index[i], b.Index[i]) {
			return false
		}
	}
	for i := range a.Args {
		if !sameExpr(a.Args[i], b.Args[i]) {
			return false
		}
	}
	return true
}

// sameLoad reports whether a and b load the same element.
func sameLoad(a, b *kir.Expr) bool {
	if a == b {
		return true
	}
	if a.Op != kir.Load || b.Op != kir.Load || a.Buf != b.Buf || a.OOB != b.OOB || a.Value != b.Value ||
		len(a.Index) != len(b.Index) {
		return false
	}
	for i := range a.Index {
		if !sameIx(a.Index[i], b.Index[i]) {
			return false
		}
	}
	return true
}

func sameIx(a, b *kir.Ix) bool {
	if a == b {
		return true
	}
	if a == nil || b == nil || a.Op != b.Op || a.Var != b.Var || a.C != b.C || a.E != nil || b.E != nil {
		return false
	}
	return sameIx(a.A, b.A) && sameIx(a.B, b.B)
}

// newWindowKernel returns the window executor of k, or false when k has
// none of its forms.
func newWindowKernel(p *kir.Program, k *kir.Kernel) (*windowKernel, bool) {
	nout := len(k.Shape)
	if nout == 0 || p.Buffers[k.Out].DType != tile.Float32 || k.Shape[nout-1] == 0 || k.Shape[nout-1] > chunk {
		return nil, false
	}
	ranges := k.VarRanges()
	for _, r := range ranges {
		if r.Hi < r.Lo {
			return nil, false
		}
	}
	ch := nout - 1
	w := &windowKernel{out: k.Out, ch: k.Shape[ch], outer: k.Shape[:ch], rows: 1, redPts: 1,
		workers: k.Schedule.Workers}
	for _, d := range w.outer {
		w.rows *= d
	}
	for _, l := range k.Reduce {
		w.red = append(w.red, l.Hi-l.Lo+1)
		w.redPts *= l.Hi - l.Lo + 1
	}
	// Where conditions: affine ones, and for windowFirst one on V ≠ O.
	var valueCond *kir.Expr
	var affine []kir.Cond
	for _, c := range k.Where {
		if c.X.Op == kir.IxValue {
			if valueCond != nil || c.Bound != 1 {
				return nil, false
			}
			valueCond = c.X.E
			continue
		}
		seen := map[int]bool{}
		if !ixVars(c.X, seen) || seen[ch] {
			return nil, false
		}
		s, ok := separate(c.X, ranges)
		if !ok {
			return nil, false
		}
		w.conds = append(w.conds, rowCond{s, c.Bound})
		affine = append(affine, c)
	}
	// Guards that repeat the affine conditions (a padded window's value
	// wrapped in a select on its index range) are gone from the body and
	// the value condition (see rewriteKernel); the epilogue's go here.
	im := implier{ranges: ranges, where: affine}
	body := k.Body
	var ok bool
	switch {
	case k.Epilogue != nil:
		if len(k.Reduce) > 0 && k.Agg == tile.Sum && valueCond == nil {
			w.form = windowRouteSum
			ok = w.matchEpilogue(p, im.simplify(k.Epilogue), ranges) && w.matchRoute(p, body, ranges)
		}
	case len(k.Reduce) > 0 && (k.Agg == tile.Max || k.Agg == tile.Min) && valueCond == nil:
		w.form, w.agg = windowReduce, k.Agg
		w.src, w.relu, ok = windowValue(p, body, ranges, ch, w.ch)
	case len(k.Reduce) > 0 && k.Agg == tile.Min && valueCond != nil:
		w.form = windowFirst
		ok = w.matchFirst(p, k, body, valueCond, ranges)
	case len(k.Reduce) > 0 && k.Agg == tile.Sum && valueCond == nil:
		w.form = windowRouteSum
		ok = w.matchRoute(p, body, ranges)
	case len(k.Reduce) == 0 && valueCond == nil && len(w.conds) == 0:
		w.form = windowRoute
		ok = w.matchRoute(p, body, ranges)
	}
	if !ok {
		return nil, false
	}
	w.levels = make([][]rowCond, len(w.red)+1)
	for _, c := range w.conds {
		lv := 0
		for l := range w.red {
			if c.x.uses(nout + l) {
				lv = l + 1
			}
		}
		w.levels[lv] = append(w.levels[lv], c)
	}
	// The accesses read only where the conditions hold need not check
	// what the conditions already do.
	for _, a := range []*rowAccess{w.src, w.pos, w.first, w.cot, w.act, w.mul} {
		if a != nil {
			a.checks = w.uncheckedBy(a.checks)
		}
	}
	w.perTask = max(1, grain/(w.ch*w.redPts*4))
	return w, true
}

// matchFirst recognises windowFirst: cond is V ≠ O && (V == V || O == O)
// (either way round) and the body is one element of a position buffer.
func (w *windowKernel) matchFirst(p *kir.Program, k *kir.Kernel, body, cond *kir.Expr, ranges []kir.Range) bool {
	v0, o0, ok := nanDiffers(cond)
	if !ok {
		return false
	}
	ch := len(k.Shape) - 1
	for _, sw := range [2]bool{false, true} {
		v, o := v0, o0
		if sw {
			v, o = o, v
		}
		src, relu, ok := windowValue(p, v, ranges, ch, w.ch)
		if !ok {
			continue
		}
		ext, ok := newRowAccess(p, o, ranges, ch, w.ch)
		if !ok || !ext.row || !w.outerOnly(o) {
			continue
		}
		pos, ok := newRowAccess(p, body, ranges, ch, w.ch)
		if !ok || pos.row {
			return false
		}
		w.src, w.relu, w.ext, w.pos = src, relu, ext, pos
		w.posFinite = finiteNonzero(pos.fill) || pos.skip
		if b := p.Buffers[pos.buf]; b.Kind != kir.Constant {
			w.posFinite = false
		} else {
			for _, v := range b.Init {
				w.posFinite = w.posFinite && finiteNonzero(float32(v))
			}
		}
		return true
	}
	return false
}

// outerOnly reports whether load e uses no reduction variable.
func (w *windowKernel) outerOnly(e *kir.Expr) bool {
	seen := map[int]bool{}
	for _, x := range e.Index {
		if !ixVars(x, seen) {
			return false
		}
	}
	for v := range seen {
		if v > len(w.outer) {
			return false
		}
	}
	return true
}

// matchEpilogue recognises windowRouteSum's epilogue select(A' ≤ 0, 0, acc),
// A' a row load of the output variables.
func (w *windowKernel) matchEpilogue(p *kir.Program, e *kir.Expr, ranges []kir.Range) bool {
	a, x, ok := reluGuard(e)
	if !ok || x.Op != kir.Acc || x.DType != tile.Float32 || !w.outerOnly(a) {
		return false
	}
	act, ok := newRowAccess(p, a, ranges, len(w.outer), w.ch)
	if !ok || !act.row {
		return false
	}
	w.epiAct = act
	return true
}

// matchRoute recognises the body of windowRoute and windowRouteSum.
func (w *windowKernel) matchRoute(p *kir.Program, body *kir.Expr, ranges []kir.Range) bool {
	ch := len(w.outer)
	sel := func(e *kir.Expr) (c, a *kir.Expr, ok bool) {
		if e.Op != kir.Apply || e.Fn != tile.Select || len(e.Args) != 3 || !isPosZero(e.Args[2]) {
			return nil, nil, false
		}
		return e.Args[0], e.Args[1], true
	}
	if a, x, ok := reluGuard(body); ok {
		act, ok := newRowAccess(p, a, ranges, ch, w.ch)
		if !ok || !act.row {
			return false
		}
		w.act, body = act, x
	}
	c, inner, ok := sel(body)
	if !ok {
		return false
	}
	if c.Op != kir.Apply || c.Fn != tile.Eq || len(c.Args) != 2 {
		return false
	}
	cot, ok := w.matchCot(p, inner, ranges)
	if !ok {
		return false
	}
	for _, sw := range [2]bool{false, true} {
		s, f := c.Args[0], c.Args[1]
		if sw {
			s, f = f, s
		}
		pos, ok1 := newRowAccess(p, s, ranges, ch, w.ch)
		first, ok2 := newRowAccess(p, f, ranges, ch, w.ch)
		if ok1 && ok2 && !pos.row && first.row {
			w.pos, w.first, w.cot = pos, first, cot
			return true
		}
	}
	return false
}

// matchCot recognises windowRoute's G, a row load C or a product C · B of
// two, and returns C, setting B when G has it.
func (w *windowKernel) matchCot(p *kir.Program, g *kir.Expr, ranges []kir.Range) (*rowAccess, bool) {
	ch := len(w.outer)
	w.mul = nil
	if g.Op == kir.Apply && g.Fn == tile.Mul && len(g.Args) == 2 && g.DType == tile.Float32 {
		c, ok1 := newRowAccess(p, g.Args[0], ranges, ch, w.ch)
		b, ok2 := newRowAccess(p, g.Args[1], ranges, ch, w.ch)
		if !ok1 || !ok2 || !c.row || !b.row {
			return nil, false
		}
		w.mul = b
		return c, true
	}
	cot, ok := newRowAccess(p, g, ranges, ch, w.ch)
	if !ok || !cot.row {
		return nil, false
	}
	return cot, true
}

func (w *windowKernel) run(x *Executable) {
	w.x = x
	x.pool.run(w, (w.rows+w.perTask-1)/w.perTask, w.workers)
	w.x = nil
}

func (w *windowKernel) runTask(wk, t int) {
	fr := w.x.frame(wk)
	// Positions of the output variables, the channel's (0, read by no
	// table), then the reduction variables'.
	pos := fr.vars[:len(w.outer)+1+len(w.red)]
	pos[len(w.outer)] = 0
	r0, r1 := t*w.perTask, min(w.rows, (t+1)*w.perTask)
	r := r0
	for l := len(w.outer) - 1; l >= 0; l-- {
		pos[l] = r % w.outer[l]
		r /= w.outer[l]
	}
	out := fr.bufs[w.out].f32
	for r := r0; r < r1; r++ {
		dst := out[r*w.ch : (r+1)*w.ch]
		switch w.form {
		case windowReduce:
			w.reduceRow(fr, pos, dst)
		case windowFirst:
			w.firstRow(fr, pos, dst)
		case windowRoute:
			w.routeRow(fr, pos, dst)
		case windowRouteSum:
			w.routeSumRow(fr, pos, dst)
		}
		for l := len(w.outer) - 1; l >= 0; l-- {
			pos[l]++
			if pos[l] < w.outer[l] {
				break
			}
			pos[l] = 0
		}
	}
}

// uncheckedBy returns the range checks that no affine Where condition
// implies: a condition 0 ≤ x < b implies a check 0 ≤ x < b' of the same x
// with b ≤ b'.
func (w *windowKernel) uncheckedBy(checks []rowCheck) []rowCheck {
	var out []rowCheck
	for _, ck := range checks {
		implied := false
		for _, c := range w.conds {
			implied = implied || (c.bound <= ck.bound && sameSep(&c.x, &ck.x))
		}
		if !implied {
			out = append(out, ck)
		}
	}
	return out
}

// sameSep reports whether a and b have the same constant and tables.
func sameSep(a, b *sepForm) bool {
	if a.c != b.c || len(a.tabs) != len(b.tabs) || len(a.pairs) != len(b.pairs) {
		return false
	}
	for _, t := range a.tabs {
		found := false
		for _, u := range b.tabs {
			found = found || (t.v == u.v && slices.Equal(t.t, u.t))
		}
		if !found {
			return false
		}
	}
	for _, p := range a.pairs {
		found := false
		for _, q := range b.pairs {
			found = found || (p.v == q.v && p.w == q.w && slices.Equal(p.t, q.t))
		}
		if !found {
			return false
		}
	}
	return true
}

// firstRed sets the reduction positions to the first point, in loop order,
// where the affine Where conditions hold, and reports false when there is
// none.
func (w *windowKernel) firstRed(pos []int) bool {
	clear(pos[len(w.outer)+1:])
	return len(w.conds) == 0 || w.levelHolds(0, pos) && w.seek(pos, 0)
}

// nextRed moves the reduction positions to the next point, innermost
// fastest, where the affine Where conditions hold, and reports false after
// the last one.
func (w *windowKernel) nextRed(pos []int) bool {
	base := len(w.outer) + 1
	l := len(w.red) - 1
	for {
		pos[base+l]++
		if pos[base+l] < w.red[l] {
			break
		}
		pos[base+l] = 0
		if l--; l < 0 {
			return false
		}
	}
	return len(w.conds) == 0 || w.seek(pos, l)
}

// seek moves the reduction positions to the first point from pos on where
// every condition holds, and reports false when there is none. On entry the
// conditions of the levels before reduction loop l hold and the positions
// of the loops after l are 0. A level's conditions failing skips the whole
// range of the loops inside it.
func (w *windowKernel) seek(pos []int, l int) bool {
	base := len(w.outer) + 1
	for l < len(w.red) {
		if w.levelHolds(l+1, pos) {
			l++
			continue
		}
		for {
			pos[base+l]++
			if pos[base+l] < w.red[l] {
				break
			}
			pos[base+l] = 0
			if l--; l < 0 {
				return false
			}
		}
	}
	return true
}

// levelHolds reports whether the conditions of level i (see levels) hold at
// pos.
func (w *windowKernel) levelHolds(i int, pos []int) bool {
	for j := range w.levels[i] {
		c := &w.levels[i][j]
		if x := c.x.at(pos); x < 0 || x >= c.bound {
			return false
		}
	}
	return true
}

// rowOf returns the row of access a at pos, or nil when the point is
// skipped; an out-of-range Fill access reads a row of its fill value.
func (w *windowKernel) rowOf(fr *frame, a *rowAccess, pos []int) []float32 {
	off := a.at(pos)
	if off < 0 {
		return a.fillRow // nil for a Skip access
	}
	return fr.bufs[a.buf].f32[off : off+w.ch : off+w.ch]
}

// elemOf returns the element of access a at pos; ok is false when the point
// is skipped.
func (w *windowKernel) elemOf(fr *frame, a *rowAccess, pos []int) (v float32, ok bool) {
	off := a.at(pos)
	if off < 0 {
		return a.fill, !a.skip
	}
	return fr.bufs[a.buf].f32[off], true
}

func (w *windowKernel) reduceRow(fr *frame, pos []int, dst []float32) {
	has := false
	for ok := w.firstRed(pos); ok; ok = w.nextRed(pos) {
		if s := w.rowOf(fr, w.src, pos); s != nil {
			switch {
			case !has && w.relu:
				n := simdRelu(dst, s)
				reluRow(dst[n:], s[n:])
			case !has:
				copy(dst, s)
			case w.relu:
				n := simdReluAgg(w.agg, dst, s)
				aggRow(w.agg, dst[n:], s[n:], true)
			default:
				n := simdAggregateF32(w.agg, dst, s)
				aggRow(w.agg, dst[n:], s[n:], false)
			}
			has = true
		}
	}
	if !has {
		clear(dst)
	}
}

// reluRow sets dst to the ReLU of s: 0 where s ≤ 0, s elsewhere (NaN
// included).
func reluRow(dst, s []float32) {
	s = s[:len(dst)]
	for i, x := range s {
		if x <= 0 {
			x = 0
		}
		dst[i] = x
	}
}

// aggRow aggregates s (or its ReLU) into dst by maximum or minimum, a NaN
// on either side giving NaN.
func aggRow(a tile.Agg, dst, s []float32, relu bool) {
	s = s[:len(dst)]
	for i, x := range s {
		if relu && x <= 0 {
			x = 0
		}
		if a == tile.Max {
			dst[i] = max(dst[i], x)
		} else {
			dst[i] = min(dst[i], x)
		}
	}
}

func (w *windowKernel) firstRow(fr *frame, pos []int, dst []float32) {
	base := len(w.outer) + 1
	clear(pos[base:])
	ext := w.rowOf(fr, w.ext, pos)
	if ext == nil {
		clear(dst)
		return
	}
	if w.posFinite {
		// Positions are finite and nonzero: +Inf marks the lanes that no
		// point attains.
		inf := float32(math.Inf(1))
		for i := range dst {
			dst[i] = inf
		}
	} else {
		clear(fr.has[:w.ch])
	}
	for more := w.firstRed(pos); more; more = w.nextRed(pos) {
		p, ok := w.elemOf(fr, w.pos, pos)
		var s []float32
		if ok {
			s = w.rowOf(fr, w.src, pos)
		}
		switch {
		case s == nil:
		case w.posFinite:
			n := simdFirst(dst, s, ext, p, w.relu)
			firstRowInf(dst[n:], s[n:], ext[n:], p, w.relu)
		default:
			firstRowAt(dst, fr.has[:w.ch], s, ext, p, w.relu)
		}
	}
	if w.posFinite {
		n := simdInfToZero(dst)
		for i, x := range dst[n:] {
			if math.IsInf(float64(x), 1) {
				dst[n+i] = 0
			}
		}
		return
	}
	for i, h := range fr.has[:w.ch] {
		if !h {
			dst[i] = 0
		}
	}
}

// firstRowInf is firstRowAt for positions that are finite and nonzero,
// with +Inf in the lanes no point has attained yet.
func firstRowInf(dst, s, ext []float32, p float32, relu bool) {
	s, ext = s[:len(dst)], ext[:len(dst)]
	for i, x := range s {
		if relu && x <= 0 {
			x = 0
		}
		if attains(x, ext[i]) {
			dst[i] = min(dst[i], p)
		}
	}
}

// attains reports whether window value x attains the extremum e: they are
// equal or both NaN (CombEq's equality).
func attains(x, e float32) bool { return x == e || x != x && e != e }

// firstRowAt aggregates position p by minimum into the lanes where the
// window value attains the extremum.
func firstRowAt(dst []float32, has []bool, s, ext []float32, p float32, relu bool) {
	s, ext, has = s[:len(dst)], ext[:len(dst)], has[:len(dst)]
	for i, x := range s {
		if relu && x <= 0 {
			x = 0
		}
		if !attains(x, ext[i]) {
			continue
		}
		if has[i] {
			dst[i] = min(dst[i], p)
		} else {
			dst[i], has[i] = p, true
		}
	}
}

// routeRow sets dst to the routed row at pos and reports true, or clears
// dst and reports false when the point is skipped.
func (w *windowKernel) routeRow(fr *frame, pos []int, dst []float32) bool {
	p, ok := w.elemOf(fr, w.pos, pos)
	if !ok {
		clear(dst)
		return false
	}
	var act []float32
	if w.act != nil {
		if act = w.rowOf(fr, w.act, pos); act == nil {
			clear(dst)
			return false
		}
	}
	first := w.rowOf(fr, w.first, pos)
	cot := w.rowOf(fr, w.cot, pos)
	if first == nil || cot == nil {
		clear(dst)
		return false
	}
	if w.mul != nil {
		// G = C · B, computed in dst and routed in place.
		b := w.rowOf(fr, w.mul, pos)
		if b == nil {
			clear(dst)
			return false
		}
		n := simdBinaryF(tile.Mul, dst, cot, b)
		binaryF(tile.Mul, dst[n:], cot[n:], b[n:])
		cot = dst
	}
	n := simdRoute(dst, act, first, cot, p)
	if act != nil {
		act = act[n:]
	}
	routeRowAt(dst[n:], act, first[n:], cot[n:], p)
	return true
}

// routeSumRow sums the routed rows of the reduction points in float64, in
// the reduction's order, the first one copied (so that a single -0 stays
// -0), and rounds the sum to float32 once, as the generic executor and
// kir.Interpret aggregate; the epilogue, when present, then zeroes the
// lanes where A' ≤ 0.
func (w *windowKernel) routeSumRow(fr *frame, pos []int, dst []float32) {
	acc, tmp := fr.acc[:w.ch], fr.tmp32[:w.ch]
	has := false
	for more := w.firstRed(pos); more; more = w.nextRed(pos) {
		if !w.routeRow(fr, pos, tmp) {
			continue
		}
		if !has {
			// -0 is the identity of addition, +0 + -0 being +0.
			negZero := math.Copysign(0, -1)
			for i := range acc {
				acc[i] = negZero
			}
			has = true
		}
		n := simdAggregateF(tile.Sum, acc, tmp)
		for i, x := range tmp[n:] {
			acc[n+i] += float64(x)
		}
	}
	if !has {
		clear(dst)
		return
	}
	if w.epiAct == nil {
		for i, x := range acc {
			dst[i] = float32(x)
		}
		return
	}
	act := w.rowOf(fr, w.epiAct, pos)
	if act == nil {
		clear(dst)
		return
	}
	act = act[:len(dst)]
	for i, x := range acc {
		v := float32(x)
		if act[i] <= 0 {
			v = 0
		}
		dst[i] = v
	}
}

// routeRowAt sets dst to cot where first equals p (and act is not ≤ 0, when
// given), else to 0.
func routeRowAt(dst, act, first, cot []float32, p float32) {
	first, cot = first[:len(dst)], cot[:len(dst)]
	if act == nil {
		for i, f := range first {
			v := cot[i]
			if f != p {
				v = 0
			}
			dst[i] = v
		}
		return
	}
	act = act[:len(dst)]
	for i, f := range first {
		v := cot[i]
		if f != p || act[i] <= 0 {
			v = 0
		}
		dst[i] = v
	}
}
