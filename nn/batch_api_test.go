package nn

import (
	"slices"
	"testing"
)

// array makes an Array or fails the test.
func array(t *testing.T, data []float32, shape ...int) *Array {
	t.Helper()
	a, err := NewArray(data, shape...)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// TestOnBatchByHand runs TrainOnBatch twice, then TestOnBatch and
// PredictOnBatch, on Input(2) → Dense(1, no bias) with SGD(0.1), the mean
// squared error and the mean absolute error, over the batch x = (1, 2),
// (0, 1) with targets 1, 0, all worked by hand:
//
//   - Step 1, kernel (0.5, −0.25): predictions 0 and −0.25, errors −1 and
//     −0.25, loss (1 + 0.0625)/2 = 0.53125, mae 0.625; the gradient
//     (2·(−1)·(1, 2) + 2·(−0.25)·(0, 1))/2 = (−1, −2.25) makes the kernel
//     (0.6, −0.025).
//   - Step 2: predictions 0.55 and −0.025, loss (0.2025 + 0.000625)/2 =
//     0.1015625, mae 0.2375 — this batch's alone: accumulated with step 1
//     the loss would be 0.31640625. The gradient (−0.45, −0.925) makes the
//     kernel (0.645, 0.0675).
//   - TestOnBatch: predictions 0.78 and 0.0675, loss (0.0484 +
//     0.00455625)/2 = 0.026478125, mae 0.14375, and no update.
func TestOnBatchByHand(t *testing.T) {
	m := must(t)(Sequential("linear", Input(2), Dense(1, UseBias(false))))
	setWeight(t, m, "dense/kernel", []int{2, 1}, 0.5, -0.25)
	if err := m.Compile(SGD(0.1), MeanSquaredError(), Metrics("mae"), OnDevice(testDevice())); err != nil {
		t.Fatal(err)
	}
	x := array(t, []float32{1, 2, 0, 1}, 2, 2)
	y := array(t, []float32{1, 0}, 2, 1)
	check := func(what string, logs Logs, loss, mae float64) {
		t.Helper()
		if len(logs) != 2 || !closeTo(logs["loss"], loss, 1e-6) || !closeTo(logs["mean_absolute_error"], mae, 1e-6) {
			t.Errorf("%s: logs %v, want loss %v and mean_absolute_error %v", what, logs, loss, mae)
		}
	}
	kernel := func(what string, want ...float64) {
		t.Helper()
		w := getWeight(t, m, "dense/kernel")
		for i := range want {
			if !closeTo(float64(w[i]), want[i], 1e-6) {
				t.Errorf("%s: kernel %v, want %v", what, w, want)
				return
			}
		}
	}
	logs, err := m.TrainOnBatch(x, y)
	if err != nil {
		t.Fatal(err)
	}
	check("step 1", logs, 0.53125, 0.625)
	kernel("after step 1", 0.6, -0.025)
	if logs, err = m.TrainOnBatch(x, y); err != nil {
		t.Fatal(err)
	}
	check("step 2", logs, 0.1015625, 0.2375)
	kernel("after step 2", 0.645, 0.0675)
	if logs, err = m.TestOnBatch(x, y); err != nil {
		t.Fatal(err)
	}
	check("test", logs, 0.026478125, 0.14375)
	kernel("after the test", 0.645, 0.0675)
	if it, _ := m.Iterations(); it != 2 {
		t.Errorf("iterations %d, want 2", it)
	}
	pred, err := m.PredictOnBatch(x)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(pred.Shape, []int{2, 1}) || !closeTo(float64(pred.Data[0]), 0.78, 1e-6) || !closeTo(float64(pred.Data[1]), 0.0675, 1e-6) {
		t.Errorf("predictions %v %v, want (2, 1) [0.78 0.0675]", pred.Shape, pred.Data)
	}
	// A batch of another size compiles its own step.
	if logs, err = m.TestOnBatch(array(t, []float32{0, 1}, 1, 2), array(t, []float32{0}, 1, 1)); err != nil {
		t.Fatal(err)
	}
	check("one sample", logs, 0.0675*0.0675, 0.0675)
}

func TestOnBatchErrors(t *testing.T) {
	m := must(t)(Sequential("m", Input(2), Dense(3, Activation("softmax"))))
	x := array(t, []float32{1, 2}, 1, 2)
	if _, err := m.TrainOnBatch(x, array(t, []float32{1}, 1, 1)); err == nil || err.Error() != `nn: TrainOnBatch "m": the model is not compiled; call Compile first` {
		t.Errorf("uncompiled: %v", err)
	}
	if err := m.Compile(Adam(1e-3), SparseCategoricalCrossentropy(), OnDevice(testDevice())); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		run  func() error
		want string
	}{
		{"no targets", func() error { _, err := m.TrainOnBatch(x, nil); return err }, `nn: TrainOnBatch "m": no targets`},
		{"no inputs", func() error { _, err := m.TestOnBatch(nil, x); return err }, `nn: TestOnBatch "m": no inputs`},
		{"input shape", func() error {
			_, err := m.TrainOnBatch(array(t, []float32{1, 2, 3}, 1, 3), array(t, []float32{1}, 1, 1))
			return err
		}, `nn: TrainOnBatch "m": batch samples have inputs of shape (3,), but model "m" takes (2,) (layer input_layer)`},
		{"label", func() error { _, err := m.TestOnBatch(x, array(t, []float32{3}, 1, 1)); return err },
			`nn: TestOnBatch "m": batch sample 0 has label 3, but model "m" has 3 classes (labels must be whole numbers 0 to 2 for sparse_categorical_crossentropy)`},
		{"sizes", func() error { _, err := m.TrainOnBatch(x, array(t, []float32{1, 2}, 2, 1)); return err },
			`nn: TrainOnBatch "m": FromArrays: 1 input samples but targets of shape [2 1]`},
		{"predict shape", func() error { _, err := m.PredictOnBatch(array(t, []float32{1}, 1, 1)); return err },
			`nn: PredictOnBatch "m": batch samples have inputs of shape (1,), but model "m" takes (2,) (layer input_layer)`},
	} {
		if err := c.run(); err == nil || err.Error() != c.want {
			t.Errorf("%s: error %v, want %s", c.name, err, c.want)
		}
	}
}

// TestGetSetWeights checks GetWeights' order (Keras's: layer by layer,
// BatchNormalization's four in its order), that SetWeights puts back what
// GetWeights returned, and SetWeights' checks, after which nothing changed.
func TestGetSetWeights(t *testing.T) {
	m := must(t)(Sequential("m", Input(4, 4, 1), Conv2D(2, 3), BatchNormalization(), Flatten(), Dense(3, Name("head"))))
	ws, err := m.GetWeights()
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for i, a := range ws {
		got = append(got, m.Weights()[i].Name()+fmtDims(a.Shape))
	}
	want := []string{"conv2d/kernel(3, 3, 1, 2)", "conv2d/bias(2,)", "batch_normalization/gamma(2,)", "batch_normalization/beta(2,)",
		"batch_normalization/moving_mean(2,)", "batch_normalization/moving_variance(2,)", "head/kernel(8, 3)", "head/bias(3,)"}
	if !slices.Equal(got, want) {
		t.Errorf("GetWeights order\n%v, want\n%v", got, want)
	}
	if !slices.Equal(ws[5].Data, []float32{1, 1}) {
		t.Errorf("moving_variance %v, want its initial ones", ws[5].Data)
	}
	// Set every weight to its index plus a tenth of its element's.
	for i, a := range ws {
		for k := range a.Data {
			a.Data[k] = float32(i) + float32(k)/10
		}
	}
	if err := m.SetWeights(ws); err != nil {
		t.Fatal(err)
	}
	back, err := m.GetWeights()
	if err != nil {
		t.Fatal(err)
	}
	for i := range ws {
		if !slices.Equal(back[i].Data, ws[i].Data) {
			t.Errorf("weight %d: %v after SetWeights, want %v", i, back[i].Data, ws[i].Data)
		}
	}
	if k := getWeight(t, m, "head/kernel"); k[1] != 6.1 {
		t.Errorf("head/kernel[1] = %v, want 6.1", k[1])
	}
	bad := slices.Clone(back)
	bad[6] = array(t, make([]float32, 24), 3, 8)
	for _, c := range []struct {
		ws   []*Array
		want string
	}{
		{back[:7], `nn: SetWeights: model "m" has 8 weights, got 7 arrays`},
		{bad, `nn: SetWeights: array 6 is (3, 8) (24 values), but weight "head/kernel" is (8, 3)`},
		{append(slices.Clone(back[:7]), nil), `nn: SetWeights: array 7 (for weight "head/bias", (3,)) is nil`},
	} {
		ws[0].Data[0] = 99 // must not reach the model
		c.ws[0] = ws[0]
		if err := m.SetWeights(c.ws); err == nil || err.Error() != c.want {
			t.Errorf("error %v, want %s", err, c.want)
		}
		if k := getWeight(t, m, "conv2d/kernel"); k[0] != 0 {
			t.Errorf("a failed SetWeights changed conv2d/kernel[0] to %v", k[0])
		}
	}
}
