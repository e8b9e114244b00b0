package op

import (
	"testing"

	"github.com/tartanml/tartan/tile"
)

func TestNormForward(t *testing.T) {
	// x (4, 2): channel 0 is 1 1 3 3 (mean 2, biased variance 1), channel 1
	// is 0 4 0 4 (mean 2, variance 4).
	x := f64(tile.Shape{4, 2}, 1, 0, 1, 4, 3, 0, 3, 4)
	bn := func(training bool, eps float64, which int) builder {
		return func(g *tile.Graph, x []*tile.Tensor) *tile.Tensor {
			var mm, mv *tile.Tensor
			if len(x) > 3 {
				mm, mv = x[3], x[4]
			}
			y, m, v := BatchNorm(g, x[0], x[1], x[2], mm, mv, training, eps)
			return []*tile.Tensor{y, m, v}[which]
		}
	}
	gamma, beta := f64(tile.Shape{2}, 2, 3), f64(tile.Shape{2}, 10, 20)
	runForward(t, []fwdCase{
		// Normalised: channel 0 → −1 −1 1 1, channel 1 → −1 1 −1 1; then
		// ×(2, 3) + (10, 20).
		{"batch_norm_training", bn(true, 0, 0), []*tile.Value{x, gamma, beta}, tile.Shape{4, 2},
			[]float64{8, 17, 8, 23, 12, 17, 12, 23}},
		{"batch_norm_training_mean", bn(true, 0, 1), []*tile.Value{x, gamma, beta}, tile.Shape{2}, []float64{2, 2}},
		{"batch_norm_training_var", bn(true, 0, 2), []*tile.Value{x, gamma, beta}, tile.Shape{2}, []float64{1, 4}},
		// Moving mean (1, 0), variance (3, 8), ε = 1: divide by (2, 3);
		// gamma 1, beta 0.
		{"batch_norm_inference", bn(false, 1, 0),
			[]*tile.Value{x, f64(tile.Shape{2}, 1, 1), f64(tile.Shape{2}, 0, 0), f64(tile.Shape{2}, 1, 0), f64(tile.Shape{2}, 3, 8)},
			tile.Shape{4, 2}, []float64{0, 0, 0, 4.0 / 3, 1, 0, 1, 4.0 / 3}},
		// Row 1 2 3 4: mean 2.5, variance 1.25, ε = 0.75 so the divisor is √2;
		// then ×(1, 2, 1, 2) + (1, 2, 3, 4) (values from Python). The constant
		// row 2 2 2 2 normalises to zeros, leaving beta.
		{"layer_norm", func(g *tile.Graph, x []*tile.Tensor) *tile.Tensor { return LayerNorm(g, x[0], x[1], x[2], -1, 0.75) },
			[]*tile.Value{f64(tile.Shape{2, 4}, 1, 2, 3, 4, 2, 2, 2, 2), f64(tile.Shape{4}, 1, 2, 1, 2), f64(tile.Shape{4}, 1, 2, 3, 4)},
			tile.Shape{2, 4}, []float64{-0.06066017177982119, 1.2928932188134525, 3.353553390593274, 6.121320343559642, 1, 2, 3, 4}},
		// Along axis 0 of [1 3; 3 7]: columns (1, 3) and (3, 7) both become
		// (−1, 1); gamma (1, 10) scales the rows.
		{"layer_norm_axis0", func(g *tile.Graph, x []*tile.Tensor) *tile.Tensor { return LayerNorm(g, x[0], x[1], nil, 0, 0) },
			[]*tile.Value{f64(tile.Shape{2, 2}, 1, 3, 3, 7), f64(tile.Shape{2}, 1, 10)},
			tile.Shape{2, 2}, []float64{-1, -1, 10, 10}},
	})
}
