package bench

import (
	"fmt"
	"math"
	"math/rand/v2"
	"time"

	"github.com/tartanml/tartan/backend"
	"github.com/tartanml/tartan/grad"
	"github.com/tartanml/tartan/op"
	"github.com/tartanml/tartan/tile"
)

// Adam's hyperparameters, Keras's defaults as in nn.Adam; torch_suite.py
// uses the same.
const (
	adamLR      = 1e-3
	adamBeta1   = 0.9
	adamBeta2   = 0.999
	adamEpsilon = 1e-7
)

// tileModel collects a training step written in the tile layer: its graph,
// trainable weights with their initial values, other state, and the host
// data of its inputs.
type tileModel struct {
	g       *tile.Graph
	r       *rand.Rand
	weights []*tile.Tensor
	values  map[string][]float32 // initial values of weights and state
	feeds   map[string]any       // host data of every input
	rebind  bool                 // bind the inputs before every step
	params  int
}

// newTileModel starts a step's graph; rebind says whether Run binds the
// inputs every step (models) or once (fragments).
func newTileModel(name string, c Config, rebind bool) *tileModel {
	return &tileModel{g: tile.NewGraph(name), r: newRand(c.Seed, 2),
		values: map[string][]float32{}, feeds: map[string]any{}, rebind: rebind}
}

// weight declares a trainable f32 weight with initial values init (nil for
// zeros).
func (t *tileModel) weight(name string, shape tile.Shape, init []float32) *tile.Tensor {
	w := t.g.Variable(name, tile.Float32, shape)
	t.weights = append(t.weights, w)
	t.params += shape.Size()
	if init != nil {
		t.values[name] = init
	}
	return w
}

// glorot returns Keras's glorot-uniform values for a kernel: dense (in,
// out) or convolution (spatial…, in, out).
func (t *tileModel) glorot(shape tile.Shape) []float32 {
	rf := 1
	for _, d := range shape[:len(shape)-2] {
		rf *= d
	}
	fanIn, fanOut := shape[len(shape)-2]*rf, shape[len(shape)-1]*rf
	lim := math.Sqrt(6 / float64(fanIn+fanOut))
	v := make([]float32, shape.Size())
	for i := range v {
		v[i] = float32((2*t.r.Float64() - 1) * lim)
	}
	return v
}

// kernel declares a glorot-uniform kernel.
func (t *tileModel) kernel(name string, shape ...int) *tile.Tensor {
	return t.weight(name, shape, t.glorot(shape))
}

// ones returns n ones.
func ones(n int) []float32 {
	v := make([]float32, n)
	for i := range v {
		v[i] = 1
	}
	return v
}

// dense is x·kernel + bias with a glorot kernel and a zero bias.
func (t *tileModel) dense(name string, x *tile.Tensor, out int) *tile.Tensor {
	k := t.kernel(name+"/kernel", x.Dim(-1), out)
	b := t.weight(name+"/bias", tile.Shape{out}, nil)
	return op.Dense(t.g, x, k, b)
}

// layerNorm normalises the last axis with a learned scale and offset.
func (t *tileModel) layerNorm(name string, x *tile.Tensor, eps float64) *tile.Tensor {
	n := x.Dim(-1)
	gamma := t.weight(name+"/gamma", tile.Shape{n}, ones(n))
	beta := t.weight(name+"/beta", tile.Shape{n}, nil)
	return op.LayerNorm(t.g, x, gamma, beta, -1, eps)
}

// batchNorm normalises x over every axis but the channels with the batch's
// statistics, as training does, and updates the moving statistics with
// Keras's momentum 0.99. Epsilon is Keras's 1e-3.
func (t *tileModel) batchNorm(name string, x *tile.Tensor) *tile.Tensor {
	g, c := t.g, x.Dim(-1)
	gamma := t.weight(name+"/gamma", tile.Shape{c}, ones(c))
	beta := t.weight(name+"/beta", tile.Shape{c}, nil)
	mm := g.Variable(name+"/moving_mean", tile.Float32, tile.Shape{c})
	mv := g.Variable(name+"/moving_variance", tile.Float32, tile.Shape{c})
	t.values[name+"/moving_variance"] = ones(c)
	y, mean, variance := op.BatchNorm(g, x, gamma, beta, nil, nil, true, 1e-3)
	const momentum = 0.99
	mom, rest := g.Scalar(momentum, tile.Float32), g.Scalar(1-momentum, tile.Float32)
	g.Update(mm, g.Add(g.Mul(mm, mom), g.Mul(mean, rest)))
	g.Update(mv, g.Add(g.Mul(mv, mom), g.Mul(variance, rest)))
	return y
}

// input declares an input and the host data bound to it.
func (t *tileModel) input(name string, dt tile.DType, shape tile.Shape, data any) *tile.Tensor {
	t.feeds[name] = data
	return t.g.Input(name, dt, shape)
}

// meanSquare is the fragments' loss: the mean of y².
func meanSquare(g *tile.Graph, y *tile.Tensor) *tile.Tensor {
	return op.Mean(g, g.Mul(y, y), nil, false)
}

// tilePrepared is a tile step's graph up to its loss.
type tilePrepared struct {
	t    *tileModel
	loss *tile.Tensor
}

func (p tilePrepared) params() int { return p.t.params }
func (p tilePrepared) compile(dev backend.Device) (Step, error) {
	s, err := p.t.finish(dev, p.loss)
	if err != nil {
		return nil, err
	}
	return s, nil
}

// done returns the step's graph up to loss, or the graph's error.
func (t *tileModel) done(loss *tile.Tensor) (prepared, error) {
	if err := t.g.Err(); err != nil {
		return nil, err
	}
	return tilePrepared{t, loss}, nil
}

// finish adds the gradient of loss with respect to every weight and Adam's
// update of weights and slots (Keras's form, as nn.Adam: with t the update's
// number, lr_t = lr·√(1 − β₂ᵗ)/(1 − β₁ᵗ), m += (g − m)(1 − β₁),
// v += (g² − v)(1 − β₂), w −= lr_t·m/(√v + ε)), compiles the step on dev,
// writes the initial values and binds the inputs.
func (t *tileModel) finish(dev backend.Device, loss *tile.Tensor) (*tileStep, error) {
	g := t.g
	if err := g.Err(); err != nil {
		return nil, err
	}
	grads, err := grad.Grad(g, loss, t.weights...)
	if err != nil {
		return nil, fmt.Errorf("differentiating the loss: %w", err)
	}
	f32 := func(x float64) *tile.Tensor { return g.Scalar(x, tile.Float32) }
	step := g.Variable("adam/iterations", tile.Float32, tile.Shape{})
	next := g.Add(step, f32(1))
	one := f32(1)
	lrT := g.Div(g.Mul(f32(adamLR), g.Sqrt(g.Sub(one, g.Elementwise(tile.Pow, f32(adamBeta2), next)))),
		g.Sub(one, g.Elementwise(tile.Pow, f32(adamBeta1), next)))
	for i, w := range t.weights {
		name := w.Op().(*tile.VariableOp).Name
		m := g.Variable("adam/m/"+name, tile.Float32, w.Shape())
		v := g.Variable("adam/v/"+name, tile.Float32, w.Shape())
		gr := grads[i]
		nm := g.Add(m, g.Mul(g.Sub(gr, m), f32(1-adamBeta1)))
		nv := g.Add(v, g.Mul(g.Sub(g.Mul(gr, gr), v), f32(1-adamBeta2)))
		g.Update(w, g.Sub(w, g.Div(g.Mul(nm, lrT), g.Add(g.Sqrt(nv), f32(adamEpsilon)))))
		g.Update(m, nm)
		g.Update(v, nv)
	}
	g.Update(step, next)
	g.SetOutput("loss", loss)
	if err := g.Err(); err != nil {
		return nil, err
	}
	start := time.Now()
	x, err := dev.Compile(g)
	if err != nil {
		return nil, err
	}
	s := &tileStep{t: t, x: x, compile: time.Since(start).Seconds(), kernels: kernelCount(x)}
	for name, v := range t.values {
		if err := x.WriteVariable(name, v); err != nil {
			x.Close()
			return nil, fmt.Errorf("initialising %s: %w", name, err)
		}
	}
	if err := s.bind(); err != nil {
		x.Close()
		return nil, err
	}
	return s, nil
}

// tileStep runs a compiled tile training step.
type tileStep struct {
	t       *tileModel
	x       backend.Executable
	compile float64
	kernels int
	bound   bool
	loss    [1]float32
}

func (s *tileStep) bind() error {
	for name, d := range s.t.feeds {
		if err := s.x.SetInput(name, d); err != nil {
			return fmt.Errorf("binding input %s: %w", name, err)
		}
	}
	s.bound = true
	return nil
}

func (s *tileStep) Run() (float64, error) {
	if s.t.rebind && !s.bound {
		if err := s.bind(); err != nil {
			return 0, err
		}
	}
	if err := s.x.Run(); err != nil {
		return 0, err
	}
	// Reading the loss waits for the device.
	if err := s.x.ReadOutput("loss", s.loss[:]); err != nil {
		return 0, err
	}
	s.bound = false
	return float64(s.loss[0]), nil
}

func (s *tileStep) Params() int             { return s.t.params }
func (s *tileStep) Kernels() int            { return s.kernels }
func (s *tileStep) CompileSeconds() float64 { return s.compile }
func (s *tileStep) Close() error            { return s.x.Close() }
