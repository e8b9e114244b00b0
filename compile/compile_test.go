package compile

import (
	"testing"

	"github.com/tartanml/tartan/tile"
)

const (
	f64 = tile.Float64
	f32 = tile.Float32
	i32 = tile.Int32
	i64 = tile.Int64
)

type graphCase struct {
	name  string
	build func(g *tile.Graph)
	intHi int // integer inputs are drawn from [0, intHi)
	runs  int // times to run (variables carry over)
}

func s(dims ...int) tile.Shape { return tile.Shape(dims) }

// convInput and friends declare the tensors of the convolution cases.
func conv2dForward(g *tile.Graph, stride int) *tile.Tensor {
	x := g.Input("x", f64, s(2, 5, 5, 3))
	k := g.Input("k", f64, s(3, 3, 3, 4))
	out := (5 + stride - 1) / stride
	e := func(v, w string) string {
		if stride == 1 {
			return v + " + " + w + " - 1"
		}
		return "2*" + v + " + " + w + " - 1"
	}
	return contract(g, tile.Sum, tile.CombMul, s(2, out, out, 4), "n, y, x, c",
		[]tile.Operand{opd(x, "n, "+e("y", "i")+", "+e("x", "j")+", d"), opd(k, "i, j, d, c")})
}

var graphCases = []graphCase{
	// Matrix products.
	{name: "matmul", build: func(g *tile.Graph) {
		a, b := g.Input("a", f64, s(3, 4)), g.Input("b", f64, s(4, 5))
		g.SetOutput("y", contract(g, tile.Sum, tile.CombMul, s(3, 5), "i, j", []tile.Operand{opd(a, "i, k"), opd(b, "k, j")}))
	}},
	{name: "matmul_transposed_operands", build: func(g *tile.Graph) {
		a, b := g.Input("a", f64, s(4, 3)), g.Input("b", f64, s(5, 4))
		at, bt := g.Transpose(a, []int{1, 0}), g.Transpose(b, []int{1, 0})
		g.SetOutput("y", contract(g, tile.Sum, tile.CombMul, s(3, 5), "i, j", []tile.Operand{opd(at, "i, k"), opd(bt, "k, j")}))
	}},
	{name: "batched_matmul_broadcast_batch", build: func(g *tile.Graph) {
		a, b := g.Input("a", f64, s(2, 3, 4)), g.Input("b", f64, s(1, 4, 2))
		g.SetOutput("y", contract(g, tile.Sum, tile.CombMul, s(2, 3, 2), "b, i, j", []tile.Operand{opd(a, "b, i, k"), opd(b, "0, k, j")}))
	}},
	{name: "dot_and_outer", build: func(g *tile.Graph) {
		a, b := g.Input("a", f64, s(6)), g.Input("b", f64, s(6))
		g.SetOutput("dot", contract(g, tile.Sum, tile.CombMul, s(), "", []tile.Operand{opd(a, "k"), opd(b, "k")}))
		g.SetOutput("outer", contract(g, tile.Sum, tile.CombMul, s(6, 6), "i, j", []tile.Operand{opd(a, "i"), opd(b, "j")}))
		g.SetOutput("sum_add", contract(g, tile.Sum, tile.CombAdd, s(6), "i", []tile.Operand{opd(a, "i"), opd(b, "j")}))
	}},
	{name: "matmul_of_reshaped_temp", build: func(g *tile.Graph) {
		x := g.Input("x", f64, s(2, 3, 2, 2))
		w := g.Input("w", f64, s(12, 3))
		h := g.Reshape(g.Exp(x), s(2, 12))
		g.SetOutput("y", contract(g, tile.Sum, tile.CombMul, s(2, 3), "i, j", []tile.Operand{opd(h, "i, k"), opd(w, "k, j")}))
	}},
	// Convolutions and their gradients.
	{name: "conv_same_stride1", build: func(g *tile.Graph) { g.SetOutput("y", conv2dForward(g, 1)) }},
	{name: "conv_pad_stride2", build: func(g *tile.Graph) { g.SetOutput("y", conv2dForward(g, 2)) }},
	{name: "conv_bias_relu", build: func(g *tile.Graph) {
		b := g.Input("b", f64, s(4))
		y := conv2dForward(g, 1)
		g.SetOutput("y", g.Maximum(g.Add(y, b), g.Scalar(0, f64)))
	}},
	{name: "conv_grad_input_stride1", build: func(g *tile.Graph) {
		dO, k := g.Input("dO", f64, s(2, 5, 5, 4)), g.Input("k", f64, s(3, 3, 3, 4))
		g.SetOutput("dI", contract(g, tile.Sum, tile.CombMul, s(2, 5, 5, 3), "n, y + i - 1, x + j - 1, d",
			[]tile.Operand{opd(dO, "n, y, x, c"), opd(k, "i, j, d, c")}))
	}},
	{name: "conv_grad_input_stride2", build: func(g *tile.Graph) {
		dO, k := g.Input("dO", f64, s(2, 3, 3, 4)), g.Input("k", f64, s(3, 3, 3, 4))
		g.SetOutput("dI", contract(g, tile.Sum, tile.CombMul, s(2, 5, 5, 3), "n, 2*y + i - 1, 2*x + j - 1, d",
			[]tile.Operand{opd(dO, "n, y, x, c"), opd(k, "i, j, d, c")}))
	}},
	{name: "conv_grad_kernel_stride2", build: func(g *tile.Graph) {
		x, dO := g.Input("x", f64, s(2, 5, 5, 3)), g.Input("dO", f64, s(2, 3, 3, 4))
		g.SetOutput("dK", contract(g, tile.Sum, tile.CombMul, s(3, 3, 3, 4), "i, j, d, c",
			[]tile.Operand{opd(x, "n, 2*y + i - 1, 2*x + j - 1, d"), opd(dO, "n, y, x, c")}))
	}},
	// Pooling.
	{name: "maxpool_and_grad", build: func(g *tile.Graph) {
		x := g.Input("x", f64, s(2, 4, 5, 3))
		dO := g.Input("dO", f64, s(2, 2, 2, 3))
		o := contract(g, tile.Max, tile.CombNone, s(2, 2, 2, 3), "n, y, x, c",
			[]tile.Operand{opd(x, "n, 2*y + i, 2*x + j, c")}, "i < 2", "j < 2")
		g.SetOutput("o", o)
		g.SetOutput("dI", contract(g, tile.Sum, tile.CombEq, s(2, 4, 5, 3), "n, 2*y + i, 2*x + j, c",
			[]tile.Operand{opd(x, "n, 2*y + i, 2*x + j, c"), opd(o, "n, y, x, c"), opd(dO, "n, y, x, c")}, "i < 2", "j < 2"))
	}},
	{name: "eq_select_under_max", build: func(g *tile.Graph) {
		a, b, c := g.Input("a", i32, s(4, 3)), g.Input("b", i32, s(4)), g.Input("c", f64, s(4, 3))
		g.SetOutput("y", contract(g, tile.Max, tile.CombEq, s(3), "j", []tile.Operand{opd(a, "i, j"), opd(b, "i"), opd(c, "i, j")}))
	}, intHi: 3},
	{name: "avgpool_overlapping", build: func(g *tile.Graph) {
		x := g.Input("x", f64, s(7))
		sum := contract(g, tile.Sum, tile.CombNone, s(6), "y", []tile.Operand{opd(x, "y + i")}, "i < 2")
		g.SetOutput("y", g.Div(sum, g.Scalar(2, f64)))
	}},
	// Reductions.
	{name: "reductions", build: func(g *tile.Graph) {
		x := g.Input("x", f64, s(3, 4, 5))
		g.SetOutput("sum1", contract(g, tile.Sum, tile.CombNone, s(3, 5), "i, k", []tile.Operand{opd(x, "i, j, k")}))
		g.SetOutput("max_all", contract(g, tile.Max, tile.CombNone, s(), "", []tile.Operand{opd(x, "i, j, k")}))
		g.SetOutput("min0", contract(g, tile.Min, tile.CombNone, s(4, 5), "j, k", []tile.Operand{opd(x, "i, j, k")}))
		g.SetOutput("prod2", contract(g, tile.Prod, tile.CombNone, s(3, 4), "i, j", []tile.Operand{opd(x, "i, j, k")}))
		g.SetOutput("assign_last", contract(g, tile.Assign, tile.CombNone, s(3), "i", []tile.Operand{opd(x, "i, j, k")}))
	}},
	{name: "reduction_of_elementwise_chain", build: func(g *tile.Graph) {
		x := g.Input("x", f64, s(4, 6))
		e := g.Mul(g.Exp(g.Sub(x, g.Scalar(1, f64))), g.Scalar(3, f64))
		g.SetOutput("y", contract(g, tile.Sum, tile.CombNone, s(4), "i", []tile.Operand{opd(e, "i, j")}))
	}},
	{name: "compound_outputs", build: func(g *tile.Graph) {
		a := g.Input("a", f64, s(3, 3))
		v := g.Input("v", f64, s(4))
		g.SetOutput("assign_overlap", contract(g, tile.Assign, tile.CombNone, s(5), "i + j", []tile.Operand{opd(a, "i, j")}))
		g.SetOutput("diagonal", contract(g, tile.Sum, tile.CombNone, s(4, 4), "i, i", []tile.Operand{opd(v, "i")}))
		g.SetOutput("constant_dim", contract(g, tile.Sum, tile.CombNone, s(2, 4), "1, i", []tile.Operand{opd(v, "i")}))
		g.SetOutput("reverse", contract(g, tile.Sum, tile.CombNone, s(4), "3 - i", []tile.Operand{opd(v, "i")}))
		g.SetOutput("stride3", contract(g, tile.Sum, tile.CombNone, s(10), "3*i", []tile.Operand{opd(v, "i")}))
		g.SetOutput("neg_stride2", contract(g, tile.Sum, tile.CombNone, s(8), "7 - 2*i", []tile.Operand{opd(v, "i")}))
		g.SetOutput("rotated", contract(g, tile.Sum, tile.CombNone, s(5, 5), "i + j, i - j + 2", []tile.Operand{opd(a, "i, j")}))
		g.SetOutput("empty_space", contract(g, tile.Sum, tile.CombNone, s(2), "i", []tile.Operand{opd(v, "i + 5")}))
		g.SetOutput("sum_window", contract(g, tile.Max, tile.CombNone, s(4), "i - j", []tile.Operand{opd(a, "i, j")}))
	}},
	// Softmax-like chains.
	{name: "softmax_logsoftmax", build: func(g *tile.Graph) {
		x := g.Input("x", f64, s(4, 6))
		m := contract(g, tile.Max, tile.CombNone, s(4, 1), "i, 0", []tile.Operand{opd(x, "i, j")})
		z := g.Sub(x, m)
		e := g.Exp(z)
		sum := contract(g, tile.Sum, tile.CombNone, s(4, 1), "i, 0", []tile.Operand{opd(e, "i, j")})
		g.SetOutput("softmax", g.Div(e, sum))
		g.SetOutput("logsoftmax", g.Sub(z, g.Log(sum)))
	}},
	// Broadcasting.
	{name: "broadcasting", build: func(g *tile.Graph) {
		a, b := g.Input("a", f64, s(3, 1)), g.Input("b", f64, s(4))
		c := g.Input("c", f64, s(2, 1, 4))
		g.SetOutput("ab", g.Add(a, b))
		g.SetOutput("abc", g.Mul(g.Add(a, b), c))
		g.SetOutput("scalar", g.Sub(g.Scalar(2, f64), c))
	}},
	// Shape ops.
	{name: "shape_ops", build: func(g *tile.Graph) {
		x := g.Input("x", f64, s(2, 3, 4))
		g.SetOutput("transpose", g.Transpose(x, []int{2, 0, 1}))
		g.SetOutput("reshape", g.Reshape(x, s(4, 6)))
		g.SetOutput("slice", g.Slice(x, []int{0, 1, 0}, []int{2, 3, 4}, []int{1, 1, 3}))
		g.SetOutput("pad", g.Pad(x, []int{1, 0, 2}, []int{0, 2, 1}, -7))
		g.SetOutput("concat", g.Concat(1, x, g.Neg(x), g.Slice(x, []int{0, 0, 0}, []int{2, 1, 4}, nil)))
		g.SetOutput("broadcast", g.BroadcastTo(g.Slice(x, []int{0, 0, 0}, []int{1, 3, 1}, nil), s(2, 2, 3, 4)))
		chain := g.Transpose(g.Reshape(g.Pad(g.Exp(x), []int{0, 1, 0}, []int{0, 0, 0}, 0.5), s(2, 16)), []int{1, 0})
		g.SetOutput("chain", chain)
	}},
	{name: "pad_of_expression_in_contraction", build: func(g *tile.Graph) {
		x := g.Input("x", f64, s(5))
		p := g.Pad(g.Tanh(x), []int{2}, []int{1}, 1)
		g.SetOutput("y", contract(g, tile.Sum, tile.CombNone, s(6), "i", []tile.Operand{opd(p, "i + j")}, "j < 3"))
	}},
	{name: "gather_scatter", build: func(g *tile.Graph) {
		data := g.Input("data", f64, s(5, 3))
		ind := g.Input("ind", i32, s(2, 2))
		ind1 := g.Input("ind1", i64, s(4))
		upd := g.Input("upd", f64, s(2, 2, 3))
		g.SetOutput("gather0", g.Gather(data, ind, 0))
		g.SetOutput("gather1", g.Gather(data, ind1, 1))
		g.SetOutput("gather_expr", g.Gather(g.Mul(data, data), ind, 0))
		g.SetOutput("scatter", g.ScatterAdd(upd, ind, 0, s(5, 3)))
		g.SetOutput("scatter1", g.ScatterAdd(g.Gather(data, ind1, 1), ind1, 1, s(5, 3)))
	}, intHi: 6},
	{name: "gather_out_of_range", build: func(g *tile.Graph) {
		data := g.Input("data", f64, s(4))
		ind := g.Constant(&tile.Value{DType: i32, Shape: s(5), Data: []float64{-1, 0, 3, 4, 9}})
		g.SetOutput("y", g.Gather(g.Exp(data), ind, 0))
		g.SetOutput("s", g.ScatterAdd(data.Graph().Slice(data, []int{0}, []int{4}, nil), g.Slice(ind, []int{1}, []int{5}, nil), 0, s(4)))
	}},
	{name: "iota_random_cast_onehot", build: func(g *tile.Graph) {
		seed := g.Input("seed", i64, s())
		lab := g.Input("lab", i32, s(5))
		x := g.Input("x", f64, s(3, 4))
		g.SetOutput("iota_f", g.Iota(f64, s(3, 4), 1))
		g.SetOutput("iota_i", g.Add(g.Iota(i32, s(3, 4), 0), g.Scalar(2, i32)))
		r := g.Random(seed, f64, s(3, 4), 7)
		g.SetOutput("random", r)
		keep := g.Elementwise(tile.Ge, r, g.Scalar(0.3, f64))
		g.SetOutput("dropout", g.Select(keep, g.Div(x, g.Scalar(0.7, f64)), g.Scalar(0, f64)))
		g.SetOutput("onehot", g.OneHot(lab, 4, f32))
		g.SetOutput("cast", g.Cast(g.Cast(g.Mul(x, g.Scalar(3, f64)), i32), f64))
		g.SetOutput("cast_bool", g.Cast(keep, f64))
	}, intHi: 5},
	{name: "elementwise_all", build: func(g *tile.Graph) {
		x, y := g.Input("x", f64, s(7)), g.Input("y", f64, s(7))
		pos := g.Add(g.Elementwise(tile.Abs, x), g.Scalar(0.5, f64))
		for _, f := range []tile.Fn{tile.Neg, tile.Abs, tile.Sign, tile.Tanh, tile.Sigmoid, tile.Erf, tile.Floor, tile.Ceil, tile.Exp} {
			g.SetOutput(f.String(), g.Elementwise(f, x))
		}
		for _, f := range []tile.Fn{tile.Log, tile.Log1p, tile.Sqrt, tile.Rsqrt, tile.Recip} {
			g.SetOutput(f.String(), g.Elementwise(f, pos))
		}
		for _, f := range []tile.Fn{tile.Add, tile.Sub, tile.Mul, tile.Div, tile.Maximum, tile.Minimum} {
			g.SetOutput(f.String(), g.Elementwise(f, x, y))
		}
		g.SetOutput("pow", g.Elementwise(tile.Pow, pos, y))
		for _, f := range []tile.Fn{tile.Eq, tile.Ne, tile.Lt, tile.Le, tile.Gt, tile.Ge} {
			g.SetOutput(f.String(), g.Elementwise(f, g.Elementwise(tile.Floor, x), g.Elementwise(tile.Floor, y)))
		}
		p, q := g.Elementwise(tile.Gt, x, y), g.Elementwise(tile.Lt, x, g.Scalar(0, f64))
		g.SetOutput("and", g.Elementwise(tile.And, p, q))
		g.SetOutput("or", g.Elementwise(tile.Or, p, q))
		g.SetOutput("not", g.Elementwise(tile.Not, p))
		g.SetOutput("select", g.Select(p, x, y))
	}},
	{name: "integer_arithmetic", build: func(g *tile.Graph) {
		a, b := g.Input("a", i32, s(8)), g.Input("b", i32, s(8))
		c := g.Sub(b, g.Scalar(2, i32))
		g.SetOutput("div", g.Div(a, c))
		g.SetOutput("mul", g.Mul(g.Mul(a, c), g.Scalar(1<<29, i32)))
		g.SetOutput("maxmin", g.Maximum(g.Minimum(a, c), g.Neg(c)))
		g.SetOutput("sum", contract(g, tile.Sum, tile.CombNone, s(), "", []tile.Operand{opd(a, "i")}))
	}, intHi: 5},
	{name: "float32_chain", build: func(g *tile.Graph) {
		x := g.Input("x", f32, s(3, 4))
		w := g.Input("w", f32, s(4, 2))
		h := g.Tanh(g.Mul(x, g.Scalar(1.5, f32)))
		g.SetOutput("y", g.Exp(contract(g, tile.Sum, tile.CombMul, s(3, 2), "i, j", []tile.Operand{opd(h, "i, k"), opd(w, "k, j")})))
	}},
	{name: "zero_sized", build: func(g *tile.Graph) {
		x := g.Input("x", f64, s(0, 3))
		y := g.Input("y", f64, s(2, 3))
		g.SetOutput("exp", g.Exp(x))
		g.SetOutput("sum_empty", contract(g, tile.Sum, tile.CombNone, s(3), "j", []tile.Operand{opd(x, "i, j")}))
		g.SetOutput("max_empty", contract(g, tile.Max, tile.CombNone, s(3), "j", []tile.Operand{opd(x, "i, j")}))
		g.SetOutput("concat", g.Concat(0, x, y, x))
		z := g.Input("z", f64, s(3, 0, 5))
		g.SetOutput("reshape", g.Reshape(g.Exp(z), s(0, 15)))
		g.SetOutput("mm", contract(g, tile.Sum, tile.CombMul, s(2, 2), "i, j", []tile.Operand{opd(y, "i, k"), opd(g.Slice(y, []int{0, 0}, []int{2, 0}, nil), "j, k")}))
	}},
	// Simplification.
	{name: "identities_and_cse", build: func(g *tile.Graph) {
		x := g.Input("x", f64, s(3, 4))
		zero, one := g.Scalar(0, f64), g.Scalar(1, f64)
		y := g.Div(g.Mul(g.Sub(g.Add(x, zero), zero), one), one)
		y = g.Neg(g.Neg(y))
		y = g.Reshape(g.Reshape(y, s(12)), s(4, 3))
		y = g.Transpose(g.Transpose(y, []int{1, 0}), []int{1, 0})
		a := g.Exp(y)
		b := g.Exp(y)
		g.SetOutput("y", g.Add(a, b))
		c := g.Constant(&tile.Value{DType: f64, Shape: s(3), Data: []float64{1, 2, 3}})
		g.SetOutput("folded", g.Add(g.Mul(c, c), g.Exp(c)))
	}},
	// Variables.
	{name: "sgd_dense", runs: 2, build: func(g *tile.Graph) {
		x, dy := g.Input("x", f64, s(3, 4)), g.Input("dy", f64, s(3, 2))
		w := g.Variable("w", f64, s(4, 2))
		dw := contract(g, tile.Sum, tile.CombMul, s(4, 2), "i, j", []tile.Operand{opd(x, "n, i"), opd(dy, "n, j")})
		g.Update(w, g.Sub(w, g.Mul(g.Scalar(0.1, f64), dw)))
		g.SetOutput("loss", contract(g, tile.Sum, tile.CombMul, s(), "", []tile.Operand{opd(w, "i, j"), opd(w, "i, j")}))
	}},
	{name: "adam", runs: 3, build: buildAdam},
	{name: "swap_variables", runs: 3, build: func(g *tile.Graph) {
		a, b := g.Variable("a", f64, s(2, 3)), g.Variable("b", f64, s(2, 3))
		g.Update(a, b)
		g.Update(b, a)
	}},
	{name: "rotate_through_expressions", runs: 3, build: func(g *tile.Graph) {
		a, b, c := g.Variable("a", f64, s(4)), g.Variable("b", f64, s(4)), g.Variable("c", f64, s(4))
		g.Update(a, g.Add(b, g.Scalar(1, f64)))
		g.Update(b, g.Mul(c, g.Scalar(2, f64)))
		g.Update(c, g.Neg(a))
	}},
	{name: "variable_updates_misc", runs: 3, build: func(g *tile.Graph) {
		x := g.Input("x", f64, s(3))
		count := g.Variable("count", f64, s())
		g.SetOutput("before", count)
		g.Update(count, g.Add(count, g.Scalar(1, f64)))
		fromIn := g.Variable("from_input", f64, s(3))
		g.Update(fromIn, x)
		reset := g.Variable("reset", f64, s(3))
		g.SetOutput("reset_old", g.Mul(reset, g.Scalar(2, f64)))
		g.Update(reset, g.BroadcastTo(g.Scalar(0, f64), s(3)))
		sq := g.Variable("square", f64, s(3, 3))
		g.Update(sq, g.Transpose(sq, []int{1, 0}))
		both := g.Variable("both", f64, s(3))
		next := g.Add(both, x)
		g.Update(both, next)
		g.SetOutput("mix", g.Sub(next, both))
		same := g.Variable("same", f64, s(2))
		g.Update(same, same)
		g.SetOutput("same_out", same)
		shared := g.Variable("shared", f64, s(3))
		g.Update(shared, next)
		g.SetOutput("x_out", x)
	}},
}

// buildAdam is an Adam step on a dense layer's weights.
func buildAdam(g *tile.Graph) {
	x, dy := g.Input("x", f64, s(3, 4)), g.Input("dy", f64, s(3, 2))
	w := g.Variable("w", f64, s(4, 2))
	m, v := g.Variable("m", f64, s(4, 2)), g.Variable("v", f64, s(4, 2))
	c := func(x float64) *tile.Tensor { return g.Scalar(x, f64) }
	grad := contract(g, tile.Sum, tile.CombMul, s(4, 2), "i, j", []tile.Operand{opd(x, "n, i"), opd(dy, "n, j")})
	m2 := g.Add(g.Mul(c(0.9), m), g.Mul(c(0.1), grad))
	v2 := g.Add(g.Mul(c(0.999), v), g.Mul(c(0.001), g.Mul(grad, grad)))
	w2 := g.Sub(w, g.Div(g.Mul(c(0.01), m2), g.Add(g.Sqrt(v2), c(1e-7))))
	g.Update(m, m2)
	g.Update(v, v2)
	g.Update(w, w2)
}

func TestCompileMatchesReference(t *testing.T) {
	for _, c := range graphCases {
		t.Run(c.name, func(t *testing.T) {
			g := tile.NewGraph(c.name)
			c.build(g)
			intHi := c.intHi
			if intHi == 0 {
				intHi = 3
			}
			runs := max(c.runs, 1)
			tol := 1e-9
			for _, n := range g.Nodes() {
				if n.DType() == f32 {
					tol = 1e-5
				}
			}
			checkAgainstRef(t, g, testTarget, 11, intHi, runs, tol)
			// A different target changes the schedule, never the results.
			checkAgainstRef(t, g, Target{Backend: "opencl", ComputeUnits: 16, MaxWorkGroup: 64, VectorWidth: 4}, 11, intHi, runs, tol)
		})
	}
}
