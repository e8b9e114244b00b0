package cpu

import (
	"math"

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
//     a load I[…, c] or its ReLU select(I > 0, I, 0) (the forward pass);
//   - windowFirst: F[o] = Min over the r where V(o, r) == O[o] of Pos[r],
//     written as the condition 0 ≤ int(V ≠ O) < 1 (the first window position
//     that attains the extremum, see grad's extremeRule);
//   - windowRoute: D[x] = select(A[x] > 0, select(Pos[…] == F[…], G, 0), 0),
//     with or without the outer select (the extremum's cotangent routed to
//     that position), G being a row load C[…] or its dropout
//     select(M[…], C[…], 0) · s, with M a boolean row and s a finite
//     constant.
//
// Results equal the generic executor's (and kir.Interpret's) exactly: the
// aggregations are exact in float32 and an output point with no
// contribution, or with a skipped load, gets 0. Work is split in blocks of
// rows whose boundaries depend only on the kernel.
type windowKernel struct {
	form   windowForm
	agg    tile.Agg // windowReduce: Max or Min
	out    int
	ch     int   // channel extent
	outer  []int // extents of the output variables before the channel
	red    []int // extents of the reduction variables
	rows   int   // points of the outer output variables
	redPts int
	relu   bool // V is select(I > 0, I, 0)
	// posFinite: every value Pos can give is finite and nonzero (a
	// constant position buffer), so windowFirst can mark lanes without a
	// contribution with +Inf.
	posFinite bool
	src       *rowAccess // I (windowReduce, windowFirst)
	ext       *rowAccess // O (windowFirst)
	pos       *rowAccess // Pos, one element (windowFirst, windowRoute)
	act       *rowAccess // A (windowRoute); nil without the outer select
	first     *rowAccess // F (windowRoute)
	cot       *rowAccess // C (windowRoute)
	mask      *rowAccess // M (windowRoute), boolean; nil without dropout
	scale     float32    // s (windowRoute with dropout)
	conds     []rowCond  // affine Where conditions
	perTask   int        // rows per task
	workers   int
	x         *Executable
}

type windowForm uint8

const (
	windowReduce windowForm = iota
	windowFirst
	windowRoute
)

// sepForm is an integer index expression written as a constant plus one
// tabulated function per loop variable: the value at loop positions pos
// (variable v at its range's Lo plus pos[v]) is c + Σ t[pos[v]].
type sepForm struct {
	c    int
	tabs []varTab
}

type varTab struct {
	v int
	t []int
}

func (s *sepForm) at(pos []int) int {
	x := s.c
	for i := range s.tabs {
		x += s.tabs[i].t[pos[s.tabs[i].v]]
	}
	return x
}

// bounds returns the least and greatest value of s over the loop ranges.
func (s *sepForm) bounds() (lo, hi int) {
	lo, hi = s.c, s.c
	for _, t := range s.tabs {
		mn, mx := t.t[0], t.t[0]
		for _, x := range t.t {
			mn, mx = min(mn, x), max(mx, x)
		}
		lo, hi = lo+mn, hi+mx
	}
	return lo, hi
}

// add returns s + k·o, merging the tables of one variable.
func (s sepForm) add(o sepForm, k int) sepForm {
	out := sepForm{c: s.c + k*o.c}
	for _, t := range s.tabs {
		out.tabs = append(out.tabs, varTab{t.v, append([]int(nil), t.t...)})
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
// when a floor division or modulo mixes variables or x uses a loaded value.
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
	return sepForm{}, false
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
	// fillRow (float32) or fillBools (bool) is a row of fill values, for
	// out-of-range Fill rows.
	fillRow   []float32
	fillBools []bool
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
// float32 load of that form. ch is the channel variable, chExt its extent.
func newRowAccess(p *kir.Program, e *kir.Expr, ranges []kir.Range, ch, chExt int) (*rowAccess, bool) {
	return typedRowAccess(p, e, ranges, ch, chExt, tile.Float32)
}

// typedRowAccess is newRowAccess for loads of dtype dt (float32 or bool). A
// row's last index is the channel variable plus a term without it that keeps
// the whole row in range (a channel vector inside a flattened dimension).
func typedRowAccess(p *kir.Program, e *kir.Expr, ranges []kir.Range, ch, chExt int, dt tile.DType) (*rowAccess, bool) {
	if e.Op != kir.Load || e.DType != dt || p.Buffers[e.Buf].DType != dt {
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
			if !a.skip && dt == tile.Float32 {
				a.fillRow = make([]float32, chExt)
				for i := range a.fillRow {
					a.fillRow[i] = a.fill
				}
			}
			if !a.skip && dt == tile.Bool {
				a.fillBools = make([]bool, chExt)
				for i := range a.fillBools {
					a.fillBools[i] = a.fill != 0
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
	rest := sepForm{c: s.c}
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

// windowValue recognises V: a row load, or select(L > 0, L, 0) of one.
func windowValue(p *kir.Program, e *kir.Expr, ranges []kir.Range, ch, chExt int) (src *rowAccess, relu, ok bool) {
	if e.Op == kir.Apply && e.Fn == tile.Select && len(e.Args) == 3 {
		c, l, z := e.Args[0], e.Args[1], e.Args[2]
		if !isZero(z) || c.Op != kir.Apply || c.Fn != tile.Gt || len(c.Args) != 2 ||
			!isZero(c.Args[1]) || !sameLoad(c.Args[0], l) {
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
	if nout == 0 || k.Epilogue != nil || p.Buffers[k.Out].DType != tile.Float32 ||
		!p.Buffers[k.Out].Shape.Equal(k.Shape) || k.Shape[nout-1] == 0 || k.Shape[nout-1] > chunk {
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
	}
	var ok bool
	switch {
	case len(k.Reduce) > 0 && (k.Agg == tile.Max || k.Agg == tile.Min) && valueCond == nil:
		w.form, w.agg = windowReduce, k.Agg
		w.src, w.relu, ok = windowValue(p, k.Body, ranges, ch, w.ch)
	case len(k.Reduce) > 0 && k.Agg == tile.Min && valueCond != nil:
		w.form = windowFirst
		ok = w.matchFirst(p, k, valueCond, ranges)
	case len(k.Reduce) == 0 && valueCond == nil && len(w.conds) == 0:
		w.form = windowRoute
		ok = w.matchRoute(p, k.Body, ranges)
	}
	if !ok {
		return nil, false
	}
	w.perTask = max(1, grain/(w.ch*w.redPts*4))
	return w, true
}

// matchFirst recognises windowFirst: cond is V ≠ O (either way round) and
// the body is one element of a position buffer.
func (w *windowKernel) matchFirst(p *kir.Program, k *kir.Kernel, cond *kir.Expr, ranges []kir.Range) bool {
	if cond.Op != kir.Apply || cond.Fn != tile.Ne || len(cond.Args) != 2 {
		return false
	}
	ch := len(k.Shape) - 1
	for _, sw := range [2]bool{false, true} {
		v, o := cond.Args[0], cond.Args[1]
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
		pos, ok := newRowAccess(p, k.Body, ranges, ch, w.ch)
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

// matchRoute recognises windowRoute's body.
func (w *windowKernel) matchRoute(p *kir.Program, body *kir.Expr, ranges []kir.Range) bool {
	ch := len(w.outer)
	sel := func(e *kir.Expr) (c, a *kir.Expr, ok bool) {
		if e.Op != kir.Apply || e.Fn != tile.Select || len(e.Args) != 3 || !isZero(e.Args[2]) {
			return nil, nil, false
		}
		return e.Args[0], e.Args[1], true
	}
	c, inner, ok := sel(body)
	if !ok {
		return false
	}
	if c.Op == kir.Apply && c.Fn == tile.Gt && len(c.Args) == 2 && isZero(c.Args[1]) {
		act, ok := newRowAccess(p, c.Args[0], ranges, ch, w.ch)
		if !ok || !act.row {
			return false
		}
		w.act = act
		if c, inner, ok = sel(inner); !ok {
			return false
		}
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

// matchCot recognises windowRoute's G and returns its row load C, setting
// the dropout's mask and scale when G has them.
func (w *windowKernel) matchCot(p *kir.Program, g *kir.Expr, ranges []kir.Range) (*rowAccess, bool) {
	ch := len(w.outer)
	w.mask, w.scale = nil, 1
	if g.Op == kir.Apply && g.Fn == tile.Mul && len(g.Args) == 2 && g.DType == tile.Float32 {
		sel, k := g.Args[0], g.Args[1]
		if sel.Op == kir.Const {
			sel, k = k, sel
		}
		s := float32(k.Value)
		if k.Op != kir.Const || k.DType != tile.Float32 || float64(s) != k.Value ||
			math.IsInf(k.Value, 0) || math.IsNaN(k.Value) {
			return nil, false
		}
		if sel.Op != kir.Apply || sel.Fn != tile.Select || len(sel.Args) != 3 || !isZero(sel.Args[2]) {
			return nil, false
		}
		mask, ok := typedRowAccess(p, sel.Args[0], ranges, ch, w.ch, tile.Bool)
		if !ok || !mask.row {
			return nil, false
		}
		w.mask, w.scale, g = mask, s, sel.Args[1]
	}
	cot, ok := newRowAccess(p, g, ranges, ch, w.ch)
	if !ok || !cot.row {
		w.mask, w.scale = nil, 1
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
	fr := w.x.frames[wk]
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

// nextRed advances the reduction positions, innermost fastest, and reports
// false after the last point.
func (w *windowKernel) nextRed(pos []int) bool {
	base := len(w.outer) + 1
	for l := len(w.red) - 1; l >= 0; l-- {
		pos[base+l]++
		if pos[base+l] < w.red[l] {
			return true
		}
		pos[base+l] = 0
	}
	return false
}

// condsHold reports whether the affine Where conditions hold at pos.
func (w *windowKernel) condsHold(pos []int) bool {
	for i := range w.conds {
		c := &w.conds[i]
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
	base := len(w.outer) + 1
	clear(pos[base:])
	has := false
	for {
		if w.condsHold(pos) {
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
		if !w.nextRed(pos) {
			break
		}
	}
	if !has {
		clear(dst)
	}
}

func reluRow(dst, s []float32) {
	s = s[:len(dst)]
	for i, x := range s {
		if !(x > 0) {
			x = 0
		}
		dst[i] = x
	}
}

// aggRow aggregates s (or its ReLU) into dst by maximum or minimum.
func aggRow(a tile.Agg, dst, s []float32, relu bool) {
	s = s[:len(dst)]
	for i, x := range s {
		if relu && !(x > 0) {
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
	for {
		if w.condsHold(pos) {
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
		if !w.nextRed(pos) {
			break
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
		if relu && !(x > 0) {
			x = 0
		}
		if x == ext[i] {
			dst[i] = min(dst[i], p)
		}
	}
}

// firstRowAt aggregates position p by minimum into the lanes where the
// window value equals the extremum.
func firstRowAt(dst []float32, has []bool, s, ext []float32, p float32, relu bool) {
	s, ext, has = s[:len(dst)], ext[:len(dst)], has[:len(dst)]
	for i, x := range s {
		if relu && !(x > 0) {
			x = 0
		}
		if x != ext[i] {
			continue
		}
		if has[i] {
			dst[i] = min(dst[i], p)
		} else {
			dst[i], has[i] = p, true
		}
	}
}

func (w *windowKernel) routeRow(fr *frame, pos []int, dst []float32) {
	p, ok := w.elemOf(fr, w.pos, pos)
	if !ok {
		clear(dst)
		return
	}
	var act []float32
	if w.act != nil {
		if act = w.rowOf(fr, w.act, pos); act == nil {
			clear(dst)
			return
		}
	}
	first := w.rowOf(fr, w.first, pos)
	cot := w.rowOf(fr, w.cot, pos)
	if first == nil || cot == nil {
		clear(dst)
		return
	}
	n := simdRoute(dst, act, first, cot, p)
	if act != nil {
		act = act[n:]
	}
	routeRowAt(dst[n:], act, first[n:], cot[n:], p)
	if w.mask != nil {
		mask := w.boolRowOf(fr, w.mask, pos)
		if mask == nil {
			clear(dst)
			return
		}
		dropRow(dst, mask, w.scale)
	}
}

// boolRowOf is rowOf for a boolean access.
func (w *windowKernel) boolRowOf(fr *frame, a *rowAccess, pos []int) []bool {
	off := a.at(pos)
	if off < 0 {
		return a.fillBools // nil for a Skip access
	}
	return fr.bufs[a.buf].b[off : off+w.ch : off+w.ch]
}

// dropRow applies a dropout to the routed row: dst[i]·s where mask[i] holds,
// else 0. It equals routing select(mask, C, 0)·s when s is finite: a lane
// the route zeroes stays 0 either way.
func dropRow(dst []float32, mask []bool, s float32) {
	mask = mask[:len(dst)]
	for i, m := range mask {
		// A bit mask rather than a branch: dropout masks are random.
		keep := uint32(0)
		if m {
			keep = ^uint32(0)
		}
		dst[i] = math.Float32frombits(math.Float32bits(dst[i]*s) & keep)
	}
}

// routeRowAt sets dst to cot where first equals p (and act is positive, when
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
		if f != p || !(act[i] > 0) {
			v = 0
		}
		dst[i] = v
	}
}
