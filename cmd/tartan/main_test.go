package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tartanml/tartan/data"
	"github.com/tartanml/tartan/nn"
)

// fashionDir returns a directory holding the Fashion-MNIST files, or skips
// the test when there is none.
func fashionDir(t *testing.T) string {
	t.Helper()
	for _, d := range []string{os.Getenv("TARTAN_DATA"), "/usr/share/datasets/fashion-mnist"} {
		if d == "" {
			continue
		}
		if _, _, err := data.FashionMNIST(data.Dir(d)); err == nil {
			return d
		}
	}
	t.Skip("Fashion-MNIST is not installed (apt-get install dataset-fashion-mnist, or set TARTAN_DATA)")
	return ""
}

// runCLI runs a command line and returns its exit status and outputs.
func runCLI(args ...string) (int, string, string) {
	var out, errb bytes.Buffer
	code := run(args, &out, &errb)
	return code, out.String(), errb.String()
}

// TestFitOutputs trains the small model briefly and checks what fit prints
// and writes: the summary, one bar per epoch, the test accuracy, --json,
// --plot and --save.
func TestFitOutputs(t *testing.T) {
	dir := fashionDir(t)
	tmp := t.TempDir()
	js, png, model := filepath.Join(tmp, "run.json"), filepath.Join(tmp, "curves.png"), filepath.Join(tmp, "model.safetensors")
	code, out, errs := runCLI("fit", "--model", "fashion-mlp", "--epochs", "2", "--limit", "500", "--batch-size", "50",
		"--device", "cpu", "--data", dir, "--seed", "3", "--json", js, "--plot", png, "--save", model)
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, out, errs)
	}
	for _, want := range []string{`Model: "fashion_mlp"`, "Total params: 101,770 (397.54 KB)", "Epoch 1/2\n10/10 ━━━━━━━━━━━━━━━━━━━━ ", "Epoch 2/2\n", "Test accuracy: "} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	var rep fitReport
	raw, err := os.ReadFile(js)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(raw, &rep); err != nil {
		t.Fatal(err)
	}
	if rep.Model != "fashion-mlp" || rep.Device != "cpu" || rep.Epochs != 2 || rep.BatchSize != 50 || rep.TrainSamples != 500 ||
		len(rep.EpochSeconds) != 2 || len(rep.History["loss"]) != 2 || len(rep.History["accuracy"]) != 2 ||
		rep.CompileSeconds <= 0 || rep.TestAccuracy < 0.6 || rep.TestAccuracy > 1 || rep.TestLoss <= 0 {
		t.Errorf("report %+v", rep)
	}
	if rep.History["loss"][1] >= rep.History["loss"][0] {
		t.Errorf("the loss did not fall: %v", rep.History["loss"])
	}
	for _, key := range []string{`"model"`, `"device"`, `"epochs"`, `"batch_size"`, `"train_samples"`, `"compile_seconds"`, `"epoch_seconds"`, `"history"`, `"test_loss"`, `"test_accuracy"`} {
		if !strings.Contains(string(raw), key) {
			t.Errorf("JSON lacks %s", key)
		}
	}
	img, err := os.ReadFile(png)
	if err != nil || !bytes.HasPrefix(img, []byte("\x89PNG\r\n\x1a\n")) || len(img) < 1000 {
		t.Errorf("--plot wrote no PNG (%d bytes, %v)", len(img), err)
	}
	m, err := nn.Load(model)
	if err != nil {
		t.Fatal(err)
	}
	if total, _ := m.CountParams(); total != 101770 {
		t.Errorf("saved model has %d params", total)
	}
}

// TestFitErrors checks that bad command lines and bad data are reported
// with a clear message and the right exit status.
func TestFitErrors(t *testing.T) {
	empty := t.TempDir()
	wrong := t.TempDir()
	// Files with the right names but the wrong contents: every file holds
	// the test labels.
	dir := fashionDir(t)
	labels, err := os.ReadFile(filepath.Join(dir, "t10k-labels-idx1-ubyte.gz"))
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{"train-images-idx3-ubyte.gz", "train-labels-idx1-ubyte.gz", "t10k-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz"} {
		if err := os.WriteFile(filepath.Join(wrong, n), labels, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []struct {
		name string
		args []string
		code int
		want string
	}{
		{"no command", nil, 2, "Usage"},
		{"unknown command", []string{"train"}, 2, `unknown command "train"`},
		{"epochs", []string{"fit", "--epochs", "0"}, 2, "--epochs 0"},
		{"unknown flag", []string{"fit", "--epoch", "3"}, 2, "flag provided but not defined: -epoch"},
		{"unknown device", []string{"fit", "--device", "tpu"}, 2, `unknown device "tpu" from --device`},
		{"unknown model", []string{"fit", "--model", "resnet"}, 2, `unknown model "resnet"`},
		{"plot name", []string{"fit", "--plot", "x.jpg"}, 2, "must name a .png file"},
		{"empty data dir", []string{"fit", "--data", empty, "--device", "cpu"}, 1, "train-images-idx3-ubyte"},
		{"wrong data files", []string{"fit", "--data", wrong, "--device", "cpu"}, 1, "train-images-idx3-ubyte.gz"},
		{"limit", []string{"fit", "--data", dir, "--limit", "70000", "--device", "cpu"}, 2, "--limit 70000 exceeds"},
	} {
		t.Run(c.name, func(t *testing.T) {
			code, out, errs := runCLI(c.args...)
			if code != c.code || !strings.Contains(out+errs, c.want) {
				t.Errorf("exit %d, want %d; output lacks %q:\n%s%s", code, c.code, c.want, out, errs)
			}
		})
	}
	t.Setenv("TARTAN_DEVICE", "quantum")
	if code, _, errs := runCLI("fit", "--data", dir); code != 2 || !strings.Contains(errs, `unknown device "quantum" from TARTAN_DEVICE`) {
		t.Errorf("TARTAN_DEVICE: exit %d, %s", code, errs)
	}
}

// TestFitBadCheckpoint checks that a damaged checkpoint stops the run with
// a clear message instead of being overwritten.
func TestFitBadCheckpoint(t *testing.T) {
	dir := fashionDir(t)
	ck := filepath.Join(t.TempDir(), "ck.safetensors")
	if err := os.WriteFile(ck, []byte("not a checkpoint at all"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errs := runCLI("fit", "--model", "fashion-mlp", "--limit", "100", "--epochs", "1", "--data", dir, "--device", "cpu", "--checkpoint", ck)
	if code != 1 || !strings.Contains(errs, "cannot resume") || !strings.Contains(errs, "not a valid safetensors file") {
		t.Errorf("exit %d:\n%s%s", code, out, errs)
	}
	if b, _ := os.ReadFile(ck); string(b) != "not a checkpoint at all" {
		t.Error("the damaged checkpoint was overwritten")
	}
}

func TestDevices(t *testing.T) {
	code, out, errs := runCLI("devices", "--json")
	var l struct {
		Devices []map[string]any `json:"devices"`
	}
	if code != 0 || json.Unmarshal([]byte(out), &l) != nil || len(l.Devices) < 1 || l.Devices[0]["id"] != "cpu" {
		t.Errorf("exit %d, %s %s", code, out, errs)
	}
}

func TestSetupNonInteractiveSavesConfig(t *testing.T) {
	cfg := t.TempDir()
	t.Setenv("XDG_CONFIG_HOME", cfg)
	code, out, errs := runCLI("setup", "--device", "cpu", "--yes")
	if code != 0 || !strings.Contains(out, "Saved") {
		t.Fatalf("exit %d:\n%s%s", code, out, errs)
	}
	b, err := os.ReadFile(filepath.Join(cfg, "tartan", "config.json"))
	if err != nil || !strings.Contains(string(b), `"device": "cpu"`) {
		t.Errorf("config file: %v %s", err, b)
	}
	if code, _, errs := runCLI("setup", "--device", "tpu", "--yes"); code == 0 || !strings.Contains(errs, "tpu") {
		t.Errorf("unknown device: exit %d, %s", code, errs)
	}
}

func TestBenchWritesEveryFigure(t *testing.T) {
	if testing.Short() {
		t.Skip("bench runs a 2048³ product with gonum; skipped in -short")
	}
	js := filepath.Join(t.TempDir(), "bench.json")
	code, out, errs := runCLI("bench", "--device", "cpu", "--steps", "2", "--repeat", "1", "--json", js)
	if code != 0 {
		t.Fatalf("exit %d:\n%s%s", code, out, errs)
	}
	var rep benchReport
	b, err := os.ReadFile(js)
	if err != nil || json.Unmarshal(b, &rep) != nil {
		t.Fatalf("reading %s: %v %s", js, err, b)
	}
	if len(rep.Sgemm) != 3 || len(rep.Conv) != 2 || rep.Step.MSPerStep <= 0 || rep.Step.Steps != 2 {
		t.Errorf("incomplete report: %+v", rep)
	}
	for _, s := range rep.Sgemm {
		if s.GFLOPS <= 0 || s.GonumGFLOPS <= 0 || s.Ratio <= 0 {
			t.Errorf("sgemm %d: %+v", s.N, s)
		}
	}
	if code, _, errs := runCLI("bench", "--steps", "0"); code != 2 || !strings.Contains(errs, "positive --steps") {
		t.Errorf("--steps 0: exit %d, %s", code, errs)
	}
}
