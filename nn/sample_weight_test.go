package nn

import (
	"math"
	"strings"
	"testing"
)

// TestSampleWeightByHand trains one step worked by hand: Dense(1) without
// bias, kernel 1, inputs 1, 2, 3, targets 0, mean squared error, weights
// 1, 0, 2. The loss is (1·1 + 0·4 + 2·9)/3 = 19/3; its gradient with
// respect to the kernel is Σ wᵢ·2xᵢ·xᵢ/3 = (2 + 0 + 36)/3, so SGD(0.01)
// leaves 1 − 0.38/3.
func TestSampleWeightByHand(t *testing.T) {
	m := must(t)(Sequential("m", Input(1), Dense(1, UseBias(false), KernelInitializer(Ones()))))
	if err := m.Compile(SGD(0.01), MeanSquaredError(), OnDevice(testDevice())); err != nil {
		t.Fatal(err)
	}
	h, err := m.Fit(samples(t, []float32{1, 2, 3}, []int{1}, []float32{0, 0, 0}, []int{1}), BatchSize(3), SampleWeight([]float64{1, 0, 2}), quiet)
	if err != nil {
		t.Fatal(err)
	}
	if got := h.Metrics["loss"][0]; !closeTo(got, 19.0/3, 1e-6) {
		t.Errorf("loss %v, want 19/3", got)
	}
	if got := getWeight(t, m, "dense/kernel")[0]; !closeTo(float64(got), 1-0.38/3, 1e-6) {
		t.Errorf("kernel %v, want %v", got, 1-0.38/3)
	}
}

// fitWith trains a fresh small classifier for two epochs (shuffled, with
// a partial last batch) and returns its history's losses and final kernel.
func fitWith(t *testing.T, loss Loss, y []float32, yshape []int, classes int, opts ...FitOption) ([]float64, []float32) {
	t.Helper()
	x := []float32{0.5, -1, 2, 0.25, 1, 1, -0.5, 0.75, 1.5, -2, 0.1, 0.3, 0.9, -0.4}
	m := must(t)(Sequential("m", Input(2), Dense(classes, Activation(map[bool]string{true: "sigmoid", false: "softmax"}[classes == 1]))))
	if err := m.InitWeights(3); err != nil {
		t.Fatal(err)
	}
	if err := m.Compile(SGD(0.1), loss, OnDevice(testDevice()), Seed(5)); err != nil {
		t.Fatal(err)
	}
	h, err := m.Fit(samples(t, x, []int{2}, y, yshape), append([]FitOption{BatchSize(3), Epochs(2), quiet}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	return h.Metrics["loss"], getWeight(t, m, "dense/kernel")
}

func sameRun(t *testing.T, what string, l1, l2 []float64, k1, k2 []float32) {
	t.Helper()
	for i := range l1 {
		if !closeTo(l1[i], l2[i], 2e-6) {
			t.Errorf("%s: epoch %d loss %v and %v", what, i+1, l1[i], l2[i])
		}
	}
	for i := range k1 {
		if !closeTo(float64(k1[i]), float64(k2[i]), 2e-6) {
			t.Errorf("%s: kernel %d %v and %v", what, i, k1[i], k2[i])
		}
	}
}

// TestWeightsAgree checks the weighted step against other paths: weights
// of 1 train as no weights do, and class weights train as the sample
// weights they stand for, for class indices, one-hot and 0/1 targets.
func TestWeightsAgree(t *testing.T) {
	labels := []float32{0, 2, 1, 2, 0, 1, 2}
	ones := []float64{1, 1, 1, 1, 1, 1, 1}
	l1, k1 := fitWith(t, SparseCategoricalCrossentropy(), labels, []int{}, 3)
	l2, k2 := fitWith(t, SparseCategoricalCrossentropy(), labels, []int{}, 3, SampleWeight(ones))
	sameRun(t, "weights of 1", l1, l2, k1, k2)
	if l1[0] == l1[1] {
		t.Fatalf("the loss did not change between epochs: %v", l1)
	}

	cw := map[int]float64{0: 0.5, 2: 3} // class 1 weighs 1
	per := []float64{0.5, 3, 1, 3, 0.5, 1, 3}
	l1, k1 = fitWith(t, SparseCategoricalCrossentropy(), labels, []int{}, 3, ClassWeight(cw))
	l2, k2 = fitWith(t, SparseCategoricalCrossentropy(), labels, []int{}, 3, SampleWeight(per))
	sameRun(t, "class weights of class indices", l1, l2, k1, k2)
	l3, _ := fitWith(t, SparseCategoricalCrossentropy(), labels, []int{}, 3)
	if closeTo(l1[0], l3[0], 1e-3) {
		t.Errorf("class weights changed nothing: %v and %v", l1, l3)
	}

	var onehot []float32
	for _, c := range labels {
		v := []float32{0, 0, 0}
		v[int(c)] = 1
		onehot = append(onehot, v...)
	}
	l1, k1 = fitWith(t, CategoricalCrossentropy(), onehot, []int{3}, 3, ClassWeight(cw))
	l2, k2 = fitWith(t, CategoricalCrossentropy(), onehot, []int{3}, 3, SampleWeight(per))
	sameRun(t, "class weights of one-hot targets", l1, l2, k1, k2)

	bin := []float32{0, 1, 1, 0, 0, 1, 1}
	l1, k1 = fitWith(t, BinaryCrossentropy(), bin, []int{1}, 1, ClassWeight(map[int]float64{1: 4}))
	l2, k2 = fitWith(t, BinaryCrossentropy(), bin, []int{1}, 1, SampleWeight([]float64{1, 4, 4, 1, 1, 4, 4}))
	sameRun(t, "class weights of 0/1 targets", l1, l2, k1, k2)
}

// TestSampleWeightsFollowShuffle freezes a model (a learning rate of
// 1e-30) and weights only sample 3: however the epoch is shuffled, its
// loss is sample 3's squared error over the 5 samples.
func TestSampleWeightsFollowShuffle(t *testing.T) {
	m := must(t)(Sequential("m", Input(1), Dense(1, UseBias(false), KernelInitializer(Ones()))))
	if err := m.Compile(SGD(1e-30), MeanSquaredError(), OnDevice(testDevice()), Seed(9)); err != nil {
		t.Fatal(err)
	}
	h, err := m.Fit(samples(t, []float32{1, 2, 3, 4, 5}, []int{1}, []float32{0, 0, 0, 0, 0}, []int{1}),
		BatchSize(2), Epochs(3), SampleWeight([]float64{0, 0, 0, 1, 0}), quiet)
	if err != nil {
		t.Fatal(err)
	}
	for e, got := range h.Metrics["loss"] {
		if !closeTo(got, 16.0/5, 1e-6) {
			t.Errorf("epoch %d: loss %v, want 16/5", e+1, got)
		}
	}
}

func TestWeightErrors(t *testing.T) {
	m := must(t)(Sequential("clf", Input(2), Dense(3, Activation("softmax"))))
	if err := m.Compile(SGD(0.1), SparseCategoricalCrossentropy(), OnDevice(testDevice())); err != nil {
		t.Fatal(err)
	}
	s := samples(t, []float32{1, 2, 3, 4}, []int{2}, []float32{0, 2}, []int{})
	cases := []struct {
		opts []FitOption
		want string
	}{
		{[]FitOption{SampleWeight([]float64{1})}, "nn: Fit: 1 sample weights for 2 training samples; give one per sample"},
		{[]FitOption{SampleWeight([]float64{1, -0.5})}, "nn: Fit: sample weight 1 is -0.5; weights must be finite and not negative"},
		{[]FitOption{SampleWeight([]float64{math.NaN(), 1})}, "nn: Fit: sample weight 0 is NaN; weights must be finite and not negative"},
		{[]FitOption{ClassWeight(map[int]float64{0: 1, 3: 2})}, `nn: Fit: class weight for class 3, but model "clf" has 3 classes (0 to 2)`},
		{[]FitOption{ClassWeight(map[int]float64{1: math.Inf(1)})}, "nn: Fit: class weight +Inf of class 1; weights must be finite and not negative"},
		{[]FitOption{ClassWeight(map[int]float64{1: 2}), SampleWeight([]float64{1, 1})}, "nn: Fit: give SampleWeight or ClassWeight, not both"},
	}
	for _, c := range cases {
		_, err := m.Fit(s, append(c.opts, quiet)...)
		if err == nil || err.Error() != c.want {
			t.Errorf("error %v, want %q", err, c.want)
		}
	}
	if _, err := m.Evaluate(s, SampleWeight([]float64{1, 1}), quiet); err == nil || !strings.Contains(err.Error(), "option SampleWeight does not apply") {
		t.Errorf("Evaluate with SampleWeight: %v", err)
	}
	// Targets of several axes have no class.
	r := must(t)(Sequential("reg", Input(2), Dense(4), Reshape([]int{2, 2})))
	if err := r.Compile(SGD(0.1), MeanSquaredError(), OnDevice(testDevice())); err != nil {
		t.Fatal(err)
	}
	_, err := r.Fit(samples(t, []float32{1, 2}, []int{2}, []float32{1, 2, 3, 4}, []int{2, 2}), ClassWeight(map[int]float64{0: 2}), quiet)
	if err == nil || err.Error() != "nn: Fit: class weights need class-index, one-hot or single 0/1 targets, not targets of shape (2, 2)" {
		t.Errorf("class weights of 2×2 targets: %v", err)
	}
}
