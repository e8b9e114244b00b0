package cpu

import (
	"bytes"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/tartanml/tartan/tile"
)

// dense returns a graph "dense" with input x [4, 8], variable w [8, 3],
// output y = x·w and the update w ← w/2.
func dense() *tile.Graph {
	g := tile.NewGraph("dense")
	x, w := g.Input("x", tile.Float32, tile.Shape{4, 8}), g.Variable("w", tile.Float32, tile.Shape{8, 3})
	i, j, k := tile.Ix("i"), tile.Ix("j"), tile.Ix("k")
	g.SetOutput("y", g.Contract(tile.Sum, tile.CombMul, tile.Shape{4, 3}, []tile.Affine{i, j},
		[]tile.Operand{{Tensor: x, Index: []tile.Affine{i, k}}, {Tensor: w, Index: []tile.Affine{k, j}}}))
	g.Update(w, g.Mul(w, g.Scalar(0.5, tile.Float32)))
	return g
}

// TestDamagedCacheEntry compiles through the program cache after flipping
// bits of the cached entry: every run must give the results of the intact
// program, and the variables must be found (a damaged entry once gave
// "program has no variable").
func TestDamagedCacheEntry(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("XDG_CACHE_HOME", dir)
	t.Setenv("TARTAN_CACHE", "")
	d := New(Workers(2))
	defer d.Close()
	x := make([]float32, 32)
	w := make([]float32, 24)
	for i := range x {
		x[i] = float32(i%7) - 3
	}
	for i := range w {
		w[i] = float32(i%5) - 2
	}
	run := func() ([]float32, []float32) {
		t.Helper()
		e, err := d.Compile(dense())
		if err != nil {
			t.Fatal(err)
		}
		defer e.Close()
		if err := e.WriteVariable("w", w); err != nil {
			t.Fatal(err)
		}
		if err := e.SetInput("x", x); err != nil {
			t.Fatal(err)
		}
		if err := e.Run(); err != nil {
			t.Fatal(err)
		}
		y, w2 := make([]float32, 12), make([]float32, 24)
		if err := e.ReadOutput("y", y); err != nil {
			t.Fatal(err)
		}
		if err := e.ReadVariable("w", w2); err != nil {
			t.Fatal(err)
		}
		return y, w2
	}
	wantY, wantW := run()
	files, _ := filepath.Glob(filepath.Join(dir, "tartan", "programs", "*.gob"))
	if len(files) != 1 {
		t.Fatalf("cache entries %v, want one", files)
	}
	entry, err := os.ReadFile(files[0])
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(3, 4))
	for range 200 {
		bit := rng.IntN(8 * len(entry))
		flipped := bytes.Clone(entry)
		flipped[bit/8] ^= 1 << (bit % 8)
		if err := os.WriteFile(files[0], flipped, 0o644); err != nil {
			t.Fatal(err)
		}
		y, w2 := run()
		if !slices.Equal(y, wantY) || !slices.Equal(w2, wantW) {
			t.Fatalf("bit %d of the entry flipped: y %v, w %v; want %v, %v", bit, y, w2, wantY, wantW)
		}
	}
}
