package op

import (
	"strings"
	"testing"

	"github.com/tartanml/tartan/tile"
)

// TestTransposedLength checks Keras's output lengths and TensorFlow's
// padding before against values worked by hand.
func TestTransposedLength(t *testing.T) {
	for _, c := range []struct {
		in, k, s, d int
		p           Padding
		op          int
		out, before int
	}{
		{4, 3, 1, 1, Valid, -1, 6, 0}, // 4 + 3 − 1
		{3, 3, 2, 1, Valid, -1, 7, 0}, // 3·2 + (3 − 2)
		{3, 1, 2, 1, Valid, -1, 6, 0}, // 3·2 + max(1 − 2, 0)
		{3, 3, 2, 1, Same, -1, 6, 0},  // 3·2; total (2·2 + 3 − 6) = 1, before 0
		{3, 4, 2, 1, Same, -1, 6, 1},  // total (4 + 4 − 6) = 2
		{3, 3, 2, 1, Valid, 1, 8, 0},  // 2·2 + 3 + 1
		{2, 3, 3, 1, Same, 2, 6, 0},   // 3 + 3 − 2 + 2; total 0
		{3, 4, 2, 1, Same, 0, 4, 2},   // 4 + 4 − 4 + 0; total 4
		{4, 3, 1, 2, Same, -1, 4, 2},  // span 5, total 4
		{5, 2, 1, 1, Valid, 0, 6, 0},  // 4 + 2 + 0
	} {
		out, before, err := TransposedLength(c.in, c.k, c.s, c.d, c.p, c.op)
		if err != nil || out != c.out || before != c.before {
			t.Errorf("TransposedLength(%d, %d, %d, %d, %q, %d) = %d, %d, %v; want %d, %d", c.in, c.k, c.s, c.d, c.p, c.op, out, before, err, c.out, c.before)
		}
	}
	if _, _, err := TransposedLength(3, 3, 2, 1, Valid, 2); err == nil || err.Error() != "output padding 2 must be smaller than the stride 2" {
		t.Errorf("output padding 2, stride 2: error %v", err)
	}
}

// TestUpSampleAndTransposeErrors checks the recorded argument errors.
func TestUpSampleAndTransposeErrors(t *testing.T) {
	for _, c := range []struct {
		build func(g *tile.Graph) *tile.Tensor
		want  string
	}{
		{func(g *tile.Graph) *tile.Tensor {
			return UpSample2D(g, g.Input("x", tile.Float32, tile.Shape{1, 2, 2, 1}), []int{2}, "cubic")
		}, `upsample2d: interpolation "cubic" must be "nearest" or "bilinear" (x f32[1, 2, 2, 1])`},
		{func(g *tile.Graph) *tile.Tensor {
			return UpSample2D(g, g.Input("x", tile.Float32, tile.Shape{2, 2, 1}), nil, "nearest")
		}, "want x (N, H, W, C), got x f32[2, 2, 1]"},
		{func(g *tile.Graph) *tile.Tensor {
			return Conv2DTranspose(g, g.Input("x", tile.Float32, tile.Shape{1, 3, 3, 2}), g.Input("k", tile.Float32, tile.Shape{3, 3, 4, 3}), ConvTransposeOptions{})
		}, "kernel f32[3, 3, 4, 3] expects 3 input channels but x f32[1, 3, 3, 2] has 2"},
		{func(g *tile.Graph) *tile.Tensor {
			return Conv2DTranspose(g, g.Input("x", tile.Float32, tile.Shape{1, 3, 3, 2}), g.Input("k", tile.Float32, tile.Shape{3, 3, 4, 2}),
				ConvTransposeOptions{Strides: []int{2}, OutputPadding: []int{2}})
		}, "spatial dimension 0: output padding 2 must be smaller than the stride 2"},
		{func(g *tile.Graph) *tile.Tensor {
			return Conv2DTranspose(g, g.Input("x", tile.Float32, tile.Shape{1, 3, 3, 2}), g.Input("k", tile.Float32, tile.Shape{3, 3, 4, 2}),
				ConvTransposeOptions{OutputPadding: []int{-1}})
		}, "output padding [-1] must not be negative"},
	} {
		g := tile.NewGraph("t")
		c.build(g)
		if err := g.Err(); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("error %v, want one containing %q", err, c.want)
		}
	}
}
