package vulkan

import (
	"testing"

	"github.com/tartanml/tartan/backend/conformance"
)

// TestConformance runs the backend conformance suite on every Vulkan
// device, through the SPIR-V emitter; on a device whose storage is mapped
// (a CPU, an integrated GPU), also through staging buffers.
func TestConformance(t *testing.T) {
	cs, err := List()
	if err != nil || len(cs) == 0 {
		t.Skipf("no Vulkan device: %v", err)
	}
	for _, c := range cs {
		t.Run(c.ID, func(t *testing.T) {
			d, err := OpenCandidate(c, WithCacheDir(t.TempDir()))
			if err != nil {
				t.Fatal(err)
			}
			defer d.Close()
			conformance.Run(t, d)
			if d.direct {
				t.Run("staging", func(t *testing.T) {
					d, err := OpenCandidate(c, WithCacheDir(t.TempDir()), WithStaging())
					if err != nil {
						t.Fatal(err)
					}
					defer d.Close()
					conformance.Run(t, d)
				})
			}
		})
	}
}
