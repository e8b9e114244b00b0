package cpu

import (
	"slices"
	"testing"

	"github.com/tartanml/tartan/grad"
	"github.com/tartanml/tartan/kir"
	"github.com/tartanml/tartan/op"
	"github.com/tartanml/tartan/tile"
)

// countScatter returns the number of kernels of x run as loops over their
// indices.
func countScatter(x *Executable) int {
	n := 0
	for _, k := range x.kernels {
		if _, ok := k.(*scatterKernel); ok {
			n++
		}
	}
	return n
}

// TestScatterCompiledGraphs checks that scatter_add, alone and as the
// gradient of a gather (an embedding), runs as a loop over its indices and
// agrees with kir.Interpret on the kernels' dense meaning (random indices
// in [0, 10), some beyond the scattered axis).
func TestScatterCompiledGraphs(t *testing.T) {
	cases := []struct {
		name  string
		build func(g *tile.Graph)
	}{
		{"axis0_two_column_blocks", func(g *tile.Graph) {
			u := g.Input("u", tile.Float32, tile.Shape{12, 300})
			i := g.Input("i", tile.Int32, tile.Shape{12})
			g.SetOutput("y", g.ScatterAdd(u, i, 0, tile.Shape{8, 300}))
		}},
		{"axis1_rank2_indices", func(g *tile.Graph) {
			u := g.Input("u", tile.Float32, tile.Shape{3, 4, 5, 2})
			i := g.Input("i", tile.Int64, tile.Shape{4, 5})
			g.SetOutput("y", g.ScatterAdd(u, i, 1, tile.Shape{3, 7, 2}))
		}},
		{"last_axis_float64", func(g *tile.Graph) {
			u := g.Input("u", tile.Float64, tile.Shape{6, 9})
			i := g.Input("i", tile.Int32, tile.Shape{9})
			g.SetOutput("y", g.ScatterAdd(u, i, 1, tile.Shape{6, 8}))
		}},
		{"embedding_gradient", func(g *tile.Graph) {
			w := g.Input("w", tile.Float32, tile.Shape{9, 16})
			ids := g.Input("ids", tile.Int32, tile.Shape{4, 6})
			e := g.Gather(w, ids, 0)
			dy := g.Input("dy", tile.Float32, e.Shape())
			loss := op.Sum(g, g.Mul(g.Mul(e, e), dy), nil, false)
			gs, err := grad.Grad(g, loss, w)
			if err != nil {
				t.Fatal(err)
			}
			g.SetOutput("dw", gs[0])
		}},
	}
	d := New(Cache(false))
	defer d.Close()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			g := tile.NewGraph(c.name)
			c.build(g)
			p := compileFor(t, d, g)
			x, err := d.Load(p)
			if err != nil {
				t.Fatal(err)
			}
			n := countScatter(x)
			x.Close()
			if n != 1 {
				t.Errorf("%d kernels run as scatters, want 1\n%v", n, p)
			}
			checkProgram(t, d, p, 2, 5)
		})
	}
}

// TestScatterHandWorked checks a scatter against sums worked by hand:
// repeated indices add up in order, negative and too large ones are
// skipped, and rows no index names are zero (also after a second run,
// which must not add onto the first).
func TestScatterHandWorked(t *testing.T) {
	g := tile.NewGraph("scatter")
	u := g.Input("u", tile.Float32, tile.Shape{5, 2})
	i := g.Input("i", tile.Int64, tile.Shape{5})
	g.SetOutput("y", g.ScatterAdd(u, i, 0, tile.Shape{3, 2}))
	d := New(Cache(false))
	defer d.Close()
	p := compileFor(t, d, g)
	if k := p.Kernels[len(p.Kernels)-1]; k.Schedule.Strategy != "scatter" || k.Schedule.Scatter == nil {
		t.Fatalf("scatter_add scheduled as %q:\n%v", k.Schedule.Strategy, p)
	}
	x, err := d.Load(p)
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	if err := x.SetInput("u", []float32{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}); err != nil {
		t.Fatal(err)
	}
	if err := x.SetInput("i", []int64{2, -1, 0, 2, 5}); err != nil {
		t.Fatal(err)
	}
	want := []float32{5, 6, 0, 0, 8, 10}
	for run := range 2 {
		if err := x.Run(); err != nil {
			t.Fatal(err)
		}
		got := make([]float32, 6)
		if err := x.ReadOutput("y", got); err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got, want) {
			t.Errorf("run %d: got %v, want %v", run, got, want)
		}
	}
}

// TestScatterViewRejects checks that kir.ScatterOf refuses kernels whose
// dense form differs from an indexed accumulation in any one part.
func TestScatterViewRejects(t *testing.T) {
	g := tile.NewGraph("scatter")
	u := g.Input("u", tile.Float32, tile.Shape{5, 2})
	i := g.Input("i", tile.Int32, tile.Shape{5})
	g.SetOutput("y", g.ScatterAdd(u, i, 0, tile.Shape{3, 2}))
	d := New(Cache(false))
	defer d.Close()
	p := compileFor(t, d, g)
	k := p.Kernels[len(p.Kernels)-1]
	if kir.ScatterOf(p, k) == nil {
		t.Fatalf("the compiled scatter has no view:\n%v", p)
	}
	mutations := map[string]func(k *kir.Kernel){
		"max":       func(k *kir.Kernel) { k.Agg = tile.Max },
		"other 1":   func(k *kir.Kernel) { k.Body.Args[2] = &kir.Expr{Op: kir.Const, DType: tile.Float32, Value: 1} },
		"not equal": func(k *kir.Kernel) { k.Body.Args[0].Fn = tile.Ne },
		"shifted":   func(k *kir.Kernel) { k.Body.Args[1].Index[0] = kir.IxSum(k.Body.Args[1].Index[0], kir.IxOfConst(1)) },
		"condition": func(k *kir.Kernel) { k.Where = []kir.Cond{{X: kir.IxOfVar(0), Bound: 2}} },
		"short":     func(k *kir.Kernel) { k.Reduce[0].Hi-- },
	}
	for name, mutate := range mutations {
		kk := cloneKernel(k)
		mutate(kk)
		if v := kir.ScatterOf(p, kk); v != nil {
			t.Errorf("%s: view %+v for a kernel that is no scatter", name, v)
		}
	}
}

// cloneKernel copies k deeply enough for the mutations above.
func cloneKernel(k *kir.Kernel) *kir.Kernel {
	kk := *k
	kk.Reduce = slices.Clone(k.Reduce)
	var cp func(e *kir.Expr) *kir.Expr
	cp = func(e *kir.Expr) *kir.Expr {
		c := *e
		c.Index = slices.Clone(e.Index)
		c.Args = make([]*kir.Expr, len(e.Args))
		for i, a := range e.Args {
			c.Args[i] = cp(a)
		}
		return &c
	}
	kk.Body = cp(k.Body)
	return &kk
}
