package op

import (
	"testing"

	"github.com/tartanml/tartan/tile"
)

func TestPoolForward(t *testing.T) {
	// A 4×4 image:
	//	1 5 2  0
	//	3 4 8  1
	//	0 9 7  6
	//	2 1 3 -1
	img := f64(tile.Shape{1, 4, 4, 1}, 1, 5, 2, 0, 3, 4, 8, 1, 0, 9, 7, 6, 2, 1, 3, -1)
	// All negative, so that a zero from padding would win a max.
	neg := f64(tile.Shape{1, 2, 2, 1}, -1, -2, -3, -4)
	pool2 := func(f func(*tile.Graph, *tile.Tensor, PoolOptions) *tile.Tensor, opt PoolOptions) builder {
		return func(g *tile.Graph, x []*tile.Tensor) *tile.Tensor { return f(g, x[0], opt) }
	}
	runForward(t, []fwdCase{
		// Default 2×2 windows, strides 2: max of each quadrant.
		{"max_default", pool2(MaxPool2D, PoolOptions{}), []*tile.Value{img}, tile.Shape{1, 2, 2, 1}, []float64{5, 8, 9, 7}},
		// Means of the quadrants: 13/4, 11/4, 12/4, 15/4.
		{"avg_default", pool2(AvgPool2D, PoolOptions{}), []*tile.Value{img}, tile.Shape{1, 2, 2, 1}, []float64{3.25, 2.75, 3, 3.75}},
		// 2×2, stride 1, same: one padded row and column after. The last
		// row/column windows hold two real cells, the corner one.
		{"max_same_ignores_padding", pool2(MaxPool2D, PoolOptions{Strides: []int{1}, Padding: Same}), []*tile.Value{neg},
			tile.Shape{1, 2, 2, 1}, []float64{-1, -2, -3, -4}},
		// Means over real cells only: −10/4, (−2−4)/2, (−3−4)/2, −4/1.
		{"avg_same_counts_real_cells", pool2(AvgPool2D, PoolOptions{Strides: []int{1}, Padding: Same}), []*tile.Value{neg},
			tile.Shape{1, 2, 2, 1}, []float64{-2.5, -3, -3.5, -4}},
		// 3×3 windows, strides 2, valid on the 4×4 image: one window, rows
		// and columns 0–2: max 9.
		{"max_3x3_valid", pool2(MaxPool2D, PoolOptions{Size: []int{3, 3}, Strides: []int{2, 2}}), []*tile.Value{img},
			tile.Shape{1, 1, 1, 1}, []float64{9}},
		// Rectangular 1×4 windows: row maxima 5, 8, 9, 3.
		{"max_1x4", pool2(MaxPool2D, PoolOptions{Size: []int{1, 4}}), []*tile.Value{img},
			tile.Shape{1, 4, 1, 1}, []float64{5, 8, 9, 3}},
		// 1-D, size 2, stride 1: 3 1 4 1 5 → max(3,1) max(1,4) max(4,1) max(1,5).
		{"max1d_stride1", func(g *tile.Graph, x []*tile.Tensor) *tile.Tensor {
			return MaxPool1D(g, x[0], PoolOptions{Strides: []int{1}})
		}, []*tile.Value{f64(tile.Shape{1, 5, 1}, 3, 1, 4, 1, 5)}, tile.Shape{1, 4, 1}, []float64{3, 4, 4, 5}},
		// 1-D, size 3, stride 2, same on 5 cells: out 3, padding 2 split
		// 1/1: windows {−1,0,1} {1,2,3} {3,4,5}: (3+1)/2, (1+4+1)/3, (1+5)/2.
		{"avg1d_same", func(g *tile.Graph, x []*tile.Tensor) *tile.Tensor {
			return AvgPool1D(g, x[0], PoolOptions{Size: []int{3}, Strides: []int{2}, Padding: Same})
		}, []*tile.Value{f64(tile.Shape{1, 5, 1}, 3, 1, 4, 1, 5)}, tile.Shape{1, 3, 1}, []float64{2, 2, 3}},
		// Two channels c0 = 1 2 3 4, c1 = 10 20 30 −40.
		{"global_avg", func(g *tile.Graph, x []*tile.Tensor) *tile.Tensor { return GlobalAvgPool2D(g, x[0]) },
			[]*tile.Value{f64(tile.Shape{1, 2, 2, 2}, 1, 10, 2, 20, 3, 30, 4, -40)}, tile.Shape{1, 2}, []float64{2.5, 5}},
		{"global_max", func(g *tile.Graph, x []*tile.Tensor) *tile.Tensor { return GlobalMaxPool2D(g, x[0]) },
			[]*tile.Value{f64(tile.Shape{1, 2, 2, 2}, 1, 10, 2, 20, 3, 30, 4, -40)}, tile.Shape{1, 2}, []float64{4, 30}},
	})
}
