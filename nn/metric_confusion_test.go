package nn

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"
)

type metricsGolden struct {
	Shape  []int
	Y, P   []float32
	Logits []float32
	Cases  []struct {
		Metric        string
		NumThresholds int `json:"num_thresholds"`
		Curve         string
		Summation     string
		Logits        bool
		Threshold     float64
		ClassID       int `json:"class_id"`
		Value         float64
	}
}

func readMetricsGolden(t *testing.T) *metricsGolden {
	t.Helper()
	raw, err := os.ReadFile("testdata/metrics/metrics.json")
	if err != nil {
		t.Fatal(err)
	}
	var g metricsGolden
	if err := json.Unmarshal(raw, &g); err != nil {
		t.Fatal(err)
	}
	if len(g.Cases) != 25 {
		t.Fatalf("%d golden cases, want 25", len(g.Cases))
	}
	return &g
}

// TestConfusionMetricsMatchGolden evaluates Precision, Recall and AUC over
// 37 samples of 3 outputs, in batches of 5 (so that a per-batch mean would
// differ from the epoch's counts) and in one batch, against the values of
// testdata/metrics/gen_metrics.py.
func TestConfusionMetricsMatchGolden(t *testing.T) {
	gold := readMetricsGolden(t)
	var plain, logits []Metric
	want := map[string]float64{}
	for i, c := range gold.Cases {
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
		}
		if c.Logits {
			logits = append(logits, m)
		} else {
			plain = append(plain, m)
		}
		want[name] = c.Value
	}
	check := func(logs Logs, ms []Metric, batch int) {
		for _, m := range ms {
			if got := logs[m.Name()]; !closeTo(got, want[m.Name()], 1e-6) {
				t.Errorf("batch %d: %s = %.9f, want %.9f", batch, m.Name(), got, want[m.Name()])
			}
		}
	}
	for _, batch := range []int{5, 37} {
		check(evalOn(t, []int{3}, nil, BinaryCrossentropy(), plain, gold.P, gold.Y, []int{3}, batch), plain, batch)
		check(evalOn(t, []int{3}, nil, BinaryCrossentropy(FromLogits()), logits, gold.Logits, gold.Y, []int{3}, batch), logits, batch)
	}
}

// TestConfusionMetricsByHand checks Precision, Recall and AUC on four
// predictions worked by hand: (0.9, 1), (0.6, 0), (0.4, 1), (0.1, 0). At
// 0.5, tp = 1, fp = 1, fn = 1: precision and recall 1/2. The positives
// (0.9, 0.4) outscore the negatives (0.6, 0.1) in 3 of 4 pairs, so the ROC
// AUC is 0.75, which 200 thresholds reproduce exactly, as no two scores
// share a step. Through Fit the training step counts them too: a learning
// rate of 1e-30 leaves the identity kernel's outputs as they were.
func TestConfusionMetricsByHand(t *testing.T) {
	p := []float32{0.9, 0.6, 0.4, 0.1}
	y := []float32{1, 0, 1, 0}
	want := map[string]float64{"precision": 0.5, "recall": 0.5, "auc": 0.75}
	m := must(t)(Sequential("m", Input(1), Dense(1, UseBias(false), KernelInitializer(Ones()))))
	if err := m.Compile(SGD(1e-30), BinaryCrossentropy(), Metrics("precision", "recall", "auc"), OnDevice(testDevice())); err != nil {
		t.Fatal(err)
	}
	s := samples(t, p, []int{1}, y, []int{1})
	h, err := m.Fit(s, BatchSize(3), Epochs(2), Shuffle(false), ValidationData(s), quiet)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range want {
		for _, key := range []string{k, "val_" + k} {
			if got := h.Metrics[key]; len(got) != 2 || !closeTo(got[0], v, 1e-6) || !closeTo(got[1], v, 1e-6) {
				t.Errorf("%s over two epochs = %v, want %v each", key, got, v)
			}
		}
	}
}

// TestConfusionMetricErrors checks the exact texts of the option and shape
// errors.
func TestConfusionMetricErrors(t *testing.T) {
	cases := []struct {
		m    Metric
		want string
	}{
		{Precision(Threshold(1.5)), "nn: precision: threshold 1.5 must lie in [0, 1]"},
		{Recall(NumThresholds(3)), "nn: recall: option NumThresholds does not apply"},
		{AUC(NumThresholds(1)), "nn: auc: number of thresholds 1 must be at least 2"},
		{AUC(Curve("DET")), `nn: auc: curve "DET" is not ROC or PR`},
		{AUC(SummationMethod("simpson")), `nn: auc: summation method "simpson" is not interpolation, minoring or majoring`},
		{AUC(Threshold(0.5)), "nn: auc: option Threshold does not apply"},
		{Precision(ClassID(-2)), "nn: precision: class id -2 must not be negative"},
		{Precision(MetricName("")), "nn: precision: empty metric name"},
		{Precision(nil), "nn: precision: nil option"},
		{AUC(Curve("prc"), FromLogits()), ""},
	}
	for _, c := range cases {
		got := ""
		if err := c.m.err(); err != nil {
			got = err.Error()
		}
		if got != c.want {
			t.Errorf("%s: error %q, want %q", c.m.Name(), got, c.want)
		}
	}
	// A class id past the classes, and sparse labels, fail when the step
	// is built.
	m := must(t)(Sequential("m", Input(3), Dense(3)))
	if err := m.Compile(SGD(0.1), CategoricalCrossentropy(), WithMetrics(Precision(ClassID(3))), OnDevice(testDevice())); err != nil {
		t.Fatal(err)
	}
	_, err := m.Evaluate(samples(t, make([]float32, 6), []int{3}, make([]float32, 6), []int{3}), quiet)
	if err == nil || err.Error() != "nn: metric precision: tile: precision: class id 3 is out of range for predictions of shape [2, 3]" {
		t.Errorf("class id past the classes: %v", err)
	}
	if err := m.Compile(SGD(0.1), SparseCategoricalCrossentropy(), Metrics("recall"), OnDevice(testDevice())); err != nil {
		t.Fatal(err)
	}
	_, err = m.Evaluate(samples(t, make([]float32, 6), []int{3}, make([]float32, 2), nil), quiet)
	if err == nil || !strings.Contains(err.Error(), "recall needs targets shaped like the predictions") {
		t.Errorf("sparse labels: %v", err)
	}
}
