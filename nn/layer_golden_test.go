package nn

import (
	"encoding/json"
	"math"
	"os"
	"testing"

	"github.com/tartanml/tartan/backend"
	"github.com/tartanml/tartan/backend/cpu"
)

// goldenDevices are the devices the golden layer tests run on: the
// reference executor and the compiled CPU backend.
func goldenDevices(t *testing.T) map[string]backend.Device {
	dev := cpu.New()
	t.Cleanup(func() { dev.Close() })
	return map[string]backend.Device{"reference": testDevice(), "cpu": dev}
}

// Golden tests of Conv1DTranspose, Conv2DTranspose, SeparableConv2D and UpSampling2D against
// PyTorch's modules: testdata/torch/layers.json, written by
// testdata/torch/gen_layers.py (see its docstring for the layouts).

type goldenTensor struct {
	Shape []int     `json:"shape"`
	Data  []float64 `json:"data"`
}

func (g goldenTensor) float32s() []float32 {
	out := make([]float32, len(g.Data))
	for i, v := range g.Data {
		out[i] = float32(v)
	}
	return out
}

type layerGolden struct {
	Cases []struct {
		Name    string                  `json:"name"`
		X       goldenTensor            `json:"x"`
		Weights map[string]goldenTensor `json:"weights"`
		Output  goldenTensor            `json:"output"`
	} `json:"cases"`
	Train struct {
		X       goldenTensor            `json:"x"`
		Target  goldenTensor            `json:"target"`
		Loss    float64                 `json:"loss"`
		Weights map[string]goldenTensor `json:"weights"`
		After   map[string]goldenTensor `json:"after"`
	} `json:"train"`
}

func loadLayerGolden(t *testing.T) *layerGolden {
	t.Helper()
	raw, err := os.ReadFile("testdata/torch/layers.json")
	if err != nil {
		t.Fatal(err)
	}
	var g layerGolden
	if err := json.Unmarshal(raw, &g); err != nil {
		t.Fatal(err)
	}
	return &g
}

// goldenLayers are the layers of each forward case, as gen_layers.py builds
// them in PyTorch.
var goldenLayers = map[string]func() []Layer{
	"conv2d_transpose_same_k4_s2_relu": func() []Layer {
		return []Layer{Conv2DTranspose(4, 4, Strides(2), Padding("same"), Activation("relu"))}
	},
	"conv2d_transpose_valid_k3_s2_op1": func() []Layer { return []Layer{Conv2DTranspose(2, 3, Strides(2), OutputPadding(1))} },
	"conv2d_transpose_same_k3_s1_nobias": func() []Layer {
		return []Layer{Conv2DTranspose(3, 3, Padding("same"), UseBias(false))}
	},
	"conv2d_transpose_same_k3_s2": func() []Layer { return []Layer{Conv2DTranspose(2, 3, Strides(2), Padding("same"))} },
	"conv1d_transpose_valid_k4_s2_op1_tanh": func() []Layer {
		return []Layer{Conv1DTranspose(2, 4, Strides(2), OutputPadding(1), Activation("tanh"))}
	},
	"separable_conv2d_same_k3_m2": func() []Layer {
		return []Layer{SeparableConv2D(4, 3, DepthMultiplier(2), Padding("same"))}
	},
	"up_sampling2d_bilinear_2x3": func() []Layer { return []Layer{UpSampling2D([]int{2, 3}, Interpolation("bilinear"))} },
}

// goldenTrainLayers is the model of gen_layers.py's training step.
func goldenTrainLayers() []Layer {
	return []Layer{Conv2DTranspose(3, 3, Strides(2), Padding("same"), Activation("tanh")), SeparableConv2D(2, 3, Padding("same")),
		UpSampling2D(nil, Interpolation("bilinear")), ZeroPadding2D(nil), Cropping2D([]int{2}), Rescaling(0.5, 0.25)}
}

// TestLayersMatchPyTorch runs each golden case's layer in inference on the
// reference and CPU devices, with PyTorch's weights, and compares the outputs with
// PyTorch's (computed in float64 from the same float32 values).
func TestLayersMatchPyTorch(t *testing.T) {
	g := loadLayerGolden(t)
	if len(g.Cases) != len(goldenLayers) {
		t.Errorf("%d golden cases for %d layer sets", len(g.Cases), len(goldenLayers))
	}
	for _, c := range g.Cases {
		for devName, dev := range goldenDevices(t) {
			t.Run(c.Name+"/"+devName, func(t *testing.T) {
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
				if want := c.Output.Shape; !slicesEqual(out.Shape, want) {
					t.Fatalf("output shape %v, PyTorch %v", out.Shape, want)
				}
				for i, want := range c.Output.Data {
					if !closeTo(float64(out.Data[i]), want, 1e-5) {
						t.Fatalf("output %d = %v, PyTorch %v", i, out.Data[i], want)
					}
				}
			})
		}
	}
}

// TestLayersTrainStepMatchesPyTorch takes one SGD step (learning rate 0.1,
// mean squared error) through Conv2DTranspose, SeparableConv2D,
// UpSampling2D, ZeroPadding2D, Cropping2D and Rescaling, and compares the
// loss and every updated weight with PyTorch's step, which checks the
// layers' gradients end to end, on the reference and CPU devices.
func TestLayersTrainStepMatchesPyTorch(t *testing.T) {
	for devName, dev := range goldenDevices(t) {
		t.Run(devName, func(t *testing.T) { trainStepMatches(t, dev) })
	}
}

func trainStepMatches(t *testing.T, dev backend.Device) {
	tr := loadLayerGolden(t).Train
	in := tr.X.Shape[1:]
	m := must(t)(Sequential("m", Input(in...), goldenTrainLayers()...))
	for name, w := range tr.Weights {
		setWeight(t, m, name, w.Shape, w.float32s()...)
	}
	if err := m.Compile(SGD(0.1), MeanSquaredError(), OnDevice(dev)); err != nil {
		t.Fatal(err)
	}
	n := tr.X.Shape[0]
	h, err := m.Fit(samples(t, tr.X.float32s(), in, tr.Target.float32s(), tr.Target.Shape[1:]), BatchSize(n), Shuffle(false), quiet)
	if err != nil {
		t.Fatal(err)
	}
	if got := h.Metrics["loss"][0]; !closeTo(got, tr.Loss, 1e-5) {
		t.Errorf("loss %v, PyTorch %v", got, tr.Loss)
	}
	for name, want := range tr.After {
		got := getWeight(t, m, name)
		worst := 0.0
		for i, v := range want.Data {
			worst = max(worst, math.Abs(float64(got[i])-v))
		}
		if worst > 1e-5 {
			t.Errorf("%s after the step differs from PyTorch's by up to %.3g", name, worst)
		}
	}
}

func slicesEqual(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
