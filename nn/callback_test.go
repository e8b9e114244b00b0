package nn

import (
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/tartanml/tartan/backend"
	"github.com/tartanml/tartan/backend/cpu"
)

// TestTerminateOnNaN makes the loss blow up in the second epoch (a huge
// learning rate from the scheduler): training must stop there, on the loss
// or on the gradient that goes non-finite first, and the checkpoint of
// epoch 1 must survive and load.
func TestTerminateOnNaN(t *testing.T) {
	x, y := classification(48, 4)
	m := must(t)(Sequential("clf", Input(4), Dense(8, Activation("relu")), Dense(3, Activation("softmax"))))
	if err := m.Compile(SGD(0.01), SparseCategoricalCrossentropy(), Metrics("accuracy"), OnDevice(testDevice())); err != nil {
		t.Fatal(err)
	}
	ck := filepath.Join(t.TempDir(), "ck.safetensors")
	sched := LearningRateScheduler(func(epoch int, lr float64) float64 {
		if epoch >= 1 {
			return 1e30
		}
		return lr
	})
	h, err := m.Fit(samples(t, x, []int{4}, y, nil), BatchSize(4), Epochs(5),
		Callbacks(sched, TerminateOnNaN(), ModelCheckpoint(ck)), quiet)
	if err != nil {
		t.Fatal(err)
	}
	if len(h.Epochs) != 2 || !strings.Contains(h.StopReason, "loss became") && !strings.Contains(h.StopReason, "gradient became non-finite") ||
		!strings.Contains(h.StopReason, "epoch 2") {
		t.Fatalf("epochs %v, stop reason %q; want a stop in epoch 2", h.Epochs, h.StopReason)
	}
	if l := h.Metrics["loss"][1]; !math.IsNaN(l) && !math.IsInf(l, 0) {
		t.Errorf("epoch 2 loss %v is finite", l)
	}
	if lr := h.Metrics["learning_rate"]; len(lr) != 2 || !closeTo(lr[0], 0.01, 1e-7) || lr[1] != float64(float32(1e30)) {
		t.Errorf("logged learning rates %v", lr)
	}
	m2 := must(t)(Sequential("clf", Input(4), Dense(8, Activation("relu")), Dense(3, Activation("softmax"))))
	if err := m2.Compile(SGD(0.01), SparseCategoricalCrossentropy(), OnDevice(testDevice())); err != nil {
		t.Fatal(err)
	}
	info, err := m2.LoadCheckpoint(ck)
	if err != nil {
		t.Fatal(err)
	}
	if info.Epoch != 1 || len(info.History.Epochs) != 1 {
		t.Errorf("checkpoint epoch %d, history %v; want epoch 1", info.Epoch, info.History.Epochs)
	}
	for _, v := range getWeight(t, m2, "dense/kernel") {
		if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
			t.Fatal("the checkpoint holds non-finite weights")
		}
	}
	if it, _ := m2.Iterations(); it != 12 {
		t.Errorf("checkpoint step %d, want 12", it)
	}
}

// nanDevices are the devices the NaN regressions run on: the reference and
// the CPU backend.
func nanDevices() map[string]func() backend.Device {
	return map[string]func() backend.Device{"reference": testDevice, "cpu": func() backend.Device { return cpu.New(cpu.Cache(false)) }}
}

// TestTerminateOnNaNInput is the reproduction of a NaN hidden by ReLU: one
// NaN among 5,120 input values (256 samples of 20 features, the NaN in the
// second batch). ReLU used to map it to 0, so the loss stayed finite while
// the gradient poisoned dense/kernel and the model collapsed silently. Now
// the NaN reaches the loss and the gradient: TerminateOnNaN must stop in the
// first epoch naming the step, and ModelCheckpoint must save nothing.
func TestTerminateOnNaNInput(t *testing.T) {
	for name, dev := range nanDevices() {
		t.Run(name, func(t *testing.T) {
			x, y := classification(256, 5)
			wide := make([]float32, 0, 256*20)
			for i := range 256 {
				for j := range 20 {
					wide = append(wide, x[i*4+j%4]*float32(1+j/4))
				}
			}
			wide[37*20+5] = float32(math.NaN())
			d := dev()
			defer d.Close()
			m := must(t)(Sequential("clf", Input(20), Dense(32, Activation("relu")), Dense(10, Activation("softmax"))))
			if err := m.Compile(Adam(1e-3), SparseCategoricalCrossentropy(), Metrics("accuracy"), OnDevice(d)); err != nil {
				t.Fatal(err)
			}
			ck := filepath.Join(t.TempDir(), "ck.safetensors")
			h, err := m.Fit(samples(t, wide, []int{20}, y, nil), BatchSize(32), Epochs(3), Shuffle(false),
				Callbacks(TerminateOnNaN(), ModelCheckpoint(ck)), quiet)
			if err != nil {
				t.Fatal(err)
			}
			if want := "the loss became NaN in epoch 1"; !strings.Contains(h.StopReason, want) {
				t.Errorf("stop reason %q, want one saying %q", h.StopReason, want)
			}
			if len(h.Epochs) != 1 || !math.IsNaN(h.Metrics["loss"][0]) {
				t.Errorf("epochs %v, losses %v: want one epoch, its loss NaN", h.Epochs, h.Metrics["loss"])
			}
			if _, err := os.Stat(ck); !os.IsNotExist(err) {
				t.Errorf("a checkpoint was written after the NaN step (stat: %v)", err)
			}
		})
	}
}

// TestTerminateOnNaNGradientOnly makes a step's gradient infinite while
// its loss stays finite: inputs of 1e21 and a kernel of 0.005 give
// predictions of 5e18, a squared error of 2.5e37, but a kernel gradient of
// 1e40, which overflows float32. The update makes the kernel infinite. The
// epoch, one batch, ends with a finite loss: TerminateOnNaN must stop on
// the weight there, and ModelCheckpoint must not save the poisoned
// weights.
func TestTerminateOnNaNGradientOnly(t *testing.T) {
	for name, dev := range nanDevices() {
		t.Run(name, func(t *testing.T) {
			d := dev()
			defer d.Close()
			m := must(t)(Sequential("reg", Input(1), Dense(1)))
			if err := m.Compile(SGD(0.1), MeanSquaredError(), OnDevice(d)); err != nil {
				t.Fatal(err)
			}
			setWeight(t, m, "dense/kernel", []int{1, 1}, 0.005)
			setWeight(t, m, "dense/bias", []int{1}, 0)
			ck := filepath.Join(t.TempDir(), "ck.safetensors")
			var log strings.Builder
			h, err := m.Fit(samples(t, []float32{1e21, 1e21, 1e21, 1e21}, []int{1}, []float32{0, 0, 0, 0}, []int{1}),
				BatchSize(4), Epochs(3), Callbacks(TerminateOnNaN(), ModelCheckpoint(ck)), Progress(&log), Verbose(2))
			if err != nil {
				t.Fatal(err)
			}
			if l := h.Metrics["loss"]; len(l) != 1 || !(l[0] > 1e37 && l[0] < 1e38) {
				t.Fatalf("losses %v, want one finite loss of 2.5e37", l)
			}
			if want := "weight dense/kernel became -Inf in epoch 1: a step's gradient was not finite"; !strings.Contains(h.StopReason, want) {
				t.Errorf("stop reason %q, want one saying %q", h.StopReason, want)
			}
			for _, want := range []string{"Epoch 1: Invalid weight dense/kernel", "ModelCheckpoint: weight dense/kernel holds -Inf at epoch 1; not saving"} {
				if !strings.Contains(log.String(), want) {
					t.Errorf("output %q does not say %q", log.String(), want)
				}
			}
			if _, err := os.Stat(ck); !os.IsNotExist(err) {
				t.Errorf("a checkpoint was written after the non-finite step (stat: %v)", err)
			}
		})
	}
}

// TestEarlyStopping watches a monitor set up never to improve: with
// patience 2 training stops after epoch 3, and the best (first) weights come
// back.
func TestEarlyStopping(t *testing.T) {
	x, y := classification(32, 6)
	m := classifier(t, 1, 0)
	var first []float32
	grab := &epochHook{end: func(m *Model, epoch int) {
		if epoch == 0 {
			first = slices.Clone(getWeight(t, m, "dense/kernel"))
		}
	}}
	// The loss falls, so with mode "max" it never improves after epoch 1.
	es := EarlyStopping(Monitor("loss"), Mode("max"), Patience(2), RestoreBestWeights(true))
	h, err := m.Fit(samples(t, x, []int{4}, y, nil), BatchSize(8), Epochs(10), Callbacks(grab, es), quiet)
	if err != nil {
		t.Fatal(err)
	}
	if len(h.Epochs) != 3 || !strings.Contains(h.StopReason, "early stopping") {
		t.Errorf("ran epochs %v (%q), want 3", h.Epochs, h.StopReason)
	}
	if !slices.Equal(first, getWeight(t, m, "dense/kernel")) {
		t.Error("the best weights were not restored")
	}
}

// epochHook calls a function at the end of every epoch.
type epochHook struct {
	BaseCallback
	end func(m *Model, epoch int)
}

func (h *epochHook) OnEpochEnd(m *Model, epoch int, logs Logs) error {
	h.end(m, epoch)
	return nil
}

func TestCSVLogger(t *testing.T) {
	x, y := classification(16, 2)
	path := filepath.Join(t.TempDir(), "log.csv")
	m := classifier(t, 1, 0)
	if _, err := m.Fit(samples(t, x, []int{4}, y, nil), BatchSize(8), Epochs(2), Callbacks(CSVLogger(path)), quiet); err != nil {
		t.Fatal(err)
	}
	if _, err := m.Fit(samples(t, x, []int{4}, y, nil), BatchSize(8), Epochs(3), InitialEpoch(2), Callbacks(CSVLogger(path, AppendRows(true))), quiet); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) != 4 || lines[0] != "epoch,accuracy,loss" || !strings.HasPrefix(lines[1], "0,") || !strings.HasPrefix(lines[3], "2,") {
		t.Errorf("csv:\n%s", b)
	}
}

// TestResumeMatchesUninterrupted trains 3 epochs straight, and 1 epoch then
// 2 more from the checkpoint in a new model: with shuffling and dropout on,
// the weights must come out identical, since the batches and the masks
// depend only on the seed, the epoch and the restored step counter.
func TestResumeMatchesUninterrupted(t *testing.T) {
	x, y := classification(40, 8)
	s := samples(t, x, []int{4}, y, nil)
	straight := classifier(t, 5, 0.3)
	if _, err := straight.Fit(s, BatchSize(16), Epochs(3), quiet); err != nil {
		t.Fatal(err)
	}
	ck := filepath.Join(t.TempDir(), "ck-{epoch:02d}.safetensors")
	first := classifier(t, 5, 0.3)
	if _, err := first.Fit(s, BatchSize(16), Epochs(1), Callbacks(ModelCheckpoint(ck)), quiet); err != nil {
		t.Fatal(err)
	}
	resumed := classifier(t, 99, 0.3) // another seed: the checkpoint's must win
	info, err := resumed.LoadCheckpoint(strings.Replace(ck, "{epoch:02d}", "01", 1))
	if err != nil {
		t.Fatal(err)
	}
	h, err := resumed.Fit(s, BatchSize(16), Epochs(3), Resume(info), quiet)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(h.Epochs, []int{0, 1, 2}) || len(h.Metrics["loss"]) != 3 {
		t.Errorf("resumed history %v %v", h.Epochs, h.Metrics)
	}
	for _, w := range straight.Weights() {
		if !slices.Equal(getWeight(t, straight, w.Name()), getWeight(t, resumed, w.Name())) {
			t.Errorf("weight %s differs after resuming", w.Name())
		}
	}
}

func TestCheckpointErrors(t *testing.T) {
	x, y := classification(16, 2)
	dir := t.TempDir()
	ck := filepath.Join(dir, "ck.safetensors")
	m := classifier(t, 1, 0)
	if _, err := m.Fit(samples(t, x, []int{4}, y, nil), BatchSize(8), Callbacks(ModelCheckpoint(ck)), quiet); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(ck)
	if err != nil {
		t.Fatal(err)
	}
	truncated := filepath.Join(dir, "truncated.safetensors")
	if err := os.WriteFile(truncated, raw[:len(raw)-10], 0o644); err != nil {
		t.Fatal(err)
	}
	weightsOnly := filepath.Join(dir, "w.safetensors")
	if err := m.SaveWeights(weightsOnly); err != nil {
		t.Fatal(err)
	}
	other := must(t)(Sequential("clf", Input(4), Dense(9, Activation("relu")), Dense(3, Activation("softmax"))))
	if err := other.Compile(Adam(0.01), SparseCategoricalCrossentropy(), OnDevice(testDevice())); err != nil {
		t.Fatal(err)
	}
	sgd := classifier(t, 1, 0)
	if err := sgd.Compile(SGD(0.01), SparseCategoricalCrossentropy(), OnDevice(testDevice())); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		m    *Model
		path string
		want string
	}{
		{"truncated", classifier(t, 1, 0), truncated, "truncated"},
		{"other architecture", other, ck, "different model"},
		{"other optimizer", sgd, ck, "optimizer adam"},
		{"weights only", classifier(t, 1, 0), weightsOnly, "not a checkpoint"},
		{"missing", classifier(t, 1, 0), filepath.Join(dir, "none"), "no such file"},
	} {
		t.Run(c.name, func(t *testing.T) {
			before := slices.Clone(getWeight(t, c.m, "dense/kernel"))
			_, err := c.m.LoadCheckpoint(c.path)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %v, want one containing %q", err, c.want)
			}
			if !slices.Equal(before, getWeight(t, c.m, "dense/kernel")) {
				t.Error("the weights changed")
			}
		})
	}
}

// TestRecompileDropsOldState compiles with Adam, then with SGD: the
// checkpoint must hold SGD's state only, and load into a model compiled with
// SGD alone.
func TestRecompileDropsOldState(t *testing.T) {
	x, y := classification(16, 2)
	m := classifier(t, 1, 0)
	if err := m.Compile(SGD(0.1, Momentum(0.5)), SparseCategoricalCrossentropy(), OnDevice(testDevice())); err != nil {
		t.Fatal(err)
	}
	if _, err := m.Fit(samples(t, x, []int{4}, y, nil), BatchSize(8), quiet); err != nil {
		t.Fatal(err)
	}
	ck := filepath.Join(t.TempDir(), "ck.safetensors")
	if err := m.SaveCheckpoint(ck, 1); err != nil {
		t.Fatal(err)
	}
	ts, _, err := ReadSafetensors(ck)
	if err != nil {
		t.Fatal(err)
	}
	var state []string
	for _, tt := range ts {
		if isStateName(tt.Name) {
			state = append(state, tt.Name)
		}
	}
	want := []string{"optimizer/iterations", "optimizer/learning_rate", "optimizer/momentum/dense/bias", "optimizer/momentum/dense/kernel",
		"optimizer/momentum/dense_1/bias", "optimizer/momentum/dense_1/kernel", "rng/seed"}
	slices.Sort(state)
	if !slices.Equal(state, want) {
		t.Errorf("checkpoint state %v, want %v", state, want)
	}
	fresh := must(t)(Sequential("clf", Input(4), Dense(8, Activation("relu")), Dropout(0), Dense(3, Activation("softmax"))))
	if err := fresh.Compile(SGD(0.1, Momentum(0.5)), SparseCategoricalCrossentropy(), OnDevice(testDevice())); err != nil {
		t.Fatal(err)
	}
	if _, err := fresh.LoadCheckpoint(ck); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(getWeight(t, fresh, "dense/kernel"), getWeight(t, m, "dense/kernel")) {
		t.Error("the weights did not load")
	}
}

// TestEarlyStoppingReason feeds EarlyStopping hand-made sequences of the
// monitored value and checks at which epoch it stops and the reason it
// gives: the number of epochs since the best one, not since the baseline
// was last beaten.
func TestEarlyStoppingReason(t *testing.T) {
	nan := math.NaN()
	for _, c := range []struct {
		name   string
		opts   []CallbackOption
		values []float64
		stop   int // the 0-based epoch it stops at, -1 for never
		reason string
	}{
		{"patience 3", []CallbackOption{Patience(3)}, []float64{0.5, 0.4, 0.3012, 0.35, 0.36, 0.37, 0.2},
			5, "early stopping: val_loss did not improve for 3 epochs (best 0.3012 at epoch 3)"},
		{"baseline not beaten", []CallbackOption{Patience(3), Baseline(0.3)}, []float64{0.5, 0.45, 0.44, 0.46},
			3, "early stopping: val_loss did not beat the baseline 0.3000 in 4 epochs (best 0.4400 at epoch 3)"},
		{"baseline beaten", []CallbackOption{Patience(2), Baseline(0.3)}, []float64{0.5, 0.25, 0.26, 0.27},
			3, "early stopping: val_loss did not improve for 2 epochs (best 0.2500 at epoch 2)"},
		{"min delta", []CallbackOption{Patience(2), MinDelta(0.01)}, []float64{0.5, 0.495, 0.49, 0.485},
			2, "early stopping: val_loss did not improve by more than 0.01 for 2 epochs (best 0.5000 at epoch 1)"},
		{"patience 0", []CallbackOption{Patience(0)}, []float64{0.5, 0.6},
			1, "early stopping: val_loss did not improve for 1 epoch (best 0.5000 at epoch 1)"},
		{"start from epoch", []CallbackOption{Patience(2), StartFromEpoch(2)}, []float64{0.1, 0.2, 0.5, 0.6, 0.7},
			4, "early stopping: val_loss did not improve for 2 epochs (best 0.5000 at epoch 3)"},
		{"mode max", []CallbackOption{Patience(1), Monitor("val_accuracy"), Mode("max")}, []float64{0.8, 0.9, 0.85},
			2, "early stopping: val_accuracy did not improve for 1 epoch (best 0.9000 at epoch 2)"},
		{"never a number", []CallbackOption{Patience(1)}, []float64{nan, nan, nan},
			1, "early stopping: val_loss did not improve for 2 epochs (it was nan every time)"},
		{"improving", []CallbackOption{Patience(1)}, []float64{0.5, 0.4, 0.3}, -1, ""},
	} {
		m := &Model{}
		es := EarlyStopping(c.opts...)
		if err := es.OnTrainBegin(m); err != nil {
			t.Fatal(err)
		}
		monitor := "val_loss"
		if c.name == "mode max" {
			monitor = "val_accuracy"
		}
		stopped := -1
		for epoch, v := range c.values {
			if err := es.OnEpochEnd(m, epoch, Logs{monitor: v}); err != nil {
				t.Fatal(err)
			}
			if m.stop {
				stopped = epoch
				break
			}
		}
		if stopped != c.stop || m.stopReason != c.reason {
			t.Errorf("%s: stopped at epoch %d with %q, want %d with %q", c.name, stopped, m.stopReason, c.stop, c.reason)
		}
	}
}
