package nn_test

import (
	"fmt"

	"github.com/tartanml/tartan/backend/cpu"
	"github.com/tartanml/tartan/nn"
	"github.com/tartanml/tartan/tile"
)

// affine is a layer of one's own, x·kernel + bias, written in the tile
// language's text form.
type affine struct {
	units        int
	kernel, bias *nn.Weight
}

// Build declares the weights from the per-sample input shape (features).
func (a *affine) Build(b *nn.LayerBuilder, in []tile.Shape) (tile.Shape, error) {
	if len(in) != 1 || len(in[0]) != 1 {
		return nil, fmt.Errorf("takes one input of rank 1, got %v", in)
	}
	a.kernel = b.AddWeight("kernel", tile.Shape{in[0][0], a.units}, nn.GlorotUniform(), true)
	a.bias = b.AddWeight("bias", tile.Shape{a.units}, nn.Zeros(), true)
	return tile.Shape{a.units}, nil
}

// Call adds the computation to the step's graph; x has the batch first.
func (a *affine) Call(c *nn.CallContext, in []*tile.Tensor) *tile.Tensor {
	g := c.Graph()
	x, k := in[0], c.Weight(a.kernel)
	y := tile.ParseContraction(g, "Y[n, j : N, J] = +(X[n, i] * K[i, j])",
		map[string]*tile.Tensor{"X": x, "K": k}, map[string]int{"N": c.BatchSize(), "J": a.units})
	return g.Add(y, c.Weight(a.bias))
}

// Config records the constructor's argument, so that a model holding the
// layer can be saved and, with nn.RegisterLayer, loaded.
func (a *affine) Config() map[string]any { return map[string]any{"units": a.units} }

// A custom layer written in tile text trains like a built-in one: its
// gradient comes from package grad, and the optimizer updates its weights
// inside the compiled step. Here it learns y = 2a − 3b + 1.
func ExampleCustom() {
	var xs, ys []float32
	for i := range 8 {
		for j := range 8 {
			a, b := float32(i)/4-1, float32(j)/4-1
			xs = append(xs, a, b)
			ys = append(ys, 2*a-3*b+1)
		}
	}
	x, _ := nn.NewArray(xs, 64, 2)
	y, _ := nn.NewArray(ys, 64, 1)
	train, err := nn.FromArrays(x, y)
	if err != nil {
		fmt.Println(err)
		return
	}

	model, err := nn.Sequential("line", nn.Input(2), nn.Custom("Affine", &affine{units: 1}))
	if err != nil {
		fmt.Println(err)
		return
	}
	dev := cpu.New()
	defer dev.Close()
	if err := model.Compile(nn.SGD(0.1), nn.MeanSquaredError(), nn.OnDevice(dev), nn.Seed(1)); err != nil {
		fmt.Println(err)
		return
	}
	defer model.Close()
	hist, err := model.Fit(train, nn.Epochs(60), nn.BatchSize(16), nn.Verbose(0))
	if err != nil {
		fmt.Println(err)
		return
	}
	loss := hist.Metrics["loss"]
	fmt.Printf("loss: %.1f after the first epoch, below 1e-6 after the last: %v\n", loss[0], loss[len(loss)-1] < 1e-6)
	for _, w := range model.Weights() {
		v, _ := model.GetWeight(w.Name())
		fmt.Printf("%s %v:", w.Name(), v.Shape)
		for _, x := range v.Data {
			fmt.Printf(" %.2f", x)
		}
		fmt.Println()
	}
	// Output:
	// loss: 3.9 after the first epoch, below 1e-6 after the last: true
	// affine/kernel [2 1]: 2.00 -3.00
	// affine/bias [1]: 1.00
}
