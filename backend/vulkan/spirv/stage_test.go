package spirv

import (
	"strings"
	"testing"

	"github.com/tartanml/tartan/kir"
	"github.com/tartanml/tartan/op"
	"github.com/tartanml/tartan/tile"
)

// convCases are strided and padded convolutions, channels-last and
// channels-first and a gradient, whose image operand is an affine load
// under guards, with a Where condition on one operand: sizes that are not
// multiples of the blocks, reductions (45, 36 and 45 deep) that are not
// multiples of the slices.
var convCases = []productCase{
	{"conv-nhwc-s2", "O[n, y, x, f : N, H, W, F] = +(X[n, 2*y + i - 1, 2*x + j - 1, c] * K[i, j, c, f]), i + j < 4",
		map[string]tile.Shape{"X": {2, 17, 15, 5}, "K": {3, 3, 5, 18}}, map[string]int{"N": 2, "H": 9, "W": 8, "F": 18}, true},
	{"conv-nchw-s2", "O[n, f, y, x : N, F, H, W] = +(X[n, c, 2*y + i - 1, 2*x + j - 1] * K[f, c, i, j]), 2*x + j < 9",
		map[string]tile.Shape{"X": {1, 4, 13, 10}, "K": {17, 4, 3, 3}}, map[string]int{"N": 1, "F": 17, "H": 7, "W": 5}, false},
	{"conv-nhwc-dx", "O[n, y, x, c : N, H, W, C] = +(D[n, y - i + 1, x - j + 1, f] * K[i, j, c, f])",
		map[string]tile.Shape{"D": {2, 9, 7, 5}, "K": {3, 3, 20, 5}}, map[string]int{"N": 2, "H": 9, "W": 7, "C": 20}, false},
}

// coopUnknown reports whether spirv-val failed for not knowing
// SPV_KHR_cooperative_matrix (as SPIRV-Tools 2023.1 does not).
func coopUnknown(err error) bool {
	return strings.Contains(err.Error(), "Invalid capability operand: 6022")
}

// stagedCase is a tiled product of stage_test.go, compiled: its program,
// the index of its tiled product and its inputs by buffer id, and
// whether its operands A and B are staged from their affine forms.
type stagedCase struct {
	name       string
	p          *kir.Program
	gemm       int
	inputs     map[int][]float64
	affA, affB bool
	guards     int // the affine operands' guards
}

// stagedCases compiles the convolution cases and a product whose
// operand A is a transposed and reshaped tensor, read at (m mod 10,
// m div 10, k), which is staged through the generic expression scope.
func stagedCases(t *testing.T, seed uint64) []stagedCase {
	var out []stagedCase
	add := func(name string, p *kir.Program, gemm int, in map[int][]float64) {
		if gemm < 0 {
			t.Fatalf("%s: no kernel is scheduled gemm:\n%v", name, p)
		}
		k := p.Kernels[gemm]
		e := &emitter{p: p, k: k}
		c := stagedCase{name: name, p: p, gemm: gemm, inputs: in}
		for i, x := range []*kir.AffineLoad{e.affineOperand(k.Schedule.GEMM, false), e.affineOperand(k.Schedule.GEMM, true)} {
			if x != nil {
				c.guards += len(x.Guards)
				if i == 0 {
					c.affA = true
				} else {
					c.affB = true
				}
			}
		}
		out = append(out, c)
	}
	for _, c := range convCases {
		p, gemm, in := c.build(t, seed)
		add(c.name, p, gemm, in)
	}
	g := tile.NewGraph("transposed")
	x := g.Input("X", tile.Float32, tile.Shape{10, 7, 45})
	w := g.Input("W", tile.Float32, tile.Shape{45, 70})
	g.SetOutput("o", op.MatMul(g, g.Reshape(g.Transpose(x, []int{1, 0, 2}), tile.Shape{70, 45}), w))
	p, gemm, in := compileProduct(t, g, seed)
	add("transposed", p, gemm, in)
	return out
}

// TestStagedProducts runs the staged cases' products through the
// float32 template and the cooperative-matrix one on the SPIR-V
// interpreter, and validates the modules, checking that the
// convolutions' operands are staged from their affine forms (see
// stagePlan) and the transposed operand through the generic path. The
// inputs are normal values, so a guard that admits a point it should
// not, or an offset part that is off by one, changes the sums. The
// cooperative products get inputs rounded to float16, so that
// kir.Interpret must agree to float32 rounding.
func TestStagedProducts(t *testing.T) {
	val := tool(t, "spirv-val")
	dir := t.TempDir()
	coop := coopTarget(CoopShape{M: 16, N: 16, K: 16}, 32)
	for _, c := range stagedCases(t, 3) {
		if want := c.name != "transposed"; c.affA != want || !c.affB || want && c.guards < 2 {
			t.Fatalf("%s: operands affine %v and %v with %d guards", c.name, c.affA, c.affB, c.guards)
		}
		p, gemm, inputs := c.p, c.gemm, c.inputs
		rounded := map[int][]float64{}
		for id, x := range inputs {
			r := make([]float64, len(x))
			for i, v := range x {
				r[i] = halfValue(halfBits(v, false), false)
			}
			rounded[id] = r
		}
		for _, tg := range []struct {
			name string
			t    Target
			in   map[int][]float64
		}{{"fp32", full, inputs}, {"coop", coop, rounded}} {
			t.Run(c.name+"/"+tg.name, func(t *testing.T) {
				got, err := Emit(p, gemm, tg.t)
				if err != nil {
					t.Fatal(err)
				}
				if tiled := got.LocalSize[0] == gemmThreads && !hasOp(got.Words, opCoopMatrixMulAdd); tg.name == "fp32" && !tiled {
					t.Fatalf("the product does not run as the float32 tiled product: %+v", got.LocalSize)
				}
				if tg.name == "coop" && !hasOp(got.Words, opCoopMatrixMulAdd) {
					t.Fatal("the product does not run on cooperative matrices")
				}
				if err := validate(val, dir, c.name+"_"+tg.name, got.Words); err != nil && !(tg.name == "coop" && coopUnknown(err)) {
					t.Error(err)
				}
				checkProgram(t, p, tg.t, tg.in)
			})
		}
	}
}
