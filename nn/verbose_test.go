package nn

import (
	"bytes"
	"strings"
	"sync"
	"testing"
	"time"
)

// tickClock returns a clock that moves on by step at every reading.
func tickClock(step time.Duration) clock {
	var mu sync.Mutex
	t := time.Unix(1000, 0)
	return func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		t = t.Add(step)
		return t
	}
}

// regressor returns a model whose loss and metric are known by hand: a
// Dense(1) layer of zero weights predicts 0, so against targets of 0.5 the
// mean squared error is 0.25 and the mean absolute error 0.5, and a
// learning rate of 1e-9 keeps them so to four decimals.
func regressor(t *testing.T) *Model {
	t.Helper()
	m := must(t)(Sequential("reg", Input(2), Dense(1, KernelInitializer(Zeros()))))
	if err := m.Compile(SGD(1e-9), MeanSquaredError(), Metrics("mae"), OnDevice(testDevice())); err != nil {
		t.Fatal(err)
	}
	return m
}

// constSamples returns n samples of inputs (1, 2) and targets (v,).
func constSamples(t *testing.T, n int, v float32) Samples {
	x := make([]float32, 2*n)
	y := make([]float32, n)
	for i := range n {
		x[2*i], x[2*i+1], y[i] = 1, 2, v
	}
	return samples(t, x, []int{2}, y, []int{1})
}

// TestVerboseFit checks, with a clock that moves 1.5 s at every reading,
// the exact text Fit prints to a writer that is not a terminal at each
// verbose level, and that a second Fit, whose steps are compiled already,
// does not announce compiling again.
func TestVerboseFit(t *testing.T) {
	bar := "2/2 ━━━━━━━━━━━━━━━━━━━━ 2s 750ms/step - loss: 0.2500 - mean_absolute_error: 0.5000 - val_loss: 1.0000 - val_mean_absolute_error: 1.0000\n"
	line := "2/2 - 2s - 750ms/step - loss: 0.2500 - mean_absolute_error: 0.5000 - val_loss: 1.0000 - val_mean_absolute_error: 1.0000\n"
	compiling := "Compiling the training and evaluation steps for reference… done in 1.5 s\n"
	for _, c := range []struct {
		verbose     int
		first, next string
	}{
		{0, "", ""},
		{1, compiling + "Epoch 1/2\n" + bar + "Epoch 2/2\n" + bar, "Epoch 1/2\n" + bar + "Epoch 2/2\n" + bar},
		{2, compiling + "Epoch 1/2\n" + line + "Epoch 2/2\n" + line, "Epoch 1/2\n" + line + "Epoch 2/2\n" + line},
	} {
		m := regressor(t)
		for run, want := range []string{c.first, c.next} {
			var out bytes.Buffer
			_, err := m.Fit(constSamples(t, 4, 0.5), BatchSize(2), Epochs(2), ValidationData(constSamples(t, 2, 1)),
				Verbose(c.verbose), Progress(&out), tickClock(1500*time.Millisecond))
			if err != nil {
				t.Fatal(err)
			}
			if got := out.String(); got != want {
				t.Errorf("verbose %d, run %d:\n%s\nwant\n%s", c.verbose, run+1, got, want)
			}
		}
	}
}

// TestVerboseEvaluate checks Evaluate's text at each verbose level, on a
// fresh model (which compiles its evaluation step) and again.
func TestVerboseEvaluate(t *testing.T) {
	bar := "2/2 ━━━━━━━━━━━━━━━━━━━━ 2s 750ms/step - loss: 0.2500 - mean_absolute_error: 0.5000\n"
	line := "2/2 - 2s - 750ms/step - loss: 0.2500 - mean_absolute_error: 0.5000\n"
	compiling := "Compiling the evaluation step for reference… done in 1.5 s\n"
	for _, c := range []struct {
		verbose     int
		first, next string
	}{
		{0, "", ""},
		{1, compiling + bar, bar},
		{2, compiling + line, line},
	} {
		m := regressor(t)
		for run, want := range []string{c.first, c.next} {
			var out bytes.Buffer
			logs, err := m.Evaluate(constSamples(t, 4, 0.5), BatchSize(2), Verbose(c.verbose), Progress(&out), tickClock(1500*time.Millisecond))
			if err != nil {
				t.Fatal(err)
			}
			if got := out.String(); got != want {
				t.Errorf("verbose %d, run %d:\n%s\nwant\n%s", c.verbose, run+1, got, want)
			}
			if logs["loss"] != 0.25 || logs["mean_absolute_error"] != 0.5 {
				t.Errorf("logs %v, want loss 0.25 and mean_absolute_error 0.5", logs)
			}
		}
	}
}

// TestVerbosePredict checks Predict's text at each verbose level. Three
// samples in batches of two need two prediction programs (batches of 2 and
// of 1), compiled together before the first batch.
func TestVerbosePredict(t *testing.T) {
	compiling := "Compiling the prediction step for reference… done in 1.5 s\n"
	for _, c := range []struct {
		verbose     int
		first, next string
	}{
		{0, "", ""},
		{1, compiling + "2/2 ━━━━━━━━━━━━━━━━━━━━ 2s 750ms/step\n", "2/2 ━━━━━━━━━━━━━━━━━━━━ 2s 750ms/step\n"},
		{2, compiling + "2/2 - 2s - 750ms/step\n", "2/2 - 2s - 750ms/step\n"},
	} {
		m := regressor(t)
		for run, want := range []string{c.first, c.next} {
			var out bytes.Buffer
			p, err := m.Predict(constSamples(t, 3, 0), BatchSize(2), Verbose(c.verbose), Progress(&out), tickClock(1500*time.Millisecond))
			if err != nil {
				t.Fatal(err)
			}
			if got := out.String(); got != want {
				t.Errorf("verbose %d, run %d:\n%s\nwant\n%s", c.verbose, run+1, got, want)
			}
			if len(p.Data) != 3 {
				t.Errorf("%d predictions, want 3", len(p.Data))
			}
		}
	}
}

// TestCompilingFailure checks the compiling line of a step that fails to
// build: it ends with how long the attempt took, and the error is
// returned, not printed.
func TestCompilingFailure(t *testing.T) {
	m := regressor(t)
	var out bytes.Buffer
	err := m.prepare(&out, 1, tickClock(time.Second), progKey{trainProg, 2}, progKey{predictProg, -1})
	if err == nil {
		t.Fatal("a prediction step of batch -1 compiled")
	}
	if got, want := out.String(), "Compiling the training and prediction steps for reference… failed after 1.0 s\n"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	if strings.Contains(out.String(), err.Error()) {
		t.Error("the error was printed")
	}
}

// TestCompilingLine checks the shortening of the compiling line redrawn on
// a narrow terminal.
func TestCompilingLine(t *testing.T) {
	msgs := []string{"Compiling the training step for opencl:0:0…", "Compiling for opencl:0:0…", "Compiling…"}
	for _, c := range []struct {
		suffix string
		limit  int
		want   string
	}{
		{"", 79, "Compiling the training step for opencl:0:0…"},
		{" 12 s", 79, "Compiling the training step for opencl:0:0… 12 s"},
		{" 12 s", 48, "Compiling the training step for opencl:0:0… 12 s"},
		{" 12 s", 47, "Compiling for opencl:0:0… 12 s"},
		{" 12 s", 29, "Compiling… 12 s"},
		{" 12 s", 12, "Compiling… 1"},
		{"", 0, "C"},
	} {
		if got := fitLine(msgs, c.suffix, c.limit); got != c.want {
			t.Errorf("%q in %d columns: %q, want %q", c.suffix, c.limit, got, c.want)
		}
	}
}
