package onnx

import (
	"bytes"
	"math"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/tartanml/tartan/backend/reference"
	"github.com/tartanml/tartan/nn"
	"github.com/tartanml/tartan/npy"
	"github.com/tartanml/tartan/onnx/internal/pb"
	"github.com/tartanml/tartan/tile"
)

// exportCase is a model to export, with the inputs to check it on.
type exportCase struct {
	name  string
	model *nn.Model
	input func(r *rand.Rand, n int) []float32 // n samples
}

func normal(r *rand.Rand, size int) []float32 {
	v := make([]float32, size)
	for i := range v {
		v[i] = float32(r.NormFloat64())
	}
	return v
}

// exportCases are models covering every layer kind of package nn and
// every activation, in both layouts.
func exportCases(t *testing.T) []exportCase {
	t.Helper()
	must := func(m *nn.Model, err error) *nn.Model {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	per := func(shape ...int) func(r *rand.Rand, n int) []float32 {
		return func(r *rand.Rand, n int) []float32 {
			size := n
			for _, d := range shape {
				size *= d
			}
			return normal(r, size)
		}
	}
	var cases []exportCase
	cases = append(cases, exportCase{"cnn", must(nn.Sequential("cnn", nn.Input(12, 11, 3),
		nn.Conv2D(8, 3, nn.Padding("same"), nn.Activation("relu")),
		nn.BatchNormalization(),
		nn.MaxPooling2D(2),
		nn.DepthwiseConv2D(3, nn.DepthMultiplier(2), nn.Padding("same"), nn.Activation("relu6")),
		nn.Conv2D(6, 3, nn.Strides(2), nn.Padding("same"), nn.UseBias(false)),
		nn.BatchNormalization(nn.Scale(false), nn.Center(false)),
		nn.ReLU(),
		nn.AveragePooling2D(2, nn.Strides(1), nn.Padding("same")),
		nn.Conv2D(4, 2, nn.DilationRate(2), nn.Padding("same"), nn.Groups(2)),
		nn.MaxPooling2D(2, nn.Padding("same")),
		nn.GlobalAveragePooling2D(),
		nn.Dense(5, nn.Activation("softmax")),
	)), per(12, 11, 3)})
	cases = append(cases, exportCase{"mlp", must(nn.Sequential("mlp", nn.Input(10),
		nn.Dense(16, nn.Activation("gelu")),
		nn.Dropout(0.5),
		nn.Dense(16, nn.Activation("elu")),
		nn.Activation("softplus"),
		nn.Dense(12, nn.Activation("silu")),
		nn.ReLU(nn.MaxValue(0.8), nn.NegativeSlope(0.1)),
		nn.Dense(12, nn.Activation("leaky_relu")),
		nn.ReLU(nn.MaxValue(1.5)),
		nn.Dense(8, nn.Activation("swish")),
		nn.ReLU(nn.NegativeSlope(0.3)),
		nn.Activation("tanh"),
		nn.Dense(8, nn.Activation("sigmoid")),
		nn.LayerNormalization(nn.Epsilon(1e-5)),
		nn.Dense(6, nn.UseBias(false)),
		nn.BatchNormalization(),
		nn.Dense(4, nn.Activation("log_softmax")),
	)), per(10)})
	cases = append(cases, exportCase{"sequence", must(nn.Sequential("sequence", nn.Input(6),
		nn.Embedding(10, 4),
		nn.Conv1D(6, 3, nn.Padding("same"), nn.Activation("relu")),
		nn.BatchNormalization(),
		nn.Conv1D(4, 2, nn.Groups(2)),
		nn.LayerNormalization(nn.Axis(1), nn.Center(false)),
		nn.Dense(3, nn.Activation("tanh")),
		nn.Reshape([]int{3, -1}),
		nn.Softmax(nn.Axis(1)),
		nn.Flatten(),
		nn.Dense(2),
	)), func(r *rand.Rand, n int) []float32 {
		// Indices in and out of the table, some fractional.
		v := make([]float32, 6*n)
		for i := range v {
			v[i] = float32(r.Intn(14) - 2)
			if i%5 == 0 {
				v[i] += 0.6
			}
		}
		return v
	}})
	in := nn.Input(8, 8, 2)
	a := nn.Apply(nn.Conv2D(4, 3, nn.Padding("same"), nn.Activation("relu")), in)
	b := nn.Apply(nn.Conv2D(4, 1), a)
	sum := nn.Apply(nn.Add(), a, b, nn.Apply(nn.Conv2D(4, 1, nn.Activation("gelu")), in))
	cat := nn.Apply(nn.Concatenate(), sum, nn.Apply(nn.BatchNormalization(), sum))
	pooled := nn.Apply(nn.GlobalMaxPooling2D(), nn.Apply(nn.MaxPooling2D(2), cat))
	flat := nn.Apply(nn.Flatten(), nn.Apply(nn.Conv2D(3, 2, nn.Strides(2)), cat))
	shared := nn.Dense(8, nn.Activation("tanh")) // called twice
	j := nn.Apply(nn.Concatenate(nn.Axis(1)), nn.Apply(shared, pooled), nn.Apply(shared, nn.Apply(nn.Dense(8), flat)))
	r := nn.Apply(nn.Reshape([]int{4, 4}), j)
	r = nn.Apply(nn.LayerNormalization(nn.Axis(-2)), r)
	r = nn.Apply(nn.Concatenate(nn.Axis(1)), r, nn.Apply(nn.Softmax(nn.Axis(-2)), r))
	out := nn.Apply(nn.Dense(3), nn.Apply(nn.Flatten(), r))
	cases = append(cases, exportCase{"functional", must(nn.Functional("functional", []*nn.Node{in}, []*nn.Node{out})), per(8, 8, 2)})
	// The spatial layers beyond convolution, channels-last where they come
	// first and channels-first inside convolutional chains.
	cases = append(cases, exportCase{"spatial", must(nn.Sequential("spatial", nn.Input(9, 10, 3),
		nn.Rescaling(0.5, 0.25),
		nn.RandomFlip("horizontal_and_vertical"),
		nn.RandomContrast(0.3),
		nn.ZeroPadding2D([]int{1, 2}),
		nn.Conv2D(4, 3, nn.Activation("relu")),
		nn.ZeroPadding2D([]int{0, 1, 2, 1}),
		nn.Cropping2D([]int{1, 0, 2, 1}),
		nn.UpSampling2D([]int{2, 1}),
		nn.Rescaling(2, 0),
		nn.SeparableConv2D(5, 3, nn.DepthMultiplier(2), nn.Padding("same"), nn.Strides(2), nn.Activation("tanh")),
		nn.Conv2DTranspose(3, 3, nn.Strides(2), nn.Padding("same"), nn.Activation("relu")),
		nn.UpSampling2D([]int{2, 2}, nn.Interpolation("bilinear")),
		nn.Conv2DTranspose(2, 2, nn.Strides(3)),
		nn.Conv2DTranspose(3, 3, nn.Strides(2), nn.Padding("same"), nn.OutputPadding(1), nn.UseBias(false)),
		nn.Conv2DTranspose(2, 2, nn.DilationRate(2), nn.Padding("same")),
		nn.SeparableConv2D(3, 2, nn.DilationRate(2), nn.UseBias(false)),
		nn.RandomCrop(20, 13),
		nn.MaxPooling2D(2),
		nn.GlobalMaxPooling2D(),
		nn.Dense(3),
	)), per(9, 10, 3)})
	cases = append(cases, exportCase{"crop", must(nn.Sequential("crop", nn.Input(12, 10, 2),
		nn.Cropping2D([]int{1, 2}),
		nn.RandomCrop(5, 6),
		nn.UpSampling2D([]int{1, 2}),
		nn.RandomCrop(4, 12),
		nn.Conv2DTranspose(2, 3, nn.Padding("valid"), nn.OutputPadding(0)),
		nn.RandomCrop(9, 9),
		nn.GlobalAveragePooling2D(),
	)), per(12, 10, 2)})
	cases = append(cases, exportCase{"steps", must(nn.Sequential("steps", nn.Input(12, 3),
		nn.ZeroPadding1D([]int{1, 2}),
		nn.Conv1D(4, 3, nn.Activation("relu")),
		nn.MaxPooling1D(2, nn.Padding("same")),
		nn.Cropping1D([]int{1, 0}),
		nn.UpSampling1D(2),
		nn.AveragePooling1D(3, nn.Strides(2), nn.Padding("same")),
		nn.Conv1DTranspose(3, 3, nn.Strides(2), nn.Activation("gelu")),
		nn.ZeroPadding1D([]int{2}),
		nn.Conv1DTranspose(2, 2, nn.Strides(2), nn.Padding("same"), nn.OutputPadding(1)),
		nn.GlobalAveragePooling1D(),
		nn.Dense(2),
	)), per(12, 3)})
	cases = append(cases, exportCase{"steps_last", must(nn.Sequential("steps_last", nn.Input(10, 2),
		nn.UpSampling1D(3),
		nn.Cropping1D([]int{2, 3}),
		nn.Rescaling(-1.5, 0.5),
		nn.GlobalMaxPooling1D(),
		nn.Dense(2),
	)), per(10, 2)})
	cases = append(cases, exportCase{"pool1d", must(nn.Sequential("pool1d", nn.Input(11, 2),
		nn.AveragePooling1D(2),
		nn.Conv1D(3, 2),
		nn.MaxPooling1D(3, nn.Strides(1)),
		nn.GlobalMaxPooling1D(),
	)), per(11, 2)})
	for i, c := range cases {
		if err := c.model.InitWeights(int64(i + 1)); err != nil {
			t.Fatal(err)
		}
		randomizeWeights(t, c.model, int64(100+i))
	}
	return cases
}

// randomizeWeights gives biases and normalisation parameters and
// statistics random values, so that none of them is trivially 0 or 1.
func randomizeWeights(t *testing.T, m *nn.Model, seed int64) {
	t.Helper()
	r := rand.New(rand.NewSource(seed))
	for _, w := range m.Weights() {
		name := w.Name()
		var v []float32
		switch {
		case strings.HasSuffix(name, "/moving_variance"):
			v = make([]float32, w.Size())
			for i := range v {
				v[i] = 0.5 + r.Float32()
			}
		case strings.HasSuffix(name, "/gamma"):
			v = make([]float32, w.Size())
			for i := range v {
				v[i] = 0.5 + r.Float32()
			}
		case strings.HasSuffix(name, "/bias"), strings.HasSuffix(name, "/beta"), strings.HasSuffix(name, "/moving_mean"):
			v = normal(r, w.Size())
			for i := range v {
				v[i] *= 0.3
			}
		default:
			continue
		}
		a, err := nn.NewArray(v, w.Shape()...)
		if err == nil {
			err = m.SetWeight(name, a)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
}

// exportModel exports m and parses the result back.
func exportModel(t *testing.T, m *nn.Model, opts ...ExportOption) ([]byte, *pb.ModelProto) {
	t.Helper()
	var buf bytes.Buffer
	if err := Export(m, &buf, opts...); err != nil {
		t.Fatalf("Export(%s): %v", m.Name(), err)
	}
	var mp pb.ModelProto
	if err := proto.Unmarshal(buf.Bytes(), &mp); err != nil {
		t.Fatalf("parsing the export of %s: %v", m.Name(), err)
	}
	return buf.Bytes(), &mp
}

func opTypes(mp *pb.ModelProto) []string {
	var ops []string
	for _, n := range mp.GetGraph().GetNode() {
		ops = append(ops, n.GetOpType())
	}
	return ops
}

func dims(vi *pb.ValueInfoProto) []string {
	var out []string
	for _, d := range vi.GetType().GetTensorType().GetShape().GetDim() {
		if p := d.GetDimParam(); p != "" {
			out = append(out, p)
		} else {
			out = append(out, strconv.FormatInt(d.GetDimValue(), 10))
		}
	}
	return out
}

// TestExportStructure checks the exported graph of a small CNN node by
// node: channels-last input, one Transpose into the convolutional chain and
// one out of it, the kernel reordered to ONNX's (out, in, kh, kw).
func TestExportStructure(t *testing.T) {
	m, err := nn.Sequential("small", nn.Input(5, 4, 2),
		nn.Conv2D(3, 3, nn.Padding("same"), nn.Strides(2), nn.Activation("relu")),
		nn.MaxPooling2D(2, nn.Padding("same")),
		nn.Flatten(),
		nn.Dense(2))
	if err != nil {
		t.Fatal(err)
	}
	_, mp := exportModel(t, m)
	if got, want := opTypes(mp), []string{"Transpose", "Conv", "Relu", "MaxPool", "Transpose", "Flatten", "Gemm"}; !slices.Equal(got, want) {
		t.Errorf("ops %v, want %v", got, want)
	}
	if mp.GetIrVersion() != 8 || len(mp.GetOpsetImport()) != 1 || mp.GetOpsetImport()[0].GetVersion() != 17 || mp.GetOpsetImport()[0].GetDomain() != "" {
		t.Errorf("IR version %d, opsets %v", mp.GetIrVersion(), mp.GetOpsetImport())
	}
	g := mp.GetGraph()
	if len(g.GetInput()) != 1 || g.GetInput()[0].GetName() != "input_layer" || !slices.Equal(dims(g.GetInput()[0]), []string{"N", "5", "4", "2"}) {
		t.Errorf("input %v", g.GetInput())
	}
	if len(g.GetOutput()) != 1 || g.GetOutput()[0].GetName() != "dense" || !slices.Equal(dims(g.GetOutput()[0]), []string{"N", "2"}) {
		t.Errorf("output %v", g.GetOutput())
	}
	attrs := map[string][]int64{}
	for _, a := range g.GetNode()[1].GetAttribute() {
		attrs[a.GetName()] = append(a.GetInts(), a.GetI())
	}
	// Height 5, stride 2: out 3, padding 2 split 1/1; width 4: out 2,
	// padding 1 split 0/1.
	if got := attrs["pads"]; !slices.Equal(got, []int64{1, 0, 1, 1, 0}) {
		t.Errorf("conv pads %v, want [1 0 1 1] (then I 0)", got)
	}
	if got := g.GetNode()[0].GetAttribute()[0].GetInts(); !slices.Equal(got, []int64{0, 3, 1, 2}) {
		t.Errorf("input transpose perm %v", got)
	}
	// The kernel: nn's (kh, kw, in, out) element [i, j, c, o] is ONNX's
	// [o, c, i, j].
	k, err := m.GetWeight("conv2d/kernel")
	if err != nil {
		t.Fatal(err)
	}
	var w *pb.TensorProto
	for _, init := range g.GetInitializer() {
		if init.GetName() == "conv2d/kernel" {
			w = init
		}
	}
	if w == nil || !slices.Equal(w.GetDims(), []int64{3, 2, 3, 3}) {
		t.Fatalf("conv kernel initializer %v", w)
	}
	at := func(o, c, i, j int) float32 {
		off := 4 * (((o*2+c)*3+i)*3 + j)
		raw := w.GetRawData()
		return math.Float32frombits(uint32(raw[off]) | uint32(raw[off+1])<<8 | uint32(raw[off+2])<<16 | uint32(raw[off+3])<<24)
	}
	for _, ix := range [][4]int{{0, 0, 0, 0}, {2, 1, 0, 2}, {1, 0, 1, 1}, {2, 2, 1, 2}, {0, 2, 1, 0}} {
		i, j, c, o := ix[0], ix[1], ix[2], ix[3]
		if got, want := at(o, c, i, j), k.Data[((i*3+j)*2+c)*3+o]; got != want {
			t.Errorf("kernel [%d %d %d %d]: ONNX has %g, nn %g", i, j, c, o, got, want)
		}
	}
}

// TestExportFixedBatch checks that FixedBatch replaces the symbolic batch.
func TestExportFixedBatch(t *testing.T) {
	m, err := nn.Sequential("fixed", nn.Input(3), nn.Dense(2), nn.Dropout(0.3))
	if err != nil {
		t.Fatal(err)
	}
	_, mp := exportModel(t, m, FixedBatch(7))
	g := mp.GetGraph()
	if got := dims(g.GetInput()[0]); !slices.Equal(got, []string{"7", "3"}) {
		t.Errorf("input dims %v", got)
	}
	if got := dims(g.GetOutput()[0]); !slices.Equal(got, []string{"7", "2"}) {
		t.Errorf("output dims %v", got)
	}
	// The final Dropout is omitted: the output is the Dense's.
	if got := opTypes(mp); !slices.Equal(got, []string{"Gemm"}) || g.GetOutput()[0].GetName() != "dense" {
		t.Errorf("ops %v, output %q", got, g.GetOutput()[0].GetName())
	}
	if err := Export(m, new(bytes.Buffer), FixedBatch(-1)); err == nil || !strings.Contains(err.Error(), "negative") {
		t.Errorf("FixedBatch(-1): %v", err)
	}
}

// TestExportErrors checks that a layer without an ONNX mapping is named
// with its class, as is an unknown activation.
func TestExportErrors(t *testing.T) {
	noWeights := func(string) (*nn.Array, error) { return nil, os.ErrNotExist }
	arch := `{"format":"tartan.architecture","version":1,"class_name":"Sequential","name":"m","layers":[
		{"class_name":"InputLayer","config":{"name":"input_layer","shape":[4,3]}},
		{"class_name":"Frobnicate","config":{"name":"frob","units":8}}]}`
	_, err := exportArchitecture([]byte(arch), noWeights, exportSettings{})
	if err == nil || !strings.Contains(err.Error(), `layer "frob" (Frobnicate) cannot be exported: class Frobnicate has no ONNX mapping`) {
		t.Errorf("unknown class: %v", err)
	}
	arch = `{"format":"tartan.architecture","version":1,"class_name":"Sequential","name":"m","layers":[
		{"class_name":"InputLayer","config":{"name":"input_layer","shape":[4]}},
		{"class_name":"Activation","config":{"name":"act","activation":"hard_sigmoid"}}]}`
	_, err = exportArchitecture([]byte(arch), noWeights, exportSettings{})
	if err == nil || !strings.Contains(err.Error(), `layer "act" (Activation) cannot be exported: activation "hard_sigmoid" has no ONNX mapping`) {
		t.Errorf("unknown activation: %v", err)
	}
	if err := Export(nil, new(bytes.Buffer)); err == nil {
		t.Errorf("nil model exported")
	}
}

// TestPermute checks the weight reordering on a hand-worked case.
func TestPermute(t *testing.T) {
	// (2, 3) transposed.
	got, shape := permute([]float32{1, 2, 3, 4, 5, 6}, []int{2, 3}, []int{1, 0})
	if !slices.Equal(got, []float32{1, 4, 2, 5, 3, 6}) || !slices.Equal(shape, []int{3, 2}) {
		t.Errorf("transpose: %v %v", got, shape)
	}
	// (1, 2, 2) to (2, 1, 2) by perm (1, 0, 2): the rows swap places with
	// the leading axis, which leaves the data unchanged.
	got, _ = permute([]float32{1, 2, 3, 4}, []int{1, 2, 2}, []int{1, 0, 2})
	if !slices.Equal(got, []float32{1, 2, 3, 4}) {
		t.Errorf("perm (1 0 2): %v", got)
	}
	// (2, 1, 2) by perm (2, 0, 1): element [a, b, c] goes to [c, a, b].
	got, shape = permute([]float32{1, 2, 3, 4}, []int{2, 1, 2}, []int{2, 0, 1})
	if !slices.Equal(got, []float32{1, 3, 2, 4}) || !slices.Equal(shape, []int{2, 2, 1}) {
		t.Errorf("perm (2 0 1): %v %v", got, shape)
	}
}

// TestWindowPads checks TensorFlow's "same" arithmetic by hand.
func TestWindowPads(t *testing.T) {
	for _, c := range []struct {
		in, k, s, d        int
		pad                string
		out, before, after int
	}{
		{5, 3, 2, 1, "same", 3, 1, 1},
		{6, 3, 2, 1, "same", 3, 0, 1},
		{4, 2, 1, 2, "same", 4, 1, 1},
		{7, 1, 3, 1, "same", 3, 0, 0},
		{5, 3, 2, 1, "valid", 2, 0, 0},
		{6, 3, 1, 2, "valid", 2, 0, 0},
	} {
		out, b, a, err := windowPads(c.in, c.k, c.s, c.d, c.pad)
		if err != nil || out != c.out || b != c.before || a != c.after {
			t.Errorf("%+v: got %d %d %d %v", c, out, b, a, err)
		}
	}
	if _, _, _, err := windowPads(2, 3, 1, 1, "valid"); err == nil {
		t.Errorf("a window larger than its input was accepted")
	}
}

// pythonWith returns /usr/bin/python3 when it imports every module, or
// skips the test.
func pythonWith(t *testing.T, modules ...string) string {
	t.Helper()
	const py = "/usr/bin/python3"
	if out, err := exec.Command(py, "-c", "import "+strings.Join(modules, ", ")).CombinedOutput(); err != nil {
		t.Skipf("%s cannot import %s: %v %s", py, strings.Join(modules, ", "), err, strings.TrimSpace(string(out)))
	}
	return py
}

// TestExportChecker runs ONNX's own checker, with full shape inference, on
// every exported model.
func TestExportChecker(t *testing.T) {
	py := pythonWith(t, "onnx")
	dir := t.TempDir()
	for _, c := range exportCases(t) {
		for _, opts := range [][]ExportOption{nil, {FixedBatch(2)}} {
			p := filepath.Join(dir, c.name+".onnx")
			if err := ExportFile(c.model, p, opts...); err != nil {
				t.Fatalf("%s: %v", c.name, err)
			}
			out, err := exec.Command(py, "-c", `import onnx, sys
m = onnx.load(sys.argv[1])
onnx.checker.check_model(m, full_check=True)
inferred = onnx.shape_inference.infer_shapes(m, check_type=True, strict_mode=True)
print([d.dim_value or d.dim_param for d in inferred.graph.output[0].type.tensor_type.shape.dim])`, p).CombinedOutput()
			if err != nil {
				t.Errorf("%s (%d options): the ONNX checker refuses the export: %v\n%s", c.name, len(opts), err, out)
				continue
			}
			batch := "'N'"
			if len(opts) > 0 {
				batch = "2"
			}
			want := "[" + batch
			for _, d := range c.model.OutputShape() {
				want += ", " + strconv.Itoa(d)
			}
			want += "]"
			if got := strings.TrimSpace(string(out)); got != want {
				t.Errorf("%s: inferred output shape %s, want %s", c.name, got, want)
			}
		}
	}
}

// TestExportAgreesWithPredict evaluates every exported model with
// testdata/torch/eval_onnx.py (PyTorch, op by op, from the ONNX
// specification) on random inputs and compares with the nn model's Predict
// on the reference device. (TestExportForRuntime writes the same models
// for onnxruntime.)
func TestExportAgreesWithPredict(t *testing.T) {
	py := pythonWith(t, "onnx", "torch", "numpy")
	dir := t.TempDir()
	for i, c := range exportCases(t) {
		const n = 5
		r := rand.New(rand.NewSource(int64(i)))
		shape := append([]int{n}, c.model.InputShape()...)
		x, err := nn.NewArray(c.input(r, n), shape...)
		if err != nil {
			t.Fatal(err)
		}
		if err := c.model.SetDevice(reference.New()); err != nil {
			t.Fatal(err)
		}
		s, err := nn.FromArrays(x, nil)
		if err != nil {
			t.Fatal(err)
		}
		want, err := c.model.Predict(s, nn.Verbose(0))
		if err != nil {
			t.Fatalf("%s: Predict: %v", c.name, err)
		}
		model := filepath.Join(dir, c.name+".onnx")
		input := filepath.Join(dir, c.name+"_input.npy")
		if err := ExportFile(c.model, model); err != nil {
			t.Fatal(err)
		}
		xa, err := npy.New(x.Shape, slices.Clone(x.Data))
		if err != nil {
			t.Fatal(err)
		}
		if err := npy.WriteFile(input, xa); err != nil {
			t.Fatal(err)
		}
		outDir := filepath.Join(dir, c.name+"_eval")
		if out, err := exec.Command(py, "testdata/torch/eval_onnx.py", model, outDir, input).CombinedOutput(); err != nil {
			t.Fatalf("%s: eval_onnx.py: %v\n%s", c.name, err, out)
		}
		got, err := npy.ReadFile(filepath.Join(outDir, "output_0.npy"))
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got.Shape, want.Shape) {
			t.Fatalf("%s: the ONNX graph gives shape %v, Predict %v", c.name, got.Shape, want.Shape)
		}
		worst := 0.0
		for k, g := range got.Float32s() {
			w := float64(want.Data[k])
			d := math.Abs(float64(g) - w)
			if d > 1e-5+1e-4*math.Abs(w) || math.IsNaN(float64(g)) {
				t.Errorf("%s: element %d: ONNX %g, Predict %g", c.name, k, g, w)
				break
			}
			worst = max(worst, d)
		}
		t.Logf("%s: %d nodes, %d outputs agree within %.2g", c.name, countNodes(t, model), len(want.Data), worst)
	}
}

func countNodes(t *testing.T, path string) int {
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var mp pb.ModelProto
	if err := proto.Unmarshal(b, &mp); err != nil {
		t.Fatal(err)
	}
	return len(mp.GetGraph().GetNode())
}

// TestExportMultipleOutputs exports a functional model with two inputs
// and three outputs: one is an input passed through Dropout (so an
// Identity names it), two others are the same layer's output and a later
// one.
func TestExportMultipleOutputs(t *testing.T) {
	a := nn.Input(3)
	b := nn.Input(2)
	h := nn.Apply(nn.Dense(4, nn.Activation("relu")), nn.Apply(nn.Concatenate(), a, b))
	y := nn.Apply(nn.Dense(2), h)
	m, err := nn.Functional("multi", []*nn.Node{a, b}, []*nn.Node{y, h, nn.Apply(nn.Dropout(0.1), b)})
	if err != nil {
		t.Fatal(err)
	}
	raw, mp := exportModel(t, m)
	g := mp.GetGraph()
	var ins, outs []string
	for _, v := range g.GetInput() {
		ins = append(ins, v.GetName())
	}
	for _, v := range g.GetOutput() {
		outs = append(outs, v.GetName()+strings.Join(dims(v), ","))
	}
	if !slices.Equal(ins, []string{"input_layer", "input_layer_1"}) {
		t.Errorf("inputs %v", ins)
	}
	if !slices.Equal(outs, []string{"dense_1N,2", "denseN,4", "dropoutN,2"}) {
		t.Errorf("outputs %v", outs)
	}
	if got, want := opTypes(mp), []string{"Concat", "Gemm", "Relu", "Gemm", "Identity"}; !slices.Equal(got, want) {
		t.Errorf("ops %v, want %v", got, want)
	}
	if _, err := exec.LookPath("/usr/bin/python3"); err == nil {
		py := pythonWith(t, "onnx")
		p := filepath.Join(t.TempDir(), "multi.onnx")
		if err := os.WriteFile(p, raw, 0o644); err != nil {
			t.Fatal(err)
		}
		if out, err := exec.Command(py, "-c", "import onnx,sys; onnx.checker.check_model(onnx.load(sys.argv[1]), full_check=True)", p).CombinedOutput(); err != nil {
			t.Errorf("the ONNX checker refuses the export: %v\n%s", err, out)
		}
	}
}

// TestEvaluatorAgreesWithPyTorch checks testdata/torch/eval_onnx.py, the
// evaluator behind TestExportAgreesWithPredict, against PyTorch itself:
// it evaluates the ResNet-18 and MobileNetV2 that export_models.py exports
// and compares with PyTorch's outputs. Skipped with -short (it takes some
// seconds of CPU).
func TestEvaluatorAgreesWithPyTorch(t *testing.T) {
	if testing.Short() {
		t.Skip("exporting and evaluating ResNet-18 and MobileNetV2 takes a while; skipped with -short")
	}
	py := pythonWith(t, "onnx", "torch", "numpy")
	dir := t.TempDir()
	if out, err := exec.Command(py, "testdata/torch/export_models.py", dir).CombinedOutput(); err != nil {
		t.Fatalf("export_models.py: %v\n%s", err, out)
	}
	for _, name := range []string{"resnet18", "mobilenet_v2"} {
		outDir := filepath.Join(dir, name+"_eval")
		if out, err := exec.Command(py, "testdata/torch/eval_onnx.py", filepath.Join(dir, name+".onnx"), outDir,
			filepath.Join(dir, name+"_input.npy")).CombinedOutput(); err != nil {
			t.Fatalf("%s: eval_onnx.py: %v\n%s", name, err, out)
		}
		got, err := npy.ReadFile(filepath.Join(outDir, "output_0.npy"))
		if err != nil {
			t.Fatal(err)
		}
		want, err := npy.ReadFile(filepath.Join(dir, name+"_output.npy"))
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got.Shape, want.Shape) {
			t.Fatalf("%s: shape %v, PyTorch %v", name, got.Shape, want.Shape)
		}
		worst := 0.0
		for i, g := range got.Float32s() {
			w := float64(want.Float32s()[i])
			d := math.Abs(float64(g) - w)
			if d > 1e-4+1e-4*math.Abs(w) {
				t.Fatalf("%s: element %d: evaluator %g, PyTorch %g", name, i, g, w)
			}
			worst = max(worst, d)
		}
		t.Logf("%s: %d outputs agree within %.2g", name, got.Len(), worst)
	}
}

// TestExportSharedLayer checks that a layer called twice stores its
// weights once.
func TestExportSharedLayer(t *testing.T) {
	in := nn.Input(4)
	d := nn.Dense(4)
	h := nn.Apply(d, in)
	m, err := nn.Functional("shared", []*nn.Node{in}, []*nn.Node{nn.Apply(nn.Add(), h, nn.Apply(d, h))})
	if err != nil {
		t.Fatal(err)
	}
	_, mp := exportModel(t, m)
	var inits []string
	for _, i := range mp.GetGraph().GetInitializer() {
		inits = append(inits, i.GetName())
	}
	if !slices.Equal(inits, []string{"dense/kernel", "dense/bias"}) {
		t.Errorf("initializers %v", inits)
	}
	if got, want := opTypes(mp), []string{"Gemm", "Gemm", "Add"}; !slices.Equal(got, want) {
		t.Errorf("ops %v, want %v", got, want)
	}
}

// TestExportReimported exports every case of exportCases, layerKindCases
// and recurrentCases, imports the file back through
// this package's importer (NNModel, which ONNX's node tests validate
// independently of the exporter) and checks that it predicts what the nn
// model does on random inputs, within 1e-5.
func TestExportReimported(t *testing.T) {
	dev := reference.New()
	dir := t.TempDir()
	for i, c := range slices.Concat(exportCases(t), layerKindCases(t), recurrentCases(t)) {
		const n = 3
		r := rand.New(rand.NewSource(int64(50 + i)))
		x, err := nn.NewArray(c.input(r, n), append([]int{n}, c.model.InputShape()...)...)
		if err != nil {
			t.Fatal(err)
		}
		s, err := nn.FromArrays(x, nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := c.model.SetDevice(dev); err != nil {
			t.Fatal(err)
		}
		want, err := c.model.Predict(s, nn.Verbose(0))
		if err != nil {
			t.Fatalf("%s: Predict: %v", c.name, err)
		}
		path := filepath.Join(dir, c.name+".onnx")
		if err := ExportFile(c.model, path); err != nil {
			t.Fatal(err)
		}
		m, err := Load(path)
		if err != nil {
			t.Fatalf("%s: loading the export: %v", c.name, err)
		}
		back, err := m.NNModel(c.name + "_reimported")
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if err := back.SetDevice(dev); err != nil {
			t.Fatal(err)
		}
		got, err := back.Predict(s, nn.Verbose(0))
		if err != nil {
			t.Fatalf("%s: the re-imported model's Predict: %v", c.name, err)
		}
		if !slices.Equal(got.Shape, want.Shape) {
			t.Fatalf("%s: the re-imported model gives shape %v, the nn model %v", c.name, got.Shape, want.Shape)
		}
		worst := 0.0
		for k, g := range got.Data {
			w := float64(want.Data[k])
			d := math.Abs(float64(g) - w)
			if !(d <= 1e-5+1e-5*math.Abs(w)) {
				t.Errorf("%s: element %d: re-imported %g, Predict %g", c.name, k, g, w)
				break
			}
			worst = max(worst, d)
		}
		t.Logf("%s: %d nodes %v, %d outputs (the first %.4g) agree within %.2g", c.name, countNodes(t, path), distinctOps(t, path), len(want.Data), want.Data[0], worst)
	}
}

// distinctOps lists the op types of the model at path, each once, in order
// of first use.
func distinctOps(t *testing.T, path string) []string {
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var mp pb.ModelProto
	if err := proto.Unmarshal(b, &mp); err != nil {
		t.Fatal(err)
	}
	var ops []string
	for _, o := range opTypes(&mp) {
		if !slices.Contains(ops, o) {
			ops = append(ops, o)
		}
	}
	return ops
}

// TestExportNewLayerOps checks the ONNX operators the layers beyond
// convolution become, so that none of them is dropped or mapped to
// something else unnoticed (their values are checked by
// TestExportReimported and TestExportAgreesWithPredict).
func TestExportNewLayerOps(t *testing.T) {
	for _, c := range []struct {
		layer nn.Layer
		input []int
		ops   []string
	}{
		{nn.ZeroPadding2D([]int{1}), []int{4, 4, 2}, []string{"Pad"}},
		{nn.Cropping2D([]int{1}), []int{4, 4, 2}, []string{"Slice"}},
		{nn.ZeroPadding1D([]int{1}), []int{4, 2}, []string{"Pad"}},
		{nn.Cropping1D([]int{1}), []int{4, 2}, []string{"Slice"}},
		{nn.UpSampling2D([]int{2, 2}), []int{4, 4, 2}, []string{"Constant", "Resize"}},
		{nn.UpSampling2D([]int{2, 2}, nn.Interpolation("bilinear")), []int{4, 4, 2}, []string{"Constant", "Transpose", "Resize", "Transpose"}},
		{nn.UpSampling1D(2), []int{4, 2}, []string{"Constant", "Resize"}},
		{nn.Rescaling(0.5, 1), []int{3}, []string{"Mul", "Add"}},
		{nn.Rescaling(0.5, 0), []int{3}, []string{"Mul"}},
		{nn.Conv2DTranspose(2, 3), []int{4, 4, 2}, []string{"Transpose", "ConvTranspose", "Transpose"}},
		{nn.Conv1DTranspose(2, 3), []int{4, 2}, []string{"Transpose", "ConvTranspose", "Transpose"}},
		{nn.SeparableConv2D(2, 3), []int{4, 4, 2}, []string{"Transpose", "Conv", "Conv", "Transpose"}},
		{nn.MaxPooling1D(2), []int{4, 2}, []string{"Transpose", "MaxPool", "Transpose"}},
		{nn.AveragePooling1D(2), []int{4, 2}, []string{"Transpose", "AveragePool", "Transpose"}},
		{nn.GlobalAveragePooling1D(), []int{4, 2}, []string{"ReduceMean"}},
		{nn.GlobalMaxPooling1D(), []int{4, 2}, []string{"ReduceMax"}},
		{nn.RandomFlip("horizontal"), []int{4, 4, 2}, []string{"Identity"}},
		{nn.RandomContrast(0.2), []int{4, 4, 2}, []string{"Identity"}},
		{nn.RandomCrop(2, 4), []int{4, 4, 2}, []string{"Slice"}},
		{nn.RandomCrop(2, 2), []int{4, 6, 2}, []string{"Slice", "Constant", "Transpose", "Resize", "Transpose"}},
		{nn.RandomCrop(4, 6), []int{4, 6, 2}, []string{"Identity"}},
	} {
		m, err := nn.Sequential("one", nn.Input(c.input...), c.layer)
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
	}
}

// doubler is a custom layer doubling its input.
type doubler struct{}

func (doubler) Build(_ *nn.LayerBuilder, in []tile.Shape) (tile.Shape, error) { return in[0], nil }
func (doubler) Call(c *nn.CallContext, in []*tile.Tensor) *tile.Tensor {
	g := c.Graph()
	return g.Add(in[0], in[0])
}

// TestExportUnexportable checks that Lambda and custom layers, whose
// computations are Go code, give errors naming the layer and its class.
func TestExportUnexportable(t *testing.T) {
	if err := nn.RegisterLambda("onnx_test_negate", func(g *tile.Graph, x *tile.Tensor) *tile.Tensor { return g.Neg(x) }); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		layer nn.Layer
		want  string
	}{
		{nn.RegisteredLambda("onnx_test_negate", nn.Name("negate")),
			`onnx: export: layer "negate" (Lambda) cannot be exported: a Lambda layer computes with a Go function, which has no ONNX mapping`},
		{nn.Custom("Doubler", doubler{}, nn.Name("twice")),
			`onnx: export: layer "twice" (Doubler) cannot be exported: class Doubler has no ONNX mapping (Export maps the layer kinds of package nn listed in its documentation; a custom layer's Go code cannot be exported)`},
		{nn.Lambda(func(g *tile.Graph, x *tile.Tensor) *tile.Tensor { return g.Neg(x) }, nn.Name("anonymous")),
			`anonymous`},
	} {
		m, err := nn.Sequential("custom", nn.Input(3), nn.Dense(3), c.layer, nn.Dense(2))
		if err != nil {
			t.Fatal(err)
		}
		err = Export(m, new(bytes.Buffer))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: got error %v, want one containing %q", c.layer.ClassName(), err, c.want)
		}
		t.Logf("%s: %v", c.layer.ClassName(), err)
	}
}

// layerKindCases are models of one layer each (two for the merges), one
// or more per layer kind that Export maps, and one per activation.
func layerKindCases(t *testing.T) []exportCase {
	t.Helper()
	var cases []exportCase
	seq := func(name string, input []int, layers ...nn.Layer) {
		t.Helper()
		m, err := nn.Sequential(name, nn.Input(input...), layers...)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		size := product(input)
		cases = append(cases, exportCase{name, m, func(r *rand.Rand, n int) []float32 { return normal(r, n*size) }})
	}
	seq("dense", []int{5}, nn.Dense(3))
	seq("dense_rank3", []int{4, 5}, nn.Dense(3, nn.UseBias(false)))
	seq("conv1d", []int{8, 3}, nn.Conv1D(4, 3, nn.Strides(2)))
	seq("conv2d", []int{6, 7, 2}, nn.Conv2D(3, 3, nn.Padding("same"), nn.DilationRate(2)))
	seq("depthwise_conv2d", []int{6, 6, 2}, nn.DepthwiseConv2D(3, nn.DepthMultiplier(2)))
	seq("conv1d_transpose", []int{5, 2}, nn.Conv1DTranspose(3, 3, nn.Strides(2)))
	seq("conv2d_transpose", []int{4, 5, 2}, nn.Conv2DTranspose(3, 3, nn.Strides(2), nn.Padding("same")))
	seq("conv2d_transpose_output_padding", []int{4, 4, 2}, nn.Conv2DTranspose(2, 2, nn.Strides(3), nn.OutputPadding(2)))
	seq("separable_conv2d", []int{6, 6, 2}, nn.SeparableConv2D(3, 3, nn.DepthMultiplier(2), nn.Padding("same")))
	seq("max_pooling1d", []int{9, 2}, nn.MaxPooling1D(2, nn.Padding("same")))
	seq("average_pooling1d", []int{9, 2}, nn.AveragePooling1D(2, nn.Padding("same")))
	seq("max_pooling2d", []int{5, 6, 2}, nn.MaxPooling2D(2, nn.Padding("same")))
	seq("average_pooling2d", []int{5, 6, 2}, nn.AveragePooling2D(2, nn.Padding("same")))
	seq("global_average_pooling1d", []int{5, 3}, nn.GlobalAveragePooling1D())
	seq("global_max_pooling1d", []int{5, 3}, nn.GlobalMaxPooling1D())
	seq("global_average_pooling2d", []int{4, 5, 3}, nn.GlobalAveragePooling2D())
	seq("global_max_pooling2d", []int{4, 5, 3}, nn.GlobalMaxPooling2D())
	seq("batch_normalization", []int{4, 4, 3}, nn.BatchNormalization())
	seq("layer_normalization", []int{4, 3}, nn.LayerNormalization())
	seq("dropout", []int{4}, nn.Dense(3), nn.Dropout(0.5))
	for _, a := range []string{"linear", "relu", "relu6", "sigmoid", "tanh", "softmax", "log_softmax", "elu", "gelu", "softplus", "leaky_relu", "silu", "swish"} {
		seq("activation_"+a, []int{6}, nn.Activation(a))
	}
	seq("relu", []int{6}, nn.ReLU(nn.MaxValue(1), nn.NegativeSlope(0.2)))
	seq("softmax", []int{3, 4}, nn.Softmax(nn.Axis(1)))
	seq("flatten", []int{3, 2, 2}, nn.Flatten())
	seq("reshape", []int{6}, nn.Reshape([]int{2, -1}))
	seq("zero_padding1d", []int{4, 2}, nn.ZeroPadding1D([]int{1, 2}))
	seq("zero_padding2d", []int{4, 4, 2}, nn.ZeroPadding2D([]int{1, 0, 2, 1}))
	seq("cropping1d", []int{6, 2}, nn.Cropping1D([]int{1, 2}))
	seq("cropping2d", []int{6, 6, 2}, nn.Cropping2D([]int{1, 0, 2, 1}))
	seq("up_sampling1d", []int{4, 2}, nn.UpSampling1D(3))
	seq("up_sampling2d", []int{3, 4, 2}, nn.UpSampling2D([]int{2, 3}))
	seq("up_sampling2d_bilinear", []int{3, 4, 2}, nn.UpSampling2D([]int{2, 3}, nn.Interpolation("bilinear")))
	seq("rescaling", []int{3, 4}, nn.Rescaling(1.0/255, -0.5))
	seq("random_flip", []int{4, 4, 2}, nn.Dense(2), nn.RandomFlip("horizontal_and_vertical"))
	seq("random_contrast", []int{4, 4, 2}, nn.Dense(2), nn.RandomContrast(0.5))
	seq("random_crop", []int{6, 8, 2}, nn.RandomCrop(4, 8))
	seq("random_crop_resized", []int{6, 8, 2}, nn.RandomCrop(5, 5))
	for _, merge := range []struct {
		name  string
		layer nn.Layer
	}{{"add", nn.Add()}, {"concatenate", nn.Concatenate()}} {
		in := nn.Input(3, 2)
		m, err := nn.Functional(merge.name, []*nn.Node{in}, []*nn.Node{nn.Apply(merge.layer, in, nn.Apply(nn.Dense(2), in))})
		if err != nil {
			t.Fatal(err)
		}
		cases = append(cases, exportCase{merge.name, m, func(r *rand.Rand, n int) []float32 { return normal(r, n*6) }})
	}
	m, err := nn.Sequential("embedding", nn.Input(4), nn.Embedding(6, 3))
	if err != nil {
		t.Fatal(err)
	}
	cases = append(cases, exportCase{"embedding", m, func(r *rand.Rand, n int) []float32 {
		v := make([]float32, 4*n)
		for i := range v {
			v[i] = float32(r.Intn(9) - 1) // some outside the table
		}
		return v
	}})
	for i, c := range cases {
		if err := c.model.InitWeights(int64(200 + i)); err != nil {
			t.Fatal(err)
		}
		randomizeWeights(t, c.model, int64(300+i))
	}
	return cases
}

// TestExportForRuntime writes, for testdata/torch/check_ort.py --dir to
// run with onnxruntime, every model of exportCases, layerKindCases and
// recurrentCases as NAME.onnx with a random NAME_input.npy and the nn
// model's Predict for it (on the reference device) as NAME_output.npy, and
// every model of multiCases with NAME_input_K.npy and NAME_output_K.npy
// for its inputs and outputs, into the directory $TARTAN_ONNX_EXPORT_DIR;
// without it the test is skipped.
func TestExportForRuntime(t *testing.T) {
	dir := os.Getenv("TARTAN_ONNX_EXPORT_DIR")
	if dir == "" {
		t.Skip("set TARTAN_ONNX_EXPORT_DIR to a directory to write the exported models and their data for check_ort.py")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	dev := reference.New()
	for i, c := range slices.Concat(exportCases(t), layerKindCases(t), recurrentCases(t)) {
		const n = 4
		r := rand.New(rand.NewSource(int64(900 + i)))
		x, err := nn.NewArray(c.input(r, n), append([]int{n}, c.model.InputShape()...)...)
		if err != nil {
			t.Fatal(err)
		}
		s, err := nn.FromArrays(x, nil)
		if err == nil {
			err = c.model.SetDevice(dev)
		}
		if err != nil {
			t.Fatal(err)
		}
		y, err := c.model.Predict(s, nn.Verbose(0))
		if err != nil {
			t.Fatalf("%s: Predict: %v", c.name, err)
		}
		if err := ExportFile(c.model, filepath.Join(dir, c.name+".onnx")); err != nil {
			t.Fatal(err)
		}
		for _, f := range []struct {
			suffix string
			a      *nn.Array
		}{{"_input.npy", x}, {"_output.npy", y}} {
			a, err := npy.New(f.a.Shape, slices.Clone(f.a.Data))
			if err == nil {
				err = npy.WriteFile(filepath.Join(dir, c.name+f.suffix), a)
			}
			if err != nil {
				t.Fatal(err)
			}
		}
	}
	for i, c := range multiCases(t) {
		xs := c.inputsOf(t, rand.New(rand.NewSource(int64(1900+i))), 4)
		ys := c.predicted(t, xs)
		if err := ExportFile(c.model, filepath.Join(dir, c.name+".onnx")); err != nil {
			t.Fatal(err)
		}
		for _, set := range []struct {
			what string
			as   []*nn.Array
		}{{"input", xs}, {"output", ys}} {
			for k, x := range set.as {
				a, err := npy.New(x.Shape, slices.Clone(x.Data))
				if err == nil {
					err = npy.WriteFile(filepath.Join(dir, c.name+"_"+set.what+"_"+strconv.Itoa(k)+".npy"), a)
				}
				if err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	t.Logf("wrote the models and their data to %s; check them with: python3 testdata/torch/check_ort.py --dir %s", dir, dir)
}

// TestExportKindsAgreeWithPyTorch evaluates the export of every model of
// layerKindCases with testdata/torch/eval_onnx.py --dir (PyTorch, op by op,
// from the ONNX specification) and compares with the nn model's Predict on
// the reference device, as TestExportAgreesWithPredict does for the larger
// models.
func TestExportKindsAgreeWithPyTorch(t *testing.T) {
	py := pythonWith(t, "onnx", "torch", "numpy")
	dir := t.TempDir()
	dev := reference.New()
	cases := layerKindCases(t)
	want := map[string]*nn.Array{}
	for i, c := range cases {
		const n = 3
		r := rand.New(rand.NewSource(int64(700 + i)))
		x, err := nn.NewArray(c.input(r, n), append([]int{n}, c.model.InputShape()...)...)
		if err != nil {
			t.Fatal(err)
		}
		s, err := nn.FromArrays(x, nil)
		if err == nil {
			err = c.model.SetDevice(dev)
		}
		if err != nil {
			t.Fatal(err)
		}
		if want[c.name], err = c.model.Predict(s, nn.Verbose(0)); err != nil {
			t.Fatalf("%s: Predict: %v", c.name, err)
		}
		xa, err := npy.New(x.Shape, slices.Clone(x.Data))
		if err == nil {
			err = npy.WriteFile(filepath.Join(dir, c.name+"_input.npy"), xa)
		}
		if err == nil {
			err = ExportFile(c.model, filepath.Join(dir, c.name+".onnx"))
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	if out, err := exec.Command(py, "testdata/torch/eval_onnx.py", "--dir", dir).CombinedOutput(); err != nil {
		t.Fatalf("eval_onnx.py --dir: %v\n%s", err, out)
	}
	for _, c := range cases {
		got, err := npy.ReadFile(filepath.Join(dir, c.name+"_eval.npy"))
		if err != nil {
			t.Fatal(err)
		}
		w := want[c.name]
		if !slices.Equal(got.Shape, w.Shape) {
			t.Errorf("%s: the ONNX graph gives shape %v, Predict %v", c.name, got.Shape, w.Shape)
			continue
		}
		for k, g := range got.Float32s() {
			if d := math.Abs(float64(g) - float64(w.Data[k])); !(d <= 1e-5+1e-4*math.Abs(float64(w.Data[k]))) {
				t.Errorf("%s: element %d: ONNX %g, Predict %g", c.name, k, g, w.Data[k])
				break
			}
		}
	}
}
