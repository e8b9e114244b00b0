package nn

import (
	"math"
	"strings"
	"testing"
)

// linearModel returns Input(2) → Dense(1, no bias) with kernel w, compiled
// with opt and the mean squared error.
func linearModel(t *testing.T, opt Optimizer, w ...float32) *Model {
	t.Helper()
	m := must(t)(Sequential("linear", Input(2), Dense(1, UseBias(false))))
	setWeight(t, m, "dense/kernel", []int{2, 1}, w...)
	if err := m.Compile(opt, MeanSquaredError(), OnDevice(testDevice())); err != nil {
		t.Fatal(err)
	}
	return m
}

// TestAdamStepByHand checks one Adam step worked by hand. With kernel
// (0.5, −0.25), input (1, 2) and target 1 the prediction is 0, the loss 1
// and the gradient 2·(0 − 1)·(1, 2) = (−2, −4). Then m = 0.1·g =
// (−0.2, −0.4), v = 0.001·g² = (0.004, 0.016), lr_t = 1e-3·√0.001/0.1 =
// 3.16227766e-4 and w −= lr_t·m/(√v + 1e-7) = (−0.000999998419,
// −0.00099999921), so w = (0.500999998, −0.249000001).
func TestAdamStepByHand(t *testing.T) {
	m := linearModel(t, Adam(1e-3), 0.5, -0.25)
	h, err := m.Fit(samples(t, []float32{1, 2}, []int{2}, []float32{1}, []int{1}), BatchSize(1), quiet)
	if err != nil {
		t.Fatal(err)
	}
	if got := h.Metrics["loss"][0]; got != 1 {
		t.Errorf("loss %v, want 1", got)
	}
	w := getWeight(t, m, "dense/kernel")
	for i, want := range []float64{0.500999998, -0.249000001} {
		if math.Abs(float64(w[i])-want) > 1e-7 {
			t.Errorf("w[%d] = %.9f, want %.9f", i, w[i], want)
		}
	}
	for _, c := range []struct {
		name string
		want []float64
	}{{"optimizer/m/dense/kernel", []float64{-0.2, -0.4}}, {"optimizer/v/dense/kernel", []float64{0.004, 0.016}}} {
		v, err := m.st.f32(c.name)
		if err != nil {
			t.Fatal(err)
		}
		for i := range c.want {
			if !closeTo(float64(v[i]), c.want[i], 1e-6) {
				t.Errorf("%s[%d] = %v, want %v", c.name, i, v[i], c.want[i])
			}
		}
	}
	if it, _ := m.Iterations(); it != 1 {
		t.Errorf("iterations %d, want 1", it)
	}
}

// TestOptimizers runs three steps of each optimizer on the linear model and
// compares the kernel with the same updates written out in float64 from
// Keras's formulas.
func TestOptimizers(t *testing.T) {
	x := []float64{1, 2}
	const y = 1.0
	type state struct{ w, a, b, c [2]float64 }
	grad := func(w [2]float64) [2]float64 {
		pred := w[0]*x[0] + w[1]*x[1]
		return [2]float64{2 * (pred - y) * x[0], 2 * (pred - y) * x[1]}
	}
	adam := func(lr func(int) float64, wd float64) func(s *state, t int) {
		return func(s *state, t int) {
			g := grad(s.w)
			for i := range 2 {
				s.w[i] -= s.w[i] * wd * lr(t-1)
				s.a[i] += (g[i] - s.a[i]) * 0.1
				s.b[i] += (g[i]*g[i] - s.b[i]) * 0.001
				lrt := lr(t-1) * math.Sqrt(1-math.Pow(0.999, float64(t))) / (1 - math.Pow(0.9, float64(t)))
				s.w[i] -= lrt * s.a[i] / (math.Sqrt(s.b[i]) + 1e-7)
			}
		}
	}
	constant := func(v float64) func(int) float64 { return func(int) float64 { return v } }
	cases := []struct {
		name string
		opt  Optimizer
		step func(s *state, t int)
	}{
		{"sgd", SGD(0.01), func(s *state, t int) {
			g := grad(s.w)
			for i := range 2 {
				s.w[i] -= 0.01 * g[i]
			}
		}},
		{"sgd momentum", SGD(0.01, Momentum(0.9)), func(s *state, t int) {
			g := grad(s.w)
			for i := range 2 {
				s.a[i] = 0.9*s.a[i] - 0.01*g[i]
				s.w[i] += s.a[i]
			}
		}},
		{"sgd nesterov", SGD(0.01, Momentum(0.9), Nesterov(true)), func(s *state, t int) {
			g := grad(s.w)
			for i := range 2 {
				s.a[i] = 0.9*s.a[i] - 0.01*g[i]
				s.w[i] += 0.9*s.a[i] - 0.01*g[i]
			}
		}},
		{"adam", Adam(0.01), adam(constant(0.01), 0)},
		{"adamw", AdamW(0.01), adam(constant(0.01), 0.004)},
		{"adam exponential decay", Adam(0, LRSchedule(ExponentialDecay(0.01, 2, 0.5, false))),
			adam(func(s int) float64 { return 0.01 * math.Pow(0.5, float64(s)/2) }, 0)},
		{"rmsprop", RMSprop(0.01), func(s *state, t int) {
			g := grad(s.w)
			for i := range 2 {
				s.a[i] = 0.9*s.a[i] + 0.1*g[i]*g[i]
				s.w[i] -= 0.01 * g[i] / math.Sqrt(s.a[i]+1e-7)
			}
		}},
		{"rmsprop centered momentum", RMSprop(0.01, Centered(true), Momentum(0.5)), func(s *state, t int) {
			g := grad(s.w)
			for i := range 2 {
				s.a[i] = 0.9*s.a[i] + 0.1*g[i]*g[i]
				s.c[i] = 0.9*s.c[i] + 0.1*g[i]
				inc := 0.01 * g[i] / math.Sqrt(s.a[i]-s.c[i]*s.c[i]+1e-7)
				s.b[i] = 0.5*s.b[i] + inc
				s.w[i] -= s.b[i]
			}
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m := linearModel(t, c.opt, 0.5, -0.25)
			s := &state{w: [2]float64{0.5, -0.25}}
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

// TestSchedules checks the schedules on the host against values worked by
// hand, and the graph's rate against the host's.
func TestSchedules(t *testing.T) {
	cases := []struct {
		name  string
		s     Schedule
		steps []int
		want  []float64
	}{
		{"exponential", ExponentialDecay(0.1, 10, 0.5, false), []int{0, 10, 15, 20}, []float64{0.1, 0.05, 0.1 * math.Pow(0.5, 1.5), 0.025}},
		{"exponential staircase", ExponentialDecay(0.1, 10, 0.5, true), []int{0, 9, 10, 15, 20}, []float64{0.1, 0.1, 0.05, 0.05, 0.025}},
		// Half way down the cosine: ½(1 + cos π/2) = ½, so 0.1·(0.9·½ + 0.1).
		{"cosine", CosineDecay(0.1, 100, 0.1), []int{0, 50, 100, 150, 25}, []float64{0.1, 0.055, 0.01, 0.01, 0.1 * (0.9*0.5*(1+math.Sqrt(0.5)) + 0.1)}},
		{"piecewise", PiecewiseConstantDecay([]int{10, 20}, []float64{1, 0.5, 0.1}), []int{0, 10, 11, 20, 21, 1000}, []float64{1, 1, 0.5, 0.5, 0.1, 0.1}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if err := c.s.err(); err != nil {
				t.Fatal(err)
			}
			for i, st := range c.steps {
				if got := c.s.Rate(st); !closeTo(got, c.want[i], 1e-12) {
					t.Errorf("Rate(%d) = %v, want %v", st, got, c.want[i])
				}
				if got := scheduleOnDevice(t, c.s, st); !closeTo(got, c.want[i], 2e-6) {
					t.Errorf("graph rate at step %d = %v, want %v", st, got, c.want[i])
				}
			}
		})
	}
	for _, bad := range []Schedule{ExponentialDecay(0, 1, 0.5, false), CosineDecay(1, 0, 0), PiecewiseConstantDecay([]int{2, 1}, []float64{1, 2, 3}), PiecewiseConstantDecay([]int{1}, []float64{1})} {
		if bad.err() == nil {
			t.Errorf("%v accepted", bad.spec())
		}
	}
}

// scheduleOnDevice evaluates a schedule's graph at step.
func scheduleOnDevice(t *testing.T, s Schedule, step int) float64 {
	t.Helper()
	m := linearModel(t, SGD(0, LRSchedule(s)), 0, 0)
	if err := m.st.setI64(iterationsVar, []int64{int64(step)}); err != nil {
		t.Fatal(err)
	}
	// With a zero kernel and target 1, one SGD step moves w by
	// lr·2·(1, 2): the rate is the first weight's change over 2.
	if _, err := m.Fit(samples(t, []float32{1, 2}, []int{2}, []float32{1}, []int{1}), BatchSize(1), quiet); err != nil {
		t.Fatal(err)
	}
	return float64(getWeight(t, m, "dense/kernel")[0]) / 2
}

func TestOptimizerErrors(t *testing.T) {
	for _, c := range []struct {
		opt  Optimizer
		want string
	}{
		{Adam(-1), "learning rate -1"},
		{Adam(1e-3, Nesterov(true)), "adam: option Nesterov does not apply"},
		{SGD(0.1, Momentum(2)), "momentum 2"},
		{Adam(1e-3, Beta1(1)), "beta_1 1"},
		{RMSprop(1e-3, Rho(-0.5)), "rho -0.5"},
		{Adam(1e-2, LRSchedule(CosineDecay(1e-3, 10, 0))), "disagrees with the schedule"},
		{AdamW(1e-3, WeightDecay(-1)), "weight decay -1"},
	} {
		m := must(t)(Sequential("m", Input(2), Dense(1)))
		err := m.Compile(c.opt, MeanSquaredError(), OnDevice(testDevice()))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("error %v, want one containing %q", err, c.want)
		}
	}
}
