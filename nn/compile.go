package nn

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/tartanml/tartan/backend"
	"github.com/tartanml/tartan/grad"
	"github.com/tartanml/tartan/tile"
)

// compiled is what Compile attaches to a model.
type compiled struct {
	opt Optimizer
	// The first output's loss, metrics and per-sample target shape; the
	// same as heads[0]'s.
	loss    Loss
	metrics []Metric
	target  tile.Shape
	heads   []*head // one per model output, in output order
	accs    []accum // the metric accumulators, count and total loss first
}

// head is what Compile attaches to one model output.
type head struct {
	name    string // the output's name: its layer's, as Keras names outputs
	loss    Loss
	weight  float64 // the loss's weight in the total (LossWeights)
	metrics []Metric
	target  tile.Shape // the per-sample target shape the loss takes
}

// accum is one metric accumulator: what it totals and the name it is
// logged under.
type accum struct {
	key    string // "count", "loss", "<output>_loss", or a metric's log name
	head   int    // the output of a per-output loss or a metric; -1 otherwise
	metric Metric // nil for the count and the losses
}

// multi reports whether the model has several outputs, whose losses and
// metrics are logged under their output's name.
func (c *compiled) multi() bool { return len(c.heads) > 1 }

// CompileOption configures Compile.
type CompileOption interface{ applyCompile(*compileSettings) }

type compileSettings struct {
	metrics []Metric
	names   []string
	dev     backend.Device
	seed    *int64

	// Per-output settings: Losses, OutputLoss, LossWeights,
	// OutputLossWeight, OutputMetrics and OutputWithMetrics.
	losses        []Loss
	lossesGiven   bool
	outLoss       []namedLoss
	weights       []float64
	weightsGiven  bool
	outWeight     []namedWeight
	outMetrics    []namedMetrics
	outMetricName []namedMetricNames
}

type namedLoss struct {
	output string
	loss   Loss
}

type namedWeight struct {
	output string
	weight float64
}

type namedMetrics struct {
	output  string
	metrics []Metric
}

type namedMetricNames struct {
	output string
	names  []string
}

type compileOption func(*compileSettings)

func (f compileOption) applyCompile(s *compileSettings) { f(s) }

// Metrics adds metrics by Keras name, such as Metrics("accuracy"); see
// MetricByName. A model of several outputs computes them for every output.
func Metrics(names ...string) CompileOption {
	return compileOption(func(s *compileSettings) { s.names = append(s.names, names...) })
}

// WithMetrics adds metric values, such as SparseTopKCategoricalAccuracy(3).
// A model of several outputs computes them for every output.
func WithMetrics(ms ...Metric) CompileOption {
	return compileOption(func(s *compileSettings) { s.metrics = append(s.metrics, ms...) })
}

// Losses gives a model of several outputs one loss per output, in the
// model's output order, as Keras's list of losses does; Compile's loss
// argument is then nil. (A loss given to Compile itself applies to every
// output.)
func Losses(ls ...Loss) CompileOption {
	return compileOption(func(s *compileSettings) {
		s.losses = append(s.losses, ls...)
		s.lossesGiven = true
	})
}

// OutputLoss gives the output called output (the name of the layer that
// computes it) its loss, as Keras's dictionary of losses does; Compile's
// loss argument is then nil, and every output needs one.
func OutputLoss(output string, l Loss) CompileOption {
	return compileOption(func(s *compileSettings) { s.outLoss = append(s.outLoss, namedLoss{output, l}) })
}

// LossWeights weights the losses of a model's outputs, in output order, as
// Keras's loss_weights does: the model minimises and reports as "loss"
// Σ wₖ·lossₖ (plus the weights' penalties), and logs each weighted term
// wₖ·lossₖ as "<output>_loss". Each weight is finite and not negative;
// without them every output weighs 1.
func LossWeights(w ...float64) CompileOption {
	return compileOption(func(s *compileSettings) {
		s.weights = append(s.weights, w...)
		s.weightsGiven = true
	})
}

// OutputLossWeight weights the loss of the output called output, as an
// entry of Keras's dictionary of loss_weights does; the others weigh 1
// unless given.
func OutputLossWeight(output string, w float64) CompileOption {
	return compileOption(func(s *compileSettings) { s.outWeight = append(s.outWeight, namedWeight{output, w}) })
}

// OutputMetrics adds metrics by Keras name (see MetricByName) to the output
// called output only, as Keras's dictionary of metrics does. They are
// logged as "<output>_<metric>" when the model has several outputs.
func OutputMetrics(output string, names ...string) CompileOption {
	return compileOption(func(s *compileSettings) {
		s.outMetricName = append(s.outMetricName, namedMetricNames{output, slices.Clone(names)})
	})
}

// OutputWithMetrics adds metric values to the output called output only.
func OutputWithMetrics(output string, ms ...Metric) CompileOption {
	return compileOption(func(s *compileSettings) {
		s.outMetrics = append(s.outMetrics, namedMetrics{output, slices.Clone(ms)})
	})
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

// OutputNames returns the names of the model's outputs, in order: the name
// of the layer computing each (with _1, _2, … after a name already taken),
// as Keras names them in compile's dictionaries and in the logs.
func (m *Model) OutputNames() []string {
	var out []string
	used := map[string]bool{}
	for _, n := range m.outputs {
		base := n.layer.Name()
		name := base
		for k := 1; used[name]; k++ {
			name = fmt.Sprintf("%s_%d", base, k)
		}
		used[name] = true
		out = append(out, name)
	}
	return out
}

// InputNames returns the names of the model's inputs (their Input layers'),
// in order.
func (m *Model) InputNames() []string {
	out := make([]string, len(m.inputs))
	for i, n := range m.inputs {
		out[i] = n.layer.Name()
	}
	return out
}

// Compile prepares the model for training and evaluation with an optimizer,
// a loss and options (Metrics, WithMetrics, OnDevice, Seed, and for models
// of several outputs Losses, OutputLoss, LossWeights, OutputLossWeight,
// OutputMetrics and OutputWithMetrics), as Keras's compile does. A model
// of several outputs takes one loss for all of them, a list (Losses) or
// one per output name (OutputLoss); its total loss is the weighted sum of
// the outputs' (LossWeights). It starts the optimizer afresh: step 0, zero
// slots. The weights are kept. Compiling needs a device, from OnDevice or
// an earlier SetDevice.
func (m *Model) Compile(opt Optimizer, loss Loss, opts ...CompileOption) error {
	s := &compileSettings{}
	for _, o := range opts {
		if o == nil {
			return fmt.Errorf("nn: Compile %q: nil option", m.name)
		}
		o.applyCompile(s)
	}
	perOutput := s.lossesGiven || len(s.outLoss) > 0
	if opt == nil || (loss == nil && !perOutput) {
		return fmt.Errorf("nn: Compile %q: needs an optimizer and a loss", m.name)
	}
	if err := opt.base().err; err != nil {
		return err
	}
	heads, err := m.compileHeads(loss, s)
	if err != nil {
		return err
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
	m.comp = &compiled{opt: opt, loss: heads[0].loss, metrics: heads[0].metrics, target: heads[0].target, heads: heads}
	m.comp.accs = accumulatorList(m.comp)
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

// compileHeads resolves Compile's losses, loss weights and metrics into
// one head per output, checking each against its output.
func (m *Model) compileHeads(loss Loss, s *compileSettings) ([]*head, error) {
	names := m.OutputNames()
	outputIndex := func(what, name string) (int, error) {
		if i := slices.Index(names, name); i >= 0 {
			return i, nil
		}
		return 0, fmt.Errorf("nn: Compile %q: %s: the model has no output %q (its outputs: %s)", m.name, what, name, strings.Join(names, ", "))
	}
	heads := make([]*head, len(m.outputs))
	for i := range heads {
		heads[i] = &head{name: names[i], weight: 1}
	}

	// Losses.
	perOutput := s.lossesGiven || len(s.outLoss) > 0
	switch {
	case loss != nil && perOutput:
		return nil, fmt.Errorf("nn: Compile %q: give one loss to Compile or per-output losses (Losses, OutputLoss), not both", m.name)
	case s.lossesGiven && len(s.outLoss) > 0:
		return nil, fmt.Errorf("nn: Compile %q: give Losses or OutputLoss, not both", m.name)
	case loss != nil:
		for _, h := range heads {
			h.loss = loss
		}
	case s.lossesGiven:
		if len(s.losses) != len(heads) {
			return nil, fmt.Errorf("nn: Compile %q: Losses gives %d losses for the model's %d outputs (%s); give one per output", m.name, len(s.losses), len(heads), strings.Join(names, ", "))
		}
		for i, l := range s.losses {
			if l == nil {
				return nil, fmt.Errorf("nn: Compile %q: Losses: the loss of output %q is nil", m.name, names[i])
			}
			heads[i].loss = l
		}
	default:
		for _, nl := range s.outLoss {
			i, err := outputIndex("OutputLoss", nl.output)
			if err != nil {
				return nil, err
			}
			switch {
			case nl.loss == nil:
				return nil, fmt.Errorf("nn: Compile %q: OutputLoss: the loss of output %q is nil", m.name, nl.output)
			case heads[i].loss != nil:
				return nil, fmt.Errorf("nn: Compile %q: OutputLoss: output %q is given a loss twice", m.name, nl.output)
			}
			heads[i].loss = nl.loss
		}
		for _, h := range heads {
			if h.loss == nil {
				return nil, fmt.Errorf("nn: Compile %q: output %q has no loss; OutputLoss must give every output one", m.name, h.name)
			}
		}
	}
	for _, h := range heads {
		if err := h.loss.err(); err != nil {
			return nil, err
		}
	}

	// Loss weights.
	checkWeight := func(what, output string, w float64) error {
		if !(w >= 0) || math.IsInf(w, 0) {
			return fmt.Errorf("nn: Compile %q: %s: the loss weight %v of output %q must be finite and not negative", m.name, what, w, output)
		}
		return nil
	}
	if s.weightsGiven {
		if len(s.outWeight) > 0 {
			return nil, fmt.Errorf("nn: Compile %q: give LossWeights or OutputLossWeight, not both", m.name)
		}
		if len(s.weights) != len(heads) {
			return nil, fmt.Errorf("nn: Compile %q: LossWeights gives %d weights for the model's %d outputs (%s); give one per output", m.name, len(s.weights), len(heads), strings.Join(names, ", "))
		}
		for i, w := range s.weights {
			if err := checkWeight("LossWeights", names[i], w); err != nil {
				return nil, err
			}
			heads[i].weight = w
		}
	}
	for _, nw := range s.outWeight {
		i, err := outputIndex("OutputLossWeight", nw.output)
		if err != nil {
			return nil, err
		}
		if err := checkWeight("OutputLossWeight", nw.output, nw.weight); err != nil {
			return nil, err
		}
		heads[i].weight = nw.weight
	}

	// Metrics: the common ones for every output, then each output's own.
	common := slices.Clone(s.metrics)
	for _, n := range s.names {
		mt, err := MetricByName(n)
		if err != nil {
			return nil, err
		}
		common = append(common, mt)
	}
	for _, h := range heads {
		h.metrics = slices.Clone(common)
	}
	for _, nm := range s.outMetricName {
		i, err := outputIndex("OutputMetrics", nm.output)
		if err != nil {
			return nil, err
		}
		for _, n := range nm.names {
			mt, err := MetricByName(n)
			if err != nil {
				return nil, err
			}
			heads[i].metrics = append(heads[i].metrics, mt)
		}
	}
	for _, nm := range s.outMetrics {
		i, err := outputIndex("OutputWithMetrics", nm.output)
		if err != nil {
			return nil, err
		}
		heads[i].metrics = append(heads[i].metrics, nm.metrics...)
	}
	multi := len(heads) > 1
	seen := map[string]bool{"loss": true, "count": true}
	if multi {
		for _, h := range heads {
			seen[h.name+"_loss"] = true
		}
	}
	for _, h := range heads {
		own := map[string]bool{}
		for _, mt := range h.metrics {
			if mt == nil {
				return nil, fmt.Errorf("nn: Compile %q: nil metric", m.name)
			}
			if err := mt.err(); err != nil {
				return nil, err
			}
			key := mt.Name()
			if multi {
				key = h.name + "_" + key
			}
			if own[mt.Name()] || seen[key] {
				if multi {
					return nil, fmt.Errorf("nn: Compile %q: metric %q of output %q is given twice (logged as %q)", m.name, mt.Name(), h.name, key)
				}
				return nil, fmt.Errorf("nn: Compile %q: metric %q is given twice", m.name, mt.Name())
			}
			own[mt.Name()] = true
			seen[key] = true
		}
	}

	// Target shapes.
	for i, h := range heads {
		target, err := h.loss.targetShape(m.outputs[i].shape)
		if err != nil {
			if multi {
				return nil, nestf(err, "Compile %q: output %q", m.name, h.name)
			}
			return nil, nestf(err, "Compile %q", m.name)
		}
		h.target = target
	}
	return heads, nil
}

// accumulatorList returns the accumulators of c: the sample count, the
// total loss, for several outputs each output's weighted loss, then every
// metric of every output.
func accumulatorList(c *compiled) []accum {
	out := []accum{{key: "count", head: -1}, {key: "loss", head: -1}}
	if c.multi() {
		for i, h := range c.heads {
			out = append(out, accum{key: h.name + "_loss", head: i})
		}
	}
	for i, h := range c.heads {
		for _, mt := range h.metrics {
			key := mt.Name()
			if c.multi() {
				key = h.name + "_" + key
			}
			out = append(out, accum{key: key, head: i, metric: mt})
		}
	}
	return out
}

// accumulators returns the names of the metric accumulator variables of a
// prefix ("train" or "eval"), in the order of the compiled accumulator
// list: the sample count, the loss total, then the per-output losses and
// the metrics.
func (m *Model) accumulators(prefix string) []string {
	out := make([]string, len(m.comp.accs))
	for i, a := range m.comp.accs {
		out[i] = prefix + "/" + a.key
	}
	return out
}

// accumulatorShape returns the shape of accumulator i of accumulators: a
// scalar, or the counts of a confusionMetric.
func (m *Model) accumulatorShape(i int) tile.Shape {
	if cm, ok := m.comp.accs[i].metric.(*confusionMetric); ok {
		return cm.countShape()
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
	var names, keys []string
	logs := Logs{}
	for i, n := range all {
		a := m.comp.accs[i]
		cm, ok := a.metric.(*confusionMetric)
		if !ok {
			names = append(names, n)
			keys = append(keys, a.key)
			continue
		}
		v, err := m.st.f32(n)
		if err != nil {
			return nil, err
		}
		logs[namePrefix+a.key] = cm.result(v)
	}
	vals, err := m.st.readScalars(names)
	if err != nil {
		return nil, err
	}
	count := vals[0]
	for i, key := range keys[1:] {
		if count > 0 {
			logs[namePrefix+key] = vals[i+1] / count
		} else {
			logs[namePrefix+key] = 0
		}
	}
	return logs, nil
}

// inputName, targetName and predName name the graph inputs and outputs
// of model input, target and output k: x, y and pred for the first, as a
// model of one input and one output has them, then x1, y1, pred1, ….
func inputName(k int) string  { return indexedName("x", k) }
func targetName(k int) string { return indexedName("y", k) }
func predName(k int) string   { return indexedName("pred", k) }

func indexedName(base string, k int) string {
	if k == 0 {
		return base
	}
	return fmt.Sprintf("%s%d", base, k)
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
	xs := make([]*tile.Tensor, len(m.inputs))
	for k, in := range m.inputs {
		xs[k] = g.Input(inputName(k), tile.Float32, batchShape(b, in.shape))
	}
	var iter *tile.Tensor
	if c.training {
		iter = g.Variable(iterationsVar, tile.Int64, tile.Shape{})
		seed := g.Variable(seedVar, tile.Int64, tile.Shape{})
		// The dropout key: the seed in the low 32 bits, the step above.
		c.seed = g.Add(seed, g.Mul(iter, g.Scalar(1<<32, tile.Int64)))
	}
	outs, err := m.forward(c, xs)
	if err != nil {
		return nil, err
	}
	if key.kind == predictProg {
		for k, pred := range outs {
			g.SetOutput(predName(k), pred)
		}
		return g, g.Err()
	}
	heads := m.comp.heads
	multi := m.comp.multi()
	ys := make([]*tile.Tensor, len(heads))
	for k, h := range heads {
		ys[k] = g.Input(targetName(k), tile.Float32, batchShape(b, h.target))
	}
	var sw *tile.Tensor
	if key.kind == weightedTrainProg {
		sw = g.Input("w", tile.Float32, tile.Shape{b})
	}
	// Each output's loss, weighted by its loss weight, and their sum.
	var loss *tile.Tensor
	headLoss := make([]*tile.Tensor, len(heads))
	for k, h := range heads {
		pred := outs[k]
		var l *tile.Tensor
		if sw != nil {
			l = weightedLoss(g, h.loss, ys[k], pred, c.logits[pred], sw, b)
		} else {
			l = h.loss.value(g, ys[k], pred, c.logits[pred])
		}
		if err := g.Err(); err != nil {
			if multi {
				return nil, nestf(err, "loss %s of output %q", h.loss.Name(), h.name)
			}
			return nil, nestf(err, "loss %s", h.loss.Name())
		}
		if h.weight != 1 {
			l = g.Mul(l, g.ScalarLike(l, h.weight))
		}
		headLoss[k] = l
		if loss == nil {
			loss = l
		} else {
			loss = g.Add(loss, l)
		}
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
	// Metric accumulators: count, loss × count, each output's loss ×
	// count, and per-metric totals.
	n := g.Scalar(float64(b), tile.Float32)
	accs := m.accumulators(prefix)
	totals := make([]*tile.Tensor, len(accs))
	for i, a := range m.comp.accs {
		switch {
		case a.key == "count" && a.head < 0:
			totals[i] = n
		case a.key == "loss" && a.head < 0:
			totals[i] = g.Mul(loss, n)
		case a.metric == nil:
			totals[i] = g.Mul(headLoss[a.head], n)
		default:
			h := heads[a.head]
			y, pred := ys[a.head], outs[a.head]
			var v *tile.Tensor
			if cm, ok := a.metric.(*confusionMetric); ok {
				v = cm.counts(g, y, pred)
			} else {
				v = sumAll(g, a.metric.perSample(g, h.loss, y, pred))
			}
			if err := g.Err(); err != nil {
				if multi {
					return nil, nestf(err, "metric %s of output %q", a.metric.Name(), h.name)
				}
				return nil, nestf(err, "metric %s", a.metric.Name())
			}
			totals[i] = v
		}
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
