package cpu

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/tartanml/tartan/tile"
)

// specialValues are mixed into the random inputs of the vector-loop tests.
var specialValues = []float32{0, float32(math.Copysign(0, -1)), 1, -1, float32(math.Inf(1)), float32(math.Inf(-1)),
	float32(math.NaN()), math.MaxFloat32, math.SmallestNonzeroFloat32}

func randomLanes(rng *rand.Rand, n int) []float32 {
	v := make([]float32, n)
	for i := range v {
		if rng.IntN(4) == 0 {
			v[i] = specialValues[rng.IntN(len(specialValues))]
		} else {
			v[i] = float32(rng.NormFloat64())
		}
	}
	return v
}

// sameBits reports whether two float32 results agree: equal bits, or both
// NaN.
func sameFloat32(a, b float32) bool {
	return math.Float32bits(a) == math.Float32bits(b) || a != a && b != b
}

func sameFloat64(a, b float64) bool {
	return math.Float64bits(a) == math.Float64bits(b) || a != a && b != b
}

// TestVectorLoops checks the float32 lane loops (in assembly where the
// processor allows) against Go's own arithmetic, element by element, on
// lengths that exercise every remainder and on NaN, ±0 and infinities.
func TestVectorLoops(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	binary := []struct {
		fn   tile.Fn
		want func(a, b float32) float32
	}{
		{tile.Add, func(a, b float32) float32 { return a + b }},
		{tile.Sub, func(a, b float32) float32 { return a - b }},
		{tile.Mul, func(a, b float32) float32 { return a * b }},
		{tile.Div, func(a, b float32) float32 { return a / b }},
		{tile.Maximum, func(a, b float32) float32 { return max(a, b) }},
		{tile.Minimum, func(a, b float32) float32 { return min(a, b) }},
		{tile.Eq, func(a, b float32) float32 { return b2f32(a == b) }},
		{tile.Ne, func(a, b float32) float32 { return b2f32(a != b) }},
		{tile.Lt, func(a, b float32) float32 { return b2f32(a < b) }},
		{tile.Le, func(a, b float32) float32 { return b2f32(a <= b) }},
		{tile.Gt, func(a, b float32) float32 { return b2f32(a > b) }},
		{tile.Ge, func(a, b float32) float32 { return b2f32(a >= b) }},
		{tile.And, func(a, b float32) float32 { return b2f32(a != 0 && b != 0) }},
		{tile.Or, func(a, b float32) float32 { return b2f32(a != 0 || b != 0) }},
	}
	for _, n := range []int{1, 7, 8, 9, 31, 32, 33, 100, 1024} {
		a, b := randomLanes(rng, n), randomLanes(rng, n)
		for _, c := range binary {
			d := make([]float32, n)
			k := simdBinaryF(c.fn, d, a, b)
			if c.fn.IsComparison() {
				compareLanes(c.fn, d[k:], a[k:], b[k:])
			} else {
				binaryF(c.fn, d[k:], a[k:], b[k:])
			}
			for i := range d {
				if w := c.want(a[i], b[i]); !sameFloat32(d[i], w) {
					t.Errorf("%v n=%d element %d: %v(%v, %v) = %v, want %v", c.fn, n, i, c.fn, a[i], b[i], d[i], w)
					break
				}
			}
		}
		// Select on booleans.
		cond := make([]float32, n)
		for i := range cond {
			cond[i] = float32(rng.IntN(2))
		}
		d := make([]float32, n)
		k := simdSelectF(d, cond, a, b)
		selectF(d[k:], cond[k:], a[k:], b[k:])
		for i := range d {
			w := b[i]
			if cond[i] != 0 {
				w = a[i]
			}
			if !sameFloat32(d[i], w) {
				t.Errorf("select n=%d element %d: got %v, want %v", n, i, d[i], w)
				break
			}
		}
		// Square root.
		k = simdUnaryF(tile.Sqrt, d, a)
		unaryF(tile.Sqrt, d[k:], a[k:])
		for i := range d {
			if w := float32(math.Sqrt(float64(a[i]))); !sameFloat32(d[i], w) {
				t.Errorf("sqrt n=%d element %d: sqrt(%v) = %v, want %v", n, i, a[i], d[i], w)
				break
			}
		}
		// float64 to float32 as Go converts: rounding to nearest,
		// overflow to infinity, tiny values to subnormals or zero.
		wide := make([]float64, n)
		for i := range wide {
			wide[i] = float64(a[i]) * (1 + 1e-9*float64(i))
			switch i % 5 {
			case 1:
				wide[i] *= 1e39
			case 2:
				wide[i] *= 1e-42
			}
		}
		k = simdToF32(d, wide)
		for i, x := range wide[k:] {
			d[k+i] = float32(x)
		}
		for i, x := range wide {
			if w := float32(x); !sameFloat32(d[i], w) {
				t.Errorf("float32 n=%d element %d: of %v got %v, want %v", n, i, x, d[i], w)
				break
			}
		}
		// Negation and absolute value flip or clear the sign bit only
		// (signed zeros and NaNs included).
		for _, fn := range []tile.Fn{tile.Neg, tile.Abs} {
			k = simdUnaryF(fn, d, a)
			unaryF(fn, d[k:], a[k:])
			for i := range d {
				w := math.Float32bits(a[i]) ^ 1<<31
				if fn == tile.Abs {
					w = math.Float32bits(a[i]) &^ (1 << 31)
				}
				if math.Float32bits(d[i]) != w {
					t.Errorf("%v n=%d element %d: of %v got %v, want %v", fn, n, i, a[i], d[i], math.Float32frombits(w))
					break
				}
			}
		}
		// Maxima and minima into float32 accumulators.
		for _, agg := range []tile.Agg{tile.Max, tile.Min} {
			acc := randomLanes(rng, n)
			want := make([]float32, n)
			for i := range acc {
				want[i] = float32(aggOne(agg, float64(acc[i]), float64(a[i])))
			}
			aggregate32(agg, acc, a, nil, nil)
			for i := range acc {
				if !sameFloat32(acc[i], want[i]) {
					t.Errorf("aggregate32 %v n=%d element %d: got %v, want %v", agg, n, i, acc[i], want[i])
					break
				}
			}
		}
		// Masked maxima and minima, and clearing a mask where values are
		// not zero.
		mask := make([]bool, n)
		for i := range mask {
			mask[i] = rng.IntN(2) == 0
		}
		for _, agg := range []tile.Agg{tile.Max, tile.Min} {
			acc := randomLanes(rng, n)
			want := append([]float32(nil), acc...)
			for i := range want {
				if mask[i] {
					want[i] = float32(aggOne(agg, float64(want[i]), float64(a[i])))
				}
			}
			aggregate32(agg, acc, a, mask, make([]float32, n))
			for i := range acc {
				if !sameFloat32(acc[i], want[i]) {
					t.Errorf("masked aggregate32 %v n=%d element %d: got %v, want %v", agg, n, i, acc[i], want[i])
					break
				}
			}
		}
		ints := make([]float32, n)
		for i := range ints {
			ints[i] = float32(rng.IntN(3) - 1)
		}
		ints[0] = float32(math.Copysign(0, -1))
		got := append([]bool(nil), mask...)
		k = simdMaskZeroF32(got, ints)
		for i := k; i < n; i++ {
			got[i] = got[i] && ints[i] == 0
		}
		for i := range got {
			if want := mask[i] && ints[i] == 0; got[i] != want {
				t.Errorf("mask zero n=%d element %d: got %v, want %v", n, i, got[i], want)
				break
			}
		}
		// Aggregation into float64 accumulators.
		for _, agg := range []tile.Agg{tile.Sum, tile.Max, tile.Min} {
			acc := make([]float64, n)
			want := make([]float64, n)
			for i := range acc {
				acc[i] = float64(randomLanes(rng, 1)[0])
				want[i] = aggOne(agg, acc[i], float64(a[i]))
			}
			k := simdAggregateF(agg, acc, a)
			for i := k; i < n; i++ {
				acc[i] = aggOne(agg, acc[i], float64(a[i]))
			}
			for i := range acc {
				if !sameFloat64(acc[i], want[i]) {
					t.Errorf("aggregate %v n=%d element %d: got %v, want %v", agg, n, i, acc[i], want[i])
					break
				}
			}
		}
	}
}

// TestPhilox checks the block generator against tile.UniformAt, the
// definition every backend shares, at unaligned starts and lengths.
func TestPhilox(t *testing.T) {
	for _, c := range []struct {
		seed, stream uint64
		p0, n        int
	}{
		{0, 0, 0, 64}, {42, 1, 3, 37}, {1 << 40, 7, 1021, 1024}, {12345, 1<<33 + 5, 5, 1}, {9, 2, 1 << 33, 17},
	} {
		d := make([]float32, c.n)
		philoxFill(d, c.seed, c.stream, c.p0)
		for i, v := range d {
			if w := float32(tile.UniformAt(c.seed, c.stream, c.p0+i)); v != w {
				t.Errorf("seed %d stream %d position %d: got %v, want %v", c.seed, c.stream, c.p0+i, v, w)
				break
			}
		}
	}
}

// TestWindowAndBoolLoops checks the window executor's row loops and the
// boolean conversions (in assembly where the processor allows) against
// element-by-element Go written from their definitions, on lengths that
// exercise every remainder and on NaN, ±0, infinities and ties.
func TestWindowAndBoolLoops(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	// ReLU passes NaN, as PyTorch's does.
	relu := func(x float32) float32 {
		if x <= 0 {
			return 0
		}
		return x
	}
	tied := func(n int) []float32 {
		v := randomLanes(rng, n)
		for i := range v {
			if rng.IntN(2) == 0 {
				v[i] = float32(rng.IntN(3)) - 1
			}
		}
		return v
	}
	for n := 0; n <= 40; n++ {
		v, w := tied(n), tied(n)
		// ReLU and its aggregation.
		got := make([]float32, n)
		k := simdRelu(got, v)
		reluRow(got[k:], v[k:])
		for i := range got {
			if want := relu(v[i]); !sameFloat32(got[i], want) {
				t.Fatalf("relu n=%d lane %d: %v of %v, want %v", n, i, got[i], v[i], want)
			}
		}
		for _, a := range []tile.Agg{tile.Max, tile.Min} {
			acc := make([]float32, n)
			for i := range acc {
				acc[i] = relu(w[i])
			}
			k := simdReluAgg(a, acc, v)
			aggRow(a, acc[k:], v[k:], true)
			for i := range acc {
				want := max(relu(w[i]), relu(v[i]))
				if a == tile.Min {
					want = min(relu(w[i]), relu(v[i]))
				}
				if !sameFloat32(acc[i], want) {
					t.Fatalf("relu %v n=%d lane %d: %v, want %v", a, n, i, acc[i], want)
				}
			}
		}
		// First positions: lanes hold +Inf or a position; a NaN value
		// attains a NaN extremum.
		for _, r := range []bool{false, true} {
			ext := make([]float32, n)
			d := make([]float32, n)
			for i := range ext {
				ext[i] = v[i]
				if r {
					ext[i] = relu(v[i])
				}
				if rng.IntN(3) == 0 {
					ext[i] = w[i]
				}
				d[i] = float32(math.Inf(1))
				if rng.IntN(2) == 0 {
					d[i] = float32(1 + rng.IntN(4))
				}
			}
			p := float32(1 + rng.IntN(4))
			got := append([]float32(nil), d...)
			k := simdFirst(got, v, ext, p, r)
			firstRowInf(got[k:], v[k:], ext[k:], p, r)
			for i := range got {
				x, want := v[i], d[i]
				if r {
					x = relu(x)
				}
				if (x == ext[i] || math.IsNaN(float64(x)) && math.IsNaN(float64(ext[i]))) && p < want {
					want = p
				}
				if got[i] != want {
					t.Fatalf("first relu=%v n=%d lane %d: %v, want %v", r, n, i, got[i], want)
				}
			}
			before := append([]float32(nil), got...)
			k = simdInfToZero(got)
			for i, x := range got[k:] {
				if math.IsInf(float64(x), 1) {
					got[k+i] = 0
				}
			}
			for i, x := range got {
				want := before[i]
				if math.IsInf(float64(want), 1) {
					want = 0
				}
				if x != want {
					t.Fatalf("inf to zero n=%d lane %d: %v from %v, want %v", n, i, x, before[i], want)
				}
			}
		}
		// Routing.
		first := make([]float32, n)
		for i := range first {
			first[i] = float32(rng.IntN(3))
		}
		for _, withAct := range []bool{false, true} {
			var act []float32
			if withAct {
				act = w
			}
			got := make([]float32, n)
			k := simdRoute(got, act, first, v, 1)
			var rest []float32
			if act != nil {
				rest = act[k:]
			}
			routeRowAt(got[k:], rest, first[k:], v[k:], 1)
			for i := range got {
				want := v[i]
				if first[i] != 1 || withAct && w[i] <= 0 {
					want = 0
				}
				if !sameFloat32(got[i], want) {
					t.Fatalf("route act=%v n=%d lane %d: %v, want %v", withAct, n, i, got[i], want)
				}
			}
		}
		// Booleans.
		bs := make([]bool, n)
		for i := range bs {
			bs[i] = rng.IntN(2) == 0
		}
		f := make([]float32, n)
		boolsToF32(f, bs)
		back := make([]bool, n)
		k = simdF32ToBools(back, f)
		for i := k; i < n; i++ {
			back[i] = f[i] != 0
		}
		for i := range bs {
			if want := float32(b2f(bs[i])); f[i] != want || back[i] != bs[i] {
				t.Fatalf("booleans n=%d lane %d: %v → %v → %v", n, i, bs[i], f[i], back[i])
			}
		}
	}
}
