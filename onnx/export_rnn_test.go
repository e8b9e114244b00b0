package onnx

import (
	"bytes"
	"fmt"
	"math"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/tartanml/tartan/backend/reference"
	"github.com/tartanml/tartan/nn"
	"github.com/tartanml/tartan/npy"
	"github.com/tartanml/tartan/tile"
)

// maskedSteps returns inputs of n sequences of steps×features normal
// values in which whole steps are zero, Masking(0)'s padding: per sample,
// in turn, an interior and the last step, the first two steps, every step,
// and none.
func maskedSteps(steps, features int) func(r *rand.Rand, n int) []float32 {
	return paddedSteps(steps, features, 0)
}

// paddedSteps is maskedSteps with padding steps of the given value (and,
// for a value other than 0, a step where only some features have it).
func paddedSteps(steps, features int, value float32) func(r *rand.Rand, n int) []float32 {
	return func(r *rand.Rand, n int) []float32 {
		v := normal(r, n*steps*features)
		for s := range n {
			var zero []int
			switch s % 4 {
			case 0:
				zero = []int{1, steps - 1}
			case 1:
				zero = []int{0, 1}
			case 2:
				for t := range steps {
					zero = append(zero, t)
				}
			}
			for _, t := range zero {
				for f := range features {
					v[(s*steps+t)*features+f] = value
				}
			}
			if value != 0 && s%4 == 3 {
				v[(s*steps+2)*features] = value // not masked: one feature only
			}
		}
		return v
	}
}

// tokenSteps returns embedding indices in [0, vocab) for n sequences of
// steps, 0 (mask_zero's padding) at an interior step, the last, the
// first, or everywhere, as maskedSteps places its padding.
func tokenSteps(steps, vocab int) func(r *rand.Rand, n int) []float32 {
	return func(r *rand.Rand, n int) []float32 {
		v := make([]float32, n*steps)
		for s := range n {
			for t := range steps {
				v[s*steps+t] = float32(1 + r.Intn(vocab-1))
			}
			switch s % 4 {
			case 0:
				v[s*steps+1], v[s*steps+steps-1] = 0, 0
			case 1:
				v[s*steps] = 0
			case 2:
				clear(v[s*steps : (s+1)*steps])
			}
		}
		return v
	}
}

// recurrentCases are models of one input and one output with the
// recurrent, attention and position-embedding layers, every option of the
// recurrent layers among them, step masks from Masking and Embedding, and
// mixed models.
func recurrentCases(t *testing.T) []exportCase {
	t.Helper()
	var cases []exportCase
	add := func(name string, m *nn.Model, err error, input func(r *rand.Rand, n int) []float32) {
		t.Helper()
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		cases = append(cases, exportCase{name, m, input})
	}
	seq := func(name string, input []int, layers ...nn.Layer) {
		t.Helper()
		m, err := nn.Sequential(name, nn.Input(input...), layers...)
		size := product(input)
		add(name, m, err, func(r *rand.Rand, n int) []float32 { return normal(r, n*size) })
	}
	masked := func(name string, steps, features int, layers ...nn.Layer) {
		t.Helper()
		m, err := nn.Sequential(name, nn.Input(steps, features), append([]nn.Layer{nn.Masking(0)}, layers...)...)
		add(name, m, err, maskedSteps(steps, features))
	}
	seq("simple_rnn", []int{5, 3}, nn.SimpleRNN(4))
	seq("simple_rnn_relu_sequences", []int{5, 3}, nn.SimpleRNN(4, nn.Activation("relu"), nn.ReturnSequences(true)))
	seq("simple_rnn_backwards", []int{5, 3}, nn.SimpleRNN(3, nn.GoBackwards(true)))
	seq("simple_rnn_backwards_sequences", []int{5, 3}, nn.SimpleRNN(3, nn.GoBackwards(true), nn.ReturnSequences(true), nn.UseBias(false)))
	seq("simple_rnn_linear", []int{4, 2}, nn.SimpleRNN(3, nn.Activation("linear")))
	seq("lstm", []int{6, 3}, nn.LSTM(4))
	seq("lstm_sequences_backwards", []int{6, 3}, nn.LSTM(3, nn.ReturnSequences(true), nn.GoBackwards(true)))
	seq("lstm_no_bias", []int{5, 2}, nn.LSTM(3, nn.UseBias(false), nn.ReturnSequences(true)))
	seq("lstm_activations", []int{5, 2}, nn.LSTM(3, nn.Activation("softplus"), nn.RecurrentActivation("tanh")))
	seq("lstm_elu", []int{5, 2}, nn.LSTM(3, nn.Activation("elu"), nn.ReturnSequences(true)))
	seq("gru", []int{6, 3}, nn.GRU(4))
	seq("gru_reset_before", []int{6, 3}, nn.GRU(4, nn.ResetAfter(false), nn.ReturnSequences(true)))
	seq("gru_reset_before_backwards", []int{6, 3}, nn.GRU(3, nn.ResetAfter(false), nn.GoBackwards(true)))
	seq("gru_leaky_relu", []int{5, 3}, nn.GRU(3, nn.Activation("leaky_relu"), nn.ReturnSequences(true), nn.GoBackwards(true)))
	seq("gru_no_bias", []int{5, 3}, nn.GRU(3, nn.UseBias(false), nn.RecurrentActivation("relu")))
	seq("bidirectional_lstm", []int{5, 3}, nn.Bidirectional(nn.LSTM(3, nn.ReturnSequences(true))))
	seq("bidirectional_gru_sum", []int{5, 3}, nn.Bidirectional(nn.GRU(3), nn.MergeMode("sum")))
	seq("bidirectional_simple_rnn_mul", []int{5, 3}, nn.Bidirectional(nn.SimpleRNN(3, nn.ReturnSequences(true)), nn.MergeMode("mul")))
	seq("bidirectional_lstm_ave", []int{5, 3}, nn.Bidirectional(nn.LSTM(3, nn.UseBias(false)), nn.MergeMode("ave")))
	seq("bidirectional_backwards", []int{5, 3}, nn.Bidirectional(nn.GRU(3, nn.GoBackwards(true), nn.ReturnSequences(true), nn.ResetAfter(false))))
	seq("bidirectional_backwards_last", []int{5, 3}, nn.Bidirectional(nn.LSTM(2, nn.GoBackwards(true))))
	seq("stacked", []int{6, 3}, nn.LSTM(4, nn.ReturnSequences(true)), nn.Dropout(0.3), nn.GRU(3, nn.ReturnSequences(true)),
		nn.SimpleRNN(2), nn.Dense(2))
	masked("masking_lstm", 5, 3, nn.LSTM(3))
	masked("masking_lstm_sequences", 5, 3, nn.LSTM(3, nn.ReturnSequences(true)))
	masked("masking_gru_backwards", 5, 3, nn.GRU(3, nn.GoBackwards(true)))
	masked("masking_gru_backwards_sequences", 5, 3, nn.GRU(3, nn.GoBackwards(true), nn.ReturnSequences(true)))
	masked("masking_simple_rnn_sequences", 5, 2, nn.SimpleRNN(2, nn.ReturnSequences(true)))
	masked("masking_bidirectional", 5, 3, nn.Bidirectional(nn.LSTM(2, nn.ReturnSequences(true))))
	masked("masking_bidirectional_last", 5, 3, nn.Bidirectional(nn.GRU(2), nn.MergeMode("sum")))
	// The mask passes through Dense, Dropout and a recurrent layer's
	// sequences; a convolution drops it.
	masked("masking_stacked", 6, 3, nn.Dense(4, nn.Activation("tanh")), nn.Dropout(0.2),
		nn.LSTM(3, nn.ReturnSequences(true)), nn.GRU(2, nn.ReturnSequences(true), nn.GoBackwards(true)), nn.SimpleRNN(2))
	masked("masking_dropped", 5, 3, nn.Conv1D(3, 1), nn.GRU(2))
	{
		m, err := nn.Sequential("masking_value", nn.Input(5, 3), nn.Masking(-1), nn.SimpleRNN(3, nn.ReturnSequences(true), nn.GoBackwards(true)))
		add("masking_value", m, err, paddedSteps(5, 3, -1))
	}
	{
		m, err := nn.Sequential("embedding_mask_zero", nn.Input(6),
			nn.Embedding(7, 3, nn.MaskZero(true)),
			nn.GRU(4, nn.ReturnSequences(true)),
			nn.LayerNormalization(),
			nn.Bidirectional(nn.SimpleRNN(2), nn.MergeMode("concat")))
		add("embedding_mask_zero", m, err, tokenSteps(6, 7))
	}
	seq("random_translation", []int{4, 4, 2}, nn.Dense(2), nn.RandomTranslation(0.2, 0.3))
	{
		x := nn.Input(5, 4)
		y := nn.Apply(nn.MultiHeadAttention(2, 3), x, x)
		m, err := nn.Functional("attention", []*nn.Node{x}, []*nn.Node{y})
		add("attention", m, err, per(5, 4))
	}
	{
		x := nn.Input(6, 4)
		k := nn.Apply(nn.Dense(3), x)
		v := nn.Apply(nn.Dense(5), x)
		y := nn.Apply(nn.MultiHeadAttention(3, 2, nn.ValueDim(4), nn.UseCausalMask(true), nn.OutputShape(3)), x, v, k)
		m, err := nn.Functional("attention_causal_key", []*nn.Node{x}, []*nn.Node{y})
		add("attention_causal_key", m, err, per(6, 4))
	}
	{
		q := nn.Input(4, 3)
		v := nn.Apply(nn.Reshape([]int{6, 2}), nn.Apply(nn.Flatten(), q))
		y := nn.Apply(nn.MultiHeadAttention(1, 4, nn.UseBias(false)), q, v)
		m, err := nn.Functional("attention_cross", []*nn.Node{q}, []*nn.Node{y})
		add("attention_cross", m, err, per(4, 3))
	}
	{
		x := nn.Input(5, 4)
		p := nn.Apply(nn.PositionEmbedding(8), x)
		m, err := nn.Functional("position_embedding", []*nn.Node{x}, []*nn.Node{nn.Apply(nn.Add(), x, p)})
		add("position_embedding", m, err, per(5, 4))
	}
	{
		x := nn.Input(5, 4)
		m, err := nn.Functional("position_embedding_full", []*nn.Node{x}, []*nn.Node{nn.Apply(nn.PositionEmbedding(5), x)})
		add("position_embedding_full", m, err, per(5, 4))
	}
	{
		// A small transformer encoder over tokens, then an LSTM.
		in := nn.Input(6)
		e := nn.Apply(nn.Embedding(9, 8), in)
		h := nn.Apply(nn.Add(), e, nn.Apply(nn.PositionEmbedding(6), e))
		a := nn.Apply(nn.MultiHeadAttention(2, 4, nn.UseCausalMask(true)), h, h)
		h = nn.Apply(nn.LayerNormalization(), nn.Apply(nn.Add(), h, a))
		f := nn.Apply(nn.Dense(8), nn.Apply(nn.Dense(16, nn.Activation("gelu")), h))
		h = nn.Apply(nn.LayerNormalization(), nn.Apply(nn.Add(), h, f))
		h = nn.Apply(nn.Bidirectional(nn.LSTM(3, nn.ReturnSequences(true))), h)
		out := nn.Apply(nn.Dense(2, nn.Activation("softmax")), nn.Apply(nn.GRU(3), h))
		m, err := nn.Functional("transformer_rnn", []*nn.Node{in}, []*nn.Node{out})
		add("transformer_rnn", m, err, func(r *rand.Rand, n int) []float32 {
			v := make([]float32, 6*n)
			for i := range v {
				v[i] = float32(r.Intn(9))
			}
			return v
		})
	}
	for i, c := range cases {
		if err := c.model.InitWeights(int64(400 + i)); err != nil {
			t.Fatal(err)
		}
		randomizeWeights(t, c.model, int64(500+i))
	}
	return cases
}

// per returns normal inputs of the given per-sample shape.
func per(shape ...int) func(r *rand.Rand, n int) []float32 {
	size := product(shape)
	return func(r *rand.Rand, n int) []float32 { return normal(r, n*size) }
}

// multiCase is a model of several inputs or outputs.
type multiCase struct {
	name   string
	model  *nn.Model
	inputs []func(r *rand.Rand, n int) []float32 // one per model input
	shapes [][]int                               // the inputs' per-sample shapes
}

// multiCases are the recurrent layers with return_state (several outputs,
// masked and not) and MultiHeadAttention with its attention mask as a
// second model input.
func multiCases(t *testing.T) []multiCase {
	t.Helper()
	var cases []multiCase
	add := func(name string, ins []*nn.Node, outs []*nn.Node, inputs ...func(r *rand.Rand, n int) []float32) {
		t.Helper()
		m, err := nn.Functional(name, ins, outs)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		var shapes [][]int
		for _, n := range ins {
			shapes = append(shapes, n.Shape())
		}
		cases = append(cases, multiCase{name, m, inputs, shapes})
	}
	states := func(name string, layer nn.Layer, mask bool) {
		t.Helper()
		x := nn.Input(5, 3)
		h := x
		in := per(5, 3)
		if mask {
			h = nn.Apply(nn.Masking(0), x)
			in = maskedSteps(5, 3)
		}
		add(name, []*nn.Node{x}, nn.ApplyAll(layer, h), in)
	}
	states("lstm_state", nn.LSTM(3, nn.ReturnState(true)), false)
	states("lstm_state_sequences", nn.LSTM(3, nn.ReturnState(true), nn.ReturnSequences(true), nn.GoBackwards(true)), false)
	states("gru_state", nn.GRU(3, nn.ReturnState(true), nn.ReturnSequences(true)), false)
	states("simple_rnn_state_backwards", nn.SimpleRNN(3, nn.ReturnState(true), nn.GoBackwards(true)), false)
	states("bidirectional_lstm_state", nn.Bidirectional(nn.LSTM(2, nn.ReturnSequences(true)), nn.ReturnState(true)), false)
	states("bidirectional_gru_state", nn.Bidirectional(nn.GRU(2, nn.GoBackwards(true)), nn.ReturnState(true), nn.MergeMode("ave")), false)
	states("masking_lstm_state", nn.LSTM(3, nn.ReturnState(true), nn.ReturnSequences(true)), true)
	states("masking_gru_state_backwards", nn.GRU(3, nn.ReturnState(true), nn.GoBackwards(true)), true)
	states("masking_bidirectional_state", nn.Bidirectional(nn.LSTM(2), nn.ReturnState(true)), true)
	{
		// An encoder's final states start a decoder.
		enc := nn.Input(5, 3)
		dec := nn.Input(4, 2)
		s := nn.ApplyAll(nn.LSTM(3, nn.ReturnState(true)), enc)
		d := nn.Apply(nn.Dense(3), nn.Apply(nn.Concatenate(), s[1], s[2]))
		y := nn.Apply(nn.GRU(3, nn.ReturnSequences(true)), dec)
		out := nn.Apply(nn.Dense(2), nn.Apply(nn.MultiHeadAttention(1, 3), y, nn.Apply(nn.Reshape([]int{1, 3}), d)))
		add("encoder_decoder", []*nn.Node{enc, dec}, []*nn.Node{out, s[0]}, per(5, 3), per(4, 2))
	}
	{
		q := nn.Input(4, 3)
		v := nn.Input(5, 2)
		mask := nn.Input(4, 5)
		y := nn.Apply(nn.MultiHeadAttention(2, 3, nn.UseCausalMask(true)), q, v, v, mask)
		y2 := nn.Apply(nn.MultiHeadAttention(2, 2, nn.ValueDim(3)), q, v, v, mask)
		add("attention_mask", []*nn.Node{q, v, mask}, []*nn.Node{y, y2}, per(4, 3), per(5, 2), func(r *rand.Rand, n int) []float32 {
			m := make([]float32, n*20)
			for i := range m {
				if r.Intn(3) > 0 {
					m[i] = 1
				}
			}
			clear(m[:5]) // a query that sees no key
			return m
		})
	}
	for i, c := range cases {
		if err := c.model.InitWeights(int64(600 + i)); err != nil {
			t.Fatal(err)
		}
		randomizeWeights(t, c.model, int64(700+i))
	}
	return cases
}

// asMulti turns single-input, single-output cases into multiCases.
func asMulti(cs []exportCase) []multiCase {
	var out []multiCase
	for _, c := range cs {
		out = append(out, multiCase{c.name, c.model, []func(r *rand.Rand, n int) []float32{c.input}, [][]int{c.model.InputShape()}})
	}
	return out
}

// inputsOf draws n samples of every input of c.
func (c multiCase) inputsOf(t *testing.T, r *rand.Rand, n int) []*nn.Array {
	t.Helper()
	var xs []*nn.Array
	for k, f := range c.inputs {
		x, err := nn.NewArray(f(r, n), append([]int{n}, c.shapes[k]...)...)
		if err != nil {
			t.Fatal(err)
		}
		xs = append(xs, x)
	}
	return xs
}

// predicted is what the nn model computes on the reference device.
func (c multiCase) predicted(t *testing.T, xs []*nn.Array) []*nn.Array {
	t.Helper()
	if err := c.model.SetDevice(reference.New()); err != nil {
		t.Fatal(err)
	}
	ys, err := c.model.PredictOnBatchMulti(xs)
	if err != nil {
		t.Fatalf("%s: PredictOnBatchMulti: %v", c.name, err)
	}
	return ys
}

// runImported loads the ONNX model at path with this package's importer
// and runs it on the reference device, returning every graph output.
func runImported(path string, xs []*nn.Array) ([]*nn.Array, error) {
	m, err := Load(path)
	if err != nil {
		return nil, err
	}
	if len(m.Inputs) != len(xs) {
		return nil, fmt.Errorf("%d inputs, %d given", len(m.Inputs), len(xs))
	}
	opt := Options{Shapes: map[string]tile.Shape{}}
	for k, in := range m.Inputs {
		opt.Shapes[in.Name] = tile.Shape(xs[k].Shape)
	}
	g, err := m.Graph(opt)
	if err != nil {
		return nil, fmt.Errorf("converting: %w", err)
	}
	exe, err := reference.New().Compile(g)
	if err != nil {
		return nil, fmt.Errorf("compiling: %w", err)
	}
	defer exe.Close()
	for k, in := range m.Inputs {
		if err := exe.SetInput(m.TileName(in.Name), xs[k].Data); err != nil {
			return nil, err
		}
	}
	if err := exe.Run(); err != nil {
		return nil, fmt.Errorf("run: %w", err)
	}
	outs := map[string]*tile.Tensor{}
	for _, o := range g.Outputs() {
		outs[o.Name] = o.Tensor
	}
	var ys []*nn.Array
	for _, o := range m.Outputs {
		tt := outs[m.TileName(o.Name)]
		if tt == nil {
			return nil, fmt.Errorf("output %q is not in the graph", o.Name)
		}
		y := &nn.Array{Shape: slices.Clone([]int(tt.Shape())), Data: make([]float32, tt.Size())}
		if err := exe.ReadOutput(m.TileName(o.Name), y.Data); err != nil {
			return nil, err
		}
		ys = append(ys, y)
	}
	return ys, nil
}

// agree compares outputs within atol + rtol·|want| and returns the largest
// difference.
func agree(t *testing.T, what string, got, want []*nn.Array, atol, rtol float64) float64 {
	t.Helper()
	if len(got) != len(want) {
		t.Errorf("%s: %d outputs, want %d", what, len(got), len(want))
		return math.Inf(1)
	}
	worst := 0.0
	for k := range want {
		if !slices.Equal(got[k].Shape, want[k].Shape) {
			t.Errorf("%s: output %d has shape %v, want %v", what, k, got[k].Shape, want[k].Shape)
			return math.Inf(1)
		}
		for i, g := range got[k].Data {
			w := float64(want[k].Data[i])
			d := math.Abs(float64(g) - w)
			if !(d <= atol+rtol*math.Abs(w)) {
				t.Errorf("%s: output %d element %d: %g, want %g", what, k, i, g, w)
				return d
			}
			worst = max(worst, d)
		}
	}
	return worst
}

// TestExportRecurrentReimported exports the models of multiCases and
// recurrentCases, runs the files with this package's importer (whose RNN,
// LSTM and GRU were written from ONNX's specification and pass ONNX's node
// tests) and compares every output with nn's prediction, within 1e-5.
func TestExportRecurrentReimported(t *testing.T) {
	dir := t.TempDir()
	for i, c := range append(multiCases(t), asMulti(recurrentCases(t))...) {
		xs := c.inputsOf(t, rand.New(rand.NewSource(int64(80+i))), 4)
		want := c.predicted(t, xs)
		path := filepath.Join(dir, c.name+".onnx")
		if err := ExportFile(c.model, path); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		got, err := runImported(path, xs)
		if err != nil {
			t.Errorf("%s: the importer: %v", c.name, err)
			continue
		}
		worst := agree(t, c.name+" (re-imported)", got, want, 1e-5, 1e-5)
		t.Logf("%s: %d nodes %v, %d outputs agree within %.2g", c.name, countNodes(t, path), distinctOps(t, path), len(want), worst)
	}
}

// TestExportRecurrentAgreesWithPyTorch evaluates the same exports with
// testdata/torch/eval_onnx.py --dir, PyTorch in float64 with RNN, LSTM and
// GRU written from ONNX's specification, compares every output with nn's
// prediction, and runs ONNX's checker with full shape inference on each
// file, and on its export with FixedBatch(2), comparing the inferred
// output shapes with nn's.
func TestExportRecurrentAgreesWithPyTorch(t *testing.T) {
	py := pythonWith(t, "onnx", "torch", "numpy")
	dir := t.TempDir()
	cases := append(multiCases(t), asMulti(recurrentCases(t))...)
	wants := map[string][]*nn.Array{}
	var paths []string
	for i, c := range cases {
		xs := c.inputsOf(t, rand.New(rand.NewSource(int64(90+i))), 5)
		wants[c.name] = c.predicted(t, xs)
		path := filepath.Join(dir, c.name+".onnx")
		if err := ExportFile(c.model, path); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		fixed := filepath.Join(dir, c.name+"_fixed_batch.onnx")
		if err := ExportFile(c.model, fixed, FixedBatch(2)); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		paths = append(paths, path, fixed)
		for k, x := range xs {
			a, err := npy.New(x.Shape, slices.Clone(x.Data))
			if err == nil {
				err = npy.WriteFile(filepath.Join(dir, c.name+"_input_"+strconv.Itoa(k)+".npy"), a)
			}
			if err != nil {
				t.Fatal(err)
			}
		}
	}
	if out, err := exec.Command(py, "testdata/torch/eval_onnx.py", "--dir", dir).CombinedOutput(); err != nil {
		t.Fatalf("eval_onnx.py --dir: %v\n%s", err, out)
	}
	out, err := exec.Command(py, append([]string{"-c", `import onnx, sys
for p in sys.argv[1:]:
    m = onnx.load(p)
    try:
        onnx.checker.check_model(m, full_check=True)
        inferred = onnx.shape_inference.infer_shapes(m, check_type=True, strict_mode=True)
        print(";".join(",".join(str(d.dim_value or d.dim_param) for d in o.type.tensor_type.shape.dim) for o in inferred.graph.output))
    except Exception as e:
        print("refused:", str(e).replace("\n", " "))`}, paths...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("the ONNX checker: %v\n%s", err, out)
	}
	checked := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(checked) != len(paths) {
		t.Fatalf("the ONNX checker printed %d lines for %d models:\n%s", len(checked), len(paths), out)
	}
	for i, c := range cases {
		want := wants[c.name]
		var got []*nn.Array
		for k := range want {
			name := c.name + "_eval.npy"
			if len(want) > 1 {
				name = fmt.Sprintf("%s_eval_%d.npy", c.name, k)
			}
			a, err := npy.ReadFile(filepath.Join(dir, name))
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, &nn.Array{Shape: a.Shape, Data: a.Float32s()})
		}
		worst := agree(t, c.name+" (PyTorch)", got, want, 1e-5, 1e-4)
		for j, batch := range []string{"N", "2"} {
			var shapes []string
			for _, y := range want {
				s := []string{batch}
				for _, d := range y.Shape[1:] {
					s = append(s, strconv.Itoa(d))
				}
				shapes = append(shapes, strings.Join(s, ","))
			}
			if got, want := checked[2*i+j], strings.Join(shapes, ";"); got != want {
				t.Errorf("%s (batch %s): the checker: %s; want the output shapes %s", c.name, batch, got, want)
			}
		}
		t.Logf("%s: %d outputs, PyTorch agrees within %.2g; the checker accepts it", c.name, len(want), worst)
	}
}

// TestExportRecurrentOps checks the ONNX operators of the recurrent
// export, one node per layer (Bidirectional included) with the time-major
// Transposes around it, and of PositionEmbedding and Masking.
func TestExportRecurrentOps(t *testing.T) {
	for _, c := range []struct {
		layer nn.Layer
		ops   []string
	}{
		{nn.LSTM(2), []string{"Transpose", "LSTM", "Squeeze"}},
		{nn.GRU(2, nn.ReturnSequences(true)), []string{"Transpose", "GRU", "Squeeze", "Transpose"}},
		{nn.SimpleRNN(2, nn.ReturnSequences(true), nn.GoBackwards(true)), []string{"Transpose", "RNN", "Squeeze", "Transpose", "Gather"}},
		{nn.Bidirectional(nn.LSTM(2)), []string{"Transpose", "LSTM", "Split", "Squeeze", "Squeeze", "Concat"}},
		{nn.PositionEmbedding(4), []string{"Slice", "Shape", "Expand"}},
		{nn.PositionEmbedding(3), []string{"Shape", "Expand"}},
		{nn.Masking(0), []string{"Equal", "Not", "Cast", "ReduceMax", "Mul", "Squeeze"}},
	} {
		m, err := nn.Sequential("one", nn.Input(3, 2), c.layer)
		if err != nil {
			t.Fatal(err)
		}
		if err := m.InitWeights(1); err != nil {
			t.Fatal(err)
		}
		_, mp := exportModel(t, m)
		if got := opTypes(mp); !slices.Equal(got, c.ops) {
			t.Errorf("%s: ops %v, want %v", c.layer.ClassName(), got, c.ops)
		}
		if got, want := mp.GetGraph().GetOutput()[0].GetName(), c.layer.Name(); got != want {
			t.Errorf("%s: the output is named %q, want the layer's name %q", c.layer.ClassName(), got, want)
		}
		for _, n := range mp.GetGraph().GetNode() {
			if op := n.GetOpType(); op == "LSTM" || op == "GRU" || op == "RNN" {
				for _, a := range n.GetAttribute() {
					if a.GetName() == "layout" && a.GetI() != 0 {
						t.Errorf("%s: layout %d", op, a.GetI())
					}
				}
			}
		}
	}
}

// TestExportRecurrentWeights checks the reordering of an LSTM's gates by
// hand: ONNX's W row block k is nn's kernel column block (i, f, c, o)[k]
// for k of (i, o, f, c), transposed.
func TestExportRecurrentWeights(t *testing.T) {
	m, err := nn.Sequential("one", nn.Input(3, 2), nn.LSTM(1))
	if err != nil {
		t.Fatal(err)
	}
	// kernel (2, 4): column j is gate j of i, f, c, o; feature f adds 10·f.
	k, _ := nn.NewArray([]float32{1, 2, 3, 4, 11, 12, 13, 14}, 2, 4)
	b, _ := nn.NewArray([]float32{-1, -2, -3, -4}, 4)
	if err := m.InitWeights(1); err != nil {
		t.Fatal(err)
	}
	if err := m.SetWeight("lstm/kernel", k); err != nil {
		t.Fatal(err)
	}
	if err := m.SetWeight("lstm/bias", b); err != nil {
		t.Fatal(err)
	}
	_, mp := exportModel(t, m)
	got := map[string][]float32{}
	for _, init := range mp.GetGraph().GetInitializer() {
		raw := init.GetRawData()
		for i := 0; i+4 <= len(raw); i += 4 {
			got[init.GetName()] = append(got[init.GetName()], math.Float32frombits(uint32(raw[i])|uint32(raw[i+1])<<8|uint32(raw[i+2])<<16|uint32(raw[i+3])<<24))
		}
	}
	// W (1, 4, 2): rows i, o, f, c.
	if w := got["lstm/W"]; !slices.Equal(w, []float32{1, 11, 4, 14, 2, 12, 3, 13}) {
		t.Errorf("W %v", w)
	}
	if bb := got["lstm/B"]; !slices.Equal(bb, []float32{-1, -4, -2, -3, 0, 0, 0, 0}) {
		t.Errorf("B %v", bb)
	}
}

// TestExportRecurrentErrors checks that a recurrent activation ONNX cannot
// express is an error naming the layer.
func TestExportRecurrentErrors(t *testing.T) {
	for _, c := range []struct {
		layer nn.Layer
		want  string
	}{
		{nn.LSTM(2, nn.Activation("gelu"), nn.Name("gelu_lstm")),
			`onnx: export: layer "gelu_lstm" (LSTM) cannot be exported: activation "gelu" has no counterpart among the activations of ONNX's recurrent operators`},
		{nn.Bidirectional(nn.GRU(2, nn.RecurrentActivation("relu6")), nn.Name("bi")),
			`layer "bi" (Bidirectional) cannot be exported: activation "relu6"`},
		{nn.SimpleRNN(2, nn.Activation("silu")), `layer "simple_rnn" (SimpleRNN) cannot be exported: activation "silu"`},
		{nn.GRU(2, nn.Activation("leaky_relu"), nn.RecurrentActivation("elu")),
			`layer "gru" (GRU) cannot be exported: activations [elu leaky_relu] need different activation_alpha values`},
	} {
		m, err := nn.Sequential("bad", nn.Input(3, 2), c.layer)
		if err != nil {
			t.Fatal(err)
		}
		if err := m.InitWeights(1); err != nil {
			t.Fatal(err)
		}
		err = Export(m, new(bytes.Buffer))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: got %v, want an error containing %q", c.layer.ClassName(), err, c.want)
		}
	}
}

// evaluatorNodeTests are ONNX's node tests of the operators the recurrent,
// mask and attention exports use beyond those of the other layers.
var evaluatorNodeTests = []string{
	"test_rnn_seq_length", "test_simple_rnn_batchwise", "test_simple_rnn_defaults", "test_simple_rnn_with_initial_bias",
	"test_gru_batchwise", "test_gru_defaults", "test_gru_seq_length", "test_gru_with_initial_bias",
	"test_lstm_batchwise", "test_lstm_defaults", "test_lstm_with_initial_bias", "test_lstm_with_peepholes",
	"test_top_k", "test_top_k_negative_axis", "test_top_k_smallest",
	"test_gather_elements_0", "test_gather_elements_1", "test_gather_elements_negative_indices",
	"test_cumsum_1d", "test_cumsum_1d_exclusive", "test_cumsum_1d_reverse", "test_cumsum_1d_reverse_exclusive",
	"test_cumsum_2d_axis_0", "test_cumsum_2d_axis_1", "test_cumsum_2d_negative_axis",
	"test_split_equal_parts_1d", "test_split_equal_parts_2d", "test_split_equal_parts_default_axis",
	"test_split_variable_parts_1d", "test_split_variable_parts_2d", "test_split_variable_parts_default_axis",
	"test_squeeze", "test_squeeze_negative_axes", "test_expand_dim_changed", "test_expand_dim_unchanged",
	"test_reduce_sum_default_axes_keepdims_example", "test_reduce_sum_default_axes_keepdims_random",
	"test_reduce_sum_keepdims_example", "test_reduce_sum_keepdims_random",
	"test_shape", "test_not_2d", "test_not_3d", "test_not_4d", "test_equal", "test_greater", "test_less",
	"test_max_example", "test_max_float32", "test_max_int64", "test_max_one_input", "test_max_two_inputs",
	"test_min_example", "test_min_float32", "test_min_int64", "test_min_one_input", "test_min_two_inputs",
	"test_where_example", "test_where_long_example", "test_unsqueeze_axis_1", "test_unsqueeze_negative_axes",
	"test_reduce_max_keepdims_example", "test_transpose_default", "test_transpose_all_permutations_3",
}

// TestEvaluatorNodeTests checks testdata/torch/eval_onnx.py, the evaluator
// behind the PyTorch comparisons of the exports, on ONNX's own node tests
// of RNN, GRU, LSTM and the other operators of evaluatorNodeTests (with
// testdata/torch/eval_node_tests.py), so that its operators are checked
// against ONNX's published outputs.
func TestEvaluatorNodeTests(t *testing.T) {
	py := pythonWith(t, "onnx", "torch", "numpy")
	dir := nodeTestDir
	if d := os.Getenv(nodeTestEnv); d != "" {
		dir = d
	}
	if _, err := os.Stat(filepath.Join(dir, "test_lstm_defaults")); err != nil {
		t.Skipf("ONNX's node tests are not installed (apt-get install libonnx-testdata, or set %s): %v", nodeTestEnv, err)
	}
	out, err := exec.Command(py, append([]string{"testdata/torch/eval_node_tests.py", dir}, evaluatorNodeTests...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("eval_node_tests.py: %v\n%s", err, out)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(lines) != len(evaluatorNodeTests) {
		t.Fatalf("eval_node_tests.py printed %d lines for %d tests:\n%s", len(lines), len(evaluatorNodeTests), out)
	}
	t.Logf("%d node tests agree with ONNX's outputs, such as %s", len(lines), lines[9])
}
