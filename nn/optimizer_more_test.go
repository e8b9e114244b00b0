package nn

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/tartanml/tartan/backend"
	"github.com/tartanml/tartan/backend/cpu"
)

// goldenOptimizers is testdata/torch/optimizers.json.
type goldenOptimizers struct {
	X, Y, Kernel [][]float64
	Bias         []float64
	Steps        int
	Cases        map[string]goldenResult
}

// goldenResult is one case of it: the loss before each step, the weights
// after the last.
type goldenResult struct {
	Losses, Kernel, Bias []float64
}

// flat flattens rows into float32s.
func flat(rows ...[]float64) []float32 {
	var out []float32
	for _, r := range rows {
		for _, v := range r {
			out = append(out, float32(v))
		}
	}
	return out
}

// TestOptimizersMatchPyTorch runs five full-batch steps of Adagrad, Nadam
// and Adamax, with and without clipping, on a Dense(2) layer over three
// features and compares every step's loss and the final weights with
// PyTorch's float64 run (testdata/torch/gen_optimizers.py, which says how
// each torch optimizer's arguments make its update Keras's), on the
// reference device and on the CPU backend.
func TestOptimizersMatchPyTorch(t *testing.T) {
	raw, err := os.ReadFile("testdata/torch/optimizers.json")
	if err != nil {
		t.Fatal(err)
	}
	var golden goldenOptimizers
	if err := json.Unmarshal(raw, &golden); err != nil {
		t.Fatal(err)
	}
	cases := map[string]func() Optimizer{
		"adagrad":               func() Optimizer { return Adagrad(0.1, Epsilon(0)) },
		"adagrad initial 0.5":   func() Optimizer { return Adagrad(0.1, Epsilon(0), InitialAccumulatorValue(0.5)) },
		"nadam":                 func() Optimizer { return Nadam(0.01) },
		"nadam beta":            func() Optimizer { return Nadam(0.05, Beta1(0.8), Beta2(0.99)) },
		"adamax":                func() Optimizer { return Adamax(0.01, Epsilon(0)) },
		"adamax clipnorm":       func() Optimizer { return Adamax(0.01, Epsilon(0), ClipNorm(1)) },
		"nadam global_clipnorm": func() Optimizer { return Nadam(0.01, GlobalClipNorm(2)) },
		"adagrad clipvalue":     func() Optimizer { return Adagrad(0.1, Epsilon(0), ClipValue(0.5)) },
	}
	if len(cases) != len(golden.Cases) {
		t.Fatalf("%d cases here, %d in the golden file", len(cases), len(golden.Cases))
	}
	cpuDev := cpu.New()
	defer cpuDev.Close()
	for name, opt := range cases {
		want, ok := golden.Cases[name]
		if !ok {
			t.Fatalf("no golden case %q", name)
		}
		for _, dev := range []backend.Device{testDevice(), cpuDev} {
			t.Run(name+" on "+dev.Info().ID, func(t *testing.T) {
				goldenCase(t, &golden, want, opt(), dev)
			})
		}
	}
}

// goldenCase runs one case of TestOptimizersMatchPyTorch on dev.
func goldenCase(t *testing.T, golden *goldenOptimizers, want goldenResult, opt Optimizer, dev backend.Device) {
	m := must(t)(Sequential("golden", Input(3), Dense(2)))
	setWeight(t, m, "dense/kernel", []int{3, 2}, flat(golden.Kernel...)...)
	setWeight(t, m, "dense/bias", []int{2}, flat(golden.Bias)...)
	if err := m.Compile(opt, MeanSquaredError(), OnDevice(dev)); err != nil {
		t.Fatal(err)
	}
	s := samples(t, flat(golden.X...), []int{3}, flat(golden.Y...), []int{2})
	h, err := m.Fit(s, BatchSize(4), Epochs(golden.Steps), Shuffle(false), quiet)
	if err != nil {
		t.Fatal(err)
	}
	for i, l := range h.Metrics["loss"] {
		if !closeTo(l, want.Losses[i], 1e-5) {
			t.Errorf("step %d: loss %.9f, want %.9f", i+1, l, want.Losses[i])
		}
	}
	for _, w := range []struct {
		name string
		want []float64
	}{{"dense/kernel", want.Kernel}, {"dense/bias", want.Bias}} {
		got := getWeight(t, m, w.name)
		for i := range w.want {
			if !closeTo(float64(got[i]), w.want[i], 1e-5) {
				t.Errorf("%s[%d] = %.9f, want %.9f", w.name, i, got[i], w.want[i])
			}
		}
	}
}

// TestMoreOptimizers runs three steps of each new optimizer, with Keras's
// defaults, on the linear model of TestOptimizers and compares the kernel
// with the updates written out in float64 from Keras's formulas.
func TestMoreOptimizers(t *testing.T) {
	x := []float64{1, 2}
	const y = 1.0
	type state struct {
		w, a, b [2]float64
		p       float64
	}
	grad := func(w [2]float64) [2]float64 {
		pred := w[0]*x[0] + w[1]*x[1]
		return [2]float64{2 * (pred - y) * x[0], 2 * (pred - y) * x[1]}
	}
	sign := func(v float64) float64 {
		switch {
		case v > 0:
			return 1
		case v < 0:
			return -1
		}
		return 0
	}
	cases := []struct {
		name string
		opt  Optimizer
		init float64 // the slots' start
		step func(s *state, t int)
	}{
		{"adagrad", Adagrad(0.01), 0.1, func(s *state, t int) {
			g := grad(s.w)
			for i := range 2 {
				s.a[i] += g[i] * g[i]
				s.w[i] -= 0.01 * g[i] / math.Sqrt(s.a[i]+1e-7)
			}
		}},
		{"nadam", Nadam(0.01), 0, func(s *state, t int) {
			g := grad(s.w)
			u := func(t int) float64 { return 0.9 * (1 - 0.5*math.Pow(0.96, float64(t))) }
			if t == 1 {
				s.p = 1
			}
			s.p *= u(t)
			for i := range 2 {
				s.a[i] += (g[i] - s.a[i]) * 0.1
				s.b[i] += (g[i]*g[i] - s.b[i]) * 0.001
				mhat := u(t+1)*s.a[i]/(1-s.p*u(t+1)) + (1-u(t))*g[i]/(1-s.p)
				vhat := s.b[i] / (1 - math.Pow(0.999, float64(t)))
				s.w[i] -= 0.01 * mhat / (math.Sqrt(vhat) + 1e-7)
			}
		}},
		{"adamax", Adamax(0.01), 0, func(s *state, t int) {
			g := grad(s.w)
			for i := range 2 {
				s.a[i] += (g[i] - s.a[i]) * 0.1
				s.b[i] = math.Max(0.999*s.b[i], math.Abs(g[i]))
				s.w[i] -= 0.01 * s.a[i] / ((1 - math.Pow(0.9, float64(t))) * (s.b[i] + 1e-7))
			}
		}},
		{"lion", Lion(0.01), 0, func(s *state, t int) {
			g := grad(s.w)
			for i := range 2 {
				s.w[i] -= 0.01 * sign(0.9*s.a[i]+0.1*g[i])
				s.a[i] = 0.99*s.a[i] + 0.01*g[i]
			}
		}},
		{"lion weight decay", Lion(0.01, WeightDecay(0.5)), 0, func(s *state, t int) {
			g := grad(s.w)
			for i := range 2 {
				s.w[i] -= s.w[i] * 0.5 * 0.01
				s.w[i] -= 0.01 * sign(0.9*s.a[i]+0.1*g[i])
				s.a[i] = 0.99*s.a[i] + 0.01*g[i]
			}
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m := linearModel(t, c.opt, 0.5, -0.25)
			s := &state{w: [2]float64{0.5, -0.25}, a: [2]float64{c.init, c.init}}
			for step := 1; step <= 3; step++ {
				c.step(s, step)
			}
			if _, err := m.Fit(samples(t, []float32{1, 2}, []int{2}, []float32{1}, []int{1}), BatchSize(1), Epochs(3), quiet); err != nil {
				t.Fatal(err)
			}
			w := getWeight(t, m, "dense/kernel")
			for i := range 2 {
				if !closeTo(float64(w[i]), s.w[i], 2e-6) {
					t.Errorf("w[%d] = %.8f, want %.8f", i, w[i], s.w[i])
				}
			}
		})
	}
}

// TestNewOptimizerStepsByHand checks one step of Adagrad and of Lion worked
// by hand. With kernel (0.5, −0.25), input (1, 2) and target 1 the gradient
// is g = (−2, −4).
//
// Adagrad(1e-3): the accumulator goes from 0.1 to 0.1 + g² = (4.1, 16.1) and
// w −= 1e-3·g/√(acc + 1e-7), so w = (0.500987730, −0.249003110).
//
// Lion(1e-3): sign(0.9·0 + 0.1·g) = (−1, −1), so w = (0.501, −0.249), and
// m = 0.01·g = (−0.02, −0.04).
func TestNewOptimizerStepsByHand(t *testing.T) {
	for _, c := range []struct {
		opt  Optimizer
		w    []float64
		slot string
		s    []float64
	}{
		{Adagrad(1e-3), []float64{0.500987730, -0.249003110}, "optimizer/accumulator/dense/kernel", []float64{4.1, 16.1}},
		{Lion(1e-3), []float64{0.501, -0.249}, "optimizer/m/dense/kernel", []float64{-0.02, -0.04}},
	} {
		m := linearModel(t, c.opt, 0.5, -0.25)
		if _, err := m.Fit(samples(t, []float32{1, 2}, []int{2}, []float32{1}, []int{1}), BatchSize(1), quiet); err != nil {
			t.Fatal(err)
		}
		w := getWeight(t, m, "dense/kernel")
		v, err := m.st.f32(c.slot)
		if err != nil {
			t.Fatal(err)
		}
		for i := range 2 {
			if !closeTo(float64(w[i]), c.w[i], 1e-7) {
				t.Errorf("%s: w[%d] = %.9f, want %.9f", c.opt.Name(), i, w[i], c.w[i])
			}
			if !closeTo(float64(v[i]), c.s[i], 1e-6) {
				t.Errorf("%s: %s[%d] = %v, want %v", c.opt.Name(), c.slot, i, v[i], c.s[i])
			}
		}
	}
}

// TestClippingByHand checks each clipping on one SGD(0.1) step worked by
// hand. The model is Input(2) → Dense(1) with kernel (0.5, −0.25) and bias
// 0; with input (1, 2) and target 1 the gradients are (−2, −4) for the
// kernel (norm √20) and −2 for the bias, √24 for both together.
//
//   - none: kernel (0.7, 0.15), bias 0.2.
//   - ClipNorm(1): the kernel's gradient becomes g/√20, the bias's −1:
//     kernel (0.5 + 0.2/√20, −0.25 + 0.4/√20) = (0.544721360, −0.160557281),
//     bias 0.1.
//   - ClipNorm(10): no norm exceeds 10, nothing changes.
//   - GlobalClipNorm(1): every gradient becomes g/√24: kernel
//     (0.540824829, −0.168350342), bias 0.2/√24 = 0.040824829.
//   - GlobalClipNorm(5): √24 < 5, nothing changes.
//   - ClipValue(1): gradients (−1, −1) and −1: kernel (0.6, −0.15), bias
//     0.1.
func TestClippingByHand(t *testing.T) {
	for _, c := range []struct {
		name   string
		opt    Optimizer
		kernel []float64
		bias   float64
	}{
		{"none", SGD(0.1), []float64{0.7, 0.15}, 0.2},
		{"clipnorm 1", SGD(0.1, ClipNorm(1)), []float64{0.544721360, -0.160557281}, 0.1},
		{"clipnorm 10", SGD(0.1, ClipNorm(10)), []float64{0.7, 0.15}, 0.2},
		{"global_clipnorm 1", SGD(0.1, GlobalClipNorm(1)), []float64{0.540824829, -0.168350342}, 0.040824829},
		{"global_clipnorm 5", SGD(0.1, GlobalClipNorm(5)), []float64{0.7, 0.15}, 0.2},
		{"clipvalue 1", SGD(0.1, ClipValue(1)), []float64{0.6, -0.15}, 0.1},
	} {
		t.Run(c.name, func(t *testing.T) {
			m := must(t)(Sequential("clip", Input(2), Dense(1)))
			setWeight(t, m, "dense/kernel", []int{2, 1}, 0.5, -0.25)
			if err := m.Compile(c.opt, MeanSquaredError(), OnDevice(testDevice())); err != nil {
				t.Fatal(err)
			}
			if _, err := m.Fit(samples(t, []float32{1, 2}, []int{2}, []float32{1}, []int{1}), BatchSize(1), quiet); err != nil {
				t.Fatal(err)
			}
			k := getWeight(t, m, "dense/kernel")
			b := getWeight(t, m, "dense/bias")
			for i := range 2 {
				if !closeTo(float64(k[i]), c.kernel[i], 1e-7) {
					t.Errorf("kernel[%d] = %.9f, want %.9f", i, k[i], c.kernel[i])
				}
			}
			if !closeTo(float64(b[0]), c.bias, 1e-7) {
				t.Errorf("bias = %.9f, want %.9f", b[0], c.bias)
			}
		})
	}
}

// TestGlobalClipNormZeroGradient checks that a zero gradient passes global
// clipping as zero (Keras's scale is c·min(1/0, 1/c) = 1), not as NaN.
// It runs on the CPU backend too, whose float32 division must give the
// same infinity, and checks Lion's sign there: a step of 0.1 against
// gradient (−2, −4).
func TestGlobalClipNormZeroGradient(t *testing.T) {
	cpuDev := cpu.New()
	defer cpuDev.Close()
	for _, dev := range []backend.Device{testDevice(), cpuDev} {
		for _, c := range []struct {
			opt    Optimizer
			kernel []float32
			want   []float32
		}{
			{SGD(0.1, GlobalClipNorm(1)), []float32{0.5, 0.25}, []float32{0.5, 0.25}}, // prediction 1 = target
			{SGD(0.1, ClipNorm(1)), []float32{0.5, 0.25}, []float32{0.5, 0.25}},
			{Lion(0.1), []float32{0.5, -0.25}, []float32{0.6, -0.15}},
		} {
			m := must(t)(Sequential("linear", Input(2), Dense(1, UseBias(false))))
			setWeight(t, m, "dense/kernel", []int{2, 1}, c.kernel...)
			if err := m.Compile(c.opt, MeanSquaredError(), OnDevice(dev)); err != nil {
				t.Fatal(err)
			}
			if _, err := m.Fit(samples(t, []float32{1, 2}, []int{2}, []float32{1}, []int{1}), BatchSize(1), quiet); err != nil {
				t.Fatal(err)
			}
			w := getWeight(t, m, "dense/kernel")
			for i := range w {
				if !closeTo(float64(w[i]), float64(c.want[i]), 1e-7) {
					t.Errorf("%s %v on %s: kernel %v, want %v", c.opt.Name(), c.opt.base().cfg, dev.Info().ID, w, c.want)
					break
				}
			}
		}
	}
}

func TestMoreOptimizerErrors(t *testing.T) {
	for _, c := range []struct {
		opt  Optimizer
		want string
	}{
		{SGD(0.1, ClipNorm(1), ClipValue(0.5)), "nn: sgd: only one of ClipNorm, ClipValue and GlobalClipNorm can be set; got ClipNorm(1), ClipValue(0.5)"},
		{Adam(0.1, GlobalClipNorm(1), ClipNorm(2), ClipValue(3)), "nn: adam: only one of ClipNorm, ClipValue and GlobalClipNorm can be set; got ClipNorm(2), ClipValue(3), GlobalClipNorm(1)"},
		{SGD(0.1, ClipNorm(0)), "nn: sgd: clipnorm 0 must be positive and finite"},
		{RMSprop(0.1, ClipValue(-1)), "nn: rmsprop: clipvalue -1 must be positive and finite"},
		{Adam(0.1, GlobalClipNorm(math.Inf(1))), "nn: adam: global_clipnorm +Inf must be positive and finite"},
		{Adagrad(0.1, Nesterov(true)), "nn: adagrad: option Nesterov does not apply (it accepts WeightDecay, LRSchedule, ClipNorm, ClipValue, GlobalClipNorm, InitialAccumulatorValue, Epsilon)"},
		{Adagrad(0.1, InitialAccumulatorValue(-1)), "nn: adagrad: initial_accumulator_value -1 must be non-negative and finite"},
		{Adagrad(0.1, InitialAccumulatorValue(0), Epsilon(0)), "nn: adagrad: initial_accumulator_value and epsilon are both 0, so a zero gradient divides 0 by 0"},
		{Adagrad(0), "nn: adagrad: learning rate 0 must be positive"},
		{Nadam(0.1, Beta2(1)), "nn: nadam: beta_2 1 must lie in [0, 1)"},
		{Nadam(0.1, Rho(0.5)), "nn: nadam: option Rho does not apply"},
		{Adamax(0.1, Beta1(-0.1)), "nn: adamax: beta_1 -0.1 must lie in [0, 1)"},
		{Adamax(0.1, Epsilon(-1)), "nn: adamax: epsilon -1 is negative"},
		{Lion(0.1, Beta1(0)), "nn: lion: beta_1 0 must lie in (0, 1]; at 0 the optimizer degenerates to sign descent"},
		{Lion(0.1, Beta2(1.5)), "nn: lion: beta_2 1.5 must lie in [0, 1]"},
		{Lion(0.1, Epsilon(1e-8)), "nn: lion: option Epsilon does not apply (it accepts WeightDecay, LRSchedule, ClipNorm, ClipValue, GlobalClipNorm, Beta1, Beta2)"},
	} {
		m := must(t)(Sequential("m", Input(2), Dense(1)))
		err := m.Compile(c.opt, MeanSquaredError(), OnDevice(testDevice()))
		if err == nil || len(err.Error()) < len(c.want) || err.Error()[:len(c.want)] != c.want {
			t.Errorf("error %v, want one starting %q", err, c.want)
		}
	}
}

// TestNewOptimizerCheckpoints trains two steps with each new optimizer,
// checkpoints, trains a third, and checks that a fresh model loaded from
// the checkpoint reaches the same weights and slots in its third step: the
// slots (Adagrad's accumulator, starting at 0.1, Nadam's product of
// momentum factors) travel in the checkpoint, and the optimizer
// configuration is in its metadata.
func TestNewOptimizerCheckpoints(t *testing.T) {
	s := samples(t, []float32{1, 2, -1, 0.5}, []int{2}, []float32{1, -1}, []int{1})
	for _, mk := range []func() Optimizer{
		func() Optimizer { return Adagrad(0.1, InitialAccumulatorValue(0.2)) },
		func() Optimizer { return Nadam(0.01, ClipNorm(1)) },
		func() Optimizer { return Adamax(0.01) },
		func() Optimizer { return Lion(0.01, Beta2(0.9)) },
	} {
		name := mk().Name()
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "ck.safetensors")
			a := linearModel(t, mk(), 0.5, -0.25)
			if _, err := a.Fit(s, BatchSize(1), Epochs(1), Shuffle(false), quiet); err != nil {
				t.Fatal(err)
			}
			if err := a.SaveCheckpoint(path, 1); err != nil {
				t.Fatal(err)
			}
			_, meta, err := ReadSafetensors(path)
			if err != nil {
				t.Fatal(err)
			}
			var cfg map[string]any
			if err := json.Unmarshal([]byte(meta["optimizer"]), &cfg); err != nil {
				t.Fatal(err)
			}
			for k, v := range mk().base().cfg {
				if cfg[k] != v {
					t.Errorf("checkpoint optimizer %s = %v, want %v", k, cfg[k], v)
				}
			}
			if _, err := a.Fit(s, BatchSize(1), Epochs(2), InitialEpoch(1), Shuffle(false), quiet); err != nil {
				t.Fatal(err)
			}
			b := linearModel(t, mk(), 0, 0)
			ck, err := b.LoadCheckpoint(path)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := b.Fit(s, BatchSize(1), Epochs(2), Resume(ck), Shuffle(false), quiet); err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(a.stateNames(), b.stateNames()) {
				t.Fatalf("state %v after resuming, %v straight", b.stateNames(), a.stateNames())
			}
			if name == "nadam" && !slices.Contains(a.stateNames(), uProductVar) {
				t.Errorf("nadam's state %v lacks %s", a.stateNames(), uProductVar)
			}
			for _, n := range append([]string{"dense/kernel"}, a.stateNames()...) {
				if n == iterationsVar || n == seedVar {
					ia, _ := a.st.i64(n)
					ib, _ := b.st.i64(n)
					if !slices.Equal(ia, ib) {
						t.Errorf("%s: %v after resuming, %v straight", n, ib, ia)
					}
					continue
				}
				fa, err := a.st.f32(n)
				if err != nil {
					t.Fatal(err)
				}
				fb, err := b.st.f32(n)
				if err != nil {
					t.Fatal(err)
				}
				if !slices.Equal(fa, fb) {
					t.Errorf("%s: %v after resuming, %v straight", n, fb, fa)
				}
			}
		})
	}
}
