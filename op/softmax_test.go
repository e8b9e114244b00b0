package op

import (
	"math"
	"testing"

	"github.com/tartanml/tartan/tile"
)

func TestSoftmaxForward(t *testing.T) {
	// For the row 1 2 3: Σeˣ = e + e² + e³, softmax = (e⁻², e⁻¹, 1)/(1 + e⁻¹ + e⁻²)
	// and log-softmax = x − 3 − log(1 + e⁻¹ + e⁻²) (Python, double precision).
	sm := []float64{0.09003057317038046, 0.24472847105479767, 0.6652409557748219}
	lsm := []float64{-2.40760596444438, -1.4076059644443801, -0.40760596444438013}
	third := 1.0 / 3
	runForward(t, []fwdCase{
		// The second row would overflow without the max subtraction.
		{"softmax_last", func(g *tile.Graph, x []*tile.Tensor) *tile.Tensor { return Softmax(g, x[0], -1) },
			[]*tile.Value{f64(tile.Shape{2, 3}, 1, 2, 3, 1000, 1000, 1000)}, tile.Shape{2, 3},
			append(append([]float64{}, sm...), third, third, third)},
		// Along axis 0: column 0 is (0, ln 3) → (1/4, 3/4); column 1 is even.
		{"softmax_axis0", func(g *tile.Graph, x []*tile.Tensor) *tile.Tensor { return Softmax(g, x[0], 0) },
			[]*tile.Value{f64(tile.Shape{2, 2}, 0, 0, math.Log(3), 0)}, tile.Shape{2, 2}, []float64{0.25, 0.5, 0.75, 0.5}},
		// Shifting a row changes nothing: 1001 1002 1003 gives 1 2 3's values.
		{"log_softmax_shift", func(g *tile.Graph, x []*tile.Tensor) *tile.Tensor { return LogSoftmax(g, x[0], 1) },
			[]*tile.Value{f64(tile.Shape{2, 3}, 1, 2, 3, 1001, 1002, 1003)}, tile.Shape{2, 3},
			append(append([]float64{}, lsm...), lsm...)},
		// −1000 − log(1 + e⁻¹⁰⁰⁰) = −1000 and 0 − log(1 + e⁻¹⁰⁰⁰) = 0.
		{"log_softmax_extreme", func(g *tile.Graph, x []*tile.Tensor) *tile.Tensor { return LogSoftmax(g, x[0], -1) },
			[]*tile.Value{f64(tile.Shape{2}, -1000, 0)}, tile.Shape{2}, []float64{-1000, 0}},
	})
}
