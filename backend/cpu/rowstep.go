package cpu

// A chunk of several rows evaluates every load once per row. Rows are
// consecutive points of the loops before the axis, so from one row to the
// next usually only the loop just outside the axis moves on by one, and a
// load's offset and checked indices change by a fixed coefficient plus the
// change of the tabulated terms of that loop. rowStep computes them so,
// instead of evaluating every form afresh for every row.

// rowStep says how an axisLin changes when loop moves on by one.
type rowStep struct {
	loop int // -1: evaluate afresh
	coef int
	tabs []*tabTerm // tabulated terms of loop alone
}

// newRowStep returns the step of l along loop (none when loop < 0).
func newRowStep(l *axisLin, loop int) rowStep {
	if loop < 0 || len(l.extra) > 0 {
		return rowStep{loop: -1}
	}
	s := rowStep{loop: loop}
	for _, t := range l.terms {
		if t.loop == loop {
			s.coef += t.coef
		}
	}
	for i := range l.tabs {
		t := &l.tabs[i]
		switch {
		case t.loop2 == loop || t.loop == loop && t.loop2 >= 0:
			return rowStep{loop: -1}
		case t.loop == loop:
			s.tabs = append(s.tabs, t)
		}
	}
	return s
}

// next returns l's base at row cur from its base b at row prev, the
// previous row.
func (s *rowStep) next(l *axisLin, b int, prev, cur []int) int {
	if s.loop < 0 || cur[s.loop] != prev[s.loop]+1 {
		return l.base(cur)
	}
	b += s.coef
	for _, t := range s.tabs {
		b += t.t[cur[s.loop]] - t.t[prev[s.loop]]
	}
	return b
}

// maxRowDims is the most checked dimensions whose row bases rowRanges
// carries from row to row; loads with more are evaluated afresh.
const maxRowDims = 8

// rowRanges walks the rows of a chunk for a checked or direct load: for
// each row r in order, call next(r) to get the offset of lane 0 and the
// lanes [lo, hi) in range of the row's n lanes from s0.
type rowRanges struct {
	lp    *loadPlan
	fr    *frame
	s0, n int
	incr  bool
	// fs and ds are the steps from row to row: along the loop outside the
	// axis for rows of output points, along the innermost loop for rows of
	// reduction points.
	fs   *rowStep
	ds   []rowStep
	off  int
	dims [maxRowDims]int
}

func newRowRanges(fr *frame, lp *loadPlan, s0, n int) rowRanges {
	fs, ds := &lp.flatStep, lp.dimSteps
	if !fr.outerRows {
		fs, ds = &lp.redStep, lp.redDimSteps
	}
	return rowRanges{lp: lp, fr: fr, s0: s0, n: n, fs: fs, ds: ds, incr: len(lp.dims) <= maxRowDims && fs.loop >= 0 && !disableRowStep}
}

// disableRowStep evaluates every row afresh (tests compare both ways).
var disableRowStep = false

func (w *rowRanges) next(r int) (off, lo, hi int) {
	lp := w.lp
	cur := w.fr.rowVars[r]
	if !w.incr {
		return loadRange(cur, lp, w.s0, w.n)
	}
	if r == 0 {
		w.off = lp.flat.base(cur)
		for d := range lp.dims {
			w.dims[d] = lp.dims[d].base(cur)
		}
	} else {
		prev := w.fr.rowVars[r-1]
		w.off = w.fs.next(&lp.flat, w.off, prev, cur)
		for d := range lp.dims {
			w.dims[d] = w.ds[d].next(&lp.dims[d], w.dims[d], prev, cur)
		}
	}
	lo, hi = 0, w.n
	for d := range lp.dims {
		l := &lp.dims[d]
		lo, hi = interval(w.dims[d]+l.stride*w.s0, l.stride, lp.bounds[d], lo, hi)
	}
	return w.off + lp.flat.stride*w.s0, lo, hi
}
