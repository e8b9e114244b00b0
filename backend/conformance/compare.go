package conformance

import (
	"fmt"
	"math"

	"github.com/tartanml/tartan/tile"
)

// The tolerance of floating-point results (see the package documentation).
const (
	relTol    = 1e-4
	floorFrac = 1e-3
	absTol    = 1e-6
)

// compare checks got against want, host slices of dtype dt.
func compare(dt tile.DType, got, want any) error {
	g, w := floats(got), floats(want)
	if len(g) != len(w) {
		return fmt.Errorf("%d elements, want %d", len(g), len(w))
	}
	if !dt.IsFloat() {
		for i := range w {
			if g[i] != w[i] {
				return fmt.Errorf("element %d: got %v, want %v", i, g[i], w[i])
			}
		}
		return nil
	}
	peak := 0.0
	for _, x := range w {
		if !math.IsInf(x, 0) && !math.IsNaN(x) {
			peak = math.Max(peak, math.Abs(x))
		}
	}
	for i := range w {
		a, b := g[i], w[i]
		if math.IsNaN(b) || math.IsInf(b, 0) {
			if !(math.IsNaN(a) && math.IsNaN(b)) && a != b {
				return fmt.Errorf("element %d: got %v, want %v", i, a, b)
			}
			continue
		}
		tol := relTol*math.Max(math.Abs(b), floorFrac*peak) + absTol
		d := math.Abs(a - b)
		if !(d <= tol) {
			return fmt.Errorf("element %d: got %v, want %v (difference %.3g, tolerance %.3g)", i, a, b, d, tol)
		}
	}
	return nil
}

// floats converts a host slice to float64.
func floats(v any) []float64 {
	switch d := v.(type) {
	case []float32:
		out := make([]float64, len(d))
		for i, x := range d {
			out[i] = float64(x)
		}
		return out
	case []float64:
		return d
	case []int32:
		out := make([]float64, len(d))
		for i, x := range d {
			out[i] = float64(x)
		}
		return out
	case []int64:
		out := make([]float64, len(d))
		for i, x := range d {
			out[i] = float64(x)
		}
		return out
	case []bool:
		out := make([]float64, len(d))
		for i, x := range d {
			if x {
				out[i] = 1
			}
		}
		return out
	}
	return nil
}
