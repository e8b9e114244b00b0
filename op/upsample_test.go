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

// TestGradTransposeAndUpSample compares the gradients of the transposed
// convolutions and of up-sampling with central finite differences.
func TestGradTransposeAndUpSample(t *testing.T) {
	ct := func(opt ConvTransposeOptions) func(g *tile.Graph, x []*tile.Tensor) *tile.Tensor {
		return func(g *tile.Graph, x []*tile.Tensor) *tile.Tensor { return Conv2DTranspose(g, x[0], x[1], opt) }
	}
	up := func(size []int, mode string) func(g *tile.Graph, x []*tile.Tensor) *tile.Tensor {
		return func(g *tile.Graph, x []*tile.Tensor) *tile.Tensor { return UpSample2D(g, x[0], size, mode) }
	}
	runFD(t, []fdCase{
		{"conv2d_transpose_same_s2", []gen{normal(2, 3, 4, 2), normal(3, 3, 3, 2)}, ct(ConvTransposeOptions{Strides: []int{2}, Padding: Same})},
		{"conv2d_transpose_valid_op1", []gen{normal(1, 3, 3, 2), normal(3, 2, 2, 2)}, ct(ConvTransposeOptions{Strides: []int{2}, OutputPadding: []int{1}})},
		{"conv1d_transpose_same_d2", []gen{normal(2, 5, 2), normal(3, 2, 2)}, func(g *tile.Graph, x []*tile.Tensor) *tile.Tensor {
			return Conv1DTranspose(g, x[0], x[1], ConvTransposeOptions{Dilation: []int{2}, Padding: Same})
		}},
		{"upsample_nearest", []gen{normal(2, 2, 3, 2)}, up([]int{2, 3}, "nearest")},
		{"upsample_bilinear", []gen{normal(2, 3, 2, 2)}, up([]int{3, 2}, "bilinear")},
	})
}
