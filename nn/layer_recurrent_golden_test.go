package nn

import (
	"encoding/json"
	"math"
	"os"
	"testing"

	"github.com/tartanml/tartan/backend"
)

// Golden tests of SimpleRNN, LSTM, GRU, Bidirectional and Masking against
// PyTorch's modules: testdata/torch/recurrent.json, written by
// testdata/torch/gen_recurrent.py (see its docstring for the layouts).

type recurrentGolden struct {
	Cases []recurrentCase `json:"cases"`
}

type recurrentCase struct {
	Name        string                  `json:"name"`
	X           goldenTensor            `json:"x"`
	Target      goldenTensor            `json:"target"`
	Output      goldenTensor            `json:"output"`
	Loss        float64                 `json:"loss"`
	InputGrad   goldenTensor            `json:"input_grad"`
	Weights     map[string]goldenTensor `json:"weights"`
	WeightGrads map[string]goldenTensor `json:"weight_grads"`
}

// goldenRecurrentLayers are the layers of each case, as gen_recurrent.py
// builds them in PyTorch.
var goldenRecurrentLayers = layerMakers{
	"lstm_last":                {func() Layer { return LSTM(3) }},
	"lstm_sequences_backwards": {func() Layer { return LSTM(3, ReturnSequences(true), GoBackwards(true)) }},
	"gru_sequences":            {func() Layer { return GRU(3, ReturnSequences(true)) }},
	"gru_last_backwards":       {func() Layer { return GRU(3, GoBackwards(true)) }},
	"gru_reset_before_sequences": {func() Layer {
		return GRU(3, ResetAfter(false), ReturnSequences(true))
	}},
	"simple_rnn_sequences": {func() Layer { return SimpleRNN(3, ReturnSequences(true)) }},
	"simple_rnn_last":      {func() Layer { return SimpleRNN(3) }},
	"bidirectional_lstm_concat_sequences": {func() Layer {
		return Bidirectional(LSTM(3, ReturnSequences(true)))
	}},
	"bidirectional_gru_sum_last": {func() Layer { return Bidirectional(GRU(3), MergeMode("sum")) }},
	"bidirectional_simple_rnn_ave_sequences": {func() Layer {
		return Bidirectional(SimpleRNN(3, ReturnSequences(true)), MergeMode("ave"))
	}},
	"bidirectional_lstm_mul_last": {func() Layer { return Bidirectional(LSTM(3), MergeMode("mul")) }},
	"masking_lstm_sequences": {
		func() Layer { return Masking(0) },
		func() Layer { return LSTM(3, ReturnSequences(true)) }},
	"masking_bidirectional_gru_sequences": {
		func() Layer { return Masking(0) },
		func() Layer { return Bidirectional(GRU(3, ReturnSequences(true))) }},
}.layers()

type layerMakers map[string][]func() Layer

func (m layerMakers) layers() map[string]func() []Layer {
	out := map[string]func() []Layer{}
	for name, makers := range m {
		out[name] = func() []Layer {
			var ls []Layer
			for _, f := range makers {
				ls = append(ls, f())
			}
			return ls
		}
	}
	return out
}

// TestRecurrentMatchPyTorch checks every golden case's output, loss and
// gradients. The inputs x (batch, time, features) are the table of an
// Embedding layer in front, looked up by the indices n·time + t, so one SGD
// step (learning rate 0.1, mean squared error) moves the table by −0.1 times
// the gradient with respect to x and every weight by −0.1 times its own:
// both are compared with PyTorch's gradients, and the output of Predict with
// PyTorch's output, on the reference and CPU devices.
func TestRecurrentMatchPyTorch(t *testing.T) {
	raw, err := os.ReadFile("testdata/torch/recurrent.json")
	if err != nil {
		t.Fatal(err)
	}
	var g recurrentGolden
	if err := json.Unmarshal(raw, &g); err != nil {
		t.Fatal(err)
	}
	if len(g.Cases) != len(goldenRecurrentLayers) {
		t.Errorf("%d golden cases for %d layer sets", len(g.Cases), len(goldenRecurrentLayers))
	}
	devices := goldenDevices(t)
	// The CPU, then every OpenCL device; the race detector's run leaves
	// OpenCL to the plain one, which covers it.
	devs, _ := conformanceDevices(t)
	if raceDetector {
		devs = devs[:1]
	}
	for _, d := range devs[1:] {
		devices[d.Info().ID] = d
	}
	for _, c := range g.Cases {
		for devName, dev := range devices {
			t.Run(c.Name+"/"+devName, func(t *testing.T) { recurrentCaseMatches(t, c, dev) })
		}
	}
}

func recurrentCaseMatches(t *testing.T, c recurrentCase, dev backend.Device) {
	layers, ok := goldenRecurrentLayers[c.Name]
	if !ok {
		t.Fatalf("no layers for case %q", c.Name)
	}
	n, steps, features := c.X.Shape[0], c.X.Shape[1], c.X.Shape[2]
	idx := make([]float32, n*steps)
	for i := range idx {
		idx[i] = float32(i)
	}
	m := must(t)(Sequential("m", Input(steps), append([]Layer{Embedding(n*steps, features)}, layers()...)...))
	setWeight(t, m, "embedding/embeddings", []int{n * steps, features}, c.X.float32s()...)
	for name, w := range c.Weights {
		setWeight(t, m, name, w.Shape, w.float32s()...)
	}
	if err := m.Compile(SGD(0.1), MeanSquaredError(), OnDevice(dev)); err != nil {
		t.Fatal(err)
	}
	out, err := m.Predict(samples(t, idx, []int{steps}, nil, nil), quiet)
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
	h, err := m.Fit(samples(t, idx, []int{steps}, c.Target.float32s(), c.Target.Shape[1:]), BatchSize(n), Shuffle(false), quiet)
	if err != nil {
		t.Fatal(err)
	}
	if got := h.Metrics["loss"][0]; !closeTo(got, c.Loss, 1e-5) {
		t.Errorf("loss %v, PyTorch %v", got, c.Loss)
	}
	moved := func(name string, before, grad goldenTensor) {
		got := getWeight(t, m, name)
		worst := 0.0
		for i, v := range before.Data {
			worst = max(worst, math.Abs(float64(got[i])-(v-0.1*grad.Data[i])))
		}
		if worst > 1e-6 {
			t.Errorf("%s after the step differs from PyTorch's gradient step by up to %.3g", name, worst)
		}
	}
	moved("embedding/embeddings", c.X, c.InputGrad)
	for name, w := range c.Weights {
		moved(name, w, c.WeightGrads[name])
	}
}
