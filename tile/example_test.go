package tile_test

import (
	"fmt"

	"github.com/tartanml/tartan/ref"
	"github.com/tartanml/tartan/tile"
)

// A matrix product written in the textual form, parsed, printed back and run
// with the reference executor.
func Example() {
	g, err := tile.Parse(`graph matmul
input A: f32[2, 3]
input B: f32[3, 2]
C[i, j : 2, 2] = +(A[i, k] * B[k, j])
output C = C
`)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Print(tile.Print(g))

	a, _ := tile.ValueOf(tile.Float32, tile.Shape{2, 3}, []float64{1, 2, 3, 4, 5, 6})
	b, _ := tile.ValueOf(tile.Float32, tile.Shape{3, 2}, []float64{7, 8, 9, 10, 11, 12})
	out, err := ref.Run(g, map[string]*tile.Value{"A": a, "B": b}, nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(out["C"].Shape, out["C"].Data)
	// Output:
	// graph matmul
	// input A: f32[2, 3]
	// input B: f32[3, 2]
	// t2[i, j : 2, 2] = +(A[i, k] * B[k, j])
	// output C = t2
	// [2, 2] [58 64 139 154]
}

// ParseContraction builds one contraction from text, with sizes given by
// name: here a 2x2 max pool with stride 2.
func ExampleParseContraction() {
	g := tile.NewGraph("pool")
	img := g.Input("img", tile.Float32, tile.Shape{1, 4, 4, 3})
	pool := tile.ParseContraction(g,
		"O[n, y, x, c : N, Y/2, X/2, C] = >(I[n, 2*y + i, 2*x + j, c]), i < 2, j < 2",
		map[string]*tile.Tensor{"I": img},
		map[string]int{"N": 1, "Y": 4, "X": 4, "C": 3})
	fmt.Println(pool.Shape(), g.Err())

	// Errors name the position and what was expected.
	bad := tile.ParseContraction(g, "O[i : 4] = +(I[i*j, 0, 0, 0])", map[string]*tile.Tensor{"I": img}, nil)
	fmt.Println(bad.Valid(), g.Err())
	// Output:
	// [1, 2, 2, 3] <nil>
	// false tile: parse: 1:17: the product (i) * (j) is not affine: one side must be a constant
}

// The builder API: a dense layer y = relu(x·W + b) built from Go calls.
// Broadcasting the bias inserts an explicit Broadcast node; the first error,
// if any, is kept on the graph, so one check at the end suffices.
func ExampleGraph_Contract() {
	i, j, k := tile.Ix("i"), tile.Ix("j"), tile.Ix("k")
	g := tile.NewGraph("dense")
	x := g.Input("x", tile.Float32, tile.Shape{4, 3})
	w := g.Variable("w", tile.Float32, tile.Shape{3, 2})
	b := g.Variable("b", tile.Float32, tile.Shape{2})
	xw := g.Contract(tile.Sum, tile.CombMul, tile.Shape{4, 2}, []tile.Affine{i, j},
		[]tile.Operand{{Tensor: x, Index: []tile.Affine{i, k}}, {Tensor: w, Index: []tile.Affine{k, j}}})
	y := g.Maximum(g.Add(xw, b), g.ScalarLike(xw, 0))
	g.SetOutput("y", y)
	if err := g.Err(); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(y.Shape(), y.DType())
	fmt.Print(tile.Print(g))

	// A mistake is reported with the op and the shapes.
	g.Add(x, w)
	fmt.Println(g.Err())
	// Output:
	// [4, 2] f32
	// graph dense
	// input x: f32[4, 3]
	// variable w: f32[3, 2]
	// variable b: f32[2]
	// t3[i, j : 4, 2] = +(x[i, k] * w[k, j])
	// t4 = broadcast(b, [4, 2])
	// t5 = add(t3, t4)
	// t6 = constant f32[] 0
	// t7 = broadcast(t6, [4, 2])
	// t8 = max(t5, t7)
	// output y = t8
	// tile: add: shapes f32[4, 3], f32[3, 2] do not broadcast
}
