package cpu

import (
	"math/rand/v2"
	"testing"

	"github.com/tartanml/tartan/backend"
	"github.com/tartanml/tartan/grad"
	"github.com/tartanml/tartan/kir"
	"github.com/tartanml/tartan/op"
	"github.com/tartanml/tartan/tile"
)

// TestWindowKernels runs max-pooling forward and backward passes, whose
// kernels the window executor takes, on inputs full of ties (few distinct
// values, many of them negative so that a ReLU makes zeros), and compares
// every output with kir.Interpret: the gradient must reach exactly the first
// maximum of each window. It also checks that the window executor ran the
// expected number of kernels of each form.
func TestWindowKernels(t *testing.T) {
	cases := []struct {
		name  string
		x     tile.Shape
		relu  bool
		pool  func(g *tile.Graph, x *tile.Tensor) *tile.Tensor
		forms [3]int // at least this many windowReduce, windowFirst, windowRoute kernels
	}{
		{"relu_2x2_c16", tile.Shape{2, 6, 6, 16}, true, func(g *tile.Graph, x *tile.Tensor) *tile.Tensor {
			return op.MaxPool2D(g, x, op.PoolOptions{})
		}, [3]int{1, 1, 1}},
		{"plain_2x2_c13", tile.Shape{3, 4, 6, 13}, false, func(g *tile.Graph, x *tile.Tensor) *tile.Tensor {
			return op.MaxPool2D(g, x, op.PoolOptions{})
		}, [3]int{1, 1, 1}},
		// Padding guards the window value with a select on the index
		// range, which only the forward pass leaves out.
		{"relu_3x3_s2_same_c9", tile.Shape{2, 7, 5, 9}, true, func(g *tile.Graph, x *tile.Tensor) *tile.Tensor {
			return op.MaxPool2D(g, x, op.PoolOptions{Size: []int{3, 3}, Strides: []int{2, 2}, Padding: op.Same})
		}, [3]int{1, 0, 0}},
		{"plain_1d_same_c24", tile.Shape{2, 9, 24}, false, func(g *tile.Graph, x *tile.Tensor) *tile.Tensor {
			return op.MaxPool1D(g, x, op.PoolOptions{Size: []int{3}, Padding: op.Same})
		}, [3]int{1, 1, 0}},
		{"global_c8", tile.Shape{2, 5, 6, 8}, true, func(g *tile.Graph, x *tile.Tensor) *tile.Tensor {
			return op.GlobalMaxPool2D(g, x)
		}, [3]int{1, 1, 0}},
		// Dropout after the pooling, then a flattening: the routed value
		// is select(mask, dy, 0)·s, dy read as a row of a flat dimension.
		{"relu_2x2_dropout_flat_c16", tile.Shape{2, 6, 4, 16}, true, func(g *tile.Graph, x *tile.Tensor) *tile.Tensor {
			seed := g.Input("seed", tile.Int64, tile.Shape{})
			return op.Flatten(g, op.Dropout(g, op.MaxPool2D(g, x, op.PoolOptions{}), 0.3, seed, 1))
		}, [3]int{1, 1, 1}},
		{"plain_2x2_dropout_c12", tile.Shape{3, 4, 4, 12}, false, func(g *tile.Graph, x *tile.Tensor) *tile.Tensor {
			seed := g.Input("seed", tile.Int64, tile.Shape{})
			return op.Dropout(g, op.MaxPool2D(g, x, op.PoolOptions{}), 0.5, seed, 2)
		}, [3]int{1, 1, 1}},
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
			ex, err := d.Load(p)
			if err != nil {
				t.Fatal(err)
			}
			defer ex.Close()
			var forms [3]int
			for _, k := range ex.kernels {
				if w, ok := k.(*windowKernel); ok {
					forms[w.form]++
				}
			}
			for f := range forms {
				if forms[f] < c.forms[f] {
					t.Errorf("window kernels of each form: got %v, want at least %v\n%v", forms, c.forms, p)
				}
			}
			rng := rand.New(rand.NewPCG(3, 4))
			ref := make([][]float64, len(p.Buffers))
			ties := []float64{-1, -0.5, 0, 0.25, 0.25, 0.75, 2}
			for _, in := range p.Inputs {
				b := p.Buffers[in.Buffer]
				v := make([]float64, b.Size())
				for i := range v {
					v[i] = ties[rng.IntN(len(ties))]
					switch in.Name {
					case "dy":
						v[i] = float64(rng.IntN(9)) - 4
					case "seed":
						v[i] = 7
					}
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
					if float64(v) != ref[o.Buffer][i] {
						t.Fatalf("%s[%d] = %v, want %v", o.Name, i, v, ref[o.Buffer][i])
					}
				}
			}
		})
	}
}

// TestWindowRejects checks that kernels close to the window forms but
// outside them are left to the generic executor.
func TestWindowRejects(t *testing.T) {
	b := newProg("rejects")
	x := b.buf(kir.Input, "x", tile.Float32, tile.Shape{4, 8})
	xi := b.buf(kir.Input, "xi", tile.Int32, tile.Shape{4, 8})
	o := b.buf(kir.Output, "o", tile.Float32, tile.Shape{2, 8})
	o4 := b.buf(kir.Output, "o4", tile.Float32, tile.Shape{2, 4})
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
		// A floor division that mixes an output and a reduction variable.
		{"mixed_div", &kir.Kernel{Out: o, Shape: tile.Shape{2, 8}, Agg: tile.Max,
			Reduce: []kir.Loop{loop("r", 0, 3)},
			Body:   b.load(x, kir.IxFloorDivBy(sum(times(v(0), 4), v(2)), 2), v(1))}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if _, ok := newWindowKernel(b.p, c.k); ok {
				t.Errorf("kernel %v was taken by the window executor", c.k)
			}
		})
	}
}
