package spirv

import (
	"maps"
	"math"
	"math/rand/v2"
	"slices"
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
	// Inputs in name order, so that buffer numbers (and the golden
	// disassembly) do not depend on map iteration.
	for _, name := range slices.Sorted(maps.Keys(c.shapes)) {
		ops[name] = g.Input(name, tile.Float32, c.shapes[name])
	}
	o := tile.ParseContraction(g, c.src, ops, c.sizes)
	if c.epilogue {
		o = op.ReLU(g, g.Add(o, g.ScalarLike(o, 0.25)))
	}
	g.SetOutput("o", o)
	return compileProduct(t, g, seed)
}

// compileProduct compiles g for the Vulkan backend and returns its
// program, the index of its last kernel scheduled "gemm" (-1 when none)
// and random inputs by buffer id.
func compileProduct(t *testing.T, g *tile.Graph, seed uint64) (*kir.Program, int, map[int][]float64) {
	t.Helper()
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

// coopTarget is a device with cooperative matrices of shape s in
// sub-groups of sub invocations and NVIDIA's 48 KiB of shared memory.
func coopTarget(s CoopShape, sub int) Target {
	t := full
	t.Coop, t.SubgroupSize, t.SharedBytes = s, sub, 49152
	return t
}

// TestInterpretedCoopProducts runs the product cases on cooperative
// matrices through the SPIR-V interpreter. With the operands rounded to
// float16 first, kir.Interpret must agree to float32 rounding; with the
// float32 operands, within float16 input rounding (1e-2 relative to the
// output's root mean square).
func TestInterpretedCoopProducts(t *testing.T) {
	targets := []struct {
		name string
		t    Target
	}{
		{"16x16x16-sub32", coopTarget(CoopShape{M: 16, N: 16, K: 16}, 32)},
		{"16x8x16-sub32", coopTarget(CoopShape{M: 16, N: 8, K: 16}, 32)},
		{"16x16x16-sub64", coopTarget(CoopShape{M: 16, N: 16, K: 16}, 64)},
	}
	for ti, tg := range targets {
		for ci, c := range productCases {
			if ti > 0 && ci%3 != ti {
				continue // the other shapes on a few cases
			}
			t.Run(tg.name+"/"+c.name, func(t *testing.T) {
				p, gemm, inputs := c.build(t, 2)
				k, err := Emit(p, gemm, tg.t)
				if err != nil {
					t.Fatal(err)
				}
				if !hasOp(k.Words, opCoopMatrixMulAdd) {
					t.Fatalf("the product does not run on cooperative matrices")
				}
				got, err := runProgram(p, tg.t, inputs)
				if err != nil {
					t.Fatal(err)
				}
				rounded := map[int][]float64{}
				for id, x := range inputs {
					r := make([]float64, len(x))
					for i, v := range x {
						r[i] = halfValue(halfBits(v, tg.t.Coop.BFloat16), tg.t.Coop.BFloat16)
					}
					rounded[id] = r
				}
				for _, ref := range []struct {
					in    map[int][]float64
					exact bool
				}{{rounded, true}, {inputs, false}} {
					want := make([][]float64, len(p.Buffers))
					for id, x := range ref.in {
						want[id] = append([]float64(nil), x...)
					}
					if err := kir.Interpret(p, want); err != nil {
						t.Fatal(err)
					}
					o := p.Outputs[0].Buffer
					if ref.exact {
						if err := closeTo(tile.Float32, got[o], want[o]); err != nil {
							t.Errorf("against float16-rounded operands: %v", err)
						}
						continue
					}
					rms := 0.0
					for _, w := range want[o] {
						rms += w * w
					}
					rms = math.Sqrt(rms / float64(len(want[o])))
					for i, w := range want[o] {
						if math.Abs(got[o][i]-w) > 1e-2*max(math.Abs(w), rms) {
							t.Fatalf("element %d: got %v, want %v (float32 operands)", i, got[o][i], w)
						}
					}
				}
			})
		}
	}
}

// hasOp reports whether a module has an instruction of opcode op.
func hasOp(words []uint32, op uint32) bool {
	for w := words[5:]; len(w) > 0; w = w[w[0]>>16:] {
		if w[0]&0xffff == op {
			return true
		}
	}
	return false
}
