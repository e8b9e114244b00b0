package cpu

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/tartanml/tartan/backend"
	"github.com/tartanml/tartan/compile"
	"github.com/tartanml/tartan/grad"
	"github.com/tartanml/tartan/kir"
	"github.com/tartanml/tartan/op"
	"github.com/tartanml/tartan/tile"
)

// These tests run programs both with this backend and with kir.Interpret,
// the IR's executable meaning (float64, element by element), on the same
// random inputs, and compare every output and every updated variable. The
// programs come from package compile and from kernels written by hand.
//
// Criterion: |got − want| ≤ 1e-4·|want| + 1e-5·(1 + peak), peak being the
// largest magnitude in the reference buffer: float32 rounding plus sums in a
// different order.

const (
	relTol   = 1e-4
	floorTol = 1e-5
)

// randomBuffers returns random contents for every input and variable of p,
// in kir.Interpret's float64 form.
func randomBuffers(p *kir.Program, rng *rand.Rand) [][]float64 {
	bufs := make([][]float64, len(p.Buffers))
	for _, b := range p.Buffers {
		if b.Kind != kir.Input && b.Kind != kir.Variable {
			continue
		}
		v := make([]float64, b.Size())
		// Adam's second moments are never negative.
		nonNeg := strings.HasSuffix(b.Name, "/v")
		for i := range v {
			switch {
			case b.DType.IsFloat() && nonNeg:
				v[i] = tile.RoundTo(b.DType, rng.Float64())
			case b.DType.IsFloat():
				v[i] = tile.RoundTo(b.DType, 2*rng.Float64()-1)
			case b.DType == tile.Bool:
				v[i] = float64(rng.IntN(2))
			case b.Shape.Rank() == 0:
				v[i] = float64(rng.IntN(1000))
			default:
				v[i] = float64(rng.IntN(10))
			}
		}
		bufs[b.ID] = v
	}
	return bufs
}

// compareValues checks got against want with the package criterion.
func compareValues(got, want []float64) error {
	if len(got) != len(want) {
		return fmt.Errorf("%d values, want %d", len(got), len(want))
	}
	peak := 0.0
	for _, w := range want {
		if !math.IsInf(w, 0) && !math.IsNaN(w) {
			peak = math.Max(peak, math.Abs(w))
		}
	}
	for i := range want {
		g, w := got[i], want[i]
		if math.IsNaN(w) || math.IsInf(w, 0) {
			if !(math.IsNaN(w) && math.IsNaN(g)) && g != w {
				return fmt.Errorf("element %d: got %v, want %v", i, g, w)
			}
			continue
		}
		if d := math.Abs(g - w); !(d <= relTol*math.Abs(w)+floorTol*(1+peak)) {
			return fmt.Errorf("element %d: got %v, want %v (difference %.3g)", i, g, w, d)
		}
	}
	return nil
}

// checkProgram runs p for runs steps on this backend and with kir.Interpret
// from the same random inputs and variables, and compares outputs and
// variables after every step.
func checkProgram(t *testing.T, d *Device, p *kir.Program, runs int, seed uint64) {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, 1))
	ref := randomBuffers(p, rng)
	x, err := d.Load(p)
	if err != nil {
		t.Fatalf("load: %v", err)
	}
	defer x.Close()
	for _, in := range p.Inputs {
		b := p.Buffers[in.Buffer]
		if err := x.SetInput(in.Name, backend.HostSlice(b.DType, ref[in.Buffer])); err != nil {
			t.Fatalf("set input: %v", err)
		}
	}
	for _, v := range p.Variables {
		b := p.Buffers[v.Buffer]
		if err := x.WriteVariable(v.Name, backend.HostSlice(b.DType, ref[v.Buffer])); err != nil {
			t.Fatalf("write variable: %v", err)
		}
	}
	for step := range runs {
		if err := kir.Interpret(p, ref); err != nil {
			t.Fatalf("interpret: %v", err)
		}
		if err := x.Run(); err != nil {
			t.Fatalf("run: %v", err)
		}
		check := func(what, name string, id int, read func(string, any) error) {
			b := p.Buffers[id]
			dst := backend.HostSlice(b.DType, make([]float64, b.Size()))
			if err := read(name, dst); err != nil {
				t.Fatalf("read %s %s: %v", what, name, err)
			}
			want := ref[id]
			if b.DType.IsInt() {
				// kir.Interpret holds integers as float64, which can
				// exceed the integer range after an overflow; compare what
				// a host reads, as the reference device's conversion does.
				want = backend.ToFloat64(backend.HostSlice(b.DType, want))
			}
			if err := compareValues(backend.ToFloat64(dst), want); err != nil {
				t.Errorf("step %d: %s %q (b%d %s%v): %v", step, what, name, id, b.DType, b.Shape, err)
			}
		}
		for _, o := range p.Outputs {
			check("output", o.Name, o.Buffer, x.ReadOutput)
		}
		for _, v := range p.Variables {
			check("variable", v.Name, v.Buffer, x.ReadVariable)
		}
		if t.Failed() {
			return
		}
	}
}

func compileFor(t *testing.T, d *Device, g *tile.Graph) *kir.Program {
	t.Helper()
	if err := g.Err(); err != nil {
		t.Fatalf("graph: %v", err)
	}
	p, err := compile.Compile(g, d.Target())
	if err != nil {
		t.Fatalf("compile: %v", err)
	}
	return p
}

func TestCompiledGraphsMatchInterpreter(t *testing.T) {
	d := New()
	defer d.Close()
	cases := []buildCase{
		{"dense_relu", func(g *tile.Graph) {
			x := g.Input("x", tile.Float32, tile.Shape{5, 7})
			w := g.Input("w", tile.Float32, tile.Shape{7, 3})
			b := g.Input("b", tile.Float32, tile.Shape{3})
			g.SetOutput("y", op.ReLU(g, op.Dense(g, x, w, b)))
		}},
		{"conv_pool_softmax", func(g *tile.Graph) {
			x := g.Input("x", tile.Float32, tile.Shape{2, 9, 7, 3})
			w := g.Input("w", tile.Float32, tile.Shape{3, 2, 3, 5})
			h := op.Conv2D(g, x, w, op.ConvOptions{Padding: op.Same})
			h = op.MaxPool2D(g, h, op.PoolOptions{Padding: op.Same})
			g.SetOutput("y", op.Softmax(g, op.Flatten(g, h), -1))
		}},
		{"showcase_b3", nil},
		// Batch statistics over rows of reduction points: whole row groups
		// (W = 32) and a last group of fewer rows (W = 100), the centred
		// square's mean hoisted out of the reduction loops.
		{"bn_statistics_w32", func(g *tile.Graph) { bnStatistics(g, tile.Shape{3, 5, 32, 16}) }},
		{"bn_statistics_w100", func(g *tile.Graph) { bnStatistics(g, tile.Shape{2, 3, 100, 16}) }},
		// A padded window with a per-channel factor: guarded reduction
		// points, the factor's load hoisted.
		{"window_scaled", func(g *tile.Graph) {
			x := g.Input("x", tile.Float32, tile.Shape{4, 9, 24})
			b := g.Input("b", tile.Float32, tile.Shape{24})
			ix := func(s ...string) []tile.Affine {
				out := make([]tile.Affine, len(s))
				for i, n := range s {
					out[i] = tile.Ix(n)
				}
				return out
			}
			g.SetOutput("y", g.Contract(tile.Sum, tile.CombMul, tile.Shape{4, 9, 24}, ix("n", "i", "c"),
				[]tile.Operand{{Tensor: x, Index: []tile.Affine{tile.Ix("n"), tile.Ix("i").Plus(tile.Ix("k")).AddConst(-1), tile.Ix("c")}},
					{Tensor: b, Index: ix("c")}}, tile.Constraint{Expr: tile.Ix("k"), Bound: 3}))
		}},
	}
	cases = append(cases, periodicCases...)
	cases = append(cases, rowSelectCases...)
	cases = append(cases, guardMergeCases...)
	cases = append(cases, rowClipCases...)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var g *tile.Graph
			if c.build == nil {
				g = showcaseStep(3)
			} else {
				g = tile.NewGraph(c.name)
				c.build(g)
			}
			p := compileFor(t, d, g)
			checkProgram(t, d, p, 2, 1)
		})
	}
}

// bnStatistics outputs the per-channel sum of x and of its squared deviation
// from a given mean, x being [N, H, W, C].
func bnStatistics(g *tile.Graph, shape tile.Shape) {
	x := g.Input("x", tile.Float32, shape)
	m := g.Input("m", tile.Float32, tile.Shape{shape[3]})
	d := g.Sub(x, m)
	all := []tile.Affine{tile.Ix("n"), tile.Ix("y"), tile.Ix("x"), tile.Ix("c")}
	sum := func(t *tile.Tensor) *tile.Tensor {
		return g.Contract(tile.Sum, tile.CombNone, tile.Shape{shape[3]}, []tile.Affine{tile.Ix("c")},
			[]tile.Operand{{Tensor: t, Index: all}})
	}
	g.SetOutput("s", sum(x))
	g.SetOutput("v", sum(g.Mul(d, d)))
}

// periodicCases are elementwise kernels whose per-channel loads make the
// channel loop merge with the loops before it (periodic loads): rows longer
// than a chunk with 144 channels, which 1024 does not divide, an integer
// table read into float64 lanes, and several rows per chunk with a
// per-sample-per-channel factor whose base moves from row to row, the
// transposed t keeping the sample loop apart.
var periodicCases = []buildCase{
	{"periodic_c144", func(g *tile.Graph) {
		x := g.Input("x", tile.Float32, tile.Shape{3, 7, 11, 144})
		sc := g.Input("s", tile.Float32, tile.Shape{144})
		b := g.Input("b", tile.Float32, tile.Shape{144})
		k := g.Input("k", tile.Int32, tile.Shape{144})
		y := g.Add(g.Mul(x, sc), b)
		g.SetOutput("y", g.Mul(y, g.Cast(g.Add(k, g.ScalarLike(k, 1)), tile.Float32)))
	}},
	{"periodic_rows", func(g *tile.Graph) {
		x := g.Input("x", tile.Float32, tile.Shape{6, 3, 5, 16})
		sc := g.Input("s", tile.Float32, tile.Shape{16})
		u := g.Input("u", tile.Float32, tile.Shape{6, 1, 1, 16})
		tt := g.Input("t", tile.Float32, tile.Shape{3, 6})
		tb := g.Contract(tile.Assign, tile.CombNone, tile.Shape{6, 3, 5, 16},
			[]tile.Affine{tile.Ix("n"), tile.Ix("h"), tile.Ix("w"), tile.Ix("c")},
			[]tile.Operand{{Tensor: tt, Index: []tile.Affine{tile.Ix("h"), tile.Ix("n")}}})
		g.SetOutput("y", g.Add(g.Mul(g.Mul(x, sc), u), tb))
	}},
}

// TestPeriodicLoadsMerge checks that the kernels of periodicCases do merge
// their channel loop with the loops before it, so that
// TestCompiledGraphsMatchInterpreter exercises periodic loads.
func TestPeriodicLoadsMerge(t *testing.T) {
	someKernel(t, periodicCases, "no kernel merges its channel loop through a periodic load", func(p *kir.Program, k *kir.Kernel) bool {
		if len(k.Reduce) > 0 {
			return false
		}
		s := newSpace(p, k, mergePeriodic, partAll)
		return len(s.periodic) > 0 && s.nout < len(k.Shape)
	})
}

// buildCase is a graph built for a test of the executors.
type buildCase struct {
	name  string
	build func(g *tile.Graph)
}

// someKernel builds and compiles each case and reports, with what, those
// in which no kernel satisfies has: the cases would not exercise the path
// their test is for.
func someKernel(t *testing.T, cases []buildCase, what string, has func(p *kir.Program, k *kir.Kernel) bool) {
	t.Helper()
	d := New()
	defer d.Close()
	for _, c := range cases {
		g := tile.NewGraph(c.name)
		c.build(g)
		p := compileFor(t, d, g)
		found := false
		for _, k := range p.Kernels {
			found = found || has(p, k)
		}
		if !found {
			t.Errorf("%s: %s", c.name, what)
		}
	}
}

// guardMergeCases are reductions whose guards (Where conditions, the
// bounds of loads that may leave their buffer) read an output loop but not
// the one after it, so that the loops merge with the guards rescaled
// (condForm): a pooling gradient cut into phases, and a window whose
// constraint on the difference of an output and a reduction variable has
// the output's coefficient +1 or -1.
var guardMergeCases = []buildCase{
	{"guardmerge_pool_16x18", func(g *tile.Graph) { poolGradient(g, tile.Shape{2, 16, 18, 8}) }},
	{"guardmerge_plus", func(g *tile.Graph) { guardedWindow(g, 1, 2) }},
	{"guardmerge_minus", func(g *tile.Graph) { guardedWindow(g, -1, 3) }},
}

// guardedWindow sums x (4, 9, 16) over a window of 4 along its middle axis,
// y[n, i, c] = Σ_k x[n, i+k-1, c] where 0 ≤ sign·i - sign·k + konst < 5:
// the load's bound and the constraint both guard the rows.
func guardedWindow(g *tile.Graph, sign, konst int) {
	x := g.Input("x", tile.Float32, tile.Shape{4, 9, 16})
	n, i, k, c := tile.Ix("n"), tile.Ix("i"), tile.Ix("k"), tile.Ix("c")
	g.SetOutput("y", g.Contract(tile.Sum, tile.CombNone, tile.Shape{4, 9, 16}, []tile.Affine{n, i, c},
		[]tile.Operand{{Tensor: x, Index: []tile.Affine{n, i.Plus(k).AddConst(-1), c}}},
		tile.Constraint{Expr: k, Bound: 4},
		tile.Constraint{Expr: i.Times(sign).Plus(k.Times(-sign)).AddConst(konst), Bound: 5}))
}

// TestGuardsRescaledMerge checks that some reduction kernel of each of
// guardMergeCases merges its loops through rescaled guards, so that
// TestCompiledGraphsMatchInterpreter exercises them.
func TestGuardsRescaledMerge(t *testing.T) {
	someKernel(t, guardMergeCases, "no reduction merges its loops through a rescaled guard", func(p *kir.Program, k *kir.Kernel) bool {
		if len(k.Reduce) == 0 || k.Schedule.Strategy == "gemm" {
			return false
		}
		s := newSpace(p, rewriteKernel(p, k), mergeAffine, partAll)
		for _, cf := range s.condOf {
			if cf.scaled {
				return true
			}
		}
		return false
	})
}

// rowClipCases are channels-first windows whose clipped reduction ranges
// vary between output rows through bounds that read no reduction loop
// (loopsKernel.rowClips): a padded 3×3 stride-2 max-pool, whose inner rows
// reduce together while the first differs, and a window offset so far
// that the first rows' ranges are empty.
var rowClipCases = []buildCase{
	{"rowclip_pool_nchw", func(g *tile.Graph) {
		x := g.Input("x", tile.Float32, tile.Shape{2, 3, 13, 13})
		g.SetOutput("y", tile.ParseContraction(g, "O[n, c, y, x : 2, 3, 7, 7] = >(I[n, c, 2*y + i - 1, 2*x + j - 1]), i < 3, j < 3, 2*y + i - 1 < 13, 2*x + j - 1 < 13",
			map[string]*tile.Tensor{"I": x}, nil))
	}},
	{"rowclip_empty_rows", func(g *tile.Graph) {
		x := g.Input("x", tile.Float32, tile.Shape{2, 3, 5, 13})
		g.SetOutput("y", tile.ParseContraction(g, "O[n, c, y, x : 2, 3, 9, 7] = +(I[n, c, y + i - 3, 2*x + j - 1]), i < 3, j < 3, y + i - 3 < 5, 2*x + j - 1 < 13",
			map[string]*tile.Tensor{"I": x}, nil))
	}},
}

// TestRowClipsGroupRows checks that rowClipCases take the path they are
// meant to exercise: some kernel reduces rows together by their clipped
// ranges.
func TestRowClipsGroupRows(t *testing.T) {
	someKernel(t, rowClipCases, "no kernel groups its rows by clipped ranges", func(p *kir.Program, k *kir.Kernel) bool {
		if len(k.Reduce) == 0 || k.Schedule.Strategy != "loops" {
			return false
		}
		var r regs
		lk := newLoopsKernel(p, rewriteKernel(p, k), &r)
		return len(lk.rowClips) > 0 && lk.rowsPer > 1
	})
}

// rowSelectCases are gradients of stride-2 windows, whose phases a
// consumer interleaves by selects on x mod 2 of the loops outside the
// channels (row-uniform selects, rowselect.go): rows of 4 channels, many
// per chunk, and rows of 1100, one per chunk.
var rowSelectCases = []buildCase{
	{"rowselect_pool_c4", func(g *tile.Graph) { poolGradient(g, tile.Shape{2, 8, 8, 4}) }},
	{"rowselect_pool_c1100", func(g *tile.Graph) { poolGradient(g, tile.Shape{1, 8, 8, 1100}) }},
	{"rowselect_conv_c3", func(g *tile.Graph) {
		x := g.Input("x", tile.Float32, tile.Shape{2, 8, 8, 3})
		w := g.Input("w", tile.Float32, tile.Shape{3, 3, 3, 5})
		y := op.Conv2D(g, x, w, op.ConvOptions{Strides: []int{2, 2}, Padding: op.Same})
		r := g.Input("r", tile.Float32, y.Shape())
		grads, err := grad.Grad(g, op.Sum(g, g.Mul(op.ReLU(g, y), r), nil, false), x)
		if err != nil {
			g.Errorf("test", "%v", err)
			return
		}
		g.SetOutput("dx", op.ReLU(g, grads[0]))
	}},
	// A downsampling residual block's input gradient: the strided 1×1
	// shortcut's product takes the 3×3 gradient's phases in its epilogue.
	{"rowselect_shortcut", func(g *tile.Graph) {
		x := g.Input("x", tile.Float32, tile.Shape{2, 8, 8, 16})
		w := g.Input("w", tile.Float32, tile.Shape{3, 3, 16, 32})
		v := g.Input("v", tile.Float32, tile.Shape{1, 1, 16, 32})
		s2 := op.ConvOptions{Strides: []int{2, 2}, Padding: op.Same}
		y := g.Add(op.Conv2D(g, x, w, s2), op.Conv2D(g, x, v, s2))
		r := g.Input("r", tile.Float32, y.Shape())
		grads, err := grad.Grad(g, op.Sum(g, g.Mul(y, r), nil, false), x)
		if err != nil {
			g.Errorf("test", "%v", err)
			return
		}
		g.SetOutput("dx", op.ReLU(g, grads[0]))
	}},
}

// poolGradient outputs the gradient of a ReLU and a 3×3 stride-2 max pool
// of x, as the benchmark suite's stem has.
func poolGradient(g *tile.Graph, shape tile.Shape) {
	x := g.Input("x", tile.Float32, shape)
	y := op.MaxPool2D(g, op.ReLU(g, x), op.PoolOptions{Size: []int{3, 3}, Strides: []int{2, 2}, Padding: op.Same})
	r := g.Input("r", tile.Float32, y.Shape())
	grads, err := grad.Grad(g, op.Sum(g, g.Mul(y, r), nil, false), x)
	if err != nil {
		g.Errorf("test", "%v", err)
		return
	}
	g.SetOutput("dx", grads[0])
}

// TestRowSelectsBothWays runs rowSelectCases with row-uniform selects and
// lane by lane, each against the interpreter, and checks that some kernel
// compiles one.
func TestRowSelectsBothWays(t *testing.T) {
	d := New()
	defer d.Close()
	for _, c := range rowSelectCases {
		g := tile.NewGraph(c.name)
		c.build(g)
		p := compileFor(t, d, g)
		found := false
		for _, k := range p.Kernels {
			k = rewriteKernel(p, k)
			switch {
			case len(k.Reduce) == 0:
				s := newSpace(p, k, mergePeriodic, partAll)
				found = found || newBuilder(s, s.nout-1, progBody, &regs{}).value(k.Body).rowSelects > 0
			case k.Schedule.Strategy == "gemm" && k.Epilogue != nil:
				found = found || newEpilogueRunner(p, k, &regs{}).prog.rowSelects > 0
			}
		}
		if !found {
			t.Errorf("%s: no kernel has a row-uniform select", c.name)
		}
		for _, off := range []bool{false, true} {
			disableRowSelect = off
			checkProgram(t, d, p, 1, 5)
		}
		disableRowSelect = false
	}
}
