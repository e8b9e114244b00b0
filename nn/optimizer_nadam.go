package nn

import (
	"github.com/tartanml/tartan/tile"
)

// uProductVar is Nadam's running product of momentum factors.
const uProductVar = "optimizer/u_product"

// nadam is Keras's Nadam.
type nadam struct {
	optimizerBase
	beta1, beta2, epsilon float64
}

// Nadam returns Adam with Nesterov momentum, with learning rate lr (Keras's
// default is 0.001) and Keras's defaults Beta1 0.9, Beta2 0.999, Epsilon
// 1e-7, in Keras's form: at update t = 1, 2, … with momentum factors
// u_t = β₁·(1 − ½·0.96ᵗ) and their running product P_t = u_1·…·u_t
// (the variable "optimizer/u_product", 1 before the first update),
//
//	m = m + (g − m)·(1 − β₁)
//	v = v + (g² − v)·(1 − β₂)
//	m̂ = u_{t+1}·m / (1 − P_t·u_{t+1}) + (1 − u_t)·g / (1 − P_t)
//	v̂ = v / (1 − β₂ᵗ)
//	w = w − lr·m̂ / (√v̂ + ε)
//
// It accepts Beta1, Beta2, Epsilon and the options every optimizer accepts.
// Its slots are "m" and "v".
func Nadam(lr float64, opts ...OptimizerOption) Optimizer {
	s := &optimizerSettings{beta1: 0.9, beta2: 0.999, epsilon: 1e-7}
	o := &nadam{optimizerBase: newOptimizerBase("nadam", lr, []string{"beta_1", "beta_2", "epsilon"}, opts, s)}
	o.beta1, o.beta2, o.epsilon = s.beta1, s.beta2, s.epsilon
	o.cfg["beta_1"], o.cfg["beta_2"], o.cfg["epsilon"] = s.beta1, s.beta2, s.epsilon
	if o.err == nil {
		o.err = firstErr(
			check(s.beta1 >= 0 && s.beta1 < 1, "nn: nadam: beta_1 %g must lie in [0, 1)", s.beta1),
			check(s.beta2 >= 0 && s.beta2 < 1, "nn: nadam: beta_2 %g must lie in [0, 1)", s.beta2),
			check(s.epsilon >= 0, "nn: nadam: epsilon %g is negative", s.epsilon))
	}
	return o
}

func (o *nadam) slots() []string { return []string{"m", "v"} }

func (o *nadam) vars() map[string]float64 { return map[string]float64{uProductVar: 1} }

// u returns the momentum factor β₁·(1 − ½·0.96ᵗ) of update t.
func (o *nadam) u(s *optStep, t *tile.Tensor) *tile.Tensor {
	g := s.g
	return g.Mul(s.scalar(o.beta1), g.Sub(s.scalar(1), g.Mul(s.scalar(0.5), g.Elementwise(tile.Pow, s.scalar(0.96), t))))
}

// step advances the product of momentum factors and leaves in s.cache the
// per-update scalars every weight's apply shares.
func (o *nadam) step(s *optStep) {
	g := s.g
	one := s.scalar(1)
	ut := o.u(s, s.t)
	ut1 := o.u(s, g.Add(s.t, one))
	prev := g.Variable(uProductVar, tile.Float32, tile.Shape{})
	pt := g.Mul(prev, ut)
	g.Update(prev, pt)
	// m̂ = a·m + b·g, and v̂ = v·c.
	s.cache["nadam_a"] = g.Div(ut1, g.Sub(one, g.Mul(pt, ut1)))
	s.cache["nadam_b"] = g.Div(g.Sub(one, ut), g.Sub(one, pt))
	s.cache["nadam_c"] = g.Div(one, g.Sub(one, g.Elementwise(tile.Pow, s.scalar(o.beta2), s.t)))
}

func (o *nadam) apply(s *optStep, w, grad *tile.Tensor, slots []*tile.Tensor) (*tile.Tensor, []*tile.Tensor) {
	g := s.g
	m := g.Add(slots[0], g.Mul(g.Sub(grad, slots[0]), s.scalar(1-o.beta1)))
	v := g.Add(slots[1], g.Mul(g.Sub(g.Mul(grad, grad), slots[1]), s.scalar(1-o.beta2)))
	mhat := g.Add(g.Mul(m, s.cache["nadam_a"]), g.Mul(grad, s.cache["nadam_b"]))
	vhat := g.Mul(v, s.cache["nadam_c"])
	nw := g.Sub(w, g.Div(g.Mul(mhat, s.lr), g.Add(g.Sqrt(vhat), s.scalar(o.epsilon))))
	return nw, []*tile.Tensor{m, v}
}
