package nn

import (
	"bytes"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// regression returns n samples of two features and a target, fixed by seed.
func regression(n int, seed uint64) (x, y []float32) {
	r := rand.New(rand.NewPCG(seed, 1))
	for range n {
		a, b := r.Float32()*2-1, r.Float32()*2-1
		x = append(x, a, b)
		y = append(y, 3*a-2*b+0.5+0.1*(r.Float32()-0.5))
	}
	return x, y
}

// TestFitPartialBatches trains a linear model with SGD on 10 samples in
// batches of 4, 4 and 2, and compares with the same epoch worked in float64
// on the host: every sample seen once, each batch's mean gradient, and the
// epoch loss as the batch losses weighted by batch size.
func TestFitPartialBatches(t *testing.T) {
	x, y := regression(10, 7)
	m := must(t)(Sequential("lin", Input(2), Dense(1)))
	setWeight(t, m, "dense/kernel", []int{2, 1}, 0.1, -0.2)
	if err := m.Compile(SGD(0.1), MeanSquaredError(), OnDevice(testDevice())); err != nil {
		t.Fatal(err)
	}
	h, err := m.Fit(samples(t, x, []int{2}, y, []int{1}), BatchSize(4), Shuffle(false), quiet)
	if err != nil {
		t.Fatal(err)
	}
	w := []float64{0.1, -0.2}
	b := 0.0
	lossSum := 0.0
	for lo := 0; lo < 10; lo += 4 {
		hi := min(lo+4, 10)
		n := float64(hi - lo)
		var gw [2]float64
		var gb, l float64
		for i := lo; i < hi; i++ {
			e := w[0]*float64(x[2*i]) + w[1]*float64(x[2*i+1]) + b - float64(y[i])
			l += e * e / n
			gw[0] += 2 * e * float64(x[2*i]) / n
			gw[1] += 2 * e * float64(x[2*i+1]) / n
			gb += 2 * e / n
		}
		lossSum += l * n
		w[0] -= 0.1 * gw[0]
		w[1] -= 0.1 * gw[1]
		b -= 0.1 * gb
	}
	got := getWeight(t, m, "dense/kernel")
	gotB := getWeight(t, m, "dense/bias")
	if !closeTo(float64(got[0]), w[0], 1e-6) || !closeTo(float64(got[1]), w[1], 1e-6) || !closeTo(float64(gotB[0]), b, 1e-6) {
		t.Errorf("weights %v %v, want %v %v", got, gotB, w, b)
	}
	if l := h.Metrics["loss"][0]; !closeTo(l, lossSum/10, 1e-6) {
		t.Errorf("epoch loss %v, want %v", l, lossSum/10)
	}
	if s := m.Stats(); s.Compiles != 2 {
		t.Errorf("%d executables compiled, want 2 (batch 4 and the remainder 2)", s.Compiles)
	}
}

// classification returns n samples of 4 features in 3 classes.
func classification(n int, seed uint64) (x, y []float32) {
	r := rand.New(rand.NewPCG(seed, 2))
	for range n {
		c := r.IntN(3)
		for j := range 4 {
			v := r.Float32() - 0.5
			if j == c {
				v += 1.5
			}
			x = append(x, v)
		}
		y = append(y, float32(c))
	}
	return x, y
}

func classifier(t *testing.T, seed int64, dropout float64) *Model {
	t.Helper()
	m := must(t)(Sequential("clf", Input(4), Dense(8, Activation("relu")), Dropout(dropout), Dense(3, Activation("softmax"))))
	if err := m.InitWeights(seed); err != nil {
		t.Fatal(err)
	}
	if err := m.Compile(Adam(0.01), SparseCategoricalCrossentropy(), Metrics("accuracy"), OnDevice(testDevice()), Seed(seed)); err != nil {
		t.Fatal(err)
	}
	return m
}

// TestFitDeterminism checks that shuffling and dropout depend only on the
// seed, and that training learns the classes.
func TestFitDeterminism(t *testing.T) {
	x, y := classification(60, 3)
	run := func(seed int64) ([]float32, *History) {
		m := classifier(t, seed, 0.25)
		h, err := m.Fit(samples(t, x, []int{4}, y, nil), BatchSize(16), Epochs(8), quiet)
		if err != nil {
			t.Fatal(err)
		}
		return getWeight(t, m, "dense/kernel"), h
	}
	a, ha := run(1)
	b, _ := run(1)
	c, _ := run(2)
	if !slices.Equal(a, b) {
		t.Error("two runs with seed 1 differ")
	}
	if slices.Equal(a, c) {
		t.Error("runs with seeds 1 and 2 agree")
	}
	acc := ha.Metrics["accuracy"]
	if acc[len(acc)-1] < 0.8 || ha.Metrics["loss"][7] >= ha.Metrics["loss"][0] {
		t.Errorf("training did not learn: accuracy %v, loss %v", acc, ha.Metrics["loss"])
	}
}

// TestValidationSplit checks that the split holds out the last samples and
// that val_ metrics equal Evaluate on them.
func TestValidationSplit(t *testing.T) {
	x, y := classification(50, 5)
	m := classifier(t, 1, 0)
	h, err := m.Fit(samples(t, x, []int{4}, y, nil), BatchSize(8), ValidationSplit(0.2), quiet)
	if err != nil {
		t.Fatal(err)
	}
	logs, err := m.Evaluate(samples(t, x[40*4:], []int{4}, y[40:], nil), BatchSize(3), quiet)
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"loss", "accuracy"} {
		if got := h.Metrics["val_"+k][0]; !closeTo(got, logs[k], 1e-6) {
			t.Errorf("val_%s %v, Evaluate on the last 10 samples %v", k, got, logs[k])
		}
	}
	if _, err := m.Fit(samples(t, x, []int{4}, y, nil), ValidationSplit(0.99), quiet); err == nil {
		t.Error("a split leaving no training sample was accepted")
	}
}

// TestDropoutMasks checks training-mode dropout through its effect on SGD:
// with input ones into Dropout(0.5) and Dense(1), a weight gets a gradient
// only where the mask keeps its input, so the weights that change in a step
// show that step's mask. Each step must draw a new mask of about half the
// inputs, the same for the same seed; inference must not drop anything.
func TestDropoutMasks(t *testing.T) {
	const n = 400
	masks := func(seed int64) [][]bool {
		m := must(t)(Sequential("d", Input(n), Dropout(0.5), Dense(1, UseBias(false), KernelInitializer(Ones()))))
		if err := m.Compile(SGD(1e-4), MeanSquaredError(), OnDevice(testDevice()), Seed(seed)); err != nil {
			t.Fatal(err)
		}
		x := make([]float32, n)
		for i := range x {
			x[i] = 1
		}
		s := samples(t, x, []int{n}, []float32{0}, []int{1})
		prev := slices.Clone(getWeight(t, m, "dense/kernel"))
		var out [][]bool
		for range 2 {
			if _, err := m.Fit(s, BatchSize(1), quiet); err != nil {
				t.Fatal(err)
			}
			w := slices.Clone(getWeight(t, m, "dense/kernel"))
			mask := make([]bool, n)
			for i := range w {
				mask[i] = w[i] != prev[i]
			}
			out = append(out, mask)
			prev = w
		}
		pred, err := m.Predict(s, quiet)
		if err != nil {
			t.Fatal(err)
		}
		sum := 0.0
		for _, v := range prev {
			sum += float64(v)
		}
		if !closeTo(float64(pred.Data[0]), sum, 1e-5) {
			t.Errorf("inference output %v, want the plain sum %v", pred.Data[0], sum)
		}
		return out
	}
	a, b, c := masks(1), masks(1), masks(9)
	kept := 0
	for _, v := range a[0] {
		if v {
			kept++
		}
	}
	if kept < n/2-60 || kept > n/2+60 {
		t.Errorf("%d of %d inputs kept, want about half", kept, n)
	}
	if slices.Equal(a[0], a[1]) {
		t.Error("two steps drew the same mask")
	}
	if !slices.Equal(a[0], b[0]) || !slices.Equal(a[1], b[1]) {
		t.Error("the same seed drew different masks")
	}
	if slices.Equal(a[0], c[0]) {
		t.Error("different seeds drew the same mask")
	}
}

// TestBatchNormTraining checks one training step's moving statistics
// against the batch statistics worked by hand: for the batch (1, 3) in one
// channel, mean 2 and biased variance 1, so moving_mean = 0.01·2 and
// moving_variance = 0.99·1 + 0.01·1.
func TestBatchNormTraining(t *testing.T) {
	m := must(t)(Sequential("bn", Input(1), BatchNormalization(), Dense(1)))
	if err := m.Compile(SGD(0.01), MeanSquaredError(), OnDevice(testDevice())); err != nil {
		t.Fatal(err)
	}
	if _, err := m.Fit(samples(t, []float32{1, 3}, []int{1}, []float32{0, 1}, []int{1}), BatchSize(2), quiet); err != nil {
		t.Fatal(err)
	}
	if mm := getWeight(t, m, "batch_normalization/moving_mean")[0]; !closeTo(float64(mm), 0.02, 1e-6) {
		t.Errorf("moving mean %v, want 0.02", mm)
	}
	if mv := getWeight(t, m, "batch_normalization/moving_variance")[0]; !closeTo(float64(mv), 1, 1e-6) {
		t.Errorf("moving variance %v, want 1", mv)
	}
	total, trainable := m.CountParams()
	if total != 4+2 || trainable != 2+2 {
		t.Errorf("params %d (%d trainable), want 6 (4)", total, trainable)
	}
}

// TestFitRejectsBadData checks that bad data is reported before anything
// runs, and that the weights stay as they were.
func TestFitRejectsBadData(t *testing.T) {
	x, y := classification(20, 1)
	bad := slices.Clone(y)
	bad[13] = 3
	half := slices.Clone(y)
	half[4] = 1.5
	for _, c := range []struct {
		name string
		s    Samples
		opts []FitOption
		want string
	}{
		{"label out of range", samples(t, x, []int{4}, bad, nil), nil, "training sample 13 has label 3, but model \"clf\" has 3 classes"},
		{"label not whole", samples(t, x, []int{4}, half, nil), nil, "sample 4 has label 1.5"},
		{"input shape", samples(t, x, []int{2, 2}, y, nil), nil, "inputs of shape (2, 2), but model \"clf\" takes (4,)"},
		{"target shape", samples(t, x, []int{4}, append(slices.Clone(y), y...), []int{2}), nil, "targets of shape (2,) do not suit loss sparse_categorical_crossentropy"},
		{"no targets", samples(t, x, []int{4}, nil, nil), nil, "have no targets"},
		{"validation labels", samples(t, x, []int{4}, y, nil), []FitOption{ValidationData(samples(t, x, []int{4}, bad, nil))}, "validation sample 13 has label 3"},
		{"batch size", samples(t, x, []int{4}, y, nil), []FitOption{BatchSize(0)}, "batch size 0"},
		{"nil callback", samples(t, x, []int{4}, y, nil), []FitOption{Callbacks(nil)}, "callback 0 is nil"},
		{"bad callback", samples(t, x, []int{4}, y, nil), []FitOption{Callbacks(EarlyStopping(Patience(-1)))}, "patience -1"},
		{"split and data", samples(t, x, []int{4}, y, nil), []FitOption{ValidationSplit(0.5), ValidationData(samples(t, x, []int{4}, y, nil))}, "not both"},
	} {
		t.Run(c.name, func(t *testing.T) {
			m := classifier(t, 1, 0)
			before := slices.Clone(getWeight(t, m, "dense/kernel"))
			_, err := m.Fit(c.s, append(c.opts, quiet)...)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v, want one containing %q", err, c.want)
			}
			if !slices.Equal(before, getWeight(t, m, "dense/kernel")) {
				t.Error("the weights changed")
			}
			if it, _ := m.Iterations(); it != 0 {
				t.Errorf("%d steps ran", it)
			}
		})
	}
	m := must(t)(Sequential("m", Input(4), Dense(3)))
	if _, err := m.Fit(samples(t, x, []int{4}, y, nil)); err == nil || !strings.Contains(err.Error(), "not compiled") {
		t.Errorf("uncompiled Fit: %v", err)
	}
	if _, err := m.Evaluate(samples(t, x, []int{4}, y, nil), Epochs(2)); err == nil || !strings.Contains(err.Error(), "Epochs does not apply") {
		t.Errorf("Evaluate with Epochs: %v", err)
	}
}

// TestProgressOutput checks the lines Fit prints where the output is not a
// terminal, on the real clock: the compiling line, then one header and one
// finished bar per epoch, in Keras's format.
func TestProgressOutput(t *testing.T) {
	x, y := classification(40, 1)
	m := classifier(t, 1, 0)
	var out bytes.Buffer
	if _, err := m.Fit(samples(t, x, []int{4}, y, nil), BatchSize(16), Epochs(2), ValidationSplit(0.25), Progress(&out)); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	if len(lines) != 5 || !strings.HasPrefix(lines[0], "Compiling the training and evaluation steps for reference… done in ") ||
		!strings.HasSuffix(lines[0], " s") || lines[1] != "Epoch 1/2" || lines[3] != "Epoch 2/2" {
		t.Fatalf("output:\n%s", out.String())
	}
	for _, l := range []string{lines[2], lines[4]} {
		if !strings.HasPrefix(l, "2/2 ━━━━━━━━━━━━━━━━━━━━ ") || strings.Contains(l, "\r") || strings.Contains(l, "\x1b") {
			t.Errorf("bar line %q", l)
		}
		for _, k := range []string{"/step - accuracy: ", " - loss: ", " - val_accuracy: ", " - val_loss: "} {
			if !strings.Contains(l, k) {
				t.Errorf("bar line %q lacks %q", l, k)
			}
		}
	}
}

func TestFormatting(t *testing.T) {
	for _, c := range []struct {
		got, want string
	}{
		{formatValue(0.48971), "0.4897"},
		{formatValue(0), "0.0000e+00"},
		{formatValue(0.000123456), "1.2346e-04"},
		{formatValue(math.NaN()), "nan"},
		{formatPerStep(0.0042), "4ms/step"},
		{formatPerStep(2.4), "2s/step"},
		{formatPerStep(0.00005), "50us/step"},
		{formatETA(42.7), "42s"},
		{formatETA(187), "3:07"},
		{formatETA(3723), "1:02:03"},
		{groupDigits(412778), "412,778"},
		{groupDigits(320), "320"},
		{groupDigits(1000000), "1,000,000"},
		{readableSize(4 * 412778), "1.57 MB"},
		{readableSize(0), "0.00 B"},
		{readableSize(4 * 55050), "215.04 KB"},
	} {
		if c.got != c.want {
			t.Errorf("got %q, want %q", c.got, c.want)
		}
	}
}
