package cpu

import (
	"slices"

	"github.com/tartanml/tartan/kir"
	"github.com/tartanml/tartan/tile"
)

// gemvKernel executes a matrix product with at most gemvMaxCols columns (or
// rows) whose sum is short on its innermost K variable (a depthwise
// convolution over a channels-first layout, whose K is the window) in axpy
// form: each K point adds its vector value times a run of the matrix, read
// in place, to a run of outputs, without the packing (im2col) and the
// mostly empty micro-kernel tiles of the gemm path.
//
// Measured on 2026-12-03 (AMD EPYC, 2 cores, `tartan bench --onnx` of
// torchvision's MobileNetV2 at batch 1, medians of 3 interleaved runs):
// 16.4 ms here against 41.8 ms with these kernels on the gemm path and
// 105.8 ms on the loops executor. Products whose sum runs long on its
// innermost K variable (a fully connected layer at batch 1) go to the gemm
// path, as fast as the dot products this executor ran for them (MobileNetV2
// 15.3 ms against 15.6 ms, ResNet-18 35.1 ms against 36.7 ms, medians of 7
// and 5 runs the same day).
//
// Of the two operands, the "matrix" is the one over the many output points
// (its P group: the rows when the output has few columns, else the
// columns) and the "vector" the one over the few (its J group, at most
// gemvMaxCols points). Every index the kernel uses is affine, so at a K
// point each Where condition and each possibly out-of-range dimension of a
// load holds on one interval along the matrix's innermost variable: the
// axpy runs over the intersection.
//
// The vector is packed once per batch point into a dense [J][K] array, zero
// where its own conditions exclude a point (as gemm's packing does); the
// conditions on the matrix side, and those on K alone, exclude points by
// not reading them at all. Sums accumulate in float32, like gemm's, in an
// order fixed by the kernel alone (K points in order), so results do not
// depend on the number of workers. The Epilogue is then applied in
// parallel over the output, as the gemm path's direct mode applies it.
type gemvKernel struct {
	k      *kir.Kernel
	out    int
	ext    []int // extent of every kernel variable
	batch  []int
	pVar   []int // the matrix operand's group
	jVar   []int // the vector operand's group
	matRow bool  // the matrix feeds the output's rows (else its columns)
	// axLo[s], axHi[s] bound the indices along pVar[pin] where
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
	pin          int // position in pVar of the innermost variable with more than one value
	nb           int
	np           int
	nj           int
	nk           int
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
	gemvMinRun   = 8       // shortest innermost K extent left to the gemm path
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
	// seg[s·len(forms)+f] is form f's part from the K variables at K point
	// s; axisCoef[f] its coefficient of the matrix's pVar[pin] (zero on
	// the vector's side).
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
	// The sum must be short on its innermost K variable with more than one
	// value (longer ones go to the gemm path).
	for i := len(kVar) - 1; i >= 0; i-- {
		if g.ext[kVar[i]] > 1 {
			if g.ext[kVar[i]] >= gemvMinRun {
				return nil, false
			}
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
	// The matrix's points must run long enough along pVar[pin], and the
	// sum be short.
	if g.pin < 0 || g.ext[g.pVar[g.pin]] < axpyMinRun || g.nk > gemvMaxAxpyK {
		return nil, false
	}

	s := newSpace(p, k, mergeNone, 0)
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
		g.nk*max(len(g.mat.forms), len(g.vec.forms)) > gemvMaxTable || g.nb*g.nj*g.nk > gemvMaxPack {
		return nil, false
	}
	g.mat.table(g.ext, kVar, g.nk)
	g.vec.table(g.ext, kVar, g.nk)
	g.planAxpy()
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
// variables, one segment per K point in row-major order.
func (sd *gemvSide) table(ext, kVar []int, nseg int) {
	nf := len(sd.forms)
	sd.axisCoef = make([]int, nf)
	sd.seg = make([]int, nseg*nf)
	idx := make([]int, len(kVar))
	for s := range nseg {
		for f := range sd.forms {
			sum := 0
			for i, v := range kVar {
				sum += sd.forms[f].coef[v] * idx[i]
			}
			sd.seg[s*nf+f] = sum
		}
		for i := len(kVar) - 1; i >= 0; i-- {
			idx[i]++
			if idx[i] < ext[kVar[i]] {
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

// holds reports whether every condition holds where the forms' values
// are vals (vals[0], the offset, is not a condition).
func (sd *gemvSide) holds(vals []int) bool {
	for f := 1; f < len(vals); f++ {
		if vals[f] < 0 || vals[f] >= sd.forms[f].bound {
			return false
		}
	}
	return true
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
	g.phase = gemvSums
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
	gemvSums
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
	g.axpys(b, p0, p1, c, cOff)
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
	fr := g.x.frame(w)
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
	for j := range g.nj {
		sd.base(base[:nf], g.ext, [][]int{g.batch, g.jVar}, []int{b, j})
		dst := g.vecPacked[(b*g.nj+j)*g.nk : (b*g.nj+j+1)*g.nk]
		for s := range g.nk {
			for f := range nf {
				vals[f] = base[f] + sd.seg[s*nf+f]
			}
			dst[s] = 0
			if sd.holds(vals[:nf]) {
				dst[s] = src[vals[0]]
			}
		}
	}
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
