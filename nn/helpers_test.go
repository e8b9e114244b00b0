package nn

import (
	"io"
	"math"
	"testing"

	"github.com/tartanml/tartan/backend"
	"github.com/tartanml/tartan/backend/reference"
)

// testDevice is the device the tests run on: the exact reference executor,
// whose results every backend is checked against.
func testDevice() backend.Device { return reference.New() }

// must fails the test on a model-building error.
func must(t *testing.T) func(*Model, error) *Model {
	return func(m *Model, err error) *Model {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
}

// samples returns Samples over inputs x of per-sample shape in and targets
// y of per-sample shape out.
func samples(t *testing.T, x []float32, in []int, y []float32, out []int) Samples {
	t.Helper()
	per := 1
	for _, d := range in {
		per *= d
	}
	n := len(x) / per
	xa, err := NewArray(x, append([]int{n}, in...)...)
	if err != nil {
		t.Fatal(err)
	}
	var ya *Array
	if y != nil {
		if ya, err = NewArray(y, append([]int{n}, out...)...); err != nil {
			t.Fatal(err)
		}
	}
	s, err := FromArrays(xa, ya)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// setWeight sets a weight or fails the test.
func setWeight(t *testing.T, m *Model, name string, shape []int, v ...float32) {
	t.Helper()
	a, err := NewArray(v, shape...)
	if err != nil {
		t.Fatal(err)
	}
	if err := m.SetWeight(name, a); err != nil {
		t.Fatal(err)
	}
}

// getWeight returns a weight's values or fails the test.
func getWeight(t *testing.T, m *Model, name string) []float32 {
	t.Helper()
	a, err := m.GetWeight(name)
	if err != nil {
		t.Fatal(err)
	}
	return a.Data
}

// close reports whether a and b agree within rel relative error, with an
// absolute floor of rel for values near zero.
func closeTo(a, b, rel float64) bool {
	return math.Abs(a-b) <= rel*math.Max(1, math.Max(math.Abs(a), math.Abs(b)))
}

// quiet sends Fit's progress output and warnings nowhere.
var quiet = Progress(io.Discard)
