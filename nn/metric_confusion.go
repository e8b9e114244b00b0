package nn

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/tartanml/tartan/op"
	"github.com/tartanml/tartan/tile"
)

// MetricOption configures Precision, Recall or AUC. Each accepts only the
// options its Keras counterpart has; another one makes Compile fail.
type MetricOption interface{ applyMetric(*metricSettings) }

type metricSettings struct {
	given         []string
	fromLogits    bool
	threshold     float64
	numThresholds int
	curve         string
	summation     string
	classID       int
	name          string
}

type metricOption struct {
	name string
	set  func(*metricSettings)
}

func (o metricOption) applyMetric(s *metricSettings) {
	s.given = append(s.given, o.name)
	o.set(s)
}

// Threshold sets the value a prediction must exceed to count as positive
// for Precision and Recall (Keras's thresholds; 0.5 by default, within
// [0, 1]).
func Threshold(t float64) MetricOption {
	return metricOption{"Threshold", func(s *metricSettings) { s.threshold = t }}
}

// ClassID makes Precision or Recall look only at class id of the last
// axis of targets and predictions, as Keras's class_id.
func ClassID(id int) MetricOption {
	return metricOption{"ClassID", func(s *metricSettings) { s.classID = id }}
}

// NumThresholds sets how many thresholds AUC counts its confusion matrices
// at (Keras's num_thresholds; 200 by default, at least 2).
func NumThresholds(n int) MetricOption {
	return metricOption{"NumThresholds", func(s *metricSettings) { s.numThresholds = n }}
}

// Curve sets the curve AUC measures the area under: "ROC" (the default) or
// "PR" (precision against recall); case does not matter, and "PRC" is "PR".
func Curve(c string) MetricOption {
	return metricOption{"Curve", func(s *metricSettings) { s.curve = c }}
}

// SummationMethod sets how AUC sums the area (Keras's summation_method):
// "interpolation" (the default: trapezoids for ROC, Davis and Goadrich's
// interpolation for PR), "minoring" or "majoring" (rectangles under or over
// the curve).
func SummationMethod(m string) MetricOption {
	return metricOption{"SummationMethod", func(s *metricSettings) { s.summation = m }}
}

// MetricName sets the name Precision, Recall or AUC is logged under, so
// that a model can report several of one kind.
func MetricName(name string) MetricOption {
	return metricOption{"MetricName", func(s *metricSettings) { s.name = name }}
}

// confusionMetric is a metric computed from confusion counts accumulated
// over the epoch, at one or more thresholds: Precision, Recall and AUC.
type confusionMetric struct {
	name       string
	kind       string    // "precision", "recall" or "auc"
	thresholds []float64 // ascending
	classID    int       // −1 for every class
	fromLogits bool
	curve      string // "ROC" or "PR"
	summation  string
	e          error
}

func (c *confusionMetric) Name() string { return c.name }
func (c *confusionMetric) err() error   { return c.e }

// perSample is never used: Compile accumulates a confusionMetric's counts.
func (c *confusionMetric) perSample(g *tile.Graph, _ Loss, _, _ *tile.Tensor) *tile.Tensor {
	return g.Errorf(c.name, "%s is computed from counts, not per sample", c.name)
}

func newConfusionMetric(kind string, opts []MetricOption, allowed ...string) *confusionMetric {
	s := &metricSettings{threshold: 0.5, numThresholds: 200, curve: "ROC", summation: "interpolation", classID: -1, name: kind}
	c := &confusionMetric{kind: kind, name: kind}
	for _, o := range opts {
		if o == nil {
			c.e = fmt.Errorf("nn: %s: nil option", kind)
			return c
		}
		o.applyMetric(s)
	}
	for _, g := range s.given {
		if !slices.Contains(allowed, g) {
			c.e = fmt.Errorf("nn: %s: option %s does not apply", kind, g)
			return c
		}
	}
	c.name, c.classID, c.fromLogits = s.name, s.classID, s.fromLogits
	switch strings.ToLower(s.curve) {
	case "roc":
		c.curve = "ROC"
	case "pr", "prc":
		c.curve = "PR"
	default:
		c.e = fmt.Errorf("nn: %s: curve %q is not ROC or PR", kind, s.curve)
	}
	c.summation = strings.ToLower(s.summation)
	switch {
	case c.e != nil:
	case s.name == "":
		c.e = fmt.Errorf("nn: %s: empty metric name", kind)
	case !(s.threshold >= 0 && s.threshold <= 1):
		c.e = fmt.Errorf("nn: %s: threshold %v must lie in [0, 1]", kind, s.threshold)
	case s.numThresholds < 2:
		c.e = fmt.Errorf("nn: %s: number of thresholds %d must be at least 2", kind, s.numThresholds)
	case s.numThresholds > 1<<16:
		c.e = fmt.Errorf("nn: %s: number of thresholds %d is more than %d", kind, s.numThresholds, 1<<16)
	case !slices.Contains([]string{"interpolation", "minoring", "majoring"}, c.summation):
		c.e = fmt.Errorf("nn: %s: summation method %q is not interpolation, minoring or majoring", kind, s.summation)
	case s.classID < -1:
		c.e = fmt.Errorf("nn: %s: class id %d must not be negative", kind, s.classID)
	}
	if kind == "auc" {
		// Keras's thresholds: just below 0, the n − 2 inner points
		// i/(n − 1), just above 1, so that predictions of exactly 0 or 1
		// fall inside.
		n := s.numThresholds
		c.thresholds = make([]float64, n)
		c.thresholds[0] = -lossEpsilon
		for i := 1; i < n-1; i++ {
			c.thresholds[i] = float64(i) / float64(n-1)
		}
		c.thresholds[n-1] = 1 + lossEpsilon
	} else {
		c.thresholds = []float64{s.threshold}
	}
	return c
}

// Precision returns Keras's Precision, logged as "precision": true
// positives over predicted positives, tp/(tp + fp), counted over every
// element of the targets and predictions of the whole epoch (0 when nothing
// is predicted positive). A prediction above the threshold (Threshold, 0.5
// by default) is positive, and so is a nonzero target. It accepts Threshold,
// ClassID and MetricName.
func Precision(opts ...MetricOption) Metric {
	return newConfusionMetric("precision", opts, "Threshold", "ClassID", "MetricName")
}

// Recall returns Keras's Recall, logged as "recall": true positives over
// actual positives, tp/(tp + fn), counted as Precision counts. It accepts
// Threshold, ClassID and MetricName.
func Recall(opts ...MetricOption) Metric {
	return newConfusionMetric("recall", opts, "Threshold", "ClassID", "MetricName")
}

// AUC returns Keras's AUC, logged as "auc": the area under the ROC curve
// (or the precision–recall curve with Curve("PR")), approximated, as Keras
// does, by a Riemann sum over confusion counts accumulated over the epoch
// at NumThresholds thresholds (200 by default) spread evenly over [0, 1].
// Every element of the targets and predictions counts (Keras's
// multi_label=False); a nonzero target is positive. It accepts
// NumThresholds, Curve, SummationMethod, FromLogits (predictions go through
// a sigmoid first) and MetricName.
func AUC(opts ...MetricOption) Metric {
	return newConfusionMetric("auc", opts, "NumThresholds", "Curve", "SummationMethod", "FromLogits", "MetricName")
}

// countShape is the shape of the metric's accumulator: the counts of true
// positives, false positives, true negatives and false negatives at each
// threshold.
func (c *confusionMetric) countShape() tile.Shape { return tile.Shape{4, len(c.thresholds)} }

// counts returns the batch's confusion counts, of countShape.
func (c *confusionMetric) counts(g *tile.Graph, y, pred *tile.Tensor) *tile.Tensor {
	if !y.Shape().Equal(pred.Shape()) {
		return g.Errorf(c.name, "%s needs targets shaped like the predictions %v, got %v", c.kind, pred.Shape(), y.Shape())
	}
	if c.classID >= 0 {
		k := pred.Dim(-1)
		if pred.Rank() < 2 || c.classID >= k {
			return g.Errorf(c.name, "class id %d is out of range for predictions of shape %v", c.classID, pred.Shape())
		}
		r := pred.Rank()
		start, stop, step := make([]int, r), slices.Clone([]int(pred.Shape())), make([]int, r)
		for i := range step {
			step[i] = 1
		}
		start[r-1], stop[r-1] = c.classID, c.classID+1
		y, pred = g.Slice(y, start, stop, step), g.Slice(pred, start, stop, step)
	}
	if c.fromLogits {
		pred = op.Sigmoid(g, pred)
	}
	f32 := func(t *tile.Tensor) *tile.Tensor { return g.Cast(t, tile.Float32) }
	m := pred.Size()
	p := g.Reshape(pred, tile.Shape{1, m})
	pos := f32(g.Elementwise(tile.Ne, g.Reshape(y, tile.Shape{1, m}), g.Scalar(0, tile.Float32)))
	one := g.Scalar(1, tile.Float32)
	neg := g.Sub(one, pos)
	t := len(c.thresholds)
	thr := make([]float64, t)
	for i, v := range c.thresholds {
		thr[i] = float64(float32(v))
	}
	tv, err := tile.ValueOf(tile.Float32, tile.Shape{t, 1}, thr)
	if err != nil {
		return g.Errorf(c.name, "thresholds: %v", err)
	}
	above := f32(g.Elementwise(tile.Gt, p, g.Constant(tv)))
	below := g.Sub(one, above)
	count := func(a, b *tile.Tensor) *tile.Tensor {
		return g.Reshape(op.Sum(g, g.Mul(a, b), []int{1}, false), tile.Shape{1, t})
	}
	return g.Concat(0, count(above, pos), count(above, neg), count(below, neg), count(below, pos))
}

// result computes the metric from accumulated counts of countShape.
func (c *confusionMetric) result(v []float32) float64 {
	t := len(c.thresholds)
	get := func(k int) []float64 {
		out := make([]float64, t)
		for i := range out {
			out[i] = float64(v[k*t+i])
		}
		return out
	}
	tp, fp, tn, fn := get(0), get(1), get(2), get(3)
	switch c.kind {
	case "precision":
		return divNoNaN(tp[0], tp[0]+fp[0])
	case "recall":
		return divNoNaN(tp[0], tp[0]+fn[0])
	}
	if c.curve == "PR" && c.summation == "interpolation" {
		return interpolatePRAUC(tp, fp, fn)
	}
	x, y := make([]float64, t), make([]float64, t)
	for i := range x {
		rec := divNoNaN(tp[i], tp[i]+fn[i])
		if c.curve == "ROC" {
			x[i], y[i] = divNoNaN(fp[i], fp[i]+tn[i]), rec
		} else {
			x[i], y[i] = rec, divNoNaN(tp[i], tp[i]+fp[i])
		}
	}
	area := 0.0
	for i := 0; i < t-1; i++ {
		var h float64
		switch c.summation {
		case "interpolation":
			h = (y[i] + y[i+1]) / 2
		case "minoring":
			h = math.Min(y[i], y[i+1])
		default:
			h = math.Max(y[i], y[i+1])
		}
		area += (x[i] - x[i+1]) * h
	}
	return area
}

// interpolatePRAUC is the area under the precision–recall curve with
// precision interpolated between thresholds as Davis and Goadrich describe
// (precision is linear in the number of true positives between two
// thresholds), as Keras computes it.
func interpolatePRAUC(tp, fp, fn []float64) float64 {
	area := 0.0
	for i := 0; i+1 < len(tp); i++ {
		dtp := tp[i] - tp[i+1]
		p0, p1 := tp[i]+fp[i], tp[i+1]+fp[i+1]
		slope := divNoNaN(dtp, math.Max(p0-p1, 0))
		intercept := tp[i+1] - slope*p1
		ratio := 1.0
		if p0 > 0 && p1 > 0 {
			ratio = divNoNaN(p0, math.Max(p1, 0))
		}
		area += divNoNaN(slope*(dtp+intercept*math.Log(ratio)), math.Max(tp[i+1]+fn[i+1], 0))
	}
	return area
}

// divNoNaN is a/b, or 0 where b is 0.
func divNoNaN(a, b float64) float64 {
	if b == 0 {
		return 0
	}
	return a / b
}
