package op

import (
	"github.com/tartanml/tartan/tile"
)

// The losses follow Keras: each computes one value per sample (per element of
// the prediction without its last axis), then returns their mean, a scalar of
// the prediction's dtype. Probabilities are clipped to [ε, 1 − ε] with
// ε = 1e-7, Keras's backend epsilon, so that no logarithm meets zero.

// lossEpsilon is Keras's backend epsilon.
const lossEpsilon = 1e-7

// SparseCategoricalCrossentropy returns the mean over samples of −log p[label]
// for integer labels and predictions of shape (…, classes): either logits
// (fromLogits, through the stable LogSoftmax) or probabilities, which are
// renormalised along the last axis and clipped as Keras does. labels has the
// prediction's shape without its last axis, or with a last axis of 1, and an
// i32 or i64 dtype. A label outside [0, classes) contributes 0.
func SparseCategoricalCrossentropy(g *tile.Graph, labels, pred *tile.Tensor, fromLogits bool) *tile.Tensor {
	const op = "sparse_categorical_crossentropy"
	if !check(g, op, in("labels", labels), in("pred", pred)) || !checkFloat(g, op, in("pred", pred)) {
		return invalid(g, op)
	}
	if !labels.DType().IsInt() {
		return g.Errorf(op, "labels must be i32 or i64 class indices, got labels %s (pred %s)", desc(labels), desc(pred))
	}
	if pred.Rank() < 1 || pred.Dim(-1) == 0 {
		return g.Errorf(op, "pred must have a non-empty class axis, got %s", desc(pred))
	}
	want := pred.Shape()[:pred.Rank()-1]
	ls := labels.Shape()
	if len(ls) == len(want)+1 && ls[len(ls)-1] == 1 {
		ls = ls[:len(ls)-1]
	}
	if !ls.Equal(want) {
		return g.Errorf(op, "labels %s do not match pred %s: want labels of shape %v", desc(labels), desc(pred), want)
	}
	logp := logProbs(g, pred, fromLogits)
	onehot := g.OneHot(g.Reshape(labels, want), pred.Dim(-1), pred.DType())
	return Mean(g, g.Neg(Sum(g, g.Mul(onehot, logp), []int{-1}, false)), nil, false)
}

// CategoricalCrossentropy returns the mean over samples of −Σ target·log p
// along the last axis, for targets (one-hot or soft) shaped like pred. pred
// holds logits when fromLogits, else probabilities, handled as in
// SparseCategoricalCrossentropy. Targets of another dtype are cast to pred's.
func CategoricalCrossentropy(g *tile.Graph, target, pred *tile.Tensor, fromLogits bool) *tile.Tensor {
	const op = "categorical_crossentropy"
	target, ok := lossArgs(g, op, target, pred)
	if !ok {
		return invalid(g, op)
	}
	if pred.Dim(-1) == 0 {
		return g.Errorf(op, "pred must have a non-empty class axis, got %s", desc(pred))
	}
	logp := logProbs(g, pred, fromLogits)
	return Mean(g, g.Neg(Sum(g, g.Mul(target, logp), []int{-1}, false)), nil, false)
}

// BinaryCrossentropy returns the mean of the elementwise binary cross-entropy
// between target and pred (mean over the last axis, then over samples, which
// is the mean over every element). From probabilities it is
// −(y·log p + (1 − y)·log(1 − p)) with p clipped; from logits x it is the
// stable max(x, 0) − x·y + log(1 + e^−|x|).
func BinaryCrossentropy(g *tile.Graph, target, pred *tile.Tensor, fromLogits bool) *tile.Tensor {
	const op = "binary_crossentropy"
	y, ok := lossArgs(g, op, target, pred)
	if !ok {
		return invalid(g, op)
	}
	var per *tile.Tensor
	if fromLogits {
		x := pred
		negAbs := g.Neg(g.Elementwise(tile.Abs, x))
		per = g.Add(g.Sub(ReLU(g, x), g.Mul(x, y)), g.Elementwise(tile.Log1p, g.Exp(negAbs)))
	} else {
		p := clip(g, pred, lossEpsilon, 1-lossEpsilon)
		one := scalar(g, p, 1)
		per = g.Neg(g.Add(g.Mul(y, g.Log(p)), g.Mul(g.Sub(one, y), g.Log(g.Sub(one, p)))))
	}
	return Mean(g, per, nil, false)
}

// MeanSquaredError returns the mean of (pred − target)² over every element.
func MeanSquaredError(g *tile.Graph, target, pred *tile.Tensor) *tile.Tensor {
	const op = "mean_squared_error"
	y, ok := lossArgs(g, op, target, pred)
	if !ok {
		return invalid(g, op)
	}
	d := g.Sub(pred, y)
	return Mean(g, g.Mul(d, d), nil, false)
}

// MeanAbsoluteError returns the mean of |pred − target| over every element.
func MeanAbsoluteError(g *tile.Graph, target, pred *tile.Tensor) *tile.Tensor {
	const op = "mean_absolute_error"
	y, ok := lossArgs(g, op, target, pred)
	if !ok {
		return invalid(g, op)
	}
	return Mean(g, g.Elementwise(tile.Abs, g.Sub(pred, y)), nil, false)
}

// lossArgs validates a dense target and a floating-point prediction of the
// same shape and returns the target cast to the prediction's dtype.
func lossArgs(g *tile.Graph, op string, target, pred *tile.Tensor) (*tile.Tensor, bool) {
	if !check(g, op, in("target", target), in("pred", pred)) || !checkFloat(g, op, in("pred", pred)) {
		return nil, false
	}
	if pred.Rank() < 1 || !target.Shape().Equal(pred.Shape()) {
		g.Errorf(op, "target and pred must have one shape of rank >= 1: target %s, pred %s", desc(target), desc(pred))
		return nil, false
	}
	return g.Cast(target, pred.DType()), true
}

// logProbs returns log-probabilities along the last axis of logits, or of
// probabilities renormalised to sum to 1 and clipped to [ε, 1 − ε].
func logProbs(g *tile.Graph, pred *tile.Tensor, fromLogits bool) *tile.Tensor {
	if fromLogits {
		return LogSoftmax(g, pred, -1)
	}
	q := g.Div(pred, Sum(g, pred, []int{-1}, true))
	return g.Log(clip(g, q, lossEpsilon, 1-lossEpsilon))
}

// clip limits x to [lo, hi] with selects, so that the gradient passes where
// lo ≤ x ≤ hi and is zero outside.
func clip(g *tile.Graph, x *tile.Tensor, lo, hi float64) *tile.Tensor {
	l, h := scalar(g, x, lo), scalar(g, x, hi)
	return g.Select(g.Elementwise(tile.Lt, x, l), l, g.Select(g.Elementwise(tile.Gt, x, h), h, x))
}
