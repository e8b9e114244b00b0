package compile

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/tartanml/tartan/tile"
)

func cacheFiles(t *testing.T, dir string) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "tartan", "programs", "*"))
	if err != nil {
		t.Fatal(err)
	}
	return files
}

func smallGraph(scale float64) *tile.Graph {
	g := tile.NewGraph("cached")
	x, w := g.Input("x", f32, s(4, 8)), g.Variable("w", f32, s(8, 3))
	y := contract(g, tile.Sum, tile.CombMul, s(4, 3), "i, j", []tile.Operand{opd(x, "i, k"), opd(g.Transpose(g.Transpose(w, []int{1, 0}), []int{1, 0}), "k, j")})
	g.SetOutput("y", g.Mul(y, g.Scalar(scale, f32)))
	g.Update(w, g.Mul(w, g.Scalar(0.5, f32)))
	return g
}

func TestCompileCached(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("XDG_CACHE_HOME", dir)
	t.Setenv("TARTAN_CACHE", "")
	g := smallGraph(2)
	p1, hit, err := CompileCached(g, testTarget, "cpu test")
	if err != nil || hit {
		t.Fatalf("first compile: hit %v, err %v", hit, err)
	}
	files := cacheFiles(t, dir)
	if len(files) != 1 {
		t.Fatalf("want one cache entry, found %v", files)
	}
	p2, hit, err := CompileCached(smallGraph(2), testTarget, "cpu test")
	if err != nil || !hit {
		t.Fatalf("second compile: hit %v, err %v", hit, err)
	}
	if p1.String() != p2.String() {
		t.Errorf("cached program differs:\n%s\nvs\n%s", p1, p2)
	}
	for i, k := range p2.Kernels {
		if v := k.Schedule.GEMM; v != nil && (v.A != k.Body.Args[0] && v.A != k.Body.Args[1]) {
			t.Errorf("kernel %d: GEMM operands not linked to the body after loading", i)
		}
	}
	// Anything that changes the program changes the key.
	for name, f := range map[string]func() (bool, error){
		"device": func() (bool, error) {
			_, h, err := CompileCached(smallGraph(2), testTarget, "other device")
			return h, err
		},
		"target": func() (bool, error) {
			_, h, err := CompileCached(smallGraph(2), Target{Backend: "cpu", Workers: 2}, "cpu test")
			return h, err
		},
		"constant": func() (bool, error) { _, h, err := CompileCached(smallGraph(3), testTarget, "cpu test"); return h, err },
	} {
		if hit, err := f(); err != nil || hit {
			t.Errorf("%s changed: hit %v, err %v", name, hit, err)
		}
	}
	// A corrupt entry is ignored and rewritten.
	for _, f := range cacheFiles(t, dir) {
		if err := os.WriteFile(f, []byte("not a program"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if _, hit, err := CompileCached(smallGraph(2), testTarget, "cpu test"); err != nil || hit {
		t.Fatalf("corrupt entry: hit %v, err %v", hit, err)
	}
	if _, hit, err := CompileCached(smallGraph(2), testTarget, "cpu test"); err != nil || !hit {
		t.Fatalf("rewritten entry: hit %v, err %v", hit, err)
	}
	// A truncated entry too.
	for _, f := range cacheFiles(t, dir) {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(f, data[:len(data)/2], 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if _, hit, err := CompileCached(smallGraph(2), testTarget, "cpu test"); err != nil || hit {
		t.Fatalf("truncated entry: hit %v, err %v", hit, err)
	}
	// No temporary files are left behind.
	for _, f := range cacheFiles(t, dir) {
		if filepath.Ext(f) != ".gob" {
			t.Errorf("stray file %s", f)
		}
	}
}

func TestCompileCachedOff(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("XDG_CACHE_HOME", dir)
	t.Setenv("TARTAN_CACHE", "off")
	for range 2 {
		if _, hit, err := CompileCached(smallGraph(2), testTarget, "cpu"); err != nil || hit {
			t.Fatalf("hit %v, err %v", hit, err)
		}
	}
	if files := cacheFiles(t, dir); len(files) != 0 {
		t.Errorf("TARTAN_CACHE=off wrote %v", files)
	}
}

func TestCompileCachedReportsGraphErrors(t *testing.T) {
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	g := tile.NewGraph("bad")
	g.Add(g.Input("a", f32, s(2)), g.Input("b", f32, s(3)))
	if _, _, err := CompileCached(g, testTarget, "cpu"); err == nil {
		t.Fatal("want an error for a graph with a building error")
	}
}

func TestCNNCacheTimes(t *testing.T) {
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	t.Setenv("TARTAN_CACHE", "")
	build := func() *tile.Graph {
		g := tile.NewGraph("fashion_cnn_step")
		if err := buildCNNStep(g, cnnConfig{batch: 64, size: 28, c1: 64, c2: 32, dense: 256, dt: tile.Float32}); err != nil {
			t.Fatal(err)
		}
		return g
	}
	g := build()
	start := time.Now()
	cold, hit, err := CompileCached(g, testTarget, "cpu")
	coldTime := time.Since(start)
	if err != nil || hit {
		t.Fatalf("cold: hit %v, err %v", hit, err)
	}
	g = build()
	start = time.Now()
	warm, hit, err := CompileCached(g, testTarget, "cpu")
	warmTime := time.Since(start)
	if err != nil || !hit {
		t.Fatalf("warm: hit %v, err %v", hit, err)
	}
	t.Logf("cold %v, warm %v, %d kernels", coldTime, warmTime, len(warm.Kernels))
	if cold.String() != warm.String() {
		t.Error("warm program differs from the cold one")
	}
	if coldTime > 500*time.Millisecond || warmTime > 100*time.Millisecond {
		t.Errorf("cold %v (want < 0.5 s), warm %v (want < 0.1 s)", coldTime, warmTime)
	}
}
