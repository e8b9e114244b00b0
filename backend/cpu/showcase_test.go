package cpu

import (
	"fmt"
	"math"

	"github.com/tartanml/tartan/grad"
	"github.com/tartanml/tartan/op"
	"github.com/tartanml/tartan/tile"
)

// showcaseParams are the showcase CNN's weights and their shapes: Conv2D 64
// k2 same relu, MaxPool 2, Dropout .3, Conv2D 32 k2 same relu, MaxPool 2,
// Dropout .3, Flatten, Dense 256 relu, Dropout .5, Dense 10.
var showcaseParams = []struct {
	name  string
	shape tile.Shape
}{
	{"conv1_w", tile.Shape{2, 2, 1, 64}}, {"conv1_b", tile.Shape{64}},
	{"conv2_w", tile.Shape{2, 2, 64, 32}}, {"conv2_b", tile.Shape{32}},
	{"dense1_w", tile.Shape{1568, 256}}, {"dense1_b", tile.Shape{256}},
	{"dense2_w", tile.Shape{256, 10}}, {"dense2_b", tile.Shape{10}},
}

// showcaseStep builds one training step of the showcase CNN on a batch: the
// forward pass with dropout (seeded by the i64 input "seed"), sparse
// categorical cross-entropy from the logits, its gradients, and an Adam
// update (learning rate 1e-3, β₁ 0.9, β₂ 0.999, ε 1e-7, Keras's defaults) of
// every weight, with the step count and moments as variables. Outputs are
// the loss and the number of correct predictions.
func showcaseStep(batch int) *tile.Graph {
	g := tile.NewGraph(fmt.Sprintf("showcase_step_b%d", batch))
	x := g.Input("x", tile.Float32, tile.Shape{batch, 28, 28, 1})
	labels := g.Input("labels", tile.Int64, tile.Shape{batch})
	seed := g.Input("seed", tile.Int64, tile.Shape{})
	p := map[string]*tile.Tensor{}
	var ws []*tile.Tensor
	for _, sp := range showcaseParams {
		p[sp.name] = g.Variable(sp.name, tile.Float32, sp.shape)
		ws = append(ws, p[sp.name])
	}
	same := op.ConvOptions{Padding: op.Same}
	h := op.ReLU(g, op.BiasAdd(g, op.Conv2D(g, x, p["conv1_w"], same), p["conv1_b"]))
	h = op.Dropout(g, op.MaxPool2D(g, h, op.PoolOptions{}), 0.3, seed, 1)
	h = op.ReLU(g, op.BiasAdd(g, op.Conv2D(g, h, p["conv2_w"], same), p["conv2_b"]))
	h = op.Dropout(g, op.MaxPool2D(g, h, op.PoolOptions{}), 0.3, seed, 2)
	h = op.Flatten(g, h)
	h = op.Dropout(g, op.ReLU(g, op.Dense(g, h, p["dense1_w"], p["dense1_b"])), 0.5, seed, 3)
	logits := op.Dense(g, h, p["dense2_w"], p["dense2_b"])
	loss := op.SparseCategoricalCrossentropy(g, labels, logits, true)
	correct := op.Sum(g, g.Cast(g.Elementwise(tile.Eq, op.ArgMax(g, logits, -1), labels), tile.Float32), nil, false)
	grads, err := grad.Grad(g, loss, ws...)
	if err != nil {
		g.Errorf("showcase", "%v", err)
		return g
	}
	adam(g, ws, grads, 1e-3)
	g.SetOutput("loss", loss)
	g.SetOutput("correct", correct)
	return g
}

// adam adds Keras's Adam update of every weight to g.
func adam(g *tile.Graph, ws, grads []*tile.Tensor, lr float64) {
	const b1, b2, eps = 0.9, 0.999, 1e-7
	f := func(v float64) *tile.Tensor { return g.Scalar(v, tile.Float32) }
	step := g.Variable("adam/step", tile.Float32, tile.Shape{})
	t := g.Add(step, f(1))
	g.Update(step, t)
	// lr_t = lr · √(1 − β₂ᵗ) / (1 − β₁ᵗ)
	pow := func(b float64) *tile.Tensor { return g.Elementwise(tile.Pow, f(b), t) }
	lrt := g.Div(g.Mul(f(lr), g.Sqrt(g.Sub(f(1), pow(b2)))), g.Sub(f(1), pow(b1)))
	for i, w := range ws {
		name := w.Op().(*tile.VariableOp).Name
		m := g.Variable(name+"/m", tile.Float32, w.Shape())
		v := g.Variable(name+"/v", tile.Float32, w.Shape())
		gw := grads[i]
		m2 := g.Add(g.Mul(f(b1), m), g.Mul(f(1-b1), gw))
		v2 := g.Add(g.Mul(f(b2), v), g.Mul(f(1-b2), g.Mul(gw, gw)))
		w2 := g.Sub(w, g.Div(g.Mul(lrt, m2), g.Add(g.Sqrt(v2), f(eps))))
		g.Update(m, m2)
		g.Update(v, v2)
		g.Update(w, w2)
	}
}

// glorot returns deterministic Glorot-uniform initial values for a weight of
// the given shape (zeros for a bias).
func glorot(shape tile.Shape, seed uint64) []float32 {
	out := make([]float32, shape.Size())
	if len(shape) < 2 {
		return out
	}
	rf := 1
	for _, d := range shape[:len(shape)-2] {
		rf *= d
	}
	fanIn, fanOut := shape[len(shape)-2]*rf, shape[len(shape)-1]*rf
	lim := math.Sqrt(6 / float64(fanIn+fanOut))
	for i := range out {
		out[i] = float32((2*tile.UniformAt(seed, 7, i) - 1) * lim)
	}
	return out
}
