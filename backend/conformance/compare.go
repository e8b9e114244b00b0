package conformance

import (
	"fmt"
	"math"

	"github.com/tartanml/tartan/backend"
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
	g, w := backend.ToFloat64(got), backend.ToFloat64(want)
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
