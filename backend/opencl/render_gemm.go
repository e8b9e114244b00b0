package opencl

import (
	"fmt"
	"slices"
	"strings"

	"github.com/tartanml/tartan/kir"
	"github.com/tartanml/tartan/tile"
)

// gemmPlan is a kernel mapped onto C[b][m][n] = Σ_k A(b,m,k)·B(b,k,n): the
// compiler's GEMMView with the extents of its groups and the Where
// conditions the view gives each operand.
type gemmPlan struct {
	view         *kir.GEMMView
	B, M, N, K   int
	condA, condB []kir.Cond
}

// planGEMM checks that k's GEMMView can be rendered as a tiled matrix
// product: a sum of the product of the view's operands, every output loop
// in exactly one of the batch, M and N groups and every reduction loop in
// K (the compiler's view says the rest: which operand reads which groups,
// and which conditions go with each). It says why not otherwise.
func planGEMM(p *kir.Program, k *kir.Kernel) (*gemmPlan, string) {
	v := k.Schedule.GEMM
	switch {
	case v == nil:
		return nil, "no GEMM view"
	case k.Agg != tile.Sum:
		return nil, "aggregation is not a sum"
	case k.Body == nil || k.Body.Op != kir.Apply || k.Body.Fn != tile.Mul || len(k.Body.Args) != 2:
		return nil, "body is not a product"
	case !(v.A == k.Body.Args[0] && v.B == k.Body.Args[1] || v.A == k.Body.Args[1] && v.B == k.Body.Args[0]):
		return nil, "view operands are not the body's factors"
	case k.Body.DType == tile.Bool:
		return nil, "bool product"
	}
	nout := len(k.Shape)
	group := make([]int, k.NumVars()) // 0 none, 1 batch, 2 M, 3 N, 4 K
	for gi, vs := range [][]int{v.Batch, v.M, v.N, v.K} {
		for _, x := range vs {
			if x < 0 || x >= len(group) || group[x] != 0 {
				return nil, fmt.Sprintf("loop variable %d is missing or in two groups", x)
			}
			group[x] = gi + 1
			if gi < 3 && x >= nout || gi == 3 && x < nout {
				return nil, fmt.Sprintf("loop variable %d is in the wrong group", x)
			}
		}
	}
	for x, g := range group {
		if g == 0 {
			return nil, fmt.Sprintf("loop variable %d is in no group", x)
		}
	}
	pl := &gemmPlan{view: v, condA: v.Conds(k, false), condB: v.Conds(k, true)}
	pl.B, pl.M, pl.N, pl.K = v.Extents(k)
	return pl, ""
}

// gemmConfig is the tiling of one matrix product: BM×BN output tiles per
// work-group, BK-deep panels of A and B staged in local memory (double
// buffered), and either TM×TN results per work-item (SIMT) or warp tiles of
// tensor-core instructions (MMA, WM×WN warps of 32 work-items).
type gemmConfig struct {
	MMA        string // "", "tf32" or "3xtf32"
	BM, BN, BK int
	TM, TN     int // SIMT
	WM, WN     int // MMA
	Splits     int
	KC         int // reduction points per split, a multiple of BK
}

func (c gemmConfig) threads() int {
	if c.MMA != "" {
		return 32 * c.WM * c.WN
	}
	return (c.BM / c.TM) * (c.BN / c.TN)
}

func (c gemmConfig) String() string {
	if c.MMA != "" {
		return fmt.Sprintf("gemm-%s %dx%dx%d warps %dx%d split %d", c.MMA, c.BM, c.BN, c.BK, c.WM, c.WN, c.Splits)
	}
	return fmt.Sprintf("gemm %dx%dx%d per-item %dx%d split %d", c.BM, c.BN, c.BK, c.TM, c.TN, c.Splits)
}

// usesMMA reports whether some kernel of p will be rendered with the
// tensor-core template, so that the program needs its helpers.
func usesMMA(p *kir.Program, t traits) bool {
	if t.MMA == "" {
		return false
	}
	r := &renderer{p: p, t: t}
	for _, k := range p.Kernels {
		if k.Body == nil || k.Body.DType != tile.Float32 || k.Shape.Size() == 0 {
			continue
		}
		if ch := r.chooseStrategy(k); ch.kind == "gemm" {
			if c, err := r.chooseGEMM(ch.gemm, tile.Float32, k.Schedule.Tiling); err == nil && c.MMA != "" {
				return true
			}
		}
	}
	return false
}

// mmaMinMACs is the size, in multiply-adds with the batch included, from
// which an f32 matrix product uses the tensor cores when the precision is
// the device's default. Smaller products are bound by latency rather than
// arithmetic, and the ordinary template builds in half the time.
const mmaMinMACs = 1 << 27

// mmaFor reports whether the product pl is rendered with the tensor-core
// template.
func (r *renderer) mmaFor(pl *gemmPlan, dt tile.DType) bool {
	if dt != tile.Float32 || r.t.MMA == "" {
		return false
	}
	return r.t.EmulateMMA || r.t.MMAMin == 0 || max(pl.B, 1)*pl.M*pl.N*pl.K >= r.t.MMAMin
}

// chooseGEMM picks the tiling for a plan on the device: the schedule's
// tiling when it has one (an error when the device cannot run it), else
// the device's cost model.
func (r *renderer) chooseGEMM(pl *gemmPlan, dt tile.DType, want *kir.Tiling) (gemmConfig, error) {
	if want != nil {
		return r.tiledGEMM(pl, dt, *want)
	}
	var c gemmConfig
	target := r.t.ComputeUnits
	if r.t.GPU {
		target *= 2
	}
	// Blocks of 128 only where they fill the device: a smaller block
	// occupies it better than a sum split into parts, which writes and
	// re-reads partial products (the tuner measured 64×64 blocks 1.3–3×
	// faster than 128×128 in 2–3 parts on ResNet layers of 128–256
	// channels on an H200).
	//
	// And only where they also run in fewer rounds of target blocks than
	// 64×64 blocks would, counting a 128×128 block as 4/1.25 of a
	// 64×64 one (a quarter more work per cycle): the rounds are whole, so
	// 1.5 rounds of large blocks (a device half idle in the second) lose
	// to 6 of small ones (the tuner measured 64×64 blocks 1.03–1.08×
	// faster on ResNet-18's 128-channel layers at batch 64 on an H200,
	// 392 blocks of 128 for 264 slots).
	rounds := func(bm, bn int) int { return ceilDiv(ceilDiv(pl.M, bm)*ceilDiv(pl.N, bn)*max(pl.B, 1), target) }
	big := pl.M >= 128 && pl.N >= 128 && ceilDiv(pl.M, 128)*ceilDiv(pl.N, 128)*max(pl.B, 1) >= target &&
		16*rounds(128, 128) < 5*rounds(64, 64)
	switch {
	case r.mmaFor(pl, dt):
		c = gemmConfig{MMA: r.t.MMA, BM: 128, BN: 128, BK: 16, WM: 2, WN: 4}
		if !big || r.t.GEMMTile == 64 {
			c = gemmConfig{MMA: r.t.MMA, BM: 64, BN: 64, BK: 16, WM: 2, WN: 2}
		}
	case r.t.GEMMTile == 128 || (r.t.GEMMTile == 0 && r.t.GPU && big && pl.M*pl.N >= r.t.ComputeUnits*128*128):
		c = gemmConfig{BM: 128, BN: 128, BK: 16, TM: 8, TN: 8}
	case r.t.GEMMTile == 32 || (r.t.GEMMTile == 0 && pl.M <= 32 && pl.N <= 32):
		c = gemmConfig{BM: 32, BN: 32, BK: 16, TM: 2, TN: 2}
	default:
		c = gemmConfig{BM: 64, BN: 64, BK: 16, TM: 4, TN: 4}
	}
	c.BK = panelDepth(dt)
	groups := ceilDiv(pl.M, c.BM) * ceilDiv(pl.N, c.BN) * max(pl.B, 1)
	splits := 1
	if groups < target && pl.K >= 8*c.BK {
		splits = min(ceilDiv(target, groups), pl.K/(4*c.BK))
	}
	if r.t.Split > 0 {
		splits = r.t.Split
	}
	c.split(pl, splits)
	return c, nil
}

// panelDepth is the reduction depth of the staged panels: 16, or 8 for
// 64-bit types, which keeps the panels within local memory.
func panelDepth(dt tile.DType) int {
	if dt == tile.Float64 || dt == tile.Int64 {
		return 8
	}
	return 16
}

// split divides the reduction into about n parts of whole panels.
func (c *gemmConfig) split(pl *gemmPlan, n int) {
	c.KC = ceilDiv(ceilDiv(max(pl.K, 1), max(n, 1)), c.BK) * c.BK
	c.Splits = ceilDiv(max(pl.K, 1), c.KC)
}

// gemmBlocks are the work-group tiles the template is written for, with
// the work each item takes on the ordinary cores (TM×TN) and the grid of
// warps on the tensor cores (WM×WN, each warp a tile of 16-row by 8-column
// instructions). The cost model picks among the square ones; the tuner may
// pick any.
var gemmBlocks = []gemmConfig{
	{BM: 32, BN: 32, TM: 2, TN: 2, WM: 1, WN: 1},
	{BM: 32, BN: 64, TM: 2, TN: 4, WM: 1, WN: 2},
	{BM: 64, BN: 32, TM: 4, TN: 2, WM: 2, WN: 1},
	{BM: 64, BN: 64, TM: 4, TN: 4, WM: 2, WN: 2},
	{BM: 64, BN: 128, TM: 4, TN: 8, WM: 2, WN: 2},
	{BM: 128, BN: 64, TM: 8, TN: 4, WM: 2, WN: 2},
	{BM: 128, BN: 128, TM: 8, TN: 8, WM: 2, WN: 4},
}

// tiledGEMM returns the configuration of tiling t for the plan, or why the
// device cannot run it.
func (r *renderer) tiledGEMM(pl *gemmPlan, dt tile.DType, t kir.Tiling) (gemmConfig, error) {
	if t.Matrix != "" && (t.Matrix != r.t.MMA || dt != tile.Float32) {
		return gemmConfig{}, fmt.Errorf("tiling %s: the device's %v products have no matrix instruction %q", t.String(), dt, t.Matrix)
	}
	if t.BK != panelDepth(dt) {
		return gemmConfig{}, fmt.Errorf("tiling %s: %v panels are %d deep", t.String(), dt, panelDepth(dt))
	}
	for _, c := range gemmBlocks {
		if c.BM != t.BM || c.BN != t.BN {
			continue
		}
		c.MMA, c.BK = t.Matrix, t.BK
		if c.MMA != "" {
			c.TM, c.TN = 0, 0
		} else {
			c.WM, c.WN = 0, 0
		}
		if t.Parts > max(pl.K/c.BK, 1) {
			return gemmConfig{}, fmt.Errorf("tiling %s: %d parts of a sum of %d", t.String(), t.Parts, pl.K)
		}
		c.split(pl, max(t.Parts, 1))
		return c, nil
	}
	return gemmConfig{}, fmt.Errorf("tiling %s: no such block for the matrix-product template", t.String())
}

// tilingOf is the kir form of a configuration.
func tilingOf(c gemmConfig) kir.Tiling {
	return kir.Tiling{BM: c.BM, BN: c.BN, BK: c.BK, Matrix: c.MMA, Parts: c.Splits}
}

// tuneSpace returns the model's tiling of kernel k and the tilings the
// device can run it with: each block on the ordinary cores and, where the
// model may choose the tensor cores for float32, on them; the sum in 1, 2,
// 4, … parts, each of at least four panels.
func (r *renderer) tuneSpace(k *kir.Kernel) (kir.Tiling, []kir.Tiling) {
	ch := r.chooseStrategy(k)
	if ch.kind != "gemm" {
		return kir.Tiling{}, nil
	}
	pl, dt := ch.gemm, k.Body.DType
	mc, err := r.chooseGEMM(pl, dt, nil)
	if err != nil {
		return kir.Tiling{}, nil
	}
	model := tilingOf(mc)
	matrices := []string{""}
	if r.t.MMA != "" && dt == tile.Float32 {
		matrices = append(matrices, r.t.MMA)
	}
	var space []kir.Tiling
	for _, m := range matrices {
		for _, b := range gemmBlocks {
			for parts := 1; parts == 1 || pl.K >= 4*b.BK*parts && parts <= 16; parts *= 2 {
				t := kir.Tiling{BM: b.BM, BN: b.BN, BK: panelDepth(dt), Matrix: m, Parts: parts}
				if _, err := r.tiledGEMM(pl, dt, t); err == nil {
					space = append(space, t)
				}
			}
		}
	}
	if !slices.ContainsFunc(space, model.Same) {
		space = append(space, model)
	}
	return model, space
}

func ceilDiv(a, b int) int { return (a + b - 1) / b }

// operandFn renders the inline function that returns operand A or B at
// (batch bt, row or column i, reduction index kk): the operand's expression
// with the loop variables decoded from the matrix indices, 0 where one of
// its conditions fails or a Skip load is out of range. When the operand is
// one in-range load whose offset is linear in each matrix index, the
// function is that linear formula instead of the decoding. contiguousK
// reports whether consecutive reduction indices read consecutive elements.
func (r *renderer) operandFn(k *kir.Kernel, fn string, e *kir.Expr, conds []kir.Cond, batch, rows, red []int, wide bool) (src string, reads bufSet, contiguousK bool, err error) {
	it := idxType(wide)
	ranges := k.VarRanges()
	names := varNames(k)
	dt := k.Body.DType
	ct := ctype(dt)
	var w writer
	w.ind = 1
	if base, strides, ok := linearOperand(r.p, k, e, conds, [][]int{batch, rows, red}); ok {
		b := r.p.Buffers[e.Buf]
		var off []string
		if base != 0 {
			off = append(off, intLiteral(base, wide))
		}
		for j, v := range []string{"bt", "i", "kk"} {
			switch strides[j] {
			case 0:
			case 1:
				off = append(off, fmt.Sprintf("(%s)%s", it, v))
			default:
				off = append(off, fmt.Sprintf("(%s)%s * %s", it, v, intLiteral(strides[j], wide)))
			}
		}
		if len(off) == 0 {
			off = append(off, "0")
		}
		w.line("return %s;", read(b, strings.Join(off, " + ")))
		reads = bufSet{e.Buf: 0}
		contiguousK = strides[2] == 1 || strides[2] == -1
	} else {
		decodeVars(&w, it, "bt", batch, ranges, names, wide)
		decodeVars(&w, it, "i", rows, ranges, names, wide)
		decodeVars(&w, it, "kk", red, ranges, names, wide)
		s := newScope(r.p, ranges, names, wide)
		var cs []string
		for _, c := range conds {
			x := s.ix(c.X)
			cs = append(cs, fmt.Sprintf("%s >= 0 && %s < %s", x, x, intLiteral(c.Bound, hasValue(c.X) || wide)))
		}
		v := s.expr(e)
		if s.err != nil {
			return "", nil, false, s.err
		}
		if len(cs) > 0 {
			w.line("if (!(%s)) return %s;", strings.Join(cs, " && "), literal(dt, 0))
		}
		w.line("const %s v = %s;", ct, v)
		if len(s.skips) > 0 {
			w.line("return (%s) ? v : %s;", strings.Join(s.skips, " && "), literal(dt, 0))
		} else {
			w.line("return v;")
		}
		reads = s.bufs
		contiguousK = innerCoefficient(r.p, k, e, red) == 1
	}
	var ps []string
	for _, id := range reads.ids() {
		ps = append(ps, fmt.Sprintf("__global const %s* %s", stype(r.p.Buffers[id].DType), bufName(id)))
	}
	ps = append(ps, "const int bt", "const int i", "const int kk")
	src = fmt.Sprintf("inline %s %s(%s) {\n%s}\n", ct, fn, strings.Join(ps, ", "), w.b.String())
	return src, reads, contiguousK, nil
}

// linearOperand reports whether e is a load that stays in range over the
// whole loop box, without conditions, whose element offset is
// base + Σ_j index_j·strides[j] for the matrix indices of the groups: each
// group's variables combine row-major with the offset's coefficients.
func linearOperand(p *kir.Program, k *kir.Kernel, e *kir.Expr, conds []kir.Cond, groups [][]int) (base int, strides []int, ok bool) {
	if e.Op != kir.Load || len(conds) > 0 {
		return 0, nil, false
	}
	b := p.Buffers[e.Buf]
	ranges := k.VarRanges()
	for d, x := range e.Index {
		if lo, hi, ok := kir.Bounds(x, ranges); !ok || lo < 0 || hi >= b.Shape[d] {
			return 0, nil, false
		}
	}
	coef, konst, ok := kir.LinearForm(kir.Offset(e.Index, b.Shape, ranges), len(ranges))
	if !ok {
		return 0, nil, false
	}
	base = konst
	for v, c := range coef {
		base += c * ranges[v].Lo
	}
	for _, g := range groups {
		stride, mult := 0, 1
		set := false
		for j := len(g) - 1; j >= 0; j-- {
			v := g[j]
			ext := ranges[v].Hi - ranges[v].Lo + 1
			if ext <= 1 {
				continue
			}
			if !set {
				stride, set = coef[v], true
			} else if coef[v] != stride*mult {
				return 0, nil, false
			}
			mult *= ext
		}
		strides = append(strides, stride)
	}
	return base, strides, true
}

// innerCoefficient returns the offset coefficient of the innermost
// reduction variable in e's load, or 0 when it cannot tell.
func innerCoefficient(p *kir.Program, k *kir.Kernel, e *kir.Expr, red []int) int {
	if e.Op != kir.Load || len(red) == 0 {
		return 0
	}
	ranges := k.VarRanges()
	coef, _, ok := kir.LinearForm(kir.Offset(e.Index, p.Buffers[e.Buf].Shape, ranges), len(ranges))
	if !ok {
		return 0
	}
	return coef[red[len(red)-1]]
}

// bufSet is a set of buffer ids that keeps the order in which they were
// added. Kernels and helpers take their buffers in the order their code
// first reads them, so that kernels differing only in their buffers are
// one text up to names (see render_shard.go).
type bufSet map[int]int

func (s bufSet) add(id int) {
	if _, ok := s[id]; !ok {
		s[id] = len(s)
	}
}

func (s bufSet) has(id int) bool { _, ok := s[id]; return ok }

// ids returns the ids in the order they were added.
func (s bufSet) ids() []int {
	ids := make([]int, len(s))
	for id, i := range s {
		ids[i] = id
	}
	return ids
}

// storeFn renders the inline function that stores the result at (batch bt,
// row m, column n): it decodes the output loop variables and writes the
// epilogue of acc.
func (r *renderer) storeFn(k *kir.Kernel, fn string, pl *gemmPlan, wide bool) (string, bufSet, error) {
	it := idxType(wide)
	ranges := k.VarRanges()
	names := varNames(k)
	var w writer
	w.ind = 1
	decodeVars(&w, it, "bt", pl.view.Batch, ranges, names, wide)
	decodeVars(&w, it, "m", pl.view.M, ranges, names, wide)
	decodeVars(&w, it, "n", pl.view.N, ranges, names, wide)
	var off *kir.Ix
	for d, st := range k.Shape.Strides() {
		t := kir.IxTimes(kir.IxOfVar(d), st)
		if off == nil {
			off = t
		} else {
			off = kir.IxSum(off, t)
		}
	}
	if off == nil {
		off = kir.IxOfConst(0)
	}
	s := newScope(r.p, ranges[:len(k.Shape)], names[:len(k.Shape)], wide)
	offStr := s.ix(kir.Simplify(off, ranges[:len(k.Shape)]))
	reads, err := r.finish(&w, k, names, wide, offStr)
	if err != nil {
		return "", nil, err
	}
	ps := []string{fmt.Sprintf("__global %s* %s", stype(r.p.Buffers[k.Out].DType), bufName(k.Out))}
	for _, id := range reads.ids() {
		if id != k.Out {
			ps = append(ps, fmt.Sprintf("__global const %s* %s", stype(r.p.Buffers[id].DType), bufName(id)))
		}
	}
	ps = append(ps, "const int bt", "const int m", "const int n", ctype(k.Body.DType)+" acc")
	return fmt.Sprintf("inline void %s(%s) {\n%s}\n", fn, strings.Join(ps, ", "), w.b.String()), reads, nil
}

// argList renders the arguments passing the given buffers to a helper.
func argList(ids bufSet, first int) string {
	var parts []string
	if first >= 0 {
		parts = append(parts, bufName(first))
	}
	for _, id := range ids.ids() {
		if id != first {
			parts = append(parts, bufName(id))
		}
	}
	return strings.Join(parts, ", ")
}

// renderGEMM renders a matrix-product kernel: operand and store helpers,
// then the tiled kernel (and, when the reduction is split, the kernel that
// sums the splits' partial products and stores through the epilogue).
func (r *renderer) renderGEMM(i int, k *kir.Kernel, pl *gemmPlan) error {
	dt := k.Body.DType
	cfg, err := r.chooseGEMM(pl, dt, k.Schedule.Tiling)
	if err != nil {
		return err
	}
	wide := needWide(r.p, k) || pl.B*pl.M*pl.N*cfg.Splits >= 1<<31
	if wide {
		// Matrix indices stay int; only kernels whose buffers need 64-bit
		// offsets are rendered as loops.
		fmt.Fprintf(&r.out, "// loops: the matrix product needs 64-bit indices\n")
		return r.renderLoops(i, k)
	}
	fn := kernelFn(i, k)
	v := pl.view
	srcA, readsA, contA, err := r.operandFn(k, fn+"_A", v.A, pl.condA, v.Batch, v.M, v.K, false)
	if err != nil {
		return fmt.Errorf("operand A: %w", err)
	}
	srcB, readsB, contB, err := r.operandFn(k, fn+"_B", v.B, pl.condB, v.Batch, v.N, v.K, false)
	if err != nil {
		return fmt.Errorf("operand B: %w", err)
	}
	srcS, readsS, err := r.storeFn(k, fn+"_store", pl, false)
	if err != nil {
		return err
	}
	// Operands that are not one linear formula but split into slot and
	// reduction parts are read through their parts instead of the
	// operand function.
	sepA, sepB := r.separable(k, v.A, pl.condA, v.Batch, v.M, v.K), r.separable(k, v.B, pl.condB, v.Batch, v.N, v.K)
	if sepA == nil {
		r.out.WriteString(srcA)
	}
	if sepB == nil {
		r.out.WriteString(srcB)
	}
	r.out.WriteString(srcS)
	reads := bufSet{}
	for _, m := range []bufSet{readsA, readsB, readsS} {
		for _, id := range m.ids() {
			reads.add(id)
		}
	}
	var scratch []scratchParam
	partial := -1
	ct := ctype(dt)
	if cfg.Splits > 1 {
		partial = r.addScratch(cfg.Splits * pl.B * pl.M * pl.N * ctypeSize(dt))
		scratch = append(scratch, scratchParam{partial, ct})
	}
	params, args := r.params(k.Out, reads, scratch)
	g := gemmGen{cfg: cfg, pl: pl, ct: ct, fn: fn, contA: contA, contB: contB,
		callA: argList(readsA, -1), callB: argList(readsB, -1), callS: argList(readsS, k.Out), partial: partial, emul: r.t.EmulateMMA,
		sepA: sepA, sepB: sepB}
	body := viewPrologue(args) + g.kernel()
	local := cfg.threads()
	from := ""
	if t := k.Schedule.Tiling; t != nil && t.From != "" {
		from = " (" + t.From + ")"
	}
	fmt.Fprintf(&r.out, "// %s%s\n__kernel __attribute__((reqd_work_group_size(%d, 1, 1)))\nvoid %s(%s) {\n%s}\n", cfg, from, local, fn, params, body)
	groups := ceilDiv(pl.M, cfg.BM) * ceilDiv(pl.N, cfg.BN) * pl.B * cfg.Splits
	strategy := "gemm"
	if cfg.MMA != "" {
		strategy = "gemm-" + cfg.MMA
	}
	r.r.Launches = append(r.r.Launches, launchPlan{Fn: fn, Kernel: i, Strategy: strategy + " " + cfg.String() + from, Args: args,
		Global: groups * local, Local: local, Fixed: true})
	if cfg.Splits == 1 {
		return nil
	}
	// The combining kernel: one work-item per (batch, row, column).
	var w writer
	w.ind = 1
	total := pl.B * pl.M * pl.N
	w.line("if (gid >= %d) return;", total)
	w.line("const int n = gid %% %d, m = (gid / %d) %% %d, bt = gid / %d;", pl.N, pl.N, pl.M, pl.M*pl.N)
	w.line("%s acc = %s;", ct, literal(dt, 0))
	w.open("for (int s = 0; s < %d; s++) {", cfg.Splits)
	w.line("acc = %s;", aggStep(tile.Sum, dt, "acc", fmt.Sprintf("%s[s * %d + gid]", scratchName(partial), total)))
	w.close("}")
	w.line("%s_store(%s, bt, m, n, acc);", fn, g.callS)
	cparams, cargs := r.params(k.Out, readsS, scratch)
	r.pointKernel(launchPlan{Fn: fn + "_combine", Kernel: i, Strategy: "gemm-combine", Args: cargs, Global: total}, cparams, w.b.String(), false)
	return nil
}

// gemmGen writes the body of a tiled matrix-product kernel.
type gemmGen struct {
	cfg                 gemmConfig
	pl                  *gemmPlan
	ct                  string
	fn                  string
	contA, contB        bool
	callA, callB, callS string
	partial             int
	emul                bool
	sepA, sepB          *sepOperand
	parts               map[string]string // see partName
	w                   writer
}

// The staged panels: As[buf][k][m] and Bs[buf][k][n], rows padded so that
// the tensor-core fragment reads of a warp fall in distinct banks.
func (g *gemmGen) strideA() int { return g.cfg.BM + 8 }
func (g *gemmGen) strideB() int { return g.cfg.BN + 8 }

func (g *gemmGen) kernel() string {
	c, pl := g.cfg, g.pl
	w := &g.w
	w.ind = 1
	nt := c.threads()
	la, lb := c.BM*c.BK/nt, c.BN*c.BK/nt
	gm, gn := ceilDiv(pl.M, c.BM), ceilDiv(pl.N, c.BN)
	w.line("__local %s As[2][%d] __attribute__((aligned(16)));", g.ct, c.BK*g.strideA())
	w.line("__local %s Bs[2][%d] __attribute__((aligned(16)));", g.ct, c.BK*g.strideB())
	if c.MMA != "" && g.emul {
		w.line("__local float mmaScratch[%d];", g.emulScratch()*c.WM*c.WN)
	}
	w.line("const int tid = get_local_id(0);")
	w.line("const int grp = get_group_id(0);")
	// Groups run in bands of 8 tile rows, so that concurrently running
	// groups share panels of A and B in the cache.
	w.line("const int tile = grp %% %d, z = grp / %d;", gm*gn, gm*gn)
	w.line("const int band = tile / %d, inBand = tile %% %d;", 8*gn, 8*gn)
	w.line("const int rows = min(%d - band * 8, 8);", gm)
	w.line("const int m0 = (band * 8 + inBand %% rows) * %d, n0 = (inBand / rows) * %d;", c.BM, c.BN)
	w.line("const int bt = z / %d, split = z %% %d;", c.Splits, c.Splits)
	w.line("const int kBegin = split * %d, kEnd = min(%d, kBegin + %d);", c.KC, pl.K, c.KC)
	w.line("%s ra[%d], rb[%d];", g.ct, la, lb)
	g.declareAcc()
	g.prepareOperands()
	g.loadPanels("kBegin")
	g.storePanels("0")
	w.line("barrier(CLK_LOCAL_MEM_FENCE);")
	w.line("int buf = 0;")
	w.open("for (int k0 = kBegin; k0 < kEnd; k0 += %d) {", c.BK)
	w.line("const int more = k0 + %d < kEnd;", c.BK)
	w.open("if (more) {")
	g.loadPanels(fmt.Sprintf("k0 + %d", c.BK))
	w.close("}")
	w.line("__local const %s* restrict sA = As[buf];", g.ct)
	w.line("__local const %s* restrict sB = Bs[buf];", g.ct)
	if c.MMA != "" {
		g.computeMMA()
	} else {
		g.computeSIMT()
	}
	w.open("if (more) {")
	g.storePanels("buf ^ 1")
	w.close("}")
	w.line("barrier(CLK_LOCAL_MEM_FENCE);")
	w.line("buf ^= 1;")
	w.close("}")
	g.storeResults()
	return w.b.String()
}

func joinArgs(bufs, rest string) string {
	if bufs == "" {
		return rest
	}
	return bufs + ", " + rest
}

// loadPanels writes the reads of the A and B panels at reduction offset k0
// into registers: each work-item reads BM·BK/threads elements of A and
// BN·BK/threads of B, consecutive work-items along the operand's contiguous
// direction, 0 outside the matrices and the split's reduction range.
func (g *gemmGen) loadPanels(k0 string) {
	g.loadOperand(k0, g.operand(false))
	g.loadOperand(k0, g.operand(true))
}

// panelOperand describes the staging of one operand: A (rows m, extent
// BM) or B (columns n, extent BN).
type panelOperand struct {
	name     string // "A" or "B"
	reg, idx string // the staging registers and the matrix index's name
	ext      int    // BM or BN
	bound    int    // M or N
	cont     bool
	call     string
	sep      *sepOperand
}

func (g *gemmGen) operand(b bool) panelOperand {
	if b {
		return panelOperand{"B", "rb", "nn", g.cfg.BN, g.pl.N, g.contB, g.callB, g.sepB}
	}
	return panelOperand{"A", "ra", "mm", g.cfg.BM, g.pl.M, g.contA, g.callA, g.sepA}
}

// slot returns the matrix index (relative to the tile's first) and the
// reduction index (relative to the panel's) of a work-item's j-th staged
// element of o. Where the threads cover whole runs of the contiguous
// direction, the index along it is the same for every j, and is written
// so, for the compiler (and sepOperand) to share it.
func (g *gemmGen) slot(o panelOperand, j int) (mat, red string) {
	c := g.cfg
	nt := c.threads()
	e := fmt.Sprintf("(tid + %d)", j*nt)
	plus := func(x string, d int) string {
		if d == 0 {
			return x
		}
		return fmt.Sprintf("%s + %d", x, d)
	}
	if o.cont {
		if nt%c.BK == 0 {
			return plus(fmt.Sprintf("tid / %d", c.BK), j*nt/c.BK), fmt.Sprintf("tid %% %d", c.BK)
		}
		return fmt.Sprintf("%s / %d", e, c.BK), fmt.Sprintf("%s %% %d", e, c.BK)
	}
	if nt%o.ext == 0 {
		return fmt.Sprintf("tid %% %d", o.ext), plus(fmt.Sprintf("tid / %d", o.ext), j*nt/o.ext)
	}
	return fmt.Sprintf("%s %% %d", e, o.ext), fmt.Sprintf("%s / %d", e, o.ext)
}

// prepareOperands writes, before the reduction loop, the slot parts of the
// separable operands (see sepOperand), one per distinct matrix index.
func (g *gemmGen) prepareOperands() {
	for _, o := range []panelOperand{g.operand(false), g.operand(true)} {
		if o.sep == nil {
			continue
		}
		seen := map[string]bool{}
		for j := range o.ext * g.cfg.BK / g.cfg.threads() {
			mat, _ := g.slot(o, j)
			if name := g.slotName(o, mat); !seen[name] {
				seen[name] = true
				z := "n0"
				if o.name == "A" {
					z = "m0"
				}
				o.sep.prepare(&g.w, name, "bt", z+" + "+mat)
			}
		}
	}
}

// slotName names the slot parts of o at matrix index mat by their order of
// appearance.
func (g *gemmGen) slotName(o panelOperand, mat string) string {
	return g.partName("s"+o.name, mat)
}

func (g *gemmGen) partName(prefix, key string) string {
	if g.parts == nil {
		g.parts = map[string]string{}
	}
	full := prefix + "|" + key
	if n, ok := g.parts[full]; ok {
		return n
	}
	n := fmt.Sprintf("%s%d", prefix, len(g.parts))
	g.parts[full] = n
	return n
}

func (g *gemmGen) loadOperand(k0 string, o panelOperand) {
	c, w := g.cfg, &g.w
	first := "n0"
	if o.name == "A" {
		first = "m0"
	}
	count := o.ext * c.BK / c.threads()
	redNames := map[string]string{}
	if o.sep != nil {
		// The reduction parts, one per distinct reduction index, in a
		// block of their own for each panel.
		w.open("{")
		for j := range count {
			if _, red := g.slot(o, j); redNames[red] == "" {
				redNames[red] = fmt.Sprintf("r%s%d", o.name, len(redNames))
				o.sep.reduction(w, redNames[red], k0+" + "+red)
			}
		}
	}
	for j := range count {
		mat, red := g.slot(o, j)
		val := fmt.Sprintf("%s_%s(%s)", g.fn, o.name, joinArgs(o.call, "bt, "+o.idx+", kk"))
		if o.sep != nil {
			val = o.sep.value(g.slotName(o, mat), redNames[red], "0")
		}
		w.line("{ const int %s = %s + %s, kk = %s + %s; %s[%d] = (%s < %d && kk < kEnd) ? %s : 0; }",
			o.idx, first, mat, k0, red, o.reg, j, o.idx, o.bound, val)
	}
	if o.sep != nil {
		w.close("}")
	}
}

// storePanels writes the registers loaded by loadPanels into local buffer
// buf, A as As[k][m] and B as Bs[k][n].
func (g *gemmGen) storePanels(buf string) {
	c, w := g.cfg, &g.w
	nt := c.threads()
	for j := range c.BM * c.BK / nt {
		e := fmt.Sprintf("(tid + %d)", j*nt)
		idx := fmt.Sprintf("(%s %% %d) * %d + %s / %d", e, c.BK, g.strideA(), e, c.BK)
		if !g.contA {
			idx = fmt.Sprintf("(%s / %d) * %d + %s %% %d", e, c.BM, g.strideA(), e, c.BM)
		}
		w.line("As[%s][%s] = %s;", buf, idx, g.stage(fmt.Sprintf("ra[%d]", j)))
	}
	for j := range c.BN * c.BK / nt {
		e := fmt.Sprintf("(tid + %d)", j*nt)
		idx := fmt.Sprintf("(%s %% %d) * %d + %s / %d", e, c.BK, g.strideB(), e, c.BK)
		if !g.contB {
			idx = fmt.Sprintf("(%s / %d) * %d + %s %% %d", e, c.BN, g.strideB(), e, c.BN)
		}
		w.line("Bs[%s][%s] = %s;", buf, idx, g.stage(fmt.Sprintf("rb[%d]", j)))
	}
}

// stage converts a value for the local-memory panel: 1xTF32 rounds to tf32
// once here, so that fragments are read ready for the instruction.
func (g *gemmGen) stage(v string) string {
	if g.cfg.MMA == "tf32" {
		return "tt_tf32_round(" + v + ")"
	}
	return v
}

func (g *gemmGen) declareAcc() {
	c := g.cfg
	if c.MMA != "" {
		g.w.line("const int warp = tid / 32, lane = tid %% 32, gq = lane >> 2, tq = lane & 3;")
		g.w.line("const int wm = warp / %d, wn = warp %% %d;", c.WN, c.WN)
		g.w.line("float acc[%d][%d][4];", c.BM/c.WM/16, c.BN/c.WN/8)
		for mt := range c.BM / c.WM / 16 {
			for nt := range c.BN / c.WN / 8 {
				g.w.line("acc[%d][%d][0] = acc[%d][%d][1] = acc[%d][%d][2] = acc[%d][%d][3] = 0.0f;", mt, nt, mt, nt, mt, nt, mt, nt)
			}
		}
		return
	}
	g.w.line("const int tm = tid / %d, tn = tid %% %d;", c.BN/c.TN, c.BN/c.TN)
	g.w.line("%s acc[%d][%d];", g.ct, c.TM, c.TN)
	for a := range c.TM {
		for b := range c.TN {
			g.w.line("acc[%d][%d] = 0;", a, b)
		}
	}
}

// computeSIMT writes the inner product over one staged panel: every
// work-item multiplies its TM rows (strided by BM/TM) by its TN columns
// (strided by BN/TN) for each of the BK reduction steps.
func (g *gemmGen) computeSIMT() {
	c, w := g.cfg, &g.w
	w.line("#pragma unroll")
	w.open("for (int kk = 0; kk < %d; kk++) {", c.BK)
	if g.vec4() {
		// Each work-item's rows (and columns) come in runs of 4, read as
		// one float4 from the 16-byte aligned panel.
		for q := range c.TM / 4 {
			w.line("const float4 av%d = *(__local const float4*)(sA + kk * %d + tm * 4 + %d);", q, g.strideA(), q*(c.BM/(c.TM/4)))
		}
		for q := range c.TN / 4 {
			w.line("const float4 bv%d = *(__local const float4*)(sB + kk * %d + tn * 4 + %d);", q, g.strideB(), q*(c.BN/(c.TN/4)))
		}
		lanes := []string{"x", "y", "z", "w"}
		for a := range c.TM {
			w.line("const float a%d = av%d.%s;", a, a/4, lanes[a%4])
		}
		for b := range c.TN {
			w.line("const float b%d = bv%d.%s;", b, b/4, lanes[b%4])
		}
	} else {
		for a := range c.TM {
			w.line("const %s a%d = sA[kk * %d + %s];", g.ct, a, g.strideA(), g.rowOff(a))
		}
		for b := range c.TN {
			w.line("const %s b%d = sB[kk * %d + %s];", g.ct, b, g.strideB(), g.colOff(b))
		}
	}
	for a := range c.TM {
		var parts []string
		for b := range c.TN {
			if g.ct == "uchar" {
				parts = append(parts, fmt.Sprintf("acc[%d][%d] |= a%d & b%d;", a, b, a, b))
			} else if g.ct == "int" {
				parts = append(parts, fmt.Sprintf("acc[%d][%d] = (int)((uint)acc[%d][%d] + (uint)a%d * (uint)b%d);", a, b, a, b, a, b))
			} else {
				parts = append(parts, fmt.Sprintf("acc[%d][%d] += a%d * b%d;", a, b, a, b))
			}
		}
		w.line("%s", strings.Join(parts, " "))
	}
	w.close("}")
}

// vec4 reports whether the SIMT work-items own runs of 4 rows and columns
// (float tiles of 4×4 or 8×8 per work-item): row a of work-item tm is then
// tm·4 + a mod 4 in run a/4, the runs BM/(TM/4) apart.
func (g *gemmGen) vec4() bool {
	return g.ct == "float" && g.cfg.TM%4 == 0 && g.cfg.TN%4 == 0
}

// rowOff and colOff return the tile row of the work-item's a-th result row
// and the tile column of its b-th result column.
func (g *gemmGen) rowOff(a int) string {
	c := g.cfg
	if g.vec4() {
		return fmt.Sprintf("tm * 4 + %d", (a/4)*(c.BM/(c.TM/4))+a%4)
	}
	return fmt.Sprintf("tm + %d", a*(c.BM/c.TM))
}

func (g *gemmGen) colOff(b int) string {
	c := g.cfg
	if g.vec4() {
		return fmt.Sprintf("tn * 4 + %d", (b/4)*(c.BN/(c.TN/4))+b%4)
	}
	return fmt.Sprintf("tn + %d", b*(c.BN/c.TN))
}

// computeMMA writes the tensor-core inner product over one staged panel:
// for each 8-deep step, each warp loads its A fragments (16×8 per m-tile)
// and B fragments (8×8 per n-tile) in the layout of
// mma.m16n8k8.row.col.tf32 and issues one instruction per tile pair (three
// for 3xTF32, which splits each value into a tf32 high part and the
// remainder).
func (g *gemmGen) computeMMA() {
	c, w := g.cfg, &g.w
	mts, nts := c.BM/c.WM/16, c.BN/c.WN/8
	wtm, wtn := c.BM/c.WM, c.BN/c.WN
	sa, sb := g.strideA(), g.strideB()
	split := c.MMA == "3xtf32"
	for k8 := 0; k8 < c.BK; k8 += 8 {
		w.open("{")
		w.line("const int ka = (%d + tq) * %d, kb = (%d + tq) * %d;", k8, sa, k8, sb)
		for mt := range mts {
			row := fmt.Sprintf("wm * %d + %d + gq", wtm, mt*16)
			vals := []string{
				fmt.Sprintf("sA[ka + %s]", row),
				fmt.Sprintf("sA[ka + %s + 8]", row),
				fmt.Sprintf("sA[ka + %d + %s]", 4*sa, row),
				fmt.Sprintf("sA[ka + %d + %s + 8]", 4*sa, row),
			}
			for q, v := range vals {
				if split {
					w.line("const float fa%d_%d = %s; const uint ah%d_%d = as_uint(fa%d_%d) & 0xffffe000u; const uint al%d_%d = as_uint(fa%d_%d - as_float(ah%d_%d));",
						mt, q, v, mt, q, mt, q, mt, q, mt, q, mt, q)
				} else {
					w.line("const uint ah%d_%d = as_uint(%s);", mt, q, v)
				}
			}
		}
		for nt := range nts {
			col := fmt.Sprintf("wn * %d + %d + gq", wtn, nt*8)
			vals := []string{fmt.Sprintf("sB[kb + %s]", col), fmt.Sprintf("sB[kb + %d + %s]", 4*sb, col)}
			for q, v := range vals {
				if split {
					w.line("const float fb%d_%d = %s; const uint bh%d_%d = as_uint(fb%d_%d) & 0xffffe000u; const uint bl%d_%d = as_uint(fb%d_%d - as_float(bh%d_%d));",
						nt, q, v, nt, q, nt, q, nt, q, nt, q, nt, q)
				} else {
					w.line("const uint bh%d_%d = as_uint(%s);", nt, q, v)
				}
			}
		}
		if g.emul {
			g.publishFragments(mts, nts, split)
		}
		if g.emul {
			g.emulatedMMAs(mts, nts, split)
			w.close("}")
			continue
		}
		mma := func(mt, nt int, a, b string) {
			w.line("TT_MMA(acc[%d][%d], %s%d_0, %s%d_1, %s%d_2, %s%d_3, %s%d_0, %s%d_1);",
				mt, nt, a, mt, a, mt, a, mt, a, mt, b, nt, b, nt)
		}
		if !split {
			for mt := range mts {
				for nt := range nts {
					mma(mt, nt, "ah", "bh")
				}
			}
			w.close("}")
			continue
		}
		// 3xTF32: the tensor cores round their float32 accumulation toward
		// zero, which over a long reduction costs more than the split
		// gains. So each step's three products (small ones first) are
		// summed from zero in a temporary, which the ordinary cores add to
		// the accumulator with round-to-nearest. Row by row of m-tiles,
		// each pass covers every n-tile so that consecutive instructions
		// are independent.
		for mt := range mts {
			w.open("{")
			w.line("float tmp[%d][4];", nts)
			for nt := range nts {
				w.line("TT_MMA0(tmp[%d], al%d_0, al%d_1, al%d_2, al%d_3, bh%d_0, bh%d_1);", nt, mt, mt, mt, mt, nt, nt)
			}
			for _, ps := range [][2]string{{"ah", "bl"}, {"ah", "bh"}} {
				for nt := range nts {
					w.line("TT_MMA(tmp[%d], %s%d_0, %s%d_1, %s%d_2, %s%d_3, %s%d_0, %s%d_1);",
						nt, ps[0], mt, ps[0], mt, ps[0], mt, ps[0], mt, ps[1], nt, ps[1], nt)
				}
			}
			for nt := range nts {
				w.line("acc[%d][%d][0] += tmp[%d][0]; acc[%d][%d][1] += tmp[%d][1]; acc[%d][%d][2] += tmp[%d][2]; acc[%d][%d][3] += tmp[%d][3];",
					mt, nt, nt, mt, nt, nt, mt, nt, nt, mt, nt, nt)
			}
			w.close("}")
		}
		w.close("}")
	}
}

// The emulation of the tensor-core instruction (for testing the template on
// devices without it) works per 8-deep step: every lane publishes its
// fragment registers at the matrix positions the instruction's layout
// assigns them, in its warp's scratch area, then after a barrier each
// instruction is computed from the published matrices into the lane's own
// accumulator positions. Wrong fragment loads or accumulator positions thus
// give wrong products, as they would on the hardware. The scratch holds, per
// warp, every m-tile's A (16×8) and n-tile's B (8×8), high and low parts.

// emulScratch returns the scratch floats one warp needs.
func (g *gemmGen) emulScratch() int {
	c := g.cfg
	return 2 * (c.BM/c.WM/16*128 + c.BN/c.WN/8*64)
}

// emulA and emulB return the scratch offset of a fragment matrix.
func (g *gemmGen) emulA(mt int, part string) int {
	off := mt * 256
	if part == "al" {
		off += 128
	}
	return off
}

func (g *gemmGen) emulB(nt int, part string, mts int) int {
	off := mts*256 + nt*128
	if part == "bl" {
		off += 64
	}
	return off
}

func (g *gemmGen) publishFragments(mts, nts int, split bool) {
	w := &g.w
	w.line("__local float* es = mmaScratch + warp * %d;", g.emulScratch())
	parts := []string{"h"}
	if split {
		parts = append(parts, "l")
	}
	for mt := range mts {
		for _, p := range parts {
			for q := range 4 {
				row, col := fmt.Sprintf("(gq + %d)", 8*(q&1)), fmt.Sprintf("(tq + %d)", 4*(q>>1))
				w.line("es[%d + %s * 8 + %s] = tt_tf32_trunc(a%s%d_%d);", g.emulA(mt, "a"+p), row, col, p, mt, q)
			}
		}
	}
	for nt := range nts {
		for _, p := range parts {
			for q := range 2 {
				w.line("es[%d + (tq + %d) * 8 + gq] = tt_tf32_trunc(b%s%d_%d);", g.emulB(nt, "b"+p, mts), 4*q, p, nt, q)
			}
		}
	}
	w.line("barrier(CLK_LOCAL_MEM_FENCE);")
}

// emulatedMMAs computes, after the fragments are published, every
// instruction of the step in the order the hardware path issues them (for
// 3xTF32: low·high, high·low, high·high), then waits so that the scratch
// can be reused.
func (g *gemmGen) emulatedMMAs(mts, nts int, split bool) {
	w := &g.w
	w.open("for (int t = 0; t < %d; t++) {", mts*nts)
	w.line("const int mt = t / %d, nt = t %% %d;", nts, nts)
	w.open("for (int i = 0; i < 4; i++) {")
	w.line("const int row = gq + 8 * (i >> 1), col = 2 * tq + (i & 1);")
	w.line("__local const float* ea = es + mt * 256 + row * 8;")
	w.line("__local const float* eb = es + %d + nt * 128 + col;", mts*256)
	if split {
		// As the hardware path: the three products summed from zero, then
		// added to the accumulator.
		w.line("float sum = 0.0f;")
		w.line("{ float s = 0.0f; for (int k = 0; k < 8; k++) s += ea[128 + k] * eb[k * 8]; sum += s; }")
		w.line("{ float s = 0.0f; for (int k = 0; k < 8; k++) s += ea[k] * eb[64 + k * 8]; sum += s; }")
		w.line("{ float s = 0.0f; for (int k = 0; k < 8; k++) s += ea[k] * eb[k * 8]; sum += s; }")
		w.line("acc[mt][nt][i] += sum;")
	} else {
		w.line("float s = 0.0f;")
		w.line("for (int k = 0; k < 8; k++) s += ea[k] * eb[k * 8];")
		w.line("acc[mt][nt][i] += s;")
	}
	w.close("}")
	w.close("}")
	w.line("barrier(CLK_LOCAL_MEM_FENCE);")
}

// storeResults writes each work-item's results through the store helper
// (or as a partial product of its split).
func (g *gemmGen) storeResults() {
	c, pl, w := g.cfg, g.pl, &g.w
	emit := func(m, n, v string) {
		w.open("if (%s < %d && %s < %d) {", m, pl.M, n, pl.N)
		if g.partial >= 0 {
			w.line("%s[((split * %d + bt) * %d + %s) * %d + %s] = %s;", scratchName(g.partial), pl.B, pl.M, m, pl.N, n, v)
		} else {
			w.line("%s_store(%s, bt, %s, %s, %s);", g.fn, g.callS, m, n, v)
		}
		w.close("}")
	}
	if c.MMA != "" {
		mts, nts := c.BM/c.WM/16, c.BN/c.WN/8
		for mt := range mts {
			for nt := range nts {
				for q := range 4 {
					w.open("{")
					w.line("const int m = m0 + wm * %d + %d + gq, n = n0 + wn * %d + %d + 2 * tq;", c.BM/c.WM, mt*16+8*(q>>1), c.BN/c.WN, nt*8+(q&1))
					emit("m", "n", fmt.Sprintf("acc[%d][%d][%d]", mt, nt, q))
					w.close("}")
				}
			}
		}
		return
	}
	for a := range c.TM {
		for b := range c.TN {
			w.open("{")
			w.line("const int m = m0 + %s, n = n0 + %s;", g.rowOff(a), g.colOff(b))
			emit("m", "n", fmt.Sprintf("acc[%d][%d]", a, b))
			w.close("}")
		}
	}
}
