package opencl

import (
	"testing"

	"github.com/tartanml/tartan/backend/conformance"
)

// TestConformance runs the backend conformance suite on every OpenCL device.
func TestConformance(t *testing.T) {
	for _, d := range openAll(t) {
		t.Run(d.Info().ID, func(t *testing.T) { conformance.Run(t, d) })
	}
}
