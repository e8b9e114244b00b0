package cpu

import (
	"slices"

	"github.com/tartanml/tartan/backend/cpu/gemm"

	"github.com/tartanml/tartan/kir"
	"github.com/tartanml/tartan/tile"
)

// affinePacker packs a matrix-product operand whose load has affine indices
// and whose Where conditions are affine (the im2col of a convolution).
//
// Packing is a grid: the points of an outer group of variables (rows of P
// for a P-major layout, points of K for a K-major one) times runs of the
// inner group along its innermost variable, the axis. Every bound to check
// and the element offset are affine forms; the inner group's runs and their
// contributions to the forms are tabulated once per call, the outer points
// advance incrementally, and each run is copied in one piece between the
// lanes where every bound holds (zeros elsewhere), consecutive in-range runs
// that continue each other in memory being merged into one copy.
type affinePacker struct {
	// forms[0] is the element offset; the others must lie in [0, bound).
	forms []packForm
	// coefT[v] holds variable v's coefficient in every form.
	coefT  [][]int
	axis   int // kernel variable along runs, or -1
	lo     []int
	ext    []int
	buf    int
	isBool bool
}

// packForm is konst + Σ coef[v]·(value of variable v), to be kept in
// [0, bound) (bound < 0: no bound).
type packForm struct {
	coef  []int
	konst int
	bound int
}

// newAffinePacker returns a packer for the operand load with the given
// conditions, or nil when some index or condition is not affine.
func newAffinePacker(s *space, p *kir.Program, load *kir.Expr, conds []kir.Cond, axis int, ext []int) *affinePacker {
	li := s.load(load)
	if li.class == loadGeneral || laneOf(load.DType) != laneF {
		return nil
	}
	if load.OOB == kir.Fill && !li.inRange {
		// Out of range, a Fill load yields its value, not the zero that
		// excluded points get: leave it to the general packer.
		return nil
	}
	ap := &affinePacker{axis: axis, lo: s.varLo, ext: ext, buf: load.Buf, isBool: load.DType == tile.Bool}
	ap.forms = append(ap.forms, packForm{coef: li.flat.coef, konst: li.flat.konst, bound: -1})
	bounded := func(coef []int, konst, bound int) {
		// Drop bounds that hold everywhere in the loop box.
		lo, hi := konst, konst
		for v, c := range coef {
			a, b := c*s.ranges[v].Lo, c*s.ranges[v].Hi
			lo += min(a, b)
			hi += max(a, b)
		}
		if lo >= 0 && hi < bound {
			return
		}
		ap.forms = append(ap.forms, packForm{coef: coef, konst: konst, bound: bound})
	}
	shape := p.Buffers[load.Buf].Shape
	if li.class == loadChecked {
		for d := range li.dims {
			bounded(li.dims[d].coef, li.dims[d].konst, shape[d])
		}
	}
	for _, c := range conds {
		info := s.ix(c.X)
		if info.aff == nil {
			return nil
		}
		bounded(info.aff.coef, info.aff.konst, c.Bound)
	}
	ap.coefT = make([][]int, len(ext))
	for v := range ext {
		ap.coefT[v] = make([]int, len(ap.forms))
		for f := range ap.forms {
			ap.coefT[v][f] = ap.forms[f].coef[v]
		}
	}
	return ap
}

// add adds delta times variable v's coefficients to the form values.
func (ap *affinePacker) add(val []int, v, delta int) {
	if delta == 0 {
		return
	}
	c := ap.coefT[v]
	val = val[:len(c)]
	for f, x := range c {
		val[f] += x * delta
	}
}

// scratchInts is the number of integers packAffine needs in frame.pk for
// runs inner runs.
func (ap *affinePacker) scratchInts(runs int) int {
	nf := len(ap.forms)
	return 3*nf + 2*len(ap.ext) + runs*(nf+8)
}

// maxRuns bounds the number of inner runs of one pack call.
func (o *gemmOperand) maxRuns(ext []int, rows int) int {
	if o.kMajor {
		// Runs of P rows along the axis: at most rows/ext+2 per block.
		e := 1
		if o.axisVar >= 0 {
			e = max(1, ext[o.axisVar])
		}
		return min(rows, rows/e+2)
	}
	n := 1
	for _, v := range o.kVar {
		if v != o.axisVar {
			n *= ext[v]
		}
	}
	return n
}

// copier accumulates consecutive in-range runs into single copies.
type copier struct {
	src      []float32
	srcOff   int
	dst      []float32
	dstOff   int
	n        int
	pending  bool
	boolSrc  []bool
	useBools bool
}

func (c *copier) flush() {
	if !c.pending {
		return
	}
	d := c.dst[c.dstOff : c.dstOff+c.n]
	if c.useBools {
		boolsToF32(d, c.boolSrc[c.srcOff:c.srcOff+c.n])
	} else {
		copy(d, c.src[c.srcOff:c.srcOff+c.n])
	}
	c.pending = false
}

// put schedules the copy of n contiguous elements.
func (c *copier) put(srcOff, dstOff, n int) {
	if c.pending && srcOff == c.srcOff+c.n && dstOff == c.dstOff+c.n {
		c.n += n
		return
	}
	c.flush()
	c.srcOff, c.dstOff, c.n, c.pending = srcOff, dstOff, n, true
}

// run writes one run: axis positions [a, b) at the point whose form values
// (axis at position 0) are val, into dst[at : at+b-a].
func (ap *affinePacker) run(fr *frame, cp *copier, val []int, a, b int, dst []float32, at int) {
	n := b - a
	lo, hi := 0, n
	ax := ap.axis
	for f := 1; f < len(ap.forms) && lo < hi; f++ {
		c := 0
		if ax >= 0 {
			c = ap.coefT[ax][f]
		}
		lo, hi = interval(val[f]+c*a, c, ap.forms[f].bound, lo, hi)
	}
	if lo >= hi {
		cp.flush()
		clear(dst[at : at+n])
		return
	}
	if lo > 0 || hi < n {
		cp.flush()
		clear(dst[at : at+lo])
		clear(dst[at+hi : at+n])
	}
	st := 0
	if ax >= 0 {
		st = ap.forms[0].coef[ax]
	}
	off := val[0] + st*(a+lo)
	if st == 1 {
		cp.put(off, at+lo, hi-lo)
		if hi < n {
			cp.flush()
		}
		return
	}
	cp.flush()
	buf := fr.bufs[ap.buf]
	d := dst[at+lo : at+hi]
	if ap.isBool {
		for i := range d {
			d[i] = b2f32(buf.b[off])
			off += st
		}
		return
	}
	if st != 2 || !simdGather2(d, buf.f32, off) {
		gatherF(d, buf.f32, off, st)
	}
}

// packAffine is gemmOperand.pack for operands with an affine packer.
func (o *gemmOperand) packAffine(fr *frame, ext []int, batch, bvals []int, splitVar, klo, khi int, dst []float32, ld, p0, p1 int) int {
	ap := o.affine
	nf := len(ap.forms)
	val, base := fr.pk[:nf], fr.pk[nf:2*nf]
	pos := fr.pk[2*nf : 2*nf+len(ext)]
	runs := fr.pk[2*nf+len(ext) : len(fr.pk)-nf]
	for f := range ap.forms {
		k := ap.forms[f].konst
		for v, c := range ap.forms[f].coef {
			k += c * ap.lo[v]
		}
		base[f] = k
	}
	for i, v := range batch {
		ap.add(base, v, bvals[i])
	}
	np := p1 - p0
	kc := 1
	for _, v := range o.kVar {
		if v == splitVar {
			kc *= khi - klo
		} else {
			kc *= ext[v]
		}
	}
	if kc == 0 || np == 0 {
		// Nothing to pack; the leading dimension must still suit the
		// layout.
		if o.kMajor {
			return max(1, np)
		}
		return max(1, kc)
	}
	if ld == 0 {
		ld = kc
		if o.kMajor {
			ld = np
		}
	}
	first := func(v int) int {
		if v == splitVar {
			return klo
		}
		return 0
	}
	end := func(v int) int {
		if v == splitVar {
			return khi
		}
		return ext[v]
	}
	ax := ap.axis
	cp := copier{dst: dst}
	if buf := fr.bufs[ap.buf]; ap.isBool {
		cp.boolSrc, cp.useBools = buf.b, true
	} else {
		cp.src = buf.f32
	}
	stride := nf + 3 // per run: a, b, destination offset, contributions
	nruns := 0
	var outer []int
	if !o.kMajor {
		// Inner runs over K (odometer over the K variables but the axis),
		// outer points over P rows.
		a, b := 0, 1
		if ax >= 0 {
			a, b = first(ax), end(ax)
		}
		for _, v := range o.kVar {
			pos[v] = first(v)
		}
		for kk := 0; ; kk += b - a {
			r := runs[nruns*stride : (nruns+1)*stride]
			r[0], r[1], r[2] = a, b, kk
			c := r[3:]
			clear(c)
			for _, v := range o.kVar {
				if v != ax {
					ap.add(c, v, pos[v])
				}
			}
			nruns++
			i := len(o.kVar) - 1
			for ; i >= 0; i-- {
				v := o.kVar[i]
				if v == ax {
					continue
				}
				if pos[v]+1 < end(v) {
					pos[v]++
					break
				}
				pos[v] = first(v)
			}
			if i < 0 {
				break
			}
		}
		outer = o.pVar
		if ap.rowsFast() && len(outer) > 0 {
			ap.packRows(fr, ext, outer, base, val, runs, nruns, stride, ld, dst, p0, p1)
			return ld
		}
		for p := p0; p < p1; p++ {
			copy(val, base)
			q := p
			for i := len(outer) - 1; i >= 0; i-- {
				v := outer[i]
				ap.add(val, v, q%ext[v])
				q /= ext[v]
			}
			o.runAll(fr, &cp, val, runs, nruns, stride, dst, (p-p0)*ld)
		}
		cp.flush()
		return ld
	}
	// Inner runs over the block of P rows along the axis, outer points
	// over K.
	for p := p0; p < p1; {
		q, at := p, 0
		r := runs[nruns*stride : (nruns+1)*stride]
		c := r[3:]
		clear(c)
		for i := len(o.pVar) - 1; i >= 0; i-- {
			v := o.pVar[i]
			if v == ax {
				at = q % ext[v]
			} else {
				ap.add(c, v, q%ext[v])
			}
			q /= ext[v]
		}
		n := min(ext[ax]-at, p1-p)
		r[0], r[1], r[2] = at, at+n, p-p0
		nruns++
		p += n
	}
	for _, v := range o.kVar {
		pos[v] = first(v)
	}
	copy(val, base)
	for _, v := range o.kVar {
		ap.add(val, v, pos[v])
	}
	if ap.rowsFast() && len(o.kVar) > 0 {
		ap.packCols(fr, o.kVar, pos, first, end, val, runs, nruns, stride, ld, dst)
		return ld
	}
	o.packTaps(fr, first, end, val, pos, runs[:nruns*stride], stride, ld, dst, runs[nruns*stride:])
	return ld
}

// packTaps is the K-major packing of the tabulated runs of P rows along the
// axis when packCols does not apply, as for the im2col of a channels-first
// convolution, whose bounds move along the runs. The K variables that no
// bound involves (a convolution's input channels) only shift the source, so
// the in-range part of every run is found once for each point of the other
// K variables (a tap), consecutive whole runs merged, and written for every
// value of the shifting ones. The bounds no run contributes to are applied
// once per tap. pos and val hold the first K point's positions and form
// values; scratch holds len(ext)+5·runs integers.
func (o *gemmOperand) packTaps(fr *frame, first, end func(int) int, val, pos, runs []int, stride, ld int, dst []float32, scratch []int) {
	ap := o.affine
	nf, ax := len(ap.forms), ap.axis
	st := ap.coefT[ax][0]
	kst, desc := scratch[:len(ap.ext)], scratch[len(ap.ext):]
	var shifts uint64 // bit i: kVar[i] is in no bound
	n := 1
	for i := len(o.kVar) - 1; i >= 0; i-- {
		v := o.kVar[i]
		kst[v] = n
		n *= end(v) - first(v)
		if i < 64 && !slices.ContainsFunc(ap.coefT[v][1:], func(c int) bool { return c != 0 }) {
			shifts |= 1 << i
		}
	}
	shift := func(i int) bool { return i < 64 && shifts>>i&1 != 0 }
	var same uint64 // bit f: no run contributes to form f
	for f := 1; f < min(nf, 64); f++ {
		same |= 1 << f
		for i := 0; i < len(runs); i += stride {
			if runs[i+3+f] != 0 {
				same &^= 1 << f
				break
			}
		}
	}
	// next advances the odometer over the K variables for which shift
	// reports want, calling move for each change, and reports false when it
	// wraps around.
	next := func(want bool, move func(v, d int)) bool {
		for i := len(o.kVar) - 1; i >= 0; i-- {
			v := o.kVar[i]
			if shift(i) != want {
				continue
			}
			if pos[v]+1 < end(v) {
				pos[v]++
				move(v, 1)
				return true
			}
			move(v, first(v)-pos[v])
			pos[v] = first(v)
		}
		return false
	}
	src := fr.bufs[ap.buf]
	kk, delta := 0, 0
	shiftMove := func(v, d int) { kk += d * kst[v]; delta += d * ap.coefT[v][0] }
	tapMove := func(v, d int) { kk += d * kst[v]; ap.add(val, v, d) }
	for {
		tlo, thi := 0, ap.ext[ax]
		for f := 1; f < nf; f++ {
			if f < 64 && same>>f&1 != 0 {
				tlo, thi = interval(val[f], ap.coefT[ax][f], ap.forms[f].bound, tlo, thi)
			}
		}
		nd := 0
		for i := 0; i < len(runs); i += stride {
			r := runs[i : i+stride]
			a, b, at, c := r[0], r[1], r[2], r[3:]
			lo, hi := max(a, tlo), min(b, thi)
			for f := 1; f < nf && lo < hi; f++ {
				if f >= 64 || same>>f&1 == 0 {
					lo, hi = interval(val[f]+c[f], ap.coefT[ax][f], ap.forms[f].bound, lo, hi)
				}
			}
			lo = min(lo, b)
			hi = max(lo, min(hi, b))
			off := val[0] + c[0] + st*lo
			if p := desc[max(0, nd-1)*5:]; nd > 0 && st == 1 && lo == a && hi == b && p[2] == 0 && p[3] == p[1] &&
				p[0]+p[1] == at && p[4]+p[1] == off {
				p[1] += b - a
				p[3] += b - a
				continue
			}
			d := desc[nd*5 : nd*5+5]
			d[0], d[1], d[2], d[3], d[4] = at, b-a, lo-a, hi-a, off
			nd++
		}
		for {
			row := dst[kk*ld:]
			for j := range nd {
				d := desc[j*5 : j*5+5]
				at, lo, hi := d[0], d[0]+d[2], d[0]+d[3]
				clear(row[at:lo])
				if lo < hi {
					if seg := row[lo:hi]; ap.isBool {
						for i := range seg {
							seg[i] = b2f32(src.b[d[4]+delta+i*st])
						}
					} else {
						if st != 2 || !simdGather2(seg, src.f32, d[4]+delta) {
							gatherF(seg, src.f32, d[4]+delta, st)
						}
					}
				}
				clear(row[hi : at+d[1]])
			}
			if !next(true, shiftMove) {
				break
			}
		}
		if !next(false, tapMove) {
			return
		}
	}
}

// runAll writes every tabulated run at the outer point whose form values
// are outer, the runs' destinations offset by at.
func (o *gemmOperand) runAll(fr *frame, cp *copier, outer, runs []int, nruns, stride int, dst []float32, at int) {
	ap := o.affine
	nf := len(outer)
	v := fr.pk[len(fr.pk)-nf:]
	for i := range nruns {
		r := runs[i*stride : (i+1)*stride]
		c := r[3 : 3+nf]
		for f := range v {
			v[f] = outer[f] + c[f]
		}
		ap.run(fr, cp, v, r[0], r[1], dst, at+r[2])
	}
}

// rowsFast reports whether packRows applies: runs along a contiguous axis
// whose bounds do not depend on the position along the run, so that every
// run of a row is copied whole or not at all.
func (ap *affinePacker) rowsFast() bool {
	if ap.axis < 0 || ap.isBool || ap.forms[0].coef[ap.axis] != 1 {
		return false
	}
	for _, f := range ap.forms[1:] {
		if f.coef[ap.axis] != 0 {
			return false
		}
	}
	return true
}

// packRows is the P-major packing of rows p0..p1 when rowsFast holds. The
// rows are taken in blocks along the innermost P variable, over which every
// form is affine, and each tabulated run is written for the whole block at
// once: the rows where its bounds hold (an interval, found once) get a copy,
// the others zeros. That replaces a bounds check per run and row by one per
// run and block, the cost that dominated the im2col of small-channel
// convolutions.
func (ap *affinePacker) packRows(fr *frame, ext, outer, base, val, runs []int, nruns, stride, ld int, dst []float32, p0, p1 int) {
	nf := len(ap.forms)
	v := outer[len(outer)-1]
	ev := ext[v]
	step := ap.coefT[v]
	src := fr.bufs[ap.buf].f32
	for p := p0; p < p1; {
		L := min(ev-p%ev, p1-p)
		copy(val, base)
		q := p
		for i := len(outer) - 1; i >= 0; i-- {
			u := outer[i]
			ap.add(val, u, q%ext[u])
			q /= ext[u]
		}
		rowAt := (p - p0) * ld
		for i := range nruns {
			r := runs[i*stride : (i+1)*stride]
			c := r[3 : 3+nf]
			lo, hi := 0, L
			for f := 1; f < nf && lo < hi; f++ {
				lo, hi = interval(val[f]+c[f], step[f], ap.forms[f].bound, lo, hi)
			}
			blockRun(dst, src, rowAt+r[2], ld, r[1]-r[0], lo, hi, L, val[0]+c[0]+r[0], step[0])
		}
		p += L
	}
}

// packCols is the K-major packing when rowsFast holds (the runs are of P
// rows along a contiguous axis, as in a weight gradient's im2col): the K
// points are taken in blocks along the innermost K variable, and each run
// is written for the whole block, its bounds found once per block as in
// packRows. pos and val hold the first K point's positions and form values.
func (ap *affinePacker) packCols(fr *frame, kVar, pos []int, first, end func(int) int, val, runs []int, nruns, stride, ld int, dst []float32) {
	nf := len(ap.forms)
	v := kVar[len(kVar)-1]
	step := ap.coefT[v]
	src := fr.bufs[ap.buf].f32
	for kk := 0; ; {
		L := end(v) - pos[v]
		for i := range nruns {
			r := runs[i*stride : (i+1)*stride]
			c := r[3 : 3+nf]
			lo, hi := 0, L
			for f := 1; f < nf && lo < hi; f++ {
				lo, hi = interval(val[f]+c[f], step[f], ap.forms[f].bound, lo, hi)
			}
			blockRun(dst, src, kk*ld+r[2], ld, r[1]-r[0], lo, hi, L, val[0]+c[0]+r[0], step[0])
		}
		kk += L
		// The next block: the innermost variable back to its start, the
		// others advanced like an odometer.
		ap.add(val, v, first(v)-pos[v])
		pos[v] = first(v)
		i := len(kVar) - 2
		for ; i >= 0; i-- {
			u := kVar[i]
			if pos[u]+1 < end(u) {
				pos[u]++
				ap.add(val, u, 1)
				break
			}
			ap.add(val, u, first(u)-pos[u])
			pos[u] = first(u)
		}
		if i < 0 {
			return
		}
	}
}

// blockRun writes one run of n elements for each of the L points of a block,
// point j at dst[at+j·ld]: a copy of src from off+j·step for the points in
// [lo, hi), where the run's bounds hold, and zeros for the others.
func blockRun(dst, src []float32, at, ld, n, lo, hi, L, off, step int) {
	j := 0
	for ; j < lo; j++ {
		clear(dst[at+j*ld : at+j*ld+n])
	}
	off += lo * step
	if hi > lo && step >= 0 {
		gemm.CopyRows(dst[at+lo*ld:], ld, src[off:], step, n, hi-lo)
		j = hi
	}
	for ; j < hi; j++ {
		copy(dst[at+j*ld:at+j*ld+n], src[off:off+n])
		off += step
	}
	for ; j < L; j++ {
		clear(dst[at+j*ld : at+j*ld+n])
	}
}
