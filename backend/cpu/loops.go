package cpu

import (
	"math"
	"unsafe"

	"github.com/tartanml/tartan/kir"
	"github.com/tartanml/tartan/tile"
)

// loopsKernel executes any kernel as a loop nest over chunks.
//
// The output is walked row by row along its innermost loop (the row axis),
// in chunks of up to chunk points; groups of rows and the chunks are the
// parallel work items. For each item the reduction loops are visited and
// the body evaluated on whole chunks, in one of three shapes, whichever
// gives the longest chunks:
//
//   - rows of output points along the row axis (several short rows per
//     chunk), aggregated lane by lane at each reduction point;
//   - rows of reduction points along the row axis (a column sum over a long
//     reduction, such as a bias gradient), aggregated row after row;
//   - runs along the innermost reduction loop (redVec), when that is longer
//     (a row of ten outputs with a reduction over 256), the body's lanes
//     being aggregated into one output point at a time.
//
// Reduction loops run over ranges clipped by the kernel's affine guards
// (its affine Where conditions and the in-range conditions of its Skip
// loads, see clip), which the body then no longer checks; a chunk's rows
// whose clipped ranges differ are reduced separately. Guards on the
// body's vector axis remain intervals of lanes, others per-lane masks.
//
// A sum whose body is one float32 load or the product of two runs as a
// dot plan instead (dot.go): per row, the loads' offsets at the reduction
// points, then the points over strips of lanes held in registers.
//
// Sums are accumulated in float64, maxima and minima of float32 lanes in
// float32. When the output is small and the reduction large, the outermost
// reduction loop is split into parts computed as separate work items and
// combined in a fixed order, so results never depend on the number of
// workers.
type loopsKernel struct {
	s       *space
	k       *kir.Kernel
	out     int
	agg     tile.Agg
	redVec  bool
	body    *prog
	dot     *dotPlan // nil: the body is evaluated on chunks
	epi     *prog    // nil: the output is the aggregate
	outLin  axisLin
	rowAxis int
	rowLen  int
	rows    int // points of the outer output loops
	cpr     int // chunks per row
	// rowsPer is the number of rows one work item evaluates together when
	// rows are shorter than a chunk.
	rowsPer int
	// redRows > 1: a chunk's rows are that many consecutive points of the
	// innermost reduction loop instead (a column sum), aggregated row by
	// row.
	redRows int
	nred    int
	// clips[l-nout] is the clipped range of reduction loop l (nil: its
	// whole extent), which absorbs the kernel's affine guards; clipped
	// reports that some loop has one. rowForms are the parts of the
	// clips' bounds that vary between the rows of a chunk, of clips whose
	// bounds also read reduction loops: rows that differ in one are
	// reduced separately. rowClips are the clips whose bounds vary between
	// rows and read no reduction loop: rows are reduced together while
	// their clipped ranges agree.
	clips    []*kir.Clip
	clipped  bool
	rowForms [][]int
	rowClips []int
	// trackHas: some output point may receive no contribution, and the
	// aggregation's identity is not 0.
	trackHas bool
	// acc32: a maximum or minimum of float32 lanes, accumulated exactly in
	// float32 (frame.acc32).
	acc32 bool
	// split > 1 divides the outermost reduction loop into that many parts.
	split      int
	partial    []float64
	partialHas []bool
	// itemsPerTask groups work items into tasks.
	itemsPerTask int
	workers      int
	phase        int // 0: items, 1: combine split partials
	x            *Executable
}

// grain is the amount of work (lanes × instructions) worth one task.
const grain = 1 << 15

func newLoopsKernel(p *kir.Program, k *kir.Kernel, r *regs) *loopsKernel {
	merge := mergeAffine
	if len(k.Reduce) == 0 {
		// The vector axis is then the last output loop, which periodic
		// loads need.
		merge = mergePeriodic
	}
	s := newSpace(p, k, merge, partAll)
	lk := &loopsKernel{s: s, k: k, out: k.Out, agg: k.Agg, rowAxis: s.nout - 1, nred: s.reduceLoops(), split: 1,
		workers: k.Schedule.Workers, rowsPer: 1}
	lk.rowLen = s.ext[lk.rowAxis]
	lk.rows = s.points(0, lk.rowAxis)
	if lk.nred == 0 {
		lk.agg = tile.Assign
	}
	// Choose the body's vector axis and rows, for the longest chunks: the
	// row axis with rows of output points, the row axis with rows of
	// reduction points, or the innermost reduction loop.
	vaxis := lk.rowAxis
	if lk.nred > 0 {
		inner := len(s.ext) - 1
		outLanes := min(lk.rowLen*lk.rows, chunk)
		redLanes := min(lk.rowLen*s.ext[inner], chunk)
		vecLanes := min(s.ext[inner], chunk)
		switch {
		case outLanes >= redLanes && outLanes >= vecLanes:
		case lk.rowLen >= 16 && lk.rowLen < chunk && redLanes >= vecLanes:
			// Rows of reduction points pay per row, so they need rows of
			// some length.
			lk.redRows = max(1, min(s.ext[inner], chunk/lk.rowLen))
		default:
			vaxis = inner
			lk.redVec = true
		}
	}
	bb := newBuilder(s, vaxis, progBody, r)
	lk.clip(bb, p)
	bb.where(k.Where)
	lk.body = bb.value(k.Body)
	if !lk.redVec {
		lk.body.markHoist(s.nout)
	}
	if k.Epilogue != nil {
		lk.epi = newBuilder(s, lk.rowAxis, progEpilogue, r).value(k.Epilogue)
	}
	lk.outLin = s.outLin().forAxis(lk.rowAxis)
	lk.cpr = max(1, (lk.rowLen+chunk-1)/chunk)
	redPoints := s.points(s.nout, len(s.ext))
	empty := false
	for _, e := range s.ext[s.nout:] {
		empty = empty || e == 0
	}
	switch lk.agg {
	case tile.Max, tile.Min, tile.Prod:
		lk.trackHas = len(lk.body.checks) > 0 || lk.body.hasMask || empty || lk.clipped
	}
	cost := len(lk.body.instrs) + 2
	if lk.epi != nil {
		cost += len(lk.epi.instrs)
	}
	itemWork := min(lk.rowLen, chunk) * max(1, redPoints) * cost
	items := lk.rows * lk.cpr
	if lk.nred > 0 && lk.agg != tile.Assign && items < 8 && !empty {
		total := itemWork * items
		if total >= 8*grain {
			lk.split = min(s.ext[s.nout], 16, total/grain)
			if lk.split > 1 {
				n := s.points(0, s.nout)
				lk.partial = make([]float64, lk.split*n)
				lk.partialHas = make([]bool, lk.split*n)
				itemWork /= lk.split
			} else {
				lk.split = 1
			}
		}
	}
	lk.acc32 = (lk.agg == tile.Max || lk.agg == tile.Min) && lk.body.result.lane == laneF && !lk.redVec && lk.split == 1
	if !lk.redVec && lk.redRows <= 1 && lk.split == 1 && lk.rowLen > 0 && lk.rowLen < chunk {
		lk.rowsPer = max(1, min(lk.rows, chunk/lk.rowLen))
		itemWork *= lk.rowsPer
	}
	lk.itemsPerTask = max(1, grain/max(1, itemWork))
	lk.dot = newDotPlan(lk)
	return lk
}

// groups returns the number of row groups.
func (lk *loopsKernel) groups() int { return (lk.rows + lk.rowsPer - 1) / lk.rowsPer }

func (lk *loopsKernel) run(x *Executable) {
	lk.x = x
	items := lk.groups() * lk.cpr * lk.split
	lk.phase = 0
	x.pool.run(lk, (items+lk.itemsPerTask-1)/lk.itemsPerTask, lk.workers)
	if lk.split > 1 {
		lk.phase = 1
		items = lk.rows * lk.cpr
		per := max(1, lk.itemsPerTask*lk.split)
		x.pool.run(lk, (items+per-1)/per, lk.workers)
	}
	lk.x = nil
}

func (lk *loopsKernel) runTask(w, t int) {
	fr := lk.x.frame(w)
	lk.body.bind(fr)
	if lk.epi != nil {
		lk.epi.bind(fr)
	}
	per := lk.itemsPerTask
	if lk.phase == 1 {
		per *= lk.split
	}
	items := lk.groups() * lk.cpr
	if lk.phase == 0 {
		items *= lk.split
	}
	for it := t * per; it < min(items, (t+1)*per); it++ {
		lk.item(fr, it)
	}
	fr.rows = 1
}

// setRows sets the outer output loops of the chunk's rows to the points
// r0, r0+1, … r0+n-1.
func (lk *loopsKernel) setRows(fr *frame, r0, n int) {
	r := r0
	for l := lk.rowAxis - 1; l >= 0; l-- {
		e := lk.s.ext[l]
		fr.vars[l] = r % e
		r /= e
	}
	fr.rows, fr.outerRows = n, true
	for i := 1; i < n; i++ {
		nextRow(fr.rowVars[i], fr.rowVars[i-1], lk.s.ext, lk.rowAxis)
	}
}

// nextRow sets v to the point after prev over the loops before axis,
// row-major, and to prev's values for the other loops. Rows have a handful
// of loops: element by element is cheaper than a call to copy.
func nextRow(v, prev, ext []int, axis int) {
	v, prev = v[:len(prev)], prev[:len(prev)]
	l := axis - 1
	for ; l >= 0; l-- {
		if x := prev[l] + 1; x < ext[l] {
			v[l] = x
			break
		}
		v[l] = 0
	}
	for i := range l {
		v[i] = prev[i]
	}
	for i := axis; i < len(prev); i++ {
		v[i] = prev[i]
	}
}

// syncRows copies the loops from first on of row 0 to the other rows.
func syncRows(fr *frame, first int) {
	for i := 1; i < fr.rows; i++ {
		v := fr.rowVars[i]
		for l := first; l < len(fr.vars); l++ {
			v[l] = fr.vars[l]
		}
	}
}

// item computes work item it.
func (lk *loopsKernel) item(fr *frame, it int) {
	part := 0
	if lk.phase == 0 && lk.split > 1 {
		part = it % lk.split
		it /= lk.split
	}
	g, c := it/lk.cpr, it%lk.cpr
	r0 := g * lk.rowsPer
	nr := min(lk.rowsPer, lk.rows-r0)
	lk.setRows(fr, r0, nr)
	c0 := c * chunk
	n := min(chunk, lk.rowLen-c0)
	if lk.phase == 1 {
		outOff := lk.outLin.base(fr.vars) + lk.outLin.stride*c0
		lk.combine(fr, outOff, n)
		lk.finish(fr, c0, n)
		return
	}
	if lk.nred == 0 {
		lk.elementwise(fr, c0, n)
		return
	}
	if len(lk.rowForms)+len(lk.rowClips) > 0 && nr > 1 && lk.dot == nil {
		lk.runs(fr, c0, n, nr)
		return
	}
	lk.reduce(fr, c0, n, part)
	if lk.split > 1 {
		outOff := lk.outLin.base(fr.vars) + lk.outLin.stride*c0
		o := part*len(lk.partial)/lk.split + outOff
		copy(lk.partial[o:o+n], fr.acc[:n])
		if lk.trackHas {
			copy(lk.partialHas[o:o+n], fr.has[:n])
		}
		return
	}
	lk.finish(fr, c0, n)
}

// reduce aggregates the body over part part of the reduction into the
// accumulators of the chunk's rows.
func (lk *loopsKernel) reduce(fr *frame, c0, n, part int) {
	m := fr.rows * n
	if lk.trackHas {
		clear(fr.has[:m])
	}
	rlo, rhi := 0, lk.s.ext[lk.s.nout]
	if lk.split > 1 {
		rlo, rhi = rhi*part/lk.split, rhi*(part+1)/lk.split
	}
	if lk.dot != nil {
		lk.reduceDot(fr, c0, n, rlo, rhi)
	} else if lk.redVec {
		lk.initAcc(fr, m)
		lk.reduceRedVec(fr, c0, n, rlo, rhi)
	} else if lk.reduceOutVec(fr, c0, n, rlo, rhi) {
		lk.initAcc(fr, m)
	}
}

// runs reduces and stores the chunk's nr rows in runs of consecutive rows
// whose reduction loops have the same clipped ranges.
func (lk *loopsKernel) runs(fr *frame, c0, n, nr int) {
	all := fr.rowVars
	for ra := 0; ra < nr; {
		rb := ra + 1
		for rb < nr && lk.sameClips(all[ra], all[rb]) {
			rb++
		}
		fr.rowVars, fr.vars, fr.rows = all[ra:], all[ra], rb-ra
		lk.reduce(fr, c0, n, 0)
		lk.finish(fr, c0, n)
		ra = rb
	}
	fr.rowVars, fr.vars, fr.rows = all, all[0], nr
}

func (lk *loopsKernel) sameClips(a, b []int) bool {
	for _, i := range lk.rowClips {
		alo, ahi := lk.clips[i].At(a)
		blo, bhi := lk.clips[i].At(b)
		if (alo != blo || ahi != bhi) && (alo <= ahi || blo <= bhi) {
			return false
		}
	}
	for _, f := range lk.rowForms {
		x := 0
		for l, c := range f {
			x += c * (a[l] - b[l])
		}
		if x != 0 {
			return false
		}
	}
	return true
}

// clip lowers the kernel's affine guards (kir.Guards) to clipped ranges
// of the reduction loops (kir.ClipLoop over the space's loops), each
// bounded by the loops outside it except the body's vector axis when that
// is an output loop: conditions on the axis stay intervals of lanes. The
// body leaves out the checks of the guards absorbed.
func (lk *loopsKernel) clip(b *builder, p *kir.Program) {
	s := lk.s
	gs, srcs := kir.Guards(p, lk.k)
	lk.clips = make([]*kir.Clip, lk.nred)
	if len(gs) == 0 {
		return
	}
	conds := make([]kir.AffineCond, len(gs))
	for i, g := range gs {
		// The space's form of the condition, which merging may have
		// rescaled.
		a, bound := &affineIx{g.Coef, g.Konst}, g.Bound
		var cf *condForm
		if src := srcs[i]; src.Load == nil {
			cf = s.cond(lk.k.Where[src.Where])
		} else if li := s.loads[src.Load]; li != nil && li.class == loadChecked {
			cf = li.dimForm[src.Dim]
		}
		if cf != nil {
			a, bound = cf.aff, cf.bound
		}
		// Otherwise the guard is a dimension of a load with some index
		// that is not affine, whose forms all took part in the merging
		// test as they are.
		l := s.lin(a)
		conds[i] = kir.AffineCond{Coef: make([]int, len(s.ext)), Konst: l.c, Bound: bound}
		for _, t := range l.terms {
			conds[i].Coef[t.loop] = t.coef
		}
	}
	absorbed := make([]bool, len(conds))
	for l := s.nout; l < len(s.ext); l++ {
		c := kir.ClipLoop(conds, l, kir.Range{Lo: 0, Hi: s.ext[l] - 1}, func(u int) bool { return u < l && u != b.axis })
		if len(c.Absorbed) == 0 {
			continue
		}
		lk.clips[l-s.nout], lk.clipped = c, true
		for _, i := range c.Absorbed {
			absorbed[i] = true
		}
		var forms [][]int
		inner := false // some bound reads a reduction loop
		for _, bd := range append(append([]kir.ClipBound(nil), c.Lo...), c.Hi...) {
			f := make([]int, lk.rowAxis)
			vary := false
			for u := range f {
				f[u] = bd.Coef[u]
				vary = vary || f[u] != 0
			}
			if vary {
				forms = append(forms, f)
			}
			for u := s.nout; u < len(bd.Coef); u++ {
				inner = inner || bd.Coef[u] != 0
			}
		}
		switch {
		case len(forms) == 0:
		case inner:
			lk.rowForms = append(lk.rowForms, forms...)
		default:
			// Rows whose clipped ranges agree reduce together, though
			// their bounds differ (the inner rows of a padded window).
			lk.rowClips = append(lk.rowClips, l-s.nout)
		}
	}
	b.absWhere, b.absDim, b.unguarded = map[int]bool{}, map[*kir.Expr][]bool{}, map[*kir.Expr]bool{}
	for i, src := range srcs {
		if src.Load == nil {
			b.absWhere[src.Where] = absorbed[i]
			continue
		}
		a := b.absDim[src.Load]
		if a == nil {
			a = make([]bool, len(src.Load.Index))
			b.absDim[src.Load] = a
			b.unguarded[src.Load] = true
		}
		a[src.Dim] = absorbed[i]
		b.unguarded[src.Load] = b.unguarded[src.Load] && absorbed[i]
	}
}

// enter starts reduction loop l at its first value within its clipped
// range (the outermost also within [rlo, rhi)) and sets its end; it
// reports whether the range holds a value.
func (lk *loopsKernel) enter(fr *frame, l, rlo, rhi int) bool {
	lo, hi := 0, lk.s.ext[l]-1
	if c := lk.clips[l-lk.s.nout]; c != nil {
		lo, hi = c.At(fr.vars)
	}
	if l == lk.s.nout {
		lo, hi = max(lo, rlo), min(hi, rhi-1)
	}
	fr.vars[l], fr.ends[l] = lo, hi+1
	return lo <= hi
}

// first sets reduction loops l to last at the first point of their
// clipped box, or reports false when it is empty.
func (lk *loopsKernel) first(fr *frame, l, last, rlo, rhi int) bool {
	if !lk.enter(fr, l, rlo, rhi) {
		return false
	}
	if l == last {
		return true
	}
	for ; fr.vars[l] < fr.ends[l]; fr.vars[l]++ {
		if lk.first(fr, l+1, last, rlo, rhi) {
			return true
		}
	}
	return false
}

// next moves reduction loops first to last to the next point of their
// clipped box, the innermost fastest, or reports false after the last.
func (lk *loopsKernel) next(fr *frame, first, last, rlo, rhi int) bool {
	for l := last; l >= first; l-- {
		for fr.vars[l]++; fr.vars[l] < fr.ends[l]; fr.vars[l]++ {
			if l == last || lk.first(fr, l+1, last, rlo, rhi) {
				return true
			}
		}
	}
	return false
}

// combine aggregates the split partials of output points [off, off+n) into
// fr.acc and fr.has.
func (lk *loopsKernel) combine(fr *frame, off, n int) {
	acc, has := fr.acc[:n], fr.has[:n]
	stride := len(lk.partial) / lk.split
	copy(acc, lk.partial[off:off+n])
	if lk.trackHas {
		copy(has, lk.partialHas[off:off+n])
	}
	for p := 1; p < lk.split; p++ {
		src := lk.partial[p*stride+off : p*stride+off+n]
		if !lk.trackHas {
			combineAcc(lk.agg, acc, src)
			continue
		}
		sh := lk.partialHas[p*stride+off : p*stride+off+n]
		for i, v := range src {
			if !sh[i] {
				continue
			}
			if has[i] {
				acc[i] = aggOne(lk.agg, acc[i], v)
			} else {
				acc[i], has[i] = v, true
			}
		}
	}
}

// finish applies the epilogue to fr.acc (the chunk's rows of n lanes from
// c0) and stores the results.
func (lk *loopsKernel) finish(fr *frame, c0, n int) {
	if lk.acc32 && lk.phase == 0 {
		lk.finish32(fr, c0, n)
		return
	}
	m := fr.rows * n
	acc := fr.acc[:m]
	if lk.trackHas {
		for i, h := range fr.has[:m] {
			if !h {
				acc[i] = 0
			}
		}
	}
	out := fr.bufs[lk.out]
	st := lk.outLin.stride
	if lk.epi == nil {
		for r := range fr.rows {
			storeAcc(out, lk.outLin.base(fr.rowVars[r])+st*c0, st, acc[r*n:(r+1)*n])
		}
		return
	}
	fr.accF, fr.accD = nil, acc
	lk.epi.exec(fr, c0, n)
	fr.accD = nil
	lk.store(fr, out, c0, n, lk.epi.result)
}

// finish32 is finish for float32 accumulators.
func (lk *loopsKernel) finish32(fr *frame, c0, n int) {
	m := fr.rows * n
	acc := fr.acc32[:m]
	if lk.trackHas {
		for i, h := range fr.has[:m] {
			if !h {
				acc[i] = 0
			}
		}
	}
	out := fr.bufs[lk.out]
	st := lk.outLin.stride
	if lk.epi == nil {
		for r := range fr.rows {
			off := lk.outLin.base(fr.rowVars[r]) + st*c0
			row := acc[r*n : (r+1)*n]
			if out.f32 != nil && st == 1 {
				copy(out.f32[off:off+n], row)
				continue
			}
			if out.i32 != nil {
				// Small integers, exact in float32.
				for i, x := range row {
					out.i32[off+st*i] = int32(x)
				}
				continue
			}
			for i, x := range row {
				out.setFloat64(off+st*i, tile.RoundTo(out.dt, float64(x)))
			}
		}
		return
	}
	fr.accF, fr.accD = acc, nil
	lk.epi.exec(fr, c0, n)
	fr.accF = nil
	lk.store(fr, out, c0, n, lk.epi.result)
}

// store writes a register holding the chunk's rows to the output.
func (lk *loopsKernel) store(fr *frame, out *buffer, c0, n int, r operand) {
	st := lk.outLin.stride
	if fr.rows == 1 {
		storeOperand(fr, out, lk.outLin.base(fr.vars)+st*c0, st, r, n, 0)
		return
	}
	for row := range fr.rows {
		storeOperand(fr, out, lk.outLin.base(fr.rowVars[row])+st*c0, st, r, n, row*n)
	}
}

// outChunk returns the output memory of the chunk when its rows follow
// each other in a float32 output, else nil.
func (lk *loopsKernel) outChunk(fr *frame, out *buffer, c0, n int) []float32 {
	if out.f32 == nil || lk.outLin.stride != 1 {
		return nil
	}
	off := lk.outLin.base(fr.vars) + c0
	// The output is row-major: whole rows at consecutive points follow
	// each other.
	if fr.rows > 1 && (!fr.outerRows || n != lk.rowLen) {
		for r := 1; r < fr.rows; r++ {
			if lk.outLin.base(fr.rowVars[r])+c0 != off+r*n {
				return nil
			}
		}
	}
	m := fr.rows * n
	return out.f32[off : off+m : off+m]
}

// elementwise computes a chunk of a kernel without reduction loops.
func (lk *loopsKernel) elementwise(fr *frame, c0, n int) {
	b := lk.body
	m := fr.rows * n
	out := fr.bufs[lk.out]
	var direct []float32
	if lk.epi == nil && b.result.lane == laneF && b.directOK && len(b.checks) == 0 && !b.hasMask {
		if direct = lk.outChunk(fr, out, c0, n); direct != nil {
			fr.direct, fr.directReg = direct, b.result.reg
		}
	}
	lo, hi, mask := b.evalChunk(fr, c0, n)
	if direct != nil {
		fr.direct, fr.directReg = nil, -1
		if sameStart(fr.f[b.result.reg], direct) {
			return
		}
	}
	if lo == 0 && hi == m && mask == nil {
		if lk.epi == nil {
			lk.store(fr, out, c0, n, b.result)
			return
		}
		if b.result.lane == laneF {
			fr.accF, fr.accD = fr.f[b.result.reg][:m], nil
		} else {
			fr.accF, fr.accD = nil, fr.d[b.result.reg][:m]
		}
		lk.epi.exec(fr, c0, n)
		fr.accF, fr.accD = nil, nil
		lk.store(fr, out, c0, n, lk.epi.result)
		return
	}
	// Some points are skipped: their value is 0 before the epilogue.
	acc := fr.acc[:m]
	clear(acc)
	if lo < hi {
		aggregate(tile.Assign, acc[lo:hi], fr, b.result, hi-lo, mask)
	}
	lk.finish(fr, c0, n) // no reduction: trackHas is off
}

// initAcc sets the first m accumulators to the aggregation's identity.
func (lk *loopsKernel) initAcc(fr *frame, m int) {
	init := aggInit(lk.agg)
	if lk.acc32 {
		a32, init32 := fr.acc32[:m], float32(init)
		for i := range a32 {
			a32[i] = init32
		}
		return
	}
	acc := fr.acc[:m]
	for i := range acc {
		acc[i] = init
	}
}

// firstAcc sets the first m accumulators to the m lanes of register r from
// lane at: the first contribution of a point is the aggregate so far.
func (lk *loopsKernel) firstAcc(fr *frame, r operand, at, m int) {
	if lk.acc32 {
		copy(fr.acc32[:m], fr.f[r.reg][at:at+m])
		return
	}
	acc := fr.acc[:m]
	if r.lane == laneF {
		for i, x := range fr.f[r.reg][at : at+m] {
			acc[i] = float64(x)
		}
		return
	}
	copy(acc, fr.d[r.reg][at:at+m])
}

// reduceOutVec aggregates the body over the reduction loops, the outermost
// restricted to [rlo, rhi), into the accumulators of the chunk's rows of n
// lanes from c0. With redRows, each evaluation covers several consecutive
// points of the innermost reduction loop (one output row). The
// accumulators start from the first evaluation that covers every lane; it
// reports fresh when none did and no other was made, the accumulators then
// being left for the caller to set to the identity.
func (lk *loopsKernel) reduceOutVec(fr *frame, c0, n, rlo, rhi int) (fresh bool) {
	s := lk.s
	first, last := s.nout, len(s.ext)-1
	if !lk.first(fr, first, last, rlo, rhi) {
		return true
	}
	b := lk.body
	// The body's hoisted instructions are evaluated at the first reduction
	// point only.
	fr.hoisting, fr.hoisted = true, false
	defer func() { fr.hoisting, fr.hoisted = false, false }()
	step := 1
	if lk.redRows > 1 {
		step = lk.redRows
	}
	fresh = true
	m := fr.rows * n
	multi := fr.rows > 1
	// wide accumulates the rows of a sum separately (step·n lanes in
	// float64), so that each reduction point costs one aggregation rather
	// than one per row; the rows are added into the output lanes in row
	// order when the loops end.
	var wide []float64
	wideUsed := false
	if step > 1 && lk.agg == tile.Sum && !lk.acc32 && step*n <= len(fr.wide) {
		wide = fr.wide[:step*n]
		clear(wide)
		defer func() {
			if wideUsed {
				acc := fr.acc[:n]
				for r := range step {
					for i, v := range wide[r*n : (r+1)*n] {
						acc[i] += v
					}
				}
			}
		}()
	}
	// synced counts the rows whose other loops hold those of row 0: only
	// the innermost loop moves from one chunk of rows to the next until
	// the outer reduction loops move on.
	synced := 1
	for {
		if step > 1 {
			// Rows are the next points of the innermost loop.
			rows := min(step, fr.ends[last]-fr.vars[last])
			fr.rows, fr.outerRows = rows, false
			for r := 1; r < rows; r++ {
				v := fr.rowVars[r]
				if r >= synced {
					copy(v, fr.vars)
				}
				v[last] = fr.vars[last] + r
			}
			synced = max(synced, rows)
			lo, hi, mask := b.evalChunk(fr, c0, n)
			if lo < hi && fresh {
				lk.initAcc(fr, n)
				fresh = false
			}
			switch {
			case lo >= hi:
			case rows == 1:
				// One row: the result covers the active lanes [lo, hi).
				if lk.acc32 {
					aggregate32(lk.agg, fr.acc32[lo:hi], fr.f[b.result.reg][:hi-lo], mask, fr.tmp32)
				} else {
					aggregate(lk.agg, fr.acc[lo:hi], fr, b.result, hi-lo, mask)
				}
				if lk.trackHas {
					markHas(fr.has[lo:hi], mask)
				}
			case wide != nil && rows == step:
				// Whole rows of a sum: lane by lane into the wide
				// accumulator, folded into the output lanes at the end.
				aggregateAt(tile.Sum, wide[:rows*n], fr, b.result, 0, rows*n, mask)
				wideUsed = true
			default:
				for r := range rows {
					var rm []bool
					if mask != nil {
						rm = mask[r*n : (r+1)*n]
					}
					if lk.acc32 {
						aggregate32(lk.agg, fr.acc32[:n], fr.f[b.result.reg][r*n:(r+1)*n], rm, fr.tmp32)
					} else {
						aggregateAt(lk.agg, fr.acc[:n], fr, b.result, r*n, n, rm)
					}
					if lk.trackHas {
						markHas(fr.has[:n], rm)
					}
				}
			}
			fr.rows = 1
			fr.vars[last] += rows - 1
		} else {
			if multi {
				syncRows(fr, first)
			}
			lo, hi, mask := b.evalChunk(fr, c0, n)
			switch {
			case lo >= hi:
			case fresh && lo == 0 && hi == m && mask == nil:
				lk.firstAcc(fr, b.result, 0, m)
				fresh = false
				if lk.trackHas {
					setTrue(fr.has[:m])
				}
			default:
				if fresh {
					lk.initAcc(fr, m)
					fresh = false
				}
				if lk.acc32 {
					aggregate32(lk.agg, fr.acc32[lo:hi], fr.f[b.result.reg][:hi-lo], mask, fr.tmp32)
				} else {
					aggregate(lk.agg, fr.acc[lo:hi], fr, b.result, hi-lo, mask)
				}
				if lk.trackHas {
					markHas(fr.has[lo:hi], mask)
				}
			}
		}
		at := fr.vars[last]
		if !lk.next(fr, first, last, rlo, rhi) {
			return fresh
		}
		if fr.vars[last] <= at {
			synced = 1 // the outer loops moved on
		}
	}
}

// reduceRedVec aggregates, for each output point of the chunk, the body over
// the reduction loops with the innermost one as the vector axis.
func (lk *loopsKernel) reduceRedVec(fr *frame, c0, n, rlo, rhi int) {
	s := lk.s
	first, vax := s.nout, len(s.ext)-1
	b := lk.body
	for i := range n {
		fr.vars[lk.rowAxis] = c0 + i
		acc := fr.acc[i]
		has := false
		for ok := vax == first || lk.first(fr, first, vax-1, rlo, rhi); ok; ok = vax > first && lk.next(fr, first, vax-1, rlo, rhi) {
			if !lk.enter(fr, vax, rlo, rhi) {
				continue
			}
			for v0, vhi := fr.vars[vax], fr.ends[vax]; v0 < vhi; v0 += chunk {
				lo, hi, mask := b.evalChunk(fr, v0, min(chunk, vhi-v0))
				if lo >= hi {
					continue
				}
				var any bool
				acc, any = reduceLanes(lk.agg, acc, fr, b.result, hi-lo, mask)
				has = has || any
			}
		}
		fr.acc[i] = acc
		if lk.trackHas {
			fr.has[i] = has
		}
	}
}

// setTrue sets every element of m, eight at a time.
func setTrue(m []bool) {
	b := unsafe.Slice((*uint8)(unsafe.Pointer(unsafe.SliceData(m))), len(m))
	i := 0
	for ; i+8 <= len(b); i += 8 {
		*(*uint64)(unsafe.Pointer(&b[i])) = 0x0101010101010101
	}
	for ; i < len(b); i++ {
		b[i] = 1
	}
}

func markHas(has, mask []bool) {
	if mask == nil {
		setTrue(has)
		return
	}
	// Booleans are bytes holding 0 or 1: or them eight at a time.
	hb := unsafe.Slice((*uint8)(unsafe.Pointer(unsafe.SliceData(has))), len(has))
	mb := unsafe.Slice((*uint8)(unsafe.Pointer(unsafe.SliceData(mask))), len(has))
	i := 0
	for ; i+8 <= len(hb); i += 8 {
		*(*uint64)(unsafe.Pointer(&hb[i])) |= *(*uint64)(unsafe.Pointer(&mb[i]))
	}
	for ; i < len(hb); i++ {
		hb[i] |= mb[i]
	}
}

// aggInit is the value an accumulator starts from.
func aggInit(a tile.Agg) float64 {
	switch a {
	case tile.Prod:
		return 1
	case tile.Max:
		return math.Inf(-1)
	case tile.Min:
		return math.Inf(1)
	}
	return 0
}

func aggOne(a tile.Agg, acc, v float64) float64 {
	switch a {
	case tile.Sum:
		return acc + v
	case tile.Prod:
		return acc * v
	case tile.Max:
		return max(acc, v)
	case tile.Min:
		return min(acc, v)
	}
	return v
}

// combineAcc aggregates src into acc lane by lane.
func combineAcc(a tile.Agg, acc, src []float64) {
	src = src[:len(acc)]
	switch a {
	case tile.Sum:
		for i, v := range src {
			acc[i] += v
		}
	default:
		for i, v := range src {
			acc[i] = aggOne(a, acc[i], v)
		}
	}
}

// aggregate combines the m lanes of register r into acc lane by lane, only
// the lanes set in mask when it is not nil.
func aggregate(a tile.Agg, acc []float64, fr *frame, r operand, m int, mask []bool) {
	aggregateAt(a, acc, fr, r, 0, m, mask)
}

// aggregateAt is aggregate of the m lanes of register r from lane at. A
// mask is taken in runs of set lanes, each aggregated as unmasked lanes
// are: guards of reduction loops mask whole rows or intervals of lanes.
func aggregateAt(a tile.Agg, acc []float64, fr *frame, r operand, at, m int, mask []bool) {
	acc = acc[:m]
	if mask == nil {
		aggregateRun(a, acc, fr, r, at)
		return
	}
	mask = mask[:m]
	for i := 0; i < m; {
		j := i
		for j < m && mask[j] {
			j++
		}
		if j > i {
			aggregateRun(a, acc[i:j], fr, r, at+i)
		}
		for j < m && !mask[j] {
			j++
		}
		i = j
	}
}

// aggregateRun aggregates len(acc) lanes of register r from lane at into acc.
func aggregateRun(a tile.Agg, acc []float64, fr *frame, r operand, at int) {
	m := len(acc)
	if r.lane == laneF {
		v := fr.f[r.reg][at : at+m]
		n := simdAggregateF(a, acc, v)
		acc, v = acc[n:], v[n:]
		switch a {
		case tile.Sum:
			for i, x := range v {
				acc[i] += float64(x)
			}
		case tile.Max:
			for i, x := range v {
				acc[i] = max(acc[i], float64(x))
			}
		case tile.Min:
			for i, x := range v {
				acc[i] = min(acc[i], float64(x))
			}
		case tile.Prod:
			for i, x := range v {
				acc[i] *= float64(x)
			}
		default:
			for i, x := range v {
				acc[i] = float64(x)
			}
		}
		return
	}
	v := fr.d[r.reg][at : at+m]
	switch a {
	case tile.Sum:
		for i, x := range v {
			acc[i] += x
		}
	default:
		for i, x := range v {
			acc[i] = aggOne(a, acc[i], x)
		}
	}
}

// aggregate32 combines float32 lanes into float32 accumulators by maximum
// or minimum, only the lanes set in mask when it is not nil (tmp, as long
// as acc, holds the masked values).
func aggregate32(a tile.Agg, acc, v []float32, mask []bool, tmp []float32) {
	v = v[:len(acc)]
	if mask != nil {
		n := simdMaskAggregateF32(a, acc, v, mask)
		acc, v, mask = acc[n:], v[n:], mask[n:]
	}
	if mask != nil && len(tmp) >= len(acc) {
		// Masked lanes aggregate the identity, which changes nothing.
		id := float32(aggInit(a))
		t := tmp[:len(acc)]
		mb := unsafe.Slice((*uint8)(unsafe.Pointer(unsafe.SliceData(mask))), len(acc))
		for i, x := range v {
			m := uint32(0) - uint32(mb[i])
			t[i] = math.Float32frombits(math.Float32bits(x)&m | math.Float32bits(id)&^m)
		}
		v, mask = t, nil
	}
	if mask == nil {
		n := simdAggregateF32(a, acc, v)
		acc, v = acc[n:], v[n:]
	}
	if a == tile.Max {
		for i, x := range v {
			if mask == nil || mask[i] {
				acc[i] = max(acc[i], x)
			}
		}
		return
	}
	for i, x := range v {
		if mask == nil || mask[i] {
			acc[i] = min(acc[i], x)
		}
	}
}

// reduceLanes aggregates the active lanes of register r into acc, in lane
// order, and reports whether any lane was active.
func reduceLanes(a tile.Agg, acc float64, fr *frame, r operand, m int, mask []bool) (float64, bool) {
	any := false
	if r.lane == laneF {
		v := fr.f[r.reg][:m]
		if mask == nil && a == tile.Sum {
			var s0, s1, s2, s3 float64
			i := 0
			for ; i+4 <= len(v); i += 4 {
				s0 += float64(v[i])
				s1 += float64(v[i+1])
				s2 += float64(v[i+2])
				s3 += float64(v[i+3])
			}
			for ; i < len(v); i++ {
				s0 += float64(v[i])
			}
			return acc + ((s0 + s1) + (s2 + s3)), m > 0
		}
		for i, x := range v {
			if mask == nil || mask[i] {
				acc = aggOne(a, acc, float64(x))
				any = true
			}
		}
		return acc, any
	}
	for i, x := range fr.d[r.reg][:m] {
		if mask == nil || mask[i] {
			acc = aggOne(a, acc, x)
			any = true
		}
	}
	return acc, any
}

// storeAcc stores aggregated values, rounded to the buffer's dtype, at
// off + st·i.
func storeAcc(b *buffer, off, st int, acc []float64) {
	if b.f32 != nil {
		d := b.f32
		if st == 1 {
			k := simdToF32(d[off:off+len(acc)], acc)
			acc, off = acc[k:], off+k
		}
		for i, v := range acc {
			d[off+st*i] = float32(v)
		}
		return
	}
	for i, v := range acc {
		b.setFloat64(off+st*i, tile.RoundTo(b.dt, v))
	}
}

// storeOperand stores n lanes of a register, from lane at, at off + st·i.
func storeOperand(fr *frame, b *buffer, off, st int, r operand, n, at int) {
	if n == 0 {
		return
	}
	if r.lane == laneF {
		v := fr.f[r.reg][at : at+n]
		if b.f32 != nil {
			if st == 1 {
				copy(b.f32[off:off+n], v)
				return
			}
			for i, x := range v {
				b.f32[off+st*i] = x
			}
			return
		}
		if b.b != nil {
			if st == 1 {
				// Booleans in float32 lanes are 0 or 1; bit 29 is set for 1.
				k := simdF32ToBools(b.b[off:off+n], v)
				v = v[k:]
				rest := b.b[off+k : off+n]
				d := unsafe.Slice((*uint8)(unsafe.Pointer(unsafe.SliceData(rest))), len(rest))
				for i, x := range v {
					d[i] = uint8(math.Float32bits(x) >> 29 & 1)
				}
				return
			}
			for i, x := range v {
				b.b[off+st*i] = x != 0
			}
			return
		}
		if b.i32 != nil {
			// Small integers computed in float32 lanes.
			for i, x := range v {
				b.i32[off+st*i] = int32(x)
			}
			return
		}
		for i, x := range v {
			b.setFloat64(off+st*i, tile.RoundTo(b.dt, float64(x)))
		}
		return
	}
	v := fr.d[r.reg][at : at+n]
	switch {
	case b.f64 != nil && st == 1:
		copy(b.f64[off:off+n], v)
	case b.f32 != nil:
		for i, x := range v {
			b.f32[off+st*i] = float32(x)
		}
	default:
		// Values are already rounded to the register's dtype; the store
		// rounds again to the buffer's.
		for i, x := range v {
			b.setFloat64(off+st*i, tile.RoundTo(b.dt, x))
		}
	}
}
