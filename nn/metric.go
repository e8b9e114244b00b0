package nn

import (
	"fmt"

	"github.com/tartanml/tartan/op"
	"github.com/tartanml/tartan/tile"
)

// Metric is a quantity reported during training and evaluation: the mean
// over the samples seen so far of a per-sample value. The training step adds
// each batch's per-sample values to an accumulator variable on the device,
// and the host divides by the number of samples when it reads it. Precision,
// Recall and AUC instead accumulate confusion counts (true and false
// positives and negatives, at each threshold) over the epoch and compute
// their value from the totals, as Keras does.
type Metric interface {
	// Name returns the name the metric is logged under, such as "accuracy".
	Name() string

	// perSample returns one f32 value per sample, shape (batch), from the
	// targets y and the predictions pred. It may depend on the loss, as
	// "accuracy" does.
	perSample(g *tile.Graph, l Loss, y, pred *tile.Tensor) *tile.Tensor
	err() error
}

// metric is every built-in metric.
type metric struct {
	name string // logged name
	kind string // what is computed
	k    int    // for top-k
	e    error
}

func (m *metric) Name() string { return m.name }
func (m *metric) err() error   { return m.e }

// Accuracy returns Keras's "accuracy": the fraction of samples predicted
// right, judged the way the loss reads its targets (class indices for the
// sparse cross-entropy, one-hot vectors for the categorical one, 0/1 values
// thresholded at 0.5 for the binary one).
func Accuracy() Metric { return &metric{name: "accuracy", kind: "accuracy"} }

// SparseCategoricalAccuracy returns the fraction of samples whose integer
// label is the arg-max of the prediction.
func SparseCategoricalAccuracy() Metric {
	return &metric{name: "sparse_categorical_accuracy", kind: "sparse"}
}

// CategoricalAccuracy returns the fraction of samples whose one-hot target
// and prediction have the same arg-max.
func CategoricalAccuracy() Metric {
	return &metric{name: "categorical_accuracy", kind: "categorical"}
}

// BinaryAccuracy returns the fraction of predictions on the same side of 0.5
// as their targets.
func BinaryAccuracy() Metric { return &metric{name: "binary_accuracy", kind: "binary"} }

// SparseTopKCategoricalAccuracy returns the fraction of samples whose
// integer label scores among the k highest predictions (fewer than k classes
// score strictly higher), logged as "sparse_top_k_categorical_accuracy".
func SparseTopKCategoricalAccuracy(k int) Metric {
	m := &metric{name: "sparse_top_k_categorical_accuracy", kind: "sparse_top_k", k: k}
	if k < 1 {
		m.e = fmt.Errorf("nn: sparse_top_k_categorical_accuracy: k %d must be positive", k)
	}
	return m
}

// TopKCategoricalAccuracy is SparseTopKCategoricalAccuracy for one-hot
// targets, logged as "top_k_categorical_accuracy".
func TopKCategoricalAccuracy(k int) Metric {
	m := &metric{name: "top_k_categorical_accuracy", kind: "top_k", k: k}
	if k < 1 {
		m.e = fmt.Errorf("nn: top_k_categorical_accuracy: k %d must be positive", k)
	}
	return m
}

// MeanSquaredErrorMetric returns the mean squared error as a metric, logged
// as "mean_squared_error".
func MeanSquaredErrorMetric() Metric { return &metric{name: "mean_squared_error", kind: "mse"} }

// MeanAbsoluteErrorMetric returns the mean absolute error as a metric,
// logged as "mean_absolute_error".
func MeanAbsoluteErrorMetric() Metric { return &metric{name: "mean_absolute_error", kind: "mae"} }

// MetricByName returns the metric Keras calls name: "accuracy" (or "acc"),
// "sparse_categorical_accuracy", "categorical_accuracy", "binary_accuracy",
// "sparse_top_k_categorical_accuracy" and "top_k_categorical_accuracy"
// (k = 5), "mse" or "mean_squared_error", "mae" or "mean_absolute_error",
// "precision", "recall" and "auc" (with their defaults).
func MetricByName(name string) (Metric, error) {
	switch name {
	case "accuracy", "acc":
		return Accuracy(), nil
	case "sparse_categorical_accuracy":
		return SparseCategoricalAccuracy(), nil
	case "categorical_accuracy":
		return CategoricalAccuracy(), nil
	case "binary_accuracy":
		return BinaryAccuracy(), nil
	case "sparse_top_k_categorical_accuracy":
		return SparseTopKCategoricalAccuracy(5), nil
	case "top_k_categorical_accuracy":
		return TopKCategoricalAccuracy(5), nil
	case "mse", "mean_squared_error":
		return MeanSquaredErrorMetric(), nil
	case "mae", "mean_absolute_error":
		return MeanAbsoluteErrorMetric(), nil
	case "precision":
		return Precision(), nil
	case "recall":
		return Recall(), nil
	case "auc":
		return AUC(), nil
	}
	return nil, fmt.Errorf("nn: unknown metric %q (want accuracy, sparse_categorical_accuracy, categorical_accuracy, binary_accuracy, sparse_top_k_categorical_accuracy, top_k_categorical_accuracy, mse, mae, precision, recall or auc)", name)
}

func (m *metric) perSample(g *tile.Graph, l Loss, y, pred *tile.Tensor) *tile.Tensor {
	kind := m.kind
	if kind == "accuracy" {
		switch l.Name() {
		case "sparse_categorical_crossentropy":
			kind = "sparse"
		case "binary_crossentropy":
			kind = "binary"
		default:
			kind = "categorical"
			if pred.Dim(-1) == 1 {
				kind = "binary"
			}
		}
	}
	f32 := func(t *tile.Tensor) *tile.Tensor { return g.Cast(t, tile.Float32) }
	var v *tile.Tensor
	switch kind {
	case "sparse":
		labels := g.Cast(g.Reshape(y, pred.Shape()[:pred.Rank()-1]), tile.Int64)
		v = f32(g.Elementwise(tile.Eq, op.ArgMax(g, pred, -1), labels))
	case "categorical":
		if !y.Shape().Equal(pred.Shape()) {
			return g.Errorf(m.name, "categorical accuracy needs one-hot targets shaped like the predictions %v, got %v", pred.Shape(), y.Shape())
		}
		v = f32(g.Elementwise(tile.Eq, op.ArgMax(g, pred, -1), op.ArgMax(g, y, -1)))
	case "binary":
		half := g.Scalar(0.5, tile.Float32)
		if !y.Shape().Equal(pred.Shape()) {
			return g.Errorf(m.name, "binary accuracy needs targets shaped like the predictions %v, got %v", pred.Shape(), y.Shape())
		}
		v = f32(g.Elementwise(tile.Eq, g.Elementwise(tile.Gt, pred, half), g.Elementwise(tile.Gt, y, half)))
	case "sparse_top_k", "top_k":
		var onehot *tile.Tensor
		if kind == "sparse_top_k" {
			labels := g.Cast(g.Reshape(y, pred.Shape()[:pred.Rank()-1]), tile.Int64)
			onehot = g.OneHot(labels, pred.Dim(-1), tile.Float32)
		} else {
			onehot = g.OneHot(op.ArgMax(g, y, -1), pred.Dim(-1), tile.Float32)
		}
		target := op.Sum(g, g.Mul(onehot, pred), []int{-1}, true)
		above := op.Sum(g, f32(g.Elementwise(tile.Gt, pred, target)), []int{-1}, false)
		v = f32(g.Elementwise(tile.Lt, above, g.Scalar(float64(m.k), tile.Float32)))
	case "mse":
		d := g.Sub(pred, g.Reshape(y, pred.Shape()))
		v = g.Mul(d, d)
	case "mae":
		v = g.Elementwise(tile.Abs, g.Sub(pred, g.Reshape(y, pred.Shape())))
	default:
		return g.Errorf(m.name, "unknown metric kind %q", kind)
	}
	if v.Rank() > 1 {
		axes := make([]int, v.Rank()-1)
		for i := range axes {
			axes[i] = i + 1
		}
		v = op.Mean(g, v, axes, false)
	}
	return v
}
