package nn

import (
	"github.com/tartanml/tartan/tile"
)

// rmsprop is Keras's RMSprop.
type rmsprop struct {
	optimizerBase
	rho, momentum, epsilon float64
	centered               bool
}

// RMSprop returns the RMSprop optimizer with learning rate lr (Keras's
// default is 0.001) and Keras's defaults Rho 0.9, Momentum 0, Epsilon 1e-7,
// not centered, in Keras's form:
//
//	ms = ρ·ms + (1 − ρ)·g²
//	mg = ρ·mg + (1 − ρ)·g                   (centered only)
//	step = lr·g / √(ms − mg² + ε)           (mg = 0 unless centered)
//	mom = momentum·mom + step; w = w − mom  (with momentum; else w = w − step)
//
// It accepts Rho, Momentum, Epsilon, Centered, WeightDecay and LRSchedule.
func RMSprop(lr float64, opts ...OptimizerOption) Optimizer {
	s := &optimizerSettings{rho: 0.9, epsilon: 1e-7}
	o := &rmsprop{optimizerBase: newOptimizerBase("rmsprop", lr, []string{"rho", "momentum", "epsilon", "centered"}, opts, s)}
	o.rho, o.momentum, o.epsilon, o.centered = s.rho, s.momentum, s.epsilon, s.centered
	o.cfg["rho"], o.cfg["momentum"], o.cfg["epsilon"], o.cfg["centered"] = s.rho, s.momentum, s.epsilon, s.centered
	if o.err == nil {
		o.err = firstErr(
			check(s.rho >= 0 && s.rho < 1, "nn: rmsprop: rho %g must lie in [0, 1)", s.rho),
			check(s.momentum >= 0 && s.momentum <= 1, "nn: rmsprop: momentum %g must lie in [0, 1]", s.momentum),
			check(s.epsilon > 0, "nn: rmsprop: epsilon %g must be positive", s.epsilon))
	}
	return o
}

func (o *rmsprop) slots() []string {
	out := []string{"velocity"}
	if o.momentum > 0 {
		out = append(out, "momentum")
	}
	if o.centered {
		out = append(out, "average_gradient")
	}
	return out
}

func (o *rmsprop) apply(s *optStep, w, grad *tile.Tensor, slots []*tile.Tensor) (*tile.Tensor, []*tile.Tensor) {
	g := s.g
	rho, rest := s.scalar(o.rho), s.scalar(1-o.rho)
	ms := g.Add(g.Mul(slots[0], rho), g.Mul(g.Mul(grad, grad), rest))
	out := []*tile.Tensor{ms}
	denom := ms
	k := 1
	var mom *tile.Tensor
	if o.momentum > 0 {
		mom = slots[k]
		k++
	}
	var mg *tile.Tensor
	if o.centered {
		mg = g.Add(g.Mul(slots[k], rho), g.Mul(grad, rest))
		denom = g.Sub(denom, g.Mul(mg, mg))
	}
	step := g.Div(g.Mul(s.lr, grad), g.Sqrt(g.Add(denom, s.scalar(o.epsilon))))
	if mom != nil {
		mom = g.Add(g.Mul(mom, s.scalar(o.momentum)), step)
		out = append(out, mom)
		step = mom
	}
	if mg != nil {
		out = append(out, mg)
	}
	return g.Sub(w, step), out
}
