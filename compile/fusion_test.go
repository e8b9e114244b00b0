package compile

import (
	"strings"
	"testing"

	"github.com/tartanml/tartan/kir"
	"github.com/tartanml/tartan/tile"
)

// loadsOf returns every load in a kernel's body and epilogue.
func loadsOf(k *kir.Kernel) []*kir.Expr { return loads(k.Epilogue, loads(k.Body, nil)) }

func countApply(e *kir.Expr, fn tile.Fn) int {
	if e == nil {
		return 0
	}
	n := 0
	if e.Op == kir.Apply && e.Fn == fn {
		n++
	}
	for _, a := range e.Args {
		n += countApply(a, fn)
	}
	return n
}

func TestFusion(t *testing.T) {
	cases := []struct {
		name    string
		build   func(g *tile.Graph)
		kernels int
		check   func(t *testing.T, p *kir.Program)
	}{
		{"matmul_bias_relu_is_one_gemm_kernel", func(g *tile.Graph) {
			x, w, b := g.Input("x", f64, s(3, 4)), g.Input("w", f64, s(4, 5)), g.Input("b", f64, s(5))
			mm := contract(g, tile.Sum, tile.CombMul, s(3, 5), "i, j", []tile.Operand{opd(x, "i, k"), opd(w, "k, j")})
			g.SetOutput("y", g.Maximum(g.Add(mm, b), g.Scalar(0, f64)))
		}, 1, func(t *testing.T, p *kir.Program) {
			k := p.Kernels[0]
			if k.Schedule.Strategy != "gemm" || k.Epilogue == nil || countApply(k.Epilogue, tile.Maximum) != 1 {
				t.Errorf("want a gemm kernel with a max epilogue:\n%s", k)
			}
		}},
		{"conv_bias_relu_is_one_kernel", func(g *tile.Graph) {
			b := g.Input("b", f64, s(4))
			g.SetOutput("y", g.Maximum(g.Add(conv2dForward(g, 1), b), g.Scalar(0, f64)))
		}, 1, func(t *testing.T, p *kir.Program) {
			if k := p.Kernels[0]; k.Epilogue == nil || len(k.Reduce) != 3 {
				t.Errorf("want the conv loops with an epilogue:\n%s", k)
			}
		}},
		{"conv_bias_select_relu_is_one_kernel", func(g *tile.Graph) {
			// ReLU as op.ReLU writes it: the biased value feeds both the
			// comparison and the select, a diamond the chain goes through.
			b := g.Input("b", f64, s(4))
			y := g.Add(conv2dForward(g, 1), b)
			zero := g.Scalar(0, f64)
			g.SetOutput("y", g.Select(g.Elementwise(tile.Le, y, zero), zero, y))
		}, 1, func(t *testing.T, p *kir.Program) {
			if k := p.Kernels[0]; k.Epilogue == nil || len(k.Reduce) != 3 || countApply(k.Epilogue, tile.Select) != 1 {
				t.Errorf("want the conv loops with the select in the epilogue:\n%s", k)
			}
		}},
		{"two_chains_joining_fuse_one", func(g *tile.Graph) {
			// A residual block's end: relu(a·s + b + c·t) of two
			// products; one hosts the chain, the other is stored.
			x, w, v := g.Input("x", f64, s(3, 4)), g.Input("w", f64, s(4, 5)), g.Input("v", f64, s(4, 5))
			sc, b := g.Input("s", f64, s(5)), g.Input("b", f64, s(5))
			a := contract(g, tile.Sum, tile.CombMul, s(3, 5), "i, j", []tile.Operand{opd(x, "i, k"), opd(w, "k, j")})
			c := contract(g, tile.Sum, tile.CombMul, s(3, 5), "i, j", []tile.Operand{opd(x, "i, k"), opd(v, "k, j")})
			y := g.Add(g.Add(g.Mul(a, sc), b), g.Mul(c, sc))
			zero := g.Scalar(0, f64)
			g.SetOutput("y", g.Select(g.Elementwise(tile.Le, y, zero), zero, y))
		}, 2, func(t *testing.T, p *kir.Program) {
			if k := p.Kernels[1]; k.Epilogue == nil || countApply(k.Epilogue, tile.Select) != 1 {
				t.Errorf("want the second product to host the chain:\n%s", p)
			}
		}},
		{"diamond_side_read_elsewhere_is_not_joined", func(g *tile.Graph) {
			// The comparison is an output too: it is computed by a kernel
			// of its own, and the chain ends before the diamond.
			b := g.Input("b", f64, s(4))
			y := g.Add(conv2dForward(g, 1), b)
			zero := g.Scalar(0, f64)
			le := g.Elementwise(tile.Le, y, zero)
			g.SetOutput("y", g.Select(le, zero, y))
			g.SetOutput("mask", le)
		}, 3, nil},
		{"elementwise_chain_of_five_is_one_kernel", func(g *tile.Graph) {
			x := g.Input("x", f64, s(4, 8))
			y := g.Neg(g.Tanh(g.Add(g.Mul(g.Exp(x), g.Scalar(2, f64)), g.Scalar(1, f64))))
			g.SetOutput("y", y)
		}, 1, func(t *testing.T, p *kir.Program) {
			if n := len(loadsOf(p.Kernels[0])); n != 1 {
				t.Errorf("want one load of x, got %d:\n%s", n, p.Kernels[0])
			}
		}},
		{"transpose_feeding_matmul_is_folded_into_the_load", func(g *tile.Graph) {
			a, b := g.Input("a", f64, s(4, 3)), g.Input("b", f64, s(4, 5))
			at := g.Transpose(a, []int{1, 0})
			g.SetOutput("y", contract(g, tile.Sum, tile.CombMul, s(3, 5), "i, j", []tile.Operand{opd(at, "i, k"), opd(b, "k, j")}))
		}, 1, func(t *testing.T, p *kir.Program) {
			k := p.Kernels[0]
			if k.Schedule.Strategy != "gemm" || k.Schedule.GEMM.A.Buf != 0 {
				t.Errorf("want a gemm reading a directly:\n%s", k)
			}
			if got := k.Schedule.GEMM.A.Index[0].String(); got != "v2" {
				t.Errorf("a is read at [%s, …], want [v2, v0] (k, i)", got)
			}
		}},
		{"reduction_fuses_with_its_producers", func(g *tile.Graph) {
			x := g.Input("x", f64, s(4, 6))
			e := g.Mul(g.Exp(x), g.Scalar(2, f64))
			g.SetOutput("y", contract(g, tile.Sum, tile.CombNone, s(4), "i", []tile.Operand{opd(e, "i, j")}))
		}, 1, nil},
		{"duplicate_broadcasts_merge", func(g *tile.Graph) {
			x, b := g.Input("x", f64, s(3, 4)), g.Input("b", f64, s(4))
			u := g.Mul(x, g.BroadcastTo(b, s(3, 4)))
			v := g.Mul(x, g.BroadcastTo(b, s(3, 4)))
			g.SetOutput("y", g.Add(u, v))
		}, 1, func(t *testing.T, p *kir.Program) {
			// u and v are one node after CSE: both operands of the add.
			if n := countApply(p.Kernels[0].Body, tile.Mul); n != 2 {
				t.Errorf("want the merged product inlined at both uses, %d products:\n%s", n, p.Kernels[0])
			}
		}},
		{"expensive_shared_node_is_stored", func(g *tile.Graph) {
			x := g.Input("x", f64, s(4, 8))
			e := g.Exp(g.Tanh(x))
			g.SetOutput("a", g.Mul(e, g.Scalar(2, f64)))
			g.SetOutput("b", g.Add(e, g.Scalar(1, f64)))
		}, 3, nil},
		{"cheap_shared_node_is_recomputed", func(g *tile.Graph) {
			x := g.Input("x", f64, s(4, 8))
			e := g.Mul(x, g.Scalar(3, f64))
			g.SetOutput("a", g.Mul(e, g.Scalar(2, f64)))
			g.SetOutput("b", g.Add(e, g.Scalar(1, f64)))
		}, 2, nil},
		{"elementwise_producer_of_matmul_is_stored", func(g *tile.Graph) {
			a, b := g.Input("a", f64, s(3, 4)), g.Input("b", f64, s(4, 5))
			g.SetOutput("y", contract(g, tile.Sum, tile.CombMul, s(3, 5), "i, j", []tile.Operand{opd(g.Exp(a), "i, k"), opd(b, "k, j")}))
		}, 2, func(t *testing.T, p *kir.Program) {
			if p.Kernels[1].Schedule.Strategy != "gemm" {
				t.Errorf("the matmul should stay a gemm:\n%s", p)
			}
		}},
		{"reshape_of_stored_temp_keeps_gemm", func(g *tile.Graph) {
			x := g.Input("x", f64, s(2, 3, 2, 2))
			w := g.Input("w", f64, s(12, 3))
			h := g.Reshape(g.Exp(x), s(2, 12))
			g.SetOutput("y", contract(g, tile.Sum, tile.CombMul, s(2, 3), "i, j", []tile.Operand{opd(h, "i, k"), opd(w, "k, j")}))
		}, 2, func(t *testing.T, p *kir.Program) {
			if p.Kernels[1].Schedule.Strategy != "gemm" {
				t.Errorf("a reshaped operand should still be a gemm:\n%s", p)
			}
		}},
		{"repeated_squaring_stays_small", func(g *tile.Graph) {
			y := g.Input("x", f64, s(5))
			for range 16 {
				y = g.Mul(y, y)
			}
			g.SetOutput("y", y)
		}, 6, func(t *testing.T, p *kir.Program) {
			muls := 0
			for _, k := range p.Kernels {
				muls += countApply(k.Body, tile.Mul)
			}
			if muls > 40 {
				t.Errorf("%d multiplications for 16 squarings:\n%s", muls, p)
			}
		}},
		{"adam_updates_in_place", buildAdam, 4, func(t *testing.T, p *kir.Program) {
			for _, k := range p.Kernels {
				if strings.Contains(k.Source, "copy") {
					t.Errorf("no copies expected:\n%s", p)
				}
			}
		}},
		{"swap_goes_through_a_temporary", func(g *tile.Graph) {
			a, b := g.Variable("a", f64, s(2, 3)), g.Variable("b", f64, s(2, 3))
			g.Update(a, b)
			g.Update(b, a)
		}, 3, func(t *testing.T, p *kir.Program) {
			temps := 0
			for _, b := range p.Buffers {
				if b.Kind == kir.Temp {
					temps++
				}
			}
			if temps != 1 {
				t.Errorf("want exactly one temporary:\n%s", p)
			}
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			g := tile.NewGraph(c.name)
			c.build(g)
			p := checkAgainstRef(t, g, testTarget, 5, 3, 2, 1e-9)
			if len(p.Kernels) != c.kernels {
				t.Fatalf("%d kernels, want %d:\n%s", len(p.Kernels), c.kernels, p)
			}
			if c.check != nil {
				c.check(t, p)
			}
		})
	}
}

func TestSimplifyStatistics(t *testing.T) {
	g := tile.NewGraph("simplify")
	x := g.Input("x", f64, s(3, 4))
	zero, one := g.Scalar(0, f64), g.Scalar(1, f64)
	y := g.Div(g.Mul(g.Sub(g.Add(x, zero), zero), one), one)
	y = g.Neg(g.Neg(y))
	y = g.Transpose(g.Transpose(y, []int{1, 0}), []int{1, 0})
	y = g.Reshape(g.Reshape(y, s(12)), s(3, 4))
	g.SetOutput("y", g.Exp(y))
	c := g.Constant(&tile.Value{DType: f64, Shape: s(2), Data: []float64{1, 2}})
	g.SetOutput("c", g.Mul(g.Add(c, c), c))
	g.SetOutput("dead_free", x)
	_ = g.Exp(g.Exp(x)) // unused
	p, st, err := compileGraph(g, testTarget)
	if err != nil {
		t.Fatal(err)
	}
	// x → exp only: everything else simplifies away; c folds to [2, 8].
	if st.nodesOut != 3 {
		t.Errorf("%d nodes after simplify, want 3 (x, exp, folded constant)", st.nodesOut)
	}
	if st.folded < 2 || st.identities < 6 {
		t.Errorf("folded %d nodes and applied %d identities, want at least 2 and 6", st.folded, st.identities)
	}
	var cst *kir.Buffer
	for _, b := range p.Buffers {
		if b.Kind == kir.Constant {
			cst = b
		}
	}
	if cst == nil || len(cst.Init) != 2 || cst.Init[0] != 2 || cst.Init[1] != 8 {
		t.Errorf("want the folded constant [2, 8]:\n%s", p)
	}
	checkAgainstRef(t, g, testTarget, 1, 3, 1, 1e-12)
}
