package spirv

import (
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
