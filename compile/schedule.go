package compile

import (
	"fmt"
	"runtime"
	"slices"
	"strings"

	"github.com/tartanml/tartan/kir"
	"github.com/tartanml/tartan/tile"
)

// Schedule thresholds of the cost model.
const (
	// parallelMinWork is the number of body evaluations below which a
	// kernel runs on one worker: spreading less work costs more than it
	// saves.
	parallelMinWork = 1 << 14
	// chunksPerWorker is how many parallel chunks each worker should get,
	// so that uneven chunks still balance.
	chunksPerWorker = 4
	// reduceMinPoints is the reduction size from which a kernel with too
	// few output points to occupy the workers splits its reduction instead.
	reduceMinPoints = 1 << 12
	// maxUnroll bounds the unrolling of the innermost reduction loop.
	maxUnroll = 4
)

// schedule is pass 7. On work-item targets without SplitK it first splits
// each product of few outputs over a long sum into a partial product and a
// combine (rfactor, see rfactor.go). For each kernel it picks, from the
// Target, a strategy and its parameters with this cost model:
//
//   - "gemm" when the kernel is a matrix product (gemmView says when) that
//     gemmWorth finds worth the target's product template,
//     "scatter" when it is an indexed accumulation (kir.ScatterOf),
//     "reduce" when its output has fewer than 2 points per worker but its
//     reduction has at least reduceMinPoints points and an associative
//     aggregation (the reduction is split across workers), else "loops".
//   - Parallel: none when the kernel evaluates its body fewer than
//     parallelMinWork times or has one worker, or for "reduce"; all output
//     loops on OpenCL (each point a work-item); otherwise the fewest outer
//     output loops whose points number at least chunksPerWorker per worker.
//   - Vector: the target's vector width when the innermost output loop is at
//     least that long and every load moves by 0 or 1 element along it
//     (always for gemm, whose micro-kernel vectorises itself); else 1.
//   - Unroll: the innermost reduction loop's length up to maxUnroll.
//   - Tile: for "loops" kernels with reduction loops and at least two output
//     loops, a 4 × (vector width) register tile of the two innermost output
//     loops; none otherwise (gemm blocks itself).
//   - Local (OpenCL): a work-group of up to MaxWorkGroup work-items over the
//     innermost output loops, innermost first.
//
// The schedule changes speed, never results (up to the order of
// floating-point sums). It returns one line per kernel explaining the
// choices.
func schedule(prog *kir.Program, t Target) []string {
	var why []string
	for i := 0; i < len(prog.Kernels); i++ {
		k := prog.Kernels[i]
		squeeze(prog, k)
		if w := rfactor(prog, i, t); w != nil {
			why = append(why, w...)
			i++
			continue
		}
		why = append(why, scheduleKernel(prog, k, t))
	}
	return why
}

// Schedule gives every kernel of p the schedule that Compile's schedule
// pass would choose for target t, keeping the kernels' loops as they are,
// and returns the lines explaining the choices. It is for programs built
// by hand, such as the tests of backends, which then run what the compiler
// would ask of them. It splits no kernel (see rfactor), and so schedules a
// compiled program's partial products as the long sums they came from
// would be on a target without SplitK.
func Schedule(p *kir.Program, t Target) []string {
	why := make([]string, len(p.Kernels))
	for i, k := range p.Kernels {
		why[i] = scheduleKernel(p, k, t)
	}
	return why
}

func scheduleKernel(prog *kir.Program, k *kir.Kernel, t Target) string {
	w := t.workers()
	vw := max(t.VectorWidth, 1)
	outPts := k.Shape.Size()
	redPts := 1
	for _, l := range k.Reduce {
		redPts *= max(l.Hi-l.Lo+1, 0)
	}
	work := outPts * max(redPts, 1)
	s := kir.Schedule{Strategy: "loops", Workers: t.Workers, Vector: 1, Unroll: 1}
	var why []string
	view, regular, reason := gemmView(prog, k, t)
	gemm := false
	if view == nil {
		reason = "not a matrix product (" + reason + ")"
	} else {
		gemm, reason = gemmWorth(t, k, view, regular)
	}
	if gemm {
		s.Strategy, s.GEMM = "gemm", view
		why = append(why, "gemm: "+reason)
	} else if sv := kir.ScatterOf(prog, k); sv != nil {
		s.Strategy, s.Scatter = "scatter", sv
		why = append(why, fmt.Sprintf("scatter: a loop over the %d indices of b%d", prog.Buffers[sv.Indices].Size(), sv.Indices))
	} else {
		switch {
		case len(k.Reduce) > 0 && k.Agg != tile.Assign && outPts < 2*w && redPts >= reduceMinPoints:
			s.Strategy = "reduce"
			why = append(why, fmt.Sprintf("reduce: %d output points for %d workers, %d reduction points", outPts, w, redPts))
		case len(k.Reduce) > 0:
			why = append(why, "loops: "+reason)
		default:
			why = append(why, "loops: elementwise")
		}
	}
	r := len(k.Shape)
	switch {
	case s.Strategy == "reduce":
	case t.Backend == "opencl":
		s.Parallel = r
		why = append(why, "parallel: every output point is a work-item")
	case work < parallelMinWork || w == 1:
		why = append(why, fmt.Sprintf("serial: %d body evaluations", work))
	default:
		pts := 1
		for s.Parallel < r && pts < chunksPerWorker*w {
			pts *= k.Shape[s.Parallel]
			s.Parallel++
		}
		why = append(why, fmt.Sprintf("parallel %d: %d chunks for %d workers", s.Parallel, pts, w))
	}
	if r > 0 && vw > 1 && k.Shape[r-1] >= vw {
		switch {
		case s.Strategy == "gemm":
			s.Vector = vw
		case contiguousInner(prog, k):
			s.Vector = vw
			why = append(why, fmt.Sprintf("vector %d along x%d", vw, r-1))
		default:
			why = append(why, fmt.Sprintf("no vector: a load is strided along x%d", r-1))
		}
	}
	if n := len(k.Reduce); n > 0 {
		l := k.Reduce[n-1]
		s.Unroll = max(min(l.Hi-l.Lo+1, maxUnroll), 1)
	}
	if s.Strategy == "loops" && len(k.Reduce) > 0 && r >= 2 {
		s.Tile = make([]int, r)
		s.Tile[r-2] = min(4, k.Shape[r-2])
		s.Tile[r-1] = min(vw, k.Shape[r-1])
	}
	if t.Backend == "opencl" && r > 0 {
		limit := t.MaxWorkGroup
		if limit <= 0 {
			limit = 256
		}
		s.Local = make([]int, r)
		for d := r - 1; d >= 0; d-- {
			n := 1
			for n*2 <= k.Shape[d] && n*2 <= limit {
				n *= 2
			}
			s.Local[d] = n
			limit /= n
		}
	}
	k.Schedule = s
	return k.Name + ": " + strings.Join(why, "; ")
}

// workers returns the number of workers the schedule plans for: Workers,
// else ComputeUnits, else the host's CPUs.
func (t Target) workers() int {
	switch {
	case t.Workers > 0:
		return t.Workers
	case t.ComputeUnits > 0:
		return t.ComputeUnits
	}
	return runtime.NumCPU()
}

// loads returns the loads of e, outside loaded indices.
func loads(e *kir.Expr, out []*kir.Expr) []*kir.Expr {
	if e == nil {
		return out
	}
	if e.Op == kir.Load {
		out = append(out, e)
	}
	for _, a := range e.Args {
		out = loads(a, out)
	}
	return out
}

// contiguousInner reports whether every load of k moves by 0 or 1 elements
// when the innermost output loop advances.
func contiguousInner(prog *kir.Program, k *kir.Kernel) bool {
	vars := k.VarRanges()
	inner := len(k.Shape) - 1
	for _, e := range loads(k.Epilogue, loads(k.Body, nil)) {
		off := kir.Offset(e.Index, prog.Buffers[e.Buf].Shape, vars)
		coef, _, ok := kir.LinearForm(off, len(vars))
		if !ok {
			if mentions(off, inner) {
				return false
			}
			continue
		}
		if c := coef[inner]; c != 0 && c != 1 {
			return false
		}
	}
	return true
}

func mentions(x *kir.Ix, v int) bool {
	if x == nil {
		return false
	}
	if x.Op == kir.IxVar && x.Var == v {
		return true
	}
	if x.Op == kir.IxValue {
		return true
	}
	return mentions(x.A, v) || mentions(x.B, v)
}

// gemmView maps a kernel onto a (batched) matrix product, or says why not.
// The kernel must sum a product of two loads. kir.GEMMGroups sorts the
// loops into batch, M, N and K groups by which operand reads them;
// reduction loops of more than one point must be read by both (K). The
// groups may interleave in the output (attention's [batch, rows, heads,
// cols]): backends lay the product out by the output's strides.
//
// Padded convolutions and their gradients are products too: a load that
// may leave its buffer (a Skip load, or a Fill load of value 0) is a
// guarded operand, 0 outside (a skipped term adds nothing to a sum, and
// neither does a product with 0), and each Where condition must belong to
// one operand, reading only loops of its groups, so that the operand is 0
// where it fails (kir.GEMMView.Complete). A backend may then load 0 for the
// operand there. regular reports whether both operands are plain loads,
// in range, without conditions and with affine offsets.
func gemmView(prog *kir.Program, k *kir.Kernel, t Target) (view *kir.GEMMView, regular bool, why string) {
	b := k.Body
	switch {
	case len(k.Reduce) == 0:
		return nil, false, "no reduction"
	case k.Agg != tile.Sum:
		return nil, false, "aggregation " + k.Agg.String()
	case b.Op != kir.Apply || b.Fn != tile.Mul || b.Args[0].Op != kir.Load || b.Args[1].Op != kir.Load:
		return nil, false, "body is not a product of two loads"
	}
	vars := k.VarRanges()
	var reads [2]map[int]bool
	regular = len(k.Where) == 0
	for i, e := range b.Args {
		reads[i] = map[int]bool{}
		kir.ExprVars(e, reads[i])
		if _, _, ok := kir.LinearForm(kir.Offset(e.Index, prog.Buffers[e.Buf].Shape, vars), len(vars)); !ok {
			regular = false
		}
	}
	for j := range k.Reduce {
		v := len(k.Shape) + j
		if reads[0][v] != reads[1][v] && vars[v].Hi > vars[v].Lo {
			return nil, false, fmt.Sprintf("reduction loop %s is read by one operand only", k.Reduce[j].Name)
		}
	}
	view, why = kir.GEMMGroups(k, b.Args[0], b.Args[1], func(f, v int) bool { return reads[f][v] }, !t.SplitGroups)
	if view == nil {
		return nil, false, why
	}
	if why := view.Complete(prog, k); why != "" {
		return nil, false, why
	}
	return view, regular && !view.GuardA && !view.GuardB, ""
}

// GPU tiles: on targets that run every output point as a work-item, a
// product whose operands are not regular (gemmView) is tiled only when it
// has at least gpuMinRows rows and columns and gpuMinDepth summed points:
// staging such an operand costs index arithmetic and checks per element,
// which the tiles of a smaller product do not repay over the loop nest.
const gpuMinRows, gpuMinDepth = 16, 32

// Long sums on targets without SplitK: a product of at most
// reduceMaxOutputs outputs (batch × M × N) summing at least reduceMinDepth
// points would occupy a few work-groups for the whole sum as tiles (a
// convolution's weight gradient: 27×32 outputs over 65,536 points), so it
// runs as loops, which such a backend gives a work-group per output
// reduction.
const reduceMaxOutputs, reduceMinDepth = 1 << 15, 256

// gemmWorth is the cost model's choice between the matrix-product
// strategy and the loop nest for a kernel that view maps onto a product:
// on every target a batch of dot products (matrices of one element) runs
// as loops, and on the CPU so does a product whose batch loop is the
// output's innermost (its matrices interleaved along it); on work-item
// targets (OpenCL, Vulkan) a product of irregular operands must be large
// enough for its tiles (gpuMinRows, gpuMinDepth), and without SplitK a
// product of few outputs over a long sum runs as loops (reduceMaxOutputs,
// reduceMinDepth); the CPU's products take every other product. It returns the
// reason for the why line.
func gemmWorth(t Target, k *kir.Kernel, view *kir.GEMMView, regular bool) (bool, string) {
	nb, m, n, kk := view.Extents(k)
	size := fmt.Sprintf("%d×%d×%d", m, n, kk)
	if nb > 1 {
		size = fmt.Sprintf("%d of %s", nb, size)
	}
	var notes []string
	if c := len(view.CondA) + len(view.CondB); c > 0 {
		notes = append(notes, fmt.Sprintf("%d conditions", c))
	}
	for i, g := range []bool{view.GuardA, view.GuardB} {
		if g {
			notes = append(notes, fmt.Sprintf("%c guarded", 'A'+i))
		}
	}
	if len(notes) > 0 {
		size += " (" + strings.Join(notes, ", ") + ")"
	}
	switch {
	case view.DotProducts(k):
		return false, "dot products " + size
	case !t.workItems() && len(k.Shape) > 0 && slices.Contains(view.Batch, len(k.Shape)-1):
		// The CPU's products lay their rows or columns along the output's
		// contiguous loop; a batch loop there (a depthwise convolution's
		// channel) interleaves the matrices, which they cannot run, while
		// the loop nest vectorises along it.
		return false, fmt.Sprintf("product %s: its batch loop x%d is the output's contiguous loop, which the CPU's products cannot interleave", size, len(k.Shape)-1)
	case t.workItems() && !regular && (m < gpuMinRows || n < gpuMinRows || kk < gpuMinDepth):
		return false, fmt.Sprintf("product %s too small for tiles of irregular operands", size)
	case longSum(t, nb, m, n, kk):
		return false, fmt.Sprintf("product %s: few outputs over a long sum, which tiles cannot split on this backend", size)
	}
	return true, fmt.Sprintf("%s; batch %d, M %d, N %d, K %d loops", size, len(view.Batch), len(view.M), len(view.N), len(view.K))
}

// workItems reports whether the target runs every output point as a
// work-item of a GPU-style device (OpenCL, Vulkan), rather than loops on
// CPU workers.
func (t Target) workItems() bool { return t.Backend == "opencl" || t.Backend == "vulkan" }
