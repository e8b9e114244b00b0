package nn

import (
	"math"
	"strings"
	"testing"
)

// evalOn evaluates predictions p (fed as the inputs of a model without
// weights, optionally through a final layer) against targets y.
func evalOn(t *testing.T, in []int, last func() Layer, loss Loss, metrics []Metric, p []float32, y []float32, yshape []int, batch int) Logs {
	t.Helper()
	layers := []Layer{Activation("linear")}
	if last != nil {
		layers = append(layers, last())
	}
	m := must(t)(Sequential("m", Input(in...), layers...))
	if err := m.Compile(SGD(0.1), loss, WithMetrics(metrics...), OnDevice(testDevice())); err != nil {
		t.Fatal(err)
	}
	logs, err := m.Evaluate(samples(t, p, in, y, yshape), BatchSize(batch), quiet)
	if err != nil {
		t.Fatal(err)
	}
	return logs
}

// TestLosses checks each loss against values worked by hand, over batches
// that leave a partial last batch, so that the batch-size weighting counts.
func TestLosses(t *testing.T) {
	// −log softmax(x)[label] = log Σ eˣ − x[label]: for logits (2, 1, 0)
	// and label 0 it is 0.40760596, for (0, 0, 0) log 3 = 1.09861229.
	lse := func(v ...float64) float64 {
		s := 0.0
		for _, x := range v {
			s += math.Exp(x)
		}
		return math.Log(s)
	}
	logits := []float32{2, 1, 0, 0, 0, 0, 0, 5, 0}
	softmax := func() Layer { return Softmax() }
	sparse := (lse(2, 1, 0) - 2 + lse(0, 0, 0) - 0 + lse(0, 5, 0) - 0) / 3
	cases := []struct {
		name   string
		in     []int
		last   func() Layer
		loss   Loss
		p, y   []float32
		yshape []int
		want   float64
	}{
		{"sparse from logits", []int{3}, nil, SparseCategoricalCrossentropy(FromLogits()), logits, []float32{0, 2, 0}, nil, sparse},
		{"sparse through softmax", []int{3}, softmax, SparseCategoricalCrossentropy(), logits, []float32{0, 2, 0}, []int{1}, sparse},
		// From probabilities the loss renormalises and clips at 1e-7.
		{"sparse from probabilities", []int{3}, nil, SparseCategoricalCrossentropy(), []float32{0.5, 0.25, 0.25, 0, 1, 0}, []float32{1, 0}, nil,
			(-math.Log(0.25) - math.Log(1e-7)) / 2},
		// A softmax over far-apart logits: the stable path gives the exact
		// 100, where clipped probabilities would give −log 1e-7 ≈ 16.1.
		{"saturated softmax", []int{3}, softmax, SparseCategoricalCrossentropy(), []float32{100, 0, 0}, []float32{1}, nil, 100},
		{"categorical", []int{3}, softmax, CategoricalCrossentropy(), logits, []float32{1, 0, 0, 0, 0, 1, 0.5, 0.5, 0}, []int{3},
			(lse(2, 1, 0) - 2 + lse(0, 0, 0) + lse(0, 5, 0) - 2.5) / 3},
		{"binary", []int{1}, nil, BinaryCrossentropy(), []float32{0.9, 0.2, 0.5}, []float32{1, 0, 1}, []int{1},
			-(math.Log(0.9) + math.Log(0.8) + math.Log(0.5)) / 3},
		{"binary from logits", []int{1}, nil, BinaryCrossentropy(FromLogits()), []float32{2, -1, 0}, []float32{1, 0, 1}, []int{1},
			(math.Log1p(math.Exp(-2)) + math.Log1p(math.Exp(-1)) + math.Log(2)) / 3},
		{"mse", []int{2}, nil, MeanSquaredError(), []float32{1, 2, 3, 4, 5, 6}, []float32{1, 0, 0, 4, 5, 9}, []int{2}, (4 + 9 + 9) / 6.0},
		{"mae", []int{2}, nil, MeanAbsoluteError(), []float32{1, 2, 3, 4, 5, 6}, []float32{1, 0, 0, 4, 5, 9}, []int{2}, (2 + 3 + 3) / 6.0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			yshape := c.yshape
			if yshape == nil {
				yshape = []int{}
			}
			for _, batch := range []int{2, 32} {
				got := evalOn(t, c.in, c.last, c.loss, nil, c.p, c.y, yshape, batch)["loss"]
				if !closeTo(got, c.want, 2e-6) {
					t.Errorf("batch %d: loss %.7f, want %.7f", batch, got, c.want)
				}
			}
		})
	}
}

// TestMetrics checks the metrics on three predictions worked by hand:
// (0.1, 0.7, 0.2), (0.5, 0.3, 0.2) and (0.2, 0.2, 0.6) with labels 1, 1 and
// 0. The arg-maxes are 1, 0 and 2, so one in three is right; every label is
// among the two highest scores (ties do not push a label out), so top-2 is
// 1; top-1 equals accuracy.
func TestMetrics(t *testing.T) {
	p := []float32{0.1, 0.7, 0.2, 0.5, 0.3, 0.2, 0.2, 0.2, 0.6}
	labels := []float32{1, 1, 0}
	onehot := []float32{0, 1, 0, 0, 1, 0, 1, 0, 0}
	logs := evalOn(t, []int{3}, nil, SparseCategoricalCrossentropy(),
		[]Metric{Accuracy(), SparseTopKCategoricalAccuracy(2), byName(t, "sparse_categorical_accuracy")}, p, labels, []int{}, 2)
	for k, want := range map[string]float64{"accuracy": 1.0 / 3, "sparse_top_k_categorical_accuracy": 1, "sparse_categorical_accuracy": 1.0 / 3} {
		if !closeTo(logs[k], want, 1e-6) {
			t.Errorf("%s = %v, want %v", k, logs[k], want)
		}
	}
	logs = evalOn(t, []int{3}, nil, CategoricalCrossentropy(), []Metric{Accuracy(), TopKCategoricalAccuracy(1), MeanSquaredErrorMetric()}, p, onehot, []int{3}, 2)
	mse := ((0.01 + 0.09 + 0.04) + (0.25 + 0.49 + 0.04) + (0.64 + 0.04 + 0.36)) / 9
	for k, want := range map[string]float64{"accuracy": 1.0 / 3, "top_k_categorical_accuracy": 1.0 / 3, "mean_squared_error": mse} {
		if !closeTo(logs[k], want, 1e-6) {
			t.Errorf("%s = %v, want %v", k, logs[k], want)
		}
	}
	// Binary: 0.9 vs 1 right, 0.6 vs 0 wrong, 0.2 vs 0 right.
	logs = evalOn(t, []int{1}, nil, BinaryCrossentropy(), []Metric{Accuracy()}, []float32{0.9, 0.6, 0.2}, []float32{1, 0, 0}, []int{1}, 2)
	if !closeTo(logs["accuracy"], 2.0/3, 1e-6) {
		t.Errorf("binary accuracy %v, want 2/3", logs["accuracy"])
	}
	if _, err := MetricByName("f1"); err == nil || !strings.Contains(err.Error(), `unknown metric "f1"`) {
		t.Errorf("unknown metric: %v", err)
	}
}

func byName(t *testing.T, name string) Metric {
	t.Helper()
	m, err := MetricByName(name)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func TestLossByName(t *testing.T) {
	for name, want := range map[string]string{"mse": "mean_squared_error", "mae": "mean_absolute_error",
		"sparse_categorical_crossentropy": "sparse_categorical_crossentropy", "binary_crossentropy": "binary_crossentropy"} {
		l, err := LossByName(name)
		if err != nil || l.Name() != want {
			t.Errorf("LossByName(%q) = %v, %v; want %s", name, l, err, want)
		}
	}
	if _, err := LossByName("squared_hinge"); err == nil || !strings.Contains(err.Error(), `unknown loss "squared_hinge"`) {
		t.Errorf("unknown loss: %v", err)
	}
	m := must(t)(Sequential("m", Input(2), Dense(1)))
	if err := m.Compile(SGD(0.1), MeanSquaredError(), OnDevice(testDevice()), Metrics("accuracy", "accuracy")); err == nil || !strings.Contains(err.Error(), "given twice") {
		t.Errorf("duplicate metric: %v", err)
	}
	if err := m.Compile(SGD(0.1), MeanSquaredError()); err == nil || !strings.Contains(err.Error(), "no device") {
		t.Errorf("no device: %v", err)
	}
}
