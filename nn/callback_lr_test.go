package nn

import (
	"bytes"
	"math"
	"slices"
	"testing"
)

// TestReduceLROnPlateau feeds ReduceLROnPlateau a hand-made sequence of
// val_loss values, from a learning rate of 0.1 with Patience(2),
// Factor(0.5), Cooldown(1), MinLR(0.02) and MinDelta's default 1e-4:
//
//	epoch (1-based)  1    2        3    4    5     6    7     8    9    10   11
//	val_loss         1.0  0.99995  1.1  1.2  1.3   0.5  0.6   0.7  0.8  0.9  1.0
//	wait after       0    1        0    1    0     0    1     0    1    2    3
//	rate after       0.1  0.1      0.05 0.05 0.025 .025 .025  0.02 0.02 0.02 0.02
//
// Epoch 2 is no improvement (by less than 1e-4); epoch 3 reduces and starts
// a cooldown of one epoch, which epoch 4 spends (its wait then counts from
// 0), so epoch 5 reduces again; epoch 8's reduction stops at MinLR, and
// from there, however long the wait, the rate stays.
func TestReduceLROnPlateau(t *testing.T) {
	m := linearModel(t, SGD(0.1), 0, 0)
	var out bytes.Buffer
	m.logOut = &out
	cb := ReduceLROnPlateau(Patience(2), Factor(0.5), Cooldown(1), MinLR(0.02), Verbose(1))
	if err := cb.OnTrainBegin(m); err != nil {
		t.Fatal(err)
	}
	values := []float64{1.0, 0.99995, 1.1, 1.2, 1.3, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0}
	wantLogged := []float64{0.1, 0.1, 0.1, 0.05, 0.05, 0.025, 0.025, 0.025, 0.02, 0.02, 0.02}
	var logged []float64
	for epoch, v := range values {
		logs := Logs{"loss": 1, "val_loss": v}
		if err := cb.OnEpochEnd(m, epoch, logs); err != nil {
			t.Fatal(err)
		}
		logged = append(logged, logs["learning_rate"])
	}
	for i := range wantLogged {
		if !closeTo(logged[i], wantLogged[i], 1e-7) {
			t.Errorf("logged learning rates %v, want %v", logged, wantLogged)
			break
		}
	}
	if lr, _ := m.LearningRate(); !closeTo(lr, 0.02, 1e-7) {
		t.Errorf("final rate %v, want 0.02", lr)
	}
	want := "Epoch 3: ReduceLROnPlateau reducing learning rate to 0.05.\n" +
		"Epoch 5: ReduceLROnPlateau reducing learning rate to 0.025.\n" +
		"Epoch 8: ReduceLROnPlateau reducing learning rate to 0.02.\n"
	if out.String() != want {
		t.Errorf("printed\n%s\nwant\n%s", out.String(), want)
	}
}

// TestReduceLROnPlateauModes checks the defaults (patience 10, factor 0.1),
// mode max, silence at verbose 0, and the warning for a missing monitor.
func TestReduceLROnPlateauModes(t *testing.T) {
	run := func(cb Callback, monitor string, values []float64) ([]float64, string) {
		t.Helper()
		m := linearModel(t, Adam(1e-3), 0, 0)
		var out bytes.Buffer
		m.logOut = &out
		if err := cb.OnTrainBegin(m); err != nil {
			t.Fatal(err)
		}
		var rates []float64
		for epoch, v := range values {
			if err := cb.OnEpochEnd(m, epoch, Logs{"loss": 1, monitor: v}); err != nil {
				t.Fatal(err)
			}
			lr, _ := m.LearningRate()
			rates = append(rates, math.Round(lr*1e9)/1e9)
		}
		return rates, out.String()
	}
	flat := make([]float64, 12)
	for i := range flat {
		flat[i] = 0.5
	}
	rates, out := run(ReduceLROnPlateau(), "val_loss", flat)
	want := []float64{1e-3, 1e-3, 1e-3, 1e-3, 1e-3, 1e-3, 1e-3, 1e-3, 1e-3, 1e-3, 1e-4, 1e-4}
	if !slices.Equal(rates, want) || out != "" {
		t.Errorf("defaults: rates %v, printed %q; want %v, nothing", rates, out, want)
	}
	rates, out = run(ReduceLROnPlateau(Monitor("val_accuracy"), Patience(1), Factor(0.5), Verbose(1)), "val_accuracy", []float64{0.5, 0.6, 0.55, 0.7})
	if want := []float64{1e-3, 1e-3, 5e-4, 5e-4}; !slices.Equal(rates, want) || out != "Epoch 3: ReduceLROnPlateau reducing learning rate to 0.0005.\n" {
		t.Errorf("accuracy: rates %v, printed %q", rates, out)
	}
	_, out = run(ReduceLROnPlateau(Verbose(1)), "val_acc", []float64{0.5, 0.5})
	if out != `ReduceLROnPlateau: "val_loss" is not among the logged values [learning_rate loss val_acc]; not reducing the learning rate on it`+"\n" {
		t.Errorf("missing monitor: printed %q", out)
	}
}

// TestReduceLROnPlateauFit runs it inside Fit: monitoring the falling loss
// in mode max with patience 0, every epoch after the first reduces the
// rate, the History logs each epoch's rate, and the messages go where Fit
// prints.
func TestReduceLROnPlateauFit(t *testing.T) {
	m := linearModel(t, SGD(0.01), 0.5, -0.25)
	var out bytes.Buffer
	cb := ReduceLROnPlateau(Monitor("loss"), Mode("max"), Patience(0), Factor(0.5), Verbose(1))
	h, err := m.Fit(samples(t, []float32{1, 2}, []int{2}, []float32{1}, []int{1}), BatchSize(1), Epochs(3), Callbacks(cb), Verbose(0), Progress(&out))
	if err != nil {
		t.Fatal(err)
	}
	want := "Epoch 2: ReduceLROnPlateau reducing learning rate to 0.005.\nEpoch 3: ReduceLROnPlateau reducing learning rate to 0.0025.\n"
	if out.String() != want {
		t.Errorf("printed %q, want %q", out.String(), want)
	}
	got := h.Metrics["learning_rate"]
	for i, w := range []float64{0.01, 0.01, 0.005} {
		if len(got) != 3 || !closeTo(got[i], w, 1e-7) {
			t.Fatalf("logged rates %v, want [0.01 0.01 0.005]", got)
		}
	}
	// The third step ran at 0.005: with kernel w the gradient is
	// 2·(w·(1, 2) − 1)·(1, 2), each step w −= lr·gradient.
	w := [2]float64{0.5, -0.25}
	for _, lr := range []float64{0.01, 0.01, 0.005} {
		e := 2 * (w[0] + 2*w[1] - 1)
		w[0] -= lr * e
		w[1] -= lr * e * 2
	}
	k := getWeight(t, m, "dense/kernel")
	if !closeTo(float64(k[0]), w[0], 1e-6) || !closeTo(float64(k[1]), w[1], 1e-6) {
		t.Errorf("kernel %v, want %v", k, w)
	}
}

func TestReduceLROnPlateauErrors(t *testing.T) {
	for _, c := range []struct {
		cb   Callback
		want string
	}{
		{ReduceLROnPlateau(Factor(1)), "nn: ReduceLROnPlateau: factor 1 must lie in (0, 1)"},
		{ReduceLROnPlateau(Factor(0)), "nn: ReduceLROnPlateau: factor 0 must lie in (0, 1)"},
		{ReduceLROnPlateau(Patience(-1)), "nn: ReduceLROnPlateau: patience -1 is negative"},
		{ReduceLROnPlateau(Cooldown(-2)), "nn: ReduceLROnPlateau: cooldown -2 is negative"},
		{ReduceLROnPlateau(MinLR(-1e-3)), "nn: ReduceLROnPlateau: min_lr -0.001 must be non-negative and finite"},
		{ReduceLROnPlateau(Verbose(3)), "nn: ReduceLROnPlateau: verbose 3 must be 0, 1 or 2"},
		{ReduceLROnPlateau(Mode("up")), `nn: ReduceLROnPlateau: mode "up" must be "auto", "min" or "max"`},
		{ReduceLROnPlateau(Baseline(1)), "nn: ReduceLROnPlateau: option Baseline does not apply (it accepts Monitor, Mode, MinDelta, Patience, Factor, Cooldown, MinLR, Verbose)"},
	} {
		m := linearModel(t, SGD(0.1), 0, 0)
		_, err := m.Fit(samples(t, []float32{1, 2}, []int{2}, []float32{1}, []int{1}), Callbacks(c.cb), quiet)
		if err == nil || err.Error() != c.want {
			t.Errorf("error %v, want %s", err, c.want)
		}
	}
	m := linearModel(t, SGD(0, LRSchedule(ExponentialDecay(0.1, 10, 0.5, false))), 0, 0)
	_, err := m.Fit(samples(t, []float32{1, 2}, []int{2}, []float32{1}, []int{1}), Callbacks(ReduceLROnPlateau()), quiet)
	if want := "nn: ReduceLROnPlateau: optimizer sgd follows a learning-rate schedule; its rate cannot be reduced"; err == nil || err.Error() != want {
		t.Errorf("error %v, want %s", err, want)
	}
}
