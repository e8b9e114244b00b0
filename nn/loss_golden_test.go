package nn

import (
	"encoding/json"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/tartanml/tartan/grad"
	"github.com/tartanml/tartan/op"
	"github.com/tartanml/tartan/tile"
)

// goldenLoss builds the loss a case of testdata/torch/losses names:
// "huber:DELTA", "NAME", or "NAME:logits|probs:SMOOTHING" for the
// cross-entropies.
func goldenLoss(t *testing.T, spec string) *loss {
	t.Helper()
	parts := strings.Split(spec, ":")
	var l Loss
	switch {
	case parts[0] == "huber":
		d, err := strconv.ParseFloat(parts[1], 64)
		if err != nil {
			t.Fatal(err)
		}
		l = Huber(Delta(d))
	case len(parts) == 3:
		s, err := strconv.ParseFloat(parts[2], 64)
		if err != nil {
			t.Fatal(err)
		}
		opts := []LossOption{LabelSmoothing(s)}
		if parts[1] == "logits" {
			opts = append(opts, FromLogits())
		}
		if parts[0] == "binary_crossentropy" {
			l = BinaryCrossentropy(opts...)
		} else {
			l = CategoricalCrossentropy(opts...)
		}
	default:
		var err error
		if l, err = LossByName(parts[0]); err != nil {
			t.Fatal(err)
		}
	}
	if l.err() != nil {
		t.Fatal(l.err())
	}
	return l.(*loss)
}

// TestLossesMatchPyTorch checks every loss's value and gradient with
// respect to the predictions against PyTorch's float64 autograd
// (testdata/torch/gen_losses.py), through both the loss value the
// training step uses and the mean of the per-sample losses that sample
// weights scale.
func TestLossesMatchPyTorch(t *testing.T) {
	raw, err := os.ReadFile("testdata/torch/losses/losses.json")
	if err != nil {
		t.Fatal(err)
	}
	var golden struct {
		Cases []struct {
			Name       string
			LossGo     string `json:"loss_go"`
			Shape      []int
			Y, P, Grad []float64
			Loss       float64
		}
	}
	if err := json.Unmarshal(raw, &golden); err != nil {
		t.Fatal(err)
	}
	if len(golden.Cases) < 19 {
		t.Fatalf("%d golden cases, want 19", len(golden.Cases))
	}
	f32 := func(v []float64) []float32 {
		out := make([]float32, len(v))
		for i, x := range v {
			out[i] = float32(x)
		}
		return out
	}
	dev := testDevice()
	for _, c := range golden.Cases {
		for _, path := range []string{"value", "per sample"} {
			t.Run(c.Name+"/"+path, func(t *testing.T) {
				l := goldenLoss(t, c.LossGo)
				g := tile.NewGraph("golden")
				y := g.Input("y", tile.Float32, tile.Shape(c.Shape))
				p := g.Input("p", tile.Float32, tile.Shape(c.Shape))
				var v *tile.Tensor
				if path == "value" {
					v = l.value(g, y, p, nil)
				} else {
					v = op.Mean(g, l.perSample(g, y, p, nil), nil, false)
				}
				grads, err := grad.Grad(g, v, p)
				if err != nil {
					t.Fatal(err)
				}
				g.SetOutput("loss", v)
				g.SetOutput("grad", grads[0])
				if err := g.Err(); err != nil {
					t.Fatal(err)
				}
				exe, err := dev.Compile(g)
				if err != nil {
					t.Fatal(err)
				}
				defer exe.Close()
				if err := exe.SetInput("y", f32(c.Y)); err != nil {
					t.Fatal(err)
				}
				if err := exe.SetInput("p", f32(c.P)); err != nil {
					t.Fatal(err)
				}
				if err := exe.Run(); err != nil {
					t.Fatal(err)
				}
				got := make([]float32, 1)
				gg := make([]float32, len(c.Grad))
				if err := exe.ReadOutput("loss", got); err != nil {
					t.Fatal(err)
				}
				if err := exe.ReadOutput("grad", gg); err != nil {
					t.Fatal(err)
				}
				if !closeTo(float64(got[0]), c.Loss, 2e-6) {
					t.Errorf("loss %.8f, PyTorch %.8f", got[0], c.Loss)
				}
				for i, want := range c.Grad {
					if !closeTo(float64(gg[i]), want, 2e-6) {
						t.Errorf("gradient %d: %.8g, PyTorch %.8g", i, gg[i], want)
					}
				}
			})
		}
	}
}
