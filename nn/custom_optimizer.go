package nn

import (
	"fmt"

	"github.com/tartanml/tartan/tile"
)

// OptimizerDef is an optimizer written outside this package. Its update
// runs inside the compiled training step, as the built-in optimizers' do:
// Apply builds, on the step's graph, each trainable weight's new value from
// the weight, its gradient and its slots.
//
// Slots names the slot variables every trainable weight gets (none for
// plain gradient descent, "velocity" for momentum, …): each has the
// weight's shape, starts at zero and is kept in checkpoints as
// "optimizer/<slot>/<weight>". Slots is called once, by CustomOptimizer.
//
// Apply is called once per trainable weight when a training step is built.
// w is the weight (after the optimizer's WeightDecay, if any, is applied),
// grad the loss's gradient with respect to it and slots its slot
// variables, in the order Slots named them, all float32 of the weight's
// shape. It returns the weight's new value and the slots' new values, in
// the same order and shapes; s gives the step number and the learning
// rate. Errors are recorded on s.Graph(), as tile builders do.
type OptimizerDef interface {
	Slots() []string
	Apply(s *OptimizerStep, w, grad *tile.Tensor, slots []*tile.Tensor) (*tile.Tensor, []*tile.Tensor)
}

// OptimizerStep is what an OptimizerDef's Apply sees of the training step.
type OptimizerStep struct {
	s *optStep
}

// Graph returns the training step's graph.
func (s *OptimizerStep) Graph() *tile.Graph { return s.s.g }

// Step returns the number of this update, counting from 1 (the model's
// Iterations + 1), as a float32 scalar, as bias corrections use it.
func (s *OptimizerStep) Step() *tile.Tensor { return s.s.t }

// LearningRate returns this step's learning rate, a float32 scalar: the
// constant given to CustomOptimizer (which a LearningRateScheduler callback
// may change between epochs) or its LRSchedule's value at this step.
func (s *OptimizerStep) LearningRate() *tile.Tensor { return s.s.lr }

// Shared returns a value computed once per step for every weight, such as a
// bias-corrected learning rate: the first call with a key builds it with
// build, later calls of the same step return it.
func (s *OptimizerStep) Shared(key string, build func() *tile.Tensor) *tile.Tensor {
	k := "custom/" + key
	if v, ok := s.s.cache[k]; ok {
		return v
	}
	v := build()
	s.s.cache[k] = v
	return v
}

// customOptimizer is an Optimizer around an OptimizerDef.
type customOptimizer struct {
	optimizerBase
	def       OptimizerDef
	slotNames []string
}

// CustomOptimizer returns an optimizer called name (its Name in messages
// and checkpoints) with learning rate lr, updating the weights as def
// says. It accepts the options every optimizer has, WeightDecay and
// LRSchedule; the learning rate is the framework's, so that schedules,
// the LearningRateScheduler callback and checkpoints treat it as a built-in
// optimizer's. A def that also has a method Config() map[string]any adds
// its hyperparameters to the optimizer's description in checkpoints.
func CustomOptimizer(name string, lr float64, def OptimizerDef, opts ...OptimizerOption) Optimizer {
	o := &customOptimizer{optimizerBase: newOptimizerBase(name, lr, nil, opts, &optimizerSettings{}), def: def}
	if o.err != nil {
		return o
	}
	switch {
	case !validLayerName(name):
		o.err = fmt.Errorf("nn: CustomOptimizer: name %q is not usable (letters, digits, _ . -, not starting with a digit)", name)
		return o
	case def == nil:
		o.err = fmt.Errorf("nn: %s: nil OptimizerDef", name)
		return o
	}
	seen := map[string]bool{}
	for _, slot := range def.Slots() {
		switch {
		case !validLayerName(slot):
			o.err = fmt.Errorf("nn: %s: slot name %q is not usable (letters, digits, _ . -, not starting with a digit)", name, slot)
			return o
		case seen[slot]:
			o.err = fmt.Errorf("nn: %s: slot %q is named twice", name, slot)
			return o
		}
		seen[slot] = true
		o.slotNames = append(o.slotNames, slot)
	}
	if c, ok := def.(interface{ Config() map[string]any }); ok {
		for k, v := range c.Config() {
			if _, taken := o.cfg[k]; !taken && k != "name" {
				o.cfg[k] = v
			}
		}
	}
	return o
}

func (o *customOptimizer) slots() []string { return o.slotNames }

func (o *customOptimizer) apply(s *optStep, w, grad *tile.Tensor, slots []*tile.Tensor) (*tile.Tensor, []*tile.Tensor) {
	g := s.g
	nw, ns := o.def.Apply(&OptimizerStep{s}, w, grad, slots)
	// buildUpdate takes one new value per slot whatever Apply returned.
	out := make([]*tile.Tensor, len(slots))
	fail := func(format string, args ...any) (*tile.Tensor, []*tile.Tensor) {
		bad := g.Errorf(o.name, format, args...)
		for i := range out {
			out[i] = bad
		}
		return bad, out
	}
	if g.Err() != nil {
		return fail("")
	}
	check := func(what string, v *tile.Tensor) string {
		switch {
		case v == nil:
			return what + " is nil"
		case v.Graph() != g:
			return what + " belongs to another graph than the step's"
		case !v.Valid():
			return what + " is an invalid tensor"
		case v.DType() != tile.Float32 || !v.Shape().Equal(w.Shape()):
			return fmt.Sprintf("%s is %s%s, want f32%s as the weight", what, v.DType(), fmtDims(v.Shape()), fmtDims(w.Shape()))
		}
		return ""
	}
	if msg := check("the new weight", nw); msg != "" {
		return fail("Apply: %s", msg)
	}
	if len(ns) != len(slots) {
		return fail("Apply returned %d slot values for the %d slots %v", len(ns), len(slots), o.slotNames)
	}
	for i, v := range ns {
		if msg := check(fmt.Sprintf("the new value of slot %q", o.slotNames[i]), v); msg != "" {
			return fail("Apply: %s", msg)
		}
		out[i] = v
	}
	return nw, out
}
