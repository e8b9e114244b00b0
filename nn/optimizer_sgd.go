package nn

import (
	"fmt"

	"github.com/tartanml/tartan/tile"
)

// sgd is Keras's SGD with optional (Nesterov) momentum.
type sgd struct {
	optimizerBase
	momentum float64
	nesterov bool
}

// SGD returns stochastic gradient descent with learning rate lr (Keras's
// default is 0.01). With Momentum m > 0 it keeps a velocity per weight:
//
//	velocity = m·velocity − lr·g
//	w = w + velocity                       (or, with Nesterov,
//	w = w + m·velocity − lr·g)
//
// and without it w = w − lr·g. It accepts Momentum, Nesterov, WeightDecay
// and LRSchedule.
func SGD(lr float64, opts ...OptimizerOption) Optimizer {
	s := &optimizerSettings{}
	o := &sgd{optimizerBase: newOptimizerBase("sgd", lr, []string{"momentum", "nesterov"}, opts, s)}
	o.momentum, o.nesterov = s.momentum, s.nesterov
	o.cfg["momentum"], o.cfg["nesterov"] = s.momentum, s.nesterov
	if o.err == nil && !(s.momentum >= 0 && s.momentum <= 1) {
		o.err = fmt.Errorf("nn: sgd: momentum %g must lie in [0, 1]", s.momentum)
	}
	return o
}

func (o *sgd) slots() []string {
	if o.momentum == 0 {
		return nil
	}
	return []string{"momentum"}
}

func (o *sgd) apply(s *optStep, w, grad *tile.Tensor, slots []*tile.Tensor) (*tile.Tensor, []*tile.Tensor) {
	g := s.g
	step := g.Mul(grad, s.lr)
	if o.momentum == 0 {
		return g.Sub(w, step), nil
	}
	m := s.scalar(o.momentum)
	vel := g.Sub(g.Mul(slots[0], m), step)
	if o.nesterov {
		return g.Sub(g.Add(w, g.Mul(vel, m)), step), []*tile.Tensor{vel}
	}
	return g.Add(w, vel), []*tile.Tensor{vel}
}
