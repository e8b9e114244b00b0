package compile

import (
	"testing"

	"github.com/tartanml/tartan/tile"
)

// TestFactorSum checks that factors constant along a sum leave it: the sums
// Σ_i a[i,c], Σ_i −(a[i,c]·g[c])/s[c] and Σ_i a[i,c]·b[i,c]·g[c] compile to
// two reductions (Σ a and Σ a·b), with the factors applied to their small
// results, and agree with the reference executor. A factor that varies along
// the sum (b) stays inside it.
func TestFactorSum(t *testing.T) {
	g := tile.NewGraph("factor")
	a := g.Input("a", tile.Float32, s(6, 5, 4))
	b := g.Input("b", tile.Float32, s(6, 5, 4))
	gam := g.Input("g", tile.Float32, s(4))
	sig := g.Input("s", tile.Float32, s(4))
	sum := func(x *tile.Tensor) *tile.Tensor {
		return contract(g, tile.Sum, tile.CombNone, s(4), "c", []tile.Operand{opd(x, "i, j, c")})
	}
	gb, sb := g.BroadcastTo(gam, a.Shape()), g.BroadcastTo(sig, a.Shape())
	g.SetOutput("plain", sum(a))
	g.SetOutput("scaled", sum(g.Div(g.Neg(g.Mul(a, gb)), sb)))
	g.SetOutput("product", sum(g.Mul(g.Mul(a, b), gb)))
	g.SetOutput("product2", sum(g.Mul(a, b)))
	p := checkAgainstRef(t, g, testTarget, 3, 3, 1, 1e-5)
	reductions := 0
	for _, k := range p.Kernels {
		if len(k.Reduce) > 0 {
			reductions++
		}
	}
	if reductions != 2 {
		t.Errorf("%d reduction kernels, want 2 (Σ a and Σ a·b):\n%s", reductions, p)
	}
}

// TestSmallChainStored checks the fusion rule for arithmetic on a small
// tensor that a larger one reads through a broadcast: the chain gets a
// kernel of its own (computed once per channel) instead of being inlined
// into the large kernel (once per pixel), and a single operation stays
// inlined.
func TestSmallChainStored(t *testing.T) {
	g := tile.NewGraph("chain")
	x := g.Input("x", tile.Float32, s(16, 8))
	c := g.Input("c", tile.Float32, s(8))
	chain := g.Add(g.Mul(g.Exp(c), g.ScalarLike(c, 2)), g.ScalarLike(c, 1))
	g.SetOutput("y", g.Mul(x, chain))
	g.SetOutput("z", g.Mul(x, g.Neg(c)))
	p := checkAgainstRef(t, g, testTarget, 3, 3, 1, 1e-6)
	small := 0
	for _, k := range p.Kernels {
		if p.Buffers[k.Out].Size() == 8 {
			small++
		}
	}
	if small != 1 || len(p.Kernels) != 3 {
		t.Errorf("%d kernels, %d of them per channel; want 3 and 1 (the chain):\n%s", len(p.Kernels), small, p)
	}
}
