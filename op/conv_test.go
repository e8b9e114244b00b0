package op

import (
	"testing"

	"github.com/tartanml/tartan/tile"
)

func conv1d(opt ConvOptions) builder {
	return func(g *tile.Graph, x []*tile.Tensor) *tile.Tensor { return Conv1D(g, x[0], x[1], opt) }
}

func conv2d(opt ConvOptions) builder {
	return func(g *tile.Graph, x []*tile.Tensor) *tile.Tensor { return Conv2D(g, x[0], x[1], opt) }
}

func TestConvForward(t *testing.T) {
	ones9 := []float64{1, 1, 1, 1, 1, 1, 1, 1, 1}
	runForward(t, []fwdCase{
		// x = 1 2 3 4, kernel 1 10 100, same: out = 4, total padding 2,
		// one zero before: out[y] = x[y−1] + 10·x[y] + 100·x[y+1]
		// = 0+10+200, 1+20+300, 2+30+400, 3+40+0.
		{"conv1d_same", conv1d(ConvOptions{Padding: Same}),
			[]*tile.Value{f64(tile.Shape{1, 4, 1}, 1, 2, 3, 4), f64(tile.Shape{3, 1, 1}, 1, 10, 100)},
			tile.Shape{1, 4, 1}, []float64{210, 321, 432, 43}},
		// x = 1…5, kernel 1 10, stride 2, valid: out = ⌊(5−2)/2⌋+1 = 2:
		// x0+10·x1 = 21, x2+10·x3 = 43.
		{"conv1d_valid_stride2", conv1d(ConvOptions{Strides: []int{2}}),
			[]*tile.Value{f64(tile.Shape{1, 5, 1}, 1, 2, 3, 4, 5), f64(tile.Shape{2, 1, 1}, 1, 10)},
			tile.Shape{1, 2, 1}, []float64{21, 43}},
		// Dilation 2: the window spans 3, out = 3: x[y] + 10·x[y+2].
		{"conv1d_valid_dilation2", conv1d(ConvOptions{Dilation: []int{2}}),
			[]*tile.Value{f64(tile.Shape{1, 5, 1}, 1, 2, 3, 4, 5), f64(tile.Shape{2, 1, 1}, 1, 10)},
			tile.Shape{1, 3, 1}, []float64{31, 42, 53}},
		// Same, stride 2, k = 2, in = 5: out = 3, total padding
		// 2·2+2−5 = 1, all after: 1+20, 3+40, 5+10·0.
		{"conv1d_same_stride2_pad_after", conv1d(ConvOptions{Strides: []int{2}, Padding: Same}),
			[]*tile.Value{f64(tile.Shape{1, 5, 1}, 1, 2, 3, 4, 5), f64(tile.Shape{2, 1, 1}, 1, 10)},
			tile.Shape{1, 3, 1}, []float64{21, 43, 5}},
		// Two channels to three with a 1-wide kernel [[1 0 1] [0 1 1]]:
		// (c0, c1, c0+c1) at each position.
		{"conv1d_channels", conv1d(ConvOptions{}),
			[]*tile.Value{f64(tile.Shape{1, 2, 2}, 1, 2, 3, 4), f64(tile.Shape{1, 2, 3}, 1, 0, 1, 0, 1, 1)},
			tile.Shape{1, 2, 3}, []float64{1, 2, 3, 3, 4, 7}},
		// Two groups: output 0 sees channels 0, 1 through kernel column 0
		// (1, 2): 1·1+2·2 = 5; output 1 sees channels 2, 3 through column 1
		// (10, 20): 3·10+4·20 = 110.
		{"conv1d_groups2", conv1d(ConvOptions{Groups: 2}),
			[]*tile.Value{f64(tile.Shape{1, 1, 4}, 1, 2, 3, 4), f64(tile.Shape{1, 2, 2}, 1, 10, 2, 20)},
			tile.Shape{1, 1, 2}, []float64{5, 110}},
		// x = 1…9 as 3×3, kernel [1 0; 0 1], valid: x[y][x] + x[y+1][x+1].
		{"conv2d_valid", conv2d(ConvOptions{}),
			[]*tile.Value{f64(tile.Shape{1, 3, 3, 1}, seq(9)...), f64(tile.Shape{2, 2, 1, 1}, 1, 0, 0, 1)},
			tile.Shape{1, 2, 2, 1}, []float64{6, 8, 12, 14}},
		// The same with same padding: one zero row and column after, so the
		// last row and column read only x[y][x].
		{"conv2d_same_k2", conv2d(ConvOptions{Padding: Same}),
			[]*tile.Value{f64(tile.Shape{1, 3, 3, 1}, seq(9)...), f64(tile.Shape{2, 2, 1, 1}, 1, 0, 0, 1)},
			tile.Shape{1, 3, 3, 1}, []float64{6, 8, 3, 12, 14, 6, 7, 8, 9}},
		// A 3×3 box filter, same, stride 1 on 1…9: one zero on every side;
		// each output is the sum of its 3×3 neighbourhood inside x.
		{"conv2d_same_k3", conv2d(ConvOptions{Padding: Same}),
			[]*tile.Value{f64(tile.Shape{1, 3, 3, 1}, seq(9)...), f64(tile.Shape{3, 3, 1, 1}, ones9...)},
			tile.Shape{1, 3, 3, 1}, []float64{12, 21, 16, 27, 45, 33, 24, 39, 28}},
		// A 3×3 box filter, same, stride 2 on 1…16 as 4×4: out = 2, total
		// padding (2−1)·2+3−4 = 1, all after. Windows cover rows/columns
		// {0,1,2} and {2,3}: 1+2+3+5+6+7+9+10+11 = 54, 3+4+7+8+11+12 = 45,
		// 9+10+11+13+14+15 = 72, 11+12+15+16 = 54.
		{"conv2d_same_k3_stride2_even", conv2d(ConvOptions{Padding: Same, Strides: []int{2, 2}}),
			[]*tile.Value{f64(tile.Shape{1, 4, 4, 1}, seq(16)...), f64(tile.Shape{3, 3, 1, 1}, ones9...)},
			tile.Shape{1, 2, 2, 1}, []float64{54, 45, 72, 54}},
		// Channels c0 = 1 2 3 4, c1 = 10 20 30 40 (interleaved NHWC), a 1×1
		// depthwise kernel [[1 2] [3 4]] (channel × multiplier): output
		// channel c·2+m is x_c·k[c][m].
		{"depthwise_1x1_m2", func(g *tile.Graph, x []*tile.Tensor) *tile.Tensor {
			return DepthwiseConv2D(g, x[0], x[1], ConvOptions{})
		}, []*tile.Value{f64(tile.Shape{1, 2, 2, 2}, 1, 10, 2, 20, 3, 30, 4, 40), f64(tile.Shape{1, 1, 2, 2}, 1, 2, 3, 4)},
			tile.Shape{1, 2, 2, 4}, []float64{1, 2, 30, 40, 2, 4, 60, 80, 3, 6, 90, 120, 4, 8, 120, 160}},
		// A 2×2 depthwise kernel, valid: channel 0 sums its window
		// (1+2+3+4), channel 1 keeps its top-left cell (10).
		{"depthwise_2x2_valid", func(g *tile.Graph, x []*tile.Tensor) *tile.Tensor {
			return DepthwiseConv2D(g, x[0], x[1], ConvOptions{})
		}, []*tile.Value{f64(tile.Shape{1, 2, 2, 2}, 1, 10, 2, 20, 3, 30, 4, 40), f64(tile.Shape{2, 2, 2, 1}, 1, 1, 1, 0, 1, 0, 1, 0)},
			tile.Shape{1, 1, 1, 2}, []float64{10, 10}},
		// Conv3D, a 1×1×2 kernel [1 10] on a 1×1×3 volume: x[i] + 10·x[i+1].
		{"conv3d_valid", func(g *tile.Graph, x []*tile.Tensor) *tile.Tensor {
			return Conv3D(g, x[0], x[1], ConvOptions{})
		}, []*tile.Value{f64(tile.Shape{1, 1, 1, 3, 1}, 1, 2, 3), f64(tile.Shape{1, 1, 2, 1, 1}, 1, 10)},
			tile.Shape{1, 1, 1, 2, 1}, []float64{21, 32}},
	})
}

func TestWindowArithmetic(t *testing.T) {
	cases := []struct {
		in, k, stride, dil int
		pad                Padding
		out, before        int
	}{
		{28, 2, 1, 1, Same, 28, 0},  // total 1: all after
		{28, 3, 1, 1, Same, 28, 1},  // total 2: one each side
		{7, 3, 2, 1, Same, 4, 1},    // out ⌈7/2⌉ = 4, total 3·2+3−7 = 2
		{6, 3, 2, 1, Same, 3, 0},    // total 2·2+3−6 = 1
		{7, 3, 1, 2, Same, 7, 2},    // span 5, total 4
		{5, 1, 4, 1, Same, 2, 0},    // total 4+1−5 = 0
		{7, 3, 2, 1, Valid, 3, 0},   // ⌊(7−3)/2⌋+1
		{7, 3, 1, 3, Valid, 1, 0},   // span 7
		{9, 4, 2, 1, Valid, 3, 0},   // ⌊5/2⌋+1
		{28, 2, 2, 1, Valid, 14, 0}, // the showcase pool
	}
	for _, c := range cases {
		w, err := newWindow(c.in, c.k, c.stride, c.dil, c.pad)
		if err != nil || w.out != c.out || w.before != c.before {
			t.Errorf("newWindow(%d, %d, %d, %d, %s) = out %d before %d (%v), want %d %d",
				c.in, c.k, c.stride, c.dil, c.pad, w.out, w.before, err, c.out, c.before)
		}
	}
	for _, c := range []struct {
		in, k, stride, dil int
		pad                Padding
	}{{2, 3, 1, 1, Valid}, {5, 3, 1, 3, Valid}, {5, 0, 1, 1, Same}, {5, 2, 0, 1, Same}, {5, 2, 1, 1, "full"}} {
		if _, err := newWindow(c.in, c.k, c.stride, c.dil, c.pad); err == nil {
			t.Errorf("newWindow(%d, %d, %d, %d, %q) succeeded, want an error", c.in, c.k, c.stride, c.dil, c.pad)
		}
	}
}
