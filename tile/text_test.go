package tile_test

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/tartanml/tartan/ref"
	"github.com/tartanml/tartan/tile"
)

// roundTripGraphs builds graphs through the builder API that together contain
// every node kind, every elementwise function, aggregation and combination,
// and the awkward names and numbers the textual form must carry.
var roundTripGraphs = []struct {
	name  string
	build func(g *tile.Graph)
}{
	{"leaves and names", func(g *tile.Graph) {
		a := g.Input("t9", tile.Float32, tile.Shape{2})
		g.Input("conv/kernel", tile.Float32, tile.Shape{2, 2, 1, 4})
		g.Input("a-b:0", tile.Int32, tile.Shape{})
		g.Input("x.y", tile.Bool, tile.Shape{3})
		g.Input("a/", tile.Float64, tile.Shape{0, 2})
		g.Input("_", tile.Int64, tile.Shape{1})
		g.Input("input", tile.Float16, tile.Shape{1})
		v := g.Variable("opt/adam.m:0", tile.Float32, tile.Shape{2})
		g.Variable("graph", tile.BFloat16, tile.Shape{2, 1})
		n := g.Neg(a) // node 9, printed t9_ as input t9 owns t9
		g.SetOutput("t9", a)
		g.SetOutput("out-1", n)
		g.SetOutput("output", v)
		g.Update(v, n)
	}},
	{"graph name needing quotes", func(g *tile.Graph) {
		g.SetOutput("y", g.Scalar(1, tile.Float32))
	}},
	{"constants", func(g *tile.Graph) {
		g.Scalar(0.1, tile.Float32)
		g.Scalar(1.0/3, tile.Float64)
		g.Scalar(math.NaN(), tile.Float32)
		g.Scalar(math.Inf(1), tile.Float64)
		g.Scalar(math.Inf(-1), tile.Float32)
		g.Scalar(math.Copysign(0, -1), tile.Float64)
		g.Scalar(5e-324, tile.Float64)
		g.Scalar(math.MaxFloat64, tile.Float64)
		g.Scalar(math.SmallestNonzeroFloat32, tile.Float32)
		g.Scalar(65504, tile.Float16)
		g.Scalar(-1.5e38, tile.BFloat16)
		g.Scalar(1<<60, tile.Int64)
		g.Scalar(-1<<62, tile.Int64)
		g.Scalar(math.Inf(1), tile.Int64)
		g.Scalar(-2147483648, tile.Int32)
		g.Scalar(1, tile.Bool)
		c, _ := tile.ValueOf(tile.Float32, tile.Shape{2, 3}, []float64{1, 2, 3.5, -0.25, 1e-7, 3e38})
		g.Constant(c)
		c, _ = tile.ValueOf(tile.Bool, tile.Shape{3}, []float64{1, 0, 1})
		g.Constant(c)
		c, _ = tile.ValueOf(tile.Int32, tile.Shape{1, 2}, []float64{-7, 123456789})
		g.Constant(c)
		c, _ = tile.ValueOf(tile.Float64, tile.Shape{0, 4}, nil)
		g.SetOutput("empty", g.Constant(c))
	}},
	{"contractions", func(g *tile.Graph) {
		i, j, k, y := tile.Ix("i"), tile.Ix("j"), tile.Ix("k"), tile.Ix("y")
		a := g.Input("A", tile.Float32, tile.Shape{4, 3})
		b := g.Input("B", tile.Float32, tile.Shape{3, 4})
		c := g.Input("C", tile.Float32, tile.Shape{4})
		for _, agg := range []tile.Agg{tile.Sum, tile.Max, tile.Min, tile.Prod, tile.Assign} {
			g.Contract(agg, tile.CombNone, tile.Shape{4}, []tile.Affine{i}, []tile.Operand{{Tensor: a, Index: []tile.Affine{i, j}}})
		}
		g.Contract(tile.Sum, tile.CombMul, tile.Shape{4, 4}, []tile.Affine{i, k},
			[]tile.Operand{{Tensor: a, Index: []tile.Affine{i, j}}, {Tensor: b, Index: []tile.Affine{j, k}}})
		g.Contract(tile.Max, tile.CombAdd, tile.Shape{4}, []tile.Affine{i},
			[]tile.Operand{{Tensor: a, Index: []tile.Affine{i, j}}, {Tensor: b, Index: []tile.Affine{j, i}}})
		g.Contract(tile.Sum, tile.CombEq, tile.Shape{4}, []tile.Affine{i},
			[]tile.Operand{{Tensor: c, Index: []tile.Affine{i}}, {Tensor: c, Index: []tile.Affine{j}}, {Tensor: c, Index: []tile.Affine{j}}})
		// A compound output index, negative coefficients and constraints.
		g.Contract(tile.Sum, tile.CombNone, tile.Shape{9}, []tile.Affine{y.Times(2).Plus(i).AddConst(-1)},
			[]tile.Operand{{Tensor: c, Index: []tile.Affine{y.Times(-1).AddConst(3)}}},
			tile.Constraint{Expr: i, Bound: 3}, tile.Constraint{Expr: i.Plus(y), Bound: 5})
		// A scalar output and a scalar operand.
		s := g.Contract(tile.Sum, tile.CombNone, tile.Shape{}, nil, []tile.Operand{{Tensor: a, Index: []tile.Affine{i, j}}})
		g.Contract(tile.Sum, tile.CombMul, tile.Shape{4}, []tile.Affine{i},
			[]tile.Operand{{Tensor: c, Index: []tile.Affine{i}}, {Tensor: s, Index: nil}})
		// An operand read with a non-canonical expression (two terms in i).
		g.Contract(tile.Sum, tile.CombNone, tile.Shape{2}, []tile.Affine{i},
			[]tile.Operand{{Tensor: c, Index: []tile.Affine{{Terms: []tile.Term{{Index: "i", Coef: 1}, {Index: "i", Coef: 1}}}}}})
	}},
	{"elementwise", func(g *tile.Graph) {
		x := g.Input("x", tile.Float32, tile.Shape{2, 3})
		n := g.Input("n", tile.Int32, tile.Shape{2, 3})
		p := g.Input("p", tile.Bool, tile.Shape{2, 3})
		for f := tile.Neg; f.Arity() > 0; f++ {
			var args []*tile.Tensor
			switch {
			case f == tile.Select:
				args = []*tile.Tensor{p, x, x}
			case f == tile.Not || f == tile.And || f == tile.Or:
				args = []*tile.Tensor{p, p}[:f.Arity()]
			default:
				args = []*tile.Tensor{x, x}[:f.Arity()]
			}
			g.Elementwise(f, args...)
		}
		g.Elementwise(tile.Abs, n)
		g.Elementwise(tile.Div, n, n)
		// Broadcasting inserts broadcast nodes that Print writes out.
		g.Add(x, g.Input("row", tile.Float32, tile.Shape{3}))
		g.Maximum(x, g.Scalar(0, tile.Float32))
	}},
	{"shape ops", func(g *tile.Graph) {
		x := g.Input("x", tile.Float32, tile.Shape{2, 3, 4})
		idx := g.Input("idx", tile.Int32, tile.Shape{5})
		seed := g.Input("seed", tile.Int64, tile.Shape{})
		g.Cast(x, tile.Float64)
		g.Cast(x, tile.Bool)
		g.StopGradient(x)
		r := g.Reshape(x, tile.Shape{-1, 4})
		g.Transpose(x, []int{2, 0, 1})
		g.Slice(x, []int{0, 1, 0}, []int{2, 3, 4}, []int{1, 1, 3})
		g.Slice(x, []int{1, 0, 0}, []int{1, 3, 4}, nil)
		g.Concat(-1, r, r, r)
		g.Pad(x, []int{0, 1, 2}, []int{3, 0, 1}, 0.1)
		g.Pad(x, []int{0, 0, 1}, []int{0, 0, 0}, math.NaN())
		g.Pad(idx, []int{1}, []int{1}, -1)
		g.BroadcastTo(x, tile.Shape{5, 2, 3, 4})
		gat := g.Gather(x, idx, 1)
		g.ScatterAdd(gat, idx, 1, tile.Shape{2, 3, 4})
		g.Gather(r, g.Input("ix2", tile.Int64, tile.Shape{2, 2}), 0)
		g.Iota(tile.Int32, tile.Shape{3, 4}, 1)
		g.Iota(tile.Float32, tile.Shape{3}, -1)
		g.Random(seed, tile.Float32, tile.Shape{3, 4}, 7)
		g.Random(seed, tile.Float64, tile.Shape{}, math.MaxUint64)
		g.SetOutput("onehot", g.OneHot(idx, 4, tile.Float32))
	}},
}

// TestRoundTrip checks that Parse(Print(g)) rebuilds g node for node and that
// printing it again gives the same text.
func TestRoundTrip(t *testing.T) {
	for _, c := range roundTripGraphs {
		t.Run(c.name, func(t *testing.T) {
			name := "rt"
			if c.name == "graph name needing quotes" {
				name = "my graph\n\"1\""
			}
			g := tile.NewGraph(name)
			c.build(g)
			if err := g.Err(); err != nil {
				t.Fatalf("building: %v", err)
			}
			text := tile.Print(g)
			h, err := tile.Parse(text)
			if err != nil {
				t.Fatalf("Parse(Print(g)): %v\n%s", err, text)
			}
			if again := tile.Print(h); again != text {
				t.Errorf("Print(Parse(Print(g))) differs:\n%s\nwant:\n%s", again, text)
			}
			if msg := graphDiff(g, h); msg != "" {
				t.Errorf("Parse(Print(g)) differs from g: %s\n%s", msg, text)
			}
		})
	}
}

// graphDiff describes the first structural difference between a and b, or
// returns "".
func graphDiff(a, b *tile.Graph) string {
	if a.Name() != b.Name() {
		return fmt.Sprintf("name %q vs %q", a.Name(), b.Name())
	}
	an, bn := a.Nodes(), b.Nodes()
	if len(an) != len(bn) {
		return fmt.Sprintf("%d nodes vs %d", len(an), len(bn))
	}
	for i := range an {
		x, y := an[i], bn[i]
		if opString(x.Op()) != opString(y.Op()) || x.DType() != y.DType() || !x.Shape().Equal(y.Shape()) {
			return fmt.Sprintf("node %d: %s %s vs %s %s", i, x, opString(x.Op()), y, opString(y.Op()))
		}
		if ids(x.Args()) != ids(y.Args()) {
			return fmt.Sprintf("node %d: args %s vs %s", i, ids(x.Args()), ids(y.Args()))
		}
	}
	if ids(a.Inputs()) != ids(b.Inputs()) || ids(a.Variables()) != ids(b.Variables()) {
		return "inputs or variables differ"
	}
	if fmt.Sprint(outputs(a)) != fmt.Sprint(outputs(b)) {
		return fmt.Sprintf("outputs %v vs %v", outputs(a), outputs(b))
	}
	var au, bu []string
	for _, u := range a.Updates() {
		au = append(au, fmt.Sprint(u.Variable.ID(), u.Value.ID()))
	}
	for _, u := range b.Updates() {
		bu = append(bu, fmt.Sprint(u.Variable.ID(), u.Value.ID()))
	}
	if fmt.Sprint(au) != fmt.Sprint(bu) {
		return fmt.Sprintf("updates %v vs %v", au, bu)
	}
	return ""
}

// opString formats an op with all its fields; constants show their data, in
// which NaN equals NaN and -0 differs from 0.
func opString(op tile.Op) string {
	switch op := op.(type) {
	case *tile.ConstantOp:
		return fmt.Sprintf("constant %v %v %v", op.Value.DType, op.Value.Shape, op.Value.Data)
	case *tile.ContractionOp:
		// Compare index expressions by meaning: the printer writes them in
		// canonical form.
		var b strings.Builder
		fmt.Fprintf(&b, "contraction %v %v", op.Agg, op.Comb)
		for _, e := range op.Out {
			fmt.Fprintf(&b, " %v", tile.Lit(0).Plus(e))
		}
		for _, acc := range op.Access {
			b.WriteString(" |")
			for _, e := range acc {
				fmt.Fprintf(&b, " %v", tile.Lit(0).Plus(e))
			}
		}
		for _, k := range op.Constraints {
			fmt.Fprintf(&b, ", %v < %d", tile.Lit(0).Plus(k.Expr), k.Bound)
		}
		return b.String()
	}
	return fmt.Sprintf("%T%+v", op, op)
}

func ids(ts []*tile.Tensor) string {
	var b strings.Builder
	for _, t := range ts {
		fmt.Fprintf(&b, "%d ", t.ID())
	}
	return b.String()
}

func outputs(g *tile.Graph) []string {
	var out []string
	for _, o := range g.Outputs() {
		out = append(out, fmt.Sprintf("%s=%d", o.Name, o.Tensor.ID()))
	}
	return out
}

// TestPrintFormat pins the printed form of a small graph, written out by hand.
func TestPrintFormat(t *testing.T) {
	g := tile.NewGraph("demo")
	x := g.Input("x", tile.Float32, tile.Shape{2, 3})
	w := g.Variable("dense/w", tile.Float32, tile.Shape{3, 2})
	i, j, k := tile.Ix("i"), tile.Ix("j"), tile.Ix("k")
	y := g.Contract(tile.Sum, tile.CombMul, tile.Shape{2, 2}, []tile.Affine{i, k},
		[]tile.Operand{{Tensor: x, Index: []tile.Affine{i, j}}, {Tensor: w, Index: []tile.Affine{j, k}}})
	r := g.Maximum(y, g.Scalar(0, tile.Float32))
	c, _ := tile.ValueOf(tile.Float32, tile.Shape{2}, []float64{0.1, math.Inf(-1)})
	s := g.Add(r, g.Constant(c))
	p := g.Pad(g.Cast(s, tile.Int32), []int{1, 0}, []int{0, 2}, 7)
	g.SetOutput("y", p)
	g.Update(w, g.Neg(w))
	want := `graph demo
input x: f32[2, 3]
variable dense/w: f32[3, 2]
t2[i, k : 2, 2] = +(x[i, j] * dense/w[j, k])
t3 = constant f32[] 0
t4 = broadcast(t3, [2, 2])
t5 = max(t2, t4)
t6 = constant f32[2] [0.1, -inf]
t7 = broadcast(t6, [2, 2])
t8 = add(t5, t7)
t9 = cast(t8, i32)
t10 = pad(t9, [1, 0], [0, 2], 7)
t11 = neg(dense/w)
output y = t10
update dense/w = t11
`
	if got := tile.Print(g); got != want {
		t.Errorf("Print:\n%s\nwant:\n%s", got, want)
	}
}

// evalCase is a hand-written program, its inputs, and hand-computed values
// of its outputs.
type evalCase struct {
	name  string
	src   string
	feeds map[string][]float64 // by input name, in row-major order
	want  map[string][]float64
}

var evalCases = []evalCase{
	{"matmul", `
graph matmul
input A: f64[2, 3]
input B: f64[3, 2]
C[i, j : 2, 2] = +(A[i, k] * B[k, j])   # 2x3 times 3x2
output C = C
`, map[string][]float64{"A": {1, 2, 3, 4, 5, 6}, "B": {7, 8, 9, 10, 11, 12}},
		map[string][]float64{"C": {58, 64, 139, 154}}},
	// out[x] = I[x-1]·1 + I[x]·10 + I[x+1]·100, reading zero outside I, both
	// through the contraction's skipped points and through an explicit pad.
	{"padded conv1d", `
input I: f64[4]
input W: f64[3]
same[x : 4] = +(I[x + i - 1] * W[i])
P = pad(I, [1], [1], 0)
explicit[x : 4] = +(P[x + i] * W[i])
output same = same
output explicit = explicit
`, map[string][]float64{"I": {1, 2, 3, 4}, "W": {1, 10, 100}},
		map[string][]float64{"same": {210, 321, 432, 43}, "explicit": {210, 321, 432, 43}}},
	{"maxpool 2x2", `
input I: f32[4, 4]
O[y, x : 2, 2] = >(I[2*y + i, 2*x + j]), i < 2, j < 2
output O = O
`, map[string][]float64{"I": {3, -1, 4, 1, -5, 9, -2, 6, 5, 3, -5, 8, -9, 7, 9, -3}},
		map[string][]float64{"O": {9, 6, 7, 9}}},
	{"reductions", `
input A: f64[2, 3]
sum[] = +(A[i, j])
rowmin[i : 2] = <(A[i, j])
colprod[j : 3] = *(A[i, j])
T[j, i : 3, 2] = =(A[i, j])
output sum = sum
output rowmin = rowmin
output colprod = colprod
output T = T
`, map[string][]float64{"A": {1, -2, 3, 4, 5, -6}},
		map[string][]float64{"sum": {5}, "rowmin": {-2, -6}, "colprod": {4, -10, -18}, "T": {1, 4, -2, 5, 3, -6}}},
	// The max-pool gradient: each window routes dO to the position of its max.
	{"maxpool gradient", `
input I: f64[4]
input O: f64[2]
input dO: f64[2]
dI[2*i + j : 4] = +(I[2*i + j] == O[i] ? dO[i]), j < 2
output dI = dI
`, map[string][]float64{"I": {3, 1, 0, 5}, "O": {3, 5}, "dO": {10, 20}},
		map[string][]float64{"dI": {10, 0, 0, 20}}},
	{"bias and relu with broadcasting", `
input x: f32[2, 2]
input b: f32[2]
zero = constant f32[] 0
y = add(x, b)
relu = max(y, zero)
output relu = relu
`, map[string][]float64{"x": {1, -2, 3, -4}, "b": {10, -10}},
		map[string][]float64{"relu": {11, 0, 13, 0}}},
	{"one-hot from iota", `
input labels: i32[3]
col = reshape(labels, [3, 1])
pos = iota(i32[3, 4], 1)
hit = eq(col, pos)
onehot = cast(hit, f32)
picked = gather(onehot, labels, 1)
output onehot = onehot
output picked = picked
`, map[string][]float64{"labels": {2, 0, 3}},
		map[string][]float64{
			"onehot": {0, 0, 1, 0, 1, 0, 0, 0, 0, 0, 0, 1},
			// picked[r, s] = onehot[r, labels[s]].
			"picked": {1, 0, 0, 0, 1, 0, 0, 0, 1},
		}},
	{"shape ops", `
input x: f64[2, 3]
xt = transpose(x, [1, 0])
s = slice(xt, [0, 0], [3, 2], [2, 1])
c = concat(0, s, s)
flat = reshape(c, [-1])
idx = constant i64[2] [3, 1]
same = constant i32[2] [1, 1]
acc = scatter_add(s, idx, 0, [4, 2])
dup = scatter_add(s, same, 0, [3, 2])
output flat = flat
output acc = acc
output dup = dup
`, map[string][]float64{"x": {1, 2, 3, 4, 5, 6}},
		map[string][]float64{
			// xt = [[1 4] [2 5] [3 6]]; rows 0 and 2 give s = [[1 4] [3 6]].
			"flat": {1, 4, 3, 6, 1, 4, 3, 6},
			"acc":  {0, 0, 3, 6, 0, 0, 1, 4},
			"dup":  {0, 0, 4, 10, 0, 0},
		}},
}

// TestParseEvaluate parses hand-written programs and runs them with the
// reference executor.
func TestParseEvaluate(t *testing.T) {
	for _, c := range evalCases {
		t.Run(c.name, func(t *testing.T) {
			g, err := tile.Parse(c.src)
			if err != nil {
				t.Fatal(err)
			}
			checkRun(t, g, c.feeds, c.want)
		})
	}
}

func checkRun(t *testing.T, g *tile.Graph, feeds map[string][]float64, want map[string][]float64) {
	t.Helper()
	vals := map[string]*tile.Value{}
	for name, data := range feeds {
		in := g.Leaf(name)
		if in == nil {
			t.Fatalf("no input %q", name)
		}
		v, err := tile.ValueOf(in.DType(), in.Shape(), data)
		if err != nil {
			t.Fatal(err)
		}
		vals[name] = v
	}
	out, err := ref.Run(g, vals, nil)
	if err != nil {
		t.Fatal(err)
	}
	for name, w := range want {
		got := out[name]
		if got == nil {
			t.Errorf("no output %q", name)
			continue
		}
		if fmt.Sprint(got.Data) != fmt.Sprint(w) {
			t.Errorf("%s = %v, want %v", name, got.Data, w)
		}
	}
}

// TestParseContraction checks output sizes computed from size names and the
// index expressions read, written back in canonical form by hand.
func TestParseContraction(t *testing.T) {
	cases := []struct {
		name  string
		src   string
		sizes map[string]int
		want  string // FormatContraction of the result, operands renamed A, B, …
	}{
		{"max pool with sizes",
			"O[n, y, x, c : N, Y/2, X/2, C] = >(I[n, 2*y + i, 2*x + j, c]), i < 2, j < 2",
			map[string]int{"N": 1, "Y": 5, "X": 4, "C": 3},
			"O[n, y, x, c : 1, 2, 2, 3] = >(A[n, 2*y + i, 2*x + j, c]), i < 2, j < 2"},
		{"conv with padding",
			"O[n, y, x, c : N, Y, X, C] = +(I[n, y + i - 1, x + j - 1, d] * K[i, j, d, c]), i < 2, j < 2",
			map[string]int{"N": 1, "Y": 5, "X": 4, "C": 3},
			"O[n, y, x, c : 1, 5, 4, 3] = +(A[n, y + i - 1, x + j - 1, d] * B[i, j, d, c]), i < 2, j < 2"},
		{"size arithmetic",
			"O[a, b, c, d : N*2 - (X - 1), (Y + 1)/2, -7/-2, 8 + -7/2] = +(I[a + b + c + d, 0, 0, 0])",
			map[string]int{"N": 3, "X": 4, "Y": 5},
			// 6 - 3 = 3; 6/2 = 3; floor(3.5) = 3; 8 + floor(-3.5) = 4.
			"O[a, b, c, d : 3, 3, 3, 4] = +(A[a + b + c + d, 0, 0, 0])"},
		{"affine forms",
			"O[y, i : 3, 2] = +(I[2*(y + 1) - i, i*3, -(i - y), +(y)*(2)])",
			nil,
			"O[y, i : 3, 2] = +(A[2*y - i + 2, 3*i, -i + y, 2*y])"},
		{"scalar output", "O[] = +(I[i, j, k, l])", nil, "O[] = +(A[i, j, k, l])"},
		{"equality select", "dI[2*i + j : 4] = +(v[2*i + j] == O[i] ? \"d-O\"[i]), j < 2", nil,
			"O[2*i + j : 4] = +(A[2*i + j] == B[i] ? C[i]), j < 2"},
		{"comments and spacing", "\n  O[i:5]=<(v[i+1]+v[i])  # min of neighbour sums\n\n", nil, "O[i : 5] = <(A[i + 1] + B[i])"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			g := tile.NewGraph("pc")
			ops := map[string]*tile.Tensor{
				"I":   g.Input("I", tile.Float32, tile.Shape{6, 5, 4, 3}),
				"K":   g.Input("K", tile.Float32, tile.Shape{2, 2, 3, 3}),
				"v":   g.Input("v", tile.Float32, tile.Shape{4}),
				"O":   g.Input("O", tile.Float32, tile.Shape{2}),
				"d-O": g.Input("d-O", tile.Float32, tile.Shape{2}),
			}
			out := tile.ParseContraction(g, c.src, ops, c.sizes)
			if err := g.Err(); err != nil {
				t.Fatal(err)
			}
			op := out.Op().(*tile.ContractionOp)
			if got := tile.FormatContraction(op, "O", []string{"A", "B", "C"}, out.Shape()); got != c.want {
				t.Errorf("parsed as\n%s\nwant\n%s", got, c.want)
			}
		})
	}
}

// TestParseContractionEvaluates runs a contraction built from text with sizes
// on hand-picked values: a 2x2, stride-2 sum pool over a 2x4 image.
func TestParseContractionEvaluates(t *testing.T) {
	g := tile.NewGraph("pool")
	x := g.Input("x", tile.Float64, tile.Shape{2, 4})
	y := tile.ParseContraction(g, "O[y, x : Y/2, X/2] = +(img[2*y + i, 2*x + j]), i < 2, j < 2",
		map[string]*tile.Tensor{"img": x}, map[string]int{"Y": 2, "X": 4})
	g.SetOutput("y", y)
	if err := g.Err(); err != nil {
		t.Fatal(err)
	}
	checkRun(t, g, map[string][]float64{"x": {1, 2, 3, 4, 10, 20, 30, 40}},
		map[string][]float64{"y": {33, 77}})
}

// TestVariableUpdateProgram runs a hand-written SGD step twice and checks the
// variable after each run: w ← w - 0.1·g.
func TestVariableUpdateProgram(t *testing.T) {
	g, err := tile.Parse(`graph sgd
variable w: f64[2]
grad = constant f64[2] [0.5, -1]
lr = constant f64[] 0.1
step = mul(lr, grad)
next = sub(w, step)
output w = w
update w = next
`)
	if err != nil {
		t.Fatal(err)
	}
	m, err := ref.New(g)
	if err != nil {
		t.Fatal(err)
	}
	one, _ := tile.ValueOf(tile.Float64, tile.Shape{2}, []float64{1, 1})
	if err := m.SetVar("w", one); err != nil {
		t.Fatal(err)
	}
	for _, want := range [][]float64{{0.95, 1.1}, {0.9, 1.2}} {
		if _, err := m.Run(nil); err != nil {
			t.Fatal(err)
		}
		w, _ := m.Var("w")
		for i := range want {
			if math.Abs(w.Data[i]-want[i]) > 1e-15 {
				t.Errorf("w = %v, want %v", w.Data, want)
				break
			}
		}
	}
}

// TestPrintNameCollision checks that a node whose t<ID> name belongs to a
// leaf gets another name, and that quoted names print quoted.
func TestPrintNameCollision(t *testing.T) {
	g := tile.NewGraph("c")
	x := g.Input("t1", tile.Float32, tile.Shape{})
	g.Input("t1_", tile.Float32, tile.Shape{})
	g.SetOutput("y-1", g.Neg(x))
	want := "graph c\ninput t1: f32[]\ninput t1_: f32[]\nt2 = neg(t1)\noutput \"y-1\" = t2\n"
	if got := tile.Print(g); got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
	g = tile.NewGraph("c")
	g.Input("t1", tile.Float32, tile.Shape{})
	x = g.Input("t1_", tile.Float32, tile.Shape{})
	g.Input("t2", tile.Float32, tile.Shape{})
	g.Input("t3_", tile.Float32, tile.Shape{})
	g.Input("t3", tile.Float32, tile.Shape{})
	g.Neg(g.Neg(x))
	want = "graph c\ninput t1: f32[]\ninput t1_: f32[]\ninput t2: f32[]\ninput t3_: f32[]\ninput t3: f32[]\nt5 = neg(t1_)\nt6 = neg(t5)\n"
	if got := tile.Print(g); got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
}
