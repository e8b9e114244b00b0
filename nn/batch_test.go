package nn

import (
	"math"
	"slices"
	"strings"
	"testing"
)

// TestFitHugeBatch trains with batch sizes far above the number of
// samples: the batch is clamped to the data, as Keras does, so the run is
// the same as one with a batch of all the samples.
func TestFitHugeBatch(t *testing.T) {
	x, y := classification(24, 5)
	train := func(batch int) ([]float32, *History) {
		m := classifier(t, 2, 0)
		h, err := m.Fit(samples(t, x, []int{4}, y, nil), BatchSize(batch), Epochs(2), ValidationSplit(0.25), quiet)
		if err != nil {
			t.Fatalf("batch %d: %v", batch, err)
		}
		if _, err := m.Evaluate(samples(t, x, []int{4}, y, nil), BatchSize(batch), quiet); err != nil {
			t.Fatalf("Evaluate, batch %d: %v", batch, err)
		}
		p, err := m.Predict(samples(t, x, []int{4}, nil, nil), BatchSize(batch), quiet)
		if err != nil || len(p.Data) != 24*3 {
			t.Fatalf("Predict, batch %d: %v", batch, err)
		}
		return getWeight(t, m, "dense/kernel"), h
	}
	want, wantH := train(18)
	for _, b := range []int{19, 5000, 1000000000, math.MaxInt} {
		got, h := train(b)
		if !slices.Equal(got, want) {
			t.Errorf("batch %d: the weights differ from a batch of all 18 samples", b)
		}
		if !slices.Equal(h.Metrics["loss"], wantH.Metrics["loss"]) {
			t.Errorf("batch %d: losses %v, want %v", b, h.Metrics["loss"], wantH.Metrics["loss"])
		}
	}
}

// TestBatchBuffersChecked checks the buffer-size check itself: products
// that overflow and buffers over the memory bound are errors.
func TestBatchBuffersChecked(t *testing.T) {
	withMemoryLimit(t, 1<<30)
	if err := checkBatchBuffers("Fit", math.MaxInt/2, 2, 3, 1); err == nil || !strings.Contains(err.Error(), "overflow") {
		t.Errorf("overflow: %v", err)
	}
	if err := checkBatchBuffers("Fit", 1<<20, 2, 784, 1); err == nil || !strings.Contains(err.Error(), "nn: Fit: buffers for batches of 1048576 samples of 785 values each need 6585057280 bytes, more than the 1073741824 bytes") {
		t.Errorf("memory: %v", err)
	}
	if err := checkBatchBuffers("Fit", 64, 2, 784, 1); err != nil {
		t.Error(err)
	}
}
