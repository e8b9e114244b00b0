package op

import (
	"math"
	"testing"

	"github.com/tartanml/tartan/tile"
)

func TestLossForward(t *testing.T) {
	// −log-softmax of the row 1 2 3 is (2.4076…, 1.4076…, 0.4076…) (Python,
	// double precision).
	const l0, l1, l2 = 2.40760596444438, 1.4076059644443801, 0.40760596444438013
	sparse := func(fromLogits bool) builder {
		return func(g *tile.Graph, x []*tile.Tensor) *tile.Tensor {
			return SparseCategoricalCrossentropy(g, x[0], x[1], fromLogits)
		}
	}
	dense := func(f func(*tile.Graph, *tile.Tensor, *tile.Tensor, bool) *tile.Tensor, fromLogits bool) builder {
		return func(g *tile.Graph, x []*tile.Tensor) *tile.Tensor { return f(g, x[0], x[1], fromLogits) }
	}
	runForward(t, []fwdCase{
		// Labels 2 and 0 on two rows 1 2 3: (l2 + l0)/2.
		{"sparse_logits", sparse(true),
			[]*tile.Value{i64(tile.Shape{2}, 2, 0), f64(tile.Shape{2, 3}, 1, 2, 3, 1, 2, 3)},
			tile.Shape{}, []float64{(l2 + l0) / 2}},
		// Labels as (N, 1), i32.
		{"sparse_logits_labels_n1", sparse(true),
			[]*tile.Value{{DType: tile.Int32, Shape: tile.Shape{2, 1}, Data: []float64{1, 1}}, f64(tile.Shape{2, 3}, 1, 2, 3, 1, 2, 3)},
			tile.Shape{}, []float64{l1}},
		// Probabilities: −(log 0.5 + log 0.25)/2.
		{"sparse_probs", sparse(false),
			[]*tile.Value{i64(tile.Shape{2}, 2, 1), f64(tile.Shape{2, 3}, 0.2, 0.3, 0.5, 0.5, 0.25, 0.25)},
			tile.Shape{}, []float64{(math.Ln2 + 2*math.Ln2) / 2}},
		// Unnormalised 2 3 5 is renormalised: −log 0.2.
		{"sparse_probs_renormalised", sparse(false),
			[]*tile.Value{i64(tile.Shape{1}, 0), f64(tile.Shape{1, 3}, 2, 3, 5)},
			tile.Shape{}, []float64{-math.Log(0.2)}},
		// A zero probability is clipped to 1e-7: −log 1e-7.
		{"sparse_probs_clipped", sparse(false),
			[]*tile.Value{i64(tile.Shape{1}, 0), f64(tile.Shape{1, 2}, 0, 1)},
			tile.Shape{}, []float64{-math.Log(1e-7)}},
		// Soft target (0, ½, ½) on logits 1 2 3: (l1 + l2)/2.
		{"categorical_logits", dense(CategoricalCrossentropy, true),
			[]*tile.Value{f64(tile.Shape{1, 3}, 0, 0.5, 0.5), f64(tile.Shape{1, 3}, 1, 2, 3)},
			tile.Shape{}, []float64{(l1 + l2) / 2}},
		// One-hot targets: −(log 0.6 + log 0.25)/2.
		{"categorical_probs", dense(CategoricalCrossentropy, false),
			[]*tile.Value{f64(tile.Shape{2, 3}, 0, 1, 0, 1, 0, 0), f64(tile.Shape{2, 3}, 0.1, 0.6, 0.3, 0.25, 0.25, 0.5)},
			tile.Shape{}, []float64{-(math.Log(0.6) + math.Log(0.25)) / 2}},
		// −log 0.8, −log 0.6, −log 0.9, −log(1 − 1e-7) (p = 1 clipped), averaged.
		{"binary_probs", dense(BinaryCrossentropy, false),
			[]*tile.Value{f64(tile.Shape{2, 2}, 1, 0, 0, 1), f64(tile.Shape{2, 2}, 0.8, 0.4, 0.1, 1)},
			tile.Shape{}, []float64{0.20983244768450793}},
		// y = 1, x = 2: log(1 + e⁻²); y = 0, x = −1: log(1 + e⁻¹); averaged.
		{"binary_logits", dense(BinaryCrossentropy, true),
			[]*tile.Value{f64(tile.Shape{1, 2}, 1, 0), f64(tile.Shape{1, 2}, 2, -1)},
			tile.Shape{}, []float64{0.2200948492805977}},
		// y = 0, x = 1000: 1000 exactly; y = 1, x = 1000: 0.
		{"binary_logits_large", dense(BinaryCrossentropy, true),
			[]*tile.Value{f64(tile.Shape{2, 1}, 0, 1), f64(tile.Shape{2, 1}, 1000, 1000)},
			tile.Shape{}, []float64{500}},
		// Differences 0 1 2 0.
		{"mse", func(g *tile.Graph, x []*tile.Tensor) *tile.Tensor { return MeanSquaredError(g, x[0], x[1]) },
			[]*tile.Value{f64(tile.Shape{2, 2}, 1, 2, 3, 4), f64(tile.Shape{2, 2}, 1, 3, 5, 4)},
			tile.Shape{}, []float64{1.25}},
		{"mae", func(g *tile.Graph, x []*tile.Tensor) *tile.Tensor { return MeanAbsoluteError(g, x[0], x[1]) },
			[]*tile.Value{f64(tile.Shape{2, 2}, 1, 2, 3, 4), f64(tile.Shape{2, 2}, 1, 3, 1, 4)},
			tile.Shape{}, []float64{0.75}},
		// Integer targets are cast: MSE of (0, 1) against (0.5, 0.5).
		{"mse_int_target", func(g *tile.Graph, x []*tile.Tensor) *tile.Tensor { return MeanSquaredError(g, x[0], x[1]) },
			[]*tile.Value{i64(tile.Shape{1, 2}, 0, 1), f64(tile.Shape{1, 2}, 0.5, 0.5)},
			tile.Shape{}, []float64{0.25}},
	})
}
