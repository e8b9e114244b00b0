package backend_test

import (
	"fmt"

	"github.com/tartanml/tartan/backend/cpu"
	"github.com/tartanml/tartan/tile"
)

// A tile graph compiled once for Tartan's CPU backend and run twice. The
// variable w stays on the device between runs, and the graph's Update adds
// the input to it after each run, so the second run sees the first one's
// update. Host data crosses as []float32 for f32 tensors.
func Example() {
	g, err := tile.Parse(`graph accumulate
input x: f32[2, 3]
variable w: f32[3]
y[i : 2] = +(x[i, k] * w[k])
output y = y
`)
	if err != nil {
		fmt.Println(err)
		return
	}
	// w ← w + (column sums of x) after every run.
	w := g.Leaf("w")
	colSum := tile.ParseContraction(g, "S[k : 3] = +(X[i, k])", map[string]*tile.Tensor{"X": g.Leaf("x")}, nil)
	g.Update(w, g.Add(w, colSum))
	if err := g.Err(); err != nil {
		fmt.Println(err)
		return
	}

	dev := cpu.New(cpu.Cache(false)) // Cache(false): nothing is written to the program cache
	defer dev.Close()
	exe, err := dev.Compile(g)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer exe.Close()

	if err := exe.WriteVariable("w", []float32{1, 0, -1}); err != nil {
		fmt.Println(err)
		return
	}
	if err := exe.SetInput("x", []float32{1, 2, 3, 4, 5, 6}); err != nil {
		fmt.Println(err)
		return
	}
	y := make([]float32, 2)
	for run := 1; run <= 2; run++ {
		if err := exe.Run(); err != nil {
			fmt.Println(err)
			return
		}
		if err := exe.ReadOutput("y", y); err != nil {
			fmt.Println(err)
			return
		}
		fmt.Println("run", run, "y =", y)
	}
	wNow := make([]float32, 3)
	if err := exe.ReadVariable("w", wNow); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("w =", wNow)
	// Output:
	// run 1 y = [-2 -2]
	// run 2 y = [44 107]
	// w = [11 14 17]
}
