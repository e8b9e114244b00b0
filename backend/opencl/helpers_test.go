package opencl

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"testing"

	"github.com/tartanml/tartan/backend"
	"github.com/tartanml/tartan/backend/opencl/cl"
	"github.com/tartanml/tartan/tile"
)

// testCacheDir is a binary cache shared by the tests of one run, so that
// configurations rendering the same source build once.
var testCacheDir string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "tartan-opencl-test-")
	if err == nil {
		testCacheDir = dir
	}
	code := m.Run()
	if dir != "" {
		os.RemoveAll(dir)
	}
	os.Exit(code)
}

// candidates returns every OpenCL device, or skips the test saying why
// there is none.
func candidates(t *testing.T) []Candidate {
	t.Helper()
	cs, err := List()
	if errors.Is(err, cl.ErrNotAvailable) {
		t.Skipf("no OpenCL on this machine: %v", err)
	}
	if err != nil {
		t.Fatalf("List: %v", err)
	}
	if len(cs) == 0 {
		t.Skip("OpenCL platforms found but no devices")
	}
	return cs
}

// openAll opens every OpenCL device with opts and closes them at the end of
// the test.
func openAll(t *testing.T, opts ...Option) []*Device {
	t.Helper()
	var out []*Device
	for _, c := range candidates(t) {
		d, err := OpenCandidate(c, append([]Option{WithCacheDir(testCacheDir)}, opts...)...)
		if err != nil {
			t.Fatalf("opening %s: %v", c.ID, err)
		}
		t.Cleanup(func() { d.Close() })
		out = append(out, d)
	}
	return out
}

// hostData returns a zero host slice for n elements of dt.
func hostData(dt tile.DType, n int) any {
	switch dt {
	case tile.Float64:
		return make([]float64, n)
	case tile.Int32:
		return make([]int32, n)
	case tile.Int64:
		return make([]int64, n)
	case tile.Bool:
		return make([]bool, n)
	}
	return make([]float32, n)
}

// gen describes the values of a test input.
type gen struct {
	kind     string // "normal", "positive", "int", "bool"
	lo, hi   int    // for "int": values in [lo, hi)
	scale    float64
	specials bool // sprinkle NaN and ±Inf
	huge     bool // sprinkle NaN and values beyond the int32 range
}

func normal() gen            { return gen{kind: "normal", scale: 1} }
func positive() gen          { return gen{kind: "positive", scale: 1} }
func ints(lo, hi int) gen    { return gen{kind: "int", lo: lo, hi: hi} }
func bools() gen             { return gen{kind: "bool"} }
func withSpecials(g gen) gen { g.specials = true; return g }

// make fills n values of dt.
func (g gen) make(r *rand.Rand, dt tile.DType, n int) any {
	v := make([]float64, n)
	for i := range v {
		switch g.kind {
		case "positive":
			v[i] = (0.1 + r.Float64()*2) * g.scale
		case "int":
			v[i] = float64(g.lo + r.IntN(g.hi-g.lo))
		case "bool":
			v[i] = float64(r.IntN(2))
		default:
			v[i] = r.NormFloat64() * g.scale
		}
		if g.specials && i%7 == 3 {
			v[i] = []float64{math.NaN(), math.Inf(1), math.Inf(-1)}[i%3]
		}
		if g.huge && i%5 == 2 {
			v[i] = []float64{math.NaN(), 3e9, -5e9}[i%3]
		}
	}
	out := hostData(dt, n)
	backend.FromFloat64(out, v)
	return out
}

// closeTo compares got against the reference want: exactly for integers
// and booleans; for floats within rtol of each value plus an absolute floor
// of atol times the largest reference magnitude (sums of many terms cancel),
// NaN matching NaN and infinities matching exactly.
func closeTo(got, want []float64, dt tile.DType, rtol, atol float64) error {
	if len(got) != len(want) {
		return fmt.Errorf("%d values, want %d", len(got), len(want))
	}
	scale := 0.0
	for _, w := range want {
		if !math.IsInf(w, 0) && !math.IsNaN(w) {
			scale = max(scale, math.Abs(w))
		}
	}
	bad, first := 0, ""
	for i := range got {
		g, w := got[i], want[i]
		ok := false
		switch {
		case math.IsNaN(w):
			ok = math.IsNaN(g)
		case math.IsInf(w, 0):
			ok = g == w
		case !dt.IsFloat():
			ok = g == w
		default:
			ok = math.Abs(g-w) <= rtol*math.Abs(w)+atol*max(scale, 1e-30)
		}
		if !ok {
			if bad == 0 {
				first = fmt.Sprintf("element %d: got %v, want %v", i, g, w)
			}
			bad++
		}
	}
	if bad > 0 {
		return fmt.Errorf("%d of %d elements differ; first %s", bad, len(got), first)
	}
	return nil
}
