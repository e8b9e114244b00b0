package vulkan

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/tartanml/tartan/backend"
	"github.com/tartanml/tartan/backend/reference"
	"github.com/tartanml/tartan/backend/vulkan/spirv"
	"github.com/tartanml/tartan/backend/vulkan/vk"
	"github.com/tartanml/tartan/compile"
	"github.com/tartanml/tartan/op"
	"github.com/tartanml/tartan/tile"
)

// TestProducts runs matrix products of odd sizes (batched, with the
// transposed operands of gradients, interleaved output groups, padded
// operands, padded convolutions and their gradients, a condition on one
// operand, an epilogue) and long reductions into few outputs, and
// compares them with the reference backend. Each case must take the path
// it names: the tiled product (work-groups of 256) or the work-group
// reduction (one work-group of 64 per output point).
func TestProducts(t *testing.T) {
	d := openTest(t)
	cases := []struct {
		name, src string
		shapes    map[string]tile.Shape
		sizes     map[string]int
		local     int // the work-group size of the kernel computing the result
		epilogue  bool
	}{
		{"batched", "C[b, m, n : B, M, N] = +(A[b, m, k] * W[b, k, n])",
			map[string]tile.Shape{"A": {3, 67, 131}, "W": {3, 131, 45}}, map[string]int{"B": 3, "M": 67, "N": 45}, 256, false},
		{"dx", "G[m, k : M, K] = +(D[m, n] * W[k, n])",
			map[string]tile.Shape{"D": {67, 45}, "W": {131, 45}}, map[string]int{"M": 67, "K": 131}, 256, false},
		{"dw", "G[k, n : K, N] = +(X[m, k] * D[m, n])",
			map[string]tile.Shape{"X": {67, 131}, "D": {67, 45}}, map[string]int{"K": 131, "N": 45}, 256, true},
		{"interleaved", "O[i, h, d : I, H, D] = +(P[h, i, j] * V[j, h, d])",
			map[string]tile.Shape{"P": {4, 70, 33}, "V": {33, 4, 9}}, map[string]int{"I": 70, "H": 4, "D": 9}, 256, true},
		// Padded convolutions and their gradients: guarded operands and
		// conditions on one operand's loops, in blocks of 16 or 32 columns
		// (and 32 rows for the band).
		{"padded-conv", "O[n, y, x, f : N, H, W, F] = +(X[n, y + i - 1, x + j - 1, c] * K[i, j, c, f])",
			map[string]tile.Shape{"X": {2, 9, 7, 16}, "K": {3, 3, 16, 16}}, map[string]int{"N": 2, "H": 9, "W": 7, "F": 16}, 256, true},
		{"padded-conv-dx", "O[n, y, x, c : N, H, W, C] = +(D[n, y - i + 1, x - j + 1, f] * K[i, j, c, f])",
			map[string]tile.Shape{"D": {2, 9, 7, 16}, "K": {3, 3, 16, 16}}, map[string]int{"N": 2, "H": 9, "W": 7, "C": 16}, 256, false},
		{"padded-conv-dw", "O[i, j, c, f : I, J, C, F] = +(X[n, y + i - 1, x + j - 1, c] * D[n, y, x, f])",
			map[string]tile.Shape{"X": {2, 9, 7, 40}, "D": {2, 9, 7, 24}}, map[string]int{"I": 3, "J": 3, "C": 40, "F": 24}, 256, false},
		{"band", "C[m, n : M, N] = +(A[m, k] * B[k, n]), m + k < 40",
			map[string]tile.Shape{"A": {20, 45}, "B": {45, 70}}, map[string]int{"M": 20, "N": 70}, 256, false},
		{"column-sums", "S[k : K] = +(X[i, k])",
			map[string]tile.Shape{"X": {5000, 3}}, map[string]int{"K": 3}, 64, false},
		{"row-max", "S[i : I] = >(X[i, k])",
			map[string]tile.Shape{"X": {7, 3001}}, map[string]int{"I": 7}, 64, true},
		{"window-sum", "S[c : C] = +(X[n, y + j, c]), j < 3",
			map[string]tile.Shape{"X": {40, 30, 5}}, map[string]int{"C": 5}, 64, false},
	}
	r := rand.New(rand.NewPCG(1, 2))
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			g := tile.NewGraph(c.name)
			ops := map[string]*tile.Tensor{}
			inputs := map[string][]float32{}
			for name, sh := range c.shapes {
				ops[name] = g.Input(name, tile.Float32, sh)
				v := make([]float32, sh.Size())
				for i := range v {
					v[i] = float32(r.NormFloat64())
				}
				inputs[name] = v
			}
			o := tile.ParseContraction(g, c.src, ops, c.sizes)
			if c.epilogue {
				o = op.ReLU(g, g.Add(o, g.ScalarLike(o, 0.25)))
			}
			g.SetOutput("o", o)
			if err := g.Err(); err != nil {
				t.Fatal(err)
			}
			p, err := compile.Compile(g, d.Target())
			if err != nil {
				t.Fatal(err)
			}
			found := false
			for i := range p.Kernels {
				k, err := spirv.Emit(p, i, d.SPIRVTarget())
				if err != nil {
					t.Fatal(err)
				}
				found = found || k.LocalSize[0] == c.local && (c.local == 256 || k.Groups[0]*k.Groups[1] >= p.Kernels[i].Shape.Size())
			}
			if !found {
				t.Fatalf("no kernel in work-groups of %d:\n%v", c.local, p)
			}
			got := run(t, d, g, inputs)
			want := run(t, reference.New(), g, inputs)
			for i := range want {
				if diff := math.Abs(float64(got[i] - want[i])); diff > 1e-4*(1+math.Abs(float64(want[i]))) {
					t.Fatalf("o[%d] = %v, want %v", i, got[i], want[i])
				}
			}
			again := run(t, d, g, inputs)
			for i := range got {
				if math.Float32bits(got[i]) != math.Float32bits(again[i]) {
					t.Fatalf("o[%d] = %v, then %v: results differ between runs", i, got[i], again[i])
				}
			}
		})
	}
}

// run compiles g on d, runs it once on the inputs and returns its output.
func run(t *testing.T, d backend.Device, g *tile.Graph, inputs map[string][]float32) []float32 {
	t.Helper()
	x, err := d.Compile(g)
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	for name, v := range inputs {
		if err := x.SetInput(name, v); err != nil {
			t.Fatal(err)
		}
	}
	if err := x.Run(); err != nil {
		t.Fatal(err)
	}
	out := make([]float32, g.Outputs()[0].Tensor.Shape().Size())
	if err := x.ReadOutput("o", out); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestSharedPipelines runs two layers that differ only in the buffers
// they touch, and a third of another shape: the two share their pipelines
// (their shaders differ only in names), the third has its own, and every
// output is kir.Interpret's.
func TestSharedPipelines(t *testing.T) {
	d := openTest(t)
	f := tile.Float32
	g := tile.NewGraph("layers")
	x := g.Input("x", f, tile.Shape{20, 30})
	for i, n := range []int{30, 30, 17} {
		w := g.Input(fmt.Sprintf("w%d", i), f, tile.Shape{30, n})
		g.SetOutput(fmt.Sprintf("o%d", i), op.ReLU(g, op.MatMul(g, x, w)))
	}
	p, err := compile.Compile(g, d.Target())
	if err != nil {
		t.Fatal(err)
	}
	e, err := d.Load(p)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	// Kernels 0 and 1 (the product and its ReLU) of each layer.
	pl := func(i int) vk.Pipeline { return e.pipes[i].pipeline }
	if len(e.pipes) != 6 || len(e.pipelines) != 4 || pl(0) != pl(2) || pl(1) != pl(3) || pl(4) == pl(0) || pl(5) == pl(1) ||
		slices.Equal(e.pipes[0].k.Words, e.pipes[2].k.Words) {
		t.Fatalf("%d kernels on %d pipelines:\n%v", len(e.pipes), len(e.pipelines), p)
	}
	checkRun(t, "layers", p, e, randomInputs(p))
}
