package nn

import (
	"math"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/tartanml/tartan/grad"
	"github.com/tartanml/tartan/ref"
	"github.com/tartanml/tartan/tile"
)

// float64Graph adds m's computation over a float64 input x of per-sample
// shape in (batch n) to a new graph, its weights float64 variables named as
// the weights, in training mode with a seed input "seed" when training.
func float64Graph(t *testing.T, m *Model, n int, in []int, inDType tile.DType, training bool) (*tile.Graph, *tile.Tensor, *tile.Tensor, []*tile.Tensor) {
	t.Helper()
	g := tile.NewGraph("check")
	x := g.Input("x", inDType, batchShape(n, in))
	c := &callContext{g: g, training: training, vars: map[*Weight]*tile.Tensor{}, logits: map[*tile.Tensor]*logits{}}
	if training {
		c.seed = g.Input("seed", tile.Int64, tile.Shape{})
	}
	var vars []*tile.Tensor
	for _, w := range m.weights {
		c.vars[w] = g.Variable(w.Name(), tile.Float64, w.shape)
		vars = append(vars, c.vars[w])
	}
	outs, err := m.forward(c, []*tile.Tensor{x})
	if err != nil {
		t.Fatal(err)
	}
	return g, x, outs[0], vars
}

func randomValue(r *rand.Rand, shape tile.Shape, scale float64) *tile.Value {
	v := tile.NewValue(tile.Float64, shape)
	for i := range v.Data {
		v.Data[i] = scale * (2*r.Float64() - 1)
	}
	return v
}

// TestRecurrentGradCheck compares every recurrent layer's gradients, with
// respect to its input and its weights, with finite differences in float64
// on a tiny case (batch 2, 4 steps, 3 features). The masked cases check
// the weights' gradients alone: a step mask is not differentiable in the
// input it is computed from.
func TestRecurrentGradCheck(t *testing.T) {
	const n, steps, features = 2, 4, 3
	cases := []struct {
		name   string
		layers func() []Layer
		masked bool
	}{
		{"simple_rnn", func() []Layer { return []Layer{SimpleRNN(2, ReturnSequences(true))} }, false},
		{"lstm", func() []Layer { return []Layer{LSTM(2)} }, false},
		{"lstm_backwards", func() []Layer { return []Layer{LSTM(2, ReturnSequences(true), GoBackwards(true))} }, false},
		{"gru", func() []Layer { return []Layer{GRU(2, ReturnSequences(true))} }, false},
		{"gru_reset_before", func() []Layer { return []Layer{GRU(2, ResetAfter(false))} }, false},
		{"bidirectional_lstm", func() []Layer { return []Layer{Bidirectional(LSTM(2, ReturnSequences(true)))} }, false},
		{"bidirectional_gru_mul", func() []Layer { return []Layer{Bidirectional(GRU(2), MergeMode("mul"))} }, false},
		{"stacked", func() []Layer {
			return []Layer{LSTM(3, ReturnSequences(true)), SimpleRNN(2, Activation("relu"), GoBackwards(true))}
		}, false},
		{"masking_gru", func() []Layer { return []Layer{Masking(0), GRU(2, ReturnSequences(true))} }, true},
		{"masking_bidirectional_lstm", func() []Layer {
			return []Layer{Masking(0), Bidirectional(LSTM(2, ReturnSequences(true)), MergeMode("sum"))}
		}, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			m := must(t)(Sequential("m", Input(steps, features), tc.layers()...))
			g, x, y, vars := float64Graph(t, m, n, []int{steps, features}, tile.Float64, false)
			r := rand.New(rand.NewPCG(7, uint64(len(tc.name))))
			weights := g.Constant(randomValue(r, y.Shape(), 1))
			loss := sumAll(g, g.Mul(y, weights))
			xv := randomValue(r, x.Shape(), 1)
			if tc.masked {
				// Sample 0 ends with a padded step, sample 1 starts with one.
				for f := 0; f < features; f++ {
					xv.Data[(steps-1)*features+f] = 0
					xv.Data[steps*features+f] = 0
				}
			}
			vals := map[string]*tile.Value{}
			for _, v := range vars {
				vals[v.Op().(*tile.VariableOp).Name] = randomValue(r, v.Shape(), 0.8)
			}
			wrt := vars
			if !tc.masked {
				wrt = append([]*tile.Tensor{x}, vars...)
			}
			worst, where, err := grad.Check(g, loss, wrt, map[string]*tile.Value{"x": xv}, vals, grad.WithMaxProbes(0))
			if err != nil {
				t.Fatal(err)
			}
			if worst > 1e-6 {
				t.Errorf("gradient error %g at %s", worst, where)
			}
		})
	}
}

// TestRecurrentNotUnrolled checks that an LSTM's graph does not grow with
// the number of steps: one recurrence per direction, whatever the length.
func TestRecurrentNotUnrolled(t *testing.T) {
	count := func(steps int) (nodes, recurrences int) {
		m := must(t)(Sequential("m", Input(steps, 3), Bidirectional(LSTM(4, ReturnSequences(true))), GRU(2)))
		g, _, _, _ := float64Graph(t, m, 2, []int{steps, 3}, tile.Float64, false)
		return len(g.Nodes()), len(g.Recurrences())
	}
	n3, r3 := count(3)
	n40, r40 := count(40)
	if n3 != n40 || r3 != 3 || r40 != 3 {
		t.Errorf("3 steps: %d nodes, %d recurrences; 40 steps: %d nodes, %d recurrences (want equal nodes, 3 recurrences)", n3, r3, n40, r40)
	}
}

// predict runs m on the reference device.
func predict(t *testing.T, m *Model, x []float32, in []int) []float32 {
	t.Helper()
	if err := m.SetDevice(testDevice()); err != nil {
		t.Fatal(err)
	}
	out, err := m.Predict(samples(t, x, in, nil, nil), quiet)
	if err != nil {
		t.Fatal(err)
	}
	return out.Data
}

// copyWeights sets every weight of dst from the weight of src of the same
// name.
func copyWeights(t *testing.T, dst, src *Model) {
	t.Helper()
	for _, w := range src.weights {
		setWeight(t, dst, w.Name(), w.Shape(), getWeight(t, src, w.Name())...)
	}
}

// TestRecurrentMaskedSteps checks Keras's masking against the same layers
// run on the sequences without their padded steps: with Embedding's
// mask_zero, an LSTM's sequence output at a masked step repeats the
// previous output (zeros before the first real step) and its other outputs
// are those of the shorter sequence; a Bidirectional GRU's last output on
// a sequence padded at its end is that of the unpadded sequence, both
// directions skipping the padding.
func TestRecurrentMaskedSteps(t *testing.T) {
	const units = 3
	padded := must(t)(Sequential("padded", Input(6), Embedding(5, 2, MaskZero(true)), LSTM(units, ReturnSequences(true))))
	short := must(t)(Sequential("short", Input(3), Embedding(5, 2), LSTM(units, ReturnSequences(true))))
	copyWeights(t, short, padded)
	got := predict(t, padded, []float32{0, 3, 1, 0, 4, 0}, []int{6})
	want := predict(t, short, []float32{3, 1, 4}, []int{3})
	zero := make([]float32, units)
	for i, w := range [][]float32{zero, want[0:3], want[3:6], want[3:6], want[6:9], want[6:9]} {
		for j := range w {
			if math.Abs(float64(got[i*units+j]-w[j])) > 1e-6 {
				t.Fatalf("LSTM output at step %d = %v, want %v (the unpadded run's %v)", i, got[i*units:(i+1)*units], w, want)
			}
		}
	}

	bp := must(t)(Sequential("bp", Input(5, 2), Masking(-1), Bidirectional(GRU(units))))
	bs := must(t)(Sequential("bs", Input(3, 2), Bidirectional(GRU(units))))
	copyWeights(t, bs, bp)
	seq := []float32{0.5, -0.2, 1, 0.3, -0.7, 0.9}
	got = predict(t, bp, append(slices.Clone(seq), -1, -1, -1, -1), []int{5, 2})
	want = predict(t, bs, seq, []int{3, 2})
	for i := range want {
		if math.Abs(float64(got[i]-want[i])) > 1e-6 {
			t.Fatalf("Bidirectional GRU on the padded sequence %v, on the unpadded one %v", got, want)
		}
	}
}

// TestRecurrentDropout checks that a recurrent layer's dropout draws one
// mask per sequence, as Keras does: with an identity kernel and no bias, a
// linear SimpleRNN's input dropout shows in h_t − h_{t−1}·U as the same
// mask at every step; its recurrent dropout drops the same units of h_{t−1}
// at every step; inference uses neither.
func TestRecurrentDropout(t *testing.T) {
	const n, steps, units = 8, 5, 4
	for _, recurrent := range []bool{false, true} {
		opt := DropoutRate(0.5)
		if recurrent {
			opt = RecurrentDropout(0.5)
		}
		m := must(t)(Sequential("m", Input(steps, units),
			SimpleRNN(units, Activation("linear"), UseBias(false), ReturnSequences(true), opt)))
		for _, training := range []bool{false, true} {
			g, _, y, vars := float64Graph(t, m, n, []int{steps, units}, tile.Float64, training)
			ev, err := ref.New(g)
			if err != nil {
				t.Fatal(err)
			}
			eye := tile.NewValue(tile.Float64, tile.Shape{units, units})
			for i := 0; i < units; i++ {
				eye.Data[i*units+i] = 1
			}
			for _, v := range vars {
				if err := ev.SetVar(v.Op().(*tile.VariableOp).Name, eye); err != nil {
					t.Fatal(err)
				}
			}
			x := tile.NewValue(tile.Float64, tile.Shape{n, steps, units})
			for i := range x.Data {
				x.Data[i] = float64(i%7) + 1
			}
			feeds := map[string]*tile.Value{"x": x}
			if training {
				seed := tile.NewValue(tile.Int64, tile.Shape{})
				seed.Data[0] = 42
				feeds["seed"] = seed
			}
			out, err := ev.Eval(feeds, y)
			if err != nil {
				t.Fatal(err)
			}
			h := out[0].Data
			at := func(v []float64, b, s, u int) float64 { return v[(b*steps+s)*units+u] }
			kept := 0
			for b := 0; b < n; b++ {
				for u := 0; u < units; u++ {
					var scale float64 // the mask of (b, u): 1 in inference
					for s := 0; s < steps; s++ {
						prev := 0.0
						if s > 0 {
							prev = at(h, b, s-1, u)
						}
						// Input dropout: h = x·mask + prev; recurrent: h = x + prev·mask.
						var k float64
						if recurrent {
							if s == 0 {
								continue
							}
							k = (at(h, b, s, u) - at(x.Data, b, s, u)) / prev
						} else {
							k = (at(h, b, s, u) - prev) / at(x.Data, b, s, u)
						}
						if s == 0 || (recurrent && s == 1) {
							scale = k
						}
						if math.Abs(k-scale) > 1e-9 {
							t.Fatalf("recurrent %v, training %v: sample %d unit %d has mask %g at step %d, %g before", recurrent, training, b, u, k, s, scale)
						}
					}
					want := []float64{1}
					if training {
						want = []float64{0, 2}
					}
					if !slices.ContainsFunc(want, func(w float64) bool { return math.Abs(w-scale) < 1e-9 }) {
						t.Fatalf("recurrent %v, training %v: mask %g, want one of %v", recurrent, training, scale, want)
					}
					if scale != 0 {
						kept++
					}
				}
			}
			if training && (kept == 0 || kept == n*units) {
				t.Errorf("recurrent %v: %d of %d units kept: dropout does not drop", recurrent, kept, n*units)
			}
		}
	}
}

// TestOrthogonalAndForgetBias checks the Orthogonal initializer's rows (or
// columns, when fewer) are orthonormal and that an LSTM's bias starts with
// its forget block at 1.
func TestOrthogonalAndForgetBias(t *testing.T) {
	for _, shape := range []tile.Shape{{3, 12}, {12, 3}, {5, 5}, {2, 3, 4}} {
		v := make([]float32, shape.Size())
		Orthogonal().fill(v, shape, weightRNG(1, "w"))
		cols := shape[len(shape)-1]
		rows := len(v) / cols
		at := func(r, c int) float64 { return float64(v[r*cols+c]) }
		k, l := rows, cols // dot products of the k vectors of length l
		vec := func(i, j int) float64 { return at(i, j) }
		if rows > cols {
			k, l = cols, rows
			vec = func(i, j int) float64 { return at(j, i) }
		}
		for i := 0; i < k; i++ {
			for j := 0; j < k; j++ {
				dot := 0.0
				for e := 0; e < l; e++ {
					dot += vec(i, e) * vec(j, e)
				}
				want := 0.0
				if i == j {
					want = 1
				}
				if math.Abs(dot-want) > 1e-6 {
					t.Fatalf("%v: vectors %d and %d have dot product %g", shape, i, j, dot)
				}
			}
		}
	}
	m := must(t)(Sequential("m", Input(2, 3), LSTM(2)))
	if got := getWeight(t, m, "lstm/bias"); !slices.Equal(got, []float32{0, 0, 1, 1, 0, 0, 0, 0}) {
		t.Errorf("lstm/bias starts at %v", got)
	}
	m = must(t)(Sequential("m", Input(2, 3), LSTM(2, UnitForgetBias(false))))
	if got := getWeight(t, m, "lstm/bias"); !slices.Equal(got, make([]float32, 8)) {
		t.Errorf("lstm/bias without unit_forget_bias starts at %v", got)
	}
}

// TestRecurrentSaveLoad saves models of every recurrent layer and option
// and loads them back: summaries, architectures and predictions agree.
func TestRecurrentSaveLoad(t *testing.T) {
	models := []func() (*Model, error){
		func() (*Model, error) {
			return Sequential("seq", Input(5, 3), Masking(0.5),
				Bidirectional(LSTM(4, ReturnSequences(true), DropoutRate(0.1), UnitForgetBias(false)), MergeMode("ave"), Name("bi")),
				GRU(3, ResetAfter(false), ReturnSequences(true), GoBackwards(true), RecurrentActivation("tanh")),
				Bidirectional(SimpleRNN(2, RecurrentDropout(0.2), Activation("relu"), Name("inner"))),
				Dense(2))
		},
		func() (*Model, error) {
			in := Input(6)
			e := Apply(Embedding(10, 4, MaskZero(true)), in)
			a := Apply(GRU(3, UseBias(false), ReturnSequences(true)), e)
			b := Apply(LSTM(3, RecurrentInitializer(GlorotUniform()), KernelInitializer(Zeros())), Apply(Dropout(0.1), a))
			return Functional("fn", []*Node{in}, []*Node{Apply(Dense(1), b)})
		},
	}
	for _, build := range models {
		m := must(t)(build())
		path := filepath.Join(t.TempDir(), "model.safetensors")
		if err := m.Save(path); err != nil {
			t.Fatal(err)
		}
		m2, err := Load(path)
		if err != nil {
			t.Fatal(err)
		}
		if m.Summary() != m2.Summary() {
			t.Errorf("summaries differ:\n%s\n%s", m.Summary(), m2.Summary())
		}
		a1, _ := m.Architecture()
		a2, _ := m2.Architecture()
		if string(a1) != string(a2) {
			t.Errorf("architectures differ:\n%s\n%s", a1, a2)
		}
		in := m.inputs[0].shape
		x := make([]float32, 3*in.Size())
		for i := range x {
			x[i] = float32(i % 4)
		}
		if p1, p2 := predict(t, m, x, in), predict(t, m2, x, in); !slices.Equal(p1, p2) {
			t.Errorf("%s: predictions differ: %v vs %v", m.name, p1, p2)
		}
	}
}

// TestRecurrentErrors checks the messages of bad arguments and inputs.
func TestRecurrentErrors(t *testing.T) {
	for _, c := range []struct {
		layer Layer
		in    []int
		want  string
	}{
		{LSTM(0), []int{4, 3}, `(LSTM "lstm"): units 0 must be positive`},
		{GRU(-2), []int{4, 3}, `(GRU "gru"): units -2 must be positive`},
		{SimpleRNN(2), []int{4, 3, 1}, `(SimpleRNN "simple_rnn") on input (None, 4, 3, 1): needs inputs of rank 3 (batch, time, features)`},
		{LSTM(2), []int{12}, `(LSTM "lstm") on input (None, 12): needs inputs of rank 3 (batch, time, features)`},
		{LSTM(2, Activation("sigmod")), []int{4, 3}, `(LSTM "lstm"): unknown activation "sigmod"`},
		{GRU(2, RecurrentActivation("hard")), []int{4, 3}, `(GRU "gru"): recurrent_activation: unknown activation "hard"`},
		{SimpleRNN(2, RecurrentActivation("tanh")), []int{4, 3}, `(SimpleRNN "simple_rnn"): option RecurrentActivation does not apply`},
		{GRU(2, UnitForgetBias(true)), []int{4, 3}, `(GRU "gru"): option UnitForgetBias does not apply`},
		{LSTM(2, ResetAfter(true)), []int{4, 3}, `(LSTM "lstm"): option ResetAfter does not apply`},
		{LSTM(2, DropoutRate(1)), []int{4, 3}, `(LSTM "lstm"): dropout 1 must lie in [0, 1)`},
		{GRU(2, RecurrentDropout(-0.1)), []int{4, 3}, `(GRU "gru"): recurrent_dropout -0.1 must lie in [0, 1)`},
		{Bidirectional(LSTM(2), MergeMode("max")), []int{4, 3}, `(Bidirectional "bidirectional"): merge_mode "max" is not one of concat, sum, mul, ave`},
		{Bidirectional(Dense(2)), []int{4, 3}, `(Bidirectional "bidirectional"): wraps a SimpleRNN, LSTM or GRU layer, not Dense`},
		{Bidirectional(nil), []int{4, 3}, `(Bidirectional "bidirectional"): nil layer`},
		{Bidirectional(LSTM(0)), []int{4, 3}, `(Bidirectional "bidirectional"): LSTM: units 0 must be positive`},
		{Dense(2, ReturnSequences(true)), []int{4, 3}, `(Dense "dense"): option ReturnSequences does not apply`},
	} {
		_, err := Sequential("m", Input(c.in...), c.layer)
		want := `nn: Sequential "m": layer 1 of 1 ` + c.want
		if err == nil || !strings.HasPrefix(err.Error(), want) {
			t.Errorf("error %v, want it to start with %q", err, want)
		}
	}
}

// TestFashionLSTM checks the recurrent showcase model's summary (Keras
// counts 80,384 weights for an LSTM(128) over 28 features) and that a few
// Adam steps on a small batch of made-up images lower its loss.
func TestFashionLSTM(t *testing.T) {
	want := `Model: "fashion_lstm"
┏━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━┳━━━━━━━━━━━━━━━━━━━━━━━━┳━━━━━━━━━━━━━━━┓
┃ Layer (type)                    ┃ Output Shape           ┃       Param # ┃
┡━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━╇━━━━━━━━━━━━━━━━━━━━━━━━╇━━━━━━━━━━━━━━━┩
│ reshape (Reshape)               │ (None, 28, 28)         │             0 │
├─────────────────────────────────┼────────────────────────┼───────────────┤
│ lstm (LSTM)                     │ (None, 128)            │        80,384 │
├─────────────────────────────────┼────────────────────────┼───────────────┤
│ dense (Dense)                   │ (None, 10)             │         1,290 │
└─────────────────────────────────┴────────────────────────┴───────────────┘
 Total params: 81,674 (319.04 KB)
 Trainable params: 81,674 (319.04 KB)
 Non-trainable params: 0 (0.00 B)
`
	m := must(t)(ShowcaseModel("fashion-lstm"))
	if got := m.Summary(); got != want {
		t.Errorf("summary:\n%s\nwant:\n%s", got, want)
	}
}

// TestRecurrentTrains checks that Fit lowers the loss of a small LSTM
// classifier over sequences, on the reference device: eight sequences of
// 8 steps, sequence i bright at step i.
func TestRecurrentTrains(t *testing.T) {
	const n, steps, features = 8, 8, 4
	x := make([]float32, n*steps*features)
	y := make([]float32, n)
	for i := 0; i < n; i++ {
		y[i] = float32(i % 4)
		for f := 0; f < features; f++ {
			x[(i*steps+i)*features+f] = 1
		}
	}
	m := must(t)(Sequential("m", Input(steps, features), LSTM(8), Dense(4, Activation("softmax"))))
	if err := m.Compile(Adam(0.05), SparseCategoricalCrossentropy(), OnDevice(testDevice())); err != nil {
		t.Fatal(err)
	}
	h, err := m.Fit(samples(t, x, []int{steps, features}, y, nil), Epochs(40), BatchSize(n), Shuffle(false), quiet)
	if err != nil {
		t.Fatal(err)
	}
	loss := h.Metrics["loss"]
	if !(loss[len(loss)-1] < 0.5*loss[0]) {
		t.Errorf("losses %v: training does not lower the loss", loss)
	}
}
