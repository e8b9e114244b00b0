package cpu

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/tartanml/tartan/backend"
	"github.com/tartanml/tartan/compile"
	"github.com/tartanml/tartan/grad"
	"github.com/tartanml/tartan/kir"
	"github.com/tartanml/tartan/op"
	"github.com/tartanml/tartan/tile"
)

// TestWindowKernels runs max-pooling forward and backward passes, whose
// kernels the window executor takes, on inputs full of ties (few distinct
// values, many of them negative so that a ReLU makes zeros, and NaN and
// +Inf in some cases, in the cotangent too), and compares every output bit
// for bit with kir.Interpret: the gradient must reach exactly the first
// maximum of each window (its first NaN, if it has one), and every window a
// NaN reaches, through the ReLU or not, must propagate it. It also checks that the window
// executor ran at least the expected number of kernels of each form.
// Padded and overlapping windows give the first-maximum kernel a guard on
// the window's index range and the routing kernel a sum over the windows
// that share a point, with floor divisions and modulos mixing an output and
// a reduction variable.
func TestWindowKernels(t *testing.T) {
	pool := func(o op.PoolOptions) func(g *tile.Graph, x *tile.Tensor) *tile.Tensor {
		return func(g *tile.Graph, x *tile.Tensor) *tile.Tensor { return op.MaxPool2D(g, x, o) }
	}
	sq := func(size, stride int, pad op.Padding) op.PoolOptions {
		return op.PoolOptions{Size: []int{size, size}, Strides: []int{stride, stride}, Padding: pad}
	}
	cases := []struct {
		name  string
		x     tile.Shape
		relu  bool
		nan   bool // NaN among the input values
		pool  func(g *tile.Graph, x *tile.Tensor) *tile.Tensor
		forms [4]int // at least this many windowReduce, windowFirst, windowRoute, windowRouteSum kernels
	}{
		{"relu_2x2_c16", tile.Shape{2, 6, 6, 16}, true, false, pool(op.PoolOptions{}), [4]int{1, 1, 1, 0}},
		{"relu_2x2_nan_c16", tile.Shape{2, 6, 6, 16}, true, true, pool(op.PoolOptions{}), [4]int{1, 1, 1, 0}},
		{"relu_2x2_nan_c13", tile.Shape{3, 4, 6, 13}, true, true, pool(op.PoolOptions{}), [4]int{1, 1, 1, 0}},
		{"plain_2x2_c13", tile.Shape{3, 4, 6, 13}, false, false, pool(op.PoolOptions{}), [4]int{1, 1, 1, 0}},
		{"plain_2x2_nan_c13", tile.Shape{3, 4, 6, 13}, false, true, pool(op.PoolOptions{}), [4]int{1, 1, 1, 0}},
		// Same padding on odd sizes: windows that hang over the edge, the
		// first-maximum kernel guarding its value with the index range.
		{"relu_2x2_same_odd_c9", tile.Shape{2, 7, 5, 9}, true, false, pool(sq(2, 2, op.Same)), [4]int{1, 1, 1, 0}},
		{"plain_2x2_same_odd_nan_c17", tile.Shape{2, 5, 7, 17}, false, true, pool(sq(2, 2, op.Same)), [4]int{1, 1, 1, 0}},
		// Overlapping windows: the routing kernel sums over windows.
		{"relu_3x3_s2_same_c9", tile.Shape{2, 7, 5, 9}, true, false, pool(sq(3, 2, op.Same)), [4]int{1, 1, 0, 1}},
		{"relu_3x3_s2_same_nan_c9", tile.Shape{2, 7, 5, 9}, true, true, pool(sq(3, 2, op.Same)), [4]int{1, 1, 0, 1}},
		{"plain_3x3_s2_same_nan_c13", tile.Shape{3, 9, 8, 13}, false, true, pool(sq(3, 2, op.Same)), [4]int{1, 1, 0, 1}},
		{"relu_3x3_s2_same_c33", tile.Shape{2, 8, 9, 33}, true, false, pool(sq(3, 2, op.Same)), [4]int{1, 1, 0, 1}},
		{"relu_3x3_s2_valid_c7", tile.Shape{2, 9, 7, 7}, true, false, pool(sq(3, 2, op.Valid)), [4]int{1, 1, 0, 1}},
		{"plain_3x3_s1_same_nan_c5", tile.Shape{2, 5, 6, 5}, false, true, pool(sq(3, 1, op.Same)), [4]int{1, 1, 0, 1}},
		{"relu_2x3_s1x2_c11", tile.Shape{2, 6, 7, 11}, true, false,
			pool(op.PoolOptions{Size: []int{2, 3}, Strides: []int{1, 2}}), [4]int{1, 1, 0, 1}},
		{"plain_1d_same_c24", tile.Shape{2, 9, 24}, false, false, func(g *tile.Graph, x *tile.Tensor) *tile.Tensor {
			return op.MaxPool1D(g, x, op.PoolOptions{Size: []int{3}, Padding: op.Same})
		}, [4]int{1, 1, 1, 0}},
		{"plain_1d_3_s2_same_nan_c24", tile.Shape{2, 10, 24}, false, true, func(g *tile.Graph, x *tile.Tensor) *tile.Tensor {
			return op.MaxPool1D(g, x, op.PoolOptions{Size: []int{3}, Strides: []int{2}, Padding: op.Same})
		}, [4]int{1, 1, 0, 1}},
		{"relu_1d_2_same_odd_c8", tile.Shape{3, 9, 8}, true, false, func(g *tile.Graph, x *tile.Tensor) *tile.Tensor {
			return op.MaxPool1D(g, x, op.PoolOptions{Size: []int{2}, Strides: []int{2}, Padding: op.Same})
		}, [4]int{1, 1, 1, 0}},
		{"global_c8", tile.Shape{2, 5, 6, 8}, true, false, func(g *tile.Graph, x *tile.Tensor) *tile.Tensor {
			return op.GlobalMaxPool2D(g, x)
		}, [4]int{1, 1, 0, 0}},
		// Dropout after the pooling, then a flattening: the routed value
		// is select(mask, dy, 0)·s, dy read as a row of a flat dimension.
		{"relu_2x2_dropout_flat_c16", tile.Shape{2, 6, 4, 16}, true, false, func(g *tile.Graph, x *tile.Tensor) *tile.Tensor {
			seed := g.Input("seed", tile.Int64, tile.Shape{})
			return op.Flatten(g, op.Dropout(g, op.MaxPool2D(g, x, op.PoolOptions{}), 0.3, seed, 1))
		}, [4]int{1, 1, 1, 0}},
		{"plain_2x2_dropout_c12", tile.Shape{3, 4, 4, 12}, false, false, func(g *tile.Graph, x *tile.Tensor) *tile.Tensor {
			seed := g.Input("seed", tile.Int64, tile.Shape{})
			return op.Dropout(g, op.MaxPool2D(g, x, op.PoolOptions{}), 0.5, seed, 2)
		}, [4]int{1, 1, 1, 0}},
		{"relu_3x3_s2_same_dropout_c16", tile.Shape{2, 7, 7, 16}, true, false, func(g *tile.Graph, x *tile.Tensor) *tile.Tensor {
			seed := g.Input("seed", tile.Int64, tile.Shape{})
			return op.Dropout(g, op.MaxPool2D(g, x, sq(3, 2, op.Same)), 0.3, seed, 3)
		}, [4]int{1, 1, 0, 1}},
		{"relu_2x2_dropout_nan_c16", tile.Shape{2, 6, 4, 16}, true, true, func(g *tile.Graph, x *tile.Tensor) *tile.Tensor {
			seed := g.Input("seed", tile.Int64, tile.Shape{})
			return op.Dropout(g, op.MaxPool2D(g, x, op.PoolOptions{}), 0.3, seed, 1)
		}, [4]int{1, 1, 1, 0}},
		{"relu_3x3_s2_same_dropout_nan_c16", tile.Shape{2, 7, 7, 16}, true, true, func(g *tile.Graph, x *tile.Tensor) *tile.Tensor {
			seed := g.Input("seed", tile.Int64, tile.Shape{})
			return op.Dropout(g, op.MaxPool2D(g, x, sq(3, 2, op.Same)), 0.3, seed, 3)
		}, [4]int{1, 1, 0, 1}},
	}
	d := New(Cache(false))
	defer d.Close()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			g := tile.NewGraph(c.name)
			x := g.Input("x", tile.Float32, c.x)
			h := x
			if c.relu {
				h = op.ReLU(g, h)
			}
			y := c.pool(g, h)
			dy := g.Input("dy", tile.Float32, y.Shape())
			gs, err := grad.VJP(g, []*tile.Tensor{y}, []*tile.Tensor{dy}, x)
			if err != nil {
				t.Fatal(err)
			}
			g.SetOutput("y", y)
			g.SetOutput("dx", gs[0])
			p := compileFor(t, d, g)
			ties := []float64{-1, -0.5, 0, 0.25, 0.25, 0.75, 2}
			if c.nan {
				ties = append(ties, math.NaN(), math.Inf(1))
			}
			forms := checkWindowProgram(t, d, p, func(name string, rng *rand.Rand) float64 {
				switch name {
				case "dy":
					if c.nan && rng.IntN(16) == 0 {
						return math.NaN()
					}
					return float64(rng.IntN(9)) - 4
				case "seed":
					return 7
				}
				return ties[rng.IntN(len(ties))]
			})
			for f := range forms {
				if forms[f] < c.forms[f] {
					t.Errorf("window kernels of each form: got %v, want at least %v\n%v", forms, c.forms, p)
				}
			}
		})
	}
}

// checkWindowProgram loads p, runs it on inputs drawn by value (called per
// element with the input's name) and with kir.Interpret on the same inputs,
// requires every output to match bit for bit (any NaN matching any NaN),
// and returns how many kernels of each form the window executor took.
func checkWindowProgram(t *testing.T, d *Device, p *kir.Program, value func(name string, rng *rand.Rand) float64) [4]int {
	t.Helper()
	ex, err := d.Load(p)
	if err != nil {
		t.Fatal(err)
	}
	defer ex.Close()
	var forms [4]int
	for _, k := range ex.kernels {
		if w, ok := k.(*windowKernel); ok {
			forms[w.form]++
		}
	}
	rng := rand.New(rand.NewPCG(3, 4))
	ref := make([][]float64, len(p.Buffers))
	for _, in := range p.Inputs {
		b := p.Buffers[in.Buffer]
		v := make([]float64, b.Size())
		for i := range v {
			v[i] = tile.RoundTo(b.DType, value(in.Name, rng))
		}
		ref[in.Buffer] = v
		if err := ex.SetInput(in.Name, backend.HostSlice(b.DType, v)); err != nil {
			t.Fatal(err)
		}
	}
	if err := kir.Interpret(p, ref); err != nil {
		t.Fatal(err)
	}
	if err := ex.Run(); err != nil {
		t.Fatal(err)
	}
	for _, o := range p.Outputs {
		got := make([]float32, p.Buffers[o.Buffer].Size())
		if err := ex.ReadOutput(o.Name, got); err != nil {
			t.Fatal(err)
		}
		for i, v := range got {
			w := float32(ref[o.Buffer][i])
			if math.Float32bits(v) != math.Float32bits(w) && !(v != v && w != w) {
				t.Fatalf("%s[%d] = %v, want %v", o.Name, i, v, w)
			}
		}
	}
	return forms
}

// TestWindowHandWritten runs kernels written by hand that the window
// executor must take, against kir.Interpret: a guard repeating the Where
// conditions in another form, and a floor division mixing an output and a
// reduction variable in a load and in a condition.
func TestWindowHandWritten(t *testing.T) {
	f32, i64 := tile.Float32, tile.Int64
	ixv := func(x *kir.Ix) *kir.Expr { return &kir.Expr{Op: kir.IndexValue, DType: i64, Index: []*kir.Ix{x}} }
	b := newProg("window_hand")
	x := b.buf(kir.Input, "x", f32, tile.Shape{4, 7})
	o := b.buf(kir.Output, "o", f32, tile.Shape{3, 7})
	// o[y, c] = max over r in [-1, 1] with 0 ≤ 2y + r < 4 of
	// select(i64(2y + r) ≥ 0 && i64(2y + r) ≤ 3, x[2y + r, c], 0), the
	// guard in ≥ and ≤ where the condition has 0 ≤ · < 4.
	at := sum(times(v(0), 2), v(2))
	guard := apply(tile.And, tile.Bool,
		apply(tile.Ge, tile.Bool, ixv(at), konst(i64, 0)),
		apply(tile.Le, tile.Bool, ixv(at), konst(i64, 3)))
	b.kernel(&kir.Kernel{Out: o, Shape: tile.Shape{3, 7}, Agg: tile.Max, Reduce: []kir.Loop{loop("r", -1, 1)},
		Where: []kir.Cond{{X: at, Bound: 4}},
		Body:  apply(tile.Select, f32, guard, b.fill(x, 0, at, v(1)), konst(f32, 0))})
	// m[y, c] = max over r in [0, 3] of x[(2y + r) div 2, c], where
	// (2y + r) div 2 < 4, and s[y, c] = Σ over the same points of
	// select(p[r] == f[(2y + r) div 2, c], x[...], 0).
	dv := kir.IxFloorDivBy(sum(times(v(0), 2), v(2)), 2)
	m := b.buf(kir.Output, "m", f32, tile.Shape{3, 7})
	b.kernel(&kir.Kernel{Out: m, Shape: tile.Shape{3, 7}, Agg: tile.Max, Reduce: []kir.Loop{loop("r", 0, 3)},
		Where: []kir.Cond{{X: dv, Bound: 4}}, Body: b.load(x, dv, v(1))})
	pb := b.buf(kir.Input, "p", f32, tile.Shape{4})
	f := b.buf(kir.Input, "f", f32, tile.Shape{4, 7})
	s := b.buf(kir.Output, "s", f32, tile.Shape{3, 7})
	b.kernel(&kir.Kernel{Out: s, Shape: tile.Shape{3, 7}, Agg: tile.Sum, Reduce: []kir.Loop{loop("r", 0, 3)},
		Where: []kir.Cond{{X: dv, Bound: 4}},
		Body: apply(tile.Select, f32, apply(tile.Eq, tile.Bool, b.load(pb, v(2)), b.load(f, dv, v(1))),
			b.load(x, dv, v(1)), konst(f32, 0))})
	d := New(Cache(false))
	defer d.Close()
	forms := checkWindowProgram(t, d, b.p, func(name string, rng *rand.Rand) float64 {
		if name == "x" {
			return []float64{-1, 0, 0.5, 3, math.NaN(), math.Inf(1)}[rng.IntN(6)]
		}
		return float64(rng.IntN(4))
	})
	if want := [4]int{2, 0, 0, 1}; forms != want {
		t.Errorf("window kernels of each form: got %v, want %v\n%v", forms, want, b.p)
	}
}

// TestWindowRejects checks that kernels close to the window forms but
// outside them are left to the generic executor.
func TestWindowRejects(t *testing.T) {
	f32, i64 := tile.Float32, tile.Int64
	ixv := func(x *kir.Ix) *kir.Expr { return &kir.Expr{Op: kir.IndexValue, DType: i64, Index: []*kir.Ix{x}} }
	b := newProg("rejects")
	x := b.buf(kir.Input, "x", f32, tile.Shape{4, 8})
	xi := b.buf(kir.Input, "xi", tile.Int32, tile.Shape{4, 8})
	pb := b.buf(kir.Input, "p", f32, tile.Shape{4})
	o := b.buf(kir.Output, "o", f32, tile.Shape{2, 8})
	o4 := b.buf(kir.Output, "o4", f32, tile.Shape{2, 4})
	at := sum(times(v(0), 2), v(2))
	dv := kir.IxFloorDivBy(sum(times(v(0), 2), v(2)), 2)
	route := apply(tile.Select, f32, apply(tile.Eq, tile.Bool, b.load(pb, v(2)), b.load(x, dv, v(1))),
		b.load(x, dv, v(1)), konst(f32, 0))
	cases := []struct {
		name string
		k    *kir.Kernel
	}{
		// The channel is not the innermost index of the load.
		{"transposed", &kir.Kernel{Out: o, Shape: tile.Shape{2, 8}, Agg: tile.Max,
			Reduce: []kir.Loop{loop("r", 0, 1)},
			Body:   b.load(x, sum(times(v(0), 2), v(2)), c(0))}},
		// The channel steps by two along the row.
		{"strided_channel", &kir.Kernel{Out: o4, Shape: tile.Shape{2, 4}, Agg: tile.Max,
			Reduce: []kir.Loop{loop("r", 0, 1)},
			Body:   b.load(x, sum(times(v(0), 2), v(2)), times(v(1), 2))}},
		// A row that starts inside the dimension but runs past its end.
		{"row_overflow", &kir.Kernel{Out: o, Shape: tile.Shape{2, 8}, Agg: tile.Max,
			Reduce: []kir.Loop{loop("r", 0, 1)},
			Body:   b.load(x, sum(times(v(0), 2), v(2)), sum(v(1), times(v(0), 4)))}},
		// A sum is not a window form.
		{"sum", &kir.Kernel{Out: o, Shape: tile.Shape{2, 8}, Agg: tile.Sum,
			Reduce: []kir.Loop{loop("r", 0, 1)},
			Body:   b.load(x, sum(times(v(0), 2), v(2)), v(1))}},
		// An integer source.
		{"int", &kir.Kernel{Out: o, Shape: tile.Shape{2, 8}, Agg: tile.Max,
			Reduce: []kir.Loop{loop("r", 0, 1)},
			Body:   &kir.Expr{Op: kir.Cast, DType: tile.Float32, Args: []*kir.Expr{b.load(xi, sum(times(v(0), 2), v(2)), v(1))}}}},
		// A floor division that mixes three variables.
		{"mixed_div3", &kir.Kernel{Out: o, Shape: tile.Shape{2, 8}, Agg: tile.Max,
			Reduce: []kir.Loop{loop("r", 0, 1), loop("s", 0, 1)},
			Body:   b.load(x, kir.IxFloorDivBy(sum(times(v(0), 4), v(2), v(3)), 2), v(1))}},
		// A guard stricter than the Where condition (2y + r < 3, not 4).
		{"guard_not_implied", &kir.Kernel{Out: o, Shape: tile.Shape{2, 8}, Agg: tile.Max,
			Reduce: []kir.Loop{loop("r", 0, 1)}, Where: []kir.Cond{{X: at, Bound: 4}},
			Body: apply(tile.Select, f32, apply(tile.Lt, tile.Bool, ixv(at), konst(i64, 3)),
				b.fill(x, 0, at, v(1)), konst(f32, 0))}},
		// An implied guard whose other branch has a Skip load, which can
		// skip the point.
		{"guard_skip_else", &kir.Kernel{Out: o, Shape: tile.Shape{2, 8}, Agg: tile.Max,
			Reduce: []kir.Loop{loop("r", 0, 1)}, Where: []kir.Cond{{X: at, Bound: 4}},
			Body: apply(tile.Select, f32, apply(tile.Lt, tile.Bool, ixv(at), konst(i64, 4)),
				b.fill(x, 0, at, v(1)), b.load(x, sum(at, c(1)), v(1)))}},
		// A guard on a loaded value.
		{"guard_loaded", &kir.Kernel{Out: o, Shape: tile.Shape{2, 8}, Agg: tile.Max,
			Reduce: []kir.Loop{loop("r", 0, 1)}, Where: []kir.Cond{{X: at, Bound: 4}},
			Body: apply(tile.Select, f32, apply(tile.Lt, tile.Bool, b.load(pb, v(2)), konst(f32, 4)),
				b.fill(x, 0, at, v(1)), konst(f32, 0))}},
		// A routed sum whose epilogue is not select(A > 0, acc, 0).
		{"route_sum_epilogue", &kir.Kernel{Out: o, Shape: tile.Shape{2, 8}, Agg: tile.Sum,
			Reduce: []kir.Loop{loop("r", 0, 3)}, Where: []kir.Cond{{X: dv, Bound: 4}}, Body: route,
			Epilogue: apply(tile.Mul, f32, acc(f32), konst(f32, 2))}},
		// A routed sum whose epilogue keeps the lanes where A ≥ 0, not
		// A > 0.
		{"route_sum_epilogue_ge", &kir.Kernel{Out: o, Shape: tile.Shape{2, 8}, Agg: tile.Sum,
			Reduce: []kir.Loop{loop("r", 0, 3)}, Where: []kir.Cond{{X: dv, Bound: 4}}, Body: route,
			Epilogue: apply(tile.Select, f32, apply(tile.Ge, tile.Bool, b.load(x, v(0), v(1)), konst(f32, 0)),
				acc(f32), konst(f32, 0))}},
		// A routed maximum is not a window form.
		{"route_max", &kir.Kernel{Out: o, Shape: tile.Shape{2, 8}, Agg: tile.Max,
			Reduce: []kir.Loop{loop("r", 0, 3)}, Where: []kir.Cond{{X: dv, Bound: 4}}, Body: route}},
		// select(x > 0, x, 0) maps NaN to 0, which the window ReLU (NaN
		// passes) does not.
		{"relu_nan_to_zero", &kir.Kernel{Out: o, Shape: tile.Shape{2, 8}, Agg: tile.Max,
			Reduce: []kir.Loop{loop("r", 0, 1)},
			Body: apply(tile.Select, f32, apply(tile.Gt, tile.Bool, b.load(x, at, v(1)), konst(f32, 0)),
				b.load(x, at, v(1)), konst(f32, 0))}},
		// A ReLU whose zero is -0.
		{"relu_negative_zero", &kir.Kernel{Out: o, Shape: tile.Shape{2, 8}, Agg: tile.Max,
			Reduce: []kir.Loop{loop("r", 0, 1)},
			Body: apply(tile.Select, f32, apply(tile.Le, tile.Bool, b.load(x, at, v(1)), konst(f32, 0)),
				konst(f32, math.Copysign(0, -1)), b.load(x, at, v(1)))}},
		// A first position where V ≠ O alone, without NaN meeting NaN.
		{"first_plain_ne", &kir.Kernel{Out: o, Shape: tile.Shape{2, 8}, Agg: tile.Min,
			Reduce: []kir.Loop{loop("r", 0, 1)},
			Where: []kir.Cond{{X: kir.IxOfValue(apply(tile.Ne, tile.Bool, b.load(x, at, v(1)),
				b.fill(o, 0, v(0), v(1)))), Bound: 1}},
			Body: b.load(pb, v(2))}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if _, ok := newWindowKernel(b.p, c.k); ok {
				t.Errorf("kernel %v was taken by the window executor", c.k)
			}
		})
	}
}

// BenchmarkMaxPoolStep times the forward and backward passes of a ReLU and
// max pooling at batch 64 over 28×28 (or 27×27) images of 32 channels, as
// one program computing the pooled output and the input gradient, for
// pooling windows that are disjoint (2×2, the showcase's), hang over a Same
// padding (2×2 on an odd size) or overlap (3×3 stride 2).
func BenchmarkMaxPoolStep(b *testing.B) {
	cases := []struct {
		name string
		hw   int
		opts op.PoolOptions
	}{
		{"2x2_valid_28", 28, op.PoolOptions{}},
		{"2x2_same_27", 27, op.PoolOptions{Padding: op.Same}},
		{"3x3_s2_same_28", 28, op.PoolOptions{Size: []int{3, 3}, Strides: []int{2, 2}, Padding: op.Same}},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			g := tile.NewGraph(c.name)
			x := g.Input("x", tile.Float32, tile.Shape{64, c.hw, c.hw, 32})
			y := op.MaxPool2D(g, op.ReLU(g, x), c.opts)
			dy := g.Input("dy", tile.Float32, y.Shape())
			gs, err := grad.VJP(g, []*tile.Tensor{y}, []*tile.Tensor{dy}, x)
			if err != nil {
				b.Fatal(err)
			}
			g.SetOutput("y", y)
			g.SetOutput("dx", gs[0])
			d := New(Cache(false))
			defer d.Close()
			p, err := compile.Compile(g, d.Target())
			if err != nil {
				b.Fatal(err)
			}
			ex, err := d.Load(p)
			if err != nil {
				b.Fatal(err)
			}
			defer ex.Close()
			rng := rand.New(rand.NewPCG(5, 6))
			for _, in := range p.Inputs {
				v := make([]float32, p.Buffers[in.Buffer].Size())
				for i := range v {
					v[i] = float32(rng.IntN(16)) - 6
				}
				if err := ex.SetInput(in.Name, v); err != nil {
					b.Fatal(err)
				}
			}
			window := 0
			for _, k := range ex.kernels {
				if _, ok := k.(*windowKernel); ok {
					window++
				}
			}
			b.ResetTimer()
			for b.Loop() {
				if err := ex.Run(); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(window), "window-kernels")
			b.ReportMetric(float64(b.Elapsed().Microseconds())/1000/float64(b.N), "ms/step")
		})
	}
}
