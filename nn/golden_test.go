package nn

import (
	"encoding/json"
	"math"
	"os"
	"testing"
	"time"

	"github.com/tartanml/tartan/backend/cpu"
)

// TestAdam20MatchesPyTorch trains the showcase CNN (dropout off) for 20 Adam
// steps from the initial weights and on the batches PyTorch used
// (testdata/torch/adam20, see its README), and compares every step's loss
// with PyTorch's float32 run within 1e-4 relative.
func TestAdam20MatchesPyTorch(t *testing.T) {
	const dir = "testdata/torch/adam20/"
	var golden struct{ Losses []float64 }
	raw, err := os.ReadFile(dir + "losses.json")
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(raw, &golden); err != nil {
		t.Fatal(err)
	}
	ts, _, err := ReadSafetensors(dir + "batches.safetensors")
	if err != nil {
		t.Fatal(err)
	}
	var x, y []float32
	for _, tt := range ts {
		v, err := tt.Int64s()
		if err != nil {
			t.Fatal(err)
		}
		out := make([]float32, len(v))
		for i, b := range v {
			if tt.Name == "x" {
				out[i] = float32(b) / 255
			} else {
				out[i] = float32(b)
			}
		}
		if tt.Name == "x" {
			x = out
		} else {
			y = out
		}
	}
	m := must(t)(Sequential("fashion_cnn", Input(28, 28, 1),
		Conv2D(64, 2, Padding("same"), Activation("relu")), MaxPooling2D(2),
		Conv2D(32, 2, Padding("same"), Activation("relu")), MaxPooling2D(2),
		Flatten(), Dense(256, Activation("relu")), Dense(10, Activation("softmax"))))
	if err := m.LoadWeights(dir + "init.safetensors"); err != nil {
		t.Fatal(err)
	}
	dev := cpu.New()
	defer dev.Close()
	if err := m.Compile(Adam(1e-3), SparseCategoricalCrossentropy(), OnDevice(dev)); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	worst := 0.0
	for step, want := range golden.Losses {
		batch := samples(t, x[step*64*784:(step+1)*64*784], []int{28, 28, 1}, y[step*64:(step+1)*64], nil)
		h, err := m.Fit(batch, BatchSize(64), Shuffle(false), quiet)
		if err != nil {
			t.Fatal(err)
		}
		got := h.Metrics["loss"][0]
		rel := math.Abs(got-want) / math.Abs(want)
		worst = max(worst, rel)
		if rel > 1e-4 {
			t.Errorf("step %d: loss %.7f, PyTorch %.7f (relative difference %.2g)", step+1, got, want, rel)
		}
	}
	t.Logf("20 steps in %v; largest relative difference from PyTorch %.2g", time.Since(start).Round(time.Millisecond), worst)
}
