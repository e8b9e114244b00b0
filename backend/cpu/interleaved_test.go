package cpu

import (
	"testing"

	"github.com/tartanml/tartan/op"
	"github.com/tartanml/tartan/tile"
)

// TestInterleavedProducts checks matrix products whose output puts a batch
// loop between its rows and columns, as attention's products write
// [batch, rows, heads, cols]: they run on the gemm executor, writing C in
// place with the output's strides, in each of its modes (tiles, with plain or packed
// operands, and split K), with
// and without an epilogue, and compute what kir.Interpret does.
func TestInterleavedProducts(t *testing.T) {
	cases := []struct {
		name, src string
		shapes    map[string]tile.Shape
		sizes     map[string]int
		mode      gemmMode
		epilogue  bool
	}{
		{"direct", "O[b, i, h, d : B, I, H, D] = +(P[b, h, i, j] * V[b, j, h, d])",
			map[string]tile.Shape{"P": {2, 3, 20, 24}, "V": {2, 24, 3, 16}},
			map[string]int{"B": 2, "I": 20, "H": 3, "D": 16}, gemmTiles, false},
		{"direct-transposed", "O[b, i, h, d : B, I, H, D] = +(P[b, h, j, i] * V[b, h, d, j])",
			map[string]tile.Shape{"P": {2, 3, 24, 20}, "V": {2, 3, 16, 24}},
			map[string]int{"B": 2, "I": 20, "H": 3, "D": 16}, gemmTiles, true},
		{"rows-first-batch-inner", "O[i, h, d : I, H, D] = +(P[h, i, j] * V[j, h, d])",
			map[string]tile.Shape{"P": {4, 33, 17}, "V": {17, 4, 9}},
			map[string]int{"I": 33, "H": 4, "D": 9}, gemmTiles, true},
		{"rows-padded", "O[i, h, d : I, H, D] = +(P[h, i + j - 1, c] * V[j, c, h, d])",
			map[string]tile.Shape{"P": {3, 40, 6}, "V": {3, 6, 3, 12}},
			map[string]int{"I": 40, "H": 3, "D": 12}, gemmTiles, true},
		{"split-k", "O[i, h, d : I, H, D] = +(P[h, n, i] * V[n, h, d])",
			map[string]tile.Shape{"P": {3, 2048, 8}, "V": {2048, 3, 8}},
			map[string]int{"I": 8, "H": 3, "D": 8}, gemmSplitK, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := tile.NewGraph(tc.name)
			ops := map[string]*tile.Tensor{}
			for name, sh := range tc.shapes {
				ops[name] = g.Input(name, tile.Float32, sh)
			}
			o := tile.ParseContraction(g, tc.src, ops, tc.sizes)
			if tc.epilogue {
				o = op.ReLU(g, g.Add(o, g.ScalarLike(o, 0.25)))
			}
			g.SetOutput("o", o)
			d := New(Cache(false))
			defer d.Close()
			p := compileFor(t, d, g)
			x, err := d.Load(p)
			if err != nil {
				t.Fatal(err)
			}
			found := false
			for _, k := range x.kernels {
				if gk, ok := k.(*gemmKernel); ok {
					found = true
					if gk.mode != tc.mode {
						t.Errorf("mode %d, want %d", gk.mode, tc.mode)
					}
					if gk.ldc == gk.nc {
						t.Errorf("C has dense rows (ldc %d = nc): the case does not interleave", gk.ldc)
					}
				}
			}
			x.Close()
			if !found {
				t.Fatalf("no kernel runs on the gemm executor:\n%v", p)
			}
			checkProgram(t, d, p, 1, 3)
		})
	}
}
