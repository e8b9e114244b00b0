package op

import (
	"testing"

	"github.com/tartanml/tartan/tile"
)

func TestLinalgForward(t *testing.T) {
	runForward(t, []fwdCase{
		// [1 2 3; 4 5 6]·[7 8; 9 10; 11 12] = [1·7+2·9+3·11, …] = [58 64; 139 154].
		{"matmul_2d", func(g *tile.Graph, x []*tile.Tensor) *tile.Tensor { return MatMul(g, x[0], x[1]) },
			[]*tile.Value{f64(tile.Shape{2, 3}, 1, 2, 3, 4, 5, 6), f64(tile.Shape{3, 2}, 7, 8, 9, 10, 11, 12)},
			tile.Shape{2, 2}, []float64{58, 64, 139, 154}},
		// a: two 1×2 matrices [1 2], [3 4]; b: one 2×1 matrix [1; 10]
		// broadcast over the batch: 1+20 = 21, 3+40 = 43.
		{"matmul_broadcast_b", func(g *tile.Graph, x []*tile.Tensor) *tile.Tensor { return MatMul(g, x[0], x[1]) },
			[]*tile.Value{f64(tile.Shape{2, 1, 2}, 1, 2, 3, 4), f64(tile.Shape{2, 1}, 1, 10)},
			tile.Shape{2, 1, 1}, []float64{21, 43}},
		// a: one 2×2 matrix [1 2; 3 4] (batch 1); b: three columns [1 0]ᵀ,
		// [0 1]ᵀ, [1 1]ᵀ: the first column, the second, their sum.
		{"matmul_broadcast_a", func(g *tile.Graph, x []*tile.Tensor) *tile.Tensor { return MatMul(g, x[0], x[1]) },
			[]*tile.Value{f64(tile.Shape{1, 2, 2}, 1, 2, 3, 4), f64(tile.Shape{3, 2, 1}, 1, 0, 0, 1, 1, 1)},
			tile.Shape{3, 2, 1}, []float64{1, 3, 2, 4, 3, 7}},
		// Row vector [1 2 3] times [1 0; 0 1; 1 1] = [4 5].
		{"matmul_vec_mat", func(g *tile.Graph, x []*tile.Tensor) *tile.Tensor { return MatMul(g, x[0], x[1]) },
			[]*tile.Value{f64(tile.Shape{3}, 1, 2, 3), f64(tile.Shape{3, 2}, 1, 0, 0, 1, 1, 1)},
			tile.Shape{2}, []float64{4, 5}},
		// Row sums of [1 2 3; 4 5 6].
		{"matmul_mat_vec", func(g *tile.Graph, x []*tile.Tensor) *tile.Tensor { return MatMul(g, x[0], x[1]) },
			[]*tile.Value{f64(tile.Shape{2, 3}, 1, 2, 3, 4, 5, 6), f64(tile.Shape{3}, 1, 1, 1)},
			tile.Shape{2}, []float64{6, 15}},
		// 1·4 + 2·5 + 3·6 = 32.
		{"matmul_dot", func(g *tile.Graph, x []*tile.Tensor) *tile.Tensor { return MatMul(g, x[0], x[1]) },
			[]*tile.Value{f64(tile.Shape{3}, 1, 2, 3), f64(tile.Shape{3}, 4, 5, 6)},
			tile.Shape{}, []float64{32}},
		// [1 2 3]·[1 0; 0 1; 1 1] + [10 20] = [4+10, 5+20]; [4 5 6] → [10+10, 11+20].
		{"dense_bias", func(g *tile.Graph, x []*tile.Tensor) *tile.Tensor { return Dense(g, x[0], x[1], x[2]) },
			[]*tile.Value{f64(tile.Shape{2, 3}, 1, 2, 3, 4, 5, 6), f64(tile.Shape{3, 2}, 1, 0, 0, 1, 1, 1), f64(tile.Shape{2}, 10, 20)},
			tile.Shape{2, 2}, []float64{14, 25, 20, 31}},
		// Rank-3 x, kernel [1; −1]: each row's first minus second feature.
		{"dense_rank3_nobias", func(g *tile.Graph, x []*tile.Tensor) *tile.Tensor { return Dense(g, x[0], x[1], nil) },
			[]*tile.Value{f64(tile.Shape{1, 2, 2}, 1, 2, 5, 3), f64(tile.Shape{2, 1}, 1, -1)},
			tile.Shape{1, 2, 1}, []float64{-1, 2}},
		{"bias_add", func(g *tile.Graph, x []*tile.Tensor) *tile.Tensor { return BiasAdd(g, x[0], x[1]) },
			[]*tile.Value{f64(tile.Shape{1, 2, 2}, 1, 2, 3, 4), f64(tile.Shape{2}, 10, 100)},
			tile.Shape{1, 2, 2}, []float64{11, 102, 13, 104}},
		// Flatten keeps row-major (h, w, c) order.
		{"flatten", func(g *tile.Graph, x []*tile.Tensor) *tile.Tensor { return Flatten(g, x[0]) },
			[]*tile.Value{f64(tile.Shape{2, 2, 1, 2}, seq(8)...)},
			tile.Shape{2, 4}, seq(8)},
	})
}
