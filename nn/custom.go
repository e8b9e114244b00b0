package nn

import (
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/tartanml/tartan/tile"
)

// Layers of your own. A LayerDef is the public face of a layer: Build
// declares its weights and output shape, Call adds its computation to the
// step's tile graph. Custom wraps one as a Layer, which then works wherever
// a built-in one does: in Sequential and Functional models, in Fit,
// Evaluate and Predict (its computation is part of the compiled step, and
// its gradient comes from grad like every other), with callbacks, in
// Summary, in SaveWeights and checkpoints, and on every backend. Save and
// Load keep it too when its class is registered with RegisterLayer, as
// Keras's custom_objects does.

// LayerDef is a layer written outside this package.
//
// Build is called once, when the layer first joins a model, with the
// per-sample shapes of its inputs (without the batch dimension, as every
// layer sees them); it declares the weights through b and returns the
// per-sample output shape. Errors it returns, and the first error of
// b.AddWeight, are reported by the model constructor or Apply, naming the
// layer and its input shapes.
//
// Call is called every time a step's graph is built (each kind of step and
// batch size: training, evaluation, prediction), and once when the layer is
// built, on a graph of its own in inference mode with a placeholder batch of
// 2, so that its mistakes are reported by the model constructor. It gets
// the layer's inputs,
// float32 tensors whose first dimension is the batch, (c.BatchSize(),
// in[i]...); it returns the output, float32 of shape (c.BatchSize(),
// out...) with out the shape Build returned. It builds on c.Graph() with the
// tile builder (tile.ParseContraction, Graph.Mul, package op, …) and reads
// its weights with c.Weight. Errors are recorded on the graph, as tile
// builders do; a result of another shape is an error naming the layer.
//
// A LayerDef belongs to one layer: it usually keeps the *Weight values Build
// declared in its fields for Call to read. A layer with constructor
// arguments also implements LayerConfig, so that Save can record them and
// the factory given to RegisterLayer can rebuild it.
type LayerDef interface {
	Build(b *LayerBuilder, in []tile.Shape) (tile.Shape, error)
	Call(c *CallContext, in []*tile.Tensor) *tile.Tensor
}

// LayerConfig is implemented by a LayerDef that has constructor arguments:
// Config returns them, JSON-encodable, for the model's architecture. Load
// hands them, decoded from JSON (numbers as float64, lists as []any, objects
// as map[string]any), to the factory registered for the class. A LayerDef
// without it is saved with an empty config.
type LayerConfig interface {
	Config() map[string]any
}

// LayerFactory rebuilds a LayerDef from the config its LayerConfig returned
// when the model was saved (an empty map for a LayerDef without one).
type LayerFactory func(config map[string]any) (LayerDef, error)

// registry holds the registered layer classes and Lambda functions.
var registry = struct {
	sync.RWMutex
	layers  map[string]LayerFactory
	lambdas map[string]LambdaFunc
}{layers: map[string]LayerFactory{}, lambdas: map[string]LambdaFunc{}}

// RegisterLayer makes Load and LoadArchitecture able to rebuild layers of a
// custom class: they call factory with the layer's saved config. A program
// registers its classes once, before loading (an init function is a good
// place). The class name must be usable (letters, digits, _ . -, not
// starting with a digit), not one of the built-in classes and not already
// registered.
func RegisterLayer(className string, factory LayerFactory) error {
	if err := checkClassName(className); err != nil {
		return fmt.Errorf("nn: RegisterLayer: %w", err)
	}
	if factory == nil {
		return fmt.Errorf("nn: RegisterLayer %q: nil factory", className)
	}
	registry.Lock()
	defer registry.Unlock()
	if registry.layers[className] != nil {
		return fmt.Errorf("nn: RegisterLayer: class %q is already registered", className)
	}
	registry.layers[className] = factory
	return nil
}

// registeredLayer returns the factory of a class, or nil.
func registeredLayer(className string) LayerFactory {
	registry.RLock()
	defer registry.RUnlock()
	return registry.layers[className]
}

// checkClassName checks that a custom layer class can be written to and
// read from an architecture without being taken for a built-in one.
func checkClassName(className string) error {
	if !validLayerName(className) {
		return fmt.Errorf("class name %q is not usable (letters, digits, _ . -, not starting with a digit)", className)
	}
	if builtinClass(className) {
		return fmt.Errorf("%q is a built-in layer class; give the custom layer a class name of its own", className)
	}
	return nil
}

// builtinClass reports whether decodeLayer knows className by itself. It
// asks decodeLayer, so that a class added there is known here at once: a
// class it does not know reaches decodeCustom, which answers with an
// unknownClassError when the class is not registered either.
func builtinClass(className string) bool {
	if className == lambdaClass {
		return true
	}
	if registeredLayer(className) != nil {
		return false // RegisterLayer checked it
	}
	_, _, err := decodeLayer(archLayer{ClassName: className, Config: []byte("{}")})
	var unknown *unknownClassError
	return !errors.As(err, &unknown)
}

// unknownClassError is an architecture's layer class that is neither built
// in nor registered.
type unknownClassError struct{ class string }

func (e *unknownClassError) Error() string {
	return fmt.Sprintf("unknown layer class %q: it is not built in, and no custom layer of that class is registered; call nn.RegisterLayer(%q, factory) before loading", e.class, e.class)
}

// customConfig is a custom layer as its architecture records it: the name
// and trainable flag every layer has, and the LayerDef's own config.
type customConfig struct {
	layerCommon
	Config map[string]any `json:"config"`
}

// decodeCustom rebuilds a layer of a class decodeLayer does not know: a
// Lambda, or a class registered with RegisterLayer.
func decodeCustom(al archLayer) (Layer, *Node, error) {
	if al.ClassName == lambdaClass {
		return decodeLambda(al)
	}
	factory := registeredLayer(al.ClassName)
	if factory == nil {
		return nil, nil, &unknownClassError{al.ClassName}
	}
	var c customConfig
	if err := strictJSON(al.Config, &c); err != nil {
		return nil, nil, fmt.Errorf("config: %w", err)
	}
	if c.Config == nil {
		c.Config = map[string]any{}
	}
	def, err := factory(c.Config)
	if err != nil {
		return nil, nil, fmt.Errorf("the factory registered for class %q: %w", al.ClassName, err)
	}
	if def == nil {
		return nil, nil, fmt.Errorf("the factory registered for class %q returned a nil LayerDef", al.ClassName)
	}
	l := newCustom(al.ClassName, def, c.layerCommon, nil)
	if e := l.base().err; e != nil {
		return nil, nil, argumentError(l, e)
	}
	return l, nil, nil
}

// customLayer is a Layer around a LayerDef.
type customLayer struct {
	layerBase
	def LayerDef

	// Random's draws in the graph being built: each gets its own stream.
	mu        sync.Mutex
	drawGraph *tile.Graph
	draws     uint64
}

// Custom returns a layer of class className computed by def, which must be
// used by this layer only. The class name is the layer's type in Summary and
// its class in the saved architecture; the layer's automatic name is its
// snake case ("MyDense" → "my_dense"). It accepts the options Name and
// Trainable (Trainable(false) makes every weight of the layer
// non-trainable).
func Custom(className string, def LayerDef, opts ...LayerOption) Layer {
	class := className
	if !validLayerName(class) {
		class = "Custom"
	}
	s, err := newSettings(class, nil, opts)
	if err == nil {
		if e := checkClassName(className); e != nil {
			err = fmt.Errorf("nn: %s: %w", class, e)
		} else if def == nil {
			err = fmt.Errorf("nn: %s: nil LayerDef", class)
		}
	}
	return newCustom(class, def, common(s), err)
}

// LayerDefOf returns the LayerDef of a layer made by Custom (or rebuilt by
// Load from a registered class), nil for any other layer.
func LayerDefOf(l Layer) LayerDef {
	if c, ok := l.(*customLayer); ok {
		return c.def
	}
	return nil
}

func newCustom(class string, def LayerDef, cfg layerCommon, err error) Layer {
	return &customLayer{layerBase: newBase(class, cfg.Name, cfg.Trainable, err), def: def}
}

func (l *customLayer) build(in []tile.Shape) (tile.Shape, error) {
	b := &LayerBuilder{l: l}
	out, err := l.def.Build(b, cloneShapes(in))
	b.done = true
	if b.err != nil {
		return nil, b.err
	}
	if err != nil {
		return nil, err
	}
	for _, d := range out {
		if d < 1 {
			return nil, fmt.Errorf("Build returned the output shape %s, which has a dimension below 1", fmtShape(out))
		}
	}
	out = out.Clone()
	if err := l.dryRun(in, out); err != nil {
		return nil, err
	}
	return out, nil
}

// placeholderBatch is the batch size of the graphs on which layers are
// tried when they are built.
const placeholderBatch = 2

// dryRun calls the layer once, as an inference step would, on a graph of
// its own with a placeholder batch, so that a Call that fails or returns
// the wrong shape is reported when the model is built rather than when it
// first runs.
func (l *customLayer) dryRun(in []tile.Shape, out tile.Shape) error {
	g := tile.NewGraph("custom_layer_check")
	c := &callContext{g: g, vars: map[*Weight]*tile.Tensor{}, logits: map[*tile.Tensor]*logits{}}
	for i, w := range l.weights {
		c.vars[w] = g.Variable(fmt.Sprintf("w%d", i), tile.Float32, w.shape)
	}
	xs := make([]*tile.Tensor, len(in))
	for i, s := range in {
		xs[i] = g.Input(fmt.Sprintf("x%d", i), tile.Float32, batchShape(placeholderBatch, s))
	}
	l.callFor(c, xs, out)
	err := g.Err()
	if err == nil {
		return nil
	}
	var te *tile.Error
	if errors.As(err, &te) && te.Op == l.op() {
		err = errors.New(te.Msg) // the layer is named around it
	}
	return fmt.Errorf("checked in inference mode: %w", err)
}

func (l *customLayer) call(c *callContext, in []*tile.Tensor) *tile.Tensor {
	return l.callFor(c, in, l.outShape)
}

// callFor calls the layer, whose per-sample output shape is out.
func (l *customLayer) callFor(c *callContext, in []*tile.Tensor, out tile.Shape) *tile.Tensor {
	cc := &CallContext{c: c, l: l, batch: in[0].Dim(0)}
	return checkResult(c.g, l.op(), "Call", l.def.Call(cc, in), batchShape(cc.batch, out), "Build declared the output "+fmtShape(out))
}

// op is the name graph errors of the layer give as their op: the layer's
// name, or before it has one its class's default name.
func (l *customLayer) op() string {
	if l.name != "" {
		return l.name
	}
	return snakeCase(l.class)
}

// checkResult checks that a layer's function (what) returned a float32
// tensor of shape want on g, and records an error naming it otherwise.
// source says where want comes from: "Build declared the output (None, 2)".
func checkResult(g *tile.Graph, layer, what string, y *tile.Tensor, want tile.Shape, source string) *tile.Tensor {
	if g.Err() != nil {
		return y // the graph reports its first error
	}
	switch {
	case y == nil:
		return g.Errorf(layer, "%s returned nil", what)
	case y.Graph() != g:
		return g.Errorf(layer, "%s returned a tensor of another graph than its context's", what)
	case !y.Valid():
		return g.Errorf(layer, "%s returned an invalid tensor", what)
	case y.DType() != tile.Float32:
		return g.Errorf(layer, "%s returned %s values, want f32", what, y.DType())
	case !y.Shape().Equal(want):
		return g.Errorf(layer, "%s returned shape %s for a batch of %d, but %s", what, fmtDims(y.Shape()), want[0], source)
	}
	return y
}

func (l *customLayer) config() any {
	cfg := customConfig{layerCommon: layerCommon{Name: l.name, Trainable: l.trainable}, Config: map[string]any{}}
	if lc, ok := l.def.(LayerConfig); ok {
		if m := lc.Config(); m != nil {
			cfg.Config = m
		}
	}
	return cfg
}

// LayerBuilder is what a LayerDef's Build declares its weights through.
type LayerBuilder struct {
	l    *customLayer
	err  error // the first error of AddWeight
	done bool  // Build has returned
}

// AddWeight declares a weight of the layer, of shape shape (rank 0 for a
// scalar) and named name within the layer, so that the model calls it
// "layer/name". Its initial values come from init (GlorotUniform when nil,
// as Keras's add_weight defaults), drawn from the model's seed
// (Model.InitWeights) like a built-in layer's. A trainable weight receives
// the loss's gradient and every optimizer's update; a non-trainable one
// changes only through CallContext.Update (as batch normalisation's moving
// statistics do) or SetWeight. Either kind is saved, loaded and counted by
// Summary.
//
// AddWeight is for Build only. An error (a name that is not usable or is
// taken, a dimension below 1, a weight too large to exist) is kept, and the
// layer's build fails with the first one, whatever Build returns.
func (b *LayerBuilder) AddWeight(name string, shape tile.Shape, init Initializer, trainable bool) *Weight {
	fail := func(format string, args ...any) *Weight {
		if b.err == nil {
			b.err = fmt.Errorf("AddWeight %q: "+format, append([]any{name}, args...)...)
		}
		// A weight of no layer's list, so that Build can go on; the build
		// fails anyway.
		return &Weight{short: name, shape: shape.Clone(), init: Zeros(), layer: &layerBase{name: b.l.name}}
	}
	switch {
	case b.done:
		return fail("called after Build returned")
	case !validLayerName(name):
		return fail("the name is not usable (letters, digits, _ . -, not starting with a digit)")
	case slices.ContainsFunc(b.l.weights, func(w *Weight) bool { return w.short == name }):
		return fail("the layer already has a weight of that name")
	}
	for _, d := range shape {
		if d < 1 {
			return fail("shape %s has a dimension below 1", fmtDims(shape))
		}
	}
	if err := checkShapeStorage(shape); err != nil {
		return fail("shape %s is too large: %v", fmtDims(shape), err)
	}
	if init == nil {
		init = GlorotUniform()
	}
	return b.l.addWeight(name, shape, init, trainable)
}

// CallContext is what a LayerDef's Call sees of the step being built.
type CallContext struct {
	c     *callContext
	l     *customLayer
	batch int
}

// Graph returns the step's tile graph, on which Call builds its output.
func (c *CallContext) Graph() *tile.Graph { return c.c.g }

// Training reports whether the graph is a training step (Fit's), in which a
// layer may draw random numbers (Random) and update its non-trainable
// weights (Update); evaluation and prediction steps, Fit's validation
// included, are not.
func (c *CallContext) Training() bool { return c.c.training }

// BatchSize returns the number of samples of the step: the first dimension
// of every input and of the output. A model compiles one step per batch
// size it meets (Fit's last batch of an epoch may be smaller), so Call must
// not assume one.
func (c *CallContext) BatchSize() int { return c.batch }

// Weight returns the graph tensor of one of the layer's weights, declared
// by AddWeight: float32 of the weight's shape.
func (c *CallContext) Weight(w *Weight) *tile.Tensor {
	if err := c.own(w); err != nil {
		return c.c.g.Errorf(c.l.op(), "Weight: %v", err)
	}
	return c.c.v(w)
}

// own checks that w is a weight of the layer.
func (c *CallContext) own(w *Weight) error {
	if w == nil {
		return errors.New("nil weight")
	}
	if w.layer != &c.l.layerBase || !slices.Contains(c.l.weights, w) {
		return fmt.Errorf("%s is not a weight of layer %s (declare it with AddWeight in its Build)", w.Name(), c.l.op())
	}
	return nil
}

// weightName names one of the layer's weights, also before the layer is
// named.
func (c *CallContext) weightName(w *Weight) string { return c.l.op() + "/" + w.short }

// Random returns uniform float32 numbers in [0, 1) of the given shape,
// drawn on the device from the step's seed, for dropout-like layers: every
// training step, every layer and every call of Random in it draws anew, and
// a run is reproducible from its seed (Compile's Seed option), on every
// backend. Only training steps draw; elsewhere Random records an error, so
// Call checks Training first.
func (c *CallContext) Random(shape tile.Shape) *tile.Tensor {
	g := c.c.g
	if !c.c.training || c.c.seed == nil {
		return g.Errorf(c.l.op(), "Random draws only in training steps; check Training() first")
	}
	c.l.mu.Lock()
	if c.l.drawGraph != g {
		c.l.drawGraph, c.l.draws = g, 0
	}
	c.l.draws++
	k := c.l.draws
	c.l.mu.Unlock()
	// Built-in layers draw from stream numbers below 2³², one per layer;
	// a custom layer's draws live above, one range per layer.
	return g.Random(c.c.seed, tile.Float32, shape, c.l.stream<<32|k)
}

// Update gives a non-trainable weight of the layer a new value at the end
// of the training step (after the optimizer's update of the trainable ones),
// as batch normalisation moves its statistics. value is float32 of the
// weight's shape. Only training steps update; elsewhere, and for a
// trainable weight (which the optimizer updates), Update records an error.
func (c *CallContext) Update(w *Weight, value *tile.Tensor) {
	g := c.c.g
	if err := c.own(w); err != nil {
		g.Errorf(c.l.op(), "Update: %v", err)
		return
	}
	switch {
	case !c.c.training:
		g.Errorf(c.l.op(), "Update of %s: weights are updated only in training steps; check Training() first", c.weightName(w))
	case w.trainable:
		g.Errorf(c.l.op(), "Update of %s: the weight is trainable, so the optimizer updates it; declare it non-trainable", c.weightName(w))
	case !value.Valid() || value.Graph() != g:
		g.Errorf(c.l.op(), "Update of %s: the value is nil, invalid or of another graph", c.weightName(w))
	case value.DType() != tile.Float32 || !value.Shape().Equal(w.shape):
		g.Errorf(c.l.op(), "Update of %s: the value is %s%s, want f32%s", c.weightName(w), value.DType(), fmtDims(value.Shape()), fmtDims(w.shape))
	default:
		c.c.updates = append(c.c.updates, weightUpdate{w: w, value: value})
	}
}

// savable reports why the architecture of a model holding l cannot be
// written, or nil when it can.
func savable(l Layer) error {
	if ll, ok := l.(*lambdaLayer); ok && ll.function == "" {
		return fmt.Errorf("nn: layer %s runs a Go function, which cannot be saved; register the function with nn.RegisterLambda(name, fn) and make the layer with nn.RegisteredLambda(name), or save the weights alone with SaveWeights", layerDesc(l))
	}
	return nil
}
