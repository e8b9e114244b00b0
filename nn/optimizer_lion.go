package nn

import (
	"github.com/tartanml/tartan/tile"
)

// lion is Keras's Lion.
type lion struct {
	optimizerBase
	beta1, beta2 float64
}

// Lion returns the Lion optimizer (evolved sign momentum) with learning rate
// lr (Keras's default is 0.001) and Keras's defaults Beta1 0.9 and Beta2
// 0.99, in Keras's form:
//
//	w = w − lr·sign(β₁·m + (1 − β₁)·g)
//	m = β₂·m + (1 − β₂)·g
//
// Beta1 must lie in (0, 1], as Keras requires (at 0 Lion is sign descent).
// It accepts Beta1, Beta2 and the options every optimizer accepts. Its slot
// is "m".
func Lion(lr float64, opts ...OptimizerOption) Optimizer {
	s := &optimizerSettings{beta1: 0.9, beta2: 0.99}
	o := &lion{optimizerBase: newOptimizerBase("lion", lr, []string{"beta_1", "beta_2"}, opts, s)}
	o.beta1, o.beta2 = s.beta1, s.beta2
	o.cfg["beta_1"], o.cfg["beta_2"] = s.beta1, s.beta2
	if o.err == nil {
		o.err = firstErr(
			check(s.beta1 > 0 && s.beta1 <= 1, "nn: lion: beta_1 %g must lie in (0, 1]; at 0 the optimizer degenerates to sign descent", s.beta1),
			check(s.beta2 >= 0 && s.beta2 <= 1, "nn: lion: beta_2 %g must lie in [0, 1]", s.beta2))
	}
	return o
}

func (o *lion) slots() []string { return []string{"m"} }

func (o *lion) apply(s *optStep, w, grad *tile.Tensor, slots []*tile.Tensor) (*tile.Tensor, []*tile.Tensor) {
	g := s.g
	dir := g.Add(g.Mul(slots[0], s.scalar(o.beta1)), g.Mul(grad, s.scalar(1-o.beta1)))
	nw := g.Sub(w, g.Mul(s.lr, g.Elementwise(tile.Sign, dir)))
	m := g.Add(g.Mul(slots[0], s.scalar(o.beta2)), g.Mul(grad, s.scalar(1-o.beta2)))
	return nw, []*tile.Tensor{m}
}
