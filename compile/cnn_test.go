package compile

import (
	"fmt"
	"testing"
	"time"

	"github.com/tartanml/tartan/grad"
	"github.com/tartanml/tartan/op"
	"github.com/tartanml/tartan/tile"
)

// cnnConfig sizes the showcase model: Conv2D(c1, 2, same, relu),
// MaxPool 2, Dropout .3, Conv2D(c2, 2, same, relu), MaxPool 2, Dropout .3,
// Flatten, Dense(dense, relu), Dropout .5, Dense(10, softmax), sparse
// categorical cross-entropy and an Adam step with bias correction.
type cnnConfig struct {
	batch, size, c1, c2, dense int
	dt                         tile.DType
}

// buildCNNStep builds one training step of the showcase CNN into g.
func buildCNNStep(g *tile.Graph, c cnnConfig) error {
	x := g.Input("x", c.dt, tile.Shape{c.batch, c.size, c.size, 1})
	labels := g.Input("labels", tile.Int32, tile.Shape{c.batch})
	seed := g.Input("seed", tile.Int64, tile.Shape{})
	flat := (c.size / 4) * (c.size / 4) * c.c2
	type param struct {
		name  string
		shape tile.Shape
	}
	params := []param{
		{"conv1/kernel", tile.Shape{2, 2, 1, c.c1}}, {"conv1/bias", tile.Shape{c.c1}},
		{"conv2/kernel", tile.Shape{2, 2, c.c1, c.c2}}, {"conv2/bias", tile.Shape{c.c2}},
		{"dense1/kernel", tile.Shape{flat, c.dense}}, {"dense1/bias", tile.Shape{c.dense}},
		{"dense2/kernel", tile.Shape{c.dense, 10}}, {"dense2/bias", tile.Shape{10}},
	}
	w := make([]*tile.Tensor, len(params))
	for i, p := range params {
		w[i] = g.Variable(p.name, c.dt, p.shape)
	}
	same := op.ConvOptions{Padding: op.Same}
	pool := op.PoolOptions{Size: []int{2, 2}}
	h := op.ReLU(g, op.BiasAdd(g, op.Conv2D(g, x, w[0], same), w[1]))
	h = op.Dropout(g, op.MaxPool2D(g, h, pool), 0.3, seed, 1)
	h = op.ReLU(g, op.BiasAdd(g, op.Conv2D(g, h, w[2], same), w[3]))
	h = op.Dropout(g, op.MaxPool2D(g, h, pool), 0.3, seed, 2)
	h = op.ReLU(g, op.Dense(g, op.Flatten(g, h), w[4], w[5]))
	h = op.Dropout(g, h, 0.5, seed, 3)
	probs := op.Softmax(g, op.Dense(g, h, w[6], w[7]), -1)
	loss := op.SparseCategoricalCrossentropy(g, labels, probs, false)
	correct := g.Cast(g.Elementwise(tile.Eq, op.ArgMax(g, probs, -1), g.Cast(labels, tile.Int64)), c.dt)
	if err := g.Err(); err != nil {
		return err
	}
	grads, err := grad.Grad(g, loss, w...)
	if err != nil {
		return err
	}
	// Adam with bias correction.
	step := g.Variable("adam/step", c.dt, tile.Shape{})
	k := func(v float64) *tile.Tensor { return g.Scalar(v, c.dt) }
	t := g.Add(step, k(1))
	g.Update(step, t)
	lr := g.Div(g.Mul(k(1e-3), g.Sqrt(g.Sub(k(1), g.Elementwise(tile.Pow, k(0.999), t)))),
		g.Sub(k(1), g.Elementwise(tile.Pow, k(0.9), t)))
	for i, p := range params {
		m := g.Variable(p.name+"/m", c.dt, p.shape)
		v := g.Variable(p.name+"/v", c.dt, p.shape)
		m2 := g.Add(g.Mul(k(0.9), m), g.Mul(k(0.1), grads[i]))
		v2 := g.Add(g.Mul(k(0.999), v), g.Mul(k(0.001), g.Mul(grads[i], grads[i])))
		g.Update(m, m2)
		g.Update(v, v2)
		g.Update(w[i], g.Sub(w[i], g.Div(g.Mul(lr, m2), g.Add(g.Sqrt(v2), k(1e-7)))))
	}
	g.SetOutput("loss", loss)
	g.SetOutput("correct", op.Sum(g, correct, nil, false))
	return g.Err()
}

func TestCNNTrainingStepMatchesReference(t *testing.T) {
	cases := []struct {
		cfg  cnnConfig
		tol  float64
		runs int
	}{
		{cnnConfig{batch: 2, size: 8, c1: 3, c2: 2, dense: 5, dt: tile.Float64}, 1e-9, 2},
		{cnnConfig{batch: 2, size: 8, c1: 3, c2: 2, dense: 5, dt: tile.Float32}, 2e-4, 1},
	}
	for _, c := range cases {
		t.Run(c.cfg.dt.String(), func(t *testing.T) {
			g := tile.NewGraph("cnn_step")
			if err := buildCNNStep(g, c.cfg); err != nil {
				t.Fatal(err)
			}
			p := checkAgainstRef(t, g, testTarget, 3, 10, c.runs, c.tol)
			t.Logf("%d graph nodes, %d kernels, %d buffers, %d slots", len(g.Nodes()), len(p.Kernels), len(p.Buffers), p.Slots)
		})
	}
}

func TestCNNCompileTime(t *testing.T) {
	g := tile.NewGraph("fashion_cnn_step")
	if err := buildCNNStep(g, cnnConfig{batch: 64, size: 28, c1: 64, c2: 32, dense: 256, dt: tile.Float32}); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	p, st, err := compileGraph(g, Target{Backend: "cpu", Workers: 8, VectorWidth: 8})
	if err != nil {
		t.Fatal(err)
	}
	d := time.Since(start)
	var passes string
	for _, pt := range st.passes {
		passes += fmt.Sprintf(" %s=%v", pt.name, pt.d.Round(time.Microsecond))
	}
	t.Logf("%d nodes -> %d, %d kernels, compiled in %v:%s", len(g.Nodes()), st.nodesOut, len(p.Kernels), d, passes)
	if d > 500*time.Millisecond {
		t.Errorf("compiling the showcase training step took %v, want < 0.5 s", d)
	}
}

// TestOpGradientsMatchReference compiles gradients that package grad builds
// for op-library layers with strides, padding and pooling.
func TestOpGradientsMatchReference(t *testing.T) {
	cases := []struct {
		name  string
		layer func(g *tile.Graph, x, k *tile.Tensor) *tile.Tensor
	}{
		{"conv_same_stride2", func(g *tile.Graph, x, k *tile.Tensor) *tile.Tensor {
			return op.Conv2D(g, x, k, op.ConvOptions{Strides: []int{2}, Padding: op.Same})
		}},
		{"conv_valid_dilated", func(g *tile.Graph, x, k *tile.Tensor) *tile.Tensor {
			return op.Conv2D(g, x, k, op.ConvOptions{Dilation: []int{2}})
		}},
		{"conv_maxpool_same_stride2", func(g *tile.Graph, x, k *tile.Tensor) *tile.Tensor {
			y := op.Conv2D(g, x, k, op.ConvOptions{Padding: op.Same})
			return op.MaxPool2D(g, y, op.PoolOptions{Size: []int{3}, Strides: []int{2}, Padding: op.Same})
		}},
		{"conv_batchnorm_training", func(g *tile.Graph, x, k *tile.Tensor) *tile.Tensor {
			y, _, _ := op.BatchNorm(g, op.Conv2D(g, x, k, op.ConvOptions{}), nil, nil, nil, nil, true, 1e-3)
			return y
		}},
		{"avgpool", func(g *tile.Graph, x, k *tile.Tensor) *tile.Tensor {
			return op.AvgPool2D(g, op.Conv2D(g, x, k, op.ConvOptions{}), op.PoolOptions{Size: []int{2}, Padding: op.Same})
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			g := tile.NewGraph(c.name)
			x := g.Input("x", f64, s(2, 7, 7, 3))
			k := g.Input("k", f64, s(3, 3, 3, 4))
			y := c.layer(g, x, k)
			r := g.Input("r", f64, y.Shape())
			loss := op.Sum(g, g.Mul(y, r), nil, false)
			if err := g.Err(); err != nil {
				t.Fatal(err)
			}
			grads, err := grad.Grad(g, loss, x, k)
			if err != nil {
				t.Fatal(err)
			}
			g.SetOutput("y", y)
			g.SetOutput("dx", grads[0])
			g.SetOutput("dk", grads[1])
			checkAgainstRef(t, g, testTarget, 9, 3, 1, 1e-9)
		})
	}
}

// TestBatchNormGradientPasses checks the kernels of a training batch norm's
// input gradient: the normalised output and the input gradient are the only
// kernels that write a tensor of the input's size. The variance's
// derivative with respect to the mean is zero (op.BatchNorm stops it), so
// no x-sized term is written only to be summed back to zero.
func TestBatchNormGradientPasses(t *testing.T) {
	g := tile.NewGraph("bn")
	x := g.Input("x", tile.Float32, s(8, 4, 4, 3))
	gamma := g.Input("gamma", tile.Float32, s(3))
	y, _, _ := op.BatchNorm(g, x, gamma, nil, nil, nil, true, 1e-3)
	r := g.Input("r", tile.Float32, y.Shape())
	grads, err := grad.Grad(g, op.Sum(g, g.Mul(y, r), nil, false), x)
	if err != nil {
		t.Fatal(err)
	}
	g.SetOutput("y", y)
	g.SetOutput("dx", grads[0])
	p := checkAgainstRef(t, g, testTarget, 5, 3, 1, 1e-4)
	var full []string
	for _, k := range p.Kernels {
		if p.Buffers[k.Out].Size() == x.Size() {
			full = append(full, k.Name)
		}
	}
	if len(full) != 2 {
		t.Errorf("%d kernels write x-sized tensors (%v), want 2 (y and dx)", len(full), full)
	}
}

// TestSoftmaxGradientPasses checks that the gradients of softmax and
// log-softmax leave the maximum they subtract alone: the step computes the
// maximum once, for the forward pass, and no argmax or other maximum or
// minimum for the backward one, and matches the reference.
func TestSoftmaxGradientPasses(t *testing.T) {
	for _, f := range []func(*tile.Graph, *tile.Tensor, int) *tile.Tensor{op.Softmax, op.LogSoftmax} {
		g := tile.NewGraph("softmax")
		x := g.Input("x", tile.Float32, s(6, 10))
		y := f(g, x, -1)
		r := g.Input("r", tile.Float32, y.Shape())
		grads, err := grad.Grad(g, op.Sum(g, g.Mul(y, r), nil, false), x)
		if err != nil {
			t.Fatal(err)
		}
		g.SetOutput("y", y)
		g.SetOutput("dx", grads[0])
		p := checkAgainstRef(t, g, testTarget, 5, 3, 1, 1e-4)
		var extrema []string
		for _, k := range p.Kernels {
			if len(k.Reduce) > 0 && (k.Agg == tile.Max || k.Agg == tile.Min) {
				extrema = append(extrema, k.Name)
			}
		}
		if len(extrema) != 1 {
			t.Errorf("%d kernels take a maximum or minimum (%v), want 1 (the forward maximum)", len(extrema), extrema)
		}
	}
}
