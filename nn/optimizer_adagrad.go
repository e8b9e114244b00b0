package nn

import (
	"math"

	"github.com/tartanml/tartan/tile"
)

// adagrad is Keras's Adagrad.
type adagrad struct {
	optimizerBase
	initial, epsilon float64
}

// Adagrad returns the Adagrad optimizer with learning rate lr (Keras's
// default is 0.001) and Keras's defaults InitialAccumulatorValue 0.1 and
// Epsilon 1e-7, in Keras's form:
//
//	acc = acc + g²          (acc starts at the initial accumulator value)
//	w = w − lr·g / √(acc + ε)
//
// It accepts InitialAccumulatorValue, Epsilon and the options every
// optimizer accepts. Its slot is "accumulator".
func Adagrad(lr float64, opts ...OptimizerOption) Optimizer {
	s := &optimizerSettings{initialAccumulator: 0.1, epsilon: 1e-7}
	o := &adagrad{optimizerBase: newOptimizerBase("adagrad", lr, []string{"initial_accumulator_value", "epsilon"}, opts, s)}
	o.initial, o.epsilon = s.initialAccumulator, s.epsilon
	o.cfg["initial_accumulator_value"], o.cfg["epsilon"] = s.initialAccumulator, s.epsilon
	if o.err == nil {
		o.err = firstErr(
			check(s.initialAccumulator >= 0 && !math.IsInf(s.initialAccumulator, 0), "nn: adagrad: initial_accumulator_value %g must be non-negative and finite", s.initialAccumulator),
			check(s.epsilon >= 0, "nn: adagrad: epsilon %g is negative", s.epsilon),
			check(s.initialAccumulator+s.epsilon > 0, "nn: adagrad: initial_accumulator_value and epsilon are both 0, so a zero gradient divides 0 by 0"))
	}
	return o
}

// InitialAccumulatorValue sets the value Adagrad's accumulators start at
// (default 0.1).
func InitialAccumulatorValue(v float64) OptimizerOption {
	return optimizerOption{"initial_accumulator_value", func(s *optimizerSettings) { s.initialAccumulator = v }}
}

func (o *adagrad) slots() []string { return []string{"accumulator"} }

func (o *adagrad) slotInit(string) float64 { return o.initial }

func (o *adagrad) apply(s *optStep, w, grad *tile.Tensor, slots []*tile.Tensor) (*tile.Tensor, []*tile.Tensor) {
	g := s.g
	acc := g.Add(slots[0], g.Mul(grad, grad))
	nw := g.Sub(w, g.Div(g.Mul(s.lr, grad), g.Sqrt(g.Add(acc, s.scalar(o.epsilon)))))
	return nw, []*tile.Tensor{acc}
}
