package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tartanml/tartan/bench"
)

func suiteCLI(args ...string) (int, string, string) {
	var out, errb bytes.Buffer
	code := run(append([]string{"bench"}, args...), &out, &errb)
	return code, out.String(), errb.String()
}

// TestBenchSuiteMeasures runs two small entries of the suite on the CPU
// and reads back the JSON report.
func TestBenchSuiteMeasures(t *testing.T) {
	js := filepath.Join(t.TempDir(), "suite.json")
	code, out, errs := suiteCLI("--suite", "--device", "cpu", "--only", "stem,lstm", "--batch", "2",
		"--threads", "1", "--warmup", "1", "--steps", "2", "--max-seconds", "100", "--json", js, "--profile", "2")
	if code != 0 {
		t.Fatalf("exit %d\n%s%s", code, out, errs)
	}
	// --profile prints each entry's slowest kernels after its measurement.
	for _, name := range []string{"stem", "lstm"} {
		_, after, ok := strings.Cut(out, name+", one training step:\nprofile: ")
		if !ok || !strings.Contains(after, " ms in all; the 2 slowest:\n") {
			t.Errorf("no profile of %s:\n%s", name, out)
		}
	}
	rep, err := bench.ReadReport(js)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Tool != "tartan" || rep.Device != "cpu" || rep.Threads != 1 || rep.Cache != "cold" || len(rep.Entries) != 2 {
		t.Fatalf("report: %+v", rep)
	}
	for _, r := range rep.Entries {
		if !r.OK() || r.Steps != 2 || r.Batch != 2 || r.Kernels < 1 || r.Params < 1 {
			t.Errorf("%+v", r)
		}
		if !strings.Contains(out, r.Name) {
			t.Errorf("table lacks %s:\n%s", r.Name, out)
		}
	}
}

// TestBenchSuiteCompares prints the comparison of reports given as files,
// measuring nothing.
func TestBenchSuiteCompares(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, rep bench.Report) string {
		b, err := json.Marshal(rep)
		if err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	entry := func(name, kind string, ms float64) bench.Result {
		return bench.Result{Name: name, Kind: kind, Batch: 4, Params: 10, MSPerStep: ms, Steps: 1}
	}
	t1 := write("t1.json", bench.Report{Tool: "tartan", Device: "cpu", Entries: []bench.Result{entry("mlp", "model", 30), entry("lstm", "fragment", 1)}})
	t2 := write("t2.json", bench.Report{Tool: "tartan", Device: "cpu", Entries: []bench.Result{entry("mlp", "model", 10), entry("lstm", "fragment", 3)}})
	p1 := write("p1.json", bench.Report{Tool: "pytorch", Device: "cpu", Entries: []bench.Result{entry("mlp", "model", 5), entry("lstm", "fragment", 4)}})
	code, out, errs := suiteCLI("--suite", "--from", t1+","+t2, "--peer", p1)
	if code != 0 {
		t.Fatalf("exit %d\n%s%s", code, out, errs)
	}
	// Medians: mlp 20 against 5, lstm 2 against 4.
	for _, s := range []string{"20.00", "4.00", "0.50", "over 1 models: 4.00"} {
		if !strings.Contains(out, s) {
			t.Errorf("output lacks %q:\n%s", s, out)
		}
	}
	if code, _, errs := suiteCLI("--suite", "--from", t1, "--peer", filepath.Join(dir, "missing.json")); code != 1 || !strings.Contains(errs, "missing.json") {
		t.Errorf("missing peer: exit %d, %s", code, errs)
	}
}

func TestBenchSuiteUsage(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--fragments"}, "--fragments only apply with --suite"},
		{[]string{"--only", "mlp", "--max-seconds", "1"}, "--max-seconds, --only only apply with --suite"},
		{[]string{"--suite", "--only", "resnet50"}, `"resnet50"`},
		{[]string{"--suite", "--max-seconds", "0"}, "--max-seconds must be above 0"},
		{[]string{"--suite", "--from", "x.json", "--device", "cpu"}, "--from reads"},
		{[]string{"--suite", "--from", "x.json", "--profile", "2"}, "--profile do not apply"},
		{[]string{"--profile", "2"}, "--profile N takes a positive N, with --onnx or --suite"},
		{[]string{"--suite", "--profile", "-1"}, "--profile N takes a positive N"},
	} {
		code, _, errs := suiteCLI(c.args...)
		if code != 2 || !strings.Contains(errs, c.want) {
			t.Errorf("%v: exit %d, %q; want 2 and %q", c.args, code, errs, c.want)
		}
	}
}
