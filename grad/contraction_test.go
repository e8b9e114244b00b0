package grad

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/tartanml/tartan/ref"
	"github.com/tartanml/tartan/tile"
)

// op is a shorthand for a contraction operand.
func op(t *tile.Tensor, idx ...tile.Affine) tile.Operand { return tile.Operand{Tensor: t, Index: idx} }

func TestContractionFiniteDifferences(t *testing.T) {
	i, j, k, b := tile.Ix("i"), tile.Ix("j"), tile.Ix("k"), tile.Ix("b")
	n, y, x, c, d := tile.Ix("n"), tile.Ix("y"), tile.Ix("x"), tile.Ix("c"), tile.Ix("d")
	lt := func(e tile.Affine, bound int) tile.Constraint { return tile.Constraint{Expr: e, Bound: bound} }
	labels := func(g *tile.Graph, data ...float64) *tile.Tensor {
		v, err := tile.ValueOf(tile.Int32, tile.Shape{len(data)}, data)
		if err != nil {
			return g.Errorf("test", "%v", err)
		}
		return g.Constant(v)
	}
	cases := []fdCase{
		{name: "matmul", ins: []in{{"A", tile.Shape{3, 4}, uniform(-1, 1)}, {"B", tile.Shape{4, 5}, uniform(-1, 1)}},
			build: func(g *tile.Graph, a []*tile.Tensor) *tile.Tensor {
				return g.Contract(tile.Sum, tile.CombMul, tile.Shape{3, 5}, []tile.Affine{i, j}, []tile.Operand{op(a[0], i, k), op(a[1], k, j)})
			}},
		{name: "batched_matmul", ins: []in{{"A", tile.Shape{2, 3, 4}, uniform(-1, 1)}, {"B", tile.Shape{2, 4, 5}, uniform(-1, 1)}},
			build: func(g *tile.Graph, a []*tile.Tensor) *tile.Tensor {
				return g.Contract(tile.Sum, tile.CombMul, tile.Shape{2, 3, 5}, []tile.Affine{b, i, j}, []tile.Operand{op(a[0], b, i, k), op(a[1], b, k, j)})
			}},
		// O[n,y,x,c] = +(I[n, 2y+i-1, 2x+j-1, d] · K[i,j,d,c]): stride 2, one
		// pixel of padding through out-of-range skipping.
		{name: "conv2d_stride2_pad1", ins: []in{{"I", tile.Shape{2, 5, 7, 2}, uniform(-1, 1)}, {"K", tile.Shape{3, 3, 2, 3}, uniform(-1, 1)}},
			build: func(g *tile.Graph, a []*tile.Tensor) *tile.Tensor {
				return g.Contract(tile.Sum, tile.CombMul, tile.Shape{2, 3, 4, 3}, []tile.Affine{n, y, x, c}, []tile.Operand{
					op(a[0], n, y.Times(2).Plus(i).AddConst(-1), x.Times(2).Plus(j).AddConst(-1), d),
					op(a[1], i, j, d, c),
				})
			}},
		// Dilation 2, "same" output size.
		{name: "conv2d_dilated_same", ins: []in{{"I", tile.Shape{1, 5, 4, 2}, uniform(-1, 1)}, {"K", tile.Shape{3, 3, 2, 1}, uniform(-1, 1)}},
			build: func(g *tile.Graph, a []*tile.Tensor) *tile.Tensor {
				return g.Contract(tile.Sum, tile.CombMul, tile.Shape{1, 5, 4, 1}, []tile.Affine{n, y, x, c}, []tile.Operand{
					op(a[0], n, y.Plus(i.Times(2)).AddConst(-2), x.Plus(j.Times(2)).AddConst(-2), d),
					op(a[1], i, j, d, c),
				})
			}},
		// 2×2 max pool, stride 2, over odd sizes: the last window of each
		// row and column is cut short by out-of-range skipping.
		{name: "maxpool_2x2", ins: []in{{"I", tile.Shape{2, 5, 7, 3}, distinct()}},
			build: func(g *tile.Graph, a []*tile.Tensor) *tile.Tensor {
				return g.Contract(tile.Max, tile.CombNone, tile.Shape{2, 3, 4, 3}, []tile.Affine{n, y, x, c},
					[]tile.Operand{op(a[0], n, y.Times(2).Plus(i), x.Times(2).Plus(j), c)}, lt(i, 2), lt(j, 2))
			}},
		// 3×3 min pool, stride 2, padding 1.
		{name: "minpool_3x3_pad1", ins: []in{{"I", tile.Shape{1, 5, 7, 2}, distinct()}},
			build: func(g *tile.Graph, a []*tile.Tensor) *tile.Tensor {
				return g.Contract(tile.Min, tile.CombNone, tile.Shape{1, 3, 4, 2}, []tile.Affine{n, y, x, c},
					[]tile.Operand{op(a[0], n, y.Times(2).Plus(i).AddConst(-1), x.Times(2).Plus(j).AddConst(-1), c)}, lt(i, 3), lt(j, 3))
			}},
		{name: "max_over_axis", ins: []in{{"A", tile.Shape{3, 5}, distinct()}},
			build: func(g *tile.Graph, a []*tile.Tensor) *tile.Tensor {
				return g.Contract(tile.Max, tile.CombNone, tile.Shape{3}, []tile.Affine{i}, []tile.Operand{op(a[0], i, j)})
			}},
		{name: "sum_axes_0_2", ins: []in{{"A", tile.Shape{3, 4, 5}, uniform(-1, 1)}},
			build: func(g *tile.Graph, a []*tile.Tensor) *tile.Tensor {
				return g.Contract(tile.Sum, tile.CombNone, tile.Shape{4}, []tile.Affine{j}, []tile.Operand{op(a[0], i, j, k)})
			}},
		{name: "sum_all", ins: []in{{"A", tile.Shape{3, 5}, uniform(-1, 1)}},
			build: func(g *tile.Graph, a []*tile.Tensor) *tile.Tensor { return sumAll(g, a[0]) }},
		// O[i] = +(A[i] + B[j]): dA[i] = Σ_j dO[i] needs j bounded by B.
		{name: "comb_add", ins: []in{{"A", tile.Shape{3}, uniform(-1, 1)}, {"B", tile.Shape{4}, uniform(-1, 1)}},
			build: func(g *tile.Graph, a []*tile.Tensor) *tile.Tensor {
				return g.Contract(tile.Sum, tile.CombAdd, tile.Shape{3}, []tile.Affine{i}, []tile.Operand{op(a[0], i), op(a[1], j)})
			}},
		{name: "comb_add_shifted", ins: []in{{"A", tile.Shape{5}, uniform(-1, 1)}, {"B", tile.Shape{4}, uniform(-1, 1)}},
			build: func(g *tile.Graph, a []*tile.Tensor) *tile.Tensor {
				return g.Contract(tile.Sum, tile.CombAdd, tile.Shape{5}, []tile.Affine{i},
					[]tile.Operand{op(a[0], i), op(a[1], i.Plus(j).AddConst(-1))}, lt(j, 3))
			}},
		// The same operand twice: O[i] = Σ_j A[i,j]·A[j,i].
		{name: "same_operand_twice", ins: []in{{"A", tile.Shape{4, 4}, uniform(-1, 1)}},
			build: func(g *tile.Graph, a []*tile.Tensor) *tile.Tensor {
				return g.Contract(tile.Sum, tile.CombMul, tile.Shape{4}, []tile.Affine{i}, []tile.Operand{op(a[0], i, j), op(a[0], j, i)})
			}},
		{name: "assign_transpose", ins: []in{{"A", tile.Shape{3, 5}, uniform(-1, 1)}},
			build: func(g *tile.Graph, a []*tile.Tensor) *tile.Tensor {
				return g.Contract(tile.Assign, tile.CombNone, tile.Shape{5, 3}, []tile.Affine{j, i}, []tile.Operand{op(a[0], i, j)})
			}},
		{name: "constant_access", ins: []in{{"A", tile.Shape{3, 4}, uniform(-1, 1)}, {"B", tile.Shape{2, 3}, uniform(-1, 1)}},
			build: func(g *tile.Graph, a []*tile.Tensor) *tile.Tensor {
				return g.Contract(tile.Sum, tile.CombMul, tile.Shape{3}, []tile.Affine{i}, []tile.Operand{op(a[0], i, tile.Lit(2)), op(a[1], tile.Lit(1), i)})
			}},
		// A constant access out of range empties the index space: O and
		// every derivative are zero.
		{name: "empty_index_space", ins: []in{{"A", tile.Shape{3}, uniform(-1, 1)}, {"B", tile.Shape{4}, uniform(-1, 1)}},
			build: func(g *tile.Graph, a []*tile.Tensor) *tile.Tensor {
				return g.Add(a[0], g.Contract(tile.Sum, tile.CombAdd, tile.Shape{3}, []tile.Affine{i}, []tile.Operand{op(a[0], i), op(a[1], tile.Lit(5))}))
			}},
		{name: "prod", ins: []in{{"A", tile.Shape{3, 4}, uniform(0.5, 1.5)}},
			build: func(g *tile.Graph, a []*tile.Tensor) *tile.Tensor {
				return g.Contract(tile.Prod, tile.CombNone, tile.Shape{3}, []tile.Affine{i}, []tile.Operand{op(a[0], i, j)})
			}},
		{name: "prod_mul", ins: []in{{"A", tile.Shape{3, 4}, uniform(0.5, 1.5)}, {"B", tile.Shape{4}, uniform(0.5, 1.5)}},
			build: func(g *tile.Graph, a []*tile.Tensor) *tile.Tensor {
				return g.Contract(tile.Prod, tile.CombMul, tile.Shape{3}, []tile.Affine{i}, []tile.Operand{op(a[0], i, j), op(a[1], j)})
			}},
		// O[i] = +(L[i] == J[j] ? X[i,j]) picks X[i, L[i]], as a sparse
		// cross-entropy does; label 7 is out of range and picks nothing.
		{name: "comb_eq_pick", ins: []in{{"X", tile.Shape{4, 5}, uniform(-1, 1)}},
			build: func(g *tile.Graph, a []*tile.Tensor) *tile.Tensor {
				return g.Contract(tile.Sum, tile.CombEq, tile.Shape{4}, []tile.Affine{i},
					[]tile.Operand{op(labels(g, 2, 0, 4, 7), i), op(g.Iota(tile.Int32, tile.Shape{5}, 0), j), op(a[0], i, j)})
			}},
		{name: "prod_comb_eq", ins: []in{{"X", tile.Shape{3, 4}, uniform(0.5, 1.5)}},
			build: func(g *tile.Graph, a []*tile.Tensor) *tile.Tensor {
				return g.Contract(tile.Prod, tile.CombEq, tile.Shape{4}, []tile.Affine{j},
					[]tile.Operand{op(labels(g, 1, 1, 0), i), op(labels(g, 1), k), op(a[0], i, j)})
			}},
	}
	runFD(t, cases)
}

// TestContractionHandWorked checks gradients against values worked out by
// hand.
func TestContractionHandWorked(t *testing.T) {
	i, j, k := tile.Ix("i"), tile.Ix("j"), tile.Ix("k")
	cases := []struct {
		name  string
		ins   []*tile.Value
		build func(g *tile.Graph, a []*tile.Tensor) *tile.Tensor // returns the scalar y
		want  [][]float64
	}{
		// y = Σ_ij (A·B)_ij: dA[i,k] = Σ_j B[k,j], dB[k,j] = Σ_i A[i,k].
		{"matmul_sum", []*tile.Value{
			value(t, tile.Float64, tile.Shape{2, 3}, 1, 2, 3, 4, 5, 6),
			value(t, tile.Float64, tile.Shape{3, 2}, 1, -1, 2, 5, 0.5, 0.25),
		}, func(g *tile.Graph, a []*tile.Tensor) *tile.Tensor {
			return sumAll(g, g.Contract(tile.Sum, tile.CombMul, tile.Shape{2, 2}, []tile.Affine{i, j}, []tile.Operand{op(a[0], i, k), op(a[1], k, j)}))
		}, [][]float64{{0, 7, 0.75, 0, 7, 0.75}, {5, 5, 7, 7, 9, 9}}},
		// O[i] = +(A[i] + B[j]) with A of 3 and B of 4: every A element is
		// added 4 times and every B element 3 times.
		{"comb_add_counts", []*tile.Value{
			value(t, tile.Float64, tile.Shape{3}, 1, 2, 3),
			value(t, tile.Float64, tile.Shape{4}, 4, 5, 6, 7),
		}, func(g *tile.Graph, a []*tile.Tensor) *tile.Tensor {
			return sumAll(g, g.Contract(tile.Sum, tile.CombAdd, tile.Shape{3}, []tile.Affine{i}, []tile.Operand{op(a[0], i), op(a[1], j)}))
		}, [][]float64{{4, 4, 4}, {3, 3, 3, 3}}},
		// y = Σ A[i]·A[i]: dA = 2A.
		{"square", []*tile.Value{value(t, tile.Float64, tile.Shape{3}, 1, -2, 0.5)},
			func(g *tile.Graph, a []*tile.Tensor) *tile.Tensor {
				return g.Contract(tile.Sum, tile.CombMul, tile.Shape{}, nil, []tile.Operand{op(a[0], i), op(a[0], i)})
			}, [][]float64{{2, -4, 1}}},
		// Max with a tie: only the first maximum receives the cotangent.
		{"max_tie", []*tile.Value{value(t, tile.Float64, tile.Shape{4}, 3, 1, 3, 2)},
			func(g *tile.Graph, a []*tile.Tensor) *tile.Tensor {
				return g.Contract(tile.Max, tile.CombNone, tile.Shape{}, nil, []tile.Operand{op(a[0], i)})
			}, [][]float64{{1, 0, 0, 0}}},
		// Max pool of width 2, stride 2, over 5 elements: windows {0,1},
		// {2,3}, {4}.
		{"maxpool_1d", []*tile.Value{value(t, tile.Float64, tile.Shape{5}, 1, -5, -3, -4, 9)},
			func(g *tile.Graph, a []*tile.Tensor) *tile.Tensor {
				p := g.Contract(tile.Max, tile.CombNone, tile.Shape{3}, []tile.Affine{i},
					[]tile.Operand{op(a[0], i.Times(2).Plus(j))}, tile.Constraint{Expr: j, Bound: 2})
				w := g.Constant(value(t, tile.Float64, tile.Shape{3}, 10, 20, 30))
				return sumAll(g, g.Mul(p, w))
			}, [][]float64{{10, 0, 20, 0, 30}}},
		// Prod: d(a·b·c)/da = b·c and so on.
		{"prod", []*tile.Value{value(t, tile.Float64, tile.Shape{3}, 2, 3, 5)},
			func(g *tile.Graph, a []*tile.Tensor) *tile.Tensor {
				return g.Contract(tile.Prod, tile.CombNone, tile.Shape{}, nil, []tile.Operand{op(a[0], i)})
			}, [][]float64{{15, 10, 6}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			g := tile.NewGraph(c.name)
			feeds := map[string]*tile.Value{}
			var xs []*tile.Tensor
			for n, v := range c.ins {
				name := string(rune('a' + n))
				xs = append(xs, g.Input(name, v.DType, v.Shape))
				feeds[name] = v
			}
			got := evalGrads(t, g, c.build(g, xs), xs, feeds)
			for n := range got {
				if !sameValues(got[n].Data, c.want[n], 1e-12) {
					t.Errorf("gradient %d = %v, want %v", n, got[n].Data, c.want[n])
				}
			}
		})
	}
}

// TestExtremeTies checks where max and min contractions send the cotangent
// when several points attain the extremum: to the first one in the
// lexicographic order of the reduction indices (row-major window order for a
// pool), as TensorFlow and PyTorch do, and to no other. Each case weighs the
// outputs with W = (10, 20, 30, …) and gives dy/dI worked by hand.
func TestExtremeTies(t *testing.T) {
	i, j, k, y, x := tile.Ix("i"), tile.Ix("j"), tile.Ix("k"), tile.Ix("y"), tile.Ix("x")
	lt := func(e tile.Affine, bound int) tile.Constraint { return tile.Constraint{Expr: e, Bound: bound} }
	nan := math.NaN()
	cases := []struct {
		name  string
		in    *tile.Value
		build func(g *tile.Graph, a *tile.Tensor) *tile.Tensor // the contraction under test
		want  []float64
	}{
		{"max_of_equal", value(t, tile.Float64, tile.Shape{4}, 7, 7, 7, 7),
			func(g *tile.Graph, a *tile.Tensor) *tile.Tensor {
				return g.Contract(tile.Max, tile.CombNone, tile.Shape{}, nil, []tile.Operand{op(a, i)})
			}, []float64{10, 0, 0, 0}},
		{"min_tie", value(t, tile.Float64, tile.Shape{5}, 2, -1, 3, -1, -1),
			func(g *tile.Graph, a *tile.Tensor) *tile.Tensor {
				return g.Contract(tile.Min, tile.CombNone, tile.Shape{}, nil, []tile.Operand{op(a, i)})
			}, []float64{0, 10, 0, 0, 0}},
		// Per row: O[r] = >(A[r, j]). Row 0 ties at columns 1 and 2, row 1
		// at 0 and 2, row 2 has a single maximum.
		{"max_rows", value(t, tile.Float64, tile.Shape{3, 3}, 0, 4, 4, 5, 1, 5, 1, 2, 3),
			func(g *tile.Graph, a *tile.Tensor) *tile.Tensor {
				return g.Contract(tile.Max, tile.CombNone, tile.Shape{3}, []tile.Affine{i}, []tile.Operand{op(a, i, j)})
			}, []float64{0, 10, 0, 20, 0, 0, 0, 0, 30}},
		// 2×2 max pool, stride 2, over a 4×4 input whose top-left window is
		// flat: its first cell wins. The top-right window ties at (0, 3) and
		// (1, 2): (0, 3) comes first in row-major order although (1, 2) comes
		// first column by column. The bottom windows tie on three cells and
		// on the last two.
		{"maxpool_2x2", value(t, tile.Float64, tile.Shape{4, 4},
			6, 6, 0, 3,
			6, 6, 3, 1,
			0, 2, 0, 0,
			2, 2, 1, 1),
			func(g *tile.Graph, a *tile.Tensor) *tile.Tensor {
				return g.Contract(tile.Max, tile.CombNone, tile.Shape{2, 2}, []tile.Affine{y, x},
					[]tile.Operand{op(a, y.Times(2).Plus(i), x.Times(2).Plus(j))}, lt(i, 2), lt(j, 2))
			}, []float64{
				10, 0, 0, 20,
				0, 0, 0, 0,
				0, 30, 0, 0,
				0, 0, 40, 0}},
		// The same with min.
		{"minpool_2x2", value(t, tile.Float64, tile.Shape{4, 4},
			-6, -6, 0, -3,
			-6, -6, -3, -1,
			0, -2, 0, 0,
			-2, -2, -1, -1),
			func(g *tile.Graph, a *tile.Tensor) *tile.Tensor {
				return g.Contract(tile.Min, tile.CombNone, tile.Shape{2, 2}, []tile.Affine{y, x},
					[]tile.Operand{op(a, y.Times(2).Plus(i), x.Times(2).Plus(j))}, lt(i, 2), lt(j, 2))
			}, []float64{
				10, 0, 0, 20,
				0, 0, 0, 0,
				0, 30, 0, 0,
				0, 0, 40, 0}},
		// 'Same' 1-D pool of width 3, stride 2, padding 1, over equal
		// negative values: windows {-1, 0, 1}, {1, 2, 3}, {3, 4, 5}. Cells
		// −1 and 5 lie outside and are skipped, never chosen, so the first
		// windows's first cell is 0, not the padding before it. Cell 1 is
		// first in window 1 and second in window 0.
		{"same_pool_1d", value(t, tile.Float64, tile.Shape{5}, -1, -1, -1, -1, -1),
			func(g *tile.Graph, a *tile.Tensor) *tile.Tensor {
				return g.Contract(tile.Max, tile.CombNone, tile.Shape{3}, []tile.Affine{y},
					[]tile.Operand{op(a, y.Times(2).Plus(i).AddConst(-1))}, lt(i, 3))
			}, []float64{10, 20, 0, 30, 0}},
		// 'Same' 3×3 pool, stride 2, padding 1, over a flat 3×3 input:
		// every window's first cell inside the input is its top-left one
		// after clipping.
		{"same_pool_2d", value(t, tile.Float64, tile.Shape{3, 3}, 5, 5, 5, 5, 5, 5, 5, 5, 5),
			func(g *tile.Graph, a *tile.Tensor) *tile.Tensor {
				return g.Contract(tile.Max, tile.CombNone, tile.Shape{2, 2}, []tile.Affine{y, x},
					[]tile.Operand{op(a, y.Times(2).Plus(i).AddConst(-1), x.Times(2).Plus(j).AddConst(-1))}, lt(i, 3), lt(j, 3))
			}, []float64{
				10, 20, 0,
				30, 40, 0,
				0, 0, 0}},
		// 'Same' 2×2 min pool, stride 1, padding after: the last row and
		// column of windows hang over the bottom and right edges, and the
		// corner window holds a single cell.
		{"same_pool_edges", value(t, tile.Float64, tile.Shape{2, 3}, 1, 0, 0, 0, 0, 1),
			func(g *tile.Graph, a *tile.Tensor) *tile.Tensor {
				return g.Contract(tile.Min, tile.CombNone, tile.Shape{2, 3}, []tile.Affine{y, x},
					[]tile.Operand{op(a, y.Plus(i), x.Plus(j))}, lt(i, 2), lt(j, 2))
			}, []float64{
				0, 10 + 20, 30,
				40, 50, 60}},
		// O[i + j] = >(A[i, j]) over a flat 2×2: output 1 gets (0, 1) and
		// (1, 0), and (0, 1) comes first in (i, j) order.
		{"compound_output", value(t, tile.Float64, tile.Shape{2, 2}, 1, 1, 1, 1),
			func(g *tile.Graph, a *tile.Tensor) *tile.Tensor {
				return g.Contract(tile.Max, tile.CombNone, tile.Shape{3}, []tile.Affine{i.Plus(j)}, []tile.Operand{op(a, i, j)})
			}, []float64{10, 20, 0, 30}},
		// O[i] = >(A[i]), k < 3 reads each A[i] three times, as max(a, a, a),
		// whose derivative is 1, not 3.
		{"repeated_read", value(t, tile.Float64, tile.Shape{2}, 4, -4),
			func(g *tile.Graph, a *tile.Tensor) *tile.Tensor {
				return g.Contract(tile.Max, tile.CombNone, tile.Shape{2}, []tile.Affine{i}, []tile.Operand{op(a, i)}, lt(k, 3))
			}, []float64{10, 20}},
		// A NaN extremum (NaN propagates) sends its cotangent to the NaN;
		// the other window's tie goes to its first cell.
		{"nan", value(t, tile.Float64, tile.Shape{2, 2}, 1, nan, 3, 3),
			func(g *tile.Graph, a *tile.Tensor) *tile.Tensor {
				return g.Contract(tile.Max, tile.CombNone, tile.Shape{2}, []tile.Affine{i}, []tile.Operand{op(a, i, j)})
			}, []float64{0, 10, 20, 0}},
		// Several NaNs in a window: the first, in row-major window order,
		// gets it, for max and min alike. Windows of the 2×2 max pool: the
		// top-left holds NaNs at (0, 1) and (1, 0), the top-right one at
		// (1, 3) after a larger value, the bottom-left none, the
		// bottom-right NaNs only.
		{"nan_maxpool_2x2", value(t, tile.Float64, tile.Shape{4, 4},
			1, nan, 0, 9,
			nan, 2, 3, nan,
			0, 4, nan, nan,
			4, 1, nan, nan),
			func(g *tile.Graph, a *tile.Tensor) *tile.Tensor {
				return g.Contract(tile.Max, tile.CombNone, tile.Shape{2, 2}, []tile.Affine{y, x},
					[]tile.Operand{op(a, y.Times(2).Plus(i), x.Times(2).Plus(j))}, lt(i, 2), lt(j, 2))
			}, []float64{
				0, 10, 0, 0,
				0, 0, 0, 20,
				0, 30, 40, 0,
				0, 0, 0, 0}},
		{"nan_min_rows", value(t, tile.Float64, tile.Shape{2, 3}, -5, nan, nan, 2, -1, -1),
			func(g *tile.Graph, a *tile.Tensor) *tile.Tensor {
				return g.Contract(tile.Min, tile.CombNone, tile.Shape{2}, []tile.Affine{i}, []tile.Operand{op(a, i, j)})
			}, []float64{0, 10, 0, 0, 20, 0}},
		// One point per output element (no ordering index): the NaN gets
		// its cotangent too.
		{"nan_single_point", value(t, tile.Float64, tile.Shape{3}, nan, 2, -1),
			func(g *tile.Graph, a *tile.Tensor) *tile.Tensor {
				return g.Contract(tile.Max, tile.CombNone, tile.Shape{3}, []tile.Affine{i}, []tile.Operand{op(a, i)})
			}, []float64{10, 20, 30}},
		// A box of 70×70 = 4900 points, numbered with Iota nodes rather than
		// a constant: row 1 ties at (3, 5), (5, 3) and (69, 69), and (3, 5)
		// comes first.
		{"large_window", sparse(t, tile.Float64, tile.Shape{2, 70, 70}, 0, map[int]float64{70*70 + 3*70 + 5: 2, 70*70 + 5*70 + 3: 2, 2*70*70 - 1: 2}),
			func(g *tile.Graph, a *tile.Tensor) *tile.Tensor {
				return g.Contract(tile.Max, tile.CombNone, tile.Shape{2}, []tile.Affine{i}, []tile.Operand{op(a, i, j, k)})
			}, sparse(t, tile.Float64, tile.Shape{2, 70, 70}, 0, map[int]float64{0: 10, 70*70 + 3*70 + 5: 20}).Data},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			g := tile.NewGraph(c.name)
			a := g.Input("a", c.in.DType, c.in.Shape)
			o := c.build(g, a)
			w := tile.NewValue(o.DType(), o.Shape())
			for n := range w.Data {
				w.Data[n] = float64(10 * (n + 1))
			}
			got := evalGrads(t, g, sumAll(g, g.Mul(o, g.Constant(w))), []*tile.Tensor{a}, map[string]*tile.Value{"a": c.in})
			if !sameValues(got[0].Data, c.want, 0) {
				t.Errorf("gradient = %v, want %v", got[0].Data, c.want)
			}
		})
	}
}

// sparse returns a value of the given shape holding fill except at the
// row-major offsets in at.
func sparse(t *testing.T, dt tile.DType, shape tile.Shape, fill float64, at map[int]float64) *tile.Value {
	t.Helper()
	data := make([]float64, shape.Size())
	for n := range data {
		data[n] = fill
	}
	for n, v := range at {
		data[n] = v
	}
	return value(t, dt, shape, data...)
}

// TestPositions checks the position tensor of the max and min rule: 1 plus
// the row-major offset, in the operand's dtype where that dtype holds every
// position exactly (bf16 only up to 256, f16 up to 2048) and in i32
// otherwise, as a constant for small boxes and from Iota nodes for large ones.
func TestPositions(t *testing.T) {
	cases := []struct {
		box    tile.Shape
		dt     tile.DType
		wantDT tile.DType
		iota   bool
	}{
		{tile.Shape{2, 3}, tile.Float32, tile.Float32, false},
		{tile.Shape{255}, tile.BFloat16, tile.BFloat16, false},
		{tile.Shape{256}, tile.BFloat16, tile.Int32, false},
		{tile.Shape{2047}, tile.Float16, tile.Float16, false},
		{tile.Shape{2048}, tile.Float16, tile.Int32, false},
		{tile.Shape{64, 64}, tile.Float64, tile.Float64, false},
		{tile.Shape{3, 40, 50}, tile.Float64, tile.Float64, true},
		{tile.Shape{5000}, tile.BFloat16, tile.Int32, true},
	}
	for _, c := range cases {
		t.Run(fmt.Sprintf("%v_%v", c.dt, c.box), func(t *testing.T) {
			g := tile.NewGraph("positions")
			p := positions(g, c.box, c.dt)
			if err := g.Err(); err != nil {
				t.Fatal(err)
			}
			_, isConst := p.Op().(*tile.ConstantOp)
			if p.DType() != c.wantDT || !p.Shape().Equal(c.box) || isConst == c.iota {
				t.Fatalf("positions are %s%v (constant: %v), want %s%v (constant: %v)", p.DType(), p.Shape(), isConst, c.wantDT, c.box, !c.iota)
			}
			m, err := ref.New(g)
			if err != nil {
				t.Fatal(err)
			}
			vals, err := m.Eval(nil, p)
			if err != nil {
				t.Fatal(err)
			}
			for n, v := range vals[0].Data {
				if v != float64(n+1) {
					t.Fatalf("position %d is %v, want %d", n, v, n+1)
				}
			}
		})
	}
}

// TestExtremeTooManyPoints checks that a max contraction whose reduction
// indices span more points than i32 numbers is refused before the graph is
// touched.
func TestExtremeTooManyPoints(t *testing.T) {
	g := tile.NewGraph("big")
	a := g.Input("a", tile.Float32, tile.Shape{1 << 16, 1 << 16})
	o := g.Contract(tile.Max, tile.CombNone, tile.Shape{}, nil, []tile.Operand{op(a, ix("i", "j")...)})
	before := len(g.Nodes())
	_, err := Grad(g, o, a)
	if err == nil || !strings.Contains(err.Error(), "too many to number") || !strings.Contains(err.Error(), "A[i, j]") {
		t.Fatalf("got error %v, want one about numbering the points of the contraction", err)
	}
	if len(g.Nodes()) != before || g.Err() != nil {
		t.Errorf("a rejected gradient added %d nodes (graph error %v)", len(g.Nodes())-before, g.Err())
	}
}

func TestContractionUnsupported(t *testing.T) {
	i, j := tile.Ix("i"), tile.Ix("j")
	cases := []struct {
		name string
		agg  tile.Agg
		comb tile.Comb
		want string
	}{
		{"max_of_product", tile.Max, tile.CombMul, "differentiable only over a single operand"},
		{"min_of_sum", tile.Min, tile.CombAdd, "differentiable only over a single operand"},
		{"prod_of_sum", tile.Prod, tile.CombAdd, "product aggregation of a sum"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			g := tile.NewGraph(c.name)
			a := g.Input("a", tile.Float64, tile.Shape{3})
			b := g.Input("b", tile.Float64, tile.Shape{4})
			o := g.Contract(c.agg, c.comb, tile.Shape{3}, []tile.Affine{i}, []tile.Operand{op(a, i), op(b, j)})
			y := sumAll(g, o)
			before := len(g.Nodes())
			_, err := Grad(g, y, a)
			if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "A[i]") {
				t.Fatalf("got error %v, want one containing %q and the contraction", err, c.want)
			}
			if len(g.Nodes()) != before || g.Err() != nil {
				t.Errorf("a rejected gradient added %d nodes (graph error %v)", len(g.Nodes())-before, g.Err())
			}
		})
	}
}
