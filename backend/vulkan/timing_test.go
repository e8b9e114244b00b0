package vulkan_test

import (
	"os"
	"testing"
	"time"

	"github.com/tartanml/tartan/backend/vulkan"
	"github.com/tartanml/tartan/bench"
	"github.com/tartanml/tartan/op"
	"github.com/tartanml/tartan/tile"
)

// TestTiming prints the time of a 512×512×512 product and of a small
// ResNet-20 training step on the first Vulkan device when
// TARTAN_VULKAN_TIMING is set (a measurement, not a check).
func TestTiming(t *testing.T) {
	if os.Getenv("TARTAN_VULKAN_TIMING") == "" {
		t.Skip("set TARTAN_VULKAN_TIMING to measure")
	}
	d, err := vulkan.Open("vulkan:0", vulkan.WithCacheDir(""))
	if err != nil {
		t.Skip(err)
	}
	defer d.Close()
	g := tile.NewGraph("mm512")
	a := g.Input("a", tile.Float32, tile.Shape{512, 512})
	b := g.Input("b", tile.Float32, tile.Shape{512, 512})
	g.SetOutput("c", op.MatMul(g, a, b))
	x, err := d.Compile(g)
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	ones := make([]float32, 512*512)
	for i := range ones {
		ones[i] = 1
	}
	x.SetInput("a", ones)
	x.SetInput("b", ones)
	best := func(n int, f func() error) time.Duration {
		var min time.Duration
		for i := range n + 1 {
			start := time.Now()
			if err := f(); err != nil {
				t.Fatal(err)
			}
			if d := time.Since(start); i > 0 && (min == 0 || d < min) {
				min = d
			}
		}
		return min
	}
	mm := best(5, func() error {
		if err := x.Run(); err != nil {
			return err
		}
		return x.(*vulkan.Executable).Finish()
	})
	t.Logf("512×512×512 product: %v", mm)
	es, err := bench.Select([]string{"resnet20"}, false)
	if err != nil {
		t.Fatal(err)
	}
	step, err := es[0].Build(d, bench.Config{Tiny: os.Getenv("TARTAN_VULKAN_TIMING") == "tiny", Batch: 16, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer step.Close()
	st := best(3, func() error { _, err := step.Run(); return err })
	t.Logf("resnet20 step (tiny: %v), batch 16: %v", os.Getenv("TARTAN_VULKAN_TIMING") == "tiny", st)
}
