package grad

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/tartanml/tartan/ref"
	"github.com/tartanml/tartan/tile"
)

// The shared machinery of the finite-difference tests: random inputs drawn
// from given domains, a scalar loss that weighs every element of the tensor
// under test with a fixed random weight, and Check.

// tol is the acceptance bound on Check's error for float64 graphs.
const tol = 1e-6

// gen fills n values.
type gen func(r *rand.Rand, n int) []float64

// uniform draws from [lo, hi).
func uniform(lo, hi float64) gen {
	return func(r *rand.Rand, n int) []float64 {
		out := make([]float64, n)
		for i := range out {
			out[i] = lo + (hi-lo)*r.Float64()
		}
		return out
	}
}

// awayFromZero draws magnitudes from [lo, hi) with random signs.
func awayFromZero(lo, hi float64) gen {
	return func(r *rand.Rand, n int) []float64 {
		out := uniform(lo, hi)(r, n)
		for i := range out {
			if r.IntN(2) == 0 {
				out[i] = -out[i]
			}
		}
		return out
	}
}

// distinct returns a shuffle of n values at least 0.1 apart in [-n/10, n/10],
// so max and min have no ties that a small step could flip.
func distinct() gen {
	return func(r *rand.Rand, n int) []float64 {
		out := make([]float64, n)
		for i, p := range r.Perm(n) {
			out[i] = 0.2*float64(p) - 0.1*float64(n) + 0.05*r.Float64()
		}
		return out
	}
}

// in declares a float64 input of the graph under test.
type in struct {
	name  string
	shape tile.Shape
	gen   gen
}

// fdCase is one finite-difference check: build returns a floating tensor F
// of the graph from the inputs, and the check differentiates
// y = Σ W ⊙ F with random constant weights W.
type fdCase struct {
	name  string
	ins   []in
	build func(g *tile.Graph, x []*tile.Tensor) *tile.Tensor
	opts  []CheckOption
	tol   float64 // 0 means tol
}

// weighted returns Σ W ⊙ f for a random constant W of f's shape and dtype,
// as a sum contraction, so every element of f reaches the scalar with a
// generic weight.
func weighted(g *tile.Graph, f *tile.Tensor, r *rand.Rand) *tile.Tensor {
	w, err := tile.ValueOf(f.DType(), f.Shape(), uniform(-1, 1)(r, f.Size()))
	if err != nil {
		return g.Errorf("test", "%v", err)
	}
	idx := make([]tile.Affine, f.Rank())
	for d := range idx {
		idx[d] = tile.Ix(fmt.Sprintf("w%d", d))
	}
	return g.Contract(tile.Sum, tile.CombMul, tile.Shape{}, nil,
		[]tile.Operand{{Tensor: f, Index: idx}, {Tensor: g.Constant(w), Index: idx}})
}

// runFD runs each case through Check and requires the error to be within the
// case's tolerance.
func runFD(t *testing.T, cases []fdCase) {
	t.Helper()
	for ci, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := rand.New(rand.NewPCG(uint64(ci)+1, 7))
			g := tile.NewGraph(c.name)
			feeds := map[string]*tile.Value{}
			var xs []*tile.Tensor
			for _, spec := range c.ins {
				v, err := tile.ValueOf(tile.Float64, spec.shape, spec.gen(r, spec.shape.Size()))
				if err != nil {
					t.Fatal(err)
				}
				feeds[spec.name] = v
				xs = append(xs, g.Input(spec.name, tile.Float64, spec.shape))
			}
			f := c.build(g, xs)
			y := weighted(g, f, r)
			if err := g.Err(); err != nil {
				t.Fatalf("building: %v", err)
			}
			got, where, err := Check(g, y, xs, feeds, nil, c.opts...)
			if err != nil {
				t.Fatal(err)
			}
			bound := c.tol
			if bound == 0 {
				bound = tol
			}
			if !(got <= bound) {
				t.Errorf("error %.3g > %.3g at %s", got, bound, where)
			}
			t.Logf("max error %.2e (%s)", got, where)
		})
	}
}

// evalGrads builds the gradients of y with respect to xs and evaluates them
// with the reference executor.
func evalGrads(t *testing.T, g *tile.Graph, y *tile.Tensor, xs []*tile.Tensor, feeds map[string]*tile.Value) []*tile.Value {
	t.Helper()
	grads, err := Grad(g, y, xs...)
	if err != nil {
		t.Fatal(err)
	}
	m, err := ref.New(g)
	if err != nil {
		t.Fatal(err)
	}
	vals, err := m.Eval(feeds, grads...)
	if err != nil {
		t.Fatal(err)
	}
	for i, v := range vals {
		if v.DType != xs[i].DType() || !v.Shape.Equal(xs[i].Shape()) {
			t.Fatalf("gradient %d is %s%v, want %s%v", i, v.DType, v.Shape, xs[i].DType(), xs[i].Shape())
		}
	}
	return vals
}

// value builds a value or fails the test.
func value(t *testing.T, dt tile.DType, shape tile.Shape, data ...float64) *tile.Value {
	t.Helper()
	v, err := tile.ValueOf(dt, shape, data)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// sameValues reports whether got and want agree within tol·(1+|want|).
func sameValues(got, want []float64, tol float64) bool {
	if len(got) != len(want) {
		return false
	}
	for i := range got {
		if !(math.Abs(got[i]-want[i]) <= tol*(1+math.Abs(want[i]))) {
			return false
		}
	}
	return true
}

// ix returns the index expressions named by the arguments.
func ix(names ...string) []tile.Affine {
	out := make([]tile.Affine, len(names))
	for i, n := range names {
		out[i] = tile.Ix(n)
	}
	return out
}

// sumAll returns the sum of every element of x, as a sum contraction.
func sumAll(g *tile.Graph, x *tile.Tensor) *tile.Tensor {
	idx := make([]tile.Affine, x.Rank())
	for d := range idx {
		idx[d] = tile.Ix(fmt.Sprintf("s%d", d))
	}
	return g.Contract(tile.Sum, tile.CombNone, tile.Shape{}, nil, []tile.Operand{{Tensor: x, Index: idx}})
}
