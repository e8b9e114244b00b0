package cpu

import (
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
	return 3*nf + len(ap.ext) + runs*(nf+3)
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
	for f := 1; f < len(ap.forms); f++ {
		c := 0
		if ax >= 0 {
			c = ap.forms[f].coef[ax]
		}
		x := val[f] + c*a
		if c == 0 {
			if x < 0 || x >= ap.forms[f].bound {
				lo, hi = 0, 0
				break
			}
			continue
		}
		lo, hi = interval(x, c, ap.forms[f].bound, lo, hi)
		if lo >= hi {
			break
		}
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
	gatherF(d, buf.f32, off, st)
}

// packAffine is gemmOperand.pack for operands with an affine packer.
func (o *gemmOperand) packAffine(fr *frame, ext []int, batch, bvals []int, splitVar, klo, khi int, dst []float32, p0, p1 int) int {
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
			ap.packRows(fr, ext, outer, base, val, runs, nruns, stride, kc, dst, p0, p1)
			return kc
		}
		for p := p0; p < p1; p++ {
			copy(val, base)
			q := p
			for i := len(outer) - 1; i >= 0; i-- {
				v := outer[i]
				ap.add(val, v, q%ext[v])
				q /= ext[v]
			}
			rowAt := (p - p0) * kc
			o.runAll(fr, &cp, val, runs, nruns, stride, dst, rowAt)
		}
		cp.flush()
		return kc
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
	for kk := 0; ; kk++ {
		o.runAll(fr, &cp, val, runs, nruns, stride, dst, kk*np)
		i := len(o.kVar) - 1
		for ; i >= 0; i-- {
			v := o.kVar[i]
			if pos[v]+1 < end(v) {
				pos[v]++
				ap.add(val, v, 1)
				break
			}
			ap.add(val, v, first(v)-pos[v])
			pos[v] = first(v)
		}
		if i < 0 {
			break
		}
	}
	cp.flush()
	return np
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
func (ap *affinePacker) packRows(fr *frame, ext, outer, base, val, runs []int, nruns, stride, kc int, dst []float32, p0, p1 int) {
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
		rowAt := (p - p0) * kc
		for i := range nruns {
			r := runs[i*stride : (i+1)*stride]
			c := r[3 : 3+nf]
			lo, hi := 0, L
			for f := 1; f < nf && lo < hi; f++ {
				lo, hi = interval(val[f]+c[f], step[f], ap.forms[f].bound, lo, hi)
			}
			n, at := r[1]-r[0], rowAt+r[2]
			j := 0
			for ; j < lo; j++ {
				clear(dst[at+j*kc : at+j*kc+n])
			}
			off := val[0] + c[0] + r[0] + lo*step[0]
			for ; j < hi; j++ {
				copy(dst[at+j*kc:at+j*kc+n], src[off:off+n])
				off += step[0]
			}
			for ; j < L; j++ {
				clear(dst[at+j*kc : at+j*kc+n])
			}
		}
		p += L
	}
}
