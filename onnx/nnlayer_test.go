package onnx

import (
	"bytes"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tartanml/tartan/backend/cpu"
	"github.com/tartanml/tartan/nn"
)

// TestNNModel exports an nn model to ONNX, imports it back as an nn model
// and checks that it predicts what the original does, then fine-tunes
// both alike: the imported model's losses, epoch by epoch, and its final
// predictions equal the original's (its gradients flow through the
// converted ONNX graph as through nn's own layers), and Fit lowers them.
func TestNNModel(t *testing.T) {
	orig, err := nn.Sequential("small", nn.Input(6, 6, 2),
		nn.Conv2D(4, 3, nn.Padding("same"), nn.Activation("relu")),
		nn.Flatten(),
		nn.Dense(3, nn.Activation("softmax")))
	if err != nil {
		t.Fatal(err)
	}
	if err := orig.InitWeights(5); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "small.onnx")
	if err := ExportFile(orig, path); err != nil {
		t.Fatal(err)
	}
	m, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	imp, err := m.NNModel("imported")
	if err != nil {
		t.Fatal(err)
	}
	dev := cpu.New(cpu.Cache(false))
	defer dev.Close()
	for _, mm := range []*nn.Model{orig, imp} {
		if err := mm.SetDevice(dev); err != nil {
			t.Fatal(err)
		}
	}
	const n = 24
	xs := make([]float32, n*6*6*2)
	for i := range xs {
		xs[i] = float32(math.Sin(float64(i) * 0.7))
	}
	ys := make([]float32, n)
	for i := range ys {
		ys[i] = float32(i % 3)
		// Each class shifts its samples, so that the classes separate.
		for j := range 6 * 6 * 2 {
			xs[i*72+j] += 0.8 * float32(i%3)
		}
	}
	x, _ := nn.NewArray(xs, n, 6, 6, 2)
	y, _ := nn.NewArray(ys, n)
	samples, err := nn.FromArrays(x, y)
	if err != nil {
		t.Fatal(err)
	}
	want, err := orig.Predict(samples, nn.Verbose(0))
	if err != nil {
		t.Fatal(err)
	}
	got, err := imp.Predict(samples, nn.Verbose(0))
	if err != nil {
		t.Fatal(err)
	}
	for i := range want.Data {
		if d := math.Abs(float64(got.Data[i] - want.Data[i])); d > 1e-5 {
			t.Fatalf("prediction %d: the imported model gives %g, the original %g", i, got.Data[i], want.Data[i])
		}
	}
	if s := imp.Summary(); !strings.Contains(s, "onnx (ONNX)") {
		t.Errorf("summary:\n%s", s)
	}
	if total, trainable := imp.CountParams(); total != trainable || total != 2*3*3*4+4+6*6*4*3+3 {
		t.Errorf("%d parameters (%d trainable), want the original's %d", total, trainable, 2*3*3*4+4+6*6*4*3+3)
	}

	var hists [2][]float64
	var preds [2]*nn.Array
	for k, mm := range []*nn.Model{orig, imp} {
		if err := mm.Compile(nn.Adam(0.01), nn.SparseCategoricalCrossentropy(), nn.OnDevice(dev)); err != nil {
			t.Fatal(err)
		}
		hist, err := mm.Fit(samples, nn.Epochs(15), nn.BatchSize(8), nn.Verbose(0))
		if err != nil {
			t.Fatal(err)
		}
		hists[k] = hist.Metrics["loss"]
		if preds[k], err = mm.Predict(samples, nn.Verbose(0)); err != nil {
			t.Fatal(err)
		}
	}
	for e := range hists[0] {
		if d := math.Abs(hists[1][e] - hists[0][e]); d > 1e-5 {
			t.Fatalf("epoch %d: the imported model's loss is %g, the original's %g", e+1, hists[1][e], hists[0][e])
		}
	}
	if loss := hists[1]; !(loss[len(loss)-1] < 0.5*loss[0]) {
		t.Errorf("fine-tuning the imported model: loss %v", loss)
	}
	for i := range preds[0].Data {
		if d := math.Abs(float64(preds[1].Data[i] - preds[0].Data[i])); d > 1e-4 {
			t.Fatalf("after fitting, prediction %d: the imported model gives %g, the original %g", i, preds[1].Data[i], preds[0].Data[i])
		}
	}

	// Back to ONNX: the fine-tuned file predicts what the fine-tuned model
	// does, and ONNX's checker takes it.
	var buf bytes.Buffer
	if err := m.WriteFineTuned(&buf, imp, "onnx"); err != nil {
		t.Fatal(err)
	}
	tuned := filepath.Join(t.TempDir(), "tuned.onnx")
	if err := os.WriteFile(tuned, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	m2, err := Load(tuned)
	if err != nil {
		t.Fatal(err)
	}
	again, err := m2.NNModel("again")
	if err != nil {
		t.Fatal(err)
	}
	if err := again.SetDevice(dev); err != nil {
		t.Fatal(err)
	}
	p2, err := again.Predict(samples, nn.Verbose(0))
	if err != nil {
		t.Fatal(err)
	}
	for i := range p2.Data {
		if p2.Data[i] != preds[1].Data[i] {
			t.Fatalf("the written fine-tuned model predicts %g at %d, the fine-tuned nn model %g", p2.Data[i], i, preds[1].Data[i])
		}
	}
	if _, err := exec.LookPath("/usr/bin/python3"); err == nil {
		py := pythonWith(t, "onnx")
		if out, err := exec.Command(py, "-c", "import onnx,sys; onnx.checker.check_model(onnx.load(sys.argv[1]), full_check=True)", tuned).CombinedOutput(); err != nil {
			t.Errorf("the ONNX checker refuses the fine-tuned model: %v\n%s", err, out)
		}
	}
}

// TestNNLayerErrors checks the refusals of NNLayer and NNModel.
func TestNNLayerErrors(t *testing.T) {
	two := &Model{Inputs: []ValueInfo{{Name: "a", Type: Float}, {Name: "b", Type: Float}}, Outputs: []ValueInfo{{Name: "y", Type: Float}}}
	if _, err := two.NNLayer(); err == nil || err.Error() != "onnx: NNLayer: the model has 2 inputs and 1 outputs; an nn layer of it needs one of each" {
		t.Errorf("two inputs: %v", err)
	}
	open := &Model{Inputs: []ValueInfo{{Name: "x", Type: Float, HasShape: true, Shape: []Dim{{Value: -1, Param: "N"}, {Value: -1, Param: "L"}}}},
		Outputs: []ValueInfo{{Name: "y", Type: Float}}}
	if _, err := open.NNModel("m"); err == nil || err.Error() != "onnx: NNModel: input \"x\" float[N, L]: dimension 1 is open; only the batch may be" {
		t.Errorf("open dimension: %v", err)
	}
	for name, want := range map[string]string{"conv1.weight": "conv1.weight", "onnx::Conv_12": "onnx__Conv_12", "0": "w0", "": "w"} {
		if got := WeightName(name); got != want {
			t.Errorf("WeightName(%q) = %q, want %q", name, got, want)
		}
	}
}

// TestOutputOp checks the op found behind each graph output of exported
// models: through Flatten and Identity, and none for an input passed
// through or a name that is no output.
func TestOutputOp(t *testing.T) {
	for _, c := range []struct {
		layers []nn.Layer
		want   string
	}{
		{[]nn.Layer{nn.Dense(4, nn.Activation("softmax"))}, "Softmax"},
		{[]nn.Layer{nn.Dense(4)}, "Gemm"},
		{[]nn.Layer{nn.Dense(4), nn.Softmax(), nn.Flatten(), nn.Dropout(0.5)}, "Softmax"},
		{[]nn.Layer{nn.Dense(4, nn.Activation("log_softmax")), nn.Reshape([]int{2, 2}), nn.Flatten()}, "LogSoftmax"},
		{[]nn.Layer{nn.Dropout(0.5)}, ""},
	} {
		m, err := nn.Sequential("m", nn.Input(3), c.layers...)
		if err != nil {
			t.Fatal(err)
		}
		var buf bytes.Buffer
		if err := Export(m, &buf); err != nil {
			t.Fatal(err)
		}
		om, err := Read(&buf, "")
		if err != nil {
			t.Fatal(err)
		}
		if got := om.OutputOp(om.Outputs[0].Name); got != c.want {
			t.Errorf("%d layers ending in %s: OutputOp %q, want %q", len(c.layers), c.layers[len(c.layers)-1].ClassName(), got, c.want)
		}
		if got := om.OutputOp("no_such_output"); got != "" {
			t.Errorf("OutputOp of a name that is no output: %q", got)
		}
	}
}
