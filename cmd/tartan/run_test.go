package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/tartanml/tartan/backend/cpu"
	"github.com/tartanml/tartan/nn"
	"github.com/tartanml/tartan/npy"
	"github.com/tartanml/tartan/onnx"
	"github.com/tartanml/tartan/tile"
)

// nodeTest returns the directory of one of ONNX's node tests, or skips.
func nodeTest(t *testing.T, name string) string {
	t.Helper()
	dir := filepath.Join("/usr/share/libonnx-testdata/data/node", name)
	if _, err := os.Stat(filepath.Join(dir, "model.onnx")); err != nil {
		t.Skipf("ONNX's node tests are not installed (Debian: libonnx-testdata): %v", err)
	}
	return dir
}

// pbValue reads a TensorProto file as a tile.Value.
func pbValue(t *testing.T, file string) *tile.Value {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	ts, err := onnx.DecodeTensor(b, filepath.Dir(file))
	if err != nil {
		t.Fatal(err)
	}
	v, err := ts.Value()
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// sameValues compares with ONNX's test tolerances (rtol 1e-3, atol 1e-7).
func sameValues(t *testing.T, what string, got, want *tile.Value) {
	t.Helper()
	if !slicesEqual(got.Shape, want.Shape) || len(got.Data) != len(want.Data) {
		t.Fatalf("%s: shape %v, want %v", what, got.Shape, want.Shape)
	}
	for i := range got.Data {
		if d := math.Abs(got.Data[i] - want.Data[i]); d > 1e-7+1e-3*math.Abs(want.Data[i]) {
			t.Fatalf("%s: element %d is %g, want %g", what, i, got.Data[i], want.Data[i])
		}
	}
}

func slicesEqual(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestRunONNX runs ONNX node tests through tartan run: inputs bound in
// order from .pb files and by name from .npy files (float64, as NumPy
// writes by default, converted with a note), outputs written as .npy and
// compared with the test's expected outputs; a Reshape whose shape is a
// graph input, which the converter needs as a value.
func TestRunONNX(t *testing.T) {
	conv := nodeTest(t, "test_conv_with_strides_padding")
	out := t.TempDir()
	report := filepath.Join(out, "run.json")
	set := filepath.Join(conv, "test_data_set_0")
	var stdout, stderr bytes.Buffer
	code := run([]string{"run", filepath.Join(conv, "model.onnx"), "--device", "cpu",
		"--input", filepath.Join(set, "input_0.pb"), "--input", filepath.Join(set, "input_1.pb"),
		"--out", out, "--json", report}, &stdout, &stderr)
	if code != 0 {
		t.Fatalf("exit %d: %s%s", code, stdout.String(), stderr.String())
	}
	for _, want := range []string{
		"Model: " + filepath.Join(conv, "model.onnx") + " (from backend-test, IR version 6, opset 11)\nInputs:\n",
		"  x float[1, 1, 7, 5] <- " + filepath.Join(set, "input_0.pb") + " [1, 1, 7, 5]\n",
		"  W float[1, 1, 3, 3] <- " + filepath.Join(set, "input_1.pb") + " [1, 1, 3, 3]\n",
		"Device: cpu (",
		"Outputs:\n  y float [1, 1, 4, 3] -> " + filepath.Join(out, "y.npy") + ": [12 27 24 63 108 81 … (12 elements)]\n",
	} {
		if !strings.Contains(stdout.String(), want) {
			t.Errorf("the output lacks %q:\n%s", want, stdout.String())
		}
	}
	a, err := npy.ReadFile(filepath.Join(out, "y.npy"))
	if err != nil {
		t.Fatal(err)
	}
	got, err := a.ToValue()
	if err != nil {
		t.Fatal(err)
	}
	sameValues(t, "y.npy", got, pbValue(t, filepath.Join(set, "output_0.pb")))
	var rep runReport
	if b, err := os.ReadFile(report); err != nil || json.Unmarshal(b, &rep) != nil {
		t.Fatalf("report: %v", err)
	}
	if rep.Device != "cpu" || len(rep.Inputs) != 2 || len(rep.Outputs) != 1 || rep.Outputs[0].File != filepath.Join(out, "y.npy") {
		t.Errorf("report %+v", rep)
	}

	// By name, from float64 .npy files, in the other order.
	dir := t.TempDir()
	for k, name := range []string{"x", "W"} {
		v := pbValue(t, filepath.Join(set, []string{"input_0.pb", "input_1.pb"}[k]))
		v64 := &tile.Value{DType: tile.Float64, Shape: v.Shape, Data: v.Data}
		a, err := npy.FromValue(v64)
		if err != nil {
			t.Fatal(err)
		}
		if err := npy.WriteFile(filepath.Join(dir, name+".npy"), a); err != nil {
			t.Fatal(err)
		}
	}
	stdout.Reset()
	stderr.Reset()
	code = run([]string{"run", filepath.Join(conv, "model.onnx"), "--device", "cpu", "--out", out,
		"--input", "W=" + filepath.Join(dir, "W.npy"), "--input", "x=" + filepath.Join(dir, "x.npy")}, &stdout, &stderr)
	if code != 0 {
		t.Fatalf("by name: exit %d: %s%s", code, stdout.String(), stderr.String())
	}
	if want := `tartan: input "W": converting ` + filepath.Join(dir, "W.npy") + "'s f64 elements to the model's f32\n"; !strings.Contains(stderr.String(), want) {
		t.Errorf("stderr %q lacks %q", stderr.String(), want)
	}
	a, _ = npy.ReadFile(filepath.Join(out, "y.npy"))
	got, _ = a.ToValue()
	sameValues(t, "y.npy by name", got, pbValue(t, filepath.Join(set, "output_0.pb")))

	// A Reshape to a shape that is a graph input.
	rs := nodeTest(t, "test_reshape_reordered_all_dims")
	rset := filepath.Join(rs, "test_data_set_0")
	stdout.Reset()
	code = run([]string{"run", filepath.Join(rs, "model.onnx"), "--device", "cpu", "--out", out,
		"--input", filepath.Join(rset, "input_0.pb"), "--input", filepath.Join(rset, "input_1.pb")}, &stdout, &stderr)
	if code != 0 {
		t.Fatalf("reshape: exit %d: %s%s", code, stdout.String(), stderr.String())
	}
	a, _ = npy.ReadFile(filepath.Join(out, "reshaped.npy"))
	got, _ = a.ToValue()
	sameValues(t, "reshaped.npy", got, pbValue(t, filepath.Join(rset, "output_0.pb")))
}

// TestRunONNXErrors checks the exact messages of tartan run's usage errors.
func TestRunONNXErrors(t *testing.T) {
	conv := nodeTest(t, "test_conv_with_strides_padding")
	model := filepath.Join(conv, "model.onnx")
	in0 := filepath.Join(conv, "test_data_set_0", "input_0.pb")
	in1 := filepath.Join(conv, "test_data_set_0", "input_1.pb")
	txt := filepath.Join(t.TempDir(), "x.txt")
	os.WriteFile(txt, []byte("1 2 3"), 0o644)
	for _, c := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"run"}, 2, "tartan: usage error: run needs MODEL.onnx, the file of an ONNX model\n"},
		{[]string{"run", model, "--input", "y=" + in0}, 2, `tartan: usage error: --input y=` + in0 + `: the model has no input "y" (its inputs: x, W)` + "\n"},
		{[]string{"run", model, "--input", in0}, 2, `tartan: usage error: input "W" (float[1, 1, 3, 3]) is not given: bind it with --input W=FILE` + "\n"},
		{[]string{"run", model, "--input", in0, "--input", in1, "--input", in1}, 2, "tartan: usage error: --input " + in1 + ": the model has 2 inputs (x, W), all bound already\n"},
		{[]string{"run", model, "--input", "x=" + in0, "--input", "x=" + in1}, 2, "tartan: usage error: --input x=" + in1 + `: input "x" is bound twice` + "\n"},
		{[]string{"run", model, "--input", txt, "--input", in1}, 1, `tartan: input "x": ` + txt + ": want a .pb (TensorProto) or .npy file\n"},
		{[]string{"run", model, "--input", in1, "--input", in0}, 1, `tartan: input "x" (float[1, 1, 7, 5]): ` + in1 + " holds shape [1, 1, 3, 3], whose dimension 2 is not 7\n"},
	} {
		var stdout, stderr bytes.Buffer
		code := run(c.args, &stdout, &stderr)
		if code != c.code || !strings.Contains(stderr.String(), c.want) {
			t.Errorf("%q: exit %d, stderr %q; want exit %d and %q", c.args, code, stderr.String(), c.code, c.want)
		}
	}
}

// TestRunAndBenchExportedModel exports a small nn model to ONNX, runs it
// with tartan run on a .npy batch and compares with the model's own
// Predict, then measures it with tartan bench --onnx at batch 4.
func TestRunAndBenchExportedModel(t *testing.T) {
	m, err := nn.Sequential("tiny", nn.Input(4, 4, 2),
		nn.Conv2D(3, 3, nn.Padding("same"), nn.Activation("relu")),
		nn.Flatten(),
		nn.Dense(5, nn.Activation("softmax")))
	if err != nil {
		t.Fatal(err)
	}
	if err := m.InitWeights(7); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	model := filepath.Join(dir, "tiny.onnx")
	if err := onnx.ExportFile(m, model); err != nil {
		t.Fatal(err)
	}
	const n = 3
	x := make([]float32, n*4*4*2)
	for i := range x {
		x[i] = float32(math.Sin(float64(i)))
	}
	xa, _ := nn.NewArray(x, n, 4, 4, 2)
	if err := m.SetDevice(cpu.New(cpu.Cache(false))); err != nil {
		t.Fatal(err)
	}
	defer m.Device().Close()
	xs, err := nn.FromArrays(xa, nil)
	if err != nil {
		t.Fatal(err)
	}
	want, err := m.Predict(xs, nn.Verbose(0))
	if err != nil {
		t.Fatal(err)
	}
	a, _ := npy.New([]int{n, 4, 4, 2}, x)
	if err := npy.WriteFile(filepath.Join(dir, "x.npy"), a); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	if code := run([]string{"run", model, "--device", "cpu", "--input", filepath.Join(dir, "x.npy"), "--out", dir}, &stdout, &stderr); code != 0 {
		t.Fatalf("run: exit %d: %s%s", code, stdout.String(), stderr.String())
	}
	outs, _ := filepath.Glob(filepath.Join(dir, "*.npy"))
	outs = slices.DeleteFunc(outs, func(f string) bool { return filepath.Base(f) == "x.npy" })
	if len(outs) != 1 {
		t.Fatalf("outputs written: %v\n%s", outs, stdout.String())
	}
	got, err := npy.ReadFile(outs[0])
	if err != nil {
		t.Fatalf("%v (stdout:\n%s)", err, stdout.String())
	}
	g := got.Float32s()
	if len(g) != len(want.Data) {
		t.Fatalf("%d outputs, want %d", len(g), len(want.Data))
	}
	for i := range g {
		if d := math.Abs(float64(g[i] - want.Data[i])); d > 1e-5 {
			t.Fatalf("output %d: %g, Predict gives %g", i, g[i], want.Data[i])
		}
	}

	report := filepath.Join(dir, "bench.json")
	stdout.Reset()
	if code := run([]string{"bench", "--onnx", model, "--batch", "4", "--device", "cpu", "--steps", "2", "--json", report}, &stdout, &stderr); code != 0 {
		t.Fatalf("bench: exit %d: %s%s", code, stdout.String(), stderr.String())
	}
	var rep onnxBenchReport
	if b, err := os.ReadFile(report); err != nil || json.Unmarshal(b, &rep) != nil {
		t.Fatalf("report: %v", err)
	}
	if rep.Batch != 4 || rep.Runs < 5 || rep.MedianMS <= 0 || rep.SamplesPerS <= 0 || rep.Device != "cpu" {
		t.Errorf("report %+v", rep)
	}
	if !strings.HasPrefix(stdout.String(), model+" on cpu (") || !strings.Contains(stdout.String(), ", batch 4: compile ") {
		t.Errorf("bench printed %q", stdout.String())
	}

	// --profile lists the slowest kernels, each with its executor and its
	// share, the shares of all kernels summing to 100%.
	stdout.Reset()
	if code := run([]string{"bench", "--onnx", model, "--device", "cpu", "--steps", "1", "--profile", "100"}, &stdout, &stderr); code != 0 {
		t.Fatalf("bench --profile: exit %d: %s%s", code, stdout.String(), stderr.String())
	}
	_, prof, ok := strings.Cut(stdout.String(), "profile: ")
	lines := strings.Split(strings.TrimSpace(prof), "\n")
	if !ok || len(lines) < 2 {
		t.Fatalf("bench --profile printed %q", stdout.String())
	}
	share := 0.0
	for _, l := range lines[1:] {
		f := strings.Fields(l)
		var p float64
		if len(f) < 5 || f[1] != "ms" || !strings.HasSuffix(f[2], "%") {
			t.Fatalf("profile line %q", l)
		}
		if _, err := fmt.Sscanf(f[2], "%g%%", &p); err != nil {
			t.Fatalf("profile line %q: %v", l, err)
		}
		share += p
	}
	if math.Abs(share-100) > 0.5*float64(len(lines)) {
		t.Errorf("shares sum to %.1f%%:\n%s", share, prof)
	}
	if code := run([]string{"bench", "--profile", "3"}, &stdout, &stderr); code != 2 {
		t.Errorf("bench --profile without --onnx or --suite: exit %d, want a usage error", code)
	}
}
