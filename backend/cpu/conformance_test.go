package cpu

import (
	"fmt"
	"testing"

	"github.com/tartanml/tartan/backend/conformance"
)

// TestConformance runs the backend conformance suite on the CPU device, with
// its default number of workers and with three (more than this machine may
// have cores, so that work is split unevenly).
func TestConformance(t *testing.T) {
	for _, workers := range []int{0, 3} {
		opts := []Option{Cache(false)}
		if workers > 0 {
			opts = append(opts, Workers(workers))
		}
		d := New(opts...)
		t.Run(fmt.Sprintf("workers=%d", d.Info().ComputeUnits), func(t *testing.T) { conformance.Run(t, d) })
		d.Close()
	}
}
