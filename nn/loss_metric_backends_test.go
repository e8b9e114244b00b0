package nn

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"testing"

	"github.com/tartanml/tartan/backend"
	"github.com/tartanml/tartan/grad"
	"github.com/tartanml/tartan/op"
	"github.com/tartanml/tartan/tile"
)

// lossGoldenCase is a case of testdata/torch/losses/losses.json.
type lossGoldenCase struct {
	Name       string
	LossGo     string `json:"loss_go"`
	Shape      []int
	Y, P, Grad []float64
	Loss       float64
}

func loadLossGolden(t *testing.T) []lossGoldenCase {
	t.Helper()
	raw, err := os.ReadFile("testdata/torch/losses/losses.json")
	if err != nil {
		t.Fatal(err)
	}
	var golden struct{ Cases []lossGoldenCase }
	if err := json.Unmarshal(raw, &golden); err != nil {
		t.Fatal(err)
	}
	if len(golden.Cases) < 19 {
		t.Fatalf("%d golden cases, want 19", len(golden.Cases))
	}
	return golden.Cases
}

// lossGraph adds a loss case to g in dtype: inputs prefix+"y" and
// prefix+"p", outputs prefix+"loss" and prefix+"grad" (its gradient with
// respect to p); the loss is the training step's value, or the mean of the
// per-sample losses when perSample is set. It returns the loss and p.
func lossGraph(t *testing.T, g *tile.Graph, c *lossGoldenCase, dtype tile.DType, prefix string, perSample bool) (v, p *tile.Tensor) {
	t.Helper()
	l := goldenLoss(t, c.LossGo)
	y := g.Input(prefix+"y", dtype, tile.Shape(c.Shape))
	p = g.Input(prefix+"p", dtype, tile.Shape(c.Shape))
	if perSample {
		v = op.Mean(g, l.perSample(g, y, p, nil), nil, false)
	} else {
		v = l.value(g, y, p, nil)
	}
	grads, err := grad.Grad(g, v, p)
	if err != nil {
		t.Fatal(err)
	}
	g.SetOutput(prefix+"loss", v)
	g.SetOutput(prefix+"grad", grads[0])
	return v, p
}

// lossResults runs every loss case, both paths, in one float32 graph on dev
// and returns the loss and gradient of each, indexed by case and path.
func lossResults(t *testing.T, dev backend.Device, cases []lossGoldenCase) [][2]layerResult {
	t.Helper()
	g := tile.NewGraph("golden_losses")
	for i := range cases {
		for k := range 2 {
			lossGraph(t, g, &cases[i], tile.Float32, fmt.Sprintf("c%d_%d_", i, k), k == 1)
		}
	}
	if err := g.Err(); err != nil {
		t.Fatal(err)
	}
	exe, err := dev.Compile(g)
	if err != nil {
		t.Fatalf("%s: %v", dev.Info().ID, err)
	}
	defer exe.Close()
	f32 := func(v []float64) []float32 {
		out := make([]float32, len(v))
		for i, x := range v {
			out[i] = float32(x)
		}
		return out
	}
	for i, c := range cases {
		for k := range 2 {
			pre := fmt.Sprintf("c%d_%d_", i, k)
			if err := exe.SetInput(pre+"y", f32(c.Y)); err != nil {
				t.Fatal(err)
			}
			if err := exe.SetInput(pre+"p", f32(c.P)); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := exe.Run(); err != nil {
		t.Fatalf("%s: %v", dev.Info().ID, err)
	}
	out := make([][2]layerResult, len(cases))
	for i, c := range cases {
		for k := range 2 {
			pre := fmt.Sprintf("c%d_%d_", i, k)
			r := layerResult{y: make([]float32, 1), dx: make([]float32, len(c.Grad))}
			if err := exe.ReadOutput(pre+"loss", r.y); err != nil {
				t.Fatal(err)
			}
			if err := exe.ReadOutput(pre+"grad", r.dx); err != nil {
				t.Fatal(err)
			}
			out[i][k] = r
		}
	}
	return out
}

// TestLossesOnBackends computes every case of losses.json, the loss and its
// gradient with respect to the predictions through both the training
// step's value and the mean of the per-sample losses, on the CPU backend
// and every OpenCL device, and compares each with the reference executor
// and with PyTorch, each within 1e-5.
func TestLossesOnBackends(t *testing.T) {
	cases := loadLossGolden(t)
	devs, noOpenCL := conformanceDevices(t)
	if noOpenCL != "" {
		t.Log(noOpenCL + "; checking the CPU backend only")
	}
	want := lossResults(t, testDevice(), cases)
	for _, dev := range devs {
		id := dev.Info().ID
		got := lossResults(t, dev, cases)
		for i := range cases {
			c := &cases[i]
			for k, path := range []string{"value", "per sample"} {
				t.Run(c.Name+"/"+path+" on "+id, func(t *testing.T) {
					g, w := got[i][k], want[i][k]
					if !closeTo(float64(g.y[0]), float64(w.y[0]), 1e-5) {
						t.Errorf("loss %.8g, reference %.8g", g.y[0], w.y[0])
					}
					if !closeTo(float64(g.y[0]), c.Loss, 1e-5) {
						t.Errorf("loss %.8g, PyTorch %.8g", g.y[0], c.Loss)
					}
					for j := range w.dx {
						if !closeTo(float64(g.dx[j]), float64(w.dx[j]), 1e-5) {
							t.Errorf("gradient[%d] = %.8g, reference %.8g", j, g.dx[j], w.dx[j])
							break
						}
					}
					compareGolden(t, "gradient", g.dx, c.Grad, 1e-5)
				})
			}
		}
	}
}

// TestLossesGradientCheck checks the gradient of every loss case (both
// paths) in float64 against central finite differences at the case's
// predictions. The Kullback-Leibler case holds a prediction of 0, clipped
// to 1e-7, closer to the clip's kink than grad.Check's default step: its
// differences take steps of 1e-8, which stay inside the clipped region.
func TestLossesGradientCheck(t *testing.T) {
	for _, c := range loadLossGolden(t) {
		for k, path := range []string{"value", "per sample"} {
			t.Run(c.Name+"/"+path, func(t *testing.T) {
				g := tile.NewGraph("loss_check")
				v, p := lossGraph(t, g, &c, tile.Float64, "", k == 1)
				if err := g.Err(); err != nil {
					t.Fatal(err)
				}
				feeds := map[string]*tile.Value{}
				for name, data := range map[string][]float64{"y": c.Y, "p": c.P} {
					val, err := tile.ValueOf(tile.Float64, tile.Shape(c.Shape), data)
					if err != nil {
						t.Fatal(err)
					}
					feeds[name] = val
				}
				step := grad.DefaultStep
				if c.LossGo == "kl_divergence" {
					step = 1e-8
				}
				maxErr, where, err := grad.Check(g, v, []*tile.Tensor{p}, feeds, nil, grad.WithStep(step))
				if err != nil {
					t.Fatal(err)
				}
				if maxErr > 1e-6 || math.IsNaN(maxErr) {
					t.Errorf("gradient error %g at %s", maxErr, where)
				}
			})
		}
	}
}

// TestConfusionMetricsOnBackends evaluates the Precision, Recall and AUC
// cases of testdata/metrics/metrics.json (as TestConfusionMetricsMatchGolden
// does, in batches of 5 and of all 37 samples) on the CPU backend and every
// OpenCL device, against the golden values.
func TestConfusionMetricsOnBackends(t *testing.T) {
	gold := readMetricsGolden(t)
	devs, noOpenCL := conformanceDevices(t)
	if noOpenCL != "" {
		t.Log(noOpenCL + "; checking the CPU backend only")
	}
	build := func(logits bool) ([]Metric, map[string]float64) {
		var ms []Metric
		want := map[string]float64{}
		for i, c := range gold.Cases {
			if c.Logits != logits {
				continue
			}
			name := fmt.Sprintf("m%d", i)
			var m Metric
			switch c.Metric {
			case "auc":
				opts := []MetricOption{MetricName(name), NumThresholds(c.NumThresholds), Curve(c.Curve), SummationMethod(c.Summation)}
				if c.Logits {
					opts = append(opts, FromLogits())
				}
				m = AUC(opts...)
			case "precision", "recall":
				opts := []MetricOption{MetricName(name), Threshold(c.Threshold)}
				if c.ClassID >= 0 {
					opts = append(opts, ClassID(c.ClassID))
				}
				if c.Metric == "precision" {
					m = Precision(opts...)
				} else {
					m = Recall(opts...)
				}
			default:
				t.Fatalf("case %d: unknown metric %q", i, c.Metric)
			}
			ms = append(ms, m)
			want[name] = c.Value
		}
		return ms, want
	}
	for _, dev := range devs {
		for _, logits := range []bool{false, true} {
			for _, batch := range []int{5, 37} {
				t.Run(fmt.Sprintf("logits %v batch %d on %s", logits, batch, dev.Info().ID), func(t *testing.T) {
					ms, want := build(logits)
					loss, p := BinaryCrossentropy(), gold.P
					if logits {
						loss, p = BinaryCrossentropy(FromLogits()), gold.Logits
					}
					m := must(t)(Sequential("m", Input(3), Activation("linear")))
					if err := m.Compile(SGD(0.1), loss, WithMetrics(ms...), OnDevice(dev)); err != nil {
						t.Fatal(err)
					}
					logs, err := m.Evaluate(samples(t, p, []int{3}, gold.Y, []int{3}), BatchSize(batch), quiet)
					if err != nil {
						t.Fatal(err)
					}
					for _, mm := range ms {
						if got := logs[mm.Name()]; !closeTo(got, want[mm.Name()], 1e-6) {
							t.Errorf("%s = %.9f, golden %.9f", mm.Name(), got, want[mm.Name()])
						}
					}
				})
			}
		}
	}
}
