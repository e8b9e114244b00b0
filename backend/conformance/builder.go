package conformance

import (
	"math"
	"math/rand/v2"

	"github.com/tartanml/tartan/backend"
	"github.com/tartanml/tartan/tile"
)

// Builder builds a case's graph and remembers the random host data of its
// inputs and variables.
type Builder struct {
	G     *tile.Graph
	rng   *rand.Rand
	feeds map[string]any
	vars  map[string]any
	order []string // inputs and variables, in declaration order
}

// Gen draws host values for a tensor: it returns n values (as float64,
// rounded to the dtype by the builder).
type Gen func(rng *rand.Rand, n int) []float64

// Uniform draws from [lo, hi).
func Uniform(lo, hi float64) Gen {
	return func(rng *rand.Rand, n int) []float64 {
		v := make([]float64, n)
		for i := range v {
			v[i] = lo + (hi-lo)*rng.Float64()
		}
		return v
	}
}

// AwayFromZero draws magnitudes in [lo, hi) with random signs.
func AwayFromZero(lo, hi float64) Gen {
	return func(rng *rand.Rand, n int) []float64 {
		v := Uniform(lo, hi)(rng, n)
		for i := range v {
			if rng.IntN(2) == 0 {
				v[i] = -v[i]
			}
		}
		return v
	}
}

// Ints draws integers in [lo, hi).
func Ints(lo, hi int) Gen {
	return func(rng *rand.Rand, n int) []float64 {
		v := make([]float64, n)
		for i := range v {
			v[i] = float64(lo + rng.IntN(hi-lo))
		}
		return v
	}
}

// Values gives exactly the values vals, for inputs of vals' size (cases
// with hand-worked results).
func Values(vals ...float64) Gen {
	return func(_ *rand.Rand, n int) []float64 {
		v := make([]float64, n)
		copy(v, vals)
		return v
	}
}

// WithNaN replaces about frac of the values gen draws by NaN and, at half
// that rate each, by +Inf and -Inf.
func WithNaN(gen Gen, frac float64) Gen {
	return func(rng *rand.Rand, n int) []float64 {
		if gen == nil {
			gen = Uniform(-1, 1)
		}
		v := gen(rng, n)
		for i := range v {
			switch u := rng.Float64(); {
			case u < frac:
				v[i] = math.NaN()
			case u < 1.5*frac:
				v[i] = math.Inf(1)
			case u < 2*frac:
				v[i] = math.Inf(-1)
			}
		}
		return v
	}
}

// Input declares an input with random values from gen (Uniform(-1, 1) when
// nil).
func (b *Builder) Input(name string, dt tile.DType, shape tile.Shape, gen Gen) *tile.Tensor {
	b.feeds[name] = b.host(dt, shape, gen)
	b.order = append(b.order, name)
	return b.G.Input(name, dt, shape)
}

// Variable declares a variable with random initial values from gen.
func (b *Builder) Variable(name string, dt tile.DType, shape tile.Shape, gen Gen) *tile.Tensor {
	b.vars[name] = b.host(dt, shape, gen)
	b.order = append(b.order, name)
	return b.G.Variable(name, dt, shape)
}

// Const returns a constant tensor of random values from gen.
func (b *Builder) Const(dt tile.DType, shape tile.Shape, gen Gen) *tile.Tensor {
	if gen == nil {
		gen = Uniform(-1, 1)
	}
	v, err := tile.ValueOf(dt, shape, gen(b.rng, shape.Size()))
	if err != nil {
		return b.G.Errorf("conformance", "%v", err)
	}
	return b.G.Constant(v)
}

// Output declares an output.
func (b *Builder) Output(name string, t *tile.Tensor) { b.G.SetOutput(name, t) }

// Rng returns the case's random source.
func (b *Builder) Rng() *rand.Rand { return b.rng }

// Inputs returns the host data of every input, by name, as Check feeds
// it.
func (b *Builder) Inputs() map[string]any { return b.feeds }

func (b *Builder) host(dt tile.DType, shape tile.Shape, gen Gen) any {
	if gen == nil {
		gen = Uniform(-1, 1)
		if dt == tile.Bool {
			gen = Ints(0, 2)
		} else if !dt.IsFloat() {
			gen = Ints(-9, 10)
		}
	}
	v := gen(b.rng, shape.Size())
	for i := range v {
		v[i] = tile.RoundTo(dt, v[i])
	}
	return backend.HostSlice(dt, v)
}
