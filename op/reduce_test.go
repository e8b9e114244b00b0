package op

import (
	"math"
	"testing"

	"github.com/tartanml/tartan/tile"
)

func TestReduceForward(t *testing.T) {
	// x = [1 5 3; 4 2 6].
	x := f64(tile.Shape{2, 3}, 1, 5, 3, 4, 2, 6)
	red := func(f func(*tile.Graph, *tile.Tensor, []int, bool) *tile.Tensor, axes []int, keep bool) builder {
		return func(g *tile.Graph, x []*tile.Tensor) *tile.Tensor { return f(g, x[0], axes, keep) }
	}
	arg := func(f func(*tile.Graph, *tile.Tensor, int) *tile.Tensor, axis int) builder {
		return func(g *tile.Graph, x []*tile.Tensor) *tile.Tensor { return f(g, x[0], axis) }
	}
	runForward(t, []fwdCase{
		{"sum_rows", red(Sum, []int{1}, false), []*tile.Value{x}, tile.Shape{2}, []float64{9, 12}},
		{"sum_cols_keep", red(Sum, []int{0}, true), []*tile.Value{x}, tile.Shape{1, 3}, []float64{5, 7, 9}},
		{"sum_all", red(Sum, nil, false), []*tile.Value{x}, tile.Shape{}, []float64{21}},
		{"sum_all_keep", red(Sum, nil, true), []*tile.Value{x}, tile.Shape{1, 1}, []float64{21}},
		{"mean_last", red(Mean, []int{-1}, false), []*tile.Value{x}, tile.Shape{2}, []float64{3, 4}},
		{"mean_all", red(Mean, nil, false), []*tile.Value{x}, tile.Shape{}, []float64{3.5}},
		{"max_cols", red(Max, []int{0}, false), []*tile.Value{x}, tile.Shape{3}, []float64{4, 5, 6}},
		{"min_rows_keep", red(Min, []int{1}, true), []*tile.Value{x}, tile.Shape{2, 1}, []float64{1, 2}},
		// x (2, 2, 2) = 1…8 over axes 0 and 2: {1,2,5,6} and {3,4,7,8}.
		{"sum_axes02_keep", red(Sum, []int{0, 2}, true), []*tile.Value{f64(tile.Shape{2, 2, 2}, seq(8)...)},
			tile.Shape{1, 2, 1}, []float64{14, 22}},
		{"sum_int", red(Sum, []int{0}, false), []*tile.Value{i64(tile.Shape{2, 2}, 1, 2, 3, 4)}, tile.Shape{2}, []float64{4, 6}},
		{"argmax_rows", arg(ArgMax, 1), []*tile.Value{x}, tile.Shape{2}, []float64{1, 2}},
		{"argmax_cols", arg(ArgMax, 0), []*tile.Value{x}, tile.Shape{3}, []float64{1, 0, 1}},
		{"argmin_rows", arg(ArgMin, -1), []*tile.Value{x}, tile.Shape{2}, []float64{0, 1}},
		// Ties give the first position.
		{"argmax_ties", arg(ArgMax, 1), []*tile.Value{f64(tile.Shape{2, 3}, 3, 1, 3, 2, 2, 2)}, tile.Shape{2}, []float64{0, 0}},
		{"argmin_ties", arg(ArgMin, 1), []*tile.Value{f64(tile.Shape{1, 4}, 3, 1, 5, 1)}, tile.Shape{1}, []float64{1}},
		// A NaN wins, as in NumPy.
		{"argmax_nan", arg(ArgMax, 0), []*tile.Value{f64(tile.Shape{4}, 1, 7, math.NaN(), math.NaN())}, tile.Shape{}, []float64{2}},
	})
}

func TestArgMaxDType(t *testing.T) {
	g := tile.NewGraph("argmax")
	y := ArgMax(g, g.Input("x", tile.Float32, tile.Shape{3, 4}), 1)
	if g.Err() != nil || y.DType() != tile.Int64 || !y.Shape().Equal(tile.Shape{3}) {
		t.Fatalf("ArgMax gave %v (%v), want i64[3]", y, g.Err())
	}
}
