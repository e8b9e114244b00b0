package nn

import (
	"github.com/tartanml/tartan/tile"
)

// adam is Keras's Adam, and AdamW when it has a weight decay.
type adam struct {
	optimizerBase
	beta1, beta2, epsilon float64
}

// Adam returns the Adam optimizer with learning rate lr (Keras's default is
// 0.001) and Keras's defaults Beta1 0.9, Beta2 0.999, Epsilon 1e-7, in
// Keras's form: at update t = 1, 2, …
//
//	lr_t = lr·√(1 − β₂ᵗ) / (1 − β₁ᵗ)
//	m = m + (g − m)·(1 − β₁)
//	v = v + (g² − v)·(1 − β₂)
//	w = w − lr_t·m / (√v + ε)
//
// It accepts Beta1, Beta2, Epsilon, WeightDecay and LRSchedule.
func Adam(lr float64, opts ...OptimizerOption) Optimizer {
	return newAdam("adam", lr, 0, opts)
}

// AdamW returns Adam with decoupled weight decay, 0.004 by default as in
// Keras (WeightDecay sets another): before each update w = w − w·decay·lr.
func AdamW(lr float64, opts ...OptimizerOption) Optimizer {
	return newAdam("adamw", lr, 0.004, opts)
}

func newAdam(name string, lr, decay float64, opts []OptimizerOption) Optimizer {
	s := &optimizerSettings{beta1: 0.9, beta2: 0.999, epsilon: 1e-7, weightDecay: decay}
	o := &adam{optimizerBase: newOptimizerBase(name, lr, []string{"beta_1", "beta_2", "epsilon"}, opts, s)}
	o.beta1, o.beta2, o.epsilon = s.beta1, s.beta2, s.epsilon
	o.cfg["beta_1"], o.cfg["beta_2"], o.cfg["epsilon"] = s.beta1, s.beta2, s.epsilon
	o.cfg["weight_decay"] = s.weightDecay
	if o.err == nil {
		o.err = firstErr(
			check(s.beta1 >= 0 && s.beta1 < 1, "nn: %s: beta_1 %g must lie in [0, 1)", name, s.beta1),
			check(s.beta2 >= 0 && s.beta2 < 1, "nn: %s: beta_2 %g must lie in [0, 1)", name, s.beta2),
			check(s.epsilon >= 0, "nn: %s: epsilon %g is negative", name, s.epsilon))
	}
	return o
}

func (o *adam) slots() []string { return []string{"m", "v"} }

func (o *adam) apply(s *optStep, w, grad *tile.Tensor, slots []*tile.Tensor) (*tile.Tensor, []*tile.Tensor) {
	g := s.g
	alpha := s.cache["adam_lr_t"]
	if alpha == nil {
		one := s.scalar(1)
		p1 := g.Elementwise(tile.Pow, s.scalar(o.beta1), s.t)
		p2 := g.Elementwise(tile.Pow, s.scalar(o.beta2), s.t)
		alpha = g.Div(g.Mul(s.lr, g.Sqrt(g.Sub(one, p2))), g.Sub(one, p1))
		s.cache["adam_lr_t"] = alpha
	}
	m := g.Add(slots[0], g.Mul(g.Sub(grad, slots[0]), s.scalar(1-o.beta1)))
	v := g.Add(slots[1], g.Mul(g.Sub(g.Mul(grad, grad), slots[1]), s.scalar(1-o.beta2)))
	nw := g.Sub(w, g.Div(g.Mul(m, alpha), g.Add(g.Sqrt(v), s.scalar(o.epsilon))))
	return nw, []*tile.Tensor{m, v}
}
