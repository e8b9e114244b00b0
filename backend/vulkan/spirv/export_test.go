package spirv

import (
	"testing"

	"github.com/tartanml/tartan/kir"
	"github.com/tartanml/tartan/tile"
)

// For the device tests of package spirv_test.
var (
	CornerProgram  = cornerProgram
	ScatterProgram = scatterProgram
	CloseTo        = closeTo
)

// GridProgram returns y = 2x + 1 over n elements.
func GridProgram(n int) *kir.Program {
	f32 := tile.Float32
	pb := newProg("grid")
	x := pb.buf("x", kir.Input, f32, n)
	y := pb.buf("y", kir.Output, f32, n)
	pb.kernel("affine", y, tile.Shape{n}, nil, tile.Assign, nil,
		ap(tile.Add, f32, ap(tile.Mul, f32, ld(x, f32, kir.Skip, 0, iv(0)), cst(f32, 2)), cst(f32, 1)), nil)
	return pb.p
}

// StagedCase is one of stage_test.go's tiled products, compiled: its
// program, the index of its tiled product and its inputs by name.
type StagedCase struct {
	Name   string
	P      *kir.Program
	GEMM   int
	Inputs map[string][]float64
}

// StagedCases compiles the tiled products of stage_test.go.
func StagedCases(t *testing.T) []StagedCase {
	var out []StagedCase
	for _, c := range stagedCases(t, 4) {
		named := map[string][]float64{}
		for _, b := range c.p.Inputs {
			named[b.Name] = c.inputs[b.Buffer]
		}
		out = append(out, StagedCase{c.name, c.p, c.gemm, named})
	}
	return out
}
