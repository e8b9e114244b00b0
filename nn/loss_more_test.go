package nn

import (
	"math"
	"testing"
)

// TestLossOptionErrors checks the exact texts of the loss option errors,
// which Compile returns.
func TestLossOptionErrors(t *testing.T) {
	cases := []struct {
		l    Loss
		want string
	}{
		{SparseCategoricalCrossentropy(LabelSmoothing(0.1)), "nn: sparse_categorical_crossentropy: option LabelSmoothing does not apply"},
		{CategoricalCrossentropy(LabelSmoothing(1.5)), "nn: categorical_crossentropy: label smoothing 1.5 must lie in [0, 1]"},
		{BinaryCrossentropy(LabelSmoothing(math.NaN())), "nn: binary_crossentropy: label smoothing NaN must lie in [0, 1]"},
		{Huber(Delta(0)), "nn: huber_loss: delta 0 must be positive and finite"},
		{Huber(FromLogits()), "nn: huber_loss: option FromLogits does not apply"},
		{MeanSquaredError(), ""},
		{KLDivergence(), ""},
		{Huber(Delta(2)), ""},
	}
	for _, c := range cases {
		got := ""
		if err := c.l.err(); err != nil {
			got = err.Error()
		}
		if got != c.want {
			t.Errorf("%s: error %q, want %q", c.l.Name(), got, c.want)
		}
	}
	m := must(t)(Sequential("m", Input(3), Dense(2)))
	if err := m.Compile(SGD(0.1), Huber(Delta(-1)), OnDevice(testDevice())); err == nil || err.Error() != "nn: huber_loss: delta -1 must be positive and finite" {
		t.Errorf("Compile with a bad delta: %v", err)
	}
	for name, want := range map[string]string{"huber": "huber_loss", "kld": "kl_divergence", "logcosh": "log_cosh",
		"poisson": "poisson", "cosine_similarity": "cosine_similarity", "hinge": "hinge"} {
		l, err := LossByName(name)
		if err != nil || l.Name() != want {
			t.Errorf("LossByName(%q) = %v, %v; want %s", name, l, err, want)
		}
	}
}

// TestNewLossesTrain evaluates the new losses through a model on values
// worked by hand, with a partial last batch: Huber with delta 1 on errors
// 0.5 and 3 gives ½·0.25 and 3 − ½; cosine similarity of (1, 0) with (1, 1)
// is 1/√2 and of (0, 2) with (0, −1) is −1.
func TestNewLossesTrain(t *testing.T) {
	got := evalOn(t, []int{1}, nil, Huber(), nil, []float32{1.5, 3, 0}, []float32{1, 0, 0}, []int{1}, 2)["loss"]
	if want := (0.125 + 2.5 + 0) / 3; !closeTo(got, want, 1e-6) {
		t.Errorf("huber: loss %v, want %v", got, want)
	}
	got = evalOn(t, []int{2}, nil, CosineSimilarity(), nil, []float32{1, 1, 0, -1}, []float32{1, 0, 0, 2}, []int{2}, 1)["loss"]
	if want := (-1/math.Sqrt2 + 1) / 2; !closeTo(got, want, 1e-6) {
		t.Errorf("cosine similarity: loss %v, want %v", got, want)
	}
}
