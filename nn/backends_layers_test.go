package nn

import (
	"errors"
	"testing"

	"github.com/tartanml/tartan/backend"
	"github.com/tartanml/tartan/backend/cpu"
	"github.com/tartanml/tartan/backend/opencl"
	"github.com/tartanml/tartan/backend/opencl/cl"
)

// conformanceDevices returns the compiled backends to check against the
// reference executor: the CPU backend and every OpenCL device this process
// reaches, with the reason when there is no OpenCL device.
func conformanceDevices(t *testing.T) (devs []backend.Device, noOpenCL string) {
	t.Helper()
	c := cpu.New()
	t.Cleanup(func() { c.Close() })
	devs = append(devs, c)
	cs, err := opencl.List()
	switch {
	case errors.Is(err, cl.ErrNotAvailable):
		return devs, "no OpenCL on this machine: " + err.Error()
	case err != nil:
		t.Fatal(err)
	case len(cs) == 0:
		return devs, "OpenCL platforms found but no devices"
	}
	for _, cand := range cs {
		d, err := opencl.OpenCandidate(cand, opencl.WithCacheDir(t.TempDir()))
		if err != nil {
			t.Fatalf("opening %s: %v", cand.ID, err)
		}
		t.Cleanup(func() { d.Close() })
		devs = append(devs, d)
	}
	return devs, ""
}

// TestLayersMoreOnBackends runs every case of layers_more.json, the layer's
// output and gradients with respect to the input and the weights, in one
// graph on the CPU backend and on every OpenCL device, and compares each
// with the reference executor's result and with PyTorch's, each within
// 1e-5 (float32 sums of a weight's gradient over a batch differ from the
// reference's in their order of addition). Without OpenCL it checks the CPU
// backend and says why OpenCL was left out.
func TestLayersMoreOnBackends(t *testing.T) {
	cases := loadLayersMore(t)
	devs, noOpenCL := conformanceDevices(t)
	if noOpenCL != "" {
		t.Log(noOpenCL + "; checking the CPU backend only")
	}
	want, err := runLayerCases(testDevice(), cases)
	if err != nil {
		t.Fatalf("reference: %v", err)
	}
	for _, dev := range devs {
		id := dev.Info().ID
		got, err := runLayerCases(dev, cases)
		if err != nil {
			t.Fatalf("%s: %v", id, err)
		}
		for i := range cases {
			c := &cases[i]
			t.Run(c.Name+" on "+id, func(t *testing.T) {
				ref := goldenParts(c, want[i])
				for k, p := range goldenParts(c, got[i]) {
					for j := range p.got {
						if !closeTo(float64(p.got[j]), float64(ref[k].got[j]), 1e-5) {
							t.Errorf("%s[%d] = %.8g, reference %.8g", p.what, j, p.got[j], ref[k].got[j])
							break
						}
					}
					compareGolden(t, p.what, p.got, p.golden, 1e-5)
				}
			})
		}
	}
}

// TestLayersOnOpenCL runs the golden cases of layers.json on every OpenCL
// device: each forward case through a model's Predict, as
// TestLayersMatchPyTorch does on the reference and CPU devices, and the SGD
// step of TestLayersTrainStepMatchesPyTorch, against PyTorch's values.
func TestLayersOnOpenCL(t *testing.T) {
	devs, noOpenCL := conformanceDevices(t)
	if noOpenCL != "" {
		t.Skip(noOpenCL)
	}
	g := loadLayerGolden(t)
	for _, dev := range devs[1:] {
		id := dev.Info().ID
		for _, c := range g.Cases {
			t.Run(c.Name+" on "+id, func(t *testing.T) {
				layers, ok := goldenLayers[c.Name]
				if !ok {
					t.Fatalf("no layers for case %q", c.Name)
				}
				in := c.X.Shape[1:]
				m := must(t)(Sequential("m", Input(in...), layers()...))
				for name, w := range c.Weights {
					setWeight(t, m, name, w.Shape, w.float32s()...)
				}
				if err := m.SetDevice(dev); err != nil {
					t.Fatal(err)
				}
				out, err := m.Predict(samples(t, c.X.float32s(), in, nil, nil), quiet)
				if err != nil {
					t.Fatal(err)
				}
				if !slicesEqual(out.Shape, c.Output.Shape) {
					t.Fatalf("output shape %v, PyTorch %v", out.Shape, c.Output.Shape)
				}
				compareGolden(t, "output", out.Data, c.Output.Data, 1e-5)
			})
		}
		t.Run("train step on "+id, func(t *testing.T) { trainStepMatches(t, dev) })
	}
}
