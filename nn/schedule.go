package nn

import (
	"fmt"
	"math"

	"github.com/tartanml/tartan/tile"
)

// Schedule is a learning rate that changes with the step: the number of
// updates applied before the current one (Keras's optimizer.iterations). The
// rate is computed inside the training step's graph, so a schedule costs the
// host nothing. ExponentialDecay, CosineDecay and PiecewiseConstantDecay
// follow Keras's schedules of the same names.
type Schedule interface {
	// Rate returns the learning rate at step, computed on the host in
	// float64.
	Rate(step int) float64

	// build returns the rate at the scalar i64 step as an f32 scalar.
	build(g *tile.Graph, step *tile.Tensor) *tile.Tensor
	// spec describes the schedule for checkpoints.
	spec() map[string]any
	// err reports bad constructor arguments.
	err() error
}

// exponentialDecay is Keras's ExponentialDecay.
type exponentialDecay struct {
	initial, rate float64
	steps         int
	staircase     bool
}

// ExponentialDecay returns initial·rate^(step/decaySteps), with the exponent
// rounded down when staircase is set.
func ExponentialDecay(initial float64, decaySteps int, rate float64, staircase bool) Schedule {
	return &exponentialDecay{initial: initial, steps: decaySteps, rate: rate, staircase: staircase}
}

func (e *exponentialDecay) Rate(step int) float64 {
	p := float64(step) / float64(e.steps)
	if e.staircase {
		p = math.Floor(p)
	}
	return e.initial * math.Pow(e.rate, p)
}

func (e *exponentialDecay) build(g *tile.Graph, step *tile.Tensor) *tile.Tensor {
	p := g.Div(g.Cast(step, tile.Float32), g.Scalar(float64(e.steps), tile.Float32))
	if e.staircase {
		p = g.Elementwise(tile.Floor, p)
	}
	return g.Mul(g.Scalar(e.initial, tile.Float32), g.Elementwise(tile.Pow, g.Scalar(e.rate, tile.Float32), p))
}

func (e *exponentialDecay) spec() map[string]any {
	return map[string]any{"schedule": "exponential_decay", "initial_learning_rate": e.initial,
		"decay_steps": e.steps, "decay_rate": e.rate, "staircase": e.staircase}
}

func (e *exponentialDecay) err() error {
	return firstErr(
		check(e.initial > 0, "exponential decay: initial learning rate %g must be positive", e.initial),
		check(e.steps > 0, "exponential decay: decay steps %d must be positive", e.steps),
		check(e.rate > 0, "exponential decay: decay rate %g must be positive", e.rate))
}

// cosineDecay is Keras's CosineDecay without warm-up.
type cosineDecay struct {
	initial, alpha float64
	steps          int
}

// CosineDecay returns initial·((1 − alpha)·½(1 + cos(π·min(step, decaySteps)/decaySteps)) + alpha):
// a half cosine from initial down to initial·alpha over decaySteps steps,
// then constant.
func CosineDecay(initial float64, decaySteps int, alpha float64) Schedule {
	return &cosineDecay{initial: initial, steps: decaySteps, alpha: alpha}
}

func (c *cosineDecay) Rate(step int) float64 {
	f := float64(min(max(step, 0), c.steps)) / float64(c.steps)
	return c.initial * ((1-c.alpha)*0.5*(1+math.Cos(math.Pi*f)) + c.alpha)
}

// build evaluates the cosine as −sin(π(f − ½)) with an odd Taylor
// polynomial in y = π(f − ½) ∈ [−π/2, π/2], whose truncation error (below
// 1e-9 with terms up to y¹⁵) is far under float32 rounding: the tile
// language has no cosine.
func (c *cosineDecay) build(g *tile.Graph, step *tile.Tensor) *tile.Tensor {
	f32 := func(x float64) *tile.Tensor { return g.Scalar(x, tile.Float32) }
	s := g.Minimum(g.Maximum(step, g.Scalar(0, tile.Int64)), g.Scalar(float64(c.steps), tile.Int64))
	f := g.Div(g.Cast(s, tile.Float32), f32(float64(c.steps)))
	y := g.Mul(g.Sub(f, f32(0.5)), f32(math.Pi))
	y2 := g.Mul(y, y)
	// sin y = y·(1 − y²/3!·(1 − y²/(4·5)·(1 − y²/(6·7)·(…)))), Horner form.
	poly := f32(1)
	for k := 7; k >= 1; k-- {
		poly = g.Sub(f32(1), g.Mul(g.Div(y2, f32(float64((2*k)*(2*k+1)))), poly))
	}
	cos := g.Neg(g.Mul(y, poly))
	decayed := g.Add(g.Mul(f32(1-c.alpha), g.Mul(f32(0.5), g.Add(f32(1), cos))), f32(c.alpha))
	return g.Mul(f32(c.initial), decayed)
}

func (c *cosineDecay) spec() map[string]any {
	return map[string]any{"schedule": "cosine_decay", "initial_learning_rate": c.initial,
		"decay_steps": c.steps, "alpha": c.alpha}
}

func (c *cosineDecay) err() error {
	return firstErr(
		check(c.initial > 0, "cosine decay: initial learning rate %g must be positive", c.initial),
		check(c.steps > 0, "cosine decay: decay steps %d must be positive", c.steps),
		check(c.alpha >= 0 && c.alpha <= 1, "cosine decay: alpha %g must lie in [0, 1]", c.alpha))
}

// piecewiseConstant is Keras's PiecewiseConstantDecay.
type piecewiseConstant struct {
	boundaries []int
	values     []float64
}

// PiecewiseConstantDecay returns values[0] while step ≤ boundaries[0],
// values[i] while boundaries[i−1] < step ≤ boundaries[i], and the last value
// after the last boundary. It needs one more value than boundaries, and
// increasing boundaries.
func PiecewiseConstantDecay(boundaries []int, values []float64) Schedule {
	return &piecewiseConstant{boundaries: append([]int(nil), boundaries...), values: append([]float64(nil), values...)}
}

func (p *piecewiseConstant) Rate(step int) float64 {
	for i, b := range p.boundaries {
		if step <= b {
			return p.values[i]
		}
	}
	return p.values[len(p.values)-1]
}

func (p *piecewiseConstant) build(g *tile.Graph, step *tile.Tensor) *tile.Tensor {
	r := g.Scalar(p.values[len(p.values)-1], tile.Float32)
	for i := len(p.boundaries) - 1; i >= 0; i-- {
		le := g.Elementwise(tile.Le, step, g.Scalar(float64(p.boundaries[i]), tile.Int64))
		r = g.Select(le, g.Scalar(p.values[i], tile.Float32), r)
	}
	return r
}

func (p *piecewiseConstant) spec() map[string]any {
	return map[string]any{"schedule": "piecewise_constant_decay", "boundaries": p.boundaries, "values": p.values}
}

func (p *piecewiseConstant) err() error {
	if len(p.values) != len(p.boundaries)+1 {
		return fmt.Errorf("piecewise constant decay: %d boundaries need %d values, got %d", len(p.boundaries), len(p.boundaries)+1, len(p.values))
	}
	for i := 1; i < len(p.boundaries); i++ {
		if p.boundaries[i] <= p.boundaries[i-1] {
			return fmt.Errorf("piecewise constant decay: boundaries %v must increase", p.boundaries)
		}
	}
	for _, v := range p.values {
		if !(v > 0) {
			return fmt.Errorf("piecewise constant decay: values %v must be positive", p.values)
		}
	}
	return nil
}
