package cpu

import (
	"slices"

	"github.com/tartanml/tartan/kir"
	"github.com/tartanml/tartan/tile"
)

// gemvKernel executes a matrix product with at most gemvMaxCols columns (or
// rows) as dot products read straight from the operands, without the
// packing and the mostly empty micro-kernel tiles of the gemm path.
//
// Of the two operands, the "matrix" is the one over the many output points
// (its P group: the rows when the output has few columns, else the
// columns) and the "vector" the one over the few (its J group, at most
// gemvMaxCols points). K is walked as segments: every point of the K
// variables but the axis, the innermost K variable with more than one
// value, along which the matrix is contiguous. Every index the kernel uses
// is affine, so on a segment each Where condition and each possibly
// out-of-range dimension of a load holds on one interval of the axis: the
// dot product of a segment runs over the intersection, read in place from
// the matrix.
//
// The vector is packed once per batch point into a dense [J][K] array, zero
// where its own conditions exclude a point (as gemm's packing does); the
// conditions on the matrix side, and those on K alone, exclude points by
// not reading them at all. Sums accumulate in float32, like gemm's, in an
// order fixed by the kernel alone (two accumulators per dot, segments in
// order), so results do not depend on the number of workers. The Epilogue
// is then applied in parallel over the output, as the gemm path's direct
// mode applies it.
type gemvKernel struct {
	k      *kir.Kernel
	out    int
	ext    []int // extent of every kernel variable
	batch  []int
	pVar   []int // the matrix operand's group
	jVar   []int // the vector operand's group
	matRow bool  // the matrix feeds the output's rows (else its columns)
	// axpy: the sum runs point by point of K (segments of one point), each
	// adding its vector value times a run of matrix points along
	// pVar[pin] to a run of outputs (a depthwise convolution, a vector
	// times a matrix); else dot products along the axis.
	axpy bool
	// Axpy form: axLo[s], axHi[s] bound the indices along pVar[pin] where
	// the matrix's conditions that vary only along it (and with K) hold at
	// K point s; rowForms are the conditions constant along it, checked
	// per run, and mixForms the others, narrowed per run.
	axLo, axHi         []int
	rowForms, mixForms []int
	// span: a block may hold whole rows along pVar[pin-1] too, its K
	// points' ranges of rows found once; with contig the matrix continues
	// from row to row as the outputs do (a stride-1 convolution), so that
	// one axpy covers several rows.
	span, contig bool
	pin          int // position in pVar of the innermost variable with more than one value, -1 if none
	axis         int // the innermost K variable with more than one value
	runLen       int // its extent
	nb           int
	np           int
	nj           int
	nk           int
	nseg         int // K points per axis value
	mat          gemvSide
	vec          gemvSide
	// vecPacked holds the vector of every batch point, [nb][nj][nk].
	vecPacked []float32
	epi       *epilogueRunner
	scratchC  []float32 // C when the output buffer is not float32
	needEpi   bool
	pb        int // matrix points per task, a multiple of 4
	tasksPerB int
	workers   int
	// Run state.
	x     *Executable
	phase uint8
}

// Limits of the matrix-vector path.
const (
	gemvMaxCols  = 4       // at most this many points in the vector's group
	gemvMinRun   = 8       // shortest axis worth a dot product per segment
	gemvMaxForms = 16      // offset and conditions per operand
	gemvMaxVars  = 16      // variables per group
	gemvMaxTable = 1 << 18 // entries of a segment table
	gemvMaxPack  = 1 << 24 // packed vector elements
	gemvTaskWork = 1 << 15 // multiply-adds per task
	gemvMaxAxpyK = 1 << 10 // K points of an axpy-form product
	axpyBlock    = 1024    // outputs an axpy-form sum holds at a time
	axpyMinRun   = 2       // shortest run of outputs for the axpy form
)

// affForm is an affine function of the kernel variables' indices (their
// values less their range's Lo): konst + Σ coef[v]·index v. A condition
// form holds where 0 ≤ value < bound.
type affForm struct {
	coef  []int
	konst int
	bound int
}

func (a *affForm) equal(b *affForm) bool {
	if a.konst != b.konst || a.bound != b.bound || len(a.coef) != len(b.coef) {
		return false
	}
	for i := range a.coef {
		if a.coef[i] != b.coef[i] {
			return false
		}
	}
	return true
}

// gemvSide is one operand: the buffer, its flat offset (forms[0]) and the
// conditions that exclude its points (forms[1:]).
type gemvSide struct {
	buf   int
	forms []affForm
	// seg[s·len(forms)+f] is form f's part from the K variables other than
	// the axis at segment s; axisCoef[f] its coefficient of the axis.
	seg      []int
	axisCoef []int
}

// addForm appends a form unless an equal one is there.
func (sd *gemvSide) addForm(f affForm) {
	for i := range sd.forms {
		if sd.forms[i].equal(&f) {
			return
		}
	}
	sd.forms = append(sd.forms, f)
}

// newGemvKernel plans k, when the compiler scheduled it as a matrix
// product, as a matrix-vector product (loops of one point are gone: package
// compile squeezes them). It reports false when the product is not one.
func newGemvKernel(p *kir.Program, k *kir.Kernel, r *regs) (*gemvKernel, bool) {
	if k.Schedule.Strategy != "gemm" || k.Schedule.GEMM == nil {
		return nil, false
	}
	return planGemv(p, k, k.Schedule.GEMM, r)
}

// planGemv plans k, seen as the product v, or reports false when it is not
// a matrix-vector product this executor handles.
func planGemv(p *kir.Program, k *kir.Kernel, v *kir.GEMMView, r *regs) (*gemvKernel, bool) {
	if k.Agg != tile.Sum || len(k.Reduce) == 0 || k.Body.Op != kir.Apply || k.Body.Fn != tile.Mul ||
		laneOf(k.Body.DType) != laneF || v.A == nil || v.B == nil || v.A.Op != kir.Load || v.B.Op != kir.Load ||
		laneOf(v.A.DType) != laneF || laneOf(v.B.DType) != laneF {
		return nil, false
	}
	nout := len(k.Shape)
	ranges := k.VarRanges()
	nv := len(ranges)
	g := &gemvKernel{k: k, out: k.Out, batch: v.Batch, workers: k.Schedule.Workers}
	g.ext = make([]int, nv)
	lo := make([]int, nv)
	for i, rg := range ranges {
		g.ext[i] = max(0, rg.Hi-rg.Lo+1)
		lo[i] = rg.Lo
	}
	outVars := make([]int, nout)
	for i := range outVars {
		outVars[i] = i
	}
	kVar := make([]int, len(k.Reduce))
	for i := range kVar {
		kVar[i] = nout + i
	}
	if !sameVars(kVar, v.K) {
		return nil, false
	}
	rowVar, colVar, rowLoad, colLoad := v.M, v.N, v.A, v.B
	switch {
	case sameVars(outVars, v.Batch, v.M, v.N):
	case sameVars(outVars, v.Batch, v.N, v.M):
		rowVar, colVar, rowLoad, colLoad = v.N, v.M, v.B, v.A
	default:
		return nil, false
	}
	prod := func(vs []int) int {
		n := 1
		for _, x := range vs {
			n *= g.ext[x]
		}
		return n
	}
	nr, nc := prod(rowVar), prod(colVar)
	matLoad, vecLoad := rowLoad, colLoad
	switch {
	case nc <= gemvMaxCols && nr >= nc:
		g.matRow, g.pVar, g.jVar = true, rowVar, colVar
	case nr <= gemvMaxCols:
		g.matRow, g.pVar, g.jVar = false, colVar, rowVar
		matLoad, vecLoad = colLoad, rowLoad
	default:
		return nil, false
	}
	g.nb, g.np, g.nj, g.nk = prod(g.batch), prod(g.pVar), prod(g.jVar), prod(kVar)
	if g.nb == 0 || g.np == 0 || g.nj == 0 || g.nk == 0 ||
		len(g.batch) > gemvMaxVars || len(g.pVar) > gemvMaxVars || len(g.jVar) > gemvMaxVars {
		return nil, false
	}
	matSet, vecSet := map[int]bool{}, map[int]bool{}
	kir.ExprVars(matLoad, matSet)
	kir.ExprVars(vecLoad, vecSet)
	if !subset(matSet, g.batch, g.pVar, kVar) || !subset(vecSet, g.batch, g.jVar, kVar) {
		return nil, false
	}
	// The axis: the innermost K variable with more than one value, long
	// enough to be worth a dot product per segment.
	g.axis = -1
	for i := len(kVar) - 1; i >= 0; i-- {
		if g.ext[kVar[i]] > 1 {
			g.axis = kVar[i]
			break
		}
	}
	g.pin = -1
	for i := len(g.pVar) - 1; i >= 0; i-- {
		if g.ext[g.pVar[i]] > 1 {
			g.pin = i
			break
		}
	}
	if g.axis < 0 || g.ext[g.axis] < gemvMinRun {
		// Too short a sum per segment for dot products: axpy form, when the
		// matrix's points run long enough along pVar[pin] and the sum is
		// short.
		if g.pin < 0 || g.ext[g.pVar[g.pin]] < axpyMinRun || g.nk > gemvMaxAxpyK {
			return nil, false
		}
		g.axpy, g.axis = true, -1
	}
	g.runLen, g.nseg = 1, g.nk
	if !g.axpy {
		g.runLen = g.ext[g.axis]
		g.nseg = g.nk / g.runLen
	}

	s := newSpace(p, k, false, 0)
	// form converts an affine form over the variables' values to one over
	// their indices.
	form := func(coef []int, konst, bound int) affForm {
		f := affForm{coef: append([]int(nil), coef...), konst: konst, bound: bound}
		for v, c := range f.coef {
			f.konst += c * lo[v]
		}
		return f
	}
	side := func(sd *gemvSide, load *kir.Expr) bool {
		li := s.load(load)
		sd.buf = load.Buf
		switch li.class {
		case loadDirect:
			sd.forms = []affForm{form(li.flat.coef, li.flat.konst, 0)}
		case loadChecked:
			if load.OOB == kir.Fill && load.Value != 0 {
				return false
			}
			sd.forms = []affForm{form(li.flat.coef, li.flat.konst, 0)}
			shape := p.Buffers[load.Buf].Shape
			for d, ix := range li.ix {
				l, h, ok := kir.Bounds(ix, ranges)
				if ok && l >= 0 && h < shape[d] {
					continue
				}
				sd.addForm(form(li.dims[d].coef, li.dims[d].konst, shape[d]))
			}
		default:
			return false
		}
		return true
	}
	if !side(&g.mat, matLoad) || !side(&g.vec, vecLoad) {
		return nil, false
	}
	// The matrix must be contiguous along the axis.
	if !g.axpy && g.mat.forms[0].coef[g.axis] != 1 {
		return nil, false
	}
	// Conditions on the matrix's variables (or on K and the batch alone)
	// exclude matrix points; those on the vector's group are packed as
	// zeros.
	for _, c := range k.Where {
		info := s.ix(c.X)
		if info.aff == nil {
			return nil, false
		}
		f := form(info.aff.coef, info.aff.konst, c.Bound)
		set := map[int]bool{}
		kir.IxVars(c.X, set)
		switch {
		case subset(set, g.batch, g.pVar, kVar):
			g.mat.addForm(f)
		case subset(set, g.batch, g.jVar, kVar):
			g.vec.addForm(f)
		default:
			return nil, false
		}
	}
	if len(g.mat.forms) > gemvMaxForms || len(g.vec.forms) > gemvMaxForms ||
		g.nseg*max(len(g.mat.forms), len(g.vec.forms)) > gemvMaxTable || g.nb*g.nj*g.nk > gemvMaxPack {
		return nil, false
	}
	g.mat.table(g.ext, kVar, g.axis, g.nseg)
	g.vec.table(g.ext, kVar, g.axis, g.nseg)
	if g.axpy {
		g.planAxpy()
	}
	g.vecPacked = make([]float32, g.nb*g.nj*g.nk)

	g.epi = newEpilogueRunner(p, k, r)
	if p.Buffers[k.Out].DType != tile.Float32 {
		g.scratchC = make([]float32, g.nb*g.np*g.nj)
	}
	g.needEpi = g.epi.prog != nil || g.scratchC != nil
	g.pb = max(4, gemvTaskWork/max(1, g.nk*g.nj))
	g.pb = min((g.pb+3)&^3, (g.np+3)&^3)
	g.tasksPerB = (g.np + g.pb - 1) / g.pb
	return g, true
}

// table fills the side's segment table: the part of every form from the K
// variables other than the axis (every K variable when axis < 0, each
// segment one K point), segment by segment in row-major order.
func (sd *gemvSide) table(ext, kVar []int, axis, nseg int) {
	nf := len(sd.forms)
	sd.axisCoef = make([]int, nf)
	for f := range sd.forms {
		if axis >= 0 {
			sd.axisCoef[f] = sd.forms[f].coef[axis]
		}
	}
	sd.seg = make([]int, nseg*nf)
	idx := make([]int, len(kVar))
	for s := range nseg {
		for f := range sd.forms {
			sum := 0
			for i, v := range kVar {
				if v != axis {
					sum += sd.forms[f].coef[v] * idx[i]
				}
			}
			sd.seg[s*nf+f] = sum
		}
		for i := len(kVar) - 1; i >= 0; i-- {
			v := kVar[i]
			if v == axis {
				continue
			}
			idx[i]++
			if idx[i] < ext[v] {
				break
			}
			idx[i] = 0
		}
	}
}

// base sets vals[f] to every form's value at index 0 of all variables but
// those of groups, which take the indices of the row-major positions pos
// within them.
func (sd *gemvSide) base(vals []int, ext []int, groups [][]int, pos []int) {
	for f := range sd.forms {
		vals[f] = sd.forms[f].konst
	}
	for gi, vs := range groups {
		rem := pos[gi]
		for i := len(vs) - 1; i >= 0; i-- {
			v := vs[i]
			e := ext[v]
			ix := rem % e
			rem /= e
			if ix == 0 {
				continue
			}
			for f := range sd.forms {
				vals[f] += sd.forms[f].coef[v] * ix
			}
		}
	}
}

// interval narrows [lo, hi) of the axis to where the conditions hold, the
// forms' values at axis index 0 of the segment being vals (vals[0], the
// offset, is not a condition).
func (sd *gemvSide) interval(vals []int, lo, hi int) (int, int) {
	for f := 1; f < len(vals) && lo < hi; f++ {
		x, c, b := vals[f], sd.axisCoef[f], sd.forms[f].bound
		switch {
		case c == 0:
			if x < 0 || x >= b {
				return 0, 0
			}
		case c > 0:
			// 0 ≤ x + c·i ≤ b-1.
			lo = max(lo, ceilDiv(-x, c))
			hi = min(hi, floorDiv(b-1-x, c)+1)
		default:
			// 0 ≤ x − d·i ≤ b-1 with d = −c.
			d := -c
			lo = max(lo, ceilDiv(x-b+1, d))
			hi = min(hi, floorDiv(x, d)+1)
		}
	}
	return lo, hi
}

// interval4 is interval for four points whose forms' values are vals,
// vals+step, vals+2·step and vals+3·step: it reports whether the four
// intervals are equal and, if so, returns it. Each bound of one condition
// is monotone in the point, so a condition whose bounds agree at the first
// and the fourth point gives all four the same.
func (sd *gemvSide) interval4(vals, step []int, hi int) (int, int, bool) {
	lo := 0
	for f := 1; f < len(vals); f++ {
		x, c, b, d := vals[f], sd.axisCoef[f], sd.forms[f].bound, step[f]
		y := x + 3*d
		switch {
		case c == 0:
			inX, inY := x >= 0 && x < b, y >= 0 && y < b
			switch {
			case inX && inY:
			case !inX && !inY && (x < 0) == (y < 0):
				return 0, 0, true
			default:
				return 0, 0, false
			}
		default:
			l0, h0 := sd.bounds(x, c, b)
			if d != 0 {
				l3, h3 := sd.bounds(y, c, b)
				if l3 != l0 && max(l3, lo) != max(l0, lo) || h3 != h0 && min(h3, hi) != min(h0, hi) {
					return 0, 0, false
				}
			}
			lo, hi = max(lo, l0), min(hi, h0)
		}
	}
	return lo, hi, true
}

// bounds returns the interval of axis indices i where 0 ≤ x + c·i < b, for
// c ≠ 0.
func (sd *gemvSide) bounds(x, c, b int) (int, int) {
	switch c {
	case 1: // most often, and no divisions
		return -x, b - x
	case -1:
		return x - b + 1, x + 1
	}
	if c > 0 {
		return ceilDiv(-x, c), floorDiv(b-1-x, c) + 1
	}
	return ceilDiv(x-b+1, -c), floorDiv(x, -c) + 1
}

func (g *gemvKernel) cTarget(x *Executable) []float32 {
	if g.scratchC != nil {
		return g.scratchC
	}
	return x.bufs[g.out].f32
}

func (g *gemvKernel) run(x *Executable) {
	g.x = x
	g.phase = gemvPack
	x.pool.run(g, g.nb, g.workers)
	g.phase = gemvDots
	x.pool.run(g, g.nb*g.tasksPerB, g.workers)
	if g.needEpi {
		g.phase = gemvEpilogue
		span := g.epiSpan()
		x.pool.run(g, (g.nb*g.np*g.nj+span-1)/span, g.workers)
	}
	g.x = nil
}

// The phases of a run.
const (
	gemvPack = iota
	gemvDots
	gemvEpilogue
)

func (g *gemvKernel) runTask(w, t int) {
	switch g.phase {
	case gemvPack:
		g.packVector(t)
		return
	case gemvEpilogue:
		g.finish(w, t)
		return
	}
	b, blk := t/g.tasksPerB, t%g.tasksPerB
	p0 := blk * g.pb
	p1 := min(g.np, p0+g.pb)
	c := g.cTarget(g.x)
	cOff := b * g.np * g.nj
	if g.axpy {
		g.axpys(b, p0, p1, c, cOff)
		return
	}
	g.dots(b, p0, p1, c, cOff)
}

// epiSpan returns the number of output points one epilogue task finishes:
// whole rows of the epilogue's loops when they are shorter than a chunk,
// so that the runner can take several rows per pass, else any length.
func (g *gemvKernel) epiSpan() int {
	span := 1 << 14
	if l := g.epi.rowLen; l > 0 && l < chunk {
		span = max(1, span/l) * l
	}
	return span
}

// finish applies the epilogue to epilogue task t's output points.
func (g *gemvKernel) finish(w, t int) {
	fr := g.x.frames[w]
	fr.rows = 1
	g.epi.bind(fr)
	n := g.nb * g.np * g.nj
	span := g.epiSpan()
	g.epi.apply(fr, g.cTarget(g.x), t*span, min(n, (t+1)*span))
}

// packVector writes batch point b's vector into vecPacked, zero wherever a
// condition of the vector's side fails.
func (g *gemvKernel) packVector(b int) {
	sd := &g.vec
	src := g.x.bufs[sd.buf].f32
	nf := len(sd.forms)
	var base, vals [gemvMaxForms]int
	sa := sd.axisCoef[0]
	for j := range g.nj {
		sd.base(base[:nf], g.ext, [][]int{g.batch, g.jVar}, []int{b, j})
		dst := g.vecPacked[(b*g.nj+j)*g.nk : (b*g.nj+j+1)*g.nk]
		for s := range g.nseg {
			for f := range nf {
				vals[f] = base[f] + sd.seg[s*nf+f]
			}
			lo, hi := sd.interval(vals[:nf], 0, g.runLen)
			d := dst[s*g.runLen : (s+1)*g.runLen]
			if lo >= hi {
				clear(d)
				continue
			}
			clear(d[:lo])
			clear(d[hi:])
			off := vals[0]
			if sa == 1 {
				copy(d[lo:hi], src[off+lo:off+hi])
				continue
			}
			for i := lo; i < hi; i++ {
				d[i] = src[off+i*sa]
			}
		}
	}
}

// dots computes the sums of matrix points [p0, p1) of batch point b into c.
func (g *gemvKernel) dots(b, p0, p1 int, c []float32, cOff int) {
	sd := &g.mat
	a := g.x.bufs[sd.buf].f32
	nf := len(sd.forms)
	vp := g.vecPacked[b*g.nj*g.nk : (b+1)*g.nj*g.nk]
	// rv holds the forms' values at the current point, K indices 0;
	// idx the point's indices in pVar.
	var rv, vals [gemvMaxForms]int
	var idx [gemvMaxVars]int
	sd.base(rv[:nf], g.ext, [][]int{g.batch, g.pVar}, []int{b, p0})
	rem := p0
	for i := len(g.pVar) - 1; i >= 0; i-- {
		e := g.ext[g.pVar[i]]
		idx[i] = rem % e
		rem /= e
	}
	var step [gemvMaxForms]int // the forms' change from one point to the next along pVar[pin]
	if g.pin >= 0 {
		for f := range nf {
			step[f] = sd.forms[f].coef[g.pVar[g.pin]]
		}
	}
	var acc [4][gemvMaxCols]float32
	nj, nk, run := g.nj, g.nk, g.runLen
	for p := p0; p < p1; {
		n := 1
		if g.pin >= 0 && step[0] >= 0 && p+4 <= p1 && idx[g.pin]+4 <= g.ext[g.pVar[g.pin]] {
			n = 4
		}
		acc = [4][gemvMaxCols]float32{}
		for s := range g.nseg {
			segv := sd.seg[s*nf : (s+1)*nf]
			for f := range nf {
				vals[f] = rv[f] + segv[f]
			}
			if n == 4 {
				lo, hi, same := sd.interval4(vals[:nf], step[:nf], run)
				if same {
					if lo >= hi {
						continue
					}
					off := vals[0]
					for j := range nj {
						w := vp[j*nk+s*run+lo : j*nk+s*run+hi]
						d0, d1, d2, d3 := dot4(a[off+lo:], step[0], w)
						acc[0][j] += d0
						acc[1][j] += d1
						acc[2][j] += d2
						acc[3][j] += d3
					}
					continue
				}
			}
			for r := range n {
				for f := range nf {
					vals[f] = rv[f] + segv[f] + r*step[f]
				}
				l, h := sd.interval(vals[:nf], 0, run)
				if l >= h {
					continue
				}
				off := vals[0]
				for j := range nj {
					acc[r][j] += dot1(a[off+l:off+h], vp[j*nk+s*run+l:j*nk+s*run+h])
				}
			}
		}
		for r := range n {
			for j := range nj {
				if g.matRow {
					c[cOff+(p+r)*nj+j] = acc[r][j]
				} else {
					c[cOff+j*g.np+p+r] = acc[r][j]
				}
			}
		}
		// Advance n points in pVar.
		for range n {
			for i := g.pin; i >= 0; i-- {
				v := g.pVar[i]
				e := g.ext[v]
				if e == 1 {
					continue
				}
				idx[i]++
				for f := range nf {
					rv[f] += sd.forms[f].coef[v]
				}
				if idx[i] < e {
					break
				}
				for f := range nf {
					rv[f] -= sd.forms[f].coef[v] * e
				}
				idx[i] = 0
			}
		}
		p += n
	}
}

// dot1 returns Σ a[i]·w[i] over len(w) elements, with two float32
// accumulators (even and odd positions): the order dot4 uses for each of
// its rows, so that a point's sum does not depend on its neighbours.
func dot1(a, w []float32) float32 {
	n := len(w)
	a = a[:n]
	var s, t float32
	i := 0
	for ; i+2 <= n; i += 2 {
		s += a[i] * w[i]
		t += a[i+1] * w[i+1]
	}
	if i < n {
		s += a[i] * w[i]
	}
	return s + t
}

// dot4 returns the dot products of w with the four rows of len(w) elements
// starting at a[0], a[st], a[2·st] and a[3·st], each summed as dot1 does.
func dot4(a []float32, st int, w []float32) (float32, float32, float32, float32) {
	n := len(w)
	a0 := a[:n]
	a1 := a[st : st+n]
	a2 := a[2*st : 2*st+n]
	a3 := a[3*st : 3*st+n]
	var s0, s1, s2, s3, t0, t1, t2, t3 float32
	i := 0
	for ; i+2 <= n; i += 2 {
		w0, w1 := w[i], w[i+1]
		s0 += a0[i] * w0
		s1 += a1[i] * w0
		s2 += a2[i] * w0
		s3 += a3[i] * w0
		t0 += a0[i+1] * w1
		t1 += a1[i+1] * w1
		t2 += a2[i+1] * w1
		t3 += a3[i+1] * w1
	}
	if i < n {
		w0 := w[i]
		s0 += a0[i] * w0
		s1 += a1[i] * w0
		s2 += a2[i] * w0
		s3 += a3[i] * w0
	}
	return s0 + t0, s1 + t1, s2 + t2, s3 + t3
}

// planAxpy sorts the matrix's conditions for the axpy form and tabulates
// the intervals of those that vary only along pVar[pin] and K.
func (g *gemvKernel) planAxpy() {
	sd := &g.mat
	in := g.pVar[g.pin]
	for f := range sd.forms {
		sd.axisCoef[f] = sd.forms[f].coef[in]
	}
	nf, ein := len(sd.forms), g.ext[in]
	var along []int
	for f := 1; f < nf; f++ {
		mixed := false
		for _, v := range slices.Concat(g.batch, g.pVar) {
			mixed = mixed || v != in && g.ext[v] > 1 && sd.forms[f].coef[v] != 0
		}
		switch {
		case sd.axisCoef[f] == 0:
			g.rowForms = append(g.rowForms, f)
		case mixed:
			g.mixForms = append(g.mixForms, f)
		default:
			along = append(along, f)
		}
	}
	g.axLo, g.axHi = make([]int, g.nk), make([]int, g.nk)
	for s := range g.nk {
		lo, hi := 0, ein
		for _, f := range along {
			l, h := sd.bounds(sd.forms[f].konst+sd.seg[s*nf+f], sd.axisCoef[f], sd.forms[f].bound)
			lo, hi = max(lo, l), min(hi, h)
		}
		g.axLo[s], g.axHi[s] = lo, max(lo, hi)
	}
	if g.pin > 0 {
		o := g.pVar[g.pin-1]
		g.span = len(g.mixForms) == 0 && ein <= axpyBlock/2
		g.contig = sd.forms[0].coef[o] == ein*sd.axisCoef[0]
	}
}

// axpys computes the sums of matrix points [p0, p1) of batch point b into c
// in axpy form: in blocks of at most axpyBlock points along pVar[pin], each
// K point in order adding its vector value times the matrix over the
// interval of the block where the matrix's conditions hold, in float32
// from zero (a product rounded, then added), as the matrix-product path's
// kernels without fused multiply-adds would. With span, a block holds
// whole rows; with contig too, it takes one run per K point from its first
// to its last point where the conditions hold, the excluded points between
// rows (a padded convolution's edge columns) kept and restored around it,
// so every output gets the same sum as row by row.
func (g *gemvKernel) axpys(b, p0, p1 int, c []float32, cOff int) {
	sd := &g.mat
	a := g.x.bufs[sd.buf].f32
	nf := len(sd.forms)
	vp := g.vecPacked[b*g.nj*g.nk : (b+1)*g.nj*g.nk]
	var rv [gemvMaxForms]int
	var idx [gemvMaxVars]int
	sd.base(rv[:nf], g.ext, [][]int{g.batch, g.pVar}, []int{b, p0})
	rem := p0
	for i := len(g.pVar) - 1; i >= 0; i-- {
		e := g.ext[g.pVar[i]]
		idx[i] = rem % e
		rem /= e
	}
	var acc, kept [axpyBlock]float32
	nj, nk, in := g.nj, g.nk, g.pVar[g.pin]
	ein, st := g.ext[in], sd.axisCoef[0]
	for p := p0; p < p1; {
		i0 := idx[g.pin]
		n, rows := min(axpyBlock, ein-i0, p1-p), 1
		if g.span && i0 == 0 {
			if rows = min(axpyBlock/ein, g.ext[g.pVar[g.pin-1]]-idx[g.pin-1], (p1-p)/ein); rows > 1 {
				n = rows * ein
			} else {
				rows = 1
			}
		}
		for j := range nj {
			acc := acc[:n]
			clear(acc)
			w := vp[j*nk : (j+1)*nk]
		segs:
			for s := range nk {
				segv := sd.seg[s*nf : (s+1)*nf]
				if rows > 1 {
					g.axpyRows(acc[:n], kept[:], w[s], a, rv[:nf], segv, s, rows)
					continue
				}
				for _, f := range g.rowForms {
					if x := rv[f] + segv[f]; x < 0 || x >= sd.forms[f].bound {
						continue segs
					}
				}
				lo, hi := max(0, g.axLo[s]-i0), min(n, g.axHi[s]-i0)
				for _, f := range g.mixForms {
					l, h := sd.bounds(rv[f]+segv[f], sd.axisCoef[f], sd.forms[f].bound)
					lo, hi = max(lo, l), min(hi, h)
				}
				if lo < hi {
					axpy(acc[lo:hi], w[s], a, rv[0]+segv[0]+lo*st, st)
				}
			}
			switch {
			case !g.matRow:
				copy(c[cOff+j*g.np+p:], acc)
				continue
			case nj == 1:
				copy(c[cOff+p:], acc)
				continue
			}
			for r, x := range acc {
				c[cOff+(p+r)*nj+j] = x
			}
		}
		// Advance n points along pVar[pin] (rows rows along the variable
		// outside it), carrying into the outer ones.
		p += n
		at, adv := g.pin, n
		if rows > 1 {
			at, adv = g.pin-1, rows
		}
		idx[at] += adv
		for f := range nf {
			rv[f] += sd.forms[f].coef[g.pVar[at]] * adv
		}
		for i := at; i > 0 && idx[i] == g.ext[g.pVar[i]]; {
			v := g.pVar[i]
			for f := range nf {
				rv[f] -= sd.forms[f].coef[v] * g.ext[v]
			}
			idx[i] = 0
			i--
			idx[i]++
			for f := range nf {
				rv[f] += sd.forms[f].coef[g.pVar[i]]
			}
		}
	}
}

// axpyRows adds K point s's term to acc, the block of rows whole rows
// along pVar[pin] from the matrix point whose form values are rv; kept
// holds the outputs between rows that a run covers but must not change.
func (g *gemvKernel) axpyRows(acc, kept []float32, w float32, a []float32, rv, segv []int, s, rows int) {
	sd := &g.mat
	o, ein, st := g.pVar[g.pin-1], g.ext[g.pVar[g.pin]], sd.axisCoef[0]
	r0, r1 := 0, rows
	for _, f := range g.rowForms {
		x, c, b := rv[f]+segv[f], sd.forms[f].coef[o], sd.forms[f].bound
		if c != 0 {
			l, h := sd.bounds(x, c, b)
			r0, r1 = max(r0, l), min(r1, h)
		} else if x < 0 || x >= b {
			return
		}
	}
	c0, c1 := g.axLo[s], g.axHi[s]
	if r0 >= r1 || c0 >= c1 {
		return
	}
	if !g.contig {
		for r := r0; r < r1; r++ {
			axpy(acc[r*ein+c0:r*ein+c1], w, a, rv[0]+segv[0]+r*sd.forms[0].coef[o]+c0*st, st)
		}
		return
	}
	lo, hi := r0*ein+c0, (r1-1)*ein+c1
	k := 0
	for i := lo + c1 - c0; i < hi && c1-c0 < ein; i += ein {
		for j := i; j < i+ein-(c1-c0); j++ {
			kept[k] = acc[j]
			k++
		}
	}
	axpy(acc[lo:hi], w, a, rv[0]+segv[0]+lo*st, st)
	k = 0
	for i := lo + c1 - c0; i < hi && c1-c0 < ein; i += ein {
		for j := i; j < i+ein-(c1-c0); j++ {
			acc[j] = kept[k]
			k++
		}
	}
}

// axpy adds w·a[off + i·st] to d[i] for every i, the product rounded to
// float32 before the sum.
func axpy(d []float32, w float32, a []float32, off, st int) {
	i := simdAxpy(d, w, a, off, st)
	for ; i < len(d); i++ {
		d[i] += float32(w * a[off+i*st])
	}
}
