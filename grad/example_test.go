package grad_test

import (
	"fmt"

	"github.com/tartanml/tartan/grad"
	"github.com/tartanml/tartan/ref"
	"github.com/tartanml/tartan/tile"
)

// Grad adds the gradient of a scalar to the graph that computes it. Here
// y = Σ w_i·x_i², so dy/dx_i = 2·w_i·x_i and dy/dw_i = x_i², values that can
// be checked by hand; the reference executor evaluates both.
func ExampleGrad() {
	g := tile.NewGraph("weighted_squares")
	x := g.Input("x", tile.Float64, tile.Shape{3})
	w := g.Input("w", tile.Float64, tile.Shape{3})
	y := tile.ParseContraction(g, "Y[] = +(X[i] * S[i])",
		map[string]*tile.Tensor{"X": g.Mul(x, x), "S": w}, nil)
	grads, err := grad.Grad(g, y, x, w)
	if err != nil {
		fmt.Println(err)
		return
	}
	g.SetOutput("y", y)
	g.SetOutput("dx", grads[0])
	g.SetOutput("dw", grads[1])

	xv, _ := tile.ValueOf(tile.Float64, tile.Shape{3}, []float64{1, 2, 3})
	wv, _ := tile.ValueOf(tile.Float64, tile.Shape{3}, []float64{0.5, -1, 2})
	out, err := ref.Run(g, map[string]*tile.Value{"x": xv, "w": wv}, nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("y  =", out["y"].Data)
	fmt.Println("dx =", out["dx"].Data)
	fmt.Println("dw =", out["dw"].Data)
	// Output:
	// y  = [14.5]
	// dx = [1 -4 12]
	// dw = [1 4 9]
}

// Check compares Grad's gradients with central finite differences on the
// reference executor; an op's test asserts that the error is small. The
// function here is the softplus log(1 + exp(x)) summed, whose derivative is
// the logistic sigmoid.
func ExampleCheck() {
	g := tile.NewGraph("softplus")
	x := g.Input("x", tile.Float64, tile.Shape{2, 2})
	sp := g.Log(g.Add(g.ScalarLike(x, 1), g.Exp(x)))
	y := tile.ParseContraction(g, "Y[] = +(S[i, j])", map[string]*tile.Tensor{"S": sp}, nil)

	xv, _ := tile.ValueOf(tile.Float64, tile.Shape{2, 2}, []float64{-2, -0.5, 0.5, 3})
	maxErr, where, err := grad.Check(g, y, []*tile.Tensor{x}, map[string]*tile.Value{"x": xv}, nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("gradient agrees:", maxErr < 1e-6)
	_ = where // names the worst coordinate, for a failing test's message
	// Output:
	// gradient agrees: true
}
