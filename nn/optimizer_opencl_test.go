package nn

import (
	"encoding/json"
	"errors"
	"os"
	"testing"

	"github.com/tartanml/tartan/backend/opencl"
	"github.com/tartanml/tartan/backend/opencl/cl"
)

// TestOptimizersOnOpenCL runs the PyTorch golden cases of
// TestOptimizersMatchPyTorch, Lion's step and clipping of a zero gradient
// on every OpenCL device, whose kernels render the optimizers' powers,
// signs, maxima and divisions by a zero norm on their own.
func TestOptimizersOnOpenCL(t *testing.T) {
	cs, err := opencl.List()
	if errors.Is(err, cl.ErrNotAvailable) {
		t.Skipf("no OpenCL on this machine: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	if len(cs) == 0 {
		t.Skip("OpenCL platforms found but no devices")
	}
	raw, err := os.ReadFile("testdata/torch/optimizers.json")
	if err != nil {
		t.Fatal(err)
	}
	var golden goldenOptimizers
	if err := json.Unmarshal(raw, &golden); err != nil {
		t.Fatal(err)
	}
	for _, c := range cs {
		dev, err := opencl.OpenCandidate(c, opencl.WithCacheDir(t.TempDir()))
		if err != nil {
			t.Fatalf("opening %s: %v", c.ID, err)
		}
		t.Cleanup(func() { dev.Close() })
		for name, opt := range map[string]Optimizer{
			"nadam global_clipnorm": Nadam(0.01, GlobalClipNorm(2)),
			"adamax clipnorm":       Adamax(0.01, Epsilon(0), ClipNorm(1)),
			"adagrad clipvalue":     Adagrad(0.1, Epsilon(0), ClipValue(0.5)),
		} {
			t.Run(name+" on "+c.ID, func(t *testing.T) { goldenCase(t, &golden, golden.Cases[name], opt, dev) })
		}
		t.Run("zero gradient and lion on "+c.ID, func(t *testing.T) {
			for _, k := range []struct {
				opt          Optimizer
				kernel, want []float32
			}{
				{SGD(0.1, GlobalClipNorm(1)), []float32{0.5, 0.25}, []float32{0.5, 0.25}},
				{Lion(0.1), []float32{0.5, -0.25}, []float32{0.6, -0.15}},
			} {
				m := must(t)(Sequential("linear", Input(2), Dense(1, UseBias(false))))
				setWeight(t, m, "dense/kernel", []int{2, 1}, k.kernel...)
				if err := m.Compile(k.opt, MeanSquaredError(), OnDevice(dev)); err != nil {
					t.Fatal(err)
				}
				if _, err := m.Fit(samples(t, []float32{1, 2}, []int{2}, []float32{1}, []int{1}), BatchSize(1), quiet); err != nil {
					t.Fatal(err)
				}
				w := getWeight(t, m, "dense/kernel")
				for i := range w {
					if !closeTo(float64(w[i]), float64(k.want[i]), 1e-6) {
						t.Errorf("%s: kernel %v, want %v", k.opt.Name(), w, k.want)
						break
					}
				}
			}
		})
	}
}
