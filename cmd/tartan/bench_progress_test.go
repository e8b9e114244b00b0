package main

import (
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/tartanml/tartan/backend/cpu"
	"github.com/tartanml/tartan/bench"
)

// fakeBenchClock makes every reading of the progress clock 1.5 s later
// than the one before, so that each progress line reports 1.5 s.
func fakeBenchClock(t *testing.T) {
	t.Helper()
	old := benchClock
	t.Cleanup(func() { benchClock = old })
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	benchClock = func() time.Time {
		now = now.Add(1500 * time.Millisecond)
		return now
	}
}

// TestBenchProgress checks the progress lines tartan bench writes to
// stderr, one per measurement as it starts and ends, and that stdout keeps
// its lines.
func TestBenchProgress(t *testing.T) {
	fakeBenchClock(t)
	oldSizes := sgemmSizes
	defer func() { sgemmSizes = oldSizes }()
	sgemmSizes = []int{32, 48}
	code, out, errs := runCLI("bench", "--device", "cpu", "--steps", "2", "--repeat", "1")
	if code != 0 {
		t.Fatalf("exit %d:\n%s%s", code, out, errs)
	}
	wantErr := `bench: sgemm 32³ on the host, Tartan's then gonum's… 1.5 s
bench: sgemm 48³ on the host, Tartan's then gonum's… 1.5 s
bench: conv2d 28x28x1 -> 64 (dK) on cpu, forward and backward… 1.5 s
bench: conv2d_1 14x14x64 -> 32 (dK, dX) on cpu, forward and backward… 1.5 s
bench: showcase training step on cpu (fashion-cnn, batch 64: compile, then 2 epochs of 2 steps)… 1.5 s
`
	if errs != wantErr {
		t.Errorf("stderr:\n%s\nwant:\n%s", errs, wantErr)
	}
	// stdout as before: the same lines but for the figures (and the
	// spaces that align them).
	figures := regexp.MustCompile(` *[0-9]+(\.[0-9]+)?`)
	// The lines tartan bench wrote before it had progress lines, with
	// other figures.
	wantOut := `sgemm on the host (float32, all cores) against gonum's blas32.Gemm, same run:
    32³     41.1 GFLOP/s   gonum    1.0 GFLOP/s   40.9x
    48³     48.4 GFLOP/s   gonum    2.2 GFLOP/s   21.5x
showcase convolutions (2x2 same, bias-free, ReLU) on cpu, batch 64; backward computes what training needs:
  conv2d 28x28x1 -> 64 (dK)          forward  15.826 ms   backward  20.447 ms
  conv2d_1 14x14x64 -> 32 (dK, dX)   forward   3.504 ms   backward  17.578 ms
showcase training step (fashion-cnn, Adam, batch 64): 86.59 ms/step, compile 0.020 s
`
	if figures.ReplaceAllString(out, "N") != figures.ReplaceAllString(wantOut, "N") {
		t.Errorf("stdout:\n%s\nwant (figures as N):\n%s", out, wantOut)
	}
}

// TestBenchSuiteProgress checks the progress lines of tartan bench --suite:
// the header, then one line per entry with the figures its report holds.
func TestBenchSuiteProgress(t *testing.T) {
	fakeBenchClock(t)
	js := filepath.Join(t.TempDir(), "suite.json")
	code, out, errs := suiteCLI("--suite", "--device", "cpu", "--only", "stem,lstm", "--batch", "2",
		"--threads", "1", "--warmup", "1", "--steps", "2", "--max-seconds", "100", "--json", js)
	if code != 0 {
		t.Fatalf("exit %d\n%s%s", code, out, errs)
	}
	rep, err := bench.ReadReport(js)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Entries) != 2 {
		t.Fatalf("%d entries", len(rep.Entries))
	}
	want := fmt.Sprintf("tartan bench --suite on cpu (%s), 1 threads, cold caches: 2 entries, at most 2 steps or 100 s each after 1 warm-up steps\n", cpu.New().Info().Name)
	for i, kind := range []string{"model", "fragment"} {
		r := rep.Entries[i]
		want += fmt.Sprintf("bench: [%d/2] %s (%s, batch 2)… %.2f ms/step over 2 steps, compile %.2f s, %d kernels, loss %.4g -> %.4g (1.5 s)\n",
			i+1, []string{"stem", "lstm"}[i], kind, r.MSPerStep, r.CompileSeconds, r.Kernels, r.FirstLoss, r.LastLoss)
	}
	if errs != want {
		t.Errorf("stderr:\n%s\nwant:\n%s", errs, want)
	}
	if !strings.Contains(out, "stem") || strings.Contains(out, "bench:") {
		t.Errorf("stdout should hold the table and no progress:\n%s", out)
	}
}
