package nn

import (
	"math"

	"github.com/tartanml/tartan/op"
	"github.com/tartanml/tartan/tile"
)

// lossEpsilon is Keras's backend epsilon, which the losses clip with.
const lossEpsilon = 1e-7

// Huber returns Keras's Huber loss, logged as "huber_loss": for each
// element of error e = pred − target, ½e² where |e| ≤ delta and
// delta·|e| − ½delta² beyond, averaged over the last axis. It accepts Delta
// (1 by default).
func Huber(opts ...LossOption) Loss { return newLoss("huber_loss", opts, "Delta") }

// KLDivergence returns the Kullback–Leibler divergence Σ y·log(y/p) over
// the last axis, of targets y and predictions p both clipped to [1e-7, 1],
// as Keras's KLDivergence ("kl_divergence") does.
func KLDivergence() Loss { return newLoss("kl_divergence", nil) }

// LogCosh returns the mean over the last axis of log(cosh(pred − target)),
// computed stably, as Keras's LogCosh ("log_cosh").
func LogCosh() Loss { return newLoss("log_cosh", nil) }

// Poisson returns the mean over the last axis of pred − target·log(pred +
// 1e-7), as Keras's Poisson ("poisson").
func Poisson() Loss { return newLoss("poisson", nil) }

// CosineSimilarity returns minus the cosine similarity of target and pred
// along the last axis, each normalised as x/√max(Σx², 1e-12), as Keras's
// CosineSimilarity ("cosine_similarity"): −1 for vectors pointing the same
// way, 0 for orthogonal ones.
func CosineSimilarity() Loss { return newLoss("cosine_similarity", nil) }

// Hinge returns the mean over the last axis of max(1 − target·pred, 0), as
// Keras's Hinge ("hinge"). Targets are −1 or 1; a batch whose targets are
// all 0 or 1 is mapped to −1 and 1 first, as Keras does.
func Hinge() Loss { return newLoss("hinge", nil) }

// perSample returns the loss of each sample, with pred's shape less its
// last axis; value is their mean. lg, when not nil, is the logits pred was
// computed from.
func (l *loss) perSample(g *tile.Graph, y, pred *tile.Tensor, lg *logits) *tile.Tensor {
	if !l.sparse() && !y.Shape().Equal(pred.Shape()) {
		return g.Errorf(l.name, "targets %v do not match predictions %v", y.Shape(), pred.Shape())
	}
	if pred.Rank() < 1 {
		return g.Errorf(l.name, "predictions need a feature axis, got shape %v", pred.Shape())
	}
	last := func(v *tile.Tensor) *tile.Tensor { return op.Mean(g, v, []int{-1}, false) }
	sum := func(v *tile.Tensor) *tile.Tensor { return op.Sum(g, v, []int{-1}, false) }
	one := g.Scalar(1, pred.DType())
	fromLogits := l.fromLogits
	switch l.name {
	case "sparse_categorical_crossentropy", "categorical_crossentropy":
		if !fromLogits && lg != nil && lg.softmax {
			pred, fromLogits = lg.x, true
		}
		var logp *tile.Tensor
		if fromLogits {
			logp = op.LogSoftmax(g, pred, -1)
		} else {
			q := g.Div(pred, op.Sum(g, pred, []int{-1}, true))
			logp = g.Log(clipSelect(g, q, lossEpsilon, 1-lossEpsilon))
		}
		t := y
		if l.sparse() {
			labels := g.Cast(g.Reshape(y, pred.Shape()[:pred.Rank()-1]), tile.Int32)
			t = g.OneHot(labels, pred.Dim(-1), pred.DType())
		} else {
			t = l.smooth(g, y, float64(pred.Dim(-1)))
		}
		return g.Neg(sum(g.Mul(t, logp)))
	case "binary_crossentropy":
		if !fromLogits && lg != nil && !lg.softmax {
			pred, fromLogits = lg.x, true
		}
		t := l.smooth(g, y, 2)
		var per *tile.Tensor
		if fromLogits {
			negAbs := g.Neg(g.Elementwise(tile.Abs, pred))
			per = g.Add(g.Sub(op.ReLU(g, pred), g.Mul(pred, t)), g.Elementwise(tile.Log1p, g.Exp(negAbs)))
		} else {
			p := clipSelect(g, pred, lossEpsilon, 1-lossEpsilon)
			per = g.Neg(g.Add(g.Mul(t, g.Log(p)), g.Mul(g.Sub(one, t), g.Log(g.Sub(one, p)))))
		}
		return last(per)
	case "mean_squared_error":
		d := g.Sub(pred, y)
		return last(g.Mul(d, d))
	case "mean_absolute_error":
		return last(g.Elementwise(tile.Abs, g.Sub(pred, y)))
	case "huber_loss":
		// With q = min(|e|, δ): ½q² + δ(|e| − q) is ½e² within δ and
		// δ|e| − ½δ² beyond, one smooth expression.
		a := g.Elementwise(tile.Abs, g.Sub(pred, y))
		d := g.Scalar(l.delta, pred.DType())
		q := g.Minimum(a, d)
		return last(g.Add(g.Mul(g.Scalar(0.5, pred.DType()), g.Mul(q, q)), g.Mul(d, g.Sub(a, q))))
	case "kl_divergence":
		t := clipSelect(g, y, lossEpsilon, 1)
		p := clipSelect(g, pred, lossEpsilon, 1)
		return sum(g.Mul(t, g.Log(g.Div(t, p))))
	case "log_cosh":
		// log cosh x = x + softplus(−2x) − log 2, exact for large |x|.
		x := g.Sub(pred, y)
		two := g.Scalar(-2, pred.DType())
		return last(g.Sub(g.Add(x, op.Softplus(g, g.Mul(two, x))), g.Scalar(math.Ln2, pred.DType())))
	case "poisson":
		return last(g.Sub(pred, g.Mul(y, g.Log(g.Add(pred, g.Scalar(lossEpsilon, pred.DType()))))))
	case "cosine_similarity":
		norm := func(x *tile.Tensor) *tile.Tensor {
			ss := op.Sum(g, g.Mul(x, x), []int{-1}, true)
			return g.Mul(x, g.Elementwise(tile.Rsqrt, g.Maximum(ss, g.Scalar(1e-12, pred.DType()))))
		}
		return g.Neg(sum(g.Mul(norm(y), norm(pred))))
	case "hinge":
		zero := g.Scalar(0, pred.DType())
		isBin := g.Cast(g.Elementwise(tile.Or, g.Elementwise(tile.Eq, y, zero), g.Elementwise(tile.Eq, y, one)), pred.DType())
		all := op.Min(g, isBin, nil, false)
		signed := g.Sub(g.Mul(g.Scalar(2, pred.DType()), y), one)
		t := g.Select(g.Elementwise(tile.Gt, all, g.Scalar(0.5, pred.DType())), signed, y)
		return last(g.Maximum(g.Sub(one, g.Mul(t, pred)), zero))
	}
	return g.Errorf("loss", "unknown loss %q", l.name)
}

// smooth applies label smoothing over k classes to targets y.
func (l *loss) smooth(g *tile.Graph, y *tile.Tensor, k float64) *tile.Tensor {
	if l.smoothing == 0 {
		return y
	}
	return g.Add(g.Mul(y, g.Scalar(1-l.smoothing, y.DType())), g.Scalar(l.smoothing/k, y.DType()))
}

// clipSelect limits x to [lo, hi] with selects, so that the gradient
// passes where lo ≤ x ≤ hi and is zero outside, as Keras's clip.
func clipSelect(g *tile.Graph, x *tile.Tensor, lo, hi float64) *tile.Tensor {
	l, h := g.Scalar(lo, x.DType()), g.Scalar(hi, x.DType())
	return g.Select(g.Elementwise(tile.Lt, x, l), l, g.Select(g.Elementwise(tile.Gt, x, h), h, x))
}
