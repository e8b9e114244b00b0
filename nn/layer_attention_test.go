package nn

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/tartanml/tartan/backend"
	"github.com/tartanml/tartan/grad"
	"github.com/tartanml/tartan/op"
	"github.com/tartanml/tartan/tile"
)

// Golden tests of MultiHeadAttention against PyTorch's
// torch.nn.MultiheadAttention: testdata/torch/attention.json, written by
// testdata/torch/gen_attention.py (see its docstring for the layouts).

type attentionCase struct {
	Name        string                  `json:"name"`
	NumHeads    int                     `json:"num_heads"`
	KeyDim      int                     `json:"key_dim"`
	UseBias     bool                    `json:"use_bias"`
	Causal      bool                    `json:"causal"`
	Inputs      map[string]goldenTensor `json:"inputs"`
	Weights     map[string]goldenTensor `json:"weights"`
	Cotangent   goldenTensor            `json:"cotangent"`
	Output      goldenTensor            `json:"output"`
	InputGrads  map[string]goldenTensor `json:"input_grads"`
	WeightGrads map[string]goldenTensor `json:"weight_grads"`
}

func loadAttentionGolden(t *testing.T) []attentionCase {
	t.Helper()
	raw, err := os.ReadFile("testdata/torch/attention.json")
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Cases []attentionCase `json:"cases"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	if len(doc.Cases) == 0 {
		t.Fatal("attention.json has no cases")
	}
	return doc.Cases
}

// attentionGraph is one golden case's layer call and gradients on a graph
// of dtype dt: the inputs and weights are graph inputs, fed from the case.
type attentionGraph struct {
	g       *tile.Graph
	loss    *tile.Tensor
	xs      []*tile.Tensor // the differentiated tensors: inputs, then weights
	xNames  []string       // their golden names ("query", "value/kernel")
	feeds   map[string][]float64
	ins     map[string]*tile.Tensor // the graph's inputs by name
	outputs []string                // y, then the gradients in xs's order
}

// buildAttentionGraph builds the layer of case c for the case's shapes and
// adds its call, loss = Σ output·cotangent and the loss's gradients.
func buildAttentionGraph(t *testing.T, c attentionCase, dt tile.DType) *attentionGraph {
	t.Helper()
	l := MultiHeadAttention(c.NumHeads, c.KeyDim, UseBias(c.UseBias), UseCausalMask(c.Causal)).(*attentionLayer)
	// The order of the layer's inputs: the query, the value (the query for
	// self-attention), the key (the value when absent), the mask.
	names := []string{"query", "value", "key", "mask"}
	present := map[string]bool{}
	for n := range c.Inputs {
		present[n] = true
	}
	source := func(n string) string {
		for !present[n] {
			switch n {
			case "key":
				n = "value"
			case "value":
				n = "query"
			default:
				return ""
			}
		}
		return n
	}
	count := 2
	if present["key"] || present["mask"] {
		count = 3
	}
	if present["mask"] {
		count = 4
	}
	var nodes []*Node
	for _, n := range names[:count] {
		nodes = append(nodes, Input(c.Inputs[source(n)].Shape[1:]...))
	}
	if n := Apply(l, nodes...); n.Err() != nil {
		t.Fatal(n.Err())
	}
	ag := &attentionGraph{g: tile.NewGraph("attention"), feeds: map[string][]float64{}, ins: map[string]*tile.Tensor{}}
	g := ag.g
	tensors := map[string]*tile.Tensor{}
	for _, n := range names {
		if gt, ok := c.Inputs[n]; ok {
			tensors[n] = g.Input(n, dt, tile.Shape(gt.Shape))
			ag.ins[n] = tensors[n]
			ag.feeds[n] = gt.Data
			if n != "mask" {
				ag.xs, ag.xNames = append(ag.xs, tensors[n]), append(ag.xNames, n)
			}
		}
	}
	args := make([]*tile.Tensor, count)
	for i, n := range names[:count] {
		args[i] = tensors[source(n)]
	}
	vars := map[*Weight]*tile.Tensor{}
	for i, w := range l.Weights() {
		gt, ok := c.Weights[w.short]
		if !ok {
			t.Fatalf("the golden case has no weight %s", w.short)
		}
		if !slices.Equal(gt.Shape, w.Shape()) {
			t.Fatalf("weight %s is %v, PyTorch's %v", w.short, w.Shape(), gt.Shape)
		}
		in := fmt.Sprintf("w%d", i)
		vars[w] = g.Input(in, dt, w.shape)
		ag.ins[in] = vars[w]
		ag.feeds[in] = gt.Data
		ag.xs, ag.xNames = append(ag.xs, vars[w]), append(ag.xNames, w.short)
	}
	if len(l.Weights()) != len(c.Weights) {
		t.Fatalf("the layer has %d weights, the golden case %d", len(l.Weights()), len(c.Weights))
	}
	y := l.call(&callContext{g: g, vars: vars}, args)
	cot := tile.NewValue(dt, tile.Shape(c.Cotangent.Shape))
	copy(cot.Data, c.Cotangent.Data)
	ag.loss = op.Sum(g, g.Mul(y, g.Constant(cot)), nil, false)
	grads, err := grad.Grad(g, ag.loss, ag.xs...)
	if err != nil {
		t.Fatal(err)
	}
	g.SetOutput("y", y)
	ag.outputs = []string{"y"}
	for i, gr := range grads {
		name := fmt.Sprintf("d%d", i)
		g.SetOutput(name, gr)
		ag.outputs = append(ag.outputs, name)
	}
	if err := g.Err(); err != nil {
		t.Fatal(err)
	}
	return ag
}

// TestMultiHeadAttentionMatchesPyTorch runs every golden case's layer
// forward and backward, in float64 on the reference device and in float32 on
// the reference and CPU devices, and compares the output and the gradients
// with respect to the inputs and every weight with PyTorch's.
func TestMultiHeadAttentionMatchesPyTorch(t *testing.T) {
	type devRun struct {
		name string
		dt   tile.DType
		dev  backend.Device
		tol  float64
	}
	runs := []devRun{
		{"float64/reference", tile.Float64, testDevice(), 1e-9},
		{"float32/reference", tile.Float32, goldenDevices(t)["reference"], 2e-5},
		{"float32/cpu", tile.Float32, goldenDevices(t)["cpu"], 2e-5},
	}
	// The CPU, then every OpenCL device; the race detector's run leaves
	// OpenCL to the plain one, which covers it.
	devs, _ := conformanceDevices(t)
	if raceDetector {
		devs = devs[:1]
	}
	for _, d := range devs[1:] {
		runs = append(runs, devRun{"float32/" + d.Info().ID, tile.Float32, d, 2e-5})
	}
	for _, c := range loadAttentionGolden(t) {
		for _, run := range runs {
			t.Run(c.Name+"/"+run.name, func(t *testing.T) {
				ag := buildAttentionGraph(t, c, run.dt)
				exe, err := run.dev.Compile(ag.g)
				if err != nil {
					t.Fatal(err)
				}
				defer exe.Close()
				for name, data := range ag.feeds {
					if err := exe.SetInput(name, hostData(run.dt, data)); err != nil {
						t.Fatal(err)
					}
				}
				if err := exe.Run(); err != nil {
					t.Fatal(err)
				}
				want := []goldenTensor{c.Output}
				what := []string{"output"}
				for _, n := range ag.xNames {
					if gt, ok := c.InputGrads[n]; ok {
						want = append(want, gt)
					} else {
						want = append(want, c.WeightGrads[n])
					}
					what = append(what, "gradient of "+n)
				}
				for i, name := range ag.outputs {
					got, err := readHost(exe, name, run.dt, len(want[i].Data))
					if err != nil {
						t.Fatal(err)
					}
					if len(want[i].Data) == 0 {
						t.Fatalf("no golden values for the %s", what[i])
					}
					for j, w := range want[i].Data {
						if !closeTo(got[j], w, run.tol) {
							t.Fatalf("%s [%d] = %v, PyTorch %v", what[i], j, got[j], w)
						}
					}
				}
			})
		}
	}
}

// hostData converts float64 values to the host slice type of dt.
func hostData(dt tile.DType, v []float64) any {
	if dt == tile.Float64 {
		return v
	}
	out := make([]float32, len(v))
	for i, x := range v {
		out[i] = float32(x)
	}
	return out
}

// readHost reads output name of dtype dt as float64 values.
func readHost(exe backend.Executable, name string, dt tile.DType, n int) ([]float64, error) {
	if dt == tile.Float64 {
		out := make([]float64, n)
		return out, exe.ReadOutput(name, out)
	}
	f := make([]float32, n)
	if err := exe.ReadOutput(name, f); err != nil {
		return nil, err
	}
	out := make([]float64, n)
	for i, x := range f {
		out[i] = float64(x)
	}
	return out, nil
}

// TestMultiHeadAttentionGradientCheck checks the gradients grad derives for
// the layer against central finite differences in float64, for the golden
// cases with a mask and a causal mask.
func TestMultiHeadAttentionGradientCheck(t *testing.T) {
	for _, c := range loadAttentionGolden(t) {
		if !c.Causal && c.Inputs["mask"].Data == nil {
			continue
		}
		t.Run(c.Name, func(t *testing.T) {
			ag := buildAttentionGraph(t, c, tile.Float64)
			feeds := map[string]*tile.Value{}
			for name, in := range ag.ins {
				v, err := tile.ValueOf(tile.Float64, in.Shape(), ag.feeds[name])
				if err != nil {
					t.Fatal(err)
				}
				feeds[name] = v
			}
			maxErr, where, err := grad.Check(ag.g, ag.loss, ag.xs, feeds, nil, grad.WithMaxProbes(60))
			if err != nil {
				t.Fatal(err)
			}
			if maxErr > 1e-6 {
				t.Errorf("gradient error %g at %s", maxErr, where)
			}
		})
	}
}

// attentionProbe builds a one-head MultiHeadAttention whose value and output
// projections are identities, so that its output for a value of identity
// rows is the attention probabilities: output[t, s] = p(t, s). The query
// and key kernels are set by the caller.
func attentionProbe(t *testing.T, steps int, opts ...LayerOption) (*attentionLayer, map[string][]float64) {
	t.Helper()
	l := MultiHeadAttention(1, steps, append([]LayerOption{UseBias(false)}, opts...)...).(*attentionLayer)
	if n := Apply(l, Input(steps, steps), Input(steps, steps)); n.Err() != nil {
		t.Fatal(n.Err())
	}
	eye := make([]float64, steps*steps)
	for i := range steps {
		eye[i*steps+i] = 1
	}
	return l, map[string][]float64{"value/kernel": eye, "attention_output/kernel": eye}
}

// runLayer calls l on inputs of the given shapes and values in float64 on the
// reference device, with its weights set from ws (zeros for those absent).
func runLayer(t *testing.T, l Layer, training bool, shapes [][]int, values [][]float64, ws map[string][]float64) []float64 {
	t.Helper()
	g := tile.NewGraph("layer")
	c := &callContext{g: g, training: training, vars: map[*Weight]*tile.Tensor{}}
	if training {
		c.seed = g.Input("seed", tile.Int64, tile.Shape{})
	}
	var args []*tile.Tensor
	for i, s := range shapes {
		args = append(args, g.Input(fmt.Sprintf("x%d", i), tile.Float64, s))
	}
	for i, w := range l.Weights() {
		c.vars[w] = g.Input(fmt.Sprintf("w%d", i), tile.Float64, w.shape)
	}
	y := l.call(c, args)
	g.SetOutput("y", y)
	if err := g.Err(); err != nil {
		t.Fatal(err)
	}
	exe, err := testDevice().Compile(g)
	if err != nil {
		t.Fatal(err)
	}
	defer exe.Close()
	if training {
		if err := exe.SetInput("seed", []int64{7}); err != nil {
			t.Fatal(err)
		}
	}
	for i, v := range values {
		if err := exe.SetInput(fmt.Sprintf("x%d", i), v); err != nil {
			t.Fatal(err)
		}
	}
	for i, w := range l.Weights() {
		v := ws[w.short]
		if v == nil {
			v = make([]float64, w.Size())
		}
		if err := exe.SetInput(fmt.Sprintf("w%d", i), v); err != nil {
			t.Fatal(err)
		}
	}
	if err := exe.Run(); err != nil {
		t.Fatal(err)
	}
	out := make([]float64, y.Size())
	if err := exe.ReadOutput("y", out); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestMultiHeadAttentionMaskByHand checks masking on probabilities worked by
// hand: query and key kernels of zero make every score 0, so a query
// attends equally to the keys it may see; a row masked throughout attends to
// every key equally (PyTorch gives NaN there, Keras this); mask values above
// 0.5 attend, others do not; the causal mask hides keys after the query.
func TestMultiHeadAttentionMaskByHand(t *testing.T) {
	const n = 3
	eye := []float64{1, 0, 0, 0, 1, 0, 0, 0, 1}
	mask := []float64{
		0, 0, 0, // masked throughout: uniform
		1, 0.4, 0.6, // keys 0 and 2
		0.51, 1, 0.5, // keys 0 and 1
	}
	l, ws := attentionProbe(t, n)
	lm := MultiHeadAttention(1, n, UseBias(false)).(*attentionLayer)
	if nd := Apply(lm, Input(n, n), Input(n, n), Input(n, n), Input(n, n)); nd.Err() != nil {
		t.Fatal(nd.Err())
	}
	third, half := 1.0/3, 0.5
	got := runLayer(t, lm, false, [][]int{{1, n, n}, {1, n, n}, {1, n, n}, {1, n, n}}, [][]float64{eye, eye, eye, mask}, ws)
	want := []float64{third, third, third, half, 0, half, half, half, 0}
	for i := range want {
		if math.Abs(got[i]-want[i]) > 1e-12 {
			t.Fatalf("masked probabilities %v, want %v", got, want)
		}
	}
	got = runLayer(t, l, false, [][]int{{1, n, n}, {1, n, n}}, [][]float64{eye, eye}, ws)
	for i := range got {
		if math.Abs(got[i]-third) > 1e-12 {
			t.Fatalf("unmasked probabilities %v, want all 1/3", got)
		}
	}
	lc, _ := attentionProbe(t, n, UseCausalMask(true))
	got = runLayer(t, lc, false, [][]int{{1, n, n}, {1, n, n}}, [][]float64{eye, eye}, ws)
	want = []float64{1, 0, 0, half, half, 0, third, third, third}
	for i := range want {
		if math.Abs(got[i]-want[i]) > 1e-12 {
			t.Fatalf("causal probabilities %v, want %v", got, want)
		}
	}
	// Scores: the query kernel scales by √n·2 and the key kernel is the
	// identity, so query row t gets scores 2·x[t]·key rows; 1/√n undoes the
	// √n. With x the identity, query t scores 2 on key t and 0 elsewhere.
	q := make([]float64, n*n)
	for i := range n {
		q[i*n+i] = 2 * math.Sqrt(n)
	}
	ws["query/kernel"], ws["key/kernel"] = q, eye
	got = runLayer(t, l, false, [][]int{{1, n, n}, {1, n, n}}, [][]float64{eye, eye}, ws)
	e2 := math.Exp(2)
	for i := range n {
		for j := range n {
			w := 1 / (e2 + n - 1)
			if i == j {
				w = e2 / (e2 + n - 1)
			}
			if math.Abs(got[i*n+j]-w) > 1e-12 {
				t.Fatalf("probabilities %v: [%d, %d] should be %v", got, i, j, w)
			}
		}
	}
}

// TestMultiHeadAttentionDropout checks AttentionDropout on the probabilities
// themselves (see attentionProbe): in training every probability is either
// dropped to 0 or scaled by 1/(1 − rate), about rate of them are dropped,
// and inference leaves them alone.
func TestMultiHeadAttentionDropout(t *testing.T) {
	const n, rate = 16, 0.25
	eye := make([]float64, n*n)
	for i := range n {
		eye[i*n+i] = 1
	}
	l, ws := attentionProbe(t, n, AttentionDropout(rate))
	shapes := [][]int{{1, n, n}, {1, n, n}}
	for _, p := range runLayer(t, l, false, shapes, [][]float64{eye, eye}, ws) {
		if math.Abs(p-1.0/n) > 1e-12 {
			t.Fatalf("inference changed a probability to %v, want %v", p, 1.0/n)
		}
	}
	dropped := 0
	for _, p := range runLayer(t, l, true, shapes, [][]float64{eye, eye}, ws) {
		switch {
		case p == 0:
			dropped++
		case math.Abs(p-1.0/n/(1-rate)) > 1e-12:
			t.Fatalf("a kept probability is %v, want %v", p, 1.0/n/(1-rate))
		}
	}
	// 256 draws at rate 0.25: 64 expected, standard deviation about 7.
	if dropped < 40 || dropped > 88 {
		t.Errorf("%d of %d probabilities dropped at rate %g", dropped, n*n, rate)
	}
}

// TestPositionEmbedding checks the layer's output by hand: the first steps
// rows of its table for every sample, whatever the input's values.
func TestPositionEmbedding(t *testing.T) {
	l := PositionEmbedding(4)
	if n := Apply(l, Input(3, 2)); n.Err() != nil {
		t.Fatal(n.Err())
	} else if !slices.Equal(n.Shape(), []int{3, 2}) {
		t.Fatalf("output shape %v, want [3 2]", n.Shape())
	}
	table := []float64{1, 2, 3, 4, 5, 6, 7, 8}
	x := []float64{9, 9, 9, 9, 9, 9, -1, -2, -3, -4, -5, -6}
	got := runLayer(t, l, false, [][]int{{2, 3, 2}}, [][]float64{x}, map[string][]float64{"embeddings": table})
	want := []float64{1, 2, 3, 4, 5, 6, 1, 2, 3, 4, 5, 6}
	if !slices.Equal(got, want) {
		t.Errorf("output %v, want %v", got, want)
	}
}

// TestAttentionSaveLoad saves a transformer block of PositionEmbedding and
// MultiHeadAttention with every option and loads it back: the architecture
// JSON, the summary and the predictions must agree. A model taking a mask
// input round-trips through its architecture.
func TestAttentionSaveLoad(t *testing.T) {
	in := Input(6, 4)
	x := Apply(Add(), in, Apply(PositionEmbedding(8, KernelInitializer(HeNormal())), in))
	a := Apply(MultiHeadAttention(2, 3, ValueDim(5), OutputShape(7), AttentionDropout(0.1), UseCausalMask(true),
		KernelInitializer(HeUniform()), BiasInitializer(RandomUniform(-0.1, 0.1)), Name("attn")), x, x)
	y := Apply(Dense(3, Activation("softmax")), Apply(GlobalAveragePooling1D(), a))
	m, err := Functional("block", []*Node{in}, []*Node{y})
	if err != nil {
		t.Fatal(err)
	}
	if err := m.InitWeights(3); err != nil {
		t.Fatal(err)
	}
	sum := m.Summary()
	for _, row := range [][3]string{
		{"position_embedding (PositionEmbedding)", "(None, 6, 4)", " 32 "}, // 8·4
		// query 4·2·3 + 2·3, key likewise, value 4·2·5 + 2·5, output 2·5·7 + 7: 30 + 30 + 50 + 77
		{"attn (MultiHeadAttention)", "(None, 6, 7)", " 187 "},
	} {
		found := false
		for _, line := range strings.Split(sum, "\n") {
			if strings.HasPrefix(line, "│ "+row[0]+" ") {
				found = strings.Contains(line, "│ "+row[1]+" ") && strings.Contains(line, row[2]+"│")
				break
			}
		}
		if !found {
			t.Errorf("summary lacks the row %s %s%s:\n%s", row[0], row[1], row[2], sum)
		}
	}
	var names []string
	for _, w := range m.Layer("attn").Weights() {
		names = append(names, w.Name()+fmt.Sprint(w.Shape()))
	}
	if want := "attn/query/kernel[4 2 3] attn/query/bias[2 3] attn/key/kernel[4 2 3] attn/key/bias[2 3] " +
		"attn/value/kernel[4 2 5] attn/value/bias[2 5] attn/attention_output/kernel[2 5 7] attn/attention_output/bias[7]"; strings.Join(names, " ") != want {
		t.Errorf("weights %s\nwant %s", strings.Join(names, " "), want)
	}
	path := filepath.Join(t.TempDir(), "block.safetensors")
	if err := m.Save(path); err != nil {
		t.Fatal(err)
	}
	m2, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	a1, _ := m.Architecture()
	a2, _ := m2.Architecture()
	if string(a1) != string(a2) {
		t.Errorf("architectures differ:\n%s\n%s", a1, a2)
	}
	for _, frag := range []string{
		`{"class_name":"PositionEmbedding","config":{"name":"position_embedding","trainable":true,"sequence_length":8,"initializer":{"name":"he_normal"`,
		`{"class_name":"MultiHeadAttention","config":{"name":"attn","trainable":true,"num_heads":2,"key_dim":3,"value_dim":5,"dropout":0.1,"use_bias":true,"output_shape":7,"use_causal_mask":true,"kernel_initializer":{"name":"he_uniform"}`,
	} {
		if !strings.Contains(string(a1), frag) {
			t.Errorf("architecture lacks %s:\n%s", frag, a1)
		}
	}
	if m.Summary() != m2.Summary() {
		t.Errorf("summaries differ:\n%s\n%s", m.Summary(), m2.Summary())
	}
	xs := make([]float32, 2*6*4)
	for k := range xs {
		xs[k] = float32(math.Sin(float64(k)))
	}
	var preds [][]float32
	for _, mm := range []*Model{m, m2} {
		if err := mm.SetDevice(testDevice()); err != nil {
			t.Fatal(err)
		}
		p, err := mm.Predict(samples(t, xs, []int{6, 4}, nil, nil), quiet)
		if err != nil {
			t.Fatal(err)
		}
		preds = append(preds, p.Data)
	}
	if !slices.Equal(preds[0], preds[1]) {
		t.Errorf("predictions differ: %v vs %v", preds[0], preds[1])
	}

	q, v, mask := Input(3, 4), Input(5, 2), Input(3, 5)
	o := Apply(MultiHeadAttention(1, 2), q, v, v, mask)
	mm, err := Functional("masked", []*Node{q, v, mask}, []*Node{o})
	if err != nil {
		t.Fatal(err)
	}
	js, err := mm.Architecture()
	if err != nil {
		t.Fatal(err)
	}
	if want := `"nodes":[{"layer":"multi_head_attention","inbound":["input_layer","input_layer_1","input_layer_1","input_layer_2"]}]`; !strings.Contains(string(js), want) {
		t.Errorf("architecture lacks %s:\n%s", want, js)
	}
	back, err := LoadArchitecture(js)
	if err != nil {
		t.Fatal(err)
	}
	if js2, _ := back.Architecture(); string(js2) != string(js) {
		t.Errorf("architectures differ:\n%s\n%s", js, js2)
	}
	if mm.Summary() != back.Summary() {
		t.Errorf("summaries differ:\n%s\n%s", mm.Summary(), back.Summary())
	}
}

// TestAttentionErrors checks the messages of bad arguments and shapes.
func TestAttentionErrors(t *testing.T) {
	for _, c := range []struct {
		node *Node
		want string
	}{
		{Apply(MultiHeadAttention(0, 4), Input(3, 4), Input(3, 4)), `nn: MultiHeadAttention: num_heads 0 must be positive`},
		{Apply(MultiHeadAttention(2, -1), Input(3, 4), Input(3, 4)), `nn: MultiHeadAttention: key_dim -1 must be positive`},
		{Apply(MultiHeadAttention(2, 2, ValueDim(0)), Input(3, 4), Input(3, 4)), `nn: MultiHeadAttention: value_dim 0 must be positive`},
		{Apply(MultiHeadAttention(2, 2, AttentionDropout(1)), Input(3, 4), Input(3, 4)), `nn: MultiHeadAttention: dropout 1 must lie in [0, 1)`},
		{Apply(MultiHeadAttention(2, 2, OutputShape(3, 4)), Input(3, 4), Input(3, 4)), `nn: MultiHeadAttention: output shape [3 4] must be one size, the output's features`},
		{Apply(MultiHeadAttention(2, 2, OutputShape(0)), Input(3, 4), Input(3, 4)), `nn: MultiHeadAttention: output_shape 0 must be positive`},
		{Apply(MultiHeadAttention(2, 2, Padding("same")), Input(3, 4), Input(3, 4)), `nn: MultiHeadAttention: option Padding does not apply (it accepts Name, Trainable, ValueDim, AttentionDropout, UseBias, OutputShape, UseCausalMask, KernelInitializer, BiasInitializer)`},
		{Apply(MultiHeadAttention(2, 2), Input(3, 4)), `nn: MultiHeadAttention on input (None, 3, 4): takes (query, value), (query, value, key) or (query, value, key, attention_mask), got 1 inputs`},
		{Apply(MultiHeadAttention(2, 2), Input(3, 4, 1), Input(3, 4)), `nn: MultiHeadAttention on input [(None, 3, 4, 1), (None, 3, 4)]: the query must be (batch, steps, features), got (None, 3, 4, 1)`},
		{Apply(MultiHeadAttention(2, 2), Input(3, 4), Input(5, 4), Input(6, 4)), `nn: MultiHeadAttention on input [(None, 3, 4), (None, 5, 4), (None, 6, 4)]: the key (None, 6, 4) and the value (None, 5, 4) must have as many steps`},
		{Apply(MultiHeadAttention(2, 2), Input(3, 4), Input(5, 4), Input(5, 4), Input(5, 3)), `nn: MultiHeadAttention on input [(None, 3, 4), (None, 5, 4), (None, 5, 4), (None, 5, 3)]: the attention mask must be (batch, query steps, key steps) = (None, 3, 5), got (None, 5, 3)`},
		{Apply(PositionEmbedding(0), Input(3, 4)), `nn: PositionEmbedding: sequence_length 0 must be positive`},
		{Apply(PositionEmbedding(2), Input(3, 4)), `nn: PositionEmbedding on input (None, 3, 4): the input has 3 steps, more than the sequence length 2`},
		{Apply(PositionEmbedding(4), Input(4)), `nn: PositionEmbedding on input (None, 4): needs inputs of shape (batch, steps, features), got (None, 4)`},
	} {
		if err := c.node.Err(); err == nil || err.Error() != c.want {
			t.Errorf("error %v\nwant %s", err, c.want)
		}
	}
	_, err := Sequential("m", Input(3, 4), MultiHeadAttention(2, 2))
	if err == nil || !strings.Contains(err.Error(), `layer 1 of 1 (MultiHeadAttention "multi_head_attention") on input (None, 3, 4): takes (query, value)`) {
		t.Errorf("Sequential error %v", err)
	}
	js := `{"format":"tartan.architecture","version":1,"class_name":"Sequential","name":"m","layers":[` +
		`{"class_name":"InputLayer","config":{"name":"input_layer","shape":[4,4]}},` +
		`{"class_name":"PositionEmbedding","config":{"name":"p","trainable":true,"sequence_length":-2,"initializer":{"name":"zeros"}}}]}`
	if _, err := LoadArchitecture([]byte(js)); err == nil || !strings.Contains(err.Error(), `layer 1 (PositionEmbedding "p"): sequence_length -2 must be positive`) {
		t.Errorf("LoadArchitecture error %v", err)
	}
}
