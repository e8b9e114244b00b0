package spirv

import (
	"strings"
	"testing"

	"github.com/tartanml/tartan/kir"
)

// withTiling returns p with kernel i tiled by tl, from the tuner.
func withTiling(p *kir.Program, i int, tl kir.Tiling) *kir.Program {
	q := *p
	q.Kernels = append([]*kir.Kernel(nil), p.Kernels...)
	k := *p.Kernels[i]
	tl.From = "tuner"
	k.Schedule.Tiling = &tl
	q.Kernels[i] = &k
	return &q
}

// TestTilingSpace renders every tiling of the space of a plain product of
// sizes that are not multiples of the blocks, a batched one and a padded
// convolution, on float32 cores and on cooperative matrices: each runs
// the block it names, in work-groups of the size the template gives it,
// in a shader of its own, passes spirv-val, and the cooperative ones, which no device here runs,
// agree with kir.Interpret on the SPIR-V interpreter (operands rounded to
// float16), each on one of the products. It checks that the model's tiling is the one Emit runs
// without a schedule's, and that tilings outside the space are refused
// with their names.
func TestTilingSpace(t *testing.T) {
	val := tool(t, "spirv-val")
	dir := t.TempDir()
	coop := coopTarget(CoopShape{M: 16, N: 16, K: 16}, 32)
	for ci, c := range append(productCases[:2:2], convCases[0]) {
		p, gemm, inputs := c.build(t, 4)
		rounded := map[int][]float64{}
		for id, x := range inputs {
			r := make([]float64, len(x))
			for i, v := range x {
				r[i] = halfValue(halfBits(v, false), false)
			}
			rounded[id] = r
		}
		_, rows, cols, _ := p.Kernels[gemm].Schedule.GEMM.Extents(p.Kernels[gemm])
		for _, tg := range []struct {
			name      string
			t         Target
			plain, mm int // the tilings on float32 cores and on matrices
		}{{"fp32", full, 18, 0}, {"coop", coop, 18, 18}} {
			model, space := Space(p, gemm, tg.t)
			k, err := Emit(p, gemm, tg.t)
			if err != nil {
				t.Fatal(err)
			}
			if k.Tiling == nil || !k.Tiling.Same(model) || k.Tiling.From != "model" || model.Matrix != tg.t.Matrix() {
				t.Errorf("%s on %s: Emit ran %v, the model is %s", c.name, tg.name, k.Tiling, model.String())
			}
			plain, mm, seen := 0, 0, map[string]string{}
			for i, tl := range space {
				what := c.name + " on " + tg.name + " tiled " + tl.String()
				k, err := Emit(withTiling(p, gemm, tl), gemm, tg.t)
				if err != nil {
					t.Fatalf("%s: %v", what, err)
				}
				threads := gemmThreads
				if tl.Matrix != "" {
					threads = coopLayout(tg.t.Coop, tg.t.SubgroupSize, tl.BM, tl.BN, tl.BK).threads
					mm++
				} else {
					plain++
				}
				if k.Tiling == nil || !k.Tiling.Same(tl) || k.Tiling.From != "tuner" || hasOp(k.Words, opCoopMatrixMulAdd) != (tl.Matrix != "") ||
					k.LocalSize[0] != threads || k.Groups[0] != (cols+tl.BN-1)/tl.BN || k.Groups[1] != (rows+tl.BM-1)/tl.BM {
					t.Errorf("%s: ran %v in work-groups of %v, %v of them", what, k.Tiling, k.LocalSize, k.Groups)
				}
				if o, ok := seen[string(binaryOf(k.Words))]; ok {
					t.Errorf("%s: the same shader as tiled %s", what, o)
				}
				seen[string(binaryOf(k.Words))] = tl.String()
				if err := validate(val, dir, "tiled", k.Words); err != nil && !(tl.Matrix != "" && coopUnknown(err)) {
					t.Errorf("%s: %v", what, err)
				}
				// Each cooperative tiling on one of the three products.
				if tl.Matrix != "" && i%3 == ci {
					t.Run(strings.ReplaceAll(what, " ", "_"), func(t *testing.T) { checkProgram(t, withTiling(p, gemm, tl), tg.t, rounded) })
				}
			}
			if plain != tg.plain || mm != tg.mm {
				t.Errorf("%s on %s: %d tilings on float32 cores and %d on matrices, want %d and %d", c.name, tg.name, plain, mm, tg.plain, tg.mm)
			}
			for _, bad := range []kir.Tiling{{BM: 48, BN: 64, BK: 16}, {BM: 128, BN: 64, BK: 16}, {BM: 64, BN: 64, BK: 8},
				{BM: 64, BN: 64, BK: 16, Parts: 2}, {BM: 16, BN: 64, BK: 32, Matrix: "coop-f16"}, {BM: 64, BN: 64, BK: 32, Matrix: "coop-bf16"}} {
				_, err := Emit(withTiling(p, gemm, bad), gemm, tg.t)
				if err == nil || !strings.Contains(err.Error(), bad.String()) || !strings.Contains(err.Error(), p.Kernels[gemm].Name) {
					t.Errorf("%s on %s: tiling %s: error %v, want one naming the kernel and the tiling", c.name, tg.name, bad.String(), err)
				}
			}
		}
	}
	// A tiling on a kernel that is not a tiled product is refused.
	p, _ := cornerProgram()
	q := *p
	k := *q.Kernels[0]
	k.Schedule.Strategy = "gemm"
	tl := kir.Tiling{BM: 64, BN: 64, BK: 16}
	k.Schedule.Tiling = &tl
	q.Kernels = append([]*kir.Kernel{&k}, q.Kernels[1:]...)
	if _, err := Emit(&q, 0, full); err == nil || !strings.Contains(err.Error(), "64x64x16") {
		t.Errorf("a tiled kernel that is no product: error %v", err)
	}
}
