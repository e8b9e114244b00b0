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
