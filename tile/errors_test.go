package tile_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/tartanml/tartan/tile"
)

// errorPrograms are malformed programs, each with the fragments its error
// message must contain: the position and the culprit.
var errorPrograms = []struct {
	name string
	src  string
	want []string
}{
	{"unbalanced list", "input x: f32[2, 3\n", []string{"1:18", "expected ']' to close shape", "end of line"}},
	{"unbalanced call", "input x: f32[6]\ny = reshape(x, [2, 3]\n", []string{"2:22", "expected ')' to close the arguments of reshape"}},
	{"unbalanced contraction", "input A: f32[2]\nO[i : 2] = +(A[i]\n", []string{"2:18", "expected ')' to close the combination"}},
	{"unbalanced parenthesis", "input A: f32[2]\nO[i : 2] = +(A[(i + 1]), i < 2\n", []string{"2:22", "expected ')' to close the parenthesis"}},
	{"unknown op", "input x: f32[2]\ny = frobnicate(x)\n", []string{"2:5", `unknown op "frobnicate"`}},
	{"unknown tensor", "input x: f32[2]\ny = add(x, z)\n", []string{"2:12", "unknown tensor z"}},
	{"unknown contraction operand", "input A: f32[2]\nO[i : 2] = +(B[i])\n", []string{"2:14", "unknown tensor B"}},
	{"unknown output tensor", "output y = nothing\n", []string{"1:12", "unknown tensor nothing"}},
	{"bad dtype", "input x: f31[2]\n", []string{"1:10", `unknown dtype "f31"`}},
	{"bad cast dtype", "input x: f32[2]\ny = cast(x, float)\n", []string{"2:13", `unknown dtype "float"`}},
	{"non-affine index", "input A: f32[3, 3]\nO[i : 3] = +(A[i, i*j])\n", []string{"2:20", "(i) * (j) is not affine"}},
	{"non-affine parenthesised", "input A: f32[3]\nO[i : 3] = +(A[(i + 1)*(j - 1)]), j < 2\n", []string{"2:23", "(i + 1) * (j - 1) is not affine"}},
	{"division in index", "input A: f32[3]\nO[i : 3] = +(A[i/2])\n", []string{"2:17", "division is not allowed"}},
	{"unbounded index", "input A: f32[3]\nO[i : 3] = +(A[i + j - k])\n", []string{"2:1", "contraction", "index j is unbounded"}},
	{"too many indices", "input A: f32[3, 4]\nO[i : 3] = +(A[i, j, k])\n", []string{"2:14", "operand A is indexed with 3 expressions but has shape [3, 4]"}},
	{"too few indices", "input A: f32[3, 4]\nO[i : 3] = +(A[i])\n", []string{"2:14", "operand A is indexed with 1 expressions but has shape [3, 4]"}},
	{"output sizes mismatch", "input A: f32[3]\nO[i, j : 3] = +(A[i])\n", []string{"2:8", "2 index expressions but 1 sizes"}},
	{"missing output sizes", "input A: f32[3]\nO[i] = +(A[i])\n", []string{"2:4", "expected ':'"}},
	{"missing aggregation", "input A: f32[3]\nO[i : 3] = A[i]\n", []string{"2:12", "expected an aggregation"}},
	{"missing select", "input A: f32[3]\nO[i : 3] = +(A[i] == A[i] A[i])\n", []string{"2:27", "expected '?'"}},
	{"bool sum", "input A: bool[3]\nO[] = +(A[i])\n", []string{"2:1", "cannot aggregate bool"}},
	{"size name in program", "input A: f32[3]\nO[i : N] = +(A[i])\n", []string{"2:7", `unknown size "N" (no sizes are defined)`}},
	{"duplicate input", "input x: f32[2]\ninput x: f32[3]\n", []string{"2:7", "x is already defined at 1:7"}},
	{"duplicate node", "input x: f32[2]\ny = neg(x)\ny = exp(x)\n", []string{"3:1", "y is already defined at 2:1"}},
	{"node shadows input", "input x: f32[2]\nx = neg(x)\n", []string{"2:1", "x is already defined at 1:7"}},
	{"duplicate output", "input x: f32[2]\noutput y = x\noutput y = x\n", []string{"3:1", "output", `"y" is already declared`}},
	{"elementwise shapes", "input a: f32[2, 3]\ninput b: f32[4]\nc = add(a, b)\n", []string{"3:1", "add: shapes f32[2, 3], f32[4] do not broadcast"}},
	{"elementwise dtypes", "input a: f32[2]\ninput b: f64[2]\nc = mul(a, b)\n", []string{"3:1", "mul: operand dtypes differ: f32[2], f64[2]"}},
	{"elementwise arity", "input a: f32[2]\nc = exp(a, a)\n", []string{"2:1", "exp: takes 1 operands, got 2"}},
	{"float-only function", "input a: i32[2]\nc = sqrt(a)\n", []string{"2:1", "sqrt: needs floating-point operands, got i32[2]"}},
	{"reshape size", "input x: f32[2, 3]\ny = reshape(x, [4, 2])\n", []string{"2:1", "reshape: cannot reshape f32[2, 3] (6 elements) to [4, 2] (8 elements)"}},
	{"bad permutation", "input x: f32[2, 3]\ny = transpose(x, [0, 0])\n", []string{"2:1", "transpose: [0 0] is not a permutation of 2 dimensions"}},
	{"slice out of range", "input x: f32[4]\ny = slice(x, [1], [5], [1])\n", []string{"2:1", "slice: dimension 0: start 1, stop 5, step 1 out of range for f32[4]"}},
	{"concat mismatch", "input a: f32[2, 3]\ninput b: f32[3, 3]\nc = concat(1, a, b)\n", []string{"3:1", "concat: operands disagree outside axis 1: f32[2, 3], f32[3, 3]"}},
	{"negative pad", "input x: f32[2]\ny = pad(x, [-1], [0], 0)\n", []string{"2:1", "pad: negative padding"}},
	{"gather float indices", "input x: f32[2]\ninput i: f32[2]\ny = gather(x, i, 0)\n", []string{"3:1", "gather: indices must be i32 or i64, got f32[2]"}},
	{"scatter shapes", "input u: f32[3]\ninput i: i32[2]\ny = scatter_add(u, i, 0, [4])\n", []string{"3:1", "scatter_add: updates f32[3] do not fit indices i32[2]"}},
	{"iota axis", "y = iota(f32[3], 1)\n", []string{"1:1", "iota: bad axis 1"}},
	{"random seed", "input s: i32[]\ny = random(s, f32[2], 0)\n", []string{"2:1", "random: seed must be a scalar i64, got i32[]"}},
	{"random stream", "input s: i64[]\ny = random(s, f32[2], -1)\n", []string{"2:23", "expected the stream number"}},
	{"broadcast", "input x: f32[3]\ny = broadcast(x, [2, 4])\n", []string{"2:1", "broadcast: cannot broadcast f32[3] to [2, 4]"}},
	{"negative dimension", "input x: f32[-2]\n", []string{"1:13", "bad shape [-2]"}},
	{"huge shape", "input x: f32[4294967296, 4294967296]\n", []string{"1:13", "product that fits in an int"}},
	{"update of non-variable", "input x: f32[2]\ny = neg(x)\nupdate x = y\n", []string{"3:1", "update: target", "is not a variable"}},
	{"update shape", "variable w: f32[2]\nv = constant f32[3] [1, 2, 3]\nupdate w = v\n", []string{"3:1", `variable "w" is f32[2] but the new value is f32[3]`}},
	{"update twice", "variable w: f32[2]\nupdate w = w\nupdate w = w\n", []string{"3:1", `variable "w" is updated twice`}},
	{"constant count", "c = constant f32[3] [1, 2]\n", []string{"1:5", "constant: 2 elements given for shape [3]"}},
	{"constant value", "c = constant f32[2] [1, x]\n", []string{"1:25", "expected a number"}},
	{"unterminated string", "input \"x: f32[2]\n", []string{"1:7", "unterminated string"}},
	{"bad leaf name", "input \"1x\": f32[2]\n", []string{"1:1", `input: name "1x" is not an identifier`}},
	{"unexpected character", "input x: f32[2] $\n", []string{"1:17", "unexpected character '$'"}},
	{"trailing tokens", "input x: f32[2] f32\n", []string{"1:17", "expected end of statement"}},
	{"graph not first", "input x: f32[2]\ngraph g\n", []string{"2:1", "graph statement must come first"}},
	{"second graph", "graph a\ngraph b\n", []string{"2:1", "must come first, and only once"}},
	{"keyword at end", "input", []string{"1:6", "expected the input name, found end of input"}},
	{"integer overflow", "input x: f32[99999999999999999999]\n", []string{"1:14", "not an integer in range"}},
	{"index overflow", "input A: f32[3]\nO[i : 3] = +(A[9223372036854775807*i + 9223372036854775807*i])\n", []string{"2:38", "integer overflow"}},
	{"nested too deep", "input A: f32[3]\nO[i : 3] = +(A[" + strings.Repeat("(", 300) + "i" + strings.Repeat(")", 300) + "])\n", []string{"expression nested too deeply"}},
	{"missing name", "= neg(x)\n", []string{"1:1", "expected a statement"}},
}

// TestParseErrors checks that every malformed program yields an error, never
// a panic, naming the position and the culprit.
func TestParseErrors(t *testing.T) {
	for _, c := range errorPrograms {
		t.Run(c.name, func(t *testing.T) {
			defer func() {
				if r := recover(); r != nil {
					t.Fatalf("Parse panicked: %v", r)
				}
			}()
			g, err := tile.Parse(c.src)
			if err == nil {
				t.Fatalf("Parse succeeded:\n%s", tile.Print(g))
			}
			var te *tile.Error
			if !errors.As(err, &te) || te.Op != "parse" {
				t.Errorf("error %v is not a *tile.Error with op parse", err)
			}
			if g != nil {
				t.Errorf("Parse returned a graph with its error")
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
		})
	}
}

// TestParseContractionErrors checks that ParseContraction records its errors
// on the graph as op "parse" (syntax and names) or "contraction" (meaning),
// and returns an invalid tensor.
func TestParseContractionErrors(t *testing.T) {
	cases := []struct {
		name, src string
		sizes     map[string]int
		op        string
		want      []string
	}{
		{"unknown operand", "O[i : 3] = +(Q[i])", nil, "parse", []string{"1:14", `unknown operand "Q" (the operands are A, B)`}},
		{"unknown size", "O[i : M] = +(A[i, j])", map[string]int{"N": 3}, "parse", []string{"1:7", `unknown size "M" (the sizes are N)`}},
		{"division by zero", "O[i : 3/(N - 3)] = +(A[i, j])", map[string]int{"N": 3}, "parse", []string{"1:8", "division by zero"}},
		{"non-affine", "O[i : 3] = +(A[i, j*j])", nil, "parse", []string{"1:20", "(j) * (j) is not affine"}},
		{"wrong index count", "O[i : 3] = +(A[i])", nil, "parse", []string{"1:14", "operand A is indexed with 1 expressions but has shape [3, 4]"}},
		{"not a combination", "O[i:5]=<(A[i+1, j]-A[i, j])", nil, "parse", []string{"1:19", "expected ')' to close the combination", `found "-"`}},
		{"trailing text", "O[i : 3] = +(A[i, j]) junk", nil, "parse", []string{"1:23", "expected ',' and a constraint, or end of statement", `"junk"`}},
		{"second statement", "O[i : 3] = +(A[i, j])\nP[i : 3] = +(A[i, j])", nil, "parse", []string{"2:1", "expected end of input after the contraction"}},
		{"unbounded", "O[i : 3] = +(A[i, j + k])", nil, "contraction", []string{"index j is unbounded", "O[i : 3] = +(A[i, j + k])"}},
		{"negative size", "O[i : N - 5] = +(A[i, j])", map[string]int{"N": 3}, "contraction", []string{"negative dimension in shape [-2]"}},
		{"dtype mix", "O[i, k : 3, 5] = +(A[i, j] * B[j, k])", nil, "contraction", []string{"operand dtypes differ (f32[3, 4], f64[4, 5])"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			g := tile.NewGraph("e")
			ops := map[string]*tile.Tensor{
				"A": g.Input("A", tile.Float32, tile.Shape{3, 4}),
				"B": g.Input("B", tile.Float64, tile.Shape{4, 5}),
			}
			out := tile.ParseContraction(g, c.src, ops, c.sizes)
			if out.Valid() {
				t.Fatalf("ParseContraction returned a valid tensor %v", out)
			}
			var te *tile.Error
			if !errors.As(g.Err(), &te) {
				t.Fatalf("recorded error %v is not a *tile.Error", g.Err())
			}
			if te.Op != c.op {
				t.Errorf("error %q has op %q, want %q", te, te.Op, c.op)
			}
			for _, w := range c.want {
				if !strings.Contains(te.Error(), w) {
					t.Errorf("error %q does not contain %q", te, w)
				}
			}
			// The first error stays; later builder calls return invalid tensors.
			if g.Neg(ops["A"]).Valid() || g.Err() != te {
				t.Errorf("the graph did not keep its first error")
			}
			if tile.ParseContraction(g, "O[i : 3] = +(A[i, j])", ops, nil).Valid() {
				t.Errorf("ParseContraction on a failed graph returned a valid tensor")
			}
		})
	}
}

// TestBuilderErrors feeds mismatched shapes and bad arguments through the
// builder API and checks that each records an error naming the op and the
// shapes, and returns an invalid tensor.
func TestBuilderErrors(t *testing.T) {
	i, j := tile.Ix("i"), tile.Ix("j")
	cases := []struct {
		name  string
		build func(g *tile.Graph, a, b, n *tile.Tensor) *tile.Tensor
		want  string
	}{
		{"add shapes", func(g *tile.Graph, a, b, n *tile.Tensor) *tile.Tensor { return g.Add(a, b) },
			"tile: add: shapes f32[2, 3], f32[3, 4] do not broadcast"},
		{"select condition", func(g *tile.Graph, a, b, n *tile.Tensor) *tile.Tensor { return g.Select(a, a, a) },
			"tile: select: condition must be bool, got f32[2, 3]"},
		{"contraction index count", func(g *tile.Graph, a, b, n *tile.Tensor) *tile.Tensor {
			return g.Contract(tile.Sum, tile.CombNone, tile.Shape{2}, []tile.Affine{i}, []tile.Operand{{Tensor: a, Index: []tile.Affine{i}}})
		}, "tile: contraction: operand A is indexed with 1 expressions but has shape [2, 3]: O[i : 2] = +(A[i])"},
		{"contraction arity", func(g *tile.Graph, a, b, n *tile.Tensor) *tile.Tensor {
			return g.Contract(tile.Sum, tile.CombMul, tile.Shape{2}, []tile.Affine{i}, []tile.Operand{{Tensor: a, Index: []tile.Affine{i, j}}})
		}, "tile: contraction: combination takes 2 operands, got 1"},
		{"reshape", func(g *tile.Graph, a, b, n *tile.Tensor) *tile.Tensor { return g.Reshape(a, tile.Shape{4}) },
			"tile: reshape: cannot reshape f32[2, 3] (6 elements) to [4] (4 elements)"},
		{"reshape infer", func(g *tile.Graph, a, b, n *tile.Tensor) *tile.Tensor { return g.Reshape(a, tile.Shape{-1, 4}) },
			"tile: reshape: cannot infer -1 in [-1, 4] from f32[2, 3]"},
		{"transpose", func(g *tile.Graph, a, b, n *tile.Tensor) *tile.Tensor { return g.Transpose(a, []int{1}) },
			"tile: transpose: permutation [1] has 1 entries for f32[2, 3]"},
		{"concat", func(g *tile.Graph, a, b, n *tile.Tensor) *tile.Tensor { return g.Concat(0, a, b) },
			"tile: concat: operands disagree outside axis 0: f32[2, 3], f32[3, 4]"},
		{"gather", func(g *tile.Graph, a, b, n *tile.Tensor) *tile.Tensor { return g.Gather(a, b, 0) },
			"tile: gather: indices must be i32 or i64, got f32[3, 4]"},
		{"scatter", func(g *tile.Graph, a, b, n *tile.Tensor) *tile.Tensor { return g.ScatterAdd(a, n, 0, tile.Shape{5, 3}) },
			"tile: scatter_add: updates f32[2, 3] do not fit indices i32[4] into shape [5, 3] along axis 0 (want [4, 3])"},
		{"broadcast", func(g *tile.Graph, a, b, n *tile.Tensor) *tile.Tensor { return g.BroadcastTo(b, tile.Shape{3, 5}) },
			"tile: broadcast: cannot broadcast f32[3, 4] to [3, 5]"},
		{"pad", func(g *tile.Graph, a, b, n *tile.Tensor) *tile.Tensor { return g.Pad(a, []int{1}, []int{1, 1}, 0) },
			"tile: pad: lo [1] and hi [1 1] do not match f32[2, 3]"},
		{"cast", func(g *tile.Graph, a, b, n *tile.Tensor) *tile.Tensor { return g.Cast(a, tile.Invalid) },
			"tile: cast: invalid target dtype invalid"},
		{"foreign tensor", func(g *tile.Graph, a, b, n *tile.Tensor) *tile.Tensor {
			return g.Neg(tile.NewGraph("other").Input("z", tile.Float32, tile.Shape{1}))
		}, "tile: neg: argument 0 (%0 input f32[1]) belongs to another graph"},
		{"update input", func(g *tile.Graph, a, b, n *tile.Tensor) *tile.Tensor { g.Update(a, a); return nil },
			"tile: update: target %0 input f32[2, 3] is not a variable"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			defer func() {
				if r := recover(); r != nil {
					t.Fatalf("builder panicked: %v", r)
				}
			}()
			g := tile.NewGraph("b")
			a := g.Input("a", tile.Float32, tile.Shape{2, 3})
			b := g.Input("b", tile.Float32, tile.Shape{3, 4})
			n := g.Input("n", tile.Int32, tile.Shape{4})
			out := c.build(g, a, b, n)
			if out != nil && out.Valid() {
				t.Errorf("returned a valid tensor %v", out)
			}
			if g.Err() == nil || !strings.Contains(g.Err().Error(), c.want) {
				t.Errorf("error %v, want one containing %q", g.Err(), c.want)
			}
		})
	}
}
