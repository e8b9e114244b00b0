package nn

import (
	"fmt"
	"slices"
	"strings"

	"github.com/tartanml/tartan/tile"
)

// Optimizer updates the trainable weights from their gradients, inside the
// training step's graph, with Keras's semantics: SGD, Adam, AdamW and
// RMSprop. Every optimizer has a learning rate, constant or following a
// Schedule of the step, an optional decoupled weight decay applied before
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
	cfg         map[string]any // hyperparameters, for checkpoints and errors
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

// newOptimizerBase applies opts, checks that each is one the optimizer
// accepts (every optimizer accepts WeightDecay and LRSchedule) and checks
// the learning rate.
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
		if n != "weight_decay" && n != "schedule" && !slices.Contains(allowed, n) {
			all := []string{"WeightDecay", "LRSchedule"}
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
	for _, w := range m.weights {
		if !w.trainable {
			continue
		}
		for _, slot := range o.slots() {
			st.declare(slotVar(slot, w), tile.Float32, w.shape)
			if err := st.setF32(slotVar(slot, w), make([]float32, w.Size())); err != nil {
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
