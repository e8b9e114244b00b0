package cpu

import (
	"slices"

	"github.com/tartanml/tartan/backend/cpu/gemm"
	"github.com/tartanml/tartan/kir"
	"github.com/tartanml/tartan/tile"
)

// gemmKernel executes a kernel scheduled as a matrix product (a sum over
// the K loops of Load(A)·Load(B)) with package gemm, then applies the
// Epilogue.
//
// The output must be laid out as C[batch][rows][cols], rows and cols being
// the GEMM view's M and N groups in either order; the operand feeding the
// rows is the "row operand". An operand whose load is a plain strided matrix
// (in range everywhere, affine, each group of loops one stride) is handed to
// gemm as it is, with the right transposition and leading dimension;
// otherwise it is packed into a dense matrix by evaluating its load (with
// the Where conditions on its side) chunk by chunk, out-of-range and
// excluded points becoming zeros: im2col for convolutions.
//
// Two ways to run, chosen from the sizes:
//
//   - tiles: the output is cut into tiles of rows and columns (tile), each
//     task packing its rows of the row operand, multiplying them by its
//     columns of the column operand into its tile of C with a
//     single-threaded gemm and applying the epilogue to the tile while it
//     is in cache. A packed column operand is packed by the tasks of a
//     single row of tiles as they need it, or else by a parallel phase
//     before.
//   - split K: small outputs with long sums (weight gradients) cut the
//     outermost K loop into parts, each task multiplying its part into a
//     private partial product; the partials are then summed in a fixed
//     order, so results do not depend on the number of workers.
type gemmKernel struct {
	k      *kir.Kernel
	out    int
	batch  []int // kernel variables of each group
	rowVar []int
	colVar []int
	kVar   []int
	ext    []int // extent of every kernel variable
	nb     int
	nr     int
	nc     int
	nk     int
	// C[b][r][c] is the output element at the batch point's offset (the
	// batch loops' values times their outStride) + r·ldc + c.
	ldc       int
	outStride []int
	rowOp     *gemmOperand
	colOp     *gemmOperand
	epi       *epilogueRunner
	// scratchC holds C when the output buffer is not float32.
	scratchC []float32
	needEpi  bool
	mode     gemmMode
	// Tiles: blocks of mb rows and ncb columns, nbi×nbj of them, chosen
	// for tileW workers, at most mbMax rows and colMax columns where the
	// operand is packed. fuse says that each tile packs its own columns
	// (into its worker's scratch), else a phase of nbj·kParts tasks (column
	// blocks times parts of the split variable) packs the column operand
	// into colPacked first, K-major with leading dimension nc or P-major
	// with nk.
	mbMax, colMax int
	mb, ncb       int
	nbi, nbj      int
	tileW         int
	fuse          bool
	kParts        int
	colPacked     []float32
	// split K: parts of the split variable, each packed and multiplied
	// splitStep values of it at a time (blocks that stay in cache).
	split     int
	splitVar  int
	splitStep int
	innerK    int // K points per value of the split variable
	partial   []float32
	workers   int
	// Folded batch (fold): the batch loops were moved in front of the
	// column loops, making one product of foldPts·foldCols columns out of
	// foldPts narrow ones. Column j of C is then at foldOff[j/foldCols] +
	// r·ldc + j%foldCols in the output, so tiles are computed into the
	// worker's scratch (foldRows rows at most) and copied out.
	fold     bool
	foldPts  int
	foldCols int
	foldRows int
	foldOff  []int
	// Run state.
	x     *Executable
	point int     // the batch point of per-point phases
	bvals [][]int // per worker: its task's batch variable values
	phase gemmPhase
}

type gemmMode uint8

const (
	gemmTiles gemmMode = iota
	gemmSplitK
)

type gemmPhase uint8

const (
	phasePack gemmPhase = iota
	phaseTiles
	phaseSplit
	phaseCombine
)

// gemmOperand is one operand of a matrix-product kernel, seen as a matrix
// over its P group (rows or cols) and the K group.
type gemmOperand struct {
	s     *space
	load  *kir.Expr
	pVar  []int
	kVar  []int
	np    int
	nk    int
	isRow bool
	// Plain operands: the element (p, k) is at base + batch offset + p·sP +
	// k·sK; kMajor says which of sP, sK is 1 and ld the other.
	plain  bool
	buf    int
	coef   []int
	base   int
	sP, sK int
	// Plain and packed: the layout handed to gemm.
	kMajor bool
	ld     int
	// Packed operands: the load and Where conditions of this side, as a
	// program along axisVar, the innermost K variable (P-major layout) or
	// the innermost P variable (K-major layout); affine, when not nil,
	// packs the same values faster.
	prog    *prog
	axisVar int
	affine  *affinePacker
}

func subset(set map[int]bool, groups ...[]int) bool {
	allowed := map[int]bool{}
	for _, g := range groups {
		for _, v := range g {
			allowed[v] = true
		}
	}
	for v := range set {
		if !allowed[v] {
			return false
		}
	}
	return true
}

func sameVars(a []int, groups ...[]int) bool {
	var b []int
	for _, g := range groups {
		b = append(b, g...)
	}
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// newGemmKernel plans kernel k as a matrix product, or reports false when the
// kernel does not fit one (it then runs as loops).
func newGemmKernel(p *kir.Program, k *kir.Kernel, r *regs) (*gemmKernel, bool) {
	v := k.Schedule.GEMM
	if v == nil || k.Agg != tile.Sum || len(k.Reduce) == 0 || k.Body.Op != kir.Apply || k.Body.Fn != tile.Mul ||
		laneOf(k.Body.DType) != laneF || v.A.Op != kir.Load || v.B.Op != kir.Load ||
		laneOf(v.A.DType) != laneF || laneOf(v.B.DType) != laneF {
		return nil, false
	}
	nout := len(k.Shape)
	ranges := k.VarRanges()
	g := &gemmKernel{k: k, out: k.Out, batch: v.Batch, kVar: v.K, workers: k.Schedule.Workers}
	g.ext = make([]int, len(ranges))
	for i, rg := range ranges {
		g.ext[i] = max(0, rg.Hi-rg.Lo+1)
	}
	outVars := make([]int, nout)
	for i := range outVars {
		outVars[i] = i
	}
	redVars := make([]int, len(k.Reduce))
	for i := range redVars {
		redVars[i] = nout + i
	}
	if !sameVars(redVars, v.K) {
		return nil, false
	}
	// C is the output in place. Output loops ordered batch, rows, cols
	// make it a stack of dense matrices; otherwise (attention's heads
	// between its rows and columns) the group whose combined index has
	// stride 1 in the output gives the columns, the other the rows
	// (stride ldc), and each batch loop its own stride.
	outStride := make([]int, len(g.ext))
	for i, st := nout-1, 1; i >= 0; i-- {
		outStride[i] = st
		st *= g.ext[i]
	}
	g.outStride = outStride
	rowLoad, colLoad := v.A, v.B
	switch mStride, mOK := groupStride(outStride, v.M, g.ext); {
	case sameVars(outVars, v.Batch, v.M, v.N):
		g.rowVar, g.colVar = v.M, v.N
	case sameVars(outVars, v.Batch, v.N, v.M):
		g.rowVar, g.colVar = v.N, v.M
		rowLoad, colLoad = v.B, v.A
	default:
		nStride, nOK := groupStride(outStride, v.N, g.ext)
		all := slices.Concat(v.Batch, v.M, v.N)
		slices.Sort(all)
		switch {
		case !slices.Equal(all, outVars) || !mOK || !nOK:
			return nil, false
		case nStride == 1:
			g.rowVar, g.colVar, g.ldc = v.M, v.N, mStride
		case mStride == 1:
			g.rowVar, g.colVar, g.ldc = v.N, v.M, nStride
			rowLoad, colLoad = v.B, v.A
		default:
			return nil, false
		}
	}
	rowSet, colSet := map[int]bool{}, map[int]bool{}
	kir.ExprVars(rowLoad, rowSet)
	kir.ExprVars(colLoad, colSet)
	if !subset(rowSet, g.batch, g.rowVar, g.kVar) || !subset(colSet, g.batch, g.colVar, g.kVar) {
		return nil, false
	}
	var rowConds, colConds []kir.Cond
	for _, c := range k.Where {
		set := map[int]bool{}
		kir.IxVars(c.X, set)
		switch {
		case subset(set, g.batch, g.rowVar, g.kVar):
			rowConds = append(rowConds, c)
		case subset(set, g.batch, g.colVar, g.kVar):
			colConds = append(colConds, c)
		default:
			return nil, false
		}
	}
	prod := func(vs []int) int {
		n := 1
		for _, x := range vs {
			n *= g.ext[x]
		}
		return n
	}
	g.nb, g.nr, g.nc, g.nk = prod(g.batch), prod(g.rowVar), prod(g.colVar), prod(g.kVar)
	if g.ldc == 0 || g.nr <= 1 {
		g.ldc = g.nc // dense rows
	}
	if g.nc == 1 && g.nr > 1 && g.ldc == 1 {
		// A single column is as well a single row, which the kernels
		// fill a vector of columns at a time.
		g.rowVar, g.colVar, rowLoad, colLoad = g.colVar, g.rowVar, colLoad, rowLoad
		rowConds, colConds = colConds, rowConds
		g.nr, g.nc, g.ldc = 1, g.nr, g.nr
	}
	if g.foldable(rowSet, rowConds) {
		g.foldBatch()
	}
	s := newSpace(p, k, mergeNone, 0)
	g.rowOp = newGemmOperand(s, p, rowLoad, rowConds, g.rowVar, g.kVar, g.ext, true, r)
	g.colOp = newGemmOperand(s, p, colLoad, colConds, g.colVar, g.kVar, g.ext, false, r)
	g.epi = newEpilogueRunner(p, k, r)
	if p.Buffers[k.Out].DType != tile.Float32 {
		g.scratchC = make([]float32, g.nb*g.nr*g.nc)
	}
	g.needEpi = g.epi.prog != nil || g.scratchC != nil

	// Choose how to run.
	g.splitVar = -1
	for _, x := range g.kVar {
		if g.ext[x] > 1 {
			g.splitVar = x
			break
		}
	}
	g.innerK = 1
	after := false
	for _, x := range g.kVar {
		if after {
			g.innerK *= g.ext[x]
		}
		after = after || x == g.splitVar
	}
	flops := 2 * g.nr * g.nc * g.nk
	switch {
	case g.splitK():
		g.split = min(g.ext[g.splitVar], 16, max(2, flops>>19))
		g.mode = gemmSplitK
		g.partial = make([]float32, g.split*g.nr*g.nc)
		// Packed blocks of about 512 KiB.
		packed := 0
		if !g.rowOp.plain {
			packed += g.nr
		}
		if !g.colOp.plain {
			packed += g.nc
		}
		g.splitStep = max(1, (1<<17)/max(1, packed*g.innerK))
	default:
		g.mode = gemmTiles
		// A packed block of rows is about 256 KiB, of 32 to 2048 rows.
		g.mbMax = max(1, min(g.nr, 2048, max(32, 65536/max(1, g.nk))))
		// A packed block of columns is at most 512 KiB, but at least
		// two kernel tiles wide.
		_, nr := gemm.Tile()
		g.colMax = g.nc
		if !g.colOp.plain {
			g.colMax = min(g.nc, max(2*nr, (1<<17)/max(1, g.nk)/nr*nr))
		}
		if g.fold {
			// A tile of C in scratch is at most 256 KiB.
			mr, _ := gemm.Tile()
			g.colMax = min(g.colMax, 16*nr)
			g.foldRows = max(mr, (1<<16)/g.colMax/mr*mr)
		}
	}
	return g, true
}

// splitK reports whether the product is run by splitting K: small outputs
// with long sums (foldable keeps such products per point).
func (g *gemmKernel) splitK() bool {
	return g.nr*g.nc <= 1<<14 && g.nk >= 1024 && g.splitVar >= 0
}

// foldable reports whether the batch loops should join the columns: the
// row operand (whose loads and conditions use rowSet's variables and
// rowConds) must not read them, and each batch point's product must be
// narrow, so that it fills few micro-kernel tiles and gives the workers
// little to share (a channels-first convolution at 7×7 pixels has 49
// columns per image). Folded, the product is one matrix of every point's
// columns, packed and tiled once, at the cost of copying each tile of C
// from scratch into place.
func (g *gemmKernel) foldable(rowSet map[int]bool, rowConds []kir.Cond) bool {
	if len(g.batch) == 0 || g.nb <= 1 || g.nr <= 1 || g.nc >= foldMaxCols || g.ldc < g.nc {
		return false
	}
	for _, v := range g.batch {
		if rowSet[v] {
			return false
		}
		for _, c := range rowConds {
			set := map[int]bool{}
			kir.IxVars(c.X, set)
			if set[v] {
				return false
			}
		}
	}
	// A product that would be split over K stays per point.
	return g.nb*g.nr*g.nc > 1<<14 || g.nk < 1024
}

// foldMaxCols is the widest per-point product whose batch is folded into
// its columns: at 1024 columns and more a point already fills 32 tiles of
// the widest micro-kernel.
const foldMaxCols = 1024

// foldBatch moves the batch loops in front of the column loops.
func (g *gemmKernel) foldBatch() {
	g.fold, g.foldPts, g.foldCols = true, g.nb, g.nc
	g.foldOff = make([]int, g.nb)
	bv := make([]int, len(g.batch))
	for b := range g.nb {
		q := b
		for i := len(g.batch) - 1; i >= 0; i-- {
			bv[i] = q % g.ext[g.batch[i]]
			q /= g.ext[g.batch[i]]
		}
		g.foldOff[b] = g.cOffset(bv)
	}
	g.colVar = slices.Concat(g.batch, g.colVar)
	g.nc *= g.nb
	g.batch, g.nb = nil, 1
}

// unfold copies rows [r0, r1) and columns [j0, j1) of C, computed into t
// (leading dimension j1-j0), into place in c and applies the epilogue.
func (g *gemmKernel) unfold(fr *frame, c, t []float32, r0, r1, j0, j1 int) {
	if g.needEpi {
		g.epi.bind(fr)
	}
	ldt := j1 - j0
	for j := j0; j < j1; {
		b, at := j/g.foldCols, j%g.foldCols
		n := min(g.foldCols-at, j1-j)
		base := g.foldOff[b] + at
		for r := r0; r < r1; r++ {
			o := base + r*g.ldc
			copy(c[o:o+n], t[(r-r0)*ldt+j-j0:])
		}
		switch {
		case !g.needEpi:
		case n == g.ldc:
			g.epi.apply(fr, c, base+r0*g.ldc, base+r1*g.ldc)
		default:
			for r := r0; r < r1; r++ {
				g.epi.apply(fr, c, base+r*g.ldc, base+r*g.ldc+n)
			}
		}
		j += n
	}
}

// intScratch returns the per-worker integers the kernel's packers need.
func (g *gemmKernel) intScratch() int {
	n := 0
	rows := g.nr
	if g.mode == gemmTiles {
		rows = g.mbMax
	}
	if o := g.rowOp; o.affine != nil {
		n = max(n, o.affine.scratchInts(o.maxRuns(g.ext, rows)))
	}
	if o := g.colOp; o.affine != nil {
		n = max(n, o.affine.scratchInts(o.maxRuns(g.ext, g.nc)))
	}
	return n
}

// packScratch returns the per-worker packing space the kernel needs.
func (g *gemmKernel) packScratch() int {
	switch g.mode {
	case gemmTiles:
		n := 0
		if !g.rowOp.plain {
			n += g.mbMax * g.nk
		}
		if !g.colOp.plain {
			n += g.colMax * g.nk
		}
		if g.fold {
			n += g.foldRows * g.colMax
		}
		return n
	case gemmSplitK:
		kc := min((g.ext[g.splitVar]+g.split-1)/g.split, g.splitStep) * g.innerK
		n := 0
		if !g.rowOp.plain {
			n += g.nr * kc
		}
		if !g.colOp.plain {
			n += kc * g.nc
		}
		return n
	}
	return 0
}

// groupStride returns the stride of a group of variables whose coefficients
// make them one row-major coordinate, or false. Variables of extent 1 do not
// matter.
func groupStride(coef []int, vars []int, ext []int) (int, bool) {
	stride, want, seen := 0, 0, false
	for i := len(vars) - 1; i >= 0; i-- {
		v := vars[i]
		if ext[v] == 1 {
			continue
		}
		if !seen {
			stride, want, seen = coef[v], coef[v]*ext[v], true
			continue
		}
		if coef[v] != want {
			return 0, false
		}
		want *= ext[v]
	}
	return stride, true
}

func newGemmOperand(s *space, p *kir.Program, load *kir.Expr, conds []kir.Cond, pVar, kVar []int, ext []int, isRow bool, r *regs) *gemmOperand {
	o := &gemmOperand{s: s, load: load, pVar: pVar, kVar: kVar, isRow: isRow, buf: load.Buf}
	o.np, o.nk = 1, 1
	for _, v := range pVar {
		o.np *= ext[v]
	}
	for _, v := range kVar {
		o.nk *= ext[v]
	}
	li := s.load(load)
	if len(conds) == 0 && li.class == loadDirect {
		sP, okP := groupStride(li.flat.coef, pVar, ext)
		sK, okK := groupStride(li.flat.coef, kVar, ext)
		if okP && okK {
			o.coef = li.flat.coef
			o.base = li.flat.konst
			for v, c := range li.flat.coef {
				o.base += c * s.varLo[v]
			}
			o.sP, o.sK = sP, sK
			switch {
			case (o.nk <= 1 || sK == 1) && (o.np <= 1 || sP >= o.nk):
				o.plain, o.kMajor = true, false
				o.ld = max(1, o.nk)
				if o.np > 1 {
					o.ld = sP
				}
			case (o.np <= 1 || sP == 1) && (o.nk <= 1 || sK >= o.np):
				o.plain, o.kMajor = true, true
				o.ld = max(1, o.np)
				if o.nk > 1 {
					o.ld = sK
				}
			}
			if o.plain && !o.fits(p.Buffers[load.Buf].Size(), s, ext) {
				o.plain = false
			}
		}
	}
	if o.plain {
		return o
	}
	// Pack: along the innermost K variable (P-major) or the innermost P
	// variable (K-major), whichever gives longer, preferably contiguous,
	// runs.
	inner := func(vs []int) int {
		for i := len(vs) - 1; i >= 0; i-- {
			if ext[vs[i]] > 1 {
				return vs[i]
			}
		}
		return -1
	}
	kin, pin := inner(kVar), inner(pVar)
	score := func(v int) int {
		if v < 0 {
			return -1
		}
		sc := 2 * min(ext[v], chunk)
		if li.class != loadGeneral && abs(li.flat.coef[v]) == 1 {
			sc += 3
		}
		return sc
	}
	contiguous := func(v int) bool { return v >= 0 && li.class != loadGeneral && abs(li.flat.coef[v]) == 1 }
	switch {
	case contiguous(kin) && ext[kin] >= 8:
		// Contiguous runs along K: each row's runs are copies, and the
		// rows of a block are packed run by run (affinePacker.rowsFast).
		o.axisVar, o.kMajor = kin, false
	case contiguous(pin) && ext[pin] >= 8 && !contiguous(kin):
		// Contiguous runs along P, as a weight gradient's input has:
		// packed K-major, run by run over blocks (affinePacker.packCols).
		o.axisVar, o.kMajor = pin, true
	case kin >= 0 && score(kin) >= score(pin):
		o.axisVar, o.kMajor = kin, false
	case pin >= 0:
		o.axisVar, o.kMajor = pin, true
	default:
		// Every group has at most one point.
		o.axisVar, o.kMajor = -1, false
	}
	axisLoop := 0
	if o.axisVar >= 0 {
		axisLoop = s.varLoop[o.axisVar]
	}
	b := newBuilder(s, axisLoop, progBody, r)
	b.where(conds)
	o.prog = b.value(load)
	if o.axisVar >= 0 || !o.kMajor {
		o.affine = newAffinePacker(s, p, load, conds, o.axisVar, ext)

	}
	return o
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}

// fits reports whether every batch point's matrix lies within a buffer of
// size elements, by gemm's own argument check.
func (o *gemmOperand) fits(size int, s *space, ext []int) bool {
	lo, hi := o.base, o.base
	for v, c := range o.coef {
		if contains(o.pVar, v) || contains(o.kVar, v) || ext[v] == 0 {
			continue
		}
		lo += min(0, c*(ext[v]-1))
		hi += max(0, c*(ext[v]-1))
	}
	if lo < 0 {
		return false
	}
	if o.isRow {
		return gemm.Validate(o.kMajor, false, o.np, 1, o.nk, size-hi, o.ld, max(1, o.nk), 1, max(1, o.np), 1) == nil
	}
	return gemm.Validate(false, !o.kMajor, 1, o.np, o.nk, max(1, o.nk), max(1, o.nk), size-hi, o.ld, max(1, o.np), max(1, o.np)) == nil
}

func contains(vs []int, v int) bool {
	for _, x := range vs {
		if x == v {
			return true
		}
	}
	return false
}

// trans returns the transposition flag gemm needs for the operand's
// layout: a row operand is op(A) (rows×K), a column operand op(B) (K×cols).
func (o *gemmOperand) trans() bool {
	if o.isRow {
		return o.kMajor
	}
	return !o.kMajor
}

// batchOffset returns the plain operand's offset for the current batch point.
func (o *gemmOperand) batchOffset(batch, bvals []int) int {
	off := o.base
	for i, v := range batch {
		off += o.coef[v] * bvals[i]
	}
	return off
}

// setVars sets the loops of vars to the row-major decomposition of index.
func setVars(fr *frame, s *space, vars []int, ext []int, index int) {
	for i := len(vars) - 1; i >= 0; i-- {
		v := vars[i]
		e := ext[v]
		fr.vars[s.varLoop[v]] = index % e
		index /= e
	}
}

// evalInto evaluates the operand program on n lanes from axis position start
// and stores the values, zero where a point is excluded, into dst.
func (o *gemmOperand) evalInto(fr *frame, start, n int, dst []float32) {
	p := o.prog
	lo, hi := p.active(fr, start, n)
	if lo >= hi {
		clear(dst[:n])
		return
	}
	clear(dst[:lo])
	clear(dst[hi:n])
	m := hi - lo
	var mask []bool
	if p.hasMask {
		mask = fr.mask[:m]
		setTrue(mask)
	}
	p.exec(fr, start+lo, m)
	v := fr.f[p.result.reg][:m]
	d := dst[lo:hi]
	copy(d, v)
	for i, a := range mask {
		if !a {
			d[i] = 0
		}
	}
}

// pack writes the operand's points p in [p0, p1) and K points with the split
// variable in [klo, khi) (all K points when splitVar < 0 or it covers its
// whole range) into dst, P-major or K-major, with leading dimension ld (0:
// dense), and returns the leading dimension.
func (o *gemmOperand) pack(fr *frame, ext []int, batch, bvals []int, splitVar, klo, khi int, dst []float32, ld, p0, p1 int) int {
	if o.affine != nil {
		return o.packAffine(fr, ext, batch, bvals, splitVar, klo, khi, dst, ld, p0, p1)
	}
	s := o.s
	o.prog.bind(fr)
	np := p1 - p0
	// K odometer: every K variable except the axis, the split variable
	// restricted to [klo, khi).
	kStart := func() {
		for _, v := range o.kVar {
			fr.vars[s.varLoop[v]] = 0
			if v == splitVar {
				fr.vars[s.varLoop[v]] = klo
			}
		}
	}
	kEnd := func(v int) int {
		if v == splitVar {
			return khi
		}
		return ext[v]
	}
	// kNext advances the odometer over the K variables other than skip,
	// reporting false when it wraps around.
	kNext := func(skip int) bool {
		for i := len(o.kVar) - 1; i >= 0; i-- {
			v := o.kVar[i]
			if v == skip {
				continue
			}
			l := s.varLoop[v]
			fr.vars[l]++
			if fr.vars[l] < kEnd(v) {
				return true
			}
			fr.vars[l] = 0
			if v == splitVar {
				fr.vars[l] = klo
			}
		}
		return false
	}
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
	if !o.kMajor {
		ax := o.axisVar
		for p := p0; p < p1; p++ {
			setVars(fr, s, o.pVar, ext, p)
			row := dst[(p-p0)*ld : (p-p0)*ld+kc]
			kk := 0
			kStart()
			for {
				if ax < 0 {
					o.evalInto(fr, 0, 1, row[kk:kk+1])
					kk++
				} else {
					lo, hi := 0, kEnd(ax)
					if ax == splitVar {
						lo = klo
					}
					for st := lo; st < hi; st += chunk {
						n := min(chunk, hi-st)
						o.evalInto(fr, st, n, row[kk:kk+n])
						kk += n
					}
				}
				if !kNext(ax) {
					break
				}
			}
		}
		return ld
	}
	ax := o.axisVar
	kStart()
	kk := 0
	for {
		col := dst[kk*ld : kk*ld+np]
		for p := p0; p < p1; {
			setVars(fr, s, o.pVar, ext, p)
			pos := fr.vars[s.varLoop[ax]]
			run := min(ext[ax]-pos, p1-p)
			o.evalInto(fr, pos, run, col[p-p0:p-p0+run])
			p += run
		}
		kk++
		if !kNext(-1) {
			break
		}
	}
	return ld
}

// setBatch sets bv and the batch loops of fr to batch point b and returns
// bv.
func (g *gemmKernel) setBatch(fr *frame, bv []int, b int) []int {
	for i := len(g.batch) - 1; i >= 0; i-- {
		v := g.batch[i]
		bv[i] = b % g.ext[v]
		b /= g.ext[v]
		fr.vars[g.rowOp.s.varLoop[v]] = bv[i]
	}
	return bv
}

func (g *gemmKernel) cTarget(x *Executable) []float32 {
	if g.scratchC != nil {
		return g.scratchC
	}
	return x.bufs[g.out].f32
}

func (g *gemmKernel) run(x *Executable) {
	if g.nb == 0 || g.nr == 0 || g.nc == 0 {
		return
	}
	g.x = x
	for len(g.bvals) < len(x.frames) {
		g.bvals = append(g.bvals, make([]int, len(g.batch)))
	}
	if g.mode == gemmTiles {
		if w := x.workers(g.workers); w != g.tileW {
			g.tile(w)
		}
		if g.fuse {
			// The tiles of every batch point are independent tasks.
			g.phase = phaseTiles
			x.pool.run(g, g.nb*g.nbi*g.nbj, g.workers)
			g.x = nil
			return
		}
	}
	for g.point = range g.nb {
		switch g.mode {
		case gemmTiles:
			g.phase = phasePack
			x.pool.run(g, g.nbj*g.kParts, g.workers)
			g.phase = phaseTiles
			x.pool.run(g, g.nbi*g.nbj, g.workers)
		case gemmSplitK:
			g.phase = phaseSplit
			x.pool.run(g, g.split, g.workers)
			g.phase = phaseCombine
			x.pool.run(g, (g.nr+g.epiRows()-1)/g.epiRows(), g.workers)
		}
	}
	g.x = nil
}

// epiRows is the number of rows one combine task handles.
func (g *gemmKernel) epiRows() int {
	return max(1, min(g.nr, (1<<14)/max(1, g.nc)))
}

func (g *gemmKernel) runTask(w, t int) {
	x := g.x
	fr := x.frame(w)
	fr.rows = 1
	c := g.cTarget(x)
	b := g.point
	if g.phase == phaseTiles && g.fuse {
		b, t = t/(g.nbi*g.nbj), t%(g.nbi*g.nbj)
	}
	bv := g.setBatch(fr, g.bvals[w], b)
	cOff := g.cOffset(bv)
	switch g.phase {
	case phasePack:
		j0, j1 := g.colRange(t / g.kParts)
		g.packColumns(fr, bv, j0, j1, t%g.kParts, g.kParts)
	case phaseTiles:
		r0, r1 := t/g.nbj*g.mb, min(g.nr, (t/g.nbj+1)*g.mb)
		j0, j1 := g.colRange(t % g.nbj)
		a, lda, ta := g.rowBlock(fr, x, bv, r0, r1, -1, 0, 0, fr.pack)
		b, ldb, tb := g.colBlock(fr, x, bv, j0, j1)
		if g.fold {
			t := fr.pack[g.foldAt():]
			gemm.Sgemm(ta, tb, r1-r0, j1-j0, g.nk, 1, a, lda, b, ldb, 0, t, j1-j0)
			g.unfold(fr, c, t, r0, r1, j0, j1)
			return
		}
		gemm.Sgemm(ta, tb, r1-r0, j1-j0, g.nk, 1, a, lda, b, ldb, 0, c[cOff+r0*g.ldc+j0:], g.ldc)
		g.finishRows(fr, c, cOff, r0, r1, j0, j1)
	case phaseSplit:
		e := g.ext[g.splitVar]
		klo, khi := e*t/g.split, e*(t+1)/g.split
		part := g.partial[t*g.nr*g.nc : (t+1)*g.nr*g.nc]
		if klo >= khi || g.innerK == 0 {
			clear(part)
			return
		}
		for k0 := klo; k0 < khi; k0 += g.splitStep {
			g.splitBlock(fr, x, bv, k0, min(khi, k0+g.splitStep), part, k0 > klo)
		}
	case phaseCombine:
		r0 := t * g.epiRows()
		r1 := min(g.nr, r0+g.epiRows())
		n := g.nr * g.nc
		for r := r0; r < r1; r++ {
			dst := c[cOff+r*g.ldc : cOff+r*g.ldc+g.nc]
			copy(dst, g.partial[r*g.nc:(r+1)*g.nc])
			for p := 1; p < g.split; p++ {
				src := g.partial[p*n+r*g.nc : p*n+(r+1)*g.nc]
				for i, v := range src {
					dst[i] += v
				}
			}
		}
		g.finishRows(fr, c, cOff, r0, r1, 0, g.nc)
	}
}

// splitBlock multiplies the K points with the split variable in [klo, khi)
// into part, adding to it when add is set.
func (g *gemmKernel) splitBlock(fr *frame, x *Executable, bv []int, klo, khi int, part []float32, add bool) {
	kc := (khi - klo) * g.innerK
	a, lda, ta := g.rowBlock(fr, x, bv, 0, g.nr, g.splitVar, klo, khi, fr.pack)
	rest := fr.pack
	if !g.rowOp.plain {
		rest = fr.pack[g.nr*kc:]
	}
	var b []float32
	var ldb int
	co := g.colOp
	if co.plain {
		b = x.bufs[co.buf].f32[co.batchOffset(g.batch, bv)+klo*co.coef[g.splitVar]:]
		ldb = co.ld
	} else {
		ldb = co.pack(fr, g.ext, g.batch, bv, g.splitVar, klo, khi, rest, 0, 0, g.nc)
		b = rest
	}
	var beta float32
	if add {
		beta = 1
	}
	gemm.Sgemm(ta, co.trans(), g.nr, g.nc, kc, 1, a, lda, b, ldb, beta, part, g.nc)
}

// rowBlock returns rows [r0, r1) of the row operand (K restricted to
// [klo, khi) of splitVar when splitVar ≥ 0), packing them into scratch when
// the operand is not plain, with its leading dimension and transposition.
func (g *gemmKernel) rowBlock(fr *frame, x *Executable, bv []int, r0, r1, splitVar, klo, khi int, scratch []float32) ([]float32, int, bool) {
	o := g.rowOp
	if o.plain {
		off := o.batchOffset(g.batch, bv) + r0*o.sP
		if splitVar >= 0 {
			off += klo * o.coef[splitVar]
		}
		return x.bufs[o.buf].f32[off:], o.ld, o.trans()
	}
	ld := o.pack(fr, g.ext, g.batch, bv, splitVar, klo, khi, scratch, 0, r0, r1)
	return scratch, ld, o.trans()
}

// tile chooses the tiles for w workers. Tiles have whole micro-kernel
// tiles but at the edges, at most mbMax rows when the row operand is packed
// and colMax columns when the column operand is (so that a packed column
// block stays in cache between its packing and its use). There are at least
// 4 per worker where each still has 2^21 flops (and at least one per batch
// point); among such cuts, tile takes the one that reads the operands
// least: each column block reads all of the row operand, each row block
// all of the column operand.
func (g *gemmKernel) tile(w int) {
	mr, nr := gemm.Tile()
	want := 1
	if w > 1 {
		want = min(4*w, max(1, 2*g.nr*g.nc*g.nk>>21))
	}
	ceil := func(a, b int) int { return (a + b - 1) / max(1, b) }
	rowTiles, colTiles := ceil(g.nr, mr), ceil(g.nc, nr)
	best := -1
	for wm := 1; wm <= rowTiles; wm++ {
		mb := ceil(rowTiles, wm) * mr
		if !g.rowOp.plain {
			mb = min(mb, g.mbMax)
		}
		if g.fold {
			mb = min(mb, g.foldRows)
		}
		nbi := ceil(g.nr, mb)
		ncb := min(g.colMax, ceil(colTiles, min(colTiles, ceil(want, nbi)))*nr)
		nbj := ceil(g.nc, ncb)
		if cost := nbj*g.nr + nbi*g.nc; best < 0 || cost < best {
			best, g.mb, g.ncb, g.nbi, g.nbj = cost, mb, ncb, nbi, nbj
		}
		if nbi >= want {
			break // more row blocks only read the column operand more
		}
	}
	g.tileW, g.fuse, g.kParts = w, g.nbi == 1 || g.colOp.plain, 1
	if !g.fuse && g.splitVar >= 0 {
		g.kParts = min(g.ext[g.splitVar], ceil(want, g.nbj))
	}
	if !g.fuse && g.colPacked == nil {
		g.colPacked = make([]float32, g.nk*g.nc)
	}
}

// foldAt is where a folded product's tile of C starts in a worker's
// packing scratch: after the packed rows and columns.
func (g *gemmKernel) foldAt() int {
	n := 0
	if !g.rowOp.plain {
		n += g.mbMax * g.nk
	}
	if !g.colOp.plain {
		n += g.colMax * g.nk
	}
	return n
}

// colRange returns the columns of column block j.
func (g *gemmKernel) colRange(j int) (int, int) {
	return j * g.ncb, min(g.nc, (j+1)*g.ncb)
}

// packColumns packs columns [j0, j1) of the column operand into colPacked,
// for part of parts of the split variable's values.
func (g *gemmKernel) packColumns(fr *frame, bv []int, j0, j1, part, parts int) {
	sv, klo, khi, at := -1, 0, 0, j0*g.nk
	if parts > 1 {
		e := g.ext[g.splitVar]
		sv, klo, khi = g.splitVar, e*part/parts, e*(part+1)/parts
		at += klo * g.innerK
	}
	o, ld := g.colOp, g.nk
	if o.kMajor {
		at, ld = klo*g.innerK*g.nc+j0, g.nc
	}
	o.pack(fr, g.ext, g.batch, bv, sv, klo, khi, g.colPacked[at:], ld, j0, j1)
}

// colBlock returns columns [j0, j1) of the column operand for a tile,
// packing them into the worker's scratch when the tiles do.
func (g *gemmKernel) colBlock(fr *frame, x *Executable, bv []int, j0, j1 int) ([]float32, int, bool) {
	o := g.colOp
	switch {
	case o.plain:
		return x.bufs[o.buf].f32[o.batchOffset(g.batch, bv)+j0*o.sP:], o.ld, o.trans()
	case g.fuse:
		scratch := fr.pack
		if !g.rowOp.plain {
			scratch = scratch[g.mbMax*g.nk:]
		}
		return scratch, o.pack(fr, g.ext, g.batch, bv, -1, 0, 0, scratch, 0, j0, j1), o.trans()
	case o.kMajor:
		return g.colPacked[j0:], g.nc, o.trans()
	}
	return g.colPacked[j0*g.nk:], max(1, g.nk), o.trans()
}

// finishRows applies the epilogue to columns [j0, j1) of rows [r0, r1) of
// the current batch point.
func (g *gemmKernel) finishRows(fr *frame, c []float32, cOff, r0, r1, j0, j1 int) {
	if !g.needEpi {
		return
	}
	g.epi.bind(fr)
	if g.ldc == g.nc && j0 == 0 && j1 == g.nc {
		g.epi.apply(fr, c, cOff+r0*g.nc, cOff+r1*g.nc)
		return
	}
	for r := r0; r < r1; r++ {
		g.epi.apply(fr, c, cOff+r*g.ldc+j0, cOff+r*g.ldc+j1)
	}
}

// cOffset is the output offset of batch point bv's matrix.
func (g *gemmKernel) cOffset(bv []int) int {
	off := 0
	for i, v := range g.batch {
		off += bv[i] * g.outStride[v]
	}
	return off
}
