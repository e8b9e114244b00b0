package nn

import (
	"fmt"
	"slices"
	"strings"
	"unicode"

	"github.com/tartanml/tartan/tile"
)

// Layer is one building block of a model: it declares its weights from the
// shapes of its inputs and adds its computation to a tile graph. Shapes seen
// by a layer are per sample, without the batch dimension, as in Keras.
//
// A layer gets its name when it joins a model (unless the Name option gave it
// one), following Keras: the snake-case class name, then _1, _2, … for later
// layers of the same class. Its weights are called "layer/weight", such as
// "conv2d/kernel".
//
// Constructors never fail outright: a layer built from bad arguments carries
// the error, and the model constructor or Apply that receives it returns it.
type Layer interface {
	// Name returns the layer's name, or "" before it joins a model when no
	// name was given.
	Name() string
	// ClassName returns Keras's class name, such as "Conv2D".
	ClassName() string
	// Weights returns the layer's weights once it is built.
	Weights() []*Weight

	base() *layerBase
	// build resolves the output shape from the input shapes and declares
	// the weights. It is called once per layer.
	build(in []tile.Shape) (tile.Shape, error)
	// call adds the layer's computation to c's graph. Errors are recorded on
	// the graph.
	call(c *callContext, in []*tile.Tensor) *tile.Tensor
	// config returns the layer's constructor arguments, for architecture
	// JSON.
	config() any
}

// multiOutputLayer is a layer whose calls can give several outputs, such as
// a recurrent layer with return_state. Its build returns the first output's
// shape, and call its first output.
type multiOutputLayer interface {
	Layer
	// extraOutputs returns the per-sample shapes of the outputs after the
	// first, from the configuration alone; none when a call gives one
	// output.
	extraOutputs() []tile.Shape
	// callAll adds one call's computation to c's graph and returns every
	// output, 1 + len(extraOutputs()) of them.
	callAll(c *callContext, in []*tile.Tensor) []*tile.Tensor
}

// layerBase holds what every layer has.
type layerBase struct {
	name      string
	class     string
	err       error
	built     bool
	inShapes  []tile.Shape
	outShape  tile.Shape
	weights   []*Weight
	trainable bool
	// stream tells apart the random draws of different layers (Dropout)
	// under one seed; the model assigns it.
	stream uint64
}

func (b *layerBase) Name() string       { return b.name }
func (b *layerBase) ClassName() string  { return b.class }
func (b *layerBase) Weights() []*Weight { return b.weights }
func (b *layerBase) base() *layerBase   { return b }

// addWeight declares a weight of the layer. Its full name is set when the
// layer is named.
func (b *layerBase) addWeight(short string, shape tile.Shape, init Initializer, trainable bool) *Weight {
	w := &Weight{short: short, shape: shape.Clone(), init: init, trainable: trainable && b.trainable, layer: b}
	b.weights = append(b.weights, w)
	return w
}

// Weight is a variable of a layer: a kernel, a bias, a batch-normalisation
// statistic. Trainable weights receive gradients; the others (moving means
// and variances, frozen layers) are updated otherwise or not at all.
type Weight struct {
	short     string
	shape     tile.Shape
	init      Initializer
	trainable bool
	layer     *layerBase
}

// Name returns the weight's full name, such as "conv2d/kernel".
func (w *Weight) Name() string { return w.layer.name + "/" + w.short }

// Shape returns the weight's shape.
func (w *Weight) Shape() []int { return w.shape.Clone() }

// Size returns the number of elements.
func (w *Weight) Size() int { return w.shape.Size() }

// Trainable reports whether the weight receives gradient updates.
func (w *Weight) Trainable() bool { return w.trainable }

// snakeCase turns a Keras class name into its default layer name the way
// Keras does: "Conv2D" → "conv2d", "MaxPooling2D" → "max_pooling2d",
// "ReLU" → "re_lu".
func snakeCase(class string) string {
	r := []rune(class)
	var b strings.Builder
	for i, c := range r {
		if unicode.IsUpper(c) && i > 0 {
			prev := r[i-1]
			nextLower := i+1 < len(r) && unicode.IsLower(r[i+1])
			if unicode.IsLower(prev) || (unicode.IsUpper(prev) && nextLower) {
				b.WriteByte('_')
			}
		}
		b.WriteRune(unicode.ToLower(c))
	}
	return b.String()
}

// callContext is what a layer's call sees: the graph, the mode, the graph
// tensors of the weights, and where to record side effects.
type callContext struct {
	g        *tile.Graph
	training bool
	vars     map[*Weight]*tile.Tensor
	// seed is the scalar i64 dropout key of the current step; nil in
	// inference graphs.
	seed *tile.Tensor
	// updates are non-gradient weight updates of a training step, such as
	// batch normalisation's moving statistics.
	updates []weightUpdate
	// logits maps the output of a softmax to the softmax's input, so that a
	// cross-entropy loss can start from logits, which is stable.
	logits map[*tile.Tensor]*logits
	// masks maps a tensor to its step mask (see setMask); nil until a
	// layer masks steps.
	masks map[*tile.Tensor]*tile.Tensor
}

// weightUpdate is a new value for a weight at the end of a training step.
type weightUpdate struct {
	w     *Weight
	value *tile.Tensor
}

// v returns the graph tensor of weight w.
func (c *callContext) v(w *Weight) *tile.Tensor { return c.vars[w] }

// LayerOption configures a layer. Each layer accepts the options Keras's
// constructor has arguments for and reports any other as an error.
type LayerOption interface {
	applyLayer(*layerSettings)
}

// layerSettings is what layer options set.
type layerSettings struct {
	given       []string // option names, in order
	name        string
	activation  string
	padding     string
	strides     []int
	dilation    []int
	kernelShape []int
	poolShape   []int
	useBias     bool
	kernelInit  Initializer
	biasInit    Initializer
	momentum    float64
	epsilon     float64
	axis        int
	depthMult   int
	groups      int
	center      bool
	scale       bool
	trainable   bool
	maxValue    *float64
	slope       float64
	kernelReg   Regularizer
	biasReg     Regularizer
	ext         layerExt    // the options of layer_options.go
	rnn         rnnSettings // the options of layer_recurrent.go
}

// layerOption is a LayerOption that sets one field.
type layerOption struct {
	name string
	set  func(*layerSettings)
}

func (o layerOption) applyLayer(s *layerSettings) {
	s.given = append(s.given, o.name)
	o.set(s)
}

// newSettings applies opts over the defaults and checks that every option
// given is one the layer class accepts.
func newSettings(class string, allowed []string, opts []LayerOption) (*layerSettings, error) {
	s := &layerSettings{useBias: true, center: true, scale: true, trainable: true, axis: -1, depthMult: 1, groups: 1}
	for _, o := range opts {
		if o == nil {
			return s, fmt.Errorf("nn: %s: nil option", class)
		}
		o.applyLayer(s)
	}
	for _, n := range s.given {
		if n != "name" && n != "trainable" && !slices.Contains(allowed, n) {
			return s, fmt.Errorf("nn: %s: option %s does not apply (it accepts %s)", class, optionTitle(n), acceptList(allowed))
		}
	}
	return s, nil
}

func acceptList(allowed []string) string {
	all := []string{"Name", "Trainable"}
	for _, a := range allowed {
		all = append(all, optionTitle(a))
	}
	return strings.Join(all, ", ")
}

// optionTitle turns an option's internal name into its constructor's name.
func optionTitle(n string) string {
	parts := strings.Split(n, "_")
	for i, p := range parts {
		parts[i] = strings.ToUpper(p[:1]) + p[1:]
	}
	return strings.Join(parts, "")
}

// given reports whether option n was given.
func (s *layerSettings) has(n string) bool { return slices.Contains(s.given, n) }

// Name gives a layer an explicit name instead of Keras's automatic one.
func Name(name string) LayerOption {
	return layerOption{"name", func(s *layerSettings) { s.name = name }}
}

// Trainable(false) freezes a layer: its weights get no gradient updates.
func Trainable(on bool) LayerOption {
	return layerOption{"trainable", func(s *layerSettings) { s.trainable = on }}
}

// Padding sets a convolution's or pooling window's padding: "valid" (the
// default) or "same".
func Padding(p string) LayerOption {
	return layerOption{"padding", func(s *layerSettings) { s.padding = strings.ToLower(p) }}
}

// Strides sets a window's strides: one value for every spatial dimension or
// one per dimension.
func Strides(st ...int) LayerOption {
	return layerOption{"strides", func(s *layerSettings) { s.strides = append([]int(nil), st...) }}
}

// DilationRate sets a convolution's dilation: one value for every spatial
// dimension or one per dimension.
func DilationRate(d ...int) LayerOption {
	return layerOption{"dilation_rate", func(s *layerSettings) { s.dilation = append([]int(nil), d...) }}
}

// KernelShape replaces a convolution's square kernel size with one size per
// spatial dimension, such as KernelShape(3, 5).
func KernelShape(k ...int) LayerOption {
	return layerOption{"kernel_shape", func(s *layerSettings) { s.kernelShape = append([]int(nil), k...) }}
}

// PoolShape replaces a pooling layer's square window with one size per
// spatial dimension.
func PoolShape(k ...int) LayerOption {
	return layerOption{"pool_shape", func(s *layerSettings) { s.poolShape = append([]int(nil), k...) }}
}

// UseBias turns a layer's bias on (the default) or off.
func UseBias(on bool) LayerOption {
	return layerOption{"use_bias", func(s *layerSettings) { s.useBias = on }}
}

// KernelInitializer sets how a layer's kernel (or embedding table) is
// initialised.
func KernelInitializer(i Initializer) LayerOption {
	return layerOption{"kernel_initializer", func(s *layerSettings) { s.kernelInit = i }}
}

// KernelRegularizer adds a penalty on a Dense, Conv1D or Conv2D layer's
// kernel to the training loss (see Regularizer).
func KernelRegularizer(r Regularizer) LayerOption {
	return layerOption{"kernel_regularizer", func(s *layerSettings) { s.kernelReg = r }}
}

// BiasRegularizer adds a penalty on a Dense, Conv1D or Conv2D layer's bias
// to the training loss (see Regularizer).
func BiasRegularizer(r Regularizer) LayerOption {
	return layerOption{"bias_regularizer", func(s *layerSettings) { s.biasReg = r }}
}

// BiasInitializer sets how a layer's bias is initialised.
func BiasInitializer(i Initializer) LayerOption {
	return layerOption{"bias_initializer", func(s *layerSettings) { s.biasInit = i }}
}

// Axis sets the axis a layer works along (Softmax, Concatenate,
// LayerNormalization), counted in the full tensor including the batch
// dimension; negative counts from the end. The default is -1.
func Axis(a int) LayerOption {
	return layerOption{"axis", func(s *layerSettings) { s.axis = a }}
}

// DepthMultiplier sets how many output channels DepthwiseConv2D makes from
// each input channel.
func DepthMultiplier(m int) LayerOption {
	return layerOption{"depth_multiplier", func(s *layerSettings) { s.depthMult = m }}
}

// Groups splits a convolution's channels into groups.
func Groups(n int) LayerOption {
	return layerOption{"groups", func(s *layerSettings) { s.groups = n }}
}

// Center turns a normalisation layer's offset (beta) on or off.
func Center(on bool) LayerOption {
	return layerOption{"center", func(s *layerSettings) { s.center = on }}
}

// Scale turns a normalisation layer's scale (gamma) on or off.
func Scale(on bool) LayerOption {
	return layerOption{"scale", func(s *layerSettings) { s.scale = on }}
}

// MaxValue caps a ReLU layer's output.
func MaxValue(v float64) LayerOption {
	return layerOption{"max_value", func(s *layerSettings) { s.maxValue = &v }}
}

// NegativeSlope makes a ReLU layer leaky: x·slope below zero.
func NegativeSlope(v float64) LayerOption {
	return layerOption{"negative_slope", func(s *layerSettings) { s.slope = v }}
}

// MomentumOption is the momentum of BatchNormalization's moving statistics
// or of an optimizer (SGD, RMSprop); Momentum makes one.
type MomentumOption float64

// Momentum sets BatchNormalization's moving-average momentum (default 0.99)
// or an SGD or RMSprop optimizer's momentum (default 0).
func Momentum(m float64) MomentumOption { return MomentumOption(m) }

func (m MomentumOption) applyLayer(s *layerSettings) {
	s.given = append(s.given, "momentum")
	s.momentum = float64(m)
}

func (m MomentumOption) applyOptimizer(s *optimizerSettings) {
	s.given = append(s.given, "momentum")
	s.momentum = float64(m)
}

// EpsilonOption is the small constant of a normalisation layer or an
// optimizer; Epsilon makes one.
type EpsilonOption float64

// Epsilon sets a normalisation layer's variance epsilon (default 1e-3) or an
// optimizer's epsilon (default 1e-7).
func Epsilon(e float64) EpsilonOption { return EpsilonOption(e) }

func (e EpsilonOption) applyLayer(s *layerSettings) {
	s.given = append(s.given, "epsilon")
	s.epsilon = float64(e)
}

func (e EpsilonOption) applyOptimizer(s *optimizerSettings) {
	s.given = append(s.given, "epsilon")
	s.epsilon = float64(e)
}

// newBase returns the base of a layer of class with the given name ("" for
// an automatic one) and the error met while reading its options, if any.
func newBase(class, name string, trainable bool, err error) layerBase {
	b := layerBase{class: class, name: name, err: err, trainable: trainable}
	if err == nil && name != "" && !validLayerName(name) {
		b.err = fmt.Errorf("nn: %s: name %q is not usable (letters, digits, _ . -, not starting with a digit)", class, name)
	}
	return b
}

// validLayerName reports whether name can prefix weight names in graphs and
// files.
func validLayerName(name string) bool {
	if name == "" || (name[0] >= '0' && name[0] <= '9') {
		return false
	}
	for _, c := range name {
		if !(c == '_' || c == '.' || c == '-' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}

// spatial expands a per-dimension option to rank values: none means def,
// one value applies to every dimension. Values must be positive.
func spatial(what string, v []int, rank, def int) ([]int, error) {
	out := make([]int, rank)
	switch len(v) {
	case 0:
		for i := range out {
			out[i] = def
		}
	case 1:
		for i := range out {
			out[i] = v[0]
		}
	case rank:
		copy(out, v)
	default:
		return nil, fmt.Errorf("%s %v: want 1 or %d values", what, v, rank)
	}
	for _, x := range out {
		if x < 1 {
			return nil, fmt.Errorf("%s %v: values must be positive", what, v)
		}
	}
	return out, nil
}

// fmtShape formats a per-sample shape as Keras prints a batch shape:
// (None, 28, 28, 1).
func fmtShape(s tile.Shape) string {
	parts := []string{"None"}
	for _, d := range s {
		parts = append(parts, fmt.Sprint(d))
	}
	return "(" + strings.Join(parts, ", ") + ")"
}

// fmtDims formats a per-sample shape as (28, 28, 1).
func fmtDims(s []int) string {
	parts := make([]string, len(s))
	for i, d := range s {
		parts[i] = fmt.Sprint(d)
	}
	if len(parts) == 1 {
		return "(" + parts[0] + ",)"
	}
	return "(" + strings.Join(parts, ", ") + ")"
}

// batchShape prepends the batch dimension n to a per-sample shape.
func batchShape(n int, s tile.Shape) tile.Shape {
	return append(tile.Shape{n}, s...)
}
