package cpu

import (
	"math"
	"os"
	"strconv"
	"testing"

	"github.com/tartanml/tartan/tile"
)

// ulps is the distance between two float32 values in units in the last
// place (the number of representable values between them).
func ulps(a, b float32) int64 {
	ord := func(x float32) int64 {
		i := int64(int32(math.Float32bits(x)))
		if i < 0 {
			i = math.MinInt32 - i
		}
		return i
	}
	d := ord(a) - ord(b)
	if d < 0 {
		d = -d
	}
	return d
}

// TestTranscendentalAccuracy compares the vector exp, erf and sigmoid with
// float64 math rounded to float32 over every 101st float32 of [-120, 120]
// (about 21 million values, every binade from the subnormals up; every 7th
// with TARTAN_TRANSCEND_STEP=7, which the bounds were measured with) and at
// the special values: an error of at most maxULP units in the last place,
// or at most 1e-38 where the exact value is that small (subnormal results,
// whose units are coarser in relative terms).
func TestTranscendentalAccuracy(t *testing.T) {
	if !simdTranscendF(tile.Exp, make([]float32, 1), make([]float32, 1)) {
		t.Skip("the vector transcendentals need AVX2 and FMA")
	}
	sigmoid := func(x float64) float64 { return 1 / (1 + math.Exp(-x)) }
	cases := []struct {
		fn     tile.Fn
		f      func(float64) float64
		maxULP int64
	}{
		{tile.Exp, math.Exp, 2},
		{tile.Erf, math.Erf, 3},
		{tile.Sigmoid, sigmoid, 3},
	}
	step := uint32(101)
	if testing.Short() {
		step = 997
	}
	if s, err := strconv.ParseUint(os.Getenv("TARTAN_TRANSCEND_STEP"), 10, 32); err == nil && s > 0 {
		step = uint32(s)
	}
	const chunk = 1 << 16
	for _, c := range cases {
		t.Run(c.fn.String(), func(t *testing.T) {
			in := make([]float32, 0, chunk)
			out := make([]float32, chunk)
			var worst int64
			var worstX float32
			check := func() {
				out = out[:len(in)]
				simdTranscendF(c.fn, out, in)
				for i, x := range in {
					want := float32(c.f(float64(x)))
					got := out[i]
					if math.IsNaN(float64(want)) != math.IsNaN(float64(got)) {
						t.Fatalf("%v(%g) = %g, want %g", c.fn, x, got, want)
					}
					if math.IsNaN(float64(want)) || got == want {
						continue
					}
					if math.Abs(float64(want)) < 1e-38 && math.Abs(float64(got-want)) <= 1e-38 {
						continue
					}
					if u := ulps(got, want); u > worst {
						worst, worstX = u, x
					}
				}
				in = in[:0]
			}
			// Every step-th bit pattern of the non-negative floats up to
			// 120, and their negations.
			for bits := uint32(0); ; bits += step {
				x := math.Float32frombits(bits)
				if x > 120 {
					break
				}
				in = append(in, x, -x)
				if len(in) >= chunk-1 {
					check()
				}
			}
			in = append(in, float32(math.Inf(1)), float32(math.Inf(-1)), float32(math.NaN()), 0, float32(math.Copysign(0, -1)),
				88.72283, 88.72284, -87.33654, -103.97, -103.98, 1, -1, 4, -4, 3.92, 1e-30, -1e-30, math.SmallestNonzeroFloat32)
			check()
			t.Logf("largest error %d ulp, at %g", worst, worstX)
			if worst > c.maxULP {
				t.Errorf("%v(%g) is %d units in the last place off, more than %d", c.fn, worstX, worst, c.maxULP)
			}
		})
	}
}

// TestTranscendentalRemainder checks that a lane's result does not depend
// on where it sits: the lanes after the last multiple of 8 equal the same
// values computed one at a time and inside a full vector.
func TestTranscendentalRemainder(t *testing.T) {
	if !simdTranscendF(tile.Exp, make([]float32, 1), make([]float32, 1)) {
		t.Skip("the vector transcendentals need AVX2 and FMA")
	}
	for _, fn := range []tile.Fn{tile.Exp, tile.Erf, tile.Sigmoid} {
		in := make([]float32, 13)
		for i := range in {
			in[i] = float32(i)*0.37 - 2.1
		}
		all := make([]float32, len(in))
		simdTranscendF(fn, all, in)
		for i, x := range in {
			one := make([]float32, 1)
			simdTranscendF(fn, one, []float32{x})
			if one[0] != all[i] {
				t.Errorf("%v(%g): %g in a block of 13, %g alone", fn, x, all[i], one[0])
			}
		}
	}
}
