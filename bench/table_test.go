package bench

import (
	"bytes"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func result(name, kind string, ms float64, params int) Result {
	r := Result{Name: name, Kind: kind, Batch: 8, Params: params, MSPerStep: ms, Steps: 3, Kernels: -1}
	if ms == 0 {
		r.Steps, r.Error = 0, "out of memory"
	}
	return r
}

func TestComparison(t *testing.T) {
	ours := Report{Tool: "tartan", Entries: []Result{
		result("mlp", "model", 10, 100), result("resnet20", "model", 40, 200),
		result("lstm", "fragment", 5, 300), result("cnn", "model", 0, 400),
		result("stem", "model", 7, 500),
	}}
	peer := Report{Tool: "pytorch", Entries: []Result{
		result("mlp", "model", 5, 100), result("resnet20", "model", 10, 201),
		result("lstm", "fragment", 10, 300), result("cnn", "model", 3, 400),
		result("depthwise", "fragment", 1, 864),
	}}
	rows, gm, n := Comparison(ours, peer)
	// Models measured by both: mlp (2) and resnet20 (4); the fragment and
	// the failed cnn do not count.
	if n != 2 || math.Abs(gm-math.Sqrt(8)) > 1e-12 {
		t.Errorf("geometric mean %v over %d models, want √8 over 2", gm, n)
	}
	want := []struct {
		name  string
		ratio float64
		note  string
	}{
		{"mlp", 2, ""}, {"resnet20", 4, "parameter counts differ"}, {"lstm", 0.5, ""},
		{"cnn", 0, "error: out of memory"}, {"stem", 0, "pytorch has no such entry"},
		{"depthwise", 0, "not measured by tartan"},
	}
	if len(rows) != len(want) {
		t.Fatalf("%d rows, want %d: %+v", len(rows), len(want), rows)
	}
	for i, w := range want {
		r := rows[i]
		if r.Name != w.name || r.Ratio != w.ratio || r.Note != w.note {
			t.Errorf("row %d = %+v, want %s ratio %v note %q", i, r, w.name, w.ratio, w.note)
		}
	}
	var out bytes.Buffer
	Compare(&out, ours, peer)
	for _, s := range []string{"geometric mean of tartan/pytorch over 2 models: 2.83", "4.00", "0.50", "201"} {
		if !strings.Contains(out.String(), s) {
			t.Errorf("comparison lacks %q:\n%s", s, out.String())
		}
	}
}

func TestMedianReport(t *testing.T) {
	round := func(mlp, cnn float64) Report {
		return Report{Tool: "pytorch", Device: "cpu", Entries: []Result{result("mlp", "model", mlp, 1), result("cnn", "model", cnn, 2)}}
	}
	m, err := MedianReport([]Report{round(3, 0), round(1, 0), round(2, 5)})
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Entries) != 2 || m.Entries[0].MSPerStep != 2 || m.Entries[0].Steps != 9 || m.Entries[1].MSPerStep != 5 || m.Entries[1].Error != "" {
		t.Errorf("median report: %+v", m.Entries)
	}
	m, err = MedianReport([]Report{round(0, 0)})
	if err != nil || m.Entries[0].OK() || m.Entries[0].Error == "" {
		t.Errorf("a failed entry: %+v, %v", m.Entries, err)
	}
	other := round(1, 1)
	other.Device = "cuda"
	if _, err := MedianReport([]Report{round(1, 1), other}); err == nil || !strings.Contains(err.Error(), "cuda") {
		t.Errorf("mixing devices: %v", err)
	}
	if _, err := MedianReport(nil); err == nil {
		t.Error("no reports accepted")
	}
}

func TestReadReport(t *testing.T) {
	dir := t.TempDir()
	rep := Report{Tool: "tartan", Device: "cpu", Threads: 2, Entries: []Result{result("mlp", "model", 12.5, 1_863_690)}}
	b, err := json.Marshal(rep)
	if err != nil {
		t.Fatal(err)
	}
	good := filepath.Join(dir, "good.json")
	os.WriteFile(good, b, 0o644)
	got, err := ReadReports([]string{good, good})
	if err != nil || len(got.Entries) != 1 || got.Entries[0].MSPerStep != 12.5 || got.Entries[0].Steps != 6 {
		t.Errorf("read back: %+v, %v", got, err)
	}
	for name, content := range map[string]string{
		"trunc.json": string(b[:len(b)/2]),
		"empty.json": `{"tool": "pytorch", "entries": []}`,
		"neg.json":   `{"tool": "pytorch", "entries": [{"name": "mlp", "ms_per_step": -1}]}`,
		"anon.json":  `{"tool": "pytorch", "entries": [{"ms_per_step": 1}]}`,
	} {
		p := filepath.Join(dir, name)
		os.WriteFile(p, []byte(content), 0o644)
		if _, err := ReadReport(p); err == nil || !strings.Contains(err.Error(), name) {
			t.Errorf("%s: %v", name, err)
		}
	}
	if _, err := ReadReport(filepath.Join(dir, "missing.json")); err == nil {
		t.Error("missing file accepted")
	}
}

func TestWriteTable(t *testing.T) {
	var out bytes.Buffer
	bad := result("cnn", "model", 0, 412_778)
	bad.Error = "compiling: out of memory\nmore detail"
	WriteTable(&out, Report{Tool: "tartan", Entries: []Result{result("mlp", "model", 12.5, 1_863_690), bad}})
	for _, s := range []string{"1,863,690", "12.50", "412,778", "error: compiling: out of memory …"} {
		if !strings.Contains(out.String(), s) {
			t.Errorf("table lacks %q:\n%s", s, out.String())
		}
	}
}

// TestRealReports reads the reports of a real run of both sides
// (testdata, from run_suite.sh on a 2-core machine) and compares them:
// every entry pairs up with the same parameter count and batch.
func TestRealReports(t *testing.T) {
	ours, err := ReadReport("testdata/tartan-cpu.json")
	if err != nil {
		t.Fatal(err)
	}
	peer, err := ReadReport("testdata/torch-cpu.json")
	if err != nil {
		t.Fatal(err)
	}
	rows, gm, n := Comparison(ours, peer)
	if len(rows) != len(Entries()) || n != 6 || !(gm > 0) {
		t.Fatalf("%d rows, geometric mean %v over %d models", len(rows), gm, n)
	}
	for _, r := range rows {
		if r.Note != "" || r.Ratio <= 0 || r.OurParams != r.PeerParams {
			t.Errorf("%+v", r)
		}
	}
}
