package op

import (
	"math"
	"testing"

	"github.com/tartanml/tartan/ref"
	"github.com/tartanml/tartan/tile"
)

func TestDropout(t *testing.T) {
	const n = 4000
	for _, c := range []struct {
		rate   float64
		seed   int64
		stream uint64
	}{{0.3, 42, 0}, {0.5, 7, 3}, {0.9, -1, 1 << 40}} {
		g := tile.NewGraph("dropout")
		x := g.Input("x", tile.Float64, tile.Shape{n / 40, 40})
		seed := g.Input("seed", tile.Int64, tile.Shape{})
		g.SetOutput("y", Dropout(g, x, c.rate, seed, c.stream))
		xs := make([]float64, n)
		for i := range xs {
			xs[i] = float64(i%17) - 8.5
		}
		out, err := ref.Run(g, map[string]*tile.Value{
			"x":    f64(tile.Shape{n / 40, 40}, xs...),
			"seed": i64(tile.Shape{}, float64(c.seed)),
		}, nil)
		if err != nil {
			t.Fatal(err)
		}
		kept := 0
		for p, y := range out["y"].Data {
			// Element p is kept exactly when its Philox draw is at least the rate.
			keep := tile.UniformAt(uint64(c.seed), c.stream, p) >= c.rate
			want := 0.0
			if keep {
				want = xs[p] / (1 - c.rate)
				kept++
			}
			if math.Abs(y-want) > 1e-12*math.Abs(want) {
				t.Fatalf("rate %g: element %d = %v, want %v", c.rate, p, y, want)
			}
		}
		// The kept fraction is binomial(n, 1 − rate): allow five standard deviations.
		p := 1 - c.rate
		if sd := math.Sqrt(n * p * (1 - p)); math.Abs(float64(kept)-n*p) > 5*sd {
			t.Errorf("rate %g: kept %d of %d, expected about %.0f", c.rate, kept, n, n*p)
		}
	}
}

// TestDropoutNaN checks that dropout hides no non-finite value, as in
// PyTorch: a dropped NaN or infinity is NaN (x · 0), a kept one stays.
func TestDropoutNaN(t *testing.T) {
	const n, rate, seed, stream = 200, 0.5, 9, 2
	g := tile.NewGraph("dropout_nan")
	x := g.Input("x", tile.Float64, tile.Shape{n})
	s := g.Input("seed", tile.Int64, tile.Shape{})
	g.SetOutput("y", Dropout(g, x, rate, s, stream))
	xs := make([]float64, n)
	for i := range xs {
		xs[i] = []float64{math.NaN(), math.Inf(1), math.Inf(-1), 3}[i%4]
	}
	out, err := ref.Run(g, map[string]*tile.Value{"x": f64(tile.Shape{n}, xs...), "seed": i64(tile.Shape{}, seed)}, nil)
	if err != nil {
		t.Fatal(err)
	}
	dropped := 0
	for p, y := range out["y"].Data {
		keep := tile.UniformAt(seed, stream, p) >= rate
		want := xs[p] * 0
		if keep {
			want = xs[p] / (1 - rate)
		} else {
			dropped++
		}
		if !(y == want || math.IsNaN(y) && math.IsNaN(want)) {
			t.Fatalf("element %d (%v, kept %v) = %v, want %v", p, xs[p], keep, y, want)
		}
	}
	if dropped == 0 || dropped == n {
		t.Fatalf("%d of %d elements dropped; the test needs both kinds", dropped, n)
	}
}

func TestDropoutRateZeroIsIdentity(t *testing.T) {
	g := tile.NewGraph("dropout")
	x := g.Input("x", tile.Float32, tile.Shape{3})
	if y := Dropout(g, x, 0, g.Input("seed", tile.Int64, tile.Shape{}), 0); y != x {
		t.Errorf("Dropout with rate 0 returned %v, want x itself", y)
	}
}
