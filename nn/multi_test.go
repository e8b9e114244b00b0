package nn

import (
	"math"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// twoHeads returns a model of two inputs, a (3,) and b (2,), joined and
// passed through Dense(4, tanh) "hidden", with two outputs: "reg", a
// Dense(1) regression head, and "cls", a Dense(3, softmax) classifier. Its
// weights are fixed values.
func twoHeads(t *testing.T) *Model {
	t.Helper()
	a, b := Input(3), Input(2)
	h := Apply(Dense(4, Activation("tanh"), Name("hidden")), Apply(Concatenate(), a, b))
	reg := Apply(Dense(1, Name("reg")), h)
	cls := Apply(Dense(3, Activation("softmax"), Name("cls")), h)
	m := must(t)(Functional("two", []*Node{a, b}, []*Node{reg, cls}))
	for k, w := range m.Weights() {
		v := make([]float32, w.Size())
		for i := range v {
			v[i] = float32(0.6 * math.Sin(float64(7*k+3*i+1)))
		}
		setWeight(t, m, w.Name(), w.Shape(), v...)
	}
	return m
}

// twoHeadsData is five fixed samples for twoHeads: inputs a and b, the
// regression targets and the class labels.
func twoHeadsData(t *testing.T) (xs, ys []*Array) {
	t.Helper()
	a := array(t, []float32{0.5, -1, 2, 1, 0, -0.5, -1.5, 0.25, 1, 0, 0, 0, 2, 1, -1}, 5, 3)
	b := array(t, []float32{1, 2, -1, 0.5, 0, 0, 0.75, -2, 1, 1}, 5, 2)
	reg := array(t, []float32{0.3, -0.7, 1.2, 0, 0.5}, 5, 1)
	cls := array(t, []float32{0, 2, 1, 1, 2}, 5)
	return []*Array{a, b}, []*Array{reg, cls}
}

// twoHeadsForward computes twoHeads's outputs on the host, in float64,
// from the weights w (by name) for sample i of xs.
func twoHeadsForward(w map[string][]float64, xs []*Array, i int) (reg float64, cls [3]float64) {
	z := []float64{}
	for _, x := range xs[0].Data[3*i : 3*i+3] {
		z = append(z, float64(x))
	}
	for _, x := range xs[1].Data[2*i : 2*i+2] {
		z = append(z, float64(x))
	}
	var h [4]float64
	for j := range h {
		s := w["hidden/bias"][j]
		for k, v := range z {
			s += v * w["hidden/kernel"][k*4+j]
		}
		h[j] = math.Tanh(s)
	}
	reg = w["reg/bias"][0]
	for j, v := range h {
		reg += v * w["reg/kernel"][j]
	}
	var logit [3]float64
	mx := math.Inf(-1)
	for c := range logit {
		logit[c] = w["cls/bias"][c]
		for j, v := range h {
			logit[c] += v * w["cls/kernel"][j*3+c]
		}
		mx = math.Max(mx, logit[c])
	}
	var total float64
	for c := range logit {
		cls[c] = math.Exp(logit[c] - mx)
		total += cls[c]
	}
	for c := range cls {
		cls[c] /= total
	}
	return reg, cls
}

// hostWeights returns every weight of m in float64, by name.
func hostWeights(t *testing.T, m *Model) map[string][]float64 {
	t.Helper()
	out := map[string][]float64{}
	for _, w := range m.Weights() {
		for _, v := range getWeight(t, m, w.Name()) {
			out[w.Name()] = append(out[w.Name()], float64(v))
		}
	}
	return out
}

// twoHeadsLosses computes, on the host, the mean squared error of the
// regression head and the sparse categorical cross-entropy of the
// classifier over all samples of xs and ys with weights w.
func twoHeadsLosses(w map[string][]float64, xs, ys []*Array) (mse, sce float64) {
	n := xs[0].Shape[0]
	for i := range n {
		reg, cls := twoHeadsForward(w, xs, i)
		d := reg - float64(ys[0].Data[i])
		mse += d * d
		sce -= math.Log(cls[int(ys[1].Data[i])])
	}
	return mse / float64(n), sce / float64(n)
}

func compileTwoHeads(t *testing.T, m *Model, opt Optimizer) {
	t.Helper()
	if err := m.Compile(opt, nil, Losses(MeanSquaredError(), SparseCategoricalCrossentropy()), LossWeights(1, 0.5),
		OutputMetrics("reg", "mae"), OutputMetrics("cls", "accuracy"), OnDevice(testDevice())); err != nil {
		t.Fatal(err)
	}
}

// TestMultiEvaluateByHand checks PredictMulti against the host's forward
// pass, then Evaluate's and TestOnBatchMulti's logs against the losses and
// metrics worked on the host from PredictMulti's outputs: loss = mse +
// 0.5·sce, reg_loss = mse, cls_loss = 0.5·sce, and each output's metric.
func TestMultiEvaluateByHand(t *testing.T) {
	m := twoHeads(t)
	compileTwoHeads(t, m, SGD(0.1))
	if got := m.OutputNames(); !slices.Equal(got, []string{"reg", "cls"}) {
		t.Errorf("output names %v, want [reg cls]", got)
	}
	xs, ys := twoHeadsData(t)
	in := mustMulti(t)(FromArrayLists(xs, nil))
	preds, err := m.PredictMulti(in, BatchSize(2), Verbose(0))
	if err != nil {
		t.Fatal(err)
	}
	if len(preds) != 2 || !slices.Equal(preds[0].Shape, []int{5, 1}) || !slices.Equal(preds[1].Shape, []int{5, 3}) {
		t.Fatalf("predictions of shapes %v, want (5, 1) and (5, 3)", shapesOf(preds))
	}
	w := hostWeights(t, m)
	for i := range 5 {
		reg, cls := twoHeadsForward(w, xs, i)
		if !closeTo(float64(preds[0].Data[i]), reg, 1e-5) {
			t.Errorf("sample %d: reg %v, host %v", i, preds[0].Data[i], reg)
		}
		for c := range cls {
			if !closeTo(float64(preds[1].Data[3*i+c]), cls[c], 1e-5) {
				t.Errorf("sample %d: cls %v, host %v", i, preds[1].Data[3*i:3*i+3], cls)
				break
			}
		}
	}
	// The losses and metrics from the predictions.
	var mse, sce, mae, correct float64
	for i := range 5 {
		d := float64(preds[0].Data[i]) - float64(ys[0].Data[i])
		mse += d * d
		mae += math.Abs(d)
		p := preds[1].Data[3*i : 3*i+3]
		label := int(ys[1].Data[i])
		sce -= math.Log(float64(p[label]))
		if argMax(p) == label {
			correct++
		}
	}
	want := Logs{"loss": (mse + 0.5*sce) / 5, "reg_loss": mse / 5, "cls_loss": 0.5 * sce / 5,
		"reg_mean_absolute_error": mae / 5, "cls_accuracy": correct / 5}
	check := func(what string, got Logs) {
		t.Helper()
		if len(got) != len(want) {
			t.Errorf("%s: logs %v, want the keys of %v", what, got, want)
		}
		for k, v := range want {
			if g, ok := got[k]; !ok || !closeTo(g, v, 1e-5) {
				t.Errorf("%s: %s = %v, want %v", what, k, got[k], v)
			}
		}
	}
	data := mustMulti(t)(FromArrayLists(xs, ys))
	logs, err := m.Evaluate(data, BatchSize(2), Verbose(0))
	if err != nil {
		t.Fatal(err)
	}
	check("Evaluate", logs)
	logs, err = m.TestOnBatchMulti(xs, ys)
	if err != nil {
		t.Fatal(err)
	}
	check("TestOnBatchMulti", logs)
	outs, err := m.PredictOnBatchMulti(xs)
	if err != nil {
		t.Fatal(err)
	}
	for k := range outs {
		if !slices.Equal(outs[k].Data, preds[k].Data) {
			t.Errorf("PredictOnBatchMulti output %d: %v, PredictMulti %v", k, outs[k].Data, preds[k].Data)
		}
	}

	// The same losses given by output name, and weighted by name.
	m2 := twoHeads(t)
	if err := m2.Compile(SGD(0.1), nil, OutputLoss("cls", SparseCategoricalCrossentropy()), OutputLoss("reg", MeanSquaredError()),
		OutputLossWeight("cls", 0.5), OutputWithMetrics("reg", MeanAbsoluteErrorMetric()), OutputMetrics("cls", "acc"), OnDevice(testDevice())); err != nil {
		t.Fatal(err)
	}
	logs, err = m2.Evaluate(data, Verbose(0))
	if err != nil {
		t.Fatal(err)
	}
	check("by name", logs)
}

// mustMulti is must for MultiSamples.
func mustMulti(t *testing.T) func(MultiSamples, error) MultiSamples {
	return func(s MultiSamples, err error) MultiSamples {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
}

// lenOnly is Data that is neither Samples nor MultiSamples.
type lenOnly int

func (l lenOnly) Len() int { return int(l) }

func shapesOf(as []*Array) [][]int {
	var out [][]int
	for _, a := range as {
		out = append(out, a.Shape)
	}
	return out
}

// TestMultiTrainOnBatchGradient checks one TrainOnBatchMulti step with
// SGD(lr): every weight moves by −lr times the gradient of the weighted
// total mse + 0.5·sce, the gradient taken on the host by central finite
// differences of twoHeadsLosses in float64; and the logged loss is the
// host's before the update.
func TestMultiTrainOnBatchGradient(t *testing.T) {
	const lr = 0.1
	m := twoHeads(t)
	compileTwoHeads(t, m, SGD(lr))
	xs, ys := twoHeadsData(t)
	w := hostWeights(t, m)
	total := func() float64 {
		mse, sce := twoHeadsLosses(w, xs, ys)
		return mse + 0.5*sce
	}
	before := total()
	mse, sce := twoHeadsLosses(w, xs, ys)
	logs, err := m.TrainOnBatchMulti(xs, ys)
	if err != nil {
		t.Fatal(err)
	}
	if !closeTo(logs["loss"], before, 1e-5) || !closeTo(logs["reg_loss"], mse, 1e-5) || !closeTo(logs["cls_loss"], 0.5*sce, 1e-5) {
		t.Errorf("logs %v, want loss %v, reg_loss %v, cls_loss %v", logs, before, mse, 0.5*sce)
	}
	after := hostWeights(t, m)
	const eps = 1e-6
	for _, wt := range m.Weights() {
		name := wt.Name()
		for i := range w[name] {
			v := w[name][i]
			w[name][i] = v + eps
			up := total()
			w[name][i] = v - eps
			down := total()
			w[name][i] = v
			g := (up - down) / (2 * eps)
			if got, want := after[name][i]-v, -lr*g; math.Abs(got-want) > 2e-6 {
				t.Errorf("%s[%d] moved by %v, want −lr·gradient = %v", name, i, got, want)
			}
		}
	}
	if it, _ := m.Iterations(); it != 1 {
		t.Errorf("iterations %d, want 1", it)
	}
}

// TestMultiFitLearns trains twoHeads on a synthetic task, reg = a₀ + b₁ and
// cls = the index of a's largest value, and checks that both outputs'
// losses fall, on the training and the validation samples, with the
// History keyed as Keras keys it.
func TestMultiFitLearns(t *testing.T) {
	m := twoHeads(t)
	if err := m.Compile(Adam(0.05), nil, Losses(MeanSquaredError(), SparseCategoricalCrossentropy()), LossWeights(1, 0.5),
		OutputMetrics("cls", "accuracy"), OnDevice(testDevice()), Seed(3)); err != nil {
		t.Fatal(err)
	}
	const n = 120
	a, b := make([]float32, n*3), make([]float32, n*2)
	reg, cls := make([]float32, n), make([]float32, n)
	for i := range n {
		for k := range 3 {
			a[3*i+k] = float32(math.Sin(float64(5*i + 2*k + 1)))
		}
		for k := range 2 {
			b[2*i+k] = float32(math.Cos(float64(3*i + k)))
		}
		reg[i] = a[3*i] + b[2*i+1]
		cls[i] = float32(argMax(a[3*i : 3*i+3]))
	}
	data := mustMulti(t)(FromArrayLists([]*Array{array(t, a, n, 3), array(t, b, n, 2)}, []*Array{array(t, reg, n, 1), array(t, cls, n)}))
	hist, err := m.Fit(data, Epochs(15), BatchSize(16), ValidationSplit(0.25), Verbose(0))
	if err != nil {
		t.Fatal(err)
	}
	keys := []string{"loss", "reg_loss", "cls_loss", "cls_accuracy", "val_loss", "val_reg_loss", "val_cls_loss", "val_cls_accuracy"}
	if len(hist.Metrics) != len(keys) {
		t.Errorf("history keys %v, want %v", hist.Metrics, keys)
	}
	for _, k := range keys {
		if len(hist.Metrics[k]) != 15 {
			t.Fatalf("history %s: %v, want 15 epochs", k, hist.Metrics[k])
		}
	}
	for _, k := range []string{"reg_loss", "cls_loss", "val_reg_loss", "val_cls_loss"} {
		v := hist.Metrics[k]
		if first, last := v[0], v[len(v)-1]; !(last < 0.5*first) {
			t.Errorf("%s went from %v to %v; want it at least halved", k, first, last)
		}
	}
	for i, l := range hist.Metrics["loss"] {
		if s := hist.Metrics["reg_loss"][i] + hist.Metrics["cls_loss"][i]; !closeTo(l, s, 1e-5) {
			t.Errorf("epoch %d: loss %v, but reg_loss + cls_loss = %v", i, l, s)
		}
	}
	if acc := hist.Metrics["val_cls_accuracy"][14]; acc < 0.8 {
		t.Errorf("validation accuracy %v after 15 epochs, want at least 0.8", acc)
	}

	// The last quarter given as ValidationData trains and validates as the
	// split did: the same shuffled batches of the first 90 samples.
	part := func(as []*Array, lo, hi int) []*Array {
		var out []*Array
		for _, a := range as {
			per := len(a.Data) / a.Shape[0]
			out = append(out, array(t, slices.Clone(a.Data[lo*per:hi*per]), append([]int{hi - lo}, a.Shape[1:]...)...))
		}
		return out
	}
	xs := []*Array{array(t, a, n, 3), array(t, b, n, 2)}
	ys := []*Array{array(t, reg, n, 1), array(t, cls, n)}
	m2 := twoHeads(t)
	if err := m2.Compile(Adam(0.05), nil, Losses(MeanSquaredError(), SparseCategoricalCrossentropy()), LossWeights(1, 0.5),
		OutputMetrics("cls", "accuracy"), OnDevice(testDevice()), Seed(3)); err != nil {
		t.Fatal(err)
	}
	h2, err := m2.Fit(mustMulti(t)(FromArrayLists(part(xs, 0, 90), part(ys, 0, 90))), Epochs(15), BatchSize(16), Verbose(0),
		ValidationData(mustMulti(t)(FromArrayLists(part(xs, 90, n), part(ys, 90, n)))))
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range keys {
		if !slices.Equal(h2.Metrics[k], hist.Metrics[k]) {
			t.Errorf("%s: %v with ValidationData, %v with ValidationSplit", k, h2.Metrics[k], hist.Metrics[k])
		}
	}
}

// TestMultiSampleWeight checks that sample weights apply to every output:
// one epoch of SGD over four samples in one batch, with weights 4, 0, 0, 0,
// moves the weights as a step on the first sample alone does.
func TestMultiSampleWeight(t *testing.T) {
	xs, ys := twoHeadsData(t)
	first := func(as []*Array) []*Array {
		var out []*Array
		for _, a := range as {
			per := len(a.Data) / a.Shape[0]
			out = append(out, array(t, slices.Clone(a.Data[:per]), append([]int{1}, a.Shape[1:]...)...))
		}
		return out
	}
	four := func(as []*Array) []*Array {
		var out []*Array
		for _, a := range as {
			per := len(a.Data) / a.Shape[0]
			out = append(out, array(t, slices.Clone(a.Data[:4*per]), append([]int{4}, a.Shape[1:]...)...))
		}
		return out
	}
	weighted := twoHeads(t)
	compileTwoHeads(t, weighted, SGD(0.1))
	data := mustMulti(t)(FromArrayLists(four(xs), four(ys)))
	if _, err := weighted.Fit(data, BatchSize(4), Shuffle(false), SampleWeight([]float64{4, 0, 0, 0}), Verbose(0)); err != nil {
		t.Fatal(err)
	}
	alone := twoHeads(t)
	compileTwoHeads(t, alone, SGD(0.1))
	if _, err := alone.TrainOnBatchMulti(first(xs), first(ys)); err != nil {
		t.Fatal(err)
	}
	for _, w := range weighted.Weights() {
		a, b := getWeight(t, weighted, w.Name()), getWeight(t, alone, w.Name())
		for i := range a {
			if !closeTo(float64(a[i]), float64(b[i]), 1e-6) {
				t.Errorf("%s: weighted %v, first sample alone %v", w.Name(), a, b)
				break
			}
		}
	}
	if _, err := weighted.Fit(data, ClassWeight(map[int]float64{0: 2}), Verbose(0)); err == nil ||
		err.Error() != `nn: Fit: class weights apply to models of one output; model "two" has 2 (reg, cls): give SampleWeight instead` {
		t.Errorf("class weights: %v", err)
	}
}

// TestMultiSaveLoad saves a trained two-output model and checks that the
// loaded one predicts the same outputs and compiles again by output name.
func TestMultiSaveLoad(t *testing.T) {
	m := twoHeads(t)
	compileTwoHeads(t, m, SGD(0.1))
	xs, ys := twoHeadsData(t)
	if _, err := m.TrainOnBatchMulti(xs, ys); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "two.safetensors")
	if err := m.Save(path); err != nil {
		t.Fatal(err)
	}
	l, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := l.SetDevice(testDevice()); err != nil {
		t.Fatal(err)
	}
	in := mustMulti(t)(FromArrayLists(xs, nil))
	want, err := m.PredictMulti(in, Verbose(0))
	if err != nil {
		t.Fatal(err)
	}
	got, err := l.PredictMulti(in, Verbose(0))
	if err != nil {
		t.Fatal(err)
	}
	for k := range want {
		if !slices.Equal(got[k].Shape, want[k].Shape) || !slices.Equal(got[k].Data, want[k].Data) {
			t.Errorf("output %d: loaded model predicts %v %v, saved one %v %v", k, got[k].Shape, got[k].Data, want[k].Shape, want[k].Data)
		}
	}
	if names := l.OutputNames(); !slices.Equal(names, []string{"reg", "cls"}) {
		t.Errorf("loaded output names %v", names)
	}
	compileTwoHeads(t, l, SGD(0.1))
	a, err := m.Evaluate(mustMulti(t)(FromArrayLists(xs, ys)), Verbose(0))
	if err != nil {
		t.Fatal(err)
	}
	b, err := l.Evaluate(mustMulti(t)(FromArrayLists(xs, ys)), Verbose(0))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range a {
		if b[k] != v {
			t.Errorf("%s: loaded %v, saved %v", k, b[k], v)
		}
	}
}

// TestMultiOneLossForAll checks that a loss given to Compile applies to
// every output, and Metrics to every output, logged under its name.
func TestMultiOneLossForAll(t *testing.T) {
	x := Input(2)
	p := Apply(Dense(1, UseBias(false), Name("p")), x)
	q := Apply(Dense(1, UseBias(false), Name("q")), x)
	m := must(t)(Functional("pq", []*Node{x}, []*Node{p, q}))
	setWeight(t, m, "p/kernel", []int{2, 1}, 1, 0)
	setWeight(t, m, "q/kernel", []int{2, 1}, 0, 2)
	if err := m.Compile(SGD(0.1), MeanSquaredError(), Metrics("mae"), LossWeights(2, 1), OnDevice(testDevice())); err != nil {
		t.Fatal(err)
	}
	// x = (1, 3), (2, -1): p = 1, 2; q = 6, −2. Targets p: 0, 0; q: 5, 0.
	xs := []*Array{array(t, []float32{1, 3, 2, -1}, 2, 2)}
	ys := []*Array{array(t, []float32{0, 0}, 2, 1), array(t, []float32{5, 0}, 2, 1)}
	logs, err := m.TestOnBatchMulti(xs, ys)
	if err != nil {
		t.Fatal(err)
	}
	// p: mse (1 + 4)/2 = 2.5, mae 1.5; q: mse (1 + 4)/2 = 2.5, mae 1.5.
	want := Logs{"loss": 2*2.5 + 2.5, "p_loss": 5, "q_loss": 2.5, "p_mean_absolute_error": 1.5, "q_mean_absolute_error": 1.5}
	if len(logs) != len(want) {
		t.Errorf("logs %v, want %v", logs, want)
	}
	for k, v := range want {
		if !closeTo(logs[k], v, 1e-6) {
			t.Errorf("%s = %v, want %v", k, logs[k], v)
		}
	}
	// A single-input model predicts with Predict's Samples too.
	if _, err := m.Predict(samples(t, []float32{1, 2}, []int{2}, nil, nil), Verbose(0)); err == nil ||
		err.Error() != `nn: Predict: model "pq" has 2 outputs ("p", "q"); use PredictMulti, which returns one Array per output` {
		t.Errorf("Predict of two outputs: %v", err)
	}
	outs, err := m.PredictMulti(samples(t, []float32{1, 2}, []int{2}, nil, nil), Verbose(0))
	if err != nil {
		t.Fatal(err)
	}
	if len(outs) != 2 || outs[0].Data[0] != 1 || outs[1].Data[0] != 4 {
		t.Errorf("PredictMulti of Samples: %v %v", outs[0], outs[1])
	}
}

// TestMultiErrors checks the messages of data and options that do not
// suit a model of several inputs and outputs.
func TestMultiErrors(t *testing.T) {
	m := twoHeads(t)
	xs, ys := twoHeadsData(t)
	for _, c := range []struct {
		name string
		opts []CompileOption
		want string
	}{
		{"count", []CompileOption{Losses(MeanSquaredError())},
			`nn: Compile "two": Losses gives 1 losses for the model's 2 outputs (reg, cls); give one per output`},
		{"unknown", []CompileOption{OutputLoss("rg", MeanSquaredError())},
			`nn: Compile "two": OutputLoss: the model has no output "rg" (its outputs: reg, cls)`},
		{"missing", []CompileOption{OutputLoss("reg", MeanSquaredError())},
			`nn: Compile "two": output "cls" has no loss; OutputLoss must give every output one`},
		{"both", []CompileOption{Losses(MeanSquaredError(), MeanSquaredError()), OutputLoss("reg", MeanSquaredError())},
			`nn: Compile "two": give Losses or OutputLoss, not both`},
		{"weights", []CompileOption{Losses(MeanSquaredError(), SparseCategoricalCrossentropy()), LossWeights(1)},
			`nn: Compile "two": LossWeights gives 1 weights for the model's 2 outputs (reg, cls); give one per output`},
		{"negative", []CompileOption{Losses(MeanSquaredError(), SparseCategoricalCrossentropy()), OutputLossWeight("cls", -1)},
			`nn: Compile "two": OutputLossWeight: the loss weight -1 of output "cls" must be finite and not negative`},
		{"target", []CompileOption{Losses(MeanSquaredError(), MeanSquaredError()), OutputMetrics("cls", "accuracy", "acc")},
			`nn: Compile "two": metric "accuracy" of output "cls" is given twice (logged as "cls_accuracy")`},
	} {
		if err := m.Compile(SGD(0.1), nil, append(c.opts, OnDevice(testDevice()))...); err == nil || err.Error() != c.want {
			t.Errorf("%s: %v\nwant %s", c.name, err, c.want)
		}
	}
	if err := m.Compile(SGD(0.1), MeanSquaredError(), Losses(MeanSquaredError(), MeanSquaredError()), OnDevice(testDevice())); err == nil ||
		err.Error() != `nn: Compile "two": give one loss to Compile or per-output losses (Losses, OutputLoss), not both` {
		t.Errorf("loss and Losses: %v", err)
	}
	compileTwoHeads(t, m, SGD(0.1))
	for _, c := range []struct {
		name string
		run  func() error
		want string
	}{
		{"one input", func() error {
			_, err := m.TrainOnBatchMulti(xs[:1], ys)
			return err
		}, `nn: TrainOnBatchMulti "two": 1 input array given, but the model takes 2 inputs ("input_layer" (3,), "input_layer_1" (2,))`},
		{"one target", func() error {
			_, err := m.TestOnBatchMulti(xs, ys[1:])
			return err
		}, `nn: TestOnBatchMulti "two": 1 target array given, but the model has 2 outputs ("reg", "cls"), each needing one`},
		{"input shape", func() error {
			_, err := m.TrainOnBatchMulti([]*Array{xs[0], xs[0]}, ys)
			return err
		}, `nn: TrainOnBatchMulti "two": batch samples have input 1 of shape (3,), but model "two"'s input 1, "input_layer_1", takes (2,)`},
		{"target shape", func() error {
			_, err := m.TrainOnBatchMulti(xs, []*Array{ys[0], array(t, make([]float32, 15), 5, 3)})
			return err
		}, `nn: TrainOnBatchMulti "two": batch samples, output "cls": targets of shape (3,) do not suit loss sparse_categorical_crossentropy, which wants () for this model`},
		{"label", func() error {
			_, err := m.TestOnBatchMulti(xs, []*Array{ys[0], array(t, []float32{0, 1, 2, 3, 0}, 5)})
			return err
		}, `nn: TestOnBatchMulti "two": batch sample 3 has label 3 for output "cls", which has 3 classes (labels must be whole numbers 0 to 2 for sparse_categorical_crossentropy)`},
		{"sample counts", func() error {
			_, err := m.TrainOnBatchMulti([]*Array{xs[0], array(t, make([]float32, 8), 4, 2)}, ys)
			return err
		}, `nn: TrainOnBatchMulti "two": input "input_layer_1" has shape [4 2], input "input_layer" [5 3]: every array needs a first dimension counting the same samples`},
		{"target counts", func() error {
			_, err := m.TrainOnBatchMulti(xs, []*Array{ys[0], array(t, []float32{0, 1}, 2)})
			return err
		}, `nn: TrainOnBatchMulti "two": the targets of output "cls" have shape [2], but input "input_layer" has 5 samples (shape [5 3])`},
		{"single Samples", func() error {
			_, err := m.Evaluate(samples(t, make([]float32, 6), []int{3}, make([]float32, 2), []int{1}), Verbose(0))
			return err
		}, `nn: evaluation samples have 1 input, but model "two" takes 2 inputs ("input_layer" (3,), "input_layer_1" (2,)); give one array per input, in this order (FromArrayLists)`},
		{"Fit targets", func() error {
			_, err := m.Fit(mustMulti(t)(FromArrayLists(xs, ys[:1])), Verbose(0))
			return err
		}, `nn: training samples have 1 target, but model "two" has 2 outputs ("reg", "cls"), each needing one`},
		{"validation shape", func() error {
			_, err := m.Fit(mustMulti(t)(FromArrayLists(xs, ys)), Verbose(0), ValidationData(mustMulti(t)(FromArrayLists([]*Array{xs[0], array(t, make([]float32, 15), 5, 3)}, ys))))
			return err
		}, `nn: validation samples have input 1 of shape (3,), but model "two"'s input 1, "input_layer_1", takes (2,)`},
		{"no targets", func() error {
			_, err := m.Fit(mustMulti(t)(FromArrayLists(xs, nil)), Verbose(0))
			return err
		}, `nn: the training samples have no targets`},
		{"Predict", func() error {
			_, err := m.Predict(mustMulti(t)(FromArrayLists(xs, nil)), Verbose(0))
			return err
		}, `nn: Predict: model "two" has 2 outputs ("reg", "cls"); use PredictMulti, which returns one Array per output`},
		{"PredictOnBatch", func() error {
			_, err := m.PredictOnBatch(xs[0])
			return err
		}, `nn: PredictOnBatch: model "two" has 2 outputs ("reg", "cls"); use PredictOnBatchMulti, which returns one Array per output`},
		{"not data", func() error {
			_, err := m.Evaluate(lenOnly(3), Verbose(0))
			return err
		}, `nn: the evaluation samples are a nn.lenOnly, which is neither Samples nor MultiSamples`},
	} {
		if err := c.run(); err == nil || err.Error() != c.want {
			t.Errorf("%s: %v\nwant %s", c.name, err, c.want)
		}
	}
	for _, c := range []struct {
		name   string
		xs, ys []*Array
		want   string
	}{
		{"none", nil, nil, `nn: FromArrayLists: no input arrays`},
		{"nil", []*Array{xs[0], nil}, nil, `nn: FromArrayLists: input 1 is nil`},
		{"counts", []*Array{xs[0], array(t, make([]float32, 4), 2, 2)}, nil,
			`nn: FromArrayLists: input 1 has 2 samples (shape [2 2]), but input 0 has 5 (shape [5 3])`},
		{"target counts", xs, []*Array{array(t, make([]float32, 4), 4, 1)},
			`nn: FromArrayLists: target 0 has 4 samples (shape [4 1]), but input 0 has 5 (shape [5 3])`},
		{"values", []*Array{{Shape: []int{2, 2}, Data: make([]float32, 3)}}, nil,
			`nn: FromArrayLists: input 0 of shape [2 2] needs 4 values, got 3`},
	} {
		if _, err := FromArrayLists(c.xs, c.ys); err == nil || !strings.HasPrefix(err.Error(), c.want) {
			t.Errorf("%s: %v\nwant %s", c.name, err, c.want)
		}
	}
}

// TestMultiInputsOneOutput checks a model of two inputs and one output:
// Predict returns its one Array, and Evaluate logs only "loss" and the
// metrics under their own names, as for any model of one output, with
// values worked by hand.
func TestMultiInputsOneOutput(t *testing.T) {
	a, b := Input(1), Input(2)
	y := Apply(Dense(1, UseBias(false)), Apply(Concatenate(), a, b))
	m := must(t)(Functional("join", []*Node{a, b}, []*Node{y}))
	setWeight(t, m, "dense/kernel", []int{3, 1}, 1, 2, -1)
	if err := m.Compile(SGD(0.1), MeanSquaredError(), Metrics("mae"), OnDevice(testDevice())); err != nil {
		t.Fatal(err)
	}
	// Samples (a | b): (1 | 1, 0) → 3; (0 | 2, 1) → 3; (2 | 0, 4) → −2.
	xs := []*Array{array(t, []float32{1, 0, 2}, 3, 1), array(t, []float32{1, 0, 2, 1, 0, 4}, 3, 2)}
	ys := []*Array{array(t, []float32{3, 1, 0}, 3, 1)}
	p, err := m.Predict(mustMulti(t)(FromArrayLists(xs, nil)), BatchSize(2), Verbose(0))
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(p.Shape, []int{3, 1}) || !slices.Equal(p.Data, []float32{3, 3, -2}) {
		t.Errorf("Predict: %v %v, want (3, 1) [3 3 -2]", p.Shape, p.Data)
	}
	logs, err := m.Evaluate(mustMulti(t)(FromArrayLists(xs, ys)), BatchSize(2), Verbose(0))
	if err != nil {
		t.Fatal(err)
	}
	// Errors 0, 2, −2: mse 8/3, mae 4/3.
	if len(logs) != 2 || !closeTo(logs["loss"], 8.0/3, 1e-6) || !closeTo(logs["mean_absolute_error"], 4.0/3, 1e-6) {
		t.Errorf("logs %v, want loss 8/3 and mean_absolute_error 4/3", logs)
	}
	out, err := m.PredictOnBatchMulti(xs)
	if err != nil {
		t.Fatal(err)
	}
	if len(out) != 1 || !slices.Equal(out[0].Data, []float32{3, 3, -2}) {
		t.Errorf("PredictOnBatchMulti: %v", out)
	}
	if _, err := m.TrainOnBatch(xs[0], ys[0]); err == nil || err.Error() != `nn: TrainOnBatch "join": 1 input array given, but the model takes 2 inputs ("input_layer" (1,), "input_layer_1" (2,))` {
		t.Errorf("TrainOnBatch of one array: %v", err)
	}
}

// TestMultiCheckpointResume checks that a two-output run stopped after two
// epochs and resumed from its checkpoint ends where an uninterrupted run of
// four epochs ends, with the same per-output history.
func TestMultiCheckpointResume(t *testing.T) {
	xs, ys := twoHeadsData(t)
	data := mustMulti(t)(FromArrayLists(xs, ys))
	run := func() *Model {
		m := twoHeads(t)
		if err := m.Compile(Adam(0.01), nil, Losses(MeanSquaredError(), SparseCategoricalCrossentropy()), LossWeights(1, 0.5),
			OutputMetrics("cls", "accuracy"), OnDevice(testDevice()), Seed(5)); err != nil {
			t.Fatal(err)
		}
		return m
	}
	whole := run()
	want, err := whole.Fit(data, Epochs(4), BatchSize(2), Verbose(0))
	if err != nil {
		t.Fatal(err)
	}
	first := run()
	if _, err := first.Fit(data, Epochs(2), BatchSize(2), Verbose(0)); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "ck.safetensors")
	if err := first.SaveCheckpoint(path, 2); err != nil {
		t.Fatal(err)
	}
	second := run()
	ck, err := second.LoadCheckpoint(path)
	if err != nil {
		t.Fatal(err)
	}
	got, err := second.Fit(data, Epochs(4), BatchSize(2), Verbose(0), Resume(ck))
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"loss", "reg_loss", "cls_loss", "cls_accuracy"} {
		if !slices.Equal(got.Metrics[k], want.Metrics[k]) {
			t.Errorf("%s: resumed %v, uninterrupted %v", k, got.Metrics[k], want.Metrics[k])
		}
	}
	for _, w := range whole.Weights() {
		if !slices.Equal(getWeight(t, second, w.Name()), getWeight(t, whole, w.Name())) {
			t.Errorf("%s differs after resuming", w.Name())
		}
	}
}
