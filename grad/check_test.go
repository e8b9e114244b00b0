package grad

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/tartanml/tartan/tile"
)

func TestRelErr(t *testing.T) {
	cases := []struct {
		a, f, floor, want float64
	}{
		{1, 1, 1e-2, 0},
		{2, 1, 1e-2, 0.5},
		{-1, 1, 1e-2, 2},
		{1e-4, 2e-4, 1e-2, 1e-2}, // below the floor: absolute, scaled by 1/floor
		{0, 0, 1e-2, 0},
		{math.NaN(), 1, 1e-2, math.Inf(1)},
		{1, math.Inf(-1), 1e-2, math.Inf(1)},
	}
	for _, c := range cases {
		if got := relErr(c.a, c.f, c.floor); math.Abs(got-c.want) > 1e-15 && got != c.want {
			t.Errorf("relErr(%g, %g, %g) = %g, want %g", c.a, c.f, c.floor, got, c.want)
		}
	}
}

func TestProbes(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	if got := probes(5, 10, r); len(got) != 5 || got[0] != 0 || got[4] != 4 {
		t.Errorf("small tensor: probes %v, want all of 0..4", got)
	}
	if got := probes(5, 0, r); len(got) != 5 {
		t.Errorf("no limit: probes %v, want all of 0..4", got)
	}
	got := probes(1000, 20, r)
	if len(got) != 20 {
		t.Fatalf("got %d probes, want 20", len(got))
	}
	for k := range got {
		if got[k] < 0 || got[k] >= 1000 || (k > 0 && got[k] <= got[k-1]) {
			t.Fatalf("probes %v are not distinct, increasing and in range", got)
		}
	}
}

// TestCompareDetectsWrongGradient feeds compare a gradient that is 1% off
// and one that is exact, and checks that the error found is the one planted.
func TestCompareDetectsWrongGradient(t *testing.T) {
	for _, scale := range []float64{1, 1.01} {
		g := tile.NewGraph("wrong")
		x := g.Input("x", tile.Float64, tile.Shape{2, 3})
		y := sumAll(g, g.Mul(x, x))
		truth := g.Mul(x, g.ScalarLike(x, 2*scale))
		feeds := map[string]*tile.Value{"x": value(t, tile.Float64, tile.Shape{2, 3}, 1, -2, 3, 0.5, 4, -1)}
		cfg := checkConfig{step: DefaultStep, floor: DefaultFloor, maxProbes: DefaultMaxProbes, seed: 1}
		got, where, err := compare(g, y, []*tile.Tensor{x}, []*tile.Tensor{truth}, feeds, nil, cfg)
		if err != nil {
			t.Fatal(err)
		}
		want := 1 - 1/scale // |1.01f − f| / (1.01|f|)
		if math.Abs(got-want) > 1e-6 {
			t.Errorf("scale %g: error %g, want %g (%s)", scale, got, want, where)
		}
		if !strings.Contains(where, `input "x" at [`) {
			t.Errorf("where = %q does not name the input and coordinates", where)
		}
	}
}

// TestCheckVariables differentiates with respect to a variable given in vars
// and one left at its default of zero, probing a random subset of a larger
// tensor.
func TestCheckVariables(t *testing.T) {
	i, j, k := tile.Ix("i"), tile.Ix("j"), tile.Ix("k")
	g := tile.NewGraph("vars")
	w := g.Variable("w", tile.Float64, tile.Shape{20, 30})
	b := g.Variable("b", tile.Float64, tile.Shape{30})
	in := g.Input("in", tile.Float64, tile.Shape{2, 20})
	h := g.Tanh(g.Add(g.Contract(tile.Sum, tile.CombMul, tile.Shape{2, 30}, []tile.Affine{i, j},
		[]tile.Operand{op(in, i, k), op(w, k, j)}), b))
	y := sumAll(g, g.Mul(h, h))
	r := rand.New(rand.NewPCG(3, 4))
	feeds := map[string]*tile.Value{"in": value(t, tile.Float64, tile.Shape{2, 20}, uniform(-1, 1)(r, 40)...)}
	vars := map[string]*tile.Value{"w": value(t, tile.Float64, tile.Shape{20, 30}, uniform(-0.3, 0.3)(r, 600)...)}
	got, where, err := Check(g, y, []*tile.Tensor{w, b}, feeds, vars, WithMaxProbes(25), WithSeed(9))
	if err != nil {
		t.Fatal(err)
	}
	if !(got < tol) {
		t.Errorf("error %g at %s", got, where)
	}
	if !strings.HasPrefix(where, "variable ") {
		t.Errorf("where = %q, want it to name a variable", where)
	}
	t.Logf("max error %.2e (%s)", got, where)
}

func TestCheckErrors(t *testing.T) {
	g := tile.NewGraph("g")
	x := g.Input("x", tile.Float64, tile.Shape{3})
	x32 := g.Input("x32", tile.Float32, tile.Shape{3})
	ex := g.Exp(x)
	y := g.Add(sumAll(g, ex), g.Cast(sumAll(g, x32), tile.Float64))
	feeds := map[string]*tile.Value{"x": value(t, tile.Float64, tile.Shape{3}, 1, 2, 3), "x32": value(t, tile.Float32, tile.Shape{3}, 1, 2, 3)}
	other := tile.NewGraph("other")
	ox := other.Input("ox", tile.Float64, tile.Shape{3})
	cases := []struct {
		name string
		y    *tile.Tensor
		xs   []*tile.Tensor
		fd   map[string]*tile.Value
		opts []CheckOption
		want string
	}{
		{"not a leaf", y, []*tile.Tensor{ex}, feeds, nil, "is not an input or a variable"},
		{"not f64", y, []*tile.Tensor{x32}, feeds, nil, "must be f64 for finite differences"},
		{"not fed", y, []*tile.Tensor{x}, map[string]*tile.Value{"x32": feeds["x32"]}, nil, `input "x" is not fed`},
		{"y not scalar", ex, []*tile.Tensor{x}, feeds, nil, "must be a floating-point scalar"},
		{"other graph", y, []*tile.Tensor{ox}, feeds, nil, `belongs to graph "other"`},
		{"no xs", y, nil, feeds, nil, "no tensors to check"},
		{"bad step", y, []*tile.Tensor{x}, feeds, []CheckOption{WithStep(0)}, "must be positive and finite"},
		{"bad floor", y, []*tile.Tensor{x}, feeds, []CheckOption{WithFloor(math.NaN())}, "must be positive and finite"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, _, err := Check(g, c.y, c.xs, c.fd, nil, c.opts...)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("got error %v, want one containing %q", err, c.want)
			}
		})
	}
}
