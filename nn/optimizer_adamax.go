package nn

import (
	"github.com/tartanml/tartan/tile"
)

// adamax is Keras's Adamax.
type adamax struct {
	optimizerBase
	beta1, beta2, epsilon float64
}

// Adamax returns Adam's variant over the infinity norm, with learning rate
// lr (Keras's default is 0.001) and Keras's defaults Beta1 0.9, Beta2
// 0.999, Epsilon 1e-7, in Keras's form: at update t = 1, 2, …
//
//	m = m + (g − m)·(1 − β₁)
//	u = max(β₂·u, |g|)
//	w = w − lr·m / ((1 − β₁ᵗ)·(u + ε))
//
// It accepts Beta1, Beta2, Epsilon and the options every optimizer accepts.
// Its slots are "m" and "u".
func Adamax(lr float64, opts ...OptimizerOption) Optimizer {
	s := &optimizerSettings{beta1: 0.9, beta2: 0.999, epsilon: 1e-7}
	o := &adamax{optimizerBase: newOptimizerBase("adamax", lr, []string{"beta_1", "beta_2", "epsilon"}, opts, s)}
	o.beta1, o.beta2, o.epsilon = s.beta1, s.beta2, s.epsilon
	o.cfg["beta_1"], o.cfg["beta_2"], o.cfg["epsilon"] = s.beta1, s.beta2, s.epsilon
	if o.err == nil {
		o.err = firstErr(
			check(s.beta1 >= 0 && s.beta1 < 1, "nn: adamax: beta_1 %g must lie in [0, 1)", s.beta1),
			check(s.beta2 >= 0 && s.beta2 < 1, "nn: adamax: beta_2 %g must lie in [0, 1)", s.beta2),
			check(s.epsilon >= 0, "nn: adamax: epsilon %g is negative", s.epsilon))
	}
	return o
}

func (o *adamax) slots() []string { return []string{"m", "u"} }

func (o *adamax) apply(s *optStep, w, grad *tile.Tensor, slots []*tile.Tensor) (*tile.Tensor, []*tile.Tensor) {
	g := s.g
	corr := s.cache["adamax_corr"]
	if corr == nil {
		// 1 − β₁ᵗ, shared by every weight.
		corr = g.Sub(s.scalar(1), g.Elementwise(tile.Pow, s.scalar(o.beta1), s.t))
		s.cache["adamax_corr"] = corr
	}
	m := g.Add(slots[0], g.Mul(g.Sub(grad, slots[0]), s.scalar(1-o.beta1)))
	u := g.Maximum(g.Mul(slots[1], s.scalar(o.beta2)), g.Elementwise(tile.Abs, grad))
	nw := g.Sub(w, g.Div(g.Mul(s.lr, m), g.Mul(corr, g.Add(u, s.scalar(o.epsilon)))))
	return nw, []*tile.Tensor{m, u}
}
