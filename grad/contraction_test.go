package grad

import (
	"strings"
	"testing"

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
		// Max with a tie: both maxima receive the whole cotangent.
		{"max_tie", []*tile.Value{value(t, tile.Float64, tile.Shape{4}, 3, 1, 3, 2)},
			func(g *tile.Graph, a []*tile.Tensor) *tile.Tensor {
				return g.Contract(tile.Max, tile.CombNone, tile.Shape{}, nil, []tile.Operand{op(a[0], i)})
			}, [][]float64{{1, 0, 1, 0}}},
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
