package opencl

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/tartanml/tartan/backend"
	"github.com/tartanml/tartan/backend/reference"
	"github.com/tartanml/tartan/compile"
	"github.com/tartanml/tartan/grad"
	"github.com/tartanml/tartan/op"
	"github.com/tartanml/tartan/tile"
)

// A graph case adds a small computation to a shared graph: its inputs (with
// how to fill them), outputs and variables, all named with the case's
// prefix. Many cases share one graph so that each device configuration
// builds one OpenCL program.
type graphCase struct {
	name string
	// gemm marks cases with matrix products, also run under the gemm
	// tiling and tensor-core configurations.
	gemm  bool
	build func(c *caseBuilder)
}

type caseBuilder struct {
	g      *tile.Graph
	prefix string
	feeds  map[string]gen
	vars   map[string]gen
	// tol maps an output name to a relative tolerance other than the
	// default.
	tol map[string]float64
}

func (c *caseBuilder) in(name string, dt tile.DType, shape tile.Shape, v gen) *tile.Tensor {
	n := c.prefix + name
	c.feeds[n] = v
	return c.g.Input(n, dt, shape)
}

func (c *caseBuilder) variable(name string, dt tile.DType, shape tile.Shape, v gen) *tile.Tensor {
	n := c.prefix + name
	c.vars[n] = v
	return c.g.Variable(n, dt, shape)
}

func (c *caseBuilder) out(name string, t *tile.Tensor) { c.g.SetOutput(c.prefix+name, t) }

// grads outputs the gradients of the sum of squares of y with respect to
// each x, named d<name>.
func (c *caseBuilder) grads(y *tile.Tensor, xs map[string]*tile.Tensor) {
	g := c.g
	loss := op.Sum(g, g.Mul(y, y), nil, false)
	c.out("loss", loss)
	var names []string
	for n := range xs {
		names = append(names, n)
	}
	slices.Sort(names)
	var ts []*tile.Tensor
	for _, n := range names {
		ts = append(ts, xs[n])
	}
	ds, err := grad.Grad(g, loss, ts...)
	if err != nil {
		g.Errorf("test", "grad: %v", err)
		return
	}
	for i, n := range names {
		c.out("d"+n, ds[i])
	}
}

var f32 = tile.Float32

var graphCases = []graphCase{
	{name: "matmul", gemm: true, build: func(c *caseBuilder) {
		a := c.in("a", f32, tile.Shape{37, 53}, normal())
		b := c.in("b", f32, tile.Shape{53, 29}, normal())
		c.out("y", op.MatMul(c.g, a, b))
	}},
	{name: "matmul_big", gemm: true, build: func(c *caseBuilder) {
		a := c.in("a", f32, tile.Shape{130, 40}, normal())
		b := c.in("b", f32, tile.Shape{40, 150}, normal())
		c.out("y", op.MatMul(c.g, a, b))
	}},
	{name: "matmul_transposed", gemm: true, build: func(c *caseBuilder) {
		a := c.in("a", f32, tile.Shape{45, 33}, normal())
		b := c.in("b", f32, tile.Shape{19, 45}, normal())
		c.out("y", op.MatMul(c.g, c.g.Transpose(a, []int{1, 0}), c.g.Transpose(b, []int{1, 0})))
	}},
	{name: "bmm", gemm: true, build: func(c *caseBuilder) {
		a := c.in("a", f32, tile.Shape{3, 17, 9}, normal())
		b := c.in("b", f32, tile.Shape{3, 9, 11}, normal())
		c.out("y", op.MatMul(c.g, a, b))
	}},
	{name: "dense", gemm: true, build: func(c *caseBuilder) {
		x := c.in("x", f32, tile.Shape{13, 70}, normal())
		w := c.in("w", f32, tile.Shape{70, 21}, normal())
		b := c.in("b", f32, tile.Shape{21}, normal())
		y := op.ReLU(c.g, op.Dense(c.g, x, w, b))
		c.out("y", y)
		c.grads(y, map[string]*tile.Tensor{"x": x, "w": w, "b": b})
	}},
	{name: "conv_same", gemm: true, build: func(c *caseBuilder) {
		x := c.in("x", f32, tile.Shape{2, 7, 6, 3}, normal())
		k := c.in("k", f32, tile.Shape{2, 2, 3, 4}, normal())
		y := op.Conv2D(c.g, x, k, op.ConvOptions{Padding: op.Same})
		c.out("y", y)
		c.grads(y, map[string]*tile.Tensor{"x": x, "k": k})
	}},
	{name: "conv_stride", gemm: true, build: func(c *caseBuilder) {
		x := c.in("x", f32, tile.Shape{2, 9, 8, 2}, normal())
		k := c.in("k", f32, tile.Shape{3, 3, 2, 5}, normal())
		y := op.Conv2D(c.g, x, k, op.ConvOptions{Strides: []int{2}, Dilation: []int{1}})
		c.out("y", y)
		c.grads(y, map[string]*tile.Tensor{"x": x, "k": k})
	}},
	{name: "conv_wide", gemm: true, build: func(c *caseBuilder) {
		// Large enough in every direction for the forward pass and both
		// gradients (which have padding conditions) to be rendered as
		// matrix products on GPUs.
		x := c.in("x", f32, tile.Shape{2, 9, 9, 20}, normal())
		k := c.in("k", f32, tile.Shape{2, 2, 20, 24}, normal())
		y := op.Conv2D(c.g, x, k, op.ConvOptions{Padding: op.Same})
		c.out("y", y)
		c.grads(y, map[string]*tile.Tensor{"x": x, "k": k})
	}},
	{name: "conv_1x1", gemm: true, build: func(c *caseBuilder) {
		x := c.in("x", f32, tile.Shape{2, 5, 5, 6}, normal())
		k := c.in("k", f32, tile.Shape{1, 1, 6, 7}, normal())
		c.out("y", op.Conv2D(c.g, x, k, op.ConvOptions{}))
	}},
	{name: "pool", build: func(c *caseBuilder) {
		x := c.in("x", f32, tile.Shape{2, 7, 7, 3}, normal())
		mp := op.MaxPool2D(c.g, x, op.PoolOptions{})
		ap := op.AvgPool2D(c.g, x, op.PoolOptions{Size: []int{3}, Strides: []int{2}, Padding: op.Same})
		c.out("max", mp)
		c.out("avg", ap)
		y := c.g.Add(op.Sum(c.g, mp, nil, false), op.Sum(c.g, c.g.Mul(ap, ap), nil, false))
		c.grads(y, map[string]*tile.Tensor{"x": x})
	}},
	{name: "softmax_ce", gemm: true, build: func(c *caseBuilder) {
		x := c.in("x", f32, tile.Shape{9, 16}, normal())
		w := c.in("w", f32, tile.Shape{16, 10}, normal())
		labels := c.in("labels", tile.Int32, tile.Shape{9}, ints(0, 10))
		logits := op.MatMul(c.g, x, w)
		c.out("softmax", op.Softmax(c.g, logits, -1))
		loss := op.SparseCategoricalCrossentropy(c.g, labels, logits, true)
		c.out("loss", loss)
		ds, err := grad.Grad(c.g, loss, w, x)
		if err != nil {
			c.g.Errorf("test", "%v", err)
			return
		}
		c.out("dw", ds[0])
		c.out("dx", ds[1])
	}},
	{name: "unary", build: func(c *caseBuilder) {
		x := c.in("x", f32, tile.Shape{5, 7}, withSpecials(normal()))
		p := c.in("p", f32, tile.Shape{5, 7}, positive())
		for _, f := range []tile.Fn{tile.Neg, tile.Abs, tile.Sign, tile.Exp, tile.Tanh, tile.Sigmoid, tile.Erf, tile.Floor, tile.Ceil} {
			c.out(f.String(), c.g.Elementwise(f, x))
		}
		for _, f := range []tile.Fn{tile.Log, tile.Log1p, tile.Sqrt, tile.Rsqrt, tile.Recip} {
			c.out(f.String(), c.g.Elementwise(f, p))
		}
	}},
	{name: "binary", build: func(c *caseBuilder) {
		a := c.in("a", f32, tile.Shape{4, 6}, withSpecials(normal()))
		b := c.in("b", f32, tile.Shape{6}, normal())
		p := c.in("p", f32, tile.Shape{4, 6}, positive())
		for _, f := range []tile.Fn{tile.Add, tile.Sub, tile.Mul, tile.Div, tile.Maximum, tile.Minimum,
			tile.Eq, tile.Ne, tile.Lt, tile.Le, tile.Gt, tile.Ge} {
			c.out(f.String(), c.g.Elementwise(f, a, b))
		}
		c.out("pow", c.g.Elementwise(tile.Pow, p, b))
		c.out("select", c.g.Select(c.g.Elementwise(tile.Gt, a, b), a, c.g.Neg(b)))
	}},
	{name: "ints", build: func(c *caseBuilder) {
		a := c.in("a", tile.Int32, tile.Shape{5, 8}, ints(-20, 20))
		b := c.in("b", tile.Int32, tile.Shape{5, 8}, ints(-3, 4))
		l := c.in("l", tile.Int64, tile.Shape{5, 8}, ints(-1000, 1000))
		for _, f := range []tile.Fn{tile.Add, tile.Sub, tile.Mul, tile.Div, tile.Maximum, tile.Minimum, tile.Lt, tile.Eq} {
			c.out(f.String(), c.g.Elementwise(f, a, b))
		}
		c.out("abs", c.g.Elementwise(tile.Abs, a))
		c.out("sign", c.g.Elementwise(tile.Sign, a))
		c.out("neg64", c.g.Neg(l))
		c.out("div64", c.g.Div(l, c.g.Cast(b, tile.Int64)))
		c.out("rowsum", op.Sum(c.g, a, []int{1}, false))
		c.out("prod", op.Sum(c.g, c.g.Mul(a, b), []int{0}, false))
		c.out("rowmax64", op.Max(c.g, l, []int{1}, false))
	}},
	{name: "bools", build: func(c *caseBuilder) {
		p := c.in("p", tile.Bool, tile.Shape{3, 5}, bools())
		q := c.in("q", tile.Bool, tile.Shape{3, 5}, bools())
		c.out("and", c.g.Elementwise(tile.And, p, q))
		c.out("or", c.g.Elementwise(tile.Or, p, q))
		c.out("not", c.g.Elementwise(tile.Not, p))
		c.out("eq", c.g.Elementwise(tile.Eq, p, q))
		c.out("tof", c.g.Cast(p, f32))
	}},
	{name: "casts", build: func(c *caseBuilder) {
		// Infinities are left out: converting them to integers is
		// platform-dependent in Go, which the reference uses.
		x := c.in("x", f32, tile.Shape{3, 7}, gen{kind: "normal", scale: 100, huge: true})
		c.out("i32", c.g.Cast(x, tile.Int32))
		c.out("i64", c.g.Cast(x, tile.Int64))
		c.out("bool", c.g.Cast(x, tile.Bool))
		c.out("f64", c.g.Cast(x, tile.Float64))
		i := c.in("i", tile.Int64, tile.Shape{4}, ints(-5, 5))
		c.out("i2f", c.g.Cast(i, f32))
		c.out("i2i", c.g.Cast(i, tile.Int32))
	}},
	{name: "shapes", build: func(c *caseBuilder) {
		g := c.g
		x := c.in("x", f32, tile.Shape{4, 5, 6}, normal())
		y := c.in("y", f32, tile.Shape{4, 2, 6}, normal())
		c.out("transpose", g.Transpose(x, []int{2, 0, 1}))
		c.out("reshape", g.Reshape(g.Transpose(x, []int{1, 0, 2}), tile.Shape{10, 12}))
		c.out("slice", g.Slice(x, []int{1, 0, 1}, []int{4, 5, 6}, []int{2, 2, 3}))
		c.out("concat", g.Concat(1, x, y))
		c.out("pad", g.Pad(x, []int{1, 0, 2}, []int{0, 2, 1}, -3.5))
		c.out("broadcast", g.BroadcastTo(g.Reshape(y, tile.Shape{4, 2, 1, 6}), tile.Shape{4, 2, 3, 6}))
		idx := c.in("idx", tile.Int32, tile.Shape{7}, ints(-1, 6))
		c.out("gather", g.Gather(x, idx, 1))
		upd := c.in("upd", f32, tile.Shape{4, 7, 6}, normal())
		c.out("scatter", g.ScatterAdd(upd, idx, 1, tile.Shape{4, 5, 6}))
		c.out("iota", g.Iota(tile.Int32, tile.Shape{3, 4}, 1))
		c.out("onehot", g.OneHot(idx, 5, f32))
	}},
	{name: "random", build: func(c *caseBuilder) {
		seed := c.in("seed", tile.Int64, tile.Shape{}, ints(0, 1<<30))
		c.out("u", c.g.Random(seed, f32, tile.Shape{5, 9}, 7))
		x := c.in("x", f32, tile.Shape{6, 11}, normal())
		c.out("drop", op.Dropout(c.g, x, 0.3, seed, 2))
	}},
	{name: "reductions", build: func(c *caseBuilder) {
		g := c.g
		x := c.in("x", f32, tile.Shape{3, 6000}, normal())
		c.out("sum", op.Sum(g, x, []int{1}, false))
		c.out("max", op.Max(g, x, []int{1}, false))
		c.out("min", op.Min(g, x, []int{1}, true))
		c.out("mean0", op.Mean(g, x, []int{0}, false))
		c.out("all", op.Sum(g, x, nil, false))
		y := c.in("y", f32, tile.Shape{4, 3, 5}, withSpecials(normal()))
		c.out("nanmax", op.Max(g, y, []int{2}, false))
		c.out("argmax", op.ArgMax(g, x, 1))
		bias := c.in("bias", f32, tile.Shape{64, 7, 7, 10}, normal())
		c.out("biasgrad", op.Sum(g, bias, []int{0, 1, 2}, false))
	}},
	{name: "f64", gemm: true, build: func(c *caseBuilder) {
		a := c.in("a", tile.Float64, tile.Shape{7, 9}, normal())
		b := c.in("b", tile.Float64, tile.Shape{9, 5}, normal())
		y := op.MatMul(c.g, a, b)
		c.out("y", c.g.Tanh(y))
		c.out("s", op.Sum(c.g, c.g.Exp(a), []int{0}, false))
	}},
	{name: "half", build: func(c *caseBuilder) {
		for _, dt := range []tile.DType{tile.Float16, tile.BFloat16} {
			x := c.in("x"+dt.String(), dt, tile.Shape{3, 8}, normal())
			y := c.in("y"+dt.String(), dt, tile.Shape{3, 8}, normal())
			c.out("sum"+dt.String(), c.g.Add(c.g.Mul(x, y), x))
			c.out("cast"+dt.String(), c.g.Cast(x, f32))
		}
	}},
	{name: "sgd", gemm: true, build: func(c *caseBuilder) {
		g := c.g
		x := c.in("x", f32, tile.Shape{8, 12}, normal())
		w := c.variable("w", f32, tile.Shape{12, 3}, normal())
		b := c.variable("b", f32, tile.Shape{3}, normal())
		y := op.Dense(g, x, w, b)
		loss := op.Mean(g, g.Mul(y, y), nil, false)
		c.out("loss", loss)
		ds, err := grad.Grad(g, loss, w, b)
		if err != nil {
			g.Errorf("test", "%v", err)
			return
		}
		lr := g.Scalar(0.1, f32)
		g.Update(w, g.Sub(w, g.Mul(lr, ds[0])))
		g.Update(b, g.Sub(b, g.Mul(lr, ds[1])))
	}},
}

// buildSuite builds one graph from the cases selected by keep.
func buildSuite(t *testing.T, name string, keep func(graphCase) bool) (*tile.Graph, *caseBuilder) {
	t.Helper()
	g := tile.NewGraph(name)
	cb := &caseBuilder{g: g, feeds: map[string]gen{}, vars: map[string]gen{}, tol: map[string]float64{}}
	for _, gc := range graphCases {
		if keep != nil && !keep(gc) {
			continue
		}
		cb.prefix = gc.name + "."
		gc.build(cb)
		if err := g.Err(); err != nil {
			t.Fatalf("building case %s: %v", gc.name, err)
		}
	}
	return g, cb
}

// compareRuns runs the graph twice on dev and on the reference device (so
// that variable updates are checked across runs) with the same inputs and
// compares every output and variable with relative tolerance rtol.
func compareRuns(t *testing.T, dev backend.Device, g *tile.Graph, cb *caseBuilder, rtol float64) {
	t.Helper()
	got, err := dev.Compile(g)
	if err != nil {
		t.Fatalf("%s: compile: %v", dev.Info().ID, err)
	}
	defer got.Close()
	want, err := reference.New().Compile(g)
	if err != nil {
		t.Fatalf("reference compile: %v", err)
	}
	r := rand.New(rand.NewPCG(1, 2))
	setAll := func(names map[string]gen, set func(e backend.Executable, n string, v any) error) {
		var ns []string
		for n := range names {
			ns = append(ns, n)
		}
		slices.Sort(ns)
		for _, n := range ns {
			leaf := g.Leaf(n)
			v := names[n].make(r, leaf.DType(), leaf.Size())
			if err := set(got, n, v); err != nil {
				t.Fatalf("%s: %v", n, err)
			}
			if err := set(want, n, v); err != nil {
				t.Fatalf("reference %s: %v", n, err)
			}
		}
	}
	setAll(cb.vars, backend.Executable.WriteVariable)
	for run := range 2 {
		setAll(cb.feeds, backend.Executable.SetInput)
		if err := got.Run(); err != nil {
			t.Fatalf("run %d: %v", run, err)
		}
		if err := want.Run(); err != nil {
			t.Fatalf("reference run %d: %v", run, err)
		}
		check := func(kind, name string, dt tile.DType, n int, read func(e backend.Executable, name string, dst any) error) {
			a, b := hostData(dt, n), hostData(dt, n)
			if err := read(got, name, a); err != nil {
				t.Errorf("%s %s: %v", kind, name, err)
				return
			}
			if err := read(want, name, b); err != nil {
				t.Errorf("reference %s %s: %v", kind, name, err)
				return
			}
			tol := rtol
			if v, ok := cb.tol[name]; ok {
				tol = max(tol, v)
			}
			if err := closeTo(backend.ToFloat64(a), backend.ToFloat64(b), dt, tol, tol/10); err != nil {
				t.Errorf("run %d, %s %s %v%v: %v", run, kind, name, dt, g.Leaf(name), err)
			}
		}
		for _, o := range g.Outputs() {
			check("output", o.Name, o.Tensor.DType(), o.Tensor.Size(), backend.Executable.ReadOutput)
		}
		for _, v := range g.Variables() {
			name := leafName(v)
			check("variable", name, v.DType(), v.Size(), backend.Executable.ReadVariable)
		}
	}
}

func leafName(t *tile.Tensor) string {
	switch o := t.Op().(type) {
	case *tile.VariableOp:
		return o.Name
	case *tile.InputOp:
		return o.Name
	}
	return fmt.Sprint(t)
}

// TestGraphsAgainstReference runs every case on every OpenCL device under
// the default schedule and compares with the reference executor.
func TestGraphsAgainstReference(t *testing.T) {
	g, cb := buildSuite(t, "suite", nil)
	for _, d := range openAll(t) {
		t.Run(d.Info().ID, func(t *testing.T) { compareRuns(t, d, g, cb, 1e-4) })
	}
}

// TestStrategies renders the same graphs with every template forced where it
// applies: loops everywhere, the parallel reduction split across groups,
// each gemm tiling with a split reduction, and the tensor-core template
// (emulated) in both precisions.
func TestStrategies(t *testing.T) {
	if testing.Short() {
		t.Skip("long: several program builds")
	}
	only := func(names ...string) func(graphCase) bool {
		return func(gc graphCase) bool { return slices.Contains(names, gc.name) }
	}
	configs := []struct {
		name string
		keep func(graphCase) bool
		opts []Option
		rtol float64
	}{
		{"loops", only("matmul", "conv_same", "bmm"), []Option{withTest(testHooks{force: "loops"})}, 1e-4},
		{"reduce-split", only("reductions", "pool"), []Option{withTest(testHooks{force: "reduce", split: 3})}, 1e-4},
		{"gemm64-split2", only("matmul_transposed", "bmm", "sgd", "conv_wide"), []Option{withTest(testHooks{gemmTile: 64, split: 2})}, 1e-4},
		{"gemm128", only("matmul_big", "conv_1x1", "f64"), []Option{withTest(testHooks{gemmTile: 128})}, 1e-4},
		{"gemm32", only("dense", "softmax_ce"), []Option{withTest(testHooks{gemmTile: 32})}, 1e-4},
		{"mma-3xtf32", only("matmul", "matmul_big", "bmm", "conv_wide"), []Option{withTest(testHooks{emulateMMA: Matmul3xTF32})}, 1e-4},
		{"mma-tf32-split3", only("matmul_transposed", "conv_1x1"), []Option{withTest(testHooks{emulateMMA: MatmulTF32, split: 3})}, 2e-2},
		// The device's own tensor cores where it has them (else fp32).
		{"native-tf32", only("matmul", "matmul_big", "dense"), []Option{WithMatmul(MatmulTF32)}, 2e-2},
		{"native-3xtf32-tile64", only("matmul_big", "bmm", "softmax_ce"), []Option{WithMatmul(Matmul3xTF32), WithGEMMTile(64)}, 1e-4},
	}
	for _, c := range configs {
		g, cb := buildSuite(t, c.name, c.keep)
		for _, d := range openAll(t, c.opts...) {
			t.Run(c.name+"/"+d.Info().ID, func(t *testing.T) { compareRuns(t, d, g, cb, c.rtol) })
		}
	}
}

// withTest sets test hooks.
func withTest(h testHooks) Option { return func(c *config) { c.test = h } }

// TestConvolutionsBecomeMatrixProducts checks the strategy choice on a GPU:
// a padded convolution and both its gradients, which the compiler
// schedules as matrix products with conditions and guarded operands, are
// rendered as matrix products; and the renderer takes only what the
// schedule says: with every kernel rescheduled as loops, none is.
func TestConvolutionsBecomeMatrixProducts(t *testing.T) {
	g, _ := buildSuite(t, "conv", func(gc graphCase) bool { return gc.name == "conv_wide" })
	p, err := compile.Compile(g, compile.Target{Backend: "opencl", ComputeUnits: 132, MaxWorkGroup: 1024, LocalMemBytes: 48 << 10})
	if err != nil {
		t.Fatal(err)
	}
	r, err := render(p, traits{Name: "gpu", GPU: true, ComputeUnits: 132, MaxWorkGroup: 1024, LocalMemBytes: 48 << 10})
	if err != nil {
		t.Fatal(err)
	}
	gemms := 0
	for _, l := range r.Launches {
		k := p.Kernels[l.Kernel]
		if len(k.Reduce) > 0 && k.Agg == tile.Sum && len(k.Where) > 0 {
			if !strings.HasPrefix(l.Strategy, "gemm") {
				t.Errorf("%s (%s) rendered as %s", l.Fn, k.Source, l.Strategy)
			}
			gemms++
		}
	}
	if gemms < 3 {
		t.Errorf("%d conditioned sums rendered, want the convolution and its two gradients", gemms)
	}
	for _, k := range p.Kernels {
		if k.Schedule.Strategy == "gemm" {
			k.Schedule.Strategy, k.Schedule.GEMM = "loops", nil
		}
	}
	if r, err = render(p, traits{Name: "gpu", GPU: true, ComputeUnits: 132, MaxWorkGroup: 1024, LocalMemBytes: 48 << 10}); err != nil {
		t.Fatal(err)
	}
	for _, l := range r.Launches {
		if strings.HasPrefix(l.Strategy, "gemm") {
			t.Errorf("%s, scheduled as loops, rendered as %s", l.Fn, l.Strategy)
		}
	}
}
