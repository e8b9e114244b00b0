package nn

import (
	"errors"
	"fmt"
	"slices"

	"github.com/tartanml/tartan/backend"
	"github.com/tartanml/tartan/grad"
	"github.com/tartanml/tartan/op"
	"github.com/tartanml/tartan/tile"
)

// compiled is what Compile attaches to a model.
type compiled struct {
	opt     Optimizer
	loss    Loss
	metrics []Metric
	target  tile.Shape // per-sample target shape the graphs take
}

// CompileOption configures Compile.
type CompileOption interface{ applyCompile(*compileSettings) }

type compileSettings struct {
	metrics []Metric
	names   []string
	dev     backend.Device
	seed    *int64
}

type compileOption func(*compileSettings)

func (f compileOption) applyCompile(s *compileSettings) { f(s) }

// Metrics adds metrics by Keras name, such as Metrics("accuracy"); see
// MetricByName.
func Metrics(names ...string) CompileOption {
	return compileOption(func(s *compileSettings) { s.names = append(s.names, names...) })
}

// WithMetrics adds metric values, such as SparseTopKCategoricalAccuracy(3).
func WithMetrics(ms ...Metric) CompileOption {
	return compileOption(func(s *compileSettings) { s.metrics = append(s.metrics, ms...) })
}

// OnDevice makes the model run on dev.
func OnDevice(dev backend.Device) CompileOption {
	return compileOption(func(s *compileSettings) { s.dev = dev })
}

// Seed sets the seed of dropout masks and of Fit's shuffling (0 unless
// given). Initial weights have their own seed: see Model.InitWeights.
func Seed(seed int64) CompileOption {
	return compileOption(func(s *compileSettings) { s.seed = &seed })
}

// Compile prepares the model for training and evaluation with an optimizer,
// a loss and options (Metrics, WithMetrics, OnDevice, Seed), as Keras's
// compile does. It starts the optimizer afresh: step 0, zero slots. The
// weights are kept. Compiling needs a device, from OnDevice or an earlier
// SetDevice.
func (m *Model) Compile(opt Optimizer, loss Loss, opts ...CompileOption) error {
	if opt == nil || loss == nil {
		return fmt.Errorf("nn: Compile %q: needs an optimizer and a loss", m.name)
	}
	if err := opt.base().err; err != nil {
		return err
	}
	if err := loss.err(); err != nil {
		return err
	}
	s := &compileSettings{}
	for _, o := range opts {
		if o == nil {
			return fmt.Errorf("nn: Compile %q: nil option", m.name)
		}
		o.applyCompile(s)
	}
	metrics := slices.Clone(s.metrics)
	for _, n := range s.names {
		mt, err := MetricByName(n)
		if err != nil {
			return err
		}
		metrics = append(metrics, mt)
	}
	seen := map[string]bool{"loss": true, "count": true}
	for _, mt := range metrics {
		if mt == nil {
			return fmt.Errorf("nn: Compile %q: nil metric", m.name)
		}
		if err := mt.err(); err != nil {
			return err
		}
		if seen[mt.Name()] {
			return fmt.Errorf("nn: Compile %q: metric %q is given twice", m.name, mt.Name())
		}
		seen[mt.Name()] = true
	}
	if err := m.single("Compile"); err != nil {
		return err
	}
	target, err := loss.targetShape(m.outputs[0].shape)
	if err != nil {
		return fmt.Errorf("nn: Compile %q: %w", m.name, err)
	}
	if s.dev != nil {
		if err := m.SetDevice(s.dev); err != nil {
			return err
		}
	}
	if m.dev == nil {
		return fmt.Errorf("nn: Compile %q: no device; pass nn.OnDevice(dev)", m.name)
	}
	if err := m.syncAll(); err != nil {
		return err
	}
	if err := m.dropPrograms(); err != nil {
		return err
	}
	m.comp = &compiled{opt: opt, loss: loss, metrics: metrics, target: target}
	if s.seed != nil {
		m.seed = *s.seed
	}
	if err := m.optimizerVars(opt); err != nil {
		return err
	}
	m.st.declare(seedVar, tile.Int64, tile.Shape{})
	if err := m.st.setI64(seedVar, []int64{m.seed & 0xffffffff}); err != nil {
		return err
	}
	for _, prefix := range []string{"train", "eval"} {
		for _, n := range m.accumulators(prefix) {
			m.st.declare(n, tile.Float32, tile.Shape{})
		}
	}
	m.st.declare(nonFiniteVar, tile.Int64, tile.Shape{})
	return m.st.setI64(nonFiniteVar, []int64{0})
}

// nonFiniteVar is the training step's watch of its gradient: 0 while every
// step since the accumulators' reset (each epoch's start) had a finite
// gradient, else the 1-based optimizer step of the first one whose gradient
// had a NaN or infinite element, whose update made weights non-finite.
const nonFiniteVar = "train/nonfinite_step"

// gradientWatch adds to a training step the update of nonFiniteVar. Each
// gradient element times 0 is ±0 when it is finite and NaN when it is NaN
// or infinite, so the sum of them all is 0 exactly when the whole gradient
// is finite (a sum rather than the largest magnitude: it is one plain,
// vectorised pass over the gradients). iter is the optimizer's step counter
// before this step.
func gradientWatch(g *tile.Graph, iter *tile.Tensor, grads []*tile.Tensor) {
	var total *tile.Tensor
	for _, gr := range grads {
		if gr.Size() == 0 {
			continue
		}
		z := op.Sum(g, g.Mul(gr, g.ScalarLike(gr, 0)), nil, false)
		if z.DType() != tile.Float32 {
			z = g.Cast(z, tile.Float32)
		}
		if total == nil {
			total = z
		} else {
			total = g.Add(total, z)
		}
	}
	if total == nil {
		return
	}
	finite := g.Elementwise(tile.Eq, total, g.Scalar(0, tile.Float32))
	watch := g.Variable(nonFiniteVar, tile.Int64, tile.Shape{})
	zero := g.Scalar(0, tile.Int64)
	first := g.Elementwise(tile.And, g.Elementwise(tile.Not, finite), g.Elementwise(tile.Eq, watch, zero))
	g.Update(watch, g.Select(first, g.Add(iter, g.Scalar(1, tile.Int64)), watch))
}

// accumulators returns the names of the metric accumulator variables of a
// prefix ("train" or "eval"): the sample count, the loss total, then one
// total per metric.
func (m *Model) accumulators(prefix string) []string {
	out := []string{prefix + "/count", prefix + "/loss"}
	for _, mt := range m.comp.metrics {
		out = append(out, prefix+"/"+mt.Name())
	}
	return out
}

// resetAccumulators sets a prefix's accumulators to zero, and for "train"
// the gradient's watch too.
func (m *Model) resetAccumulators(prefix string) error {
	for _, n := range m.accumulators(prefix) {
		if err := m.st.setF32(n, []float32{0}); err != nil {
			return err
		}
	}
	if prefix == "train" {
		m.st.nonFinite = 0
		return m.st.setI64(nonFiniteVar, []int64{0})
	}
	return nil
}

// readLogs reads a prefix's accumulators and returns the mean loss and
// metrics, under their names with namePrefix before them ("" or "val_").
// For "train" it also reads the gradient's watch into m.st.nonFinite, and
// warns the first time it finds a step with a non-finite gradient.
func (m *Model) readLogs(prefix, namePrefix string) (Logs, error) {
	names := m.accumulators(prefix)
	vals, err := m.st.readScalars(names)
	if err != nil {
		return nil, err
	}
	if prefix == "train" {
		step, err := m.st.readI64Scalar(nonFiniteVar)
		if err != nil {
			return nil, err
		}
		if step != 0 && m.st.nonFinite == 0 {
			m.warnf("Step %d: the gradient is not finite (NaN or infinite); the weights it updated are no longer finite", step)
		}
		m.st.nonFinite = step
	}
	logs := Logs{}
	count := vals[0]
	for i, n := range names[1:] {
		key := namePrefix + n[len(prefix)+1:]
		if count > 0 {
			logs[key] = vals[i+1] / count
		} else {
			logs[key] = 0
		}
	}
	return logs, nil
}

// buildGraph builds the graph of an executable: a training step, an
// evaluation step or a prediction step for one batch size.
func (m *Model) buildGraph(key progKey) (*tile.Graph, error) {
	if key.kind != predictProg && m.comp == nil {
		return nil, fmt.Errorf("nn: model %q is not compiled; call Compile first", m.name)
	}
	b := key.batch
	g := tile.NewGraph(fmt.Sprintf("%s_%s_b%d", m.name, key.kind, b))
	c := &callContext{g: g, training: key.kind == trainProg, vars: map[*Weight]*tile.Tensor{}, logits: map[*tile.Tensor]*logits{}}
	m.declareWeights(c)
	x := g.Input("x", tile.Float32, batchShape(b, m.inputs[0].shape))
	var iter *tile.Tensor
	if c.training {
		iter = g.Variable(iterationsVar, tile.Int64, tile.Shape{})
		seed := g.Variable(seedVar, tile.Int64, tile.Shape{})
		// The dropout key: the seed in the low 32 bits, the step above.
		c.seed = g.Add(seed, g.Mul(iter, g.Scalar(1<<32, tile.Int64)))
	}
	outs, err := m.forward(c, []*tile.Tensor{x})
	if err != nil {
		return nil, err
	}
	pred := outs[0]
	if key.kind == predictProg {
		g.SetOutput("pred", pred)
		return g, g.Err()
	}
	y := g.Input("y", tile.Float32, batchShape(b, m.comp.target))
	loss := m.comp.loss.value(g, y, pred, c.logits[pred])
	if err := g.Err(); err != nil {
		return nil, fmt.Errorf("nn: loss %s: %w", m.comp.loss.Name(), err)
	}
	prefix := "eval"
	if c.training {
		prefix = "train"
		var ws []*Weight
		var vs []*tile.Tensor
		for _, w := range m.weights {
			if w.trainable {
				ws = append(ws, w)
				vs = append(vs, c.v(w))
			}
		}
		if len(ws) == 0 {
			return nil, fmt.Errorf("nn: model %q has no trainable weights", m.name)
		}
		grads, err := grad.Grad(g, loss, vs...)
		if err != nil {
			return nil, fmt.Errorf("nn: differentiating the loss of %q: %w", m.name, err)
		}
		gradientWatch(g, iter, grads)
		m.buildUpdate(c, m.comp.opt, iter, ws, grads)
		for _, u := range c.updates {
			g.Update(c.v(u.w), u.value)
		}
	}
	// Metric accumulators: count, loss × count, and per-metric totals.
	n := g.Scalar(float64(b), tile.Float32)
	accs := m.accumulators(prefix)
	totals := []*tile.Tensor{n, g.Mul(loss, n)}
	for _, mt := range m.comp.metrics {
		v := mt.perSample(g, m.comp.loss, y, pred)
		if err := g.Err(); err != nil {
			return nil, fmt.Errorf("nn: metric %s: %w", mt.Name(), err)
		}
		totals = append(totals, sumAll(g, v))
	}
	for i, name := range accs {
		acc := g.Variable(name, tile.Float32, tile.Shape{})
		g.Update(acc, g.Add(acc, totals[i]))
	}
	g.SetOutput("loss", loss)
	if err := g.Err(); err != nil {
		return nil, fmt.Errorf("nn: building the %s step of %q: %w", key.kind, m.name, err)
	}
	return g, nil
}

// sumAll sums every element of x into a scalar.
func sumAll(g *tile.Graph, x *tile.Tensor) *tile.Tensor {
	if x.Rank() == 0 {
		return x
	}
	r := g.Reshape(x, tile.Shape{x.Size()})
	return g.Contract(tile.Sum, tile.CombNone, tile.Shape{}, nil, []tile.Operand{{Tensor: r, Index: []tile.Affine{tile.Ix("i")}}})
}

// errNotCompiled is returned by Fit and Evaluate on a model without Compile.
var errNotCompiled = errors.New("the model is not compiled; call Compile first")
