package ref

import (
	"math"
	"strings"
	"testing"

	"github.com/tartanml/tartan/tile"
)

func val(t *testing.T, dt tile.DType, shape tile.Shape, data ...float64) *tile.Value {
	t.Helper()
	v, err := tile.ValueOf(dt, shape, data)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func near(a, b []float64, tol float64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if math.Abs(a[i]-b[i]) > tol*(1+math.Abs(b[i])) {
			return false
		}
	}
	return true
}

// run builds a graph with build, feeds the inputs in order as "x0", "x1", …,
// and returns output "y".
func run(t *testing.T, build func(g *tile.Graph, xs []*tile.Tensor) *tile.Tensor, ins ...*tile.Value) *tile.Value {
	t.Helper()
	g := tile.NewGraph("test")
	var xs []*tile.Tensor
	feeds := map[string]*tile.Value{}
	for i, v := range ins {
		name := "x" + string(rune('0'+i))
		xs = append(xs, g.Input(name, v.DType, v.Shape))
		feeds[name] = v
	}
	g.SetOutput("y", build(g, xs))
	out, err := Run(g, feeds, nil)
	if err != nil {
		t.Fatal(err)
	}
	return out["y"]
}

func TestHandWorked(t *testing.T) {
	i, j, k := tile.Ix("i"), tile.Ix("j"), tile.Ix("k")
	cases := []struct {
		name  string
		build func(g *tile.Graph, xs []*tile.Tensor) *tile.Tensor
		ins   []*tile.Value
		shape tile.Shape
		want  []float64
	}{
		{"matmul", func(g *tile.Graph, x []*tile.Tensor) *tile.Tensor {
			return g.Contract(tile.Sum, tile.CombMul, tile.Shape{2, 2}, []tile.Affine{i, j},
				[]tile.Operand{{Tensor: x[0], Index: []tile.Affine{i, k}}, {Tensor: x[1], Index: []tile.Affine{k, j}}})
		}, []*tile.Value{val(t, tile.Float64, tile.Shape{2, 3}, 1, 2, 3, 4, 5, 6), val(t, tile.Float64, tile.Shape{3, 2}, 7, 8, 9, 10, 11, 12)},
			tile.Shape{2, 2}, []float64{58, 64, 139, 154}},
		// 1-D convolution with one zero of padding on each side: out[x] = Σ_i in[x+i-1]·w[i].
		{"conv1d_same", func(g *tile.Graph, x []*tile.Tensor) *tile.Tensor {
			xx := tile.Ix("x")
			return g.Contract(tile.Sum, tile.CombMul, tile.Shape{4}, []tile.Affine{xx},
				[]tile.Operand{{Tensor: x[0], Index: []tile.Affine{xx.Plus(i).AddConst(-1)}}, {Tensor: x[1], Index: []tile.Affine{i}}})
		}, []*tile.Value{val(t, tile.Float64, tile.Shape{4}, 1, 2, 3, 4), val(t, tile.Float64, tile.Shape{3}, 1, 10, 100)},
			tile.Shape{4}, []float64{210, 321, 432, 43}},
		// Max pool of width 2, stride 2.
		{"maxpool", func(g *tile.Graph, x []*tile.Tensor) *tile.Tensor {
			return g.Contract(tile.Max, tile.CombNone, tile.Shape{3}, []tile.Affine{i},
				[]tile.Operand{{Tensor: x[0], Index: []tile.Affine{i.Times(2).Plus(j)}}}, tile.Constraint{Expr: j, Bound: 2})
		}, []*tile.Value{val(t, tile.Float64, tile.Shape{6}, 1, -5, -3, -4, 9, 2)},
			tile.Shape{3}, []float64{1, -3, 9}},
		// An equality-select sum: (I == O) ? dO, scattered back to the window.
		{"maxpool_grad", func(g *tile.Graph, x []*tile.Tensor) *tile.Tensor {
			return g.Contract(tile.Sum, tile.CombEq, tile.Shape{4}, []tile.Affine{i.Times(2).Plus(j)},
				[]tile.Operand{{Tensor: x[0], Index: []tile.Affine{i.Times(2).Plus(j)}}, {Tensor: x[1], Index: []tile.Affine{i}}, {Tensor: x[2], Index: []tile.Affine{i}}},
				tile.Constraint{Expr: j, Bound: 2})
		}, []*tile.Value{val(t, tile.Float64, tile.Shape{4}, 3, 1, 0, 5), val(t, tile.Float64, tile.Shape{2}, 3, 5), val(t, tile.Float64, tile.Shape{2}, 10, 20)},
			tile.Shape{4}, []float64{10, 0, 0, 20}},
		{"sum_all", func(g *tile.Graph, x []*tile.Tensor) *tile.Tensor {
			return g.Contract(tile.Sum, tile.CombNone, tile.Shape{}, nil, []tile.Operand{{Tensor: x[0], Index: []tile.Affine{i, j}}})
		}, []*tile.Value{val(t, tile.Float32, tile.Shape{2, 2}, 1, 2, 3, 4)}, tile.Shape{}, []float64{10}},
		{"broadcast_add", func(g *tile.Graph, x []*tile.Tensor) *tile.Tensor { return g.Add(x[0], x[1]) },
			[]*tile.Value{val(t, tile.Float64, tile.Shape{2, 1}, 1, 2), val(t, tile.Float64, tile.Shape{3}, 10, 20, 30)},
			tile.Shape{2, 3}, []float64{11, 21, 31, 12, 22, 32}},
		{"transpose", func(g *tile.Graph, x []*tile.Tensor) *tile.Tensor { return g.Transpose(x[0], []int{1, 0}) },
			[]*tile.Value{val(t, tile.Float64, tile.Shape{2, 3}, 1, 2, 3, 4, 5, 6)}, tile.Shape{3, 2}, []float64{1, 4, 2, 5, 3, 6}},
		{"slice_step", func(g *tile.Graph, x []*tile.Tensor) *tile.Tensor { return g.Slice(x[0], []int{1}, []int{6}, []int{2}) },
			[]*tile.Value{val(t, tile.Float64, tile.Shape{6}, 0, 1, 2, 3, 4, 5)}, tile.Shape{3}, []float64{1, 3, 5}},
		{"concat", func(g *tile.Graph, x []*tile.Tensor) *tile.Tensor { return g.Concat(1, x[0], x[1]) },
			[]*tile.Value{val(t, tile.Float64, tile.Shape{2, 1}, 1, 2), val(t, tile.Float64, tile.Shape{2, 2}, 3, 4, 5, 6)},
			tile.Shape{2, 3}, []float64{1, 3, 4, 2, 5, 6}},
		{"pad", func(g *tile.Graph, x []*tile.Tensor) *tile.Tensor { return g.Pad(x[0], []int{1}, []int{2}, -1) },
			[]*tile.Value{val(t, tile.Float64, tile.Shape{2}, 5, 6)}, tile.Shape{5}, []float64{-1, 5, 6, -1, -1}},
		{"gather", func(g *tile.Graph, x []*tile.Tensor) *tile.Tensor { return g.Gather(x[0], x[1], 0) },
			[]*tile.Value{val(t, tile.Float64, tile.Shape{3, 2}, 1, 2, 3, 4, 5, 6), val(t, tile.Int32, tile.Shape{2}, 2, 0)},
			tile.Shape{2, 2}, []float64{5, 6, 1, 2}},
		{"scatter_add", func(g *tile.Graph, x []*tile.Tensor) *tile.Tensor { return g.ScatterAdd(x[0], x[1], 0, tile.Shape{3}) },
			[]*tile.Value{val(t, tile.Float64, tile.Shape{3}, 1, 2, 4), val(t, tile.Int64, tile.Shape{3}, 2, 0, 2)},
			tile.Shape{3}, []float64{2, 0, 5}},
		{"one_hot", func(g *tile.Graph, x []*tile.Tensor) *tile.Tensor { return g.OneHot(x[0], 3, tile.Float32) },
			[]*tile.Value{val(t, tile.Int32, tile.Shape{2}, 2, 0)}, tile.Shape{2, 3}, []float64{0, 0, 1, 1, 0, 0}},
		{"select", func(g *tile.Graph, x []*tile.Tensor) *tile.Tensor {
			return g.Select(g.Elementwise(tile.Gt, x[0], g.ScalarLike(x[0], 0)), x[0], g.ScalarLike(x[0], 0))
		}, []*tile.Value{val(t, tile.Float64, tile.Shape{3}, -1, 2, -3)}, tile.Shape{3}, []float64{0, 2, 0}},
		{"cast_truncates", func(g *tile.Graph, x []*tile.Tensor) *tile.Tensor { return g.Cast(x[0], tile.Int32) },
			[]*tile.Value{val(t, tile.Float64, tile.Shape{3}, -1.7, 2.9, 0.2)}, tile.Shape{3}, []float64{-1, 2, 0}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := run(t, c.build, c.ins...)
			if !got.Shape.Equal(c.shape) || !near(got.Data, c.want, 1e-12) {
				t.Errorf("got %v %v, want %v %v", got.Shape, got.Data, c.shape, c.want)
			}
		})
	}
}

func TestVariablesUpdateAfterRun(t *testing.T) {
	g := tile.NewGraph("counter")
	v := g.Variable("count", tile.Float32, tile.Shape{})
	g.SetOutput("before", v)
	g.Update(v, g.Add(v, g.Scalar(1, tile.Float32)))
	m, err := New(g)
	if err != nil {
		t.Fatal(err)
	}
	for step := range 3 {
		out, err := m.Run(nil)
		if err != nil {
			t.Fatal(err)
		}
		if got := out["before"].Data[0]; got != float64(step) {
			t.Errorf("step %d: read %v", step, got)
		}
	}
}

func TestRunErrors(t *testing.T) {
	g := tile.NewGraph("e")
	x := g.Input("x", tile.Float32, tile.Shape{2})
	g.SetOutput("y", g.Neg(x))
	cases := map[string]struct {
		feeds map[string]*tile.Value
		want  string
	}{
		"missing":     {nil, `input "x" is not fed`},
		"wrong shape": {map[string]*tile.Value{"x": tile.NewValue(tile.Float32, tile.Shape{3})}, "input x is f32[2] but the value given is f32[3]"},
		"unknown":     {map[string]*tile.Value{"x": tile.NewValue(tile.Float32, tile.Shape{2}), "z": tile.NewValue(tile.Float32, tile.Shape{2})}, `no input "z"`},
	}
	for name, c := range cases {
		_, err := Run(g, c.feeds, nil)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: got error %v, want one containing %q", name, err, c.want)
		}
	}
}
