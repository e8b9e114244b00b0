package spirv

import (
	"math/rand/v2"
	"testing"

	"github.com/tartanml/tartan/compile"
	"github.com/tartanml/tartan/kir"
	"github.com/tartanml/tartan/op"
	"github.com/tartanml/tartan/tile"
)

// productCase is a contraction compiled for the Vulkan backend, with
// random inputs.
type productCase struct {
	name, src string
	shapes    map[string]tile.Shape
	sizes     map[string]int
	epilogue  bool // relu(o + 0.25)
}

// productCases are products of awkward sizes: plain, batched, with
// transposed operands, interleaved output groups, padded convolutions
// (guarded operands), a condition on one operand, and epilogues.
var productCases = []productCase{
	{"plain", "C[m, n : M, N] = +(A[m, k] * B[k, n])",
		map[string]tile.Shape{"A": {37, 70}, "B": {70, 150}}, map[string]int{"M": 37, "N": 150}, false},
	{"batched", "C[b, m, n : B, M, N] = +(A[b, m, k] * W[b, k, n])",
		map[string]tile.Shape{"A": {2, 67, 45}, "W": {2, 45, 33}}, map[string]int{"B": 2, "M": 67, "N": 33}, false},
	{"dx", "G[m, k : M, K] = +(D[m, n] * W[k, n])",
		map[string]tile.Shape{"D": {67, 45}, "W": {131, 45}}, map[string]int{"M": 67, "K": 131}, true},
	{"dw", "G[k, n : K, N] = +(X[m, k] * D[m, n])",
		map[string]tile.Shape{"X": {67, 50}, "D": {67, 45}}, map[string]int{"K": 50, "N": 45}, false},
	{"interleaved", "O[i, h, d : I, H, D] = +(P[h, i, j] * V[j, h, d])",
		map[string]tile.Shape{"P": {3, 40, 33}, "V": {33, 3, 9}}, map[string]int{"I": 40, "H": 3, "D": 9}, true},
	{"padded-conv", "O[n, y, x, f : N, H, W, F] = +(X[n, y + i - 1, x + j - 1, c] * K[i, j, c, f])",
		map[string]tile.Shape{"X": {2, 9, 7, 16}, "K": {3, 3, 16, 16}}, map[string]int{"N": 2, "H": 9, "W": 7, "F": 16}, true},
	{"padded-conv-dx", "O[n, y, x, c : N, H, W, C] = +(D[n, y - i + 1, x - j + 1, f] * K[i, j, c, f])",
		map[string]tile.Shape{"D": {1, 9, 7, 16}, "K": {3, 3, 24, 16}}, map[string]int{"N": 1, "H": 9, "W": 7, "C": 24}, false},
	{"band", "C[m, n : M, N] = +(A[m, k] * B[k, n]), m + k < 40",
		map[string]tile.Shape{"A": {20, 45}, "B": {45, 70}}, map[string]int{"M": 20, "N": 70}, false},
}

// build compiles the case and returns its program, the index of its
// tiled-product kernel (-1 when none is scheduled "gemm") and random
// inputs by buffer id.
func (c productCase) build(t *testing.T, seed uint64) (*kir.Program, int, map[int][]float64) {
	t.Helper()
	g := tile.NewGraph(c.name)
	ops := map[string]*tile.Tensor{}
	for name, sh := range c.shapes {
		ops[name] = g.Input(name, tile.Float32, sh)
	}
	o := tile.ParseContraction(g, c.src, ops, c.sizes)
	if c.epilogue {
		o = op.ReLU(g, g.Add(o, g.ScalarLike(o, 0.25)))
	}
	g.SetOutput("o", o)
	if err := g.Err(); err != nil {
		t.Fatal(err)
	}
	p, err := compile.Compile(g, compile.Target{Backend: "vulkan", ComputeUnits: 8, MaxWorkGroup: 1024, LocalMemBytes: 49152})
	if err != nil {
		t.Fatal(err)
	}
	gemm := -1
	for i, k := range p.Kernels {
		if k.Schedule.Strategy == "gemm" && k.Schedule.GEMM != nil {
			gemm = i
		}
	}
	r := rand.New(rand.NewPCG(seed, 7))
	inputs := map[int][]float64{}
	for _, in := range p.Inputs {
		v := make([]float64, p.Buffers[in.Buffer].Size())
		for i := range v {
			v[i] = float64(float32(r.NormFloat64()))
		}
		inputs[in.Buffer] = v
	}
	return p, gemm, inputs
}

// TestInterpretedProducts runs the product cases' kernels, the products
// as tiled float32 products, on the SPIR-V interpreter and compares them
// with kir.Interpret.
func TestInterpretedProducts(t *testing.T) {
	for _, c := range productCases {
		t.Run(c.name, func(t *testing.T) {
			p, gemm, inputs := c.build(t, 1)
			if gemm < 0 {
				t.Fatalf("no kernel is scheduled gemm:\n%v", p)
			}
			if k, err := Emit(p, gemm, full); err != nil || k.LocalSize[0] != gemmThreads {
				t.Fatalf("the product is not tiled: %+v, %v", k, err)
			}
			checkProgram(t, p, full, inputs)
		})
	}
}
