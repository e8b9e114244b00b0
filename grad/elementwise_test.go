package grad

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/tartanml/tartan/tile"
)

// apart returns pairs (a, b) stored as a's and b's values one after the
// other: n/2 values for a, then n/2 for b, with |a − b| ≥ 0.1 so that Maximum
// and Minimum have no kink within a step.
func apart(r *rand.Rand, n int) []float64 {
	half := n / 2
	out := uniform(-1, 1)(r, n)
	for i := range half {
		gap := 0.1 + 0.9*r.Float64()
		if r.IntN(2) == 0 {
			gap = -gap
		}
		out[half+i] = out[i] + gap
	}
	return out
}

func TestElementwiseFiniteDifferences(t *testing.T) {
	s := tile.Shape{3, 5}
	unary := func(name string, f tile.Fn, g gen) fdCase {
		return fdCase{name: name, ins: []in{{"x", s, g}}, build: func(gr *tile.Graph, x []*tile.Tensor) *tile.Tensor {
			return gr.Elementwise(f, x[0])
		}}
	}
	binary := func(name string, f tile.Fn, ga, gb gen) fdCase {
		return fdCase{name: name, ins: []in{{"a", s, ga}, {"b", s, gb}}, build: func(gr *tile.Graph, x []*tile.Tensor) *tile.Tensor {
			return gr.Elementwise(f, x[0], x[1])
		}}
	}
	// pair splits one input of shape [2, 3, 5] into the a and b of a
	// binary function, so that apart can relate their values.
	pair := func(name string, f tile.Fn) fdCase {
		return fdCase{name: name, ins: []in{{"ab", tile.Shape{2, 3, 5}, apart}}, build: func(gr *tile.Graph, x []*tile.Tensor) *tile.Tensor {
			a := gr.Reshape(gr.Slice(x[0], []int{0, 0, 0}, []int{1, 3, 5}, nil), s)
			b := gr.Reshape(gr.Slice(x[0], []int{1, 0, 0}, []int{2, 3, 5}, nil), s)
			return gr.Elementwise(f, a, b)
		}}
	}
	cases := []fdCase{
		unary("neg", tile.Neg, uniform(-2, 2)),
		unary("abs", tile.Abs, awayFromZero(0.1, 2)),
		unary("sign", tile.Sign, awayFromZero(0.1, 2)),
		unary("exp", tile.Exp, uniform(-2, 2)),
		unary("log", tile.Log, uniform(0.3, 3)),
		unary("log1p", tile.Log1p, uniform(-0.5, 2)),
		unary("sqrt", tile.Sqrt, uniform(0.3, 3)),
		unary("rsqrt", tile.Rsqrt, uniform(0.3, 3)),
		unary("tanh", tile.Tanh, uniform(-2, 2)),
		unary("sigmoid", tile.Sigmoid, uniform(-3, 3)),
		unary("erf", tile.Erf, uniform(-2, 2)),
		unary("floor", tile.Floor, uniform(-3, 3)),
		unary("ceil", tile.Ceil, uniform(-3, 3)),
		unary("recip", tile.Recip, awayFromZero(0.5, 2)),
		binary("add", tile.Add, uniform(-2, 2), uniform(-2, 2)),
		binary("sub", tile.Sub, uniform(-2, 2), uniform(-2, 2)),
		binary("mul", tile.Mul, uniform(-2, 2), uniform(-2, 2)),
		binary("div", tile.Div, uniform(-2, 2), awayFromZero(0.5, 2)),
		binary("pow", tile.Pow, uniform(0.5, 2), uniform(-1.5, 1.5)),
		pair("maximum", tile.Maximum),
		pair("minimum", tile.Minimum),
		// x·x: one tensor as both operands accumulates both derivatives.
		{name: "mul_self", ins: []in{{"x", s, uniform(-2, 2)}}, build: func(g *tile.Graph, x []*tile.Tensor) *tile.Tensor {
			return g.Mul(x[0], x[0])
		}},
		// Select on a comparison of the selected values: the condition
		// carries nothing, each branch gets the cotangent where chosen.
		{name: "select", ins: []in{{"x", s, awayFromZero(0.1, 2)}, {"z", s, uniform(-2, 2)}}, build: func(g *tile.Graph, x []*tile.Tensor) *tile.Tensor {
			pos := g.Elementwise(tile.Gt, x[0], g.ScalarLike(x[0], 0))
			return g.Select(pos, g.Mul(x[0], x[1]), g.Exp(x[0]))
		}},
		// Comparisons, And, Or and Not feed only a cast to float: the
		// gradient is zero, and so is the finite difference.
		{name: "logic_has_no_gradient", ins: []in{{"x", s, awayFromZero(0.1, 2)}, {"z", s, uniform(-2, 2)}}, build: func(g *tile.Graph, x []*tile.Tensor) *tile.Tensor {
			zero := g.ScalarLike(x[0], 0)
			c := g.Elementwise(tile.Or, g.Elementwise(tile.And, g.Elementwise(tile.Lt, x[0], zero), g.Elementwise(tile.Ge, x[1], zero)),
				g.Elementwise(tile.Not, g.Elementwise(tile.Ne, x[0], x[1])))
			return g.Add(g.Cast(c, tile.Float64), x[1])
		}},
		// A small dense layer with a ReLU built from Maximum.
		{name: "dense_relu", ins: []in{{"x", tile.Shape{3, 4}, uniform(-1, 1)}, {"w", tile.Shape{4, 5}, uniform(-1, 1)}, {"b", tile.Shape{5}, uniform(-1, 1)}},
			build: func(g *tile.Graph, x []*tile.Tensor) *tile.Tensor {
				i, j, k := tile.Ix("i"), tile.Ix("j"), tile.Ix("k")
				mm := g.Contract(tile.Sum, tile.CombMul, tile.Shape{3, 5}, []tile.Affine{i, j}, []tile.Operand{op(x[0], i, k), op(x[1], k, j)})
				return g.Maximum(g.Add(mm, x[2]), g.ScalarLike(mm, 0))
			}},
	}
	runFD(t, cases)
}

// TestElementwiseHandWorked checks derivatives at points worked out by hand,
// including the documented conventions at kinks and ties.
func TestElementwiseHandWorked(t *testing.T) {
	nan := math.NaN()
	cases := []struct {
		name  string
		f     tile.Fn
		a, b  []float64
		da    []float64
		db    []float64
		nArgs int
	}{
		{"abs_at_zero", tile.Abs, []float64{-2, 0, 3}, nil, []float64{-1, 0, 1}, nil, 1},
		{"max_tie_to_first", tile.Maximum, []float64{1, 2, 3}, []float64{1, 5, 0}, []float64{1, 0, 1}, []float64{0, 1, 0}, 2},
		{"min_tie_to_first", tile.Minimum, []float64{1, 2, 3}, []float64{1, 5, 0}, []float64{1, 1, 0}, []float64{0, 0, 1}, 2},
		// A NaN result's cotangent goes to the NaN operand, to a when both
		// are NaN.
		{"max_nan_to_nan", tile.Maximum, []float64{nan, 1, nan, 4}, []float64{3, nan, nan, 2}, []float64{1, 0, 1, 1}, []float64{0, 1, 0, 0}, 2},
		{"min_nan_to_nan", tile.Minimum, []float64{nan, 1, nan, 4}, []float64{3, nan, nan, 2}, []float64{1, 0, 1, 0}, []float64{0, 1, 0, 1}, 2},
		// d/db a^b = log(a)·a^b, taken as 0 at a ≤ 0; d/da = b·a^(b-1).
		{"pow", tile.Pow, []float64{2, 0, 4}, []float64{3, 2, 0.5}, []float64{12, 0, 0.25}, []float64{8 * 0.6931471805599453, 0, 2 * 1.3862943611198906}, 2},
		{"floor", tile.Floor, []float64{0.5, -1.5, 2}, nil, []float64{0, 0, 0}, nil, 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			g := tile.NewGraph(c.name)
			sh := tile.Shape{len(c.a)}
			xs := []*tile.Tensor{g.Input("a", tile.Float64, sh)}
			feeds := map[string]*tile.Value{"a": value(t, tile.Float64, sh, c.a...)}
			if c.nArgs == 2 {
				xs = append(xs, g.Input("b", tile.Float64, sh))
				feeds["b"] = value(t, tile.Float64, sh, c.b...)
			}
			got := evalGrads(t, g, sumAll(g, g.Elementwise(c.f, xs...)), xs, feeds)
			if !sameValues(got[0].Data, c.da, 1e-14) {
				t.Errorf("da = %v, want %v", got[0].Data, c.da)
			}
			if c.nArgs == 2 && !sameValues(got[1].Data, c.db, 1e-14) {
				t.Errorf("db = %v, want %v", got[1].Data, c.db)
			}
		})
	}
}
