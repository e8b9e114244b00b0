package nn

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/tartanml/tartan/tile"
)

// Optimizer updates the trainable weights from their gradients, inside the
// training step's graph, with Keras's semantics: SGD, Adam, AdamW,
// RMSprop, Adagrad, Nadam, Adamax and Lion. Every optimizer has a learning
// rate, constant or following a Schedule of the step, an optional gradient
// clipping (ClipNorm, ClipValue or GlobalClipNorm, applied to the gradients
// before anything else), an optional decoupled weight decay applied before
// the update as Keras does (w ← w − w·decay·lr), a step counter
// ("optimizer/iterations", the number of updates applied so far) and slot
// variables per trainable weight, named "optimizer/<slot>/<weight>", such as
// "optimizer/m/dense/kernel".
//
// Constructors never fail outright: bad arguments are reported by Compile.
type Optimizer interface {
	// Name returns Keras's identifier, such as "adam".
	Name() string
	// LearningRate returns the learning rate at step 0.
	LearningRate() float64

	base() *optimizerBase
	// slots names the slot variables each trainable weight gets.
	slots() []string
	// apply returns the new weight and slot values from weight w, its
	// gradient and its slots.
	apply(s *optStep, w, grad *tile.Tensor, slots []*tile.Tensor) (*tile.Tensor, []*tile.Tensor)
}

// optimizerBase holds what every optimizer has.
type optimizerBase struct {
	name        string
	err         error
	lr          float64
	schedule    Schedule
	weightDecay float64
	// At most one of the three clippings is positive.
	clipNorm, clipValue, globalClipNorm float64
	cfg                                 map[string]any // hyperparameters, for checkpoints and errors
}

func (o *optimizerBase) Name() string         { return o.name }
func (o *optimizerBase) base() *optimizerBase { return o }

// LearningRate returns the learning rate at step 0.
func (o *optimizerBase) LearningRate() float64 {
	if o.schedule != nil {
		return o.schedule.Rate(0)
	}
	return o.lr
}

// optStep is what an optimizer's apply sees of the current step.
type optStep struct {
	g *tile.Graph
	// t is the 1-based number of this update, as f32: iterations + 1.
	t *tile.Tensor
	// lr is this step's learning rate, an f32 scalar.
	lr *tile.Tensor
	// cache holds per-step scalars shared by every weight, such as Adam's
	// corrected learning rate.
	cache map[string]*tile.Tensor
}

// scalar returns an f32 constant.
func (s *optStep) scalar(x float64) *tile.Tensor { return s.g.Scalar(x, tile.Float32) }

// OptimizerOption configures an optimizer. Each optimizer accepts the
// options Keras's constructor has arguments for and reports any other.
type OptimizerOption interface {
	applyOptimizer(*optimizerSettings)
}

// optimizerSettings is what optimizer options set.
type optimizerSettings struct {
	given       []string
	momentum    float64
	epsilon     float64
	nesterov    bool
	beta1       float64
	beta2       float64
	rho         float64
	centered    bool
	weightDecay float64
	schedule    Schedule

	initialAccumulator float64
	clipNorm           float64
	clipValue          float64
	globalClipNorm     float64
}

type optimizerOption struct {
	name string
	set  func(*optimizerSettings)
}

func (o optimizerOption) applyOptimizer(s *optimizerSettings) {
	s.given = append(s.given, o.name)
	o.set(s)
}

func (s *optimizerSettings) has(n string) bool { return slices.Contains(s.given, n) }

// Nesterov turns on Nesterov momentum for SGD.
func Nesterov(on bool) OptimizerOption {
	return optimizerOption{"nesterov", func(s *optimizerSettings) { s.nesterov = on }}
}

// Beta1 sets Adam's decay rate of the first moment (default 0.9).
func Beta1(b float64) OptimizerOption {
	return optimizerOption{"beta_1", func(s *optimizerSettings) { s.beta1 = b }}
}

// Beta2 sets Adam's decay rate of the second moment (default 0.999).
func Beta2(b float64) OptimizerOption {
	return optimizerOption{"beta_2", func(s *optimizerSettings) { s.beta2 = b }}
}

// Rho sets RMSprop's decay rate of the mean square (default 0.9).
func Rho(r float64) OptimizerOption {
	return optimizerOption{"rho", func(s *optimizerSettings) { s.rho = r }}
}

// Centered makes RMSprop divide by the gradient's estimated variance rather
// than its mean square.
func Centered(on bool) OptimizerOption {
	return optimizerOption{"centered", func(s *optimizerSettings) { s.centered = on }}
}

// WeightDecay sets a decoupled weight decay: before each update every
// trainable weight w becomes w − w·decay·lr. AdamW's default is 0.004, the
// others' 0.
func WeightDecay(d float64) OptimizerOption {
	return optimizerOption{"weight_decay", func(s *optimizerSettings) { s.weightDecay = d }}
}

// LRSchedule makes the learning rate follow a schedule of the step instead
// of the constant given to the constructor, which must then be 0 or the
// schedule's initial rate.
func LRSchedule(sch Schedule) OptimizerOption {
	return optimizerOption{"schedule", func(s *optimizerSettings) { s.schedule = sch }}
}

// ClipNorm clips the gradient of each weight on its own, as Keras's
// clipnorm does: a gradient g whose L2 norm ‖g‖ exceeds c becomes g·c/‖g‖.
// It excludes ClipValue and GlobalClipNorm.
func ClipNorm(c float64) OptimizerOption {
	return optimizerOption{"clipnorm", func(s *optimizerSettings) { s.clipNorm = c }}
}

// ClipValue clips every gradient element to [−v, v], as Keras's clipvalue
// does. It excludes ClipNorm and GlobalClipNorm.
func ClipValue(v float64) OptimizerOption {
	return optimizerOption{"clipvalue", func(s *optimizerSettings) { s.clipValue = v }}
}

// GlobalClipNorm clips the gradients of all weights together, as Keras's
// global_clipnorm does: when the L2 norm n of all gradient elements at once
// exceeds c, every gradient is multiplied by c/n (a non-finite n makes every
// gradient NaN). It excludes ClipNorm and ClipValue.
func GlobalClipNorm(c float64) OptimizerOption {
	return optimizerOption{"global_clipnorm", func(s *optimizerSettings) { s.globalClipNorm = c }}
}

// commonOptions are the options every optimizer accepts.
var commonOptions = []string{"weight_decay", "schedule", "clipnorm", "clipvalue", "global_clipnorm"}

// commonTitles are their constructors' names.
var commonTitles = []string{"WeightDecay", "LRSchedule", "ClipNorm", "ClipValue", "GlobalClipNorm"}

// newOptimizerBase applies opts, checks that each is one the optimizer
// accepts (every optimizer accepts WeightDecay, LRSchedule and the three
// clippings) and checks the learning rate and the clipping.
func newOptimizerBase(name string, lr float64, allowed []string, opts []OptimizerOption, s *optimizerSettings) optimizerBase {
	b := optimizerBase{name: name, lr: lr, cfg: map[string]any{"learning_rate": lr}}
	for _, o := range opts {
		if o == nil {
			b.err = fmt.Errorf("nn: %s: nil option", name)
			return b
		}
		o.applyOptimizer(s)
	}
	for _, n := range s.given {
		if !slices.Contains(commonOptions, n) && !slices.Contains(allowed, n) {
			all := slices.Clone(commonTitles)
			for _, a := range allowed {
				all = append(all, optionTitle(a))
			}
			b.err = fmt.Errorf("nn: %s: option %s does not apply (it accepts %s)", name, optionTitle(n), strings.Join(all, ", "))
			return b
		}
	}
	b.weightDecay = s.weightDecay
	b.schedule = s.schedule
	if s.weightDecay != 0 {
		b.cfg["weight_decay"] = s.weightDecay
	}
	if b.err = b.setClipping(s); b.err != nil {
		return b
	}
	switch {
	case s.weightDecay < 0:
		b.err = fmt.Errorf("nn: %s: weight decay %g is negative", name, s.weightDecay)
	case s.has("schedule") && s.schedule == nil:
		b.err = fmt.Errorf("nn: %s: nil learning-rate schedule", name)
	case s.schedule != nil:
		if e := s.schedule.err(); e != nil {
			b.err = fmt.Errorf("nn: %s: %w", name, e)
		} else if lr != 0 && lr != s.schedule.Rate(0) {
			b.err = fmt.Errorf("nn: %s: learning rate %g disagrees with the schedule's initial rate %g; pass 0 or the same value", name, lr, s.schedule.Rate(0))
		}
		b.cfg["learning_rate"] = s.schedule.spec()
	case !(lr > 0):
		b.err = fmt.Errorf("nn: %s: learning rate %g must be positive", name, lr)
	}
	return b
}

// setClipping checks and keeps the clipping options: each given one
// positive and finite, and at most one of them, as Keras allows.
func (b *optimizerBase) setClipping(s *optimizerSettings) error {
	var given []string
	for _, c := range []struct {
		key, title string
		v          float64
		dst        *float64
	}{{"clipnorm", "ClipNorm", s.clipNorm, &b.clipNorm}, {"clipvalue", "ClipValue", s.clipValue, &b.clipValue}, {"global_clipnorm", "GlobalClipNorm", s.globalClipNorm, &b.globalClipNorm}} {
		if !s.has(c.key) {
			continue
		}
		given = append(given, fmt.Sprintf("%s(%g)", c.title, c.v))
		if !(c.v > 0) || math.IsInf(c.v, 0) {
			return fmt.Errorf("nn: %s: %s %g must be positive and finite", b.name, c.key, c.v)
		}
		*c.dst = c.v
		b.cfg[c.key] = c.v
	}
	if len(given) > 1 {
		return fmt.Errorf("nn: %s: only one of ClipNorm, ClipValue and GlobalClipNorm can be set; got %s", b.name, strings.Join(given, ", "))
	}
	return nil
}

// clip returns the gradients clipped as the optimizer's clipping option
// says, or grads itself without one.
func (b *optimizerBase) clip(g *tile.Graph, grads []*tile.Tensor) []*tile.Tensor {
	f32 := func(x float64) *tile.Tensor { return g.Scalar(x, tile.Float32) }
	out := make([]*tile.Tensor, len(grads))
	switch {
	case b.clipNorm > 0:
		c := f32(b.clipNorm)
		for i, gr := range grads {
			norm := g.Sqrt(sumAll(g, g.Mul(gr, gr)))
			out[i] = g.Div(g.Mul(gr, c), g.Maximum(norm, c))
		}
	case b.globalClipNorm > 0:
		var sq *tile.Tensor
		for _, gr := range grads {
			s := sumAll(g, g.Mul(gr, gr))
			if sq == nil {
				sq = s
			} else {
				sq = g.Add(sq, s)
			}
		}
		norm := g.Sqrt(sq)
		one := f32(1)
		// c·min(1/n, 1/c): 1 when n ≤ c (n = 0 included, 1/0 being
		// infinite), c/n above; adding n − n makes it NaN for an
		// infinite or NaN norm.
		scale := g.Mul(f32(b.globalClipNorm), g.Minimum(g.Div(one, norm), f32(1/b.globalClipNorm)))
		scale = g.Add(scale, g.Sub(norm, norm))
		for i, gr := range grads {
			out[i] = g.Mul(gr, scale)
		}
	case b.clipValue > 0:
		lo, hi := f32(-b.clipValue), f32(b.clipValue)
		for i, gr := range grads {
			out[i] = g.Minimum(g.Maximum(gr, lo), hi)
		}
	default:
		return grads
	}
	return out
}

// slotIniter is an optimizer whose slots start at a value other than 0,
// such as Adagrad's accumulator.
type slotIniter interface {
	slotInit(slot string) float64
}

// stepper is an optimizer with variables of its own beside the slots, such
// as Nadam's running product of momentum factors: vars names them, with
// their initial values (f32 scalars), and step, called once per update
// before any weight's apply, updates them in s's graph and leaves what
// apply needs in s.cache.
type stepper interface {
	vars() map[string]float64
	step(s *optStep)
}

// Names of the optimizer's own variables.
const (
	iterationsVar   = "optimizer/iterations"
	learningRateVar = "optimizer/learning_rate"
	seedVar         = "rng/seed"
)

// slotVar names slot slot of weight w.
func slotVar(slot string, w *Weight) string { return "optimizer/" + slot + "/" + w.Name() }

// optimizerVars declares the optimizer's variables in the store, fresh:
// the step counter at 0, the learning rate, and zero slots.
func (m *Model) optimizerVars(o Optimizer) error {
	st := m.st
	// Drop the state of an earlier Compile, whose optimizer may have had
	// other slots.
	for name := range st.vars {
		if isStateName(name) || strings.HasPrefix(name, "train/") || strings.HasPrefix(name, "eval/") {
			delete(st.vars, name)
		}
	}
	st.declare(iterationsVar, tile.Int64, tile.Shape{})
	if err := st.setI64(iterationsVar, []int64{0}); err != nil {
		return err
	}
	if o.base().schedule == nil {
		st.declare(learningRateVar, tile.Float32, tile.Shape{})
		if err := st.setF32(learningRateVar, []float32{float32(o.base().lr)}); err != nil {
			return err
		}
	}
	if sp, ok := o.(stepper); ok {
		for name, v := range sp.vars() {
			st.declare(name, tile.Float32, tile.Shape{})
			if err := st.setF32(name, []float32{float32(v)}); err != nil {
				return err
			}
		}
	}
	for _, w := range m.weights {
		if !w.trainable {
			continue
		}
		for _, slot := range o.slots() {
			st.declare(slotVar(slot, w), tile.Float32, w.shape)
			v := make([]float32, w.Size())
			if si, ok := o.(slotIniter); ok {
				for i := range v {
					v[i] = float32(si.slotInit(slot))
				}
			}
			if err := st.setF32(slotVar(slot, w), v); err != nil {
				return err
			}
		}
	}
	return nil
}

// buildUpdate adds the optimizer's update of every trainable weight, its
// slots and the step counter to c's graph.
func (m *Model) buildUpdate(c *callContext, o Optimizer, iter *tile.Tensor, weights []*Weight, grads []*tile.Tensor) {
	g := c.g
	b := o.base()
	s := &optStep{g: g, cache: map[string]*tile.Tensor{}}
	next := g.Add(iter, g.Scalar(1, tile.Int64))
	s.t = g.Cast(next, tile.Float32)
	if b.schedule != nil {
		s.lr = b.schedule.build(g, iter)
	} else {
		s.lr = g.Variable(learningRateVar, tile.Float32, tile.Shape{})
	}
	grads = b.clip(g, grads)
	if sp, ok := o.(stepper); ok {
		sp.step(s)
	}
	for i, w := range weights {
		v := c.v(w)
		x := v
		if b.weightDecay != 0 {
			x = g.Sub(x, g.Mul(g.Mul(x, s.scalar(b.weightDecay)), s.lr))
		}
		slotVars := make([]*tile.Tensor, len(o.slots()))
		for k, slot := range o.slots() {
			slotVars[k] = g.Variable(slotVar(slot, w), tile.Float32, w.shape)
		}
		nw, ns := o.apply(s, x, grads[i], slotVars)
		g.Update(v, nw)
		for k := range slotVars {
			g.Update(slotVars[k], ns[k])
		}
	}
	g.Update(iter, next)
}

// optimizerConfig describes an optimizer for checkpoints: its name and
// hyperparameters.
func optimizerConfig(o Optimizer) map[string]any {
	out := map[string]any{"name": o.Name()}
	for k, v := range o.base().cfg {
		out[k] = v
	}
	return out
}
