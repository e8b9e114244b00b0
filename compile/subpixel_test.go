package compile

import (
	"testing"

	"github.com/tartanml/tartan/kir"
	"github.com/tartanml/tartan/tile"
)

// hasMod reports whether x contains a modulo.
func hasMod(x *kir.Ix) bool {
	if x == nil {
		return false
	}
	return x.Op == kir.IxMod || hasMod(x.A) || hasMod(x.B)
}

// TestSubpixelSplit checks that the input gradients of overlapping strided
// windows compile to phases without modular guards on their reduction
// loops, and still compute what the reference computes; and that windows
// that do not overlap, odd extents and maxima are left alone.
func TestSubpixelSplit(t *testing.T) {
	cases := []struct {
		name   string
		out    tile.Shape
		dO     tile.Shape
		access string
		kshape tile.Shape
		agg    tile.Agg
		split  bool
	}{
		{"3x3_stride2_pad1", s(2, 12, 16, 3), s(2, 6, 8, 4), "n, 2*y + i - 1, 2*x + j - 1, d", s(3, 3, 3, 4), tile.Sum, true},
		{"3x3_stride2_valid", s(2, 16, 16, 3), s(2, 7, 7, 4), "n, 2*y + i, 2*x + j, d", s(3, 3, 3, 4), tile.Sum, true},
		{"5x4_stride3", s(1, 18, 21, 2), s(1, 5, 6, 4), "n, 3*y + i, 3*x - j + 3, d", s(5, 4, 2, 4), tile.Sum, true},
		{"2x2_stride2", s(2, 12, 12, 3), s(2, 6, 6, 4), "n, 2*y + i, 2*x + j, d", s(2, 2, 3, 4), tile.Sum, false},
		{"odd_extent", s(2, 11, 11, 3), s(2, 6, 6, 4), "n, 2*y + i - 1, 2*x + j - 1, d", s(3, 3, 3, 4), tile.Sum, false},
		{"max", s(2, 12, 12, 3), s(2, 6, 6, 4), "n, 2*y + i - 1, 2*x + j - 1, d", s(3, 3, 3, 4), tile.Max, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			g := tile.NewGraph(c.name)
			dO, k := g.Input("dO", f32, c.dO), g.Input("k", f32, c.kshape)
			g.SetOutput("dI", contract(g, c.agg, tile.CombMul, c.out, c.access,
				[]tile.Operand{opd(dO, "n, y, x, c"), opd(k, "i, j, d, c")}))
			p := checkAgainstRef(t, g, testTarget, 3, 0, 1, 1e-5)
			mods, phases := 0, 0
			for _, kn := range p.Kernels {
				if len(kn.Reduce) == 0 {
					continue
				}
				phases++
				for _, w := range kn.Where {
					if hasMod(w.X) {
						mods++
					}
				}
			}
			if c.split && (mods != 0 || phases < 4) {
				t.Errorf("%d reduction kernels, %d modular guards; want the phases without guards:\n%s", phases, mods, p)
			}
			if !c.split && phases != 1 {
				t.Errorf("%d reduction kernels, %d modular guards; want one kernel, unsplit:\n%s", phases, mods, p)
			}
		})
	}
}
