package nn

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/tartanml/tartan/backend"
	"github.com/tartanml/tartan/grad"
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
		return nestf(err, "Compile %q", m.name)
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
		for i, n := range m.accumulators(prefix) {
			m.st.declare(n, tile.Float32, m.accumulatorShape(i))
		}
	}
	return nil
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

// accumulatorShape returns the shape of accumulator i of accumulators: a
// scalar, or the counts of a confusionMetric.
func (m *Model) accumulatorShape(i int) tile.Shape {
	if i >= 2 {
		if cm, ok := m.comp.metrics[i-2].(*confusionMetric); ok {
			return cm.countShape()
		}
	}
	return tile.Shape{}
}

// resetAccumulators sets a prefix's accumulators to zero.
func (m *Model) resetAccumulators(prefix string) error {
	for i, n := range m.accumulators(prefix) {
		if err := m.st.setF32(n, make([]float32, m.accumulatorShape(i).Size())); err != nil {
			return err
		}
	}
	return nil
}

// readLogs reads a prefix's accumulators and returns the mean loss and
// metrics (or, for a confusionMetric, its value from the counts), under
// their names with namePrefix before them ("" or "val_").
func (m *Model) readLogs(prefix, namePrefix string) (Logs, error) {
	all := m.accumulators(prefix)
	var names []string
	logs := Logs{}
	for i, n := range all {
		cm, ok := (*confusionMetric)(nil), false
		if i >= 2 {
			cm, ok = m.comp.metrics[i-2].(*confusionMetric)
		}
		if !ok {
			names = append(names, n)
			continue
		}
		v, err := m.st.f32(n)
		if err != nil {
			return nil, err
		}
		logs[namePrefix+cm.Name()] = cm.result(v)
	}
	vals, err := m.st.readScalars(names)
	if err != nil {
		return nil, err
	}
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
	g := tile.NewGraph(fmt.Sprintf("%s_%s_b%d", m.name, strings.ReplaceAll(key.kind.String(), " ", "_"), b))
	c := &callContext{g: g, training: key.kind == trainProg || key.kind == weightedTrainProg, vars: map[*Weight]*tile.Tensor{}, logits: map[*tile.Tensor]*logits{}}
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
	var loss *tile.Tensor
	if key.kind == weightedTrainProg {
		loss = weightedLoss(g, m.comp.loss, y, pred, c.logits[pred], b)
	} else {
		loss = m.comp.loss.value(g, y, pred, c.logits[pred])
	}
	if err := g.Err(); err != nil {
		return nil, nestf(err, "loss %s", m.comp.loss.Name())
	}
	// Keras adds the weights' penalties to the loss it minimises and
	// reports, in training and evaluation alike.
	if p := m.regularization(c); p != nil {
		loss = g.Add(loss, p)
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
			return nil, nestf(err, "differentiating the loss of %q", m.name)
		}
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
		var v *tile.Tensor
		if cm, ok := mt.(*confusionMetric); ok {
			v = cm.counts(g, y, pred)
		} else {
			v = sumAll(g, mt.perSample(g, m.comp.loss, y, pred))
		}
		if err := g.Err(); err != nil {
			return nil, nestf(err, "metric %s", mt.Name())
		}
		totals = append(totals, v)
	}
	for i, name := range accs {
		acc := g.Variable(name, tile.Float32, m.accumulatorShape(i))
		g.Update(acc, g.Add(acc, totals[i]))
	}
	g.SetOutput("loss", loss)
	if err := g.Err(); err != nil {
		return nil, nestf(err, "building the %s step of %q", key.kind, m.name)
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
