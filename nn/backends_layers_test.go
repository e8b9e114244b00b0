package nn

import (
	"errors"
	"fmt"
	"testing"

	"github.com/tartanml/tartan/backend"
	"github.com/tartanml/tartan/backend/cpu"
	"github.com/tartanml/tartan/backend/opencl"
	"github.com/tartanml/tartan/backend/opencl/cl"
	"github.com/tartanml/tartan/tile"
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

// layerResult is a case's output and input gradient on one device.
type layerResult struct{ y, dx []float32 }

// runAllLayerCases runs every golden case in one float32 graph on dev (one
// compilation instead of one per case) and returns each case's results.
func runAllLayerCases(dev backend.Device, cases []layerMoreCase) ([]layerResult, error) {
	g := tile.NewGraph("golden_layers_more")
	for i := range cases {
		if _, _, err := addLayerCase(g, &cases[i], tile.Float32, fmt.Sprintf("c%d_", i)); err != nil {
			return nil, fmt.Errorf("case %s: %w", cases[i].Name, err)
		}
	}
	if err := g.Err(); err != nil {
		return nil, err
	}
	exe, err := dev.Compile(g)
	if err != nil {
		return nil, err
	}
	defer exe.Close()
	for i, c := range cases {
		if err := exe.SetInput(fmt.Sprintf("c%d_x", i), c.X.float32s()); err != nil {
			return nil, err
		}
	}
	if err := exe.Run(); err != nil {
		return nil, err
	}
	out := make([]layerResult, len(cases))
	for i, c := range cases {
		r := layerResult{make([]float32, len(c.Output.Data)), make([]float32, len(c.GradX.Data))}
		if err := exe.ReadOutput(fmt.Sprintf("c%d_y", i), r.y); err != nil {
			return nil, err
		}
		if err := exe.ReadOutput(fmt.Sprintf("c%d_dx", i), r.dx); err != nil {
			return nil, err
		}
		out[i] = r
	}
	return out, nil
}

// TestLayersMoreOnBackends runs every case of layers_more.json, the layer's
// output and input gradient, on the CPU backend and on every OpenCL device,
// and compares each with the reference executor's result within 2e-6 and
// with PyTorch's within 1e-5. Without OpenCL it checks the CPU backend and
// says why OpenCL was left out.
func TestLayersMoreOnBackends(t *testing.T) {
	cases := loadLayersMore(t)
	devs, noOpenCL := conformanceDevices(t)
	if noOpenCL != "" {
		t.Log(noOpenCL + "; checking the CPU backend only")
	}
	want, err := runAllLayerCases(testDevice(), cases)
	if err != nil {
		t.Fatalf("reference: %v", err)
	}
	for _, dev := range devs {
		id := dev.Info().ID
		got, err := runAllLayerCases(dev, cases)
		if err != nil {
			t.Fatalf("%s: %v", id, err)
		}
		for i := range cases {
			c := &cases[i]
			t.Run(c.Name+" on "+id, func(t *testing.T) {
				for _, o := range []struct {
					what      string
					got, want []float32
					golden    []float64
				}{{"output", got[i].y, want[i].y, c.Output.Data}, {"gradient", got[i].dx, want[i].dx, c.GradX.Data}} {
					for j := range o.want {
						if !closeTo(float64(o.got[j]), float64(o.want[j]), 2e-6) {
							t.Errorf("%s[%d] = %.8g, reference %.8g", o.what, j, o.got[j], o.want[j])
							break
						}
					}
					compareGolden(t, o.what, o.got, o.golden, 1e-5)
				}
			})
		}
	}
}
