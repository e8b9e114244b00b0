package nn

import (
	"strings"
	"testing"
)

// TestRegularizersByHand trains one SGD(0.1) step with each regularizer on
// input (1, 2) and target 1, worked by hand. The step's loss (what
// TrainOnBatch and Fit report) is the mean squared error plus the penalty,
// and the penalty's gradient joins the loss's:
//
//   - L2(0.1) on kernel (0.5, −0.25): prediction 0, error 1, penalty
//     0.1·(0.25 + 0.0625) = 0.03125, loss 1.03125; gradient (−2, −4) +
//     0.2·w = (−1.9, −4.05), so the kernel becomes (0.69, 0.155).
//   - L1(0.1): penalty 0.1·0.75 = 0.075, loss 1.075; gradient (−2, −4) +
//     0.1·sign(w) = (−1.9, −4.1), kernel (0.69, 0.16).
//   - L1L2(0.1, 0.1) on the kernel and L2(1) on a bias of 0.5: prediction
//     0.5, error 0.25; penalties 0.075 + 0.03125 and 0.25, loss 0.60625;
//     kernel gradient (−1, −2) + (0.1, −0.1) + (0.1, −0.05) = (−0.8, −2.15),
//     kernel (0.58, −0.035); bias gradient −1 + 2·0.5 = 0, bias 0.5.
func TestRegularizersByHand(t *testing.T) {
	x := []float32{1, 2}
	for _, c := range []struct {
		name   string
		layer  Layer
		bias   float32
		loss   float64
		kernel []float64
	}{
		{"l2", Dense(1, UseBias(false), KernelRegularizer(L2(0.1))), 0, 1.03125, []float64{0.69, 0.155}},
		{"l1", Dense(1, UseBias(false), KernelRegularizer(L1(0.1))), 0, 1.075, []float64{0.69, 0.16}},
		{"l1l2 and bias", Dense(1, KernelRegularizer(L1L2(0.1, 0.1)), BiasRegularizer(L2(1))), 0.5, 0.60625, []float64{0.58, -0.035}},
	} {
		t.Run(c.name, func(t *testing.T) {
			m := must(t)(Sequential("reg", Input(2), c.layer))
			setWeight(t, m, "dense/kernel", []int{2, 1}, 0.5, -0.25)
			if m.weight("dense/bias") != nil {
				setWeight(t, m, "dense/bias", []int{1}, c.bias)
			}
			if err := m.Compile(SGD(0.1), MeanSquaredError(), OnDevice(testDevice())); err != nil {
				t.Fatal(err)
			}
			logs, err := m.TrainOnBatch(array(t, x, 1, 2), array(t, []float32{1}, 1, 1))
			if err != nil {
				t.Fatal(err)
			}
			if !closeTo(logs["loss"], c.loss, 1e-6) {
				t.Errorf("loss %v, want %v", logs["loss"], c.loss)
			}
			k := getWeight(t, m, "dense/kernel")
			for i := range 2 {
				if !closeTo(float64(k[i]), c.kernel[i], 1e-6) {
					t.Errorf("kernel %v, want %v", k, c.kernel)
					break
				}
			}
			if m.weight("dense/bias") != nil {
				if b := getWeight(t, m, "dense/bias"); !closeTo(float64(b[0]), float64(c.bias), 1e-6) {
					t.Errorf("bias %v, want %v", b[0], c.bias)
				}
			}
		})
	}
}

// TestRegularizerEvaluateAndConv checks that evaluation reports the
// penalty too, on a Conv2D: a 1×1 kernel of 2 with L2(0.5) on an input of 1
// and target 1 predicts 2, so the loss is 1 + 0.5·4 = 3 and the gradient
// 2·1 + 0.5·2·2 = 4 takes the kernel to 1.6; the evaluation then sees
// prediction 1.6, loss 0.36 + 0.5·2.56 = 1.64. Fit's history and Evaluate
// agree with TrainOnBatch and TestOnBatch.
func TestRegularizerEvaluateAndConv(t *testing.T) {
	m := must(t)(Sequential("conv", Input(1, 1, 1), Conv2D(1, 1, UseBias(false), KernelRegularizer(L2(0.5)))))
	setWeight(t, m, "conv2d/kernel", []int{1, 1, 1, 1}, 2)
	if err := m.Compile(SGD(0.1), MeanSquaredError(), OnDevice(testDevice())); err != nil {
		t.Fatal(err)
	}
	s := samples(t, []float32{1}, []int{1, 1, 1}, []float32{1}, []int{1, 1, 1})
	h, err := m.Fit(s, quiet)
	if err != nil {
		t.Fatal(err)
	}
	if got := h.Metrics["loss"][0]; !closeTo(got, 3, 1e-6) {
		t.Errorf("Fit loss %v, want 3", got)
	}
	if k := getWeight(t, m, "conv2d/kernel"); !closeTo(float64(k[0]), 1.6, 1e-6) {
		t.Errorf("kernel %v, want 1.6", k[0])
	}
	logs, err := m.Evaluate(s, quiet)
	if err != nil {
		t.Fatal(err)
	}
	if !closeTo(logs["loss"], 1.64, 1e-6) {
		t.Errorf("Evaluate loss %v, want 1.64", logs["loss"])
	}
}

// TestRegularizerFrozenAndArchitecture checks that a frozen layer's
// penalty does not count (Keras sums trainable weights' penalties only),
// and that regularizers survive the architecture in Keras's form.
func TestRegularizerFrozenAndArchitecture(t *testing.T) {
	m := must(t)(Sequential("m", Input(2), Dense(2, UseBias(false), Trainable(false), KernelRegularizer(L2(100))),
		Dense(1, Name("head"), UseBias(false), KernelRegularizer(L1(0.5)))))
	setWeight(t, m, "dense/kernel", []int{2, 2}, 1, 0, 0, 1)
	setWeight(t, m, "head/kernel", []int{2, 1}, 0.5, 0.25)
	if err := m.Compile(SGD(0.1), MeanSquaredError(), OnDevice(testDevice())); err != nil {
		t.Fatal(err)
	}
	x, y := array(t, []float32{1, 2}, 1, 2), array(t, []float32{0}, 1, 1)
	// Prediction 0.5 + 0.5 = 1, error 1; head's penalty 0.5·0.75.
	logs, err := m.TestOnBatch(x, y)
	if err != nil {
		t.Fatal(err)
	}
	if !closeTo(logs["loss"], 1.375, 1e-6) {
		t.Errorf("loss %v, want 1.375 (without the frozen layer's 100·2)", logs["loss"])
	}
	js, err := m.Architecture()
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"kernel_regularizer":{"class_name":"L2","config":{"l2":100}}`, `"kernel_regularizer":{"class_name":"L1","config":{"l1":0.5}}`} {
		if !strings.Contains(string(js), want) {
			t.Errorf("architecture lacks %s:\n%s", want, js)
		}
	}
	if strings.Contains(string(js), "bias_regularizer") {
		t.Errorf("architecture names a bias regularizer that was not given:\n%s", js)
	}
	back, err := LoadArchitecture(js)
	if err != nil {
		t.Fatal(err)
	}
	if err := back.SetWeights(must2(t)(m.GetWeights())); err != nil {
		t.Fatal(err)
	}
	if err := back.Compile(SGD(0.1), MeanSquaredError(), OnDevice(testDevice())); err != nil {
		t.Fatal(err)
	}
	if logs, err := back.TestOnBatch(x, y); err != nil || !closeTo(logs["loss"], 1.375, 1e-6) {
		t.Errorf("reloaded: loss %v (%v), want 1.375", logs["loss"], err)
	}
	bad := strings.Replace(string(js), `"class_name":"L1"`, `"class_name":"L3"`, 1)
	if _, err := LoadArchitecture([]byte(bad)); err == nil || !strings.Contains(err.Error(), `kernel_regularizer: unknown regularizer "L3" (known: L1, L2, L1L2)`) {
		t.Errorf("unknown regularizer: %v", err)
	}
}

func must2(t *testing.T) func([]*Array, error) []*Array {
	return func(a []*Array, err error) []*Array {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return a
	}
}

func TestRegularizerErrors(t *testing.T) {
	for _, c := range []struct {
		l    Layer
		want string
	}{
		{Dense(1, KernelRegularizer(L2(-1))), "nn: Dense: kernel_regularizer: L2: l2 -1 must be non-negative and finite"},
		{Dense(1, BiasRegularizer(L1L2(0.1, -0.5))), "nn: Dense: bias_regularizer: L1L2: l2 -0.5 must be non-negative and finite"},
		{Conv2D(1, 1, KernelRegularizer(nil)), "nn: Conv2D: nil kernel regularizer"},
		{DepthwiseConv2D(1, KernelRegularizer(L2(1))), "nn: DepthwiseConv2D: option KernelRegularizer does not apply"},
		{Flatten(BiasRegularizer(L2(1))), "nn: Flatten: option BiasRegularizer does not apply"},
	} {
		if err := c.l.base().err; err == nil || !strings.HasPrefix(err.Error(), c.want) {
			t.Errorf("error %v, want one starting %q", err, c.want)
		}
	}
}
