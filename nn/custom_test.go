package nn

import (
	"fmt"
	"math"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/tartanml/tartan/backend"
	"github.com/tartanml/tartan/backend/cpu"
	"github.com/tartanml/tartan/grad"
	"github.com/tartanml/tartan/op"
	"github.com/tartanml/tartan/tile"
)

// tileDenseOp is x·w + b written in the tile language's text form: one
// contraction for the product, the bias added with broadcasting.
func tileDenseOp(g *tile.Graph, x, w, b *tile.Tensor) *tile.Tensor {
	y := tile.ParseContraction(g, "Y[n, j : N, J] = +(X[n, k] * W[k, j])",
		map[string]*tile.Tensor{"X": x, "W": w}, map[string]int{"N": x.Dim(0), "J": w.Dim(1)})
	return g.Add(y, b)
}

// tileDense is a Dense layer written as a LayerDef: a kernel (in, units)
// drawn as Dense's is (glorot uniform), a zero bias, and an optional ReLU.
type tileDense struct {
	units        int
	relu         bool
	kernel, bias *Weight
}

func (d *tileDense) Build(b *LayerBuilder, in []tile.Shape) (tile.Shape, error) {
	if len(in) != 1 || len(in[0]) != 1 {
		return nil, fmt.Errorf("takes one input of rank 1, got %v", in)
	}
	d.kernel = b.AddWeight("kernel", tile.Shape{in[0][0], d.units}, GlorotUniform(), true)
	d.bias = b.AddWeight("bias", tile.Shape{d.units}, Zeros(), true)
	return tile.Shape{d.units}, nil
}

func (d *tileDense) Call(c *CallContext, in []*tile.Tensor) *tile.Tensor {
	y := tileDenseOp(c.Graph(), in[0], c.Weight(d.kernel), c.Weight(d.bias))
	if d.relu {
		y = op.ReLU(c.Graph(), y)
	}
	return y
}

func (d *tileDense) Config() map[string]any { return map[string]any{"units": d.units, "relu": d.relu} }

// newTileDense is the factory registered for class TileDense.
func newTileDense(cfg map[string]any) (LayerDef, error) {
	units, ok := cfg["units"].(float64)
	if !ok || units != math.Trunc(units) || units < 1 || units > 1<<20 {
		return nil, fmt.Errorf("units %v is not a whole number from 1 to 2^20", cfg["units"])
	}
	relu, _ := cfg["relu"].(bool)
	return &tileDense{units: int(units), relu: relu}, nil
}

// customRegister registers the test classes and functions once per process.
var customRegister = sync.OnceValue(func() error {
	if err := RegisterLayer("TileDense", newTileDense); err != nil {
		return err
	}
	if err := RegisterLayer("Shift", func(map[string]any) (LayerDef, error) { return &runningShift{}, nil }); err != nil {
		return err
	}
	return RegisterLambda("square", func(g *tile.Graph, x *tile.Tensor) *tile.Tensor { return g.Mul(x, x) })
})

func mustRegisterCustom(t *testing.T) {
	t.Helper()
	if err := customRegister(); err != nil {
		t.Fatal(err)
	}
}

// customRegression returns n samples of 3 features and 2 targets, a fixed
// non-linear function of them.
func customRegression(t *testing.T, n int) Samples {
	x := make([]float32, 3*n)
	y := make([]float32, 2*n)
	for i := range n {
		a, b, c := float32(i%7)/7-0.5, float32(i%5)/5-0.4, float32(i%3)/3-0.3
		x[3*i], x[3*i+1], x[3*i+2] = a, b, c
		y[2*i], y[2*i+1] = a*b-c, 2*a+b*c
	}
	return samples(t, x, []int{3}, y, []int{2})
}

// customDevices are the backends the custom-layer tests run on.
func customDevices() map[string]func() backend.Device {
	return map[string]func() backend.Device{"reference": testDevice, "cpu": func() backend.Device { return cpu.New() }}
}

// TestCustomDenseMatchesDense trains a model whose hidden layer is
// tileDense and the same model with nn.Dense, from the same seed, on every
// backend: they start from the same weights and end at the same ones.
func TestCustomDenseMatchesDense(t *testing.T) {
	for name, dev := range customDevices() {
		t.Run(name, func(t *testing.T) {
			d := dev()
			defer d.Close()
			build := func(hidden Layer) *Model {
				m := must(t)(Sequential("m", Input(3), hidden, Dense(2, Name("out"))))
				if err := m.InitWeights(7); err != nil {
					t.Fatal(err)
				}
				if err := m.Compile(Adam(0.01), MeanSquaredError(), OnDevice(d), Seed(3)); err != nil {
					t.Fatal(err)
				}
				return m
			}
			custom := build(Custom("TileDense", &tileDense{units: 8, relu: true}, Name("hidden")))
			builtin := build(Dense(8, Activation("relu"), Name("hidden")))
			defer custom.Close()
			defer builtin.Close()
			if got, want := custom.Summary(), builtin.Summary(); strings.ReplaceAll(got, "(TileDense)", "(Dense)    ") != want {
				t.Errorf("summaries differ:\n%s\n%s", got, want)
			}
			compare := func(when string, tol float64) {
				t.Helper()
				for _, w := range builtin.Weights() {
					a, b := getWeight(t, custom, w.Name()), getWeight(t, builtin, w.Name())
					for i := range b {
						if math.Abs(float64(a[i]-b[i])) > tol {
							t.Fatalf("%s: %s[%d] = %v with the custom layer, %v with Dense", when, w.Name(), i, a[i], b[i])
						}
					}
				}
			}
			compare("initial", 0)
			train := customRegression(t, 64)
			var losses [2][]float64
			for i, m := range []*Model{custom, builtin} {
				h, err := m.Fit(train, Epochs(5), BatchSize(10), quiet) // 7 steps an epoch, the last of 4
				if err != nil {
					t.Fatal(err)
				}
				losses[i] = h.Metrics["loss"]
			}
			if !(losses[0][4] < losses[0][0]) {
				t.Errorf("the loss did not fall: %v", losses[0])
			}
			for e := range losses[0] {
				if !closeTo(losses[0][e], losses[1][e], 1e-5) {
					t.Errorf("epoch %d: loss %v with the custom layer, %v with Dense", e, losses[0][e], losses[1][e])
				}
			}
			compare("trained", 1e-5)
			pa, err := custom.Predict(train, quiet)
			if err != nil {
				t.Fatal(err)
			}
			pb, err := builtin.Predict(train, quiet)
			if err != nil {
				t.Fatal(err)
			}
			for i := range pb.Data {
				if math.Abs(float64(pa.Data[i]-pb.Data[i])) > 1e-5 {
					t.Fatalf("prediction %d: %v with the custom layer, %v with Dense", i, pa.Data[i], pb.Data[i])
				}
			}
		})
	}
}

// runningShift is y = x + bias with a non-trainable running mean of its inputs:
// each training step moves mean halfway to the batch's mean of x.
type runningShift struct{ bias, mean *Weight }

func (s *runningShift) Build(b *LayerBuilder, in []tile.Shape) (tile.Shape, error) {
	s.bias = b.AddWeight("bias", in[0], Constant(0.5), true)
	s.mean = b.AddWeight("mean", in[0], Zeros(), false)
	return in[0], nil
}

func (s *runningShift) Call(c *CallContext, in []*tile.Tensor) *tile.Tensor {
	g := c.Graph()
	x := in[0]
	if c.Training() {
		batchMean := g.Div(tile.ParseContraction(g, "M[j : J] = +(X[n, j])", map[string]*tile.Tensor{"X": x}, map[string]int{"J": x.Dim(1)}),
			g.Scalar(float64(c.BatchSize()), tile.Float32))
		half := g.Scalar(0.5, tile.Float32)
		c.Update(s.mean, g.Add(g.Mul(c.Weight(s.mean), half), g.Mul(batchMean, half)))
	}
	return g.Add(x, c.Weight(s.bias))
}

// TestCustomNonTrainableWeight trains a runningShift layer two steps by hand:
// inputs x = (1, 2) and (3, 6), targets 0, SGD at 0.25, the mean squared
// error over the batch's 4 values. The gradient of the bias is
// (x̄ + b)·2/2 per feature: with b = 0.5 it is (2.5, 4.5) and b becomes
// (−0.125, −0.625); then (1.875, 3.375) and b = (−0.59375, −1.46875). The
// running mean moves to (1, 2) then (1.5, 3). Adam would have given it
// slots had it been trainable; it has none.
func TestCustomNonTrainableWeight(t *testing.T) {
	mustRegisterCustom(t)
	for name, dev := range customDevices() {
		t.Run(name, func(t *testing.T) {
			d := dev()
			defer d.Close()
			m := must(t)(Sequential("m", Input(2), Custom("Shift", &runningShift{})))
			if err := m.Compile(SGD(0.25), MeanSquaredError(), OnDevice(d)); err != nil {
				t.Fatal(err)
			}
			defer m.Close()
			train := samples(t, []float32{1, 2, 3, 6}, []int{2}, []float32{0, 0, 0, 0}, []int{2})
			if _, err := m.Fit(train, Epochs(2), BatchSize(2), quiet); err != nil {
				t.Fatal(err)
			}
			for w, want := range map[string][]float64{"shift/bias": {-0.59375, -1.46875}, "shift/mean": {1.5, 3}} {
				got := getWeight(t, m, w)
				for i := range want {
					if !closeTo(float64(got[i]), want[i], 1e-6) {
						t.Errorf("%s = %v, want %v", w, got, want)
						break
					}
				}
			}
			if _, err := m.Evaluate(train, quiet); err != nil {
				t.Fatal(err)
			}
			if got := getWeight(t, m, "shift/mean"); got[0] != 1.5 || got[1] != 3 {
				t.Errorf("Evaluate moved the running mean to %v", got)
			}
			if total, trainable := m.CountParams(); total != 4 || trainable != 2 {
				t.Errorf("CountParams = %d, %d; want 4, 2", total, trainable)
			}
		})
	}
	m := must(t)(Sequential("m", Input(2), Custom("Shift", &runningShift{})))
	if err := m.Compile(Adam(0.1), MeanSquaredError(), OnDevice(testDevice())); err != nil {
		t.Fatal(err)
	}
	if !m.st.has("optimizer/m/shift/bias") || m.st.has("optimizer/m/shift/mean") {
		t.Error("Adam's slots should exist for shift/bias only")
	}
	want := `Model: "m"
┏━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━┳━━━━━━━━━━━━━━━━━━━━━━━━┳━━━━━━━━━━━━━━━┓
┃ Layer (type)                    ┃ Output Shape           ┃       Param # ┃
┡━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━╇━━━━━━━━━━━━━━━━━━━━━━━━╇━━━━━━━━━━━━━━━┩
│ shift (Shift)                   │ (None, 2)              │             4 │
└─────────────────────────────────┴────────────────────────┴───────────────┘
 Total params: 4 (16.00 B)
 Trainable params: 2 (8.00 B)
 Non-trainable params: 2 (8.00 B)
`
	if got := m.Summary(); got != want {
		t.Errorf("Summary:\n%s\nwant\n%s", got, want)
	}
}

// TestCustomFunctionalShared applies one custom layer twice in a
// functional model: the calls share its weights, and Summary counts them
// once. With a bias of 0.5, x → x + 1.
func TestCustomFunctionalShared(t *testing.T) {
	l := Custom("Shift", &runningShift{})
	x := Input(2)
	y := Apply(l, Apply(l, x))
	m := must(t)(Functional("twice", []*Node{x}, []*Node{y}))
	if total, _ := m.CountParams(); total != 4 {
		t.Errorf("%d parameters, want 4", total)
	}
	if err := m.SetDevice(testDevice()); err != nil {
		t.Fatal(err)
	}
	p, err := m.Predict(samples(t, []float32{1, -2}, []int{2}, nil, nil), quiet)
	if err != nil {
		t.Fatal(err)
	}
	if p.Data[0] != 2 || p.Data[1] != -1 {
		t.Errorf("Predict = %v, want [2 -1]", p.Data)
	}
}

// mix is a·w + b·(1 − w) of two inputs of one shape, with w a scalar
// weight.
type mix struct{ w *Weight }

func (m *mix) Build(b *LayerBuilder, in []tile.Shape) (tile.Shape, error) {
	if len(in) != 2 || !in[0].Equal(in[1]) {
		return nil, fmt.Errorf("takes two inputs of one shape, got %v", in)
	}
	m.w = b.AddWeight("w", tile.Shape{}, Constant(0.25), true)
	return in[0], nil
}

func (m *mix) Call(c *CallContext, in []*tile.Tensor) *tile.Tensor {
	g := c.Graph()
	w := c.Weight(m.w)
	return g.Add(g.Mul(in[0], w), g.Mul(in[1], g.Sub(g.Scalar(1, tile.Float32), w)))
}

// TestCustomMultipleInputs mixes a Dense layer's output with the input it
// came from: with the kernel 2·I and no bias, x → 0.25·2x + 0.75·x =
// 1.25·x. Building it on inputs of different shapes is an error.
func TestCustomMultipleInputs(t *testing.T) {
	x := Input(2)
	y := Apply(Custom("Mix", &mix{}), Apply(Dense(2, UseBias(false)), x), x)
	m := must(t)(Functional("mixed", []*Node{x}, []*Node{y}))
	setWeight(t, m, "dense/kernel", []int{2, 2}, 2, 0, 0, 2)
	if err := m.SetDevice(testDevice()); err != nil {
		t.Fatal(err)
	}
	p, err := m.Predict(samples(t, []float32{4, -8}, []int{2}, nil, nil), quiet)
	if err != nil {
		t.Fatal(err)
	}
	if p.Data[0] != 5 || p.Data[1] != -10 {
		t.Errorf("Predict = %v, want [5 -10]", p.Data)
	}
	bad := Apply(Custom("Mix", &mix{}), x, Input(3))
	customErrText(t, bad.Err(), `nn: Mix on input [(None, 2), (None, 3)]: takes two inputs of one shape, got [[2] [3]]`)
}

// TestCustomSaveLoad saves a model of registered custom layers and a
// registered Lambda, from a ModelCheckpoint callback, loads it and
// compares predictions, weights and architecture; it then resumes the
// checkpoint into the model.
func TestCustomSaveLoad(t *testing.T) {
	mustRegisterCustom(t)
	dir := t.TempDir()
	path := filepath.Join(dir, "m.safetensors")
	m := must(t)(Sequential("m", Input(3),
		Custom("TileDense", &tileDense{units: 4, relu: true}),
		RegisteredLambda("square"),
		Custom("TileDense", &tileDense{units: 2})))
	if err := m.Compile(SGD(0.05), MeanSquaredError(), OnDevice(testDevice())); err != nil {
		t.Fatal(err)
	}
	train := customRegression(t, 16)
	if _, err := m.Fit(train, Epochs(2), BatchSize(8), Callbacks(ModelCheckpoint(path)), quiet); err != nil {
		t.Fatal(err)
	}
	back, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	a, err := m.Architecture()
	if err != nil {
		t.Fatal(err)
	}
	b, err := back.Architecture()
	if err != nil {
		t.Fatal(err)
	}
	if d := archDiff(a, b); d != "" || !strings.Contains(string(a), `{"class_name":"TileDense","config":{"name":"tile_dense","trainable":true,"config":{"relu":true,"units":4}}}`) {
		t.Errorf("architectures differ (%s):\n%s\n%s", d, a, b)
	}
	if d, ok := LayerDefOf(back.Layer("tile_dense")).(*tileDense); !ok || d.units != 4 || !d.relu {
		t.Errorf("Load rebuilt tile_dense as %#v", LayerDefOf(back.Layer("tile_dense")))
	}
	if LayerDefOf(back.Layer("lambda")) != nil {
		t.Error("LayerDefOf of a Lambda should be nil")
	}
	if got, want := back.Summary(), m.Summary(); got != want {
		t.Errorf("Summary after Load:\n%s\nwant\n%s", got, want)
	}
	if err := back.SetDevice(testDevice()); err != nil {
		t.Fatal(err)
	}
	pa, err := m.Predict(train, quiet)
	if err != nil {
		t.Fatal(err)
	}
	pb, err := back.Predict(train, quiet)
	if err != nil {
		t.Fatal(err)
	}
	for i := range pa.Data {
		if pa.Data[i] != pb.Data[i] {
			t.Fatalf("prediction %d: %v before saving, %v after loading", i, pa.Data[i], pb.Data[i])
		}
	}
	if _, err := m.LoadCheckpoint(path); err != nil {
		t.Fatal(err)
	}
	if it, _ := m.Iterations(); it != 4 {
		t.Errorf("resumed at step %d, want 4", it)
	}
}

// TestCustomErrors checks the messages of mistakes with custom layers.
func TestCustomErrors(t *testing.T) {
	mustRegisterCustom(t)
	dir := t.TempDir()
	path := filepath.Join(dir, "m.safetensors")
	m := must(t)(Sequential("m", Input(3), Custom("Unregistered", &tileDense{units: 2})))
	if err := m.Save(path); err != nil {
		t.Fatal(err)
	}
	_, err := Load(path)
	customErrText(t, err, "nn: "+path+`: architecture: layer 1 (Unregistered): unknown layer class "Unregistered": it is not built in, and no custom layer of that class is registered; call nn.RegisterLayer("Unregistered", factory) before loading`)

	_, err = Sequential("m", Input(3), Custom("Bad", badWeight{}))
	customErrText(t, err, `nn: Sequential "m": layer 1 of 1 (Bad "bad") on input (None, 3): AddWeight "kernel": shape (3, 0) has a dimension below 1`)

	// A Call that returns the wrong shape is found when the model is built,
	// or, when it does so only in training, when Fit builds the step.
	_, err = Sequential("m", Input(3), Custom("Wrong", wrongShape{}))
	customErrText(t, err, `nn: Sequential "m": layer 1 of 1 (Wrong "wrong") on input (None, 3): checked in inference mode: Call returned shape (2, 3) for a batch of 2, but Build declared the output (None, 2)`)
	m = must(t)(Sequential("m", Input(3), Dense(3), Custom("Wrong", wrongInTraining{})))
	if err := m.Compile(SGD(0.1), MeanSquaredError(), OnDevice(testDevice())); err != nil {
		t.Fatal(err)
	}
	_, err = m.Fit(samples(t, make([]float32, 12), []int{3}, make([]float32, 12), []int{3}), BatchSize(4), quiet)
	customErrText(t, err, `nn: layer wrong (Wrong): tile: wrong: Call returned shape (4, 2) for a batch of 4, but Build declared the output (None, 3)`)

	m = must(t)(Sequential("m", Input(3), Lambda(func(g *tile.Graph, x *tile.Tensor) *tile.Tensor { return g.Neg(x) })))
	customErrText(t, m.Save(path), `nn: layer lambda (Lambda) runs a Go function, which cannot be saved; register the function with nn.RegisterLambda(name, fn) and make the layer with nn.RegisteredLambda(name), or save the weights alone with SaveWeights`)
	if err := m.SaveWeights(path); err != nil {
		t.Errorf("SaveWeights of a model with a Lambda: %v", err)
	}

	customErrText(t, RegisterLayer("Dense", newTileDense), `nn: RegisterLayer: "Dense" is a built-in layer class; give the custom layer a class name of its own`)
	customErrText(t, RegisterLayer("TileDense", newTileDense), `nn: RegisterLayer: class "TileDense" is already registered`)
	customErrText(t, RegisterLayer("Lambda", newTileDense), `nn: RegisterLayer: "Lambda" is a built-in layer class; give the custom layer a class name of its own`)
	customErrText(t, RegisterLayer("my layer", newTileDense), `nn: RegisterLayer: class name "my layer" is not usable (letters, digits, _ . -, not starting with a digit)`)
	_, err = Sequential("m", Input(3), Custom("Conv2D", &tileDense{units: 2}))
	customErrText(t, err, `nn: Sequential "m": layer 1 of 1 (Conv2D "conv2d"): "Conv2D" is a built-in layer class; give the custom layer a class name of its own`)
	_, err = Sequential("m", Input(3), Custom("Mine", nil))
	customErrText(t, err, `nn: Sequential "m": layer 1 of 1 (Mine "mine"): nil LayerDef`)
	_, err = Sequential("m", Input(3), Custom("Mine", &tileDense{units: 2}, Padding("same")))
	customErrText(t, err, `nn: Sequential "m": layer 1 of 1 (Mine "mine"): option Padding does not apply (it accepts Name, Trainable)`)
	_, err = Sequential("m", Input(3), RegisteredLambda("cube"))
	customErrText(t, err, `nn: Sequential "m": layer 1 of 1 (Lambda "lambda"): function "cube" is not registered; call nn.RegisterLambda("cube", fn) first`)

	// A Random draw outside training, an Update of a trainable weight.
	_, err = Sequential("m", Input(3), Custom("Noisy", noisy{}))
	customErrText(t, err, `nn: Sequential "m": layer 1 of 1 (Noisy "noisy") on input (None, 3): checked in inference mode: Random draws only in training steps; check Training() first`)
	m = must(t)(Sequential("m", Input(2), Custom("Pushy", &pushy{})))
	if err := m.Compile(SGD(0.1), MeanSquaredError(), OnDevice(testDevice())); err != nil {
		t.Fatal(err)
	}
	_, err = m.Fit(samples(t, []float32{1, 2}, []int{2}, []float32{0, 0}, []int{2}), quiet)
	customErrText(t, err, `nn: layer pushy (Pushy): tile: pushy: Update of pushy/bias: the weight is trainable, so the optimizer updates it; declare it non-trainable`)
}

// customErrText fails the test unless err's text is want.
func customErrText(t *testing.T, err error, want string) {
	t.Helper()
	if err == nil {
		t.Errorf("no error, want %s", want)
	} else if err.Error() != want {
		t.Errorf("error\n%s\nwant\n%s", err, want)
	}
}

type badWeight struct{}

func (badWeight) Build(b *LayerBuilder, in []tile.Shape) (tile.Shape, error) {
	b.AddWeight("kernel", tile.Shape{in[0][0], 0}, nil, true)
	return in[0], nil
}
func (badWeight) Call(c *CallContext, in []*tile.Tensor) *tile.Tensor { return in[0] }

// wrongShape declares (2) but returns its input, (3).
type wrongShape struct{}

func (wrongShape) Build(*LayerBuilder, []tile.Shape) (tile.Shape, error) { return tile.Shape{2}, nil }
func (wrongShape) Call(c *CallContext, in []*tile.Tensor) *tile.Tensor   { return in[0] }

// wrongInTraining keeps its input's shape, except in training, where it
// drops the last feature.
type wrongInTraining struct{}

func (wrongInTraining) Build(_ *LayerBuilder, in []tile.Shape) (tile.Shape, error) { return in[0], nil }
func (wrongInTraining) Call(c *CallContext, in []*tile.Tensor) *tile.Tensor {
	if c.Training() {
		return c.Graph().Slice(in[0], []int{0, 0}, []int{c.BatchSize(), 2}, nil)
	}
	return in[0]
}

// noisy draws noise whether or not it trains.
type noisy struct{}

func (noisy) Build(_ *LayerBuilder, in []tile.Shape) (tile.Shape, error) { return in[0], nil }
func (noisy) Call(c *CallContext, in []*tile.Tensor) *tile.Tensor {
	return c.Graph().Add(in[0], c.Random(in[0].Shape()))
}

// pushy updates its trainable bias by itself.
type pushy struct{ bias *Weight }

func (p *pushy) Build(b *LayerBuilder, in []tile.Shape) (tile.Shape, error) {
	p.bias = b.AddWeight("bias", in[0], Zeros(), true)
	return in[0], nil
}
func (p *pushy) Call(c *CallContext, in []*tile.Tensor) *tile.Tensor {
	if c.Training() {
		c.Update(p.bias, c.Weight(p.bias))
	}
	return c.Graph().Add(in[0], c.Weight(p.bias))
}

// customDropout zeroes each element with probability rate in training and
// scales the others by 1/(1 − rate), from CallContext.Random, then
// multiplies by a trainable scale (1 at first).
type customDropout struct {
	rate  float64
	scale *Weight
}

func (d *customDropout) Build(b *LayerBuilder, in []tile.Shape) (tile.Shape, error) {
	d.scale = b.AddWeight("scale", tile.Shape{}, Ones(), true)
	return in[0], nil
}

func (d *customDropout) Call(c *CallContext, in []*tile.Tensor) *tile.Tensor {
	g := c.Graph()
	x := g.Mul(in[0], c.Weight(d.scale))
	if !c.Training() {
		return x
	}
	keep := g.Elementwise(tile.Ge, c.Random(x.Shape()), g.Scalar(d.rate, tile.Float32))
	return g.Mul(x, g.Select(keep, g.Scalar(1/(1-d.rate), tile.Float32), g.Scalar(0, tile.Float32)))
}

// TestCustomRandom trains a custom dropout of rate 0.5 on 2000 ones with
// targets 0: the loss of a step is the kept fraction times 4, close to 2;
// the same seed repeats it exactly on every backend, another seed does
// not, and evaluation (no dropout) gives 1.
func TestCustomRandom(t *testing.T) {
	ones := make([]float32, 2000)
	for i := range ones {
		ones[i] = 1
	}
	train := samples(t, ones, []int{2000}, make([]float32, 2000), []int{2000})
	first := func(dev backend.Device, seed int64) float64 {
		m := must(t)(Sequential("m", Input(2000), Custom("CustomDropout", &customDropout{rate: 0.5})))
		if err := m.Compile(SGD(1e-9), MeanSquaredError(), OnDevice(dev), Seed(seed)); err != nil {
			t.Fatal(err)
		}
		defer m.Close()
		h, err := m.Fit(train, quiet)
		if err != nil {
			t.Fatal(err)
		}
		logs, err := m.Evaluate(train, quiet)
		if err != nil {
			t.Fatal(err)
		}
		if !closeTo(logs["loss"], 1, 1e-6) {
			t.Errorf("evaluation loss %v, want 1", logs["loss"])
		}
		return h.Metrics["loss"][0]
	}
	ref := first(testDevice(), 1)
	if math.Abs(ref-2) > 0.15 || ref == 2 {
		t.Errorf("training loss %v, want about 2", ref)
	}
	d := cpu.New()
	defer d.Close()
	if got := first(d, 1); !closeTo(got, ref, 1e-6) {
		t.Errorf("the CPU drew another mask: loss %v, the reference's %v", got, ref)
	}
	if got := first(testDevice(), 2); got == ref {
		t.Errorf("seeds 1 and 2 drew the same mask (loss %v)", got)
	}
}

// TestLambda checks a Lambda's inferred and declared output shapes, its
// values, and its errors.
func TestLambda(t *testing.T) {
	sumRows := func(g *tile.Graph, x *tile.Tensor) *tile.Tensor {
		return tile.ParseContraction(g, "S[n, o : N, 1] = +(X[n, k])", map[string]*tile.Tensor{"X": x}, map[string]int{"N": x.Dim(0)})
	}
	for name, dev := range customDevices() {
		t.Run(name, func(t *testing.T) {
			d := dev()
			defer d.Close()
			m := must(t)(Sequential("m", Input(3), Lambda(sumRows)))
			if got := m.OutputShape(); len(got) != 1 || got[0] != 1 {
				t.Fatalf("output shape %v, want [1]", got)
			}
			if err := m.SetDevice(d); err != nil {
				t.Fatal(err)
			}
			p, err := m.Predict(samples(t, []float32{1, 2, 3, -1, 0.5, 0.25}, []int{3}, nil, nil), quiet)
			if err != nil {
				t.Fatal(err)
			}
			if p.Data[0] != 6 || p.Data[1] != -0.25 {
				t.Errorf("Predict = %v, want [6 -0.25]", p.Data)
			}
		})
	}
	m := must(t)(Sequential("m", Input(3), Lambda(sumRows, OutputShape(1))))
	if got := m.OutputShape(); len(got) != 1 || got[0] != 1 {
		t.Errorf("declared output shape %v, want [1]", got)
	}
	m = must(t)(Sequential("m", Input(3), Lambda(sumRows, OutputShape(3))))
	if err := m.SetDevice(testDevice()); err != nil {
		t.Fatal(err)
	}
	_, err := m.Predict(customRegression(t, 4), quiet)
	customErrText(t, err, `nn: layer lambda (Lambda): tile: lambda: the function returned shape (4, 1) for a batch of 4, but OutputShape declared the output (None, 3)`)
	total := func(g *tile.Graph, x *tile.Tensor) *tile.Tensor {
		return tile.ParseContraction(g, "S[o : 1] = +(X[n, k])", map[string]*tile.Tensor{"X": x}, nil)
	}
	_, err = Sequential("m", Input(3), Lambda(total))
	customErrText(t, err, `nn: Sequential "m": layer 1 of 1 (Lambda "lambda") on input (None, 3): the function gives (1,) for a placeholder batch (2, 3): the output's first dimension must be the batch; declare the output with nn.OutputShape(...) if the function needs a particular batch`)
	_, err = Sequential("m", Input(3), Lambda(nil))
	customErrText(t, err, `nn: Sequential "m": layer 1 of 1 (Lambda "lambda"): nil function`)
}

// TestCustomLoss compares custom losses with the built-in ones they
// restate: the mean squared error, and the sparse categorical
// cross-entropy from logits over class labels (LabelTargets), by
// evaluation and by training.
func TestCustomLoss(t *testing.T) {
	mse := CustomLoss("my_mse", func(g *tile.Graph, y, p *tile.Tensor) *tile.Tensor {
		d := g.Sub(p, y)
		return g.Mul(d, d) // per element; the loss is their mean
	})
	xent := CustomLoss("my_xent", func(g *tile.Graph, y, p *tile.Tensor) *tile.Tensor {
		onehot := g.OneHot(g.Cast(y, tile.Int64), p.Dim(1), tile.Float32)
		picked := tile.ParseContraction(g, "L[n : N] = +(A[n, k] * B[n, k])",
			map[string]*tile.Tensor{"A": onehot, "B": op.LogSoftmax(g, p, -1)}, map[string]int{"N": p.Dim(0)})
		return g.Neg(picked)
	}, LabelTargets())
	labels := make([]float32, 16)
	for i := range labels {
		labels[i] = float32(i % 2)
	}
	x := customRegression(t, 16)
	xs := make([]float32, 16*3)
	if err := x.Read(customSeq(16), xs, make([]float32, 32)); err != nil {
		t.Fatal(err)
	}
	classes := samples(t, xs, []int{3}, labels, nil)
	for _, c := range []struct {
		custom, builtin Loss
		data            Samples
	}{
		{mse, MeanSquaredError(), x},
		{xent, SparseCategoricalCrossentropy(FromLogits()), classes},
	} {
		t.Run(c.custom.Name(), func(t *testing.T) {
			var res [2][]float64
			for i, l := range []Loss{c.custom, c.builtin} {
				m := must(t)(Sequential("m", Input(3), Dense(4, Activation("tanh")), Dense(2)))
				if err := m.Compile(SGD(0.1), l, OnDevice(testDevice())); err != nil {
					t.Fatal(err)
				}
				e, err := m.Evaluate(c.data, quiet)
				if err != nil {
					t.Fatal(err)
				}
				h, err := m.Fit(c.data, Epochs(3), BatchSize(4), quiet)
				if err != nil {
					t.Fatal(err)
				}
				res[i] = append([]float64{e["loss"]}, h.Metrics["loss"]...)
				res[i] = append(res[i], float64(getWeight(t, m, "dense/kernel")[0]))
			}
			for k := range res[0] {
				if !closeTo(res[0][k], res[1][k], 1e-6) {
					t.Errorf("custom %v, built-in %v", res[0], res[1])
					break
				}
			}
		})
	}
	// A label out of range is found before training, as for the built-in.
	m := must(t)(Sequential("m", Input(3), Dense(2)))
	if err := m.Compile(SGD(0.1), xent, OnDevice(testDevice())); err != nil {
		t.Fatal(err)
	}
	_, err := m.Fit(samples(t, []float32{1, 2, 3}, []int{3}, []float32{2}, nil), quiet)
	customErrText(t, err, `nn: training sample 0 has label 2, but model "m" has 2 classes (labels must be whole numbers 0 to 1 for my_xent)`)
	// A function that reduces the batch itself.
	m = must(t)(Sequential("m", Input(3), Dense(2)))
	scalar := CustomLoss("scalar", func(g *tile.Graph, y, p *tile.Tensor) *tile.Tensor { return sumAll(g, p) })
	if err := m.Compile(SGD(0.1), scalar, OnDevice(testDevice())); err != nil {
		t.Fatal(err)
	}
	_, err = m.Fit(customRegression(t, 4), quiet)
	customErrText(t, err, `nn: loss scalar: tile: scalar: the function returned shape () for a batch of 4; it must return per-sample values, shape (4) or (4, ...)`)
	customErrText(t, CustomLoss("", mse.(*customLoss).fn).(*customLoss).e, `nn: CustomLoss: name "" is not usable (letters, digits, _ . -, not starting with a digit)`)
}

// customSeq returns 0, 1, …, n−1.
func customSeq(n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = i
	}
	return out
}

// TestCustomMetric logs a custom mean absolute error next to the built-in
// one, and a custom metric worked by hand: the fraction of predictions
// above 0, over a model whose output is its input.
func TestCustomMetric(t *testing.T) {
	mae := CustomMetric("my_mae", func(g *tile.Graph, y, p *tile.Tensor) *tile.Tensor {
		return g.Elementwise(tile.Abs, g.Sub(p, y))
	})
	m := must(t)(Sequential("m", Input(3), Dense(2)))
	if err := m.Compile(SGD(0.1), MeanSquaredError(), WithMetrics(mae, MeanAbsoluteErrorMetric()), OnDevice(testDevice())); err != nil {
		t.Fatal(err)
	}
	h, err := m.Fit(customRegression(t, 20), Epochs(2), BatchSize(8), ValidationSplit(0.25), quiet)
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"", "val_"} {
		a, b := h.Metrics[k+"my_mae"], h.Metrics[k+"mean_absolute_error"]
		if len(a) != 2 || !closeTo(a[0], b[0], 1e-6) || !closeTo(a[1], b[1], 1e-6) {
			t.Errorf("%smy_mae %v, %smean_absolute_error %v", k, a, k, b)
		}
	}

	positive := CustomMetric("positive", func(g *tile.Graph, y, p *tile.Tensor) *tile.Tensor {
		return g.Cast(g.Elementwise(tile.Gt, p, g.Scalar(0, tile.Float32)), tile.Float32)
	})
	id := must(t)(Sequential("id", Input(2), Custom("Shift", &runningShift{})))
	setWeight(t, id, "shift/bias", []int{2}, 0, 0)
	if err := id.Compile(SGD(0.1), MeanSquaredError(), WithMetrics(positive), OnDevice(testDevice())); err != nil {
		t.Fatal(err)
	}
	// Per sample: (1, 1) → 1, (1, −1) → 0.5, (−1, −1) → 0; the mean is 0.5.
	logs, err := id.Evaluate(samples(t, []float32{1, 1, 1, -1, -1, -1}, []int{2}, make([]float32, 6), []int{2}), BatchSize(2), quiet)
	if err != nil {
		t.Fatal(err)
	}
	if logs["positive"] != 0.5 {
		t.Errorf("positive = %v, want 0.5", logs["positive"])
	}
	customErrText(t, CustomMetric("loss", positive.(*customMetric).fn).(*customMetric).e, `nn: CustomMetric: the name "loss" is taken by the loss's own records`)
}

// handSGD is w ← w − lr·g.
type handSGD struct{}

func (handSGD) Slots() []string { return nil }
func (handSGD) Apply(s *OptimizerStep, w, grad *tile.Tensor, _ []*tile.Tensor) (*tile.Tensor, []*tile.Tensor) {
	g := s.Graph()
	return g.Sub(w, g.Mul(grad, s.LearningRate())), nil
}

// handMomentum is Keras's SGD with momentum m: v ← m·v − lr·g, w ← w + v.
type handMomentum struct{ m float64 }

func (handMomentum) Slots() []string { return []string{"velocity"} }
func (o handMomentum) Apply(s *OptimizerStep, w, grad *tile.Tensor, slots []*tile.Tensor) (*tile.Tensor, []*tile.Tensor) {
	g := s.Graph()
	v := g.Sub(g.Mul(slots[0], g.Scalar(o.m, tile.Float32)), g.Mul(grad, s.LearningRate()))
	return g.Add(w, v), []*tile.Tensor{v}
}
func (o handMomentum) Config() map[string]any { return map[string]any{"momentum": o.m} }

// TestCustomOptimizer trains one model with a built-in optimizer and the
// same model with a hand-written one, one step per Fit, and compares every
// weight after every step.
func TestCustomOptimizer(t *testing.T) {
	sched := ExponentialDecay(0.1, 2, 0.5, false)
	for _, c := range []struct {
		name            string
		builtin, custom Optimizer
		slot            string
	}{
		{"plain", SGD(0.1), CustomOptimizer("plain_sgd", 0.1, handSGD{}), ""},
		{"momentum", SGD(0.1, Momentum(0.9)), CustomOptimizer("momentum_sgd", 0.1, handMomentum{0.9}), "optimizer/velocity/dense/kernel"},
		{"schedule and decay", SGD(0, LRSchedule(sched), WeightDecay(0.01)), CustomOptimizer("plain_sgd", 0, handSGD{}, LRSchedule(sched), WeightDecay(0.01)), ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			var models [2]*Model
			for i, o := range []Optimizer{c.builtin, c.custom} {
				models[i] = must(t)(Sequential("m", Input(3), Dense(4, Activation("relu")), Dense(2)))
				if err := models[i].Compile(o, MeanSquaredError(), OnDevice(testDevice())); err != nil {
					t.Fatal(err)
				}
			}
			train := customRegression(t, 8)
			for step := range 5 {
				for _, m := range models {
					if _, err := m.Fit(train, BatchSize(8), quiet); err != nil {
						t.Fatal(err)
					}
				}
				for _, w := range models[0].Weights() {
					a, b := getWeight(t, models[0], w.Name()), getWeight(t, models[1], w.Name())
					for i := range a {
						if !closeTo(float64(a[i]), float64(b[i]), 1e-6) {
							t.Fatalf("step %d: %s[%d] = %v with the built-in, %v with the custom optimizer", step+1, w.Name(), i, a[i], b[i])
						}
					}
				}
			}
			if c.slot == "" {
				return
			}
			// The slots go into checkpoints and come back.
			want, err := models[1].st.f32(c.slot)
			if err != nil {
				t.Fatal(err)
			}
			path := filepath.Join(t.TempDir(), "ck.safetensors")
			if err := models[1].SaveCheckpoint(path, 5); err != nil {
				t.Fatal(err)
			}
			fresh := must(t)(Sequential("m", Input(3), Dense(4, Activation("relu")), Dense(2)))
			if err := fresh.Compile(c.custom, MeanSquaredError(), OnDevice(testDevice())); err != nil {
				t.Fatal(err)
			}
			if _, err := fresh.LoadCheckpoint(path); err != nil {
				t.Fatal(err)
			}
			got, err := fresh.st.f32(c.slot)
			if err != nil {
				t.Fatal(err)
			}
			for i := range want {
				if got[i] != want[i] {
					t.Fatalf("%s[%d] = %v after LoadCheckpoint, %v before", c.slot, i, got[i], want[i])
				}
			}
		})
	}
	customErrText(t, CustomOptimizer("x", 0.1, handSGD{}, Momentum(0.9)).base().err, `nn: x: option Momentum does not apply (it accepts WeightDecay, LRSchedule, ClipNorm, ClipValue, GlobalClipNorm)`)
	customErrText(t, CustomOptimizer("x", 0.1, twiceSlots{}).base().err, `nn: x: slot "m" is named twice`)
	customErrText(t, CustomOptimizer("x", 0.1, nil).base().err, `nn: x: nil OptimizerDef`)
	m := must(t)(Sequential("m", Input(3), Dense(2)))
	if err := m.Compile(CustomOptimizer("lossy", 0.1, dropsSlot{}), MeanSquaredError(), OnDevice(testDevice())); err != nil {
		t.Fatal(err)
	}
	_, err := m.Fit(customRegression(t, 4), quiet)
	customErrText(t, err, `nn: building the train step of "m": tile: lossy: Apply returned 0 slot values for the 1 slots [m]`)
}

type twiceSlots struct{ handSGD }

func (twiceSlots) Slots() []string { return []string{"m", "m"} }

type dropsSlot struct{ handSGD }

func (dropsSlot) Slots() []string { return []string{"m"} }

// TestCustomOpGradient checks the gradient grad derives for tileDenseOp
// against finite differences, with respect to its input, kernel and bias.
func TestCustomOpGradient(t *testing.T) {
	g := tile.NewGraph("tile_dense")
	x := g.Input("x", tile.Float64, tile.Shape{3, 4})
	w := g.Input("w", tile.Float64, tile.Shape{4, 2})
	b := g.Input("b", tile.Float64, tile.Shape{2})
	r := g.Input("r", tile.Float64, tile.Shape{3, 2})
	y := tile.ParseContraction(g, "S[] = +(A[i, j] * B[i, j])", map[string]*tile.Tensor{"A": op.Tanh(g, tileDenseOp(g, x, w, b)), "B": r}, nil)
	feeds := map[string]*tile.Value{}
	for k, in := range map[string]*tile.Tensor{"x": x, "w": w, "b": b, "r": r} {
		data := make([]float64, in.Size())
		for i := range data {
			data[i] = math.Sin(float64(3*i+len(k))) * 0.8
		}
		v, err := tile.ValueOf(tile.Float64, in.Shape(), data)
		if err != nil {
			t.Fatal(err)
		}
		feeds[k] = v
	}
	maxErr, where, err := grad.Check(g, y, []*tile.Tensor{x, w, b}, feeds, nil)
	if err != nil {
		t.Fatal(err)
	}
	if maxErr > 1e-6 {
		t.Errorf("gradient error %g at %s", maxErr, where)
	}
}
