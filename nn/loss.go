package nn

import (
	"fmt"
	"math"
	"slices"

	"github.com/tartanml/tartan/op"
	"github.com/tartanml/tartan/tile"
)

// Loss is what training minimises: a scalar computed from the targets and
// the model's predictions, the mean over the batch of a per-sample value, as
// Keras computes it. The built-in losses follow Keras's:
// SparseCategoricalCrossentropy, CategoricalCrossentropy,
// BinaryCrossentropy, MeanSquaredError, MeanAbsoluteError, Huber,
// KLDivergence, LogCosh, Poisson, CosineSimilarity and Hinge.
//
// When a cross-entropy is asked to start from probabilities and the model's
// output is a softmax (for the categorical losses) or a sigmoid (for the
// binary one), the loss is computed from the activation's input instead,
// stably, as Keras does under the hood.
type Loss interface {
	// Name returns Keras's identifier, such as
	// "sparse_categorical_crossentropy".
	Name() string

	// targetShape returns the per-sample target shape the loss expects for
	// a model output of per-sample shape out.
	targetShape(out tile.Shape) (tile.Shape, error)
	// classes returns the number of classes integer targets index, or 0
	// when targets are not class indices.
	classes(out tile.Shape) int
	// value returns the batch's loss: y is the targets (f32, the batch of
	// targetShape), pred the model's output and lg, when not nil, the
	// logits pred was computed from.
	value(g *tile.Graph, y, pred *tile.Tensor, lg *logits) *tile.Tensor
	err() error
}

// logits is the input of a final softmax or sigmoid.
type logits struct {
	x       *tile.Tensor
	softmax bool // true for a softmax, false for a sigmoid
}

// LossOption configures a loss. Each loss accepts only the options its
// Keras counterpart has; another one makes Compile fail.
type LossOption interface{ applyLoss(*lossSettings) }

type lossSettings struct {
	given      []string
	fromLogits bool
	smoothing  float64
	delta      float64
}

type lossOption struct {
	name string
	set  func(*lossSettings)
}

func (o lossOption) applyLoss(s *lossSettings) {
	s.given = append(s.given, o.name)
	o.set(s)
}

// LogitsOption is FromLogits: an option of the cross-entropies and of AUC.
type LogitsOption interface {
	LossOption
	MetricOption
}

type fromLogitsOption struct{}

func (fromLogitsOption) applyLoss(s *lossSettings) {
	s.given = append(s.given, "FromLogits")
	s.fromLogits = true
}

func (fromLogitsOption) applyMetric(s *metricSettings) {
	s.given = append(s.given, "FromLogits")
	s.fromLogits = true
}

// FromLogits tells a cross-entropy (or AUC) that the model outputs logits
// rather than probabilities.
func FromLogits() LogitsOption { return fromLogitsOption{} }

// LabelSmoothing (Keras's label_smoothing, 0 by default, at most 1) blends
// the targets of CategoricalCrossentropy with the uniform distribution,
// y·(1 − s) + s/classes, and those of BinaryCrossentropy with 0.5,
// y·(1 − s) + s/2. SparseCategoricalCrossentropy has no such option, as in
// Keras 3.
func LabelSmoothing(s float64) LossOption {
	return lossOption{"LabelSmoothing", func(st *lossSettings) { st.smoothing = s }}
}

// Delta sets Huber's delta, where the loss turns from quadratic to linear
// (1 by default; it must be positive).
func Delta(d float64) LossOption {
	return lossOption{"Delta", func(st *lossSettings) { st.delta = d }}
}

// loss is every built-in loss.
type loss struct {
	name       string
	fromLogits bool
	smoothing  float64
	delta      float64
	e          error
}

func (l *loss) Name() string { return l.name }
func (l *loss) err() error   { return l.e }

// newLoss applies opts to the loss Keras calls name, which accepts the
// options named in allowed.
func newLoss(name string, opts []LossOption, allowed ...string) *loss {
	s := &lossSettings{delta: 1}
	l := &loss{name: name}
	for _, o := range opts {
		if o == nil {
			l.e = fmt.Errorf("nn: %s: nil option", name)
			return l
		}
		o.applyLoss(s)
	}
	for _, g := range s.given {
		if !slices.Contains(allowed, g) {
			l.e = fmt.Errorf("nn: %s: option %s does not apply", name, g)
			return l
		}
	}
	switch {
	case !(s.smoothing >= 0 && s.smoothing <= 1):
		l.e = fmt.Errorf("nn: %s: label smoothing %v must lie in [0, 1]", name, s.smoothing)
	case !(s.delta > 0) || math.IsInf(s.delta, 0):
		l.e = fmt.Errorf("nn: %s: delta %v must be positive and finite", name, s.delta)
	}
	l.fromLogits, l.smoothing, l.delta = s.fromLogits, s.smoothing, s.delta
	return l
}

// SparseCategoricalCrossentropy returns the cross-entropy of integer class
// labels (one per sample, given as whole numbers) against predicted class
// probabilities, or logits with FromLogits.
func SparseCategoricalCrossentropy(opts ...LossOption) Loss {
	return newLoss("sparse_categorical_crossentropy", opts, "FromLogits")
}

// CategoricalCrossentropy returns the cross-entropy of one-hot (or soft)
// targets against predicted class probabilities, or logits with FromLogits.
// It accepts LabelSmoothing.
func CategoricalCrossentropy(opts ...LossOption) Loss {
	return newLoss("categorical_crossentropy", opts, "FromLogits", "LabelSmoothing")
}

// BinaryCrossentropy returns the binary cross-entropy of targets in [0, 1]
// against predicted probabilities, or logits with FromLogits. It accepts
// LabelSmoothing.
func BinaryCrossentropy(opts ...LossOption) Loss {
	return newLoss("binary_crossentropy", opts, "FromLogits", "LabelSmoothing")
}

// MeanSquaredError returns the mean of (pred − target)².
func MeanSquaredError() Loss { return newLoss("mean_squared_error", nil) }

// MeanAbsoluteError returns the mean of |pred − target|.
func MeanAbsoluteError() Loss { return newLoss("mean_absolute_error", nil) }

// LossByName returns the built-in loss Keras calls name, with its aliases:
// "sparse_categorical_crossentropy", "categorical_crossentropy",
// "binary_crossentropy", "mean_squared_error" ("mse"),
// "mean_absolute_error" ("mae"), "huber" ("huber_loss"), "kl_divergence"
// ("kld", "kullback_leibler_divergence"), "log_cosh" ("logcosh"),
// "poisson", "cosine_similarity" and "hinge".
func LossByName(name string) (Loss, error) {
	switch name {
	case "sparse_categorical_crossentropy":
		return SparseCategoricalCrossentropy(), nil
	case "categorical_crossentropy":
		return CategoricalCrossentropy(), nil
	case "binary_crossentropy":
		return BinaryCrossentropy(), nil
	case "mean_squared_error", "mse":
		return MeanSquaredError(), nil
	case "mean_absolute_error", "mae":
		return MeanAbsoluteError(), nil
	case "huber", "huber_loss":
		return Huber(), nil
	case "kl_divergence", "kld", "kullback_leibler_divergence":
		return KLDivergence(), nil
	case "log_cosh", "logcosh":
		return LogCosh(), nil
	case "poisson":
		return Poisson(), nil
	case "cosine_similarity":
		return CosineSimilarity(), nil
	case "hinge":
		return Hinge(), nil
	}
	return nil, fmt.Errorf("nn: unknown loss %q (want sparse_categorical_crossentropy, categorical_crossentropy, binary_crossentropy, mean_squared_error, mean_absolute_error, huber, kl_divergence, log_cosh, poisson, cosine_similarity or hinge)", name)
}

func (l *loss) sparse() bool { return l.name == "sparse_categorical_crossentropy" }

func (l *loss) targetShape(out tile.Shape) (tile.Shape, error) {
	if len(out) == 0 {
		return nil, fmt.Errorf("%s needs model outputs with a feature axis, got %s", l.name, fmtShape(out))
	}
	if l.sparse() {
		return out[:len(out)-1].Clone(), nil
	}
	return out.Clone(), nil
}

func (l *loss) classes(out tile.Shape) int {
	if l.sparse() && len(out) > 0 {
		return out[len(out)-1]
	}
	return 0
}

func (l *loss) value(g *tile.Graph, y, pred *tile.Tensor, lg *logits) *tile.Tensor {
	fromLogits := l.fromLogits
	switch l.name {
	case "sparse_categorical_crossentropy", "categorical_crossentropy":
		if !fromLogits && lg != nil && lg.softmax {
			pred, fromLogits = lg.x, true
		}
		if l.sparse() {
			return op.SparseCategoricalCrossentropy(g, g.Cast(y, tile.Int32), pred, fromLogits)
		}
		return op.CategoricalCrossentropy(g, l.smooth(g, y, float64(pred.Dim(-1))), pred, fromLogits)
	case "binary_crossentropy":
		if !fromLogits && lg != nil && !lg.softmax {
			pred, fromLogits = lg.x, true
		}
		return op.BinaryCrossentropy(g, l.smooth(g, y, 2), pred, fromLogits)
	case "mean_squared_error":
		return op.MeanSquaredError(g, y, pred)
	case "mean_absolute_error":
		return op.MeanAbsoluteError(g, y, pred)
	}
	return op.Mean(g, l.perSample(g, y, pred, lg), nil, false)
}

// checkTargetShape checks that data targets of per-sample shape got suit a
// loss that wants want: equal, or for class labels want plus a trailing 1.
func checkTargetShape(l Loss, want tile.Shape, got []int) error {
	if want.Equal(got) {
		return nil
	}
	if l.Name() == "sparse_categorical_crossentropy" {
		if len(got) == len(want)+1 && got[len(got)-1] == 1 && slices.Equal(got[:len(want)], want) {
			return nil
		}
	}
	return fmt.Errorf("targets of shape %s do not suit loss %s, which wants %s for this model", fmtDims(got), l.Name(), fmtDims(want))
}
