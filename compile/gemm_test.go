package compile

import (
	"strings"
	"testing"

	"github.com/tartanml/tartan/grad"
	"github.com/tartanml/tartan/op"
	"github.com/tartanml/tartan/tile"
)

// TestPaddedProductsScheduleGEMM checks that the schedule maps a padded
// convolution, both its gradients and a product with a condition on one
// operand onto matrix products for every backend, with each condition
// given to the operand whose loops it reads and the padded operand
// guarded; that a condition on both operands' loops and, on GPU targets, a
// padded product too small for tiles stay loops, and on the CPU a depthwise
// convolution (a batch along the output's contiguous loop) too, with the
// reason in the why line; and that without SplitK a weight gradient of few
// outputs over a long sum is split into a partial product and a combine.
func TestPaddedProductsScheduleGEMM(t *testing.T) {
	g := tile.NewGraph("padded")
	x := g.Input("x", f32, s(2, 6, 7, 16))
	w := g.Input("w", f32, s(3, 3, 16, 16))
	conv := tile.ParseContraction(g, "O[n, y, x, f : 2, 6, 7, 16] = +(X[n, y + i - 1, x + j - 1, c] * W[i, j, c, f])",
		map[string]*tile.Tensor{"X": x, "W": w}, nil)
	a, b := g.Input("a", f32, s(37, 45)), g.Input("b", f32, s(45, 33))
	band := tile.ParseContraction(g, "O[i, j : 37, 33] = +(A[i, k] * B[k, j]), i + k < 50", map[string]*tile.Tensor{"A": a, "B": b}, nil)
	mask := tile.ParseContraction(g, "O[i, j : 37, 33] = +(A[i, k] * B[k, j]), i + j < 50", map[string]*tile.Tensor{"A": a, "B": b}, nil)
	small := tile.ParseContraction(g, "O[n, y, x, f : 2, 6, 7, 2] = +(X[n, y + i - 1, x + j - 1, c] * W[i, j, c, f])",
		map[string]*tile.Tensor{"X": g.Input("x2", f32, s(2, 6, 7, 2)), "W": g.Input("w2", f32, s(3, 3, 2, 2))}, nil)
	loss := op.Sum(g, g.Mul(conv, g.Input("r", f32, s(2, 6, 7, 16))), nil, false)
	gs, err := grad.Grad(g, loss, x, w)
	if err != nil {
		t.Fatal(err)
	}
	// A weight gradient of 27×16 outputs, each summing 4·16·16 points.
	lx, lw := g.Input("lx", f32, s(4, 16, 16, 3)), g.Input("lw", f32, s(3, 3, 3, 16))
	lconv := tile.ParseContraction(g, "O[n, y, x, f : 4, 16, 16, 16] = +(X[n, y + i - 1, x + j - 1, c] * W[i, j, c, f])",
		map[string]*tile.Tensor{"X": lx, "W": lw}, nil)
	lgs, err := grad.Grad(g, op.Sum(g, g.Mul(lconv, g.Input("lr", f32, s(4, 16, 16, 16))), nil, false), lw)
	if err != nil {
		t.Fatal(err)
	}
	// A depthwise convolution and its kernel gradient: batches of
	// matrix-vector products along the output's channel.
	dx, dk := g.Input("dx", f32, s(2, 6, 7, 16)), g.Input("dk", f32, s(3, 3, 16))
	dconv := tile.ParseContraction(g, "O[n, y, x, c : 2, 6, 7, 16] = +(X[n, y + i - 1, x + j - 1, c] * K[i, j, c])",
		map[string]*tile.Tensor{"X": dx, "K": dk}, nil)
	dgs, err := grad.Grad(g, op.Sum(g, g.Mul(dconv, g.Input("dr", f32, s(2, 6, 7, 16))), nil, false), dk)
	if err != nil {
		t.Fatal(err)
	}
	g.SetOutput("depthwise", dconv)
	g.SetOutput("depthwise_dk", dgs[0])
	g.SetOutput("longdw", lgs[0])
	g.SetOutput("conv", conv)
	g.SetOutput("dx", gs[0])
	g.SetOutput("dw", gs[1])
	g.SetOutput("band", band)
	g.SetOutput("mask", mask)
	g.SetOutput("small", small)
	for _, tgt := range []Target{testTarget, {Backend: "opencl", ComputeUnits: 132, MaxWorkGroup: 1024, SplitK: true}, {Backend: "vulkan", ComputeUnits: 1, MaxWorkGroup: 1024}} {
		p, st, err := compileGraph(g, tgt)
		if err != nil {
			t.Fatal(err)
		}
		why := st.why
		kernelOf := func(name string) int {
			for _, o := range p.Outputs {
				if o.Name == name {
					for i, k := range p.Kernels {
						if k.Out == o.Buffer {
							return i
						}
					}
				}
			}
			t.Fatalf("%s: no kernel writes %q", tgt.Backend, name)
			return -1
		}
		for _, c := range []struct {
			out        string
			strategy   string
			a, b       int // conditions of A and B
			gA, gB     bool
			reason     string
			gpuOnlyCPU bool // gemm on the CPU, loops on GPU targets
			splitOnly  bool // split in two on GPU targets without SplitK (rfactor)
		}{
			{"conv", "gemm", 2, 0, true, false, "", false, false},
			{"dx", "gemm", 2, 0, true, false, "", false, false},
			{"dw", "gemm", 2, 0, true, false, "", false, false},
			{"band", "gemm", 1, 0, false, false, "", false, false},
			{"mask", "loops", 0, 0, false, false, "reads loops of both operands", false, false},
			{"small", "gemm", 2, 0, true, false, "too small for tiles", true, false},
			{"longdw", "gemm", 2, 0, true, false, "few outputs over a long sum", false, true},
			{"depthwise", "loops", 0, 0, false, false, "batch loop x3 is the output's contiguous loop", false, false},
			{"depthwise_dk", "loops", 0, 0, false, false, "batch loop x2 is the output's contiguous loop", false, false},
		} {
			i := kernelOf(c.out)
			k := p.Kernels[i]
			want := c.strategy
			if c.gpuOnlyCPU && tgt.Backend != "cpu" {
				want = "loops"
			}
			if c.splitOnly && tgt.Backend != "cpu" && !tgt.SplitK {
				// The output's kernel combines the parts; the partial
				// product before it is the matrix product.
				if !strings.HasSuffix(k.Name, "_combine") || k.Schedule.Strategy != "loops" || i == 0 {
					t.Errorf("%s: %s is written by %s (%s), want a combine kernel: %s", tgt.Backend, c.out, k.Name, k.Schedule.Strategy, why[i])
					continue
				}
				i--
				k = p.Kernels[i]
			}
			if strings.HasPrefix(c.out, "depthwise") && tgt.Backend != "cpu" {
				// Products of one column: too small for GPU tiles.
				c.reason = "too small for tiles"
			}
			if k.Schedule.Strategy != want {
				t.Errorf("%s: %s is scheduled %q, want %q: %s\n%v", tgt.Backend, c.out, k.Schedule.Strategy, want, why[i], p)
				continue
			}
			if want == "loops" {
				if !strings.Contains(why[i], c.reason) {
					t.Errorf("%s: %s: why line %q lacks %q", tgt.Backend, c.out, why[i], c.reason)
				}
				continue
			}
			v := k.Schedule.GEMM
			if len(v.CondA) != c.a || len(v.CondB) != c.b || v.GuardA != c.gA || v.GuardB != c.gB {
				t.Errorf("%s: %s: conditions A %v, B %v, guards %v %v; want %d, %d, %v %v: %s", tgt.Backend, c.out,
					v.CondA, v.CondB, v.GuardA, v.GuardB, c.a, c.b, c.gA, c.gB, why[i])
			}
		}
	}
}
