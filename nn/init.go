package nn

import (
	"fmt"
	"hash/fnv"
	"math"
	"math/rand/v2"

	"github.com/tartanml/tartan/tile"
)

// Initializer draws the initial values of a weight. The built-in ones follow
// Keras: GlorotUniform (the default for kernels), GlorotNormal, HeUniform,
// HeNormal, Orthogonal (the default for recurrent kernels), Zeros (the
// default for biases), Ones, Constant and RandomUniform.
// Fans are computed as Keras computes them: a rank-2 kernel (in, out) has
// fans in and out; a convolution kernel (spatial…, in, out) multiplies both
// by the window size.
type Initializer interface {
	// Name returns Keras's identifier, such as "glorot_uniform".
	Name() string
	// fill writes the initial values of a weight of the given shape into dst,
	// drawing from rng.
	fill(dst []float32, shape tile.Shape, rng *rand.Rand)
	// spec returns the serialisable description of the initializer.
	spec() initSpec
}

// initSpec is an initializer as it appears in architecture JSON:
// {"name": "glorot_uniform"} or {"name": "constant", "value": 0.5}.
type initSpec struct {
	Name  string   `json:"name"`
	Value *float64 `json:"value,omitempty"`
	Min   *float64 `json:"minval,omitempty"`
	Max   *float64 `json:"maxval,omitempty"`
}

// fans returns Keras's fan-in and fan-out of a weight shape.
func fans(shape tile.Shape) (in, out float64) {
	switch len(shape) {
	case 0:
		return 1, 1
	case 1:
		return float64(shape[0]), float64(shape[0])
	case 2:
		return float64(shape[0]), float64(shape[1])
	}
	receptive := 1
	for _, d := range shape[:len(shape)-2] {
		receptive *= d
	}
	return float64(shape[len(shape)-2] * receptive), float64(shape[len(shape)-1] * receptive)
}

// varianceScaling is Keras's VarianceScaling initializer: the variance is
// scale divided by a fan (in, out or their average), and the values come from
// a uniform distribution of that variance or a normal one truncated at two
// standard deviations.
type varianceScaling struct {
	name    string
	scale   float64
	mode    string // "fan_in", "fan_out" or "fan_avg"
	uniform bool
}

func (v varianceScaling) Name() string   { return v.name }
func (v varianceScaling) spec() initSpec { return initSpec{Name: v.name} }

func (v varianceScaling) fill(dst []float32, shape tile.Shape, rng *rand.Rand) {
	fin, fout := fans(shape)
	var fan float64
	switch v.mode {
	case "fan_in":
		fan = fin
	case "fan_out":
		fan = fout
	default:
		fan = (fin + fout) / 2
	}
	scale := v.scale / math.Max(1, fan)
	if v.uniform {
		limit := math.Sqrt(3 * scale)
		for i := range dst {
			dst[i] = float32((2*rng.Float64() - 1) * limit)
		}
		return
	}
	// The standard deviation of a unit normal truncated to [-2, 2] is
	// 0.87962566103423978; dividing by it restores the wanted variance.
	stddev := math.Sqrt(scale) / 0.87962566103423978
	for i := range dst {
		z := rng.NormFloat64()
		for math.Abs(z) > 2 {
			z = rng.NormFloat64()
		}
		dst[i] = float32(z * stddev)
	}
}

// GlorotUniform draws from U(−l, l) with l = √(6 / (fan_in + fan_out)).
func GlorotUniform() Initializer {
	return varianceScaling{name: "glorot_uniform", scale: 1, mode: "fan_avg", uniform: true}
}

// GlorotNormal draws from a normal distribution of standard deviation
// √(2 / (fan_in + fan_out)), truncated at two standard deviations.
func GlorotNormal() Initializer {
	return varianceScaling{name: "glorot_normal", scale: 1, mode: "fan_avg"}
}

// HeUniform draws from U(−l, l) with l = √(6 / fan_in).
func HeUniform() Initializer {
	return varianceScaling{name: "he_uniform", scale: 2, mode: "fan_in", uniform: true}
}

// HeNormal draws from a normal distribution of standard deviation
// √(2 / fan_in), truncated at two standard deviations.
func HeNormal() Initializer {
	return varianceScaling{name: "he_normal", scale: 2, mode: "fan_in"}
}

// constantInit fills every element with one value.
type constantInit struct {
	name  string
	value float64
}

func (c constantInit) Name() string { return c.name }

func (c constantInit) spec() initSpec {
	if c.name == "constant" {
		v := c.value
		return initSpec{Name: c.name, Value: &v}
	}
	return initSpec{Name: c.name}
}

func (c constantInit) fill(dst []float32, _ tile.Shape, _ *rand.Rand) {
	for i := range dst {
		dst[i] = float32(c.value)
	}
}

// Zeros fills a weight with 0.
func Zeros() Initializer { return constantInit{name: "zeros"} }

// Ones fills a weight with 1.
func Ones() Initializer { return constantInit{name: "ones", value: 1} }

// Constant fills a weight with v.
func Constant(v float64) Initializer { return constantInit{name: "constant", value: v} }

// uniformInit draws from U(min, max).
type uniformInit struct{ min, max float64 }

func (uniformInit) Name() string { return "random_uniform" }

func (u uniformInit) spec() initSpec {
	lo, hi := u.min, u.max
	return initSpec{Name: "random_uniform", Min: &lo, Max: &hi}
}

func (u uniformInit) fill(dst []float32, _ tile.Shape, rng *rand.Rand) {
	for i := range dst {
		dst[i] = float32(u.min + (u.max-u.min)*rng.Float64())
	}
}

// RandomUniform draws from U(min, max); Keras's Embedding uses
// RandomUniform(-0.05, 0.05).
func RandomUniform(min, max float64) Initializer { return uniformInit{min, max} }

// initializerFromSpec rebuilds an initializer from its JSON description.
func initializerFromSpec(s initSpec) (Initializer, error) {
	switch s.Name {
	case "glorot_uniform":
		return GlorotUniform(), nil
	case "glorot_normal":
		return GlorotNormal(), nil
	case "he_uniform":
		return HeUniform(), nil
	case "he_normal":
		return HeNormal(), nil
	case "zeros":
		return Zeros(), nil
	case "ones":
		return Ones(), nil
	case "constant":
		if s.Value == nil {
			return nil, fmt.Errorf("initializer constant needs a value")
		}
		return Constant(*s.Value), nil
	case "orthogonal":
		return Orthogonal(), nil
	case "random_uniform":
		if s.Min == nil || s.Max == nil || !(*s.Min <= *s.Max) {
			return nil, fmt.Errorf("initializer random_uniform needs minval <= maxval")
		}
		return RandomUniform(*s.Min, *s.Max), nil
	}
	return nil, fmt.Errorf("unknown initializer %q (want glorot_uniform, glorot_normal, he_uniform, he_normal, orthogonal, zeros, ones, constant or random_uniform)", s.Name)
}

// weightRNG returns the generator that draws the initial values of the
// weight called name under seed. Each weight has its own stream, so adding a
// layer does not change the initial values of the others.
func weightRNG(seed int64, name string) *rand.Rand {
	h := fnv.New64a()
	h.Write([]byte(name))
	return rand.New(rand.NewPCG(uint64(seed), h.Sum64()))
}

// orthogonalInit is Keras's Orthogonal initializer with gain 1.
type orthogonalInit struct{}

func (orthogonalInit) Name() string   { return "orthogonal" }
func (orthogonalInit) spec() initSpec { return initSpec{Name: "orthogonal"} }

// fill views the weight as a matrix (the product of all dimensions but the
// last, the last) and fills it with orthonormal rows or columns, whichever
// are fewer: the Q factor, its R's diagonal positive, of a matrix of
// standard normal draws, transposed when the matrix is wide, as Keras does.
func (orthogonalInit) fill(dst []float32, shape tile.Shape, rng *rand.Rand) {
	if len(shape) < 2 {
		for i := range dst {
			dst[i] = float32(rng.NormFloat64())
		}
		return
	}
	cols := shape[len(shape)-1]
	rows := len(dst) / cols
	m, n := rows, cols // the tall matrix Q is m × n, m ≥ n
	if rows < cols {
		m, n = cols, rows
	}
	q := make([]float64, m*n) // column-major: column j at q[j*m:]
	for i := range q {
		q[i] = rng.NormFloat64()
	}
	// Modified Gram–Schmidt: each column minus its components along the
	// columns before it, normalised; R's diagonal is the norms, positive.
	for j := 0; j < n; j++ {
		cj := q[j*m : (j+1)*m]
		for k := 0; k < j; k++ {
			ck := q[k*m : (k+1)*m]
			dot := 0.0
			for i := range cj {
				dot += ck[i] * cj[i]
			}
			for i := range cj {
				cj[i] -= dot * ck[i]
			}
		}
		norm := 0.0
		for _, v := range cj {
			norm += v * v
		}
		norm = math.Sqrt(norm)
		for i := range cj {
			cj[i] /= norm
		}
	}
	for r := 0; r < rows; r++ {
		for c := 0; c < cols; c++ {
			if rows >= cols {
				dst[r*cols+c] = float32(q[c*m+r])
			} else {
				dst[r*cols+c] = float32(q[r*m+c])
			}
		}
	}
}

// Orthogonal draws a weight whose matrix (all dimensions but the last
// flattened, by the last) has orthonormal rows or columns, whichever are
// fewer: Keras's default for recurrent kernels.
func Orthogonal() Initializer { return orthogonalInit{} }
