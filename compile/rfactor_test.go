package compile

import (
	"strings"
	"testing"

	"github.com/tartanml/tartan/grad"
	"github.com/tartanml/tartan/kir"
	"github.com/tartanml/tartan/op"
	"github.com/tartanml/tartan/tile"
)

// vulkanTarget is a work-item target whose products cannot split a sum.
var vulkanTarget = Target{Backend: "vulkan", ComputeUnits: 1, MaxWorkGroup: 1024}

// convWeightGrad builds the weight gradient of a same-padded convolution of
// x [n, h, h, ci] with a [k, k, ci, co] kernel as output "dw".
func convWeightGrad(g *tile.Graph, n, h, ci, co, k int) {
	x := g.Input("x", f32, s(n, h, h, ci))
	w := g.Input("w", f32, s(k, k, ci, co))
	conv := op.Conv2D(g, x, w, op.ConvOptions{Padding: op.Same})
	gs, err := grad.Grad(g, op.Sum(g, g.Mul(conv, g.Input("r", f32, conv.Shape())), nil, false), w)
	if err != nil {
		panic(err)
	}
	g.SetOutput("dw", gs[0])
}

// splitOf returns the kernel that writes output name and, when it is the
// combine of a split sum, the partial product before it.
func splitOf(t *testing.T, p *kir.Program, name string) (combine, part *kir.Kernel) {
	t.Helper()
	for _, o := range p.Outputs {
		if o.Name != name {
			continue
		}
		for i, k := range p.Kernels {
			if k.Out == o.Buffer {
				if strings.HasSuffix(k.Name, "_combine") && i > 0 {
					return k, p.Kernels[i-1]
				}
				return k, nil
			}
		}
	}
	t.Fatalf("no kernel writes %q", name)
	return nil, nil
}

// checkSplit checks that combine sums the parts of part in order into the
// output: one reduction loop over the leading dimension of part's Temp
// buffer, which part writes as a matrix product.
func checkSplit(t *testing.T, p *kir.Program, combine, part *kir.Kernel) {
	t.Helper()
	if part == nil {
		t.Fatalf("%s is not split:\n%v", combine.Name, p)
	}
	scratch := p.Buffers[part.Out]
	if part.Schedule.Strategy != "gemm" || scratch.Kind != kir.Temp {
		t.Errorf("partial %s is scheduled %q into a %s buffer", part.Name, part.Schedule.Strategy, scratch.Kind)
	}
	if len(combine.Reduce) != 1 || combine.Reduce[0].Lo != 0 || combine.Reduce[0].Hi != scratch.Shape[0]-1 ||
		combine.Agg != tile.Sum || combine.Body.Op != kir.Load || combine.Body.Buf != part.Out {
		t.Errorf("combine %s does not sum the %d parts of b%d:\n%v", combine.Name, scratch.Shape[0], part.Out, combine)
	}
	for i, b := range p.Buffers {
		if i != scratch.ID && b.Slot == scratch.Slot {
			t.Errorf("scratch b%d shares slot %d with b%d", scratch.ID, scratch.Slot, i)
		}
	}
}

// TestRFactorSplitsLongSums checks that on a target without SplitK the
// showcase CNN's conv2 weight gradient (2×2×64×32 outputs over 64×14×14
// points) becomes a partial matrix product over parts of the sum and a
// combine kernel, with the split in the why line, and that on the CPU and
// on OpenCL (SplitK) it stays one matrix product.
func TestRFactorSplitsLongSums(t *testing.T) {
	g := tile.NewGraph("showcase_dw")
	convWeightGrad(g, 64, 14, 64, 32, 2)
	for _, tgt := range []Target{vulkanTarget, testTarget, {Backend: "opencl", ComputeUnits: 132, MaxWorkGroup: 1024, SplitK: true}} {
		p, st, err := compileGraph(g, tgt)
		if err != nil {
			t.Fatal(err)
		}
		combine, part := splitOf(t, p, "dw")
		if tgt.Backend != "vulkan" {
			if part != nil || combine.Schedule.Strategy != "gemm" {
				t.Errorf("%s: dw is written by %s (%s), want one matrix product", tgt.Backend, combine.Name, combine.Schedule.Strategy)
			}
			continue
		}
		checkSplit(t, p, combine, part)
		if nb, _, _, kk := part.Schedule.GEMM.Extents(part); nb < 8 || kk < rfactorMinPart || kk*nb < 64*14*14 {
			t.Errorf("partial product of %d parts of %d points", nb, kk)
		}
		found := false
		for _, w := range st.why {
			found = found || strings.HasPrefix(w, part.Name+": rfactor: ") && strings.Contains(w, "gemm: ")
		}
		if !found {
			t.Errorf("no rfactor why line for %s: %q", part.Name, st.why)
		}
	}
}

// TestRFactorMatchesReference checks split sums against the reference
// executor: a padded convolution's weight gradient, a long product whose
// sum the part length does not divide (a condition bounds the last part),
// and a dense layer followed by a ReLU, whose bias the combine adds as its
// epilogue.
func TestRFactorMatchesReference(t *testing.T) {
	t.Run("conv_dw", func(t *testing.T) {
		g := tile.NewGraph("conv_dw")
		convWeightGrad(g, 8, 10, 8, 16, 3)
		p := checkAgainstRef(t, g, vulkanTarget, 3, 3, 1, 1e-4)
		combine, part := splitOf(t, p, "dw")
		checkSplit(t, p, combine, part)
	})
	t.Run("uneven", func(t *testing.T) {
		g := tile.NewGraph("uneven")
		a, b := g.Input("a", f32, s(24, 3001)), g.Input("b", f32, s(3001, 20))
		g.SetOutput("y", contract(g, tile.Sum, tile.CombMul, s(24, 20), "i, j", []tile.Operand{opd(a, "i, k"), opd(b, "k, j")}))
		p := checkAgainstRef(t, g, vulkanTarget, 4, 3, 1, 1e-4)
		combine, part := splitOf(t, p, "y")
		checkSplit(t, p, combine, part)
		if p.Buffers[part.Out].Shape[0]*(part.Reduce[0].Hi+1) == 3001 || len(part.Where) != 1 {
			t.Errorf("the parts divide the sum, or the last part has no condition:\n%v", part)
		}
	})
	t.Run("dense_relu", func(t *testing.T) {
		g := tile.NewGraph("dense_relu")
		x, w, b := g.Input("x", f32, s(16, 2000)), g.Input("w", f32, s(2000, 24)), g.Input("b", f32, s(24))
		g.SetOutput("y", op.ReLU(g, op.Dense(g, x, w, b)))
		p := checkAgainstRef(t, g, vulkanTarget, 5, 3, 1, 1e-4)
		// The ReLU is a kernel of its own, after the combine.
		var combine, part *kir.Kernel
		for i, k := range p.Kernels {
			if strings.HasSuffix(k.Name, "_combine") {
				combine, part = k, p.Kernels[i-1]
			}
		}
		if combine == nil {
			t.Fatalf("no combine kernel:\n%v", p)
		}
		checkSplit(t, p, combine, part)
		if combine.Epilogue == nil || part.Epilogue != nil {
			t.Errorf("the epilogue is not the combine's:\n%v\n%v", part, combine)
		}
	})
}
