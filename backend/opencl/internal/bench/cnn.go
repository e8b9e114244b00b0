package main

import (
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/tartanml/tartan/backend/opencl"
	"github.com/tartanml/tartan/compile"
	"github.com/tartanml/tartan/grad"
	"github.com/tartanml/tartan/op"
	"github.com/tartanml/tartan/tile"
)

// cnnStep builds the showcase CNN's training step at the given batch size:
// the forward pass in training mode (dropout from a seed input), sparse
// categorical cross-entropy on the logits, the gradients of every weight and
// an Adam update (learning rate 1e-3, β 0.9 and 0.999, ε 1e-7, bias
// corrected through a step-count variable).
func cnnStep(batch int) (*tile.Graph, []string, error) {
	g := tile.NewGraph("fashion_cnn_step")
	f32 := tile.Float32
	x := g.Input("x", f32, tile.Shape{batch, 28, 28, 1})
	labels := g.Input("labels", tile.Int32, tile.Shape{batch})
	seed := g.Input("seed", tile.Int64, tile.Shape{})
	shapes := []struct {
		name  string
		shape tile.Shape
	}{
		{"conv1.k", tile.Shape{2, 2, 1, 64}}, {"conv1.b", tile.Shape{64}},
		{"conv2.k", tile.Shape{2, 2, 64, 32}}, {"conv2.b", tile.Shape{32}},
		{"dense1.k", tile.Shape{1568, 256}}, {"dense1.b", tile.Shape{256}},
		{"dense2.k", tile.Shape{256, 10}}, {"dense2.b", tile.Shape{10}},
	}
	var ws []*tile.Tensor
	var names []string
	for _, s := range shapes {
		ws = append(ws, g.Variable(s.name, f32, s.shape))
		names = append(names, s.name)
	}
	same := op.ConvOptions{Padding: op.Same}
	h := op.ReLU(g, op.BiasAdd(g, op.Conv2D(g, x, ws[0], same), ws[1]))
	h = op.Dropout(g, op.MaxPool2D(g, h, op.PoolOptions{}), 0.3, seed, 1)
	h = op.ReLU(g, op.BiasAdd(g, op.Conv2D(g, h, ws[2], same), ws[3]))
	h = op.Dropout(g, op.MaxPool2D(g, h, op.PoolOptions{}), 0.3, seed, 2)
	h = op.Dropout(g, op.ReLU(g, op.Dense(g, op.Flatten(g, h), ws[4], ws[5])), 0.5, seed, 3)
	logits := op.Dense(g, h, ws[6], ws[7])
	loss := op.SparseCategoricalCrossentropy(g, labels, logits, true)
	g.SetOutput("loss", loss)
	grads, err := grad.Grad(g, loss, ws...)
	if err != nil {
		return nil, nil, err
	}
	step := g.Variable("adam.t", f32, tile.Shape{})
	t := g.Add(step, g.Scalar(1, f32))
	g.Update(step, t)
	const lr, b1, b2, eps = 1e-3, 0.9, 0.999, 1e-7
	one := g.Scalar(1, f32)
	corr := g.Div(g.Sqrt(g.Sub(one, g.Elementwise(tile.Pow, g.Scalar(b2, f32), t))),
		g.Sub(one, g.Elementwise(tile.Pow, g.Scalar(b1, f32), t)))
	for i, w := range ws {
		m := g.Variable(names[i]+".m", f32, w.Shape())
		v := g.Variable(names[i]+".v", f32, w.Shape())
		m2 := g.Add(g.Mul(g.Scalar(b1, f32), m), g.Mul(g.Scalar(1-b1, f32), grads[i]))
		v2 := g.Add(g.Mul(g.Scalar(b2, f32), v), g.Mul(g.Scalar(1-b2, f32), g.Mul(grads[i], grads[i])))
		g.Update(m, m2)
		g.Update(v, v2)
		g.Update(w, g.Sub(w, g.Mul(g.Mul(g.Scalar(lr, f32), corr), g.Div(m2, g.Add(g.Sqrt(v2), g.Scalar(eps, f32))))))
	}
	return g, names, g.Err()
}

type cnnResult struct {
	Batch      int                `json:"batch"`
	Compile    float64            `json:"compile_seconds"`
	MsPerStep  float64            `json:"ms_per_step"`
	Launches   int                `json:"launches"`
	KernelMs   float64            `json:"kernel_ms_per_step"`
	Top        []kernelProfile    `json:"slowest_kernels"`
	LossFirst  float64            `json:"loss_first"`
	LossLast   float64            `json:"loss_last"`
	Matmul     string             `json:"matmul"`
	Error      string             `json:"error,omitempty"`
	ByStrategy map[string]float64 `json:"ms_by_strategy"`
}

type kernelProfile struct {
	Fn       string  `json:"fn"`
	Strategy string  `json:"strategy"`
	Source   string  `json:"source"`
	Ms       float64 `json:"ms"`
}

// measureCNN compiles the step, trains steps steps on one random batch
// (the loss must fall) and profiles one step kernel by kernel.
func measureCNN(c opencl.Candidate, batch, steps int) (res cnnResult) {
	res.Batch = batch
	g, names, err := cnnStep(batch)
	if err != nil {
		res.Error = err.Error()
		return res
	}
	d, err := opencl.OpenCandidate(c, opencl.WithProfiling())
	if err != nil {
		res.Error = err.Error()
		return res
	}
	defer d.Close()
	res.Matmul = d.Matmul()
	t0 := time.Now()
	p, err := compile.Compile(g, d.Target())
	if err != nil {
		res.Error = err.Error()
		return res
	}
	e, err := d.Load(p)
	if err != nil {
		res.Error = err.Error()
		return res
	}
	defer e.Close()
	res.Compile = time.Since(t0).Seconds()
	res.Launches = len(e.Launches())
	r := rand.New(rand.NewPCG(5, 6))
	for _, name := range names {
		w := g.Leaf(name)
		data := make([]float32, w.Size())
		fan := float64(w.Size()) / float64(w.Shape()[len(w.Shape())-1])
		limit := math.Sqrt(6 / (fan + float64(w.Shape()[len(w.Shape())-1])))
		if w.Rank() > 1 {
			for i := range data {
				data[i] = float32((r.Float64()*2 - 1) * limit)
			}
		}
		if err := e.WriteVariable(name, data); err != nil {
			res.Error = err.Error()
			return res
		}
	}
	x := make([]float32, batch*28*28)
	for i := range x {
		x[i] = float32(r.Float64())
	}
	labels := make([]int32, batch)
	for i := range labels {
		labels[i] = int32(r.IntN(10))
	}
	e.SetInput("x", x)
	e.SetInput("labels", labels)
	loss := make([]float32, 1)
	run := func(i int) error {
		if err := e.SetInput("seed", []int64{int64(i)}); err != nil {
			return err
		}
		return e.Run()
	}
	if err := run(0); err != nil {
		res.Error = err.Error()
		return res
	}
	e.ReadOutput("loss", loss)
	res.LossFirst = float64(loss[0])
	for i := 1; i < 5; i++ {
		run(i)
	}
	e.Finish()
	t1 := time.Now()
	for i := range steps {
		if err := run(5 + i); err != nil {
			res.Error = err.Error()
			return res
		}
	}
	if err := e.Finish(); err != nil {
		res.Error = err.Error()
		return res
	}
	res.MsPerStep = time.Since(t1).Seconds() * 1e3 / float64(steps)
	e.ReadOutput("loss", loss)
	res.LossLast = float64(loss[0])
	prof, err := e.Profile()
	if err != nil {
		res.Error = err.Error()
		return res
	}
	res.ByStrategy = map[string]float64{}
	for _, l := range prof {
		res.KernelMs += l.Seconds * 1e3
		kind, _, _ := strings.Cut(l.How, " ")
		res.ByStrategy[kind] += l.Seconds * 1e3
		res.Top = append(res.Top, kernelProfile{Fn: l.Kernel, Strategy: l.How, Source: l.Source, Ms: l.Seconds * 1e3})
	}
	sort.Slice(res.Top, func(i, j int) bool { return res.Top[i].Ms > res.Top[j].Ms })
	for _, k := range res.Top {
		src := k.Source
		if len(src) > 70 {
			src = src[:70] + "…"
		}
		fmt.Fprintf(os.Stderr, "  %7.3f ms  %-28s %-40s %s\n", k.Ms, k.Fn, k.Strategy, src)
	}
	if len(res.Top) > 12 {
		res.Top = res.Top[:12]
	}
	return res
}
