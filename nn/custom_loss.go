package nn

import (
	"fmt"

	"github.com/tartanml/tartan/op"
	"github.com/tartanml/tartan/tile"
)

// LossFunc computes a custom loss or metric on g from the batch of targets
// yTrue and the batch of the model's predictions yPred, both float32 with
// the batch first: yPred has the model's output shape, yTrue the target
// shape (the output's unless the loss says otherwise, see LabelTargets). It
// returns per-sample values, float32 of shape (batch) or (batch, ...): a
// loss is their mean over every element, as Keras's default reduction
// takes it; a metric averages each sample's values into one and reports
// the mean over the samples seen in the epoch.
type LossFunc func(g *tile.Graph, yTrue, yPred *tile.Tensor) *tile.Tensor

// CustomLossOption configures CustomLoss.
type CustomLossOption interface{ applyCustomLoss(*customLoss) }

type customLossOption func(*customLoss)

func (f customLossOption) applyCustomLoss(l *customLoss) { f(l) }

// LabelTargets makes a custom loss take class labels, as the sparse
// categorical cross-entropy does: yTrue has the output's shape without its
// last axis, whose size is the number of classes, and holds whole numbers
// (as float32) from 0 to classes − 1, which Fit and Evaluate check before
// running. The metric name "accuracy" does not know such a loss's
// targets; use SparseCategoricalAccuracy with it.
func LabelTargets() CustomLossOption {
	return customLossOption(func(l *customLoss) { l.labels = true })
}

// customLoss is a Loss computed by a LossFunc.
type customLoss struct {
	name   string
	fn     LossFunc
	labels bool
	e      error
}

// CustomLoss returns a loss called name computed by fn, which returns
// per-sample values (see LossFunc); the loss is their mean. Training
// minimises it through its gradient, which grad derives from fn's graph.
// It accepts the option LabelTargets. The name must be usable (letters,
// digits, _ . -, not starting with a digit); it is the loss's Name.
func CustomLoss(name string, fn LossFunc, opts ...CustomLossOption) Loss {
	l := &customLoss{name: name, fn: fn}
	for _, o := range opts {
		if o == nil {
			l.e = fmt.Errorf("nn: CustomLoss %q: nil option", name)
			return l
		}
		o.applyCustomLoss(l)
	}
	switch {
	case !validLayerName(name):
		l.e = fmt.Errorf("nn: CustomLoss: name %q is not usable (letters, digits, _ . -, not starting with a digit)", name)
	case fn == nil:
		l.e = fmt.Errorf("nn: CustomLoss %q: nil function", name)
	}
	return l
}

func (l *customLoss) Name() string { return l.name }
func (l *customLoss) err() error   { return l.e }

func (l *customLoss) targetShape(out tile.Shape) (tile.Shape, error) {
	if !l.labels {
		return out.Clone(), nil
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("loss %s takes class labels and needs model outputs with a class axis, got %s", l.name, fmtShape(out))
	}
	return out[:len(out)-1].Clone(), nil
}

func (l *customLoss) classes(out tile.Shape) int {
	if l.labels && len(out) > 0 {
		return out[len(out)-1]
	}
	return 0
}

func (l *customLoss) value(g *tile.Graph, y, pred *tile.Tensor, _ *logits) *tile.Tensor {
	v := perSampleResult(g, l.name, l.fn(g, y, pred), pred.Dim(0))
	if !v.Valid() {
		return v
	}
	return g.Div(sumAll(g, v), g.Scalar(float64(v.Size()), tile.Float32))
}

// perSampleResult checks that a LossFunc called name returned float32
// per-sample values for a batch of n on g.
func perSampleResult(g *tile.Graph, name string, v *tile.Tensor, n int) *tile.Tensor {
	if g.Err() != nil {
		return v // the graph reports its first error
	}
	switch {
	case v == nil:
		return g.Errorf(name, "the function returned nil")
	case v.Graph() != g:
		return g.Errorf(name, "the function returned a tensor of another graph than its arguments'")
	case !v.Valid():
		return g.Errorf(name, "the function returned an invalid tensor")
	case v.DType() != tile.Float32:
		return g.Errorf(name, "the function returned %s values, want f32", v.DType())
	case v.Rank() < 1 || v.Dim(0) != n:
		return g.Errorf(name, "the function returned shape %s for a batch of %d; it must return per-sample values, shape (%d) or (%d, ...)", fmtDims(v.Shape()), n, n, n)
	}
	return v
}

// customMetric is a Metric computed by a LossFunc.
type customMetric struct {
	name string
	fn   LossFunc
	e    error
}

// CustomMetric returns a metric logged as name and computed by fn, which
// returns per-sample values (see LossFunc); the metric is their mean over
// the samples of the epoch, accumulated on the device like the built-in
// metrics'. The name must be usable (letters, digits, _ . -, not starting
// with a digit) and not "loss" or "count".
func CustomMetric(name string, fn LossFunc) Metric {
	m := &customMetric{name: name, fn: fn}
	switch {
	case !validLayerName(name):
		m.e = fmt.Errorf("nn: CustomMetric: name %q is not usable (letters, digits, _ . -, not starting with a digit)", name)
	case name == "loss" || name == "count":
		m.e = fmt.Errorf("nn: CustomMetric: the name %q is taken by the loss's own records", name)
	case fn == nil:
		m.e = fmt.Errorf("nn: CustomMetric %q: nil function", name)
	}
	return m
}

func (m *customMetric) Name() string { return m.name }
func (m *customMetric) err() error   { return m.e }

func (m *customMetric) perSample(g *tile.Graph, _ Loss, y, pred *tile.Tensor) *tile.Tensor {
	v := perSampleResult(g, m.name, m.fn(g, y, pred), pred.Dim(0))
	if !v.Valid() || v.Rank() == 1 {
		return v
	}
	axes := make([]int, v.Rank()-1)
	for i := range axes {
		axes[i] = i + 1
	}
	return op.Mean(g, v, axes, false)
}
