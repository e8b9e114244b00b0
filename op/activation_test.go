package op

import (
	"math"
	"testing"

	"github.com/tartanml/tartan/ref"
	"github.com/tartanml/tartan/tile"
)

func TestActivationForward(t *testing.T) {
	// The reference values below were computed separately with Python's
	// math module (erf, tanh, exp, log1p) in double precision.
	x := f64(tile.Shape{4}, -2, -0.5, 0, 1.5)
	big := f64(tile.Shape{2}, -1000, 1000)
	unary := func(f func(*tile.Graph, *tile.Tensor) *tile.Tensor) builder {
		return func(g *tile.Graph, x []*tile.Tensor) *tile.Tensor { return f(g, x[0]) }
	}
	runForward(t, []fwdCase{
		{"relu", unary(ReLU), []*tile.Value{x}, tile.Shape{4}, []float64{0, 0, 0, 1.5}},
		{"leaky_relu", func(g *tile.Graph, x []*tile.Tensor) *tile.Tensor { return LeakyReLU(g, x[0], 0.3) },
			[]*tile.Value{x}, tile.Shape{4}, []float64{-0.6, -0.15, 0, 1.5}},
		// α(eˣ − 1) below zero.
		{"elu", func(g *tile.Graph, x []*tile.Tensor) *tile.Tensor { return ELU(g, x[0], 1) },
			[]*tile.Value{x}, tile.Shape{4}, []float64{-0.8646647167633873, -0.3934693402873666, 0, 1.5}},
		{"elu_alpha2_large", func(g *tile.Graph, x []*tile.Tensor) *tile.Tensor { return ELU(g, x[0], 2) },
			[]*tile.Value{big}, tile.Shape{2}, []float64{-2, 1000}},
		// x·Φ(x).
		{"gelu_exact", func(g *tile.Graph, x []*tile.Tensor) *tile.Tensor { return GELU(g, x[0], false) },
			[]*tile.Value{x}, tile.Shape{4}, []float64{-0.04550026389635842, -0.15426876936299344, 0, 1.399789198096713}},
		{"gelu_tanh", func(g *tile.Graph, x []*tile.Tensor) *tile.Tensor { return GELU(g, x[0], true) },
			[]*tile.Value{x}, tile.Shape{4}, []float64{-0.04540230591222494, -0.15428599017485606, 0, 1.3995715769802328}},
		{"sigmoid", unary(Sigmoid), []*tile.Value{x}, tile.Shape{4},
			[]float64{0.11920292202211755, 0.3775406687981454, 0.5, 0.8175744761936437}},
		{"tanh", unary(Tanh), []*tile.Value{x}, tile.Shape{4},
			[]float64{-0.9640275800758169, -0.46211715726000974, 0, 0.9051482536448664}},
		// log(1 + eˣ).
		{"softplus", unary(Softplus), []*tile.Value{x}, tile.Shape{4},
			[]float64{0.1269280110429725, 0.4740769841801067, math.Ln2, 1.7014132779827524}},
		// e^±1000 overflow a naive formula; the true values round to 0 and 1000.
		{"softplus_large", unary(Softplus), []*tile.Value{big}, tile.Shape{2}, []float64{0, 1000}},
	})
}

// TestActivationNaN checks that NaN propagates through every activation, as
// in PyTorch and TensorFlow, and that the infinities take their limits.
func TestActivationNaN(t *testing.T) {
	nan, inf := math.NaN(), math.Inf(1)
	x := f64(tile.Shape{4}, nan, inf, -inf, -0.0)
	unary := func(f func(*tile.Graph, *tile.Tensor) *tile.Tensor) builder {
		return func(g *tile.Graph, x []*tile.Tensor) *tile.Tensor { return f(g, x[0]) }
	}
	runForward(t, []fwdCase{
		{"relu", unary(ReLU), []*tile.Value{x}, tile.Shape{4}, []float64{nan, inf, 0, 0}},
		{"leaky_relu", func(g *tile.Graph, x []*tile.Tensor) *tile.Tensor { return LeakyReLU(g, x[0], 0.3) },
			[]*tile.Value{x}, tile.Shape{4}, []float64{nan, inf, -inf, 0}},
		{"elu", func(g *tile.Graph, x []*tile.Tensor) *tile.Tensor { return ELU(g, x[0], 1) },
			[]*tile.Value{x}, tile.Shape{4}, []float64{nan, inf, -1, 0}},
		{"gelu", func(g *tile.Graph, x []*tile.Tensor) *tile.Tensor { return GELU(g, x[0], false) },
			[]*tile.Value{f64(tile.Shape{1}, nan)}, tile.Shape{1}, []float64{nan}},
		{"sigmoid", unary(Sigmoid), []*tile.Value{x}, tile.Shape{4}, []float64{nan, 1, 0, 0.5}},
		{"tanh", unary(Tanh), []*tile.Value{x}, tile.Shape{4}, []float64{nan, 1, -1, 0}},
		{"softplus", unary(Softplus), []*tile.Value{f64(tile.Shape{2}, nan, -inf)}, tile.Shape{2}, []float64{nan, 0}},
	})
	// ReLU gives +0, never -0, for x ≤ 0.
	g := tile.NewGraph("relu_zero")
	xs, feeds := inputs(g, []*tile.Value{f64(tile.Shape{2}, -0.0, -3)})
	g.SetOutput("y", ReLU(g, xs[0]))
	out, err := ref.Run(g, feeds, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i, v := range out["y"].Data {
		if v != 0 || math.Signbit(v) {
			t.Errorf("relu element %d = %v, want +0", i, v)
		}
	}
}
