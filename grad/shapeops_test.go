package grad

import (
	"testing"

	"github.com/tartanml/tartan/tile"
)

// intConst returns an integer constant of the given shape.
func intConst(g *tile.Graph, dt tile.DType, shape tile.Shape, data ...float64) *tile.Tensor {
	v, err := tile.ValueOf(dt, shape, data)
	if err != nil {
		return g.Errorf("test", "%v", err)
	}
	return g.Constant(v)
}

func TestShapeOpsFiniteDifferences(t *testing.T) {
	u := uniform(-1, 1)
	cases := []fdCase{
		{name: "reshape", ins: []in{{"x", tile.Shape{3, 5}, u}}, build: func(g *tile.Graph, x []*tile.Tensor) *tile.Tensor {
			return g.Exp(g.Reshape(x[0], tile.Shape{5, 1, 3}))
		}},
		{name: "transpose", ins: []in{{"x", tile.Shape{2, 3, 5}, u}}, build: func(g *tile.Graph, x []*tile.Tensor) *tile.Tensor {
			tr := g.Transpose(x[0], []int{2, 0, 1})
			return g.Mul(tr, tr)
		}},
		{name: "slice_step", ins: []in{{"x", tile.Shape{5, 7}, u}}, build: func(g *tile.Graph, x []*tile.Tensor) *tile.Tensor {
			return g.Tanh(g.Slice(x[0], []int{1, 0}, []int{5, 7}, []int{2, 3}))
		}},
		{name: "slice_unit", ins: []in{{"x", tile.Shape{5, 7}, u}}, build: func(g *tile.Graph, x []*tile.Tensor) *tile.Tensor {
			return g.Tanh(g.Slice(x[0], []int{1, 2}, []int{4, 7}, nil))
		}},
		{name: "concat", ins: []in{{"a", tile.Shape{3, 2}, u}, {"b", tile.Shape{3, 5}, u}, {"c", tile.Shape{3, 1}, u}},
			build: func(g *tile.Graph, x []*tile.Tensor) *tile.Tensor {
				return g.Elementwise(tile.Sigmoid, g.Concat(1, x[0], x[1], x[2]))
			}},
		{name: "concat_same_twice", ins: []in{{"a", tile.Shape{2, 3}, u}}, build: func(g *tile.Graph, x []*tile.Tensor) *tile.Tensor {
			return g.Exp(g.Concat(0, x[0], g.Neg(x[0]), x[0]))
		}},
		{name: "pad", ins: []in{{"x", tile.Shape{3, 4}, u}}, build: func(g *tile.Graph, x []*tile.Tensor) *tile.Tensor {
			return g.Exp(g.Pad(x[0], []int{1, 0}, []int{2, 3}, 0.5))
		}},
		{name: "broadcast_col_row", ins: []in{{"a", tile.Shape{3, 1}, u}, {"b", tile.Shape{4}, u}}, build: func(g *tile.Graph, x []*tile.Tensor) *tile.Tensor {
			return g.Tanh(g.Add(x[0], x[1]))
		}},
		{name: "broadcast_leading", ins: []in{{"a", tile.Shape{1, 5}, u}, {"b", tile.Shape{2, 3, 5}, u}, {"c", tile.Shape{3, 1}, u}},
			build: func(g *tile.Graph, x []*tile.Tensor) *tile.Tensor {
				return g.Sub(g.Mul(x[0], x[1]), x[2])
			}},
		{name: "broadcast_scalar", ins: []in{{"s", tile.Shape{}, u}, {"b", tile.Shape{3, 2}, u}}, build: func(g *tile.Graph, x []*tile.Tensor) *tile.Tensor {
			return g.Exp(g.Mul(x[0], x[1]))
		}},
		// Repeated indices accumulate; index 6 is out of range, reads 0
		// and receives nothing.
		{name: "gather_axis0_repeats", ins: []in{{"data", tile.Shape{5, 3}, u}}, build: func(g *tile.Graph, x []*tile.Tensor) *tile.Tensor {
			return g.Exp(g.Gather(x[0], intConst(g, tile.Int32, tile.Shape{5}, 2, 0, 2, 6, 4), 0))
		}},
		{name: "gather_axis1_2d_indices", ins: []in{{"data", tile.Shape{3, 5, 2}, u}}, build: func(g *tile.Graph, x []*tile.Tensor) *tile.Tensor {
			return g.Tanh(g.Gather(x[0], intConst(g, tile.Int64, tile.Shape{2, 2}, 4, 4, 1, 0), 1))
		}},
		{name: "scatter_add_repeats", ins: []in{{"upd", tile.Shape{4, 3}, u}}, build: func(g *tile.Graph, x []*tile.Tensor) *tile.Tensor {
			return g.Exp(g.ScatterAdd(x[0], intConst(g, tile.Int32, tile.Shape{4}, 1, 3, 1, -1), 0, tile.Shape{5, 3}))
		}},
		// Leaves that are not differentiated pass values, not gradients:
		// Iota and Random scale x, and the seed is an integer.
		{name: "iota_random_leaves", ins: []in{{"x", tile.Shape{3, 4}, u}}, build: func(g *tile.Graph, x []*tile.Tensor) *tile.Tensor {
			seed := g.Scalar(42, tile.Int64)
			r := g.Random(seed, tile.Float64, tile.Shape{3, 4}, 7)
			return g.Mul(g.Mul(x[0], r), g.Iota(tile.Float64, tile.Shape{3, 4}, 1))
		}},
		// A cast to an integer and back carries no gradient.
		{name: "cast_through_int", ins: []in{{"x", tile.Shape{4}, uniform(0.2, 0.8)}}, build: func(g *tile.Graph, x []*tile.Tensor) *tile.Tensor {
			return g.Add(g.Cast(g.Cast(g.Mul(x[0], g.ScalarLike(x[0], 10)), tile.Int32), tile.Float64), g.Mul(x[0], x[0]))
		}},
		// f64 → f32 → f64 loses precision: a larger step and a loose
		// tolerance.
		{name: "cast_f32_roundtrip", ins: []in{{"x", tile.Shape{3, 5}, u}}, build: func(g *tile.Graph, x []*tile.Tensor) *tile.Tensor {
			f := g.Cast(x[0], tile.Float32)
			return g.Cast(g.Mul(f, f), tile.Float64)
		}, opts: []CheckOption{WithStep(1e-2)}, tol: 1e-3},
		{name: "log_softmax", ins: []in{{"x", tile.Shape{3, 5}, uniform(-2, 2)}}, build: logSoftmax},
	}
	runFD(t, cases)
}

// logSoftmax returns x − max − log Σ exp(x − max) along the last axis of a
// rank-2 x, built from primitives.
func logSoftmax(g *tile.Graph, x []*tile.Tensor) *tile.Tensor {
	i, j := tile.Ix("i"), tile.Ix("j")
	rows := x[0].Dim(0)
	m := g.Contract(tile.Max, tile.CombNone, tile.Shape{rows}, []tile.Affine{i}, []tile.Operand{op(x[0], i, j)})
	z := g.Sub(x[0], g.Reshape(m, tile.Shape{rows, 1}))
	s := g.Contract(tile.Sum, tile.CombNone, tile.Shape{rows}, []tile.Affine{i}, []tile.Operand{op(g.Exp(z), i, j)})
	return g.Sub(z, g.Reshape(g.Log(s), tile.Shape{rows, 1}))
}

// TestShapeOpsHandWorked checks gradients whose values follow from counting.
func TestShapeOpsHandWorked(t *testing.T) {
	cases := []struct {
		name  string
		shape tile.Shape
		x     []float64
		build func(g *tile.Graph, x *tile.Tensor) *tile.Tensor // a tensor whose sum is y
		want  []float64
	}{
		{"gather_counts", tile.Shape{4}, []float64{1, 2, 3, 4}, func(g *tile.Graph, x *tile.Tensor) *tile.Tensor {
			return g.Gather(x, intConst(g, tile.Int32, tile.Shape{5}, 3, 0, 3, 3, 9), 0)
		}, []float64{1, 0, 0, 3}},
		{"slice_step_mask", tile.Shape{7}, []float64{1, 2, 3, 4, 5, 6, 7}, func(g *tile.Graph, x *tile.Tensor) *tile.Tensor {
			return g.Slice(x, []int{1}, []int{7}, []int{3})
		}, []float64{0, 1, 0, 0, 1, 0, 0}},
		{"pad_interior", tile.Shape{2}, []float64{1, 2}, func(g *tile.Graph, x *tile.Tensor) *tile.Tensor {
			return g.Mul(g.Pad(x, []int{2}, []int{1}, 7), g.Constant(value(t, tile.Float64, tile.Shape{5}, 1, 2, 3, 4, 5)))
		}, []float64{3, 4}},
		{"broadcast_counts", tile.Shape{3, 1}, []float64{1, 2, 3}, func(g *tile.Graph, x *tile.Tensor) *tile.Tensor {
			return g.BroadcastTo(x, tile.Shape{2, 3, 4})
		}, []float64{8, 8, 8}},
		{"transpose_weights", tile.Shape{2, 3}, []float64{1, 2, 3, 4, 5, 6}, func(g *tile.Graph, x *tile.Tensor) *tile.Tensor {
			w := g.Constant(value(t, tile.Float64, tile.Shape{3, 2}, 1, 2, 3, 4, 5, 6))
			return g.Mul(g.Transpose(x, []int{1, 0}), w)
		}, []float64{1, 3, 5, 2, 4, 6}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			g := tile.NewGraph(c.name)
			x := g.Input("x", tile.Float64, c.shape)
			got := evalGrads(t, g, sumAll(g, c.build(g, x)), []*tile.Tensor{x},
				map[string]*tile.Value{"x": value(t, tile.Float64, c.shape, c.x...)})
			if !sameValues(got[0].Data, c.want, 0) {
				t.Errorf("gradient %v, want %v", got[0].Data, c.want)
			}
		})
	}
}
