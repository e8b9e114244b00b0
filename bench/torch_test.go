package bench

import (
	"os/exec"
	"path/filepath"
	"testing"
)

// python returns a Python that can import torch, or skips the test.
func python(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("starting PyTorch takes seconds; skipped in -short")
	}
	for _, p := range []string{"/usr/bin/python3", "python3"} {
		if path, err := exec.LookPath(p); err == nil {
			if exec.Command(path, "-c", "import torch").Run() == nil {
				return path
			}
		}
	}
	t.Skip("no python3 with torch (Debian: apt-get install python3-torch)")
	return ""
}

// TestTorchSuiteParams checks that torch_suite.py builds the same entries
// as this package, with the same parameter counts.
func TestTorchSuiteParams(t *testing.T) {
	py := python(t)
	js := filepath.Join(t.TempDir(), "params.json")
	out, err := exec.Command(py, "torch_suite.py", "--params-only", "--fragments", "--json", js).CombinedOutput()
	if err != nil {
		t.Fatalf("torch_suite.py: %v\n%s", err, out)
	}
	rep, err := ReadReport(js)
	if err != nil {
		t.Fatal(err)
	}
	theirs := map[string]Result{}
	for _, r := range rep.Entries {
		theirs[r.Name] = r
	}
	for _, e := range Entries() {
		r, ok := theirs[e.Name]
		if !ok {
			t.Errorf("torch_suite.py has no entry %s", e.Name)
			continue
		}
		ours, err := e.Params(Config{})
		if err != nil {
			t.Fatal(err)
		}
		if r.Params != ours || r.Kind != e.Kind() || r.Batch != e.Batch {
			t.Errorf("%s: PyTorch %s batch %d with %d parameters, Tartan %s batch %d with %d", e.Name, r.Kind, r.Batch, r.Params, e.Kind(), e.Batch, ours)
		}
		delete(theirs, e.Name)
	}
	for name := range theirs {
		t.Errorf("torch_suite.py has entry %s, which Tartan lacks", name)
	}
}

// TestTorchSuiteMeasures runs two small entries of torch_suite.py and
// reads its report.
func TestTorchSuiteMeasures(t *testing.T) {
	py := python(t)
	js := filepath.Join(t.TempDir(), "torch.json")
	out, err := exec.Command(py, "torch_suite.py", "--only", "stem,lstm", "--batch", "2", "--threads", "1",
		"--warmup", "1", "--steps", "2", "--max-seconds", "0.001", "--json", js).CombinedOutput()
	if err != nil {
		t.Fatalf("torch_suite.py: %v\n%s", err, out)
	}
	rep, err := ReadReport(js)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Tool != "pytorch" || rep.Threads != 1 || rep.Device != "cpu" || len(rep.Entries) != 2 {
		t.Fatalf("report: %+v", rep)
	}
	for _, r := range rep.Entries {
		if !r.OK() || r.Steps != 1 || r.Batch != 2 || !finite(r.FirstLoss) || r.CompileSeconds <= 0 {
			t.Errorf("%+v", r)
		}
	}
}
