package nn

import (
	"fmt"
	"slices"

	"github.com/tartanml/tartan/op"
	"github.com/tartanml/tartan/tile"
)

// activationNames lists the activations Activation accepts, by Keras name.
var activationNames = []string{"linear", "relu", "relu6", "sigmoid", "tanh", "softmax", "log_softmax",
	"elu", "gelu", "softplus", "leaky_relu", "silu", "swish"}

// checkActivation reports an error for an unknown activation name.
func checkActivation(name string) error {
	if name == "" || slices.Contains(activationNames, name) {
		return nil
	}
	return fmt.Errorf("unknown activation %q (want one of %v)", name, activationNames)
}

// activate applies the named activation to x. A softmax over the last axis
// or a sigmoid is recorded in c.logits, so that a cross-entropy loss on its output can be
// computed from x, stably.
func activate(c *callContext, name string, x *tile.Tensor) *tile.Tensor {
	g := c.g
	switch name {
	case "", "linear":
		return x
	case "relu":
		return op.ReLU(g, x)
	case "relu6":
		return g.Minimum(op.ReLU(g, x), g.ScalarLike(x, 6))
	case "sigmoid":
		y := op.Sigmoid(g, x)
		if y.Valid() {
			c.logits[y] = &logits{x: x}
		}
		return y
	case "tanh":
		return op.Tanh(g, x)
	case "softmax":
		y := op.Softmax(g, x, -1)
		if y.Valid() {
			c.logits[y] = &logits{x: x, softmax: true}
		}
		return y
	case "log_softmax":
		return op.LogSoftmax(g, x, -1)
	case "elu":
		return op.ELU(g, x, 1)
	case "gelu":
		return op.GELU(g, x, false)
	case "softplus":
		return op.Softplus(g, x)
	case "leaky_relu":
		return op.LeakyReLU(g, x, 0.2)
	case "silu", "swish":
		return g.Mul(x, op.Sigmoid(g, x))
	}
	return g.Errorf("activation", "unknown activation %q", name)
}

// ActivationLayer applies an activation function. It is both a layer (Keras's
// Activation layer) and a LayerOption that sets the activation of Dense or a
// convolution, so that Activation("relu") serves in either place.
type ActivationLayer struct {
	layerBase
	cfg activationConfig
}

type activationConfig struct {
	Name       string `json:"name"`
	Activation string `json:"activation"`
	Trainable  bool   `json:"trainable"`
}

// Activation returns an Activation layer, or, passed to another layer's
// constructor, that layer's activation. The names are Keras's: linear, relu,
// relu6, sigmoid, tanh, softmax, log_softmax, elu, gelu, softplus,
// leaky_relu, silu (or swish).
func Activation(name string, opts ...LayerOption) *ActivationLayer {
	s, err := newSettings("Activation", nil, opts)
	return newActivation(activationConfig{Name: s.name, Activation: name, Trainable: s.trainable}, err)
}

func newActivation(cfg activationConfig, err error) *ActivationLayer {
	l := &ActivationLayer{layerBase: newBase("Activation", cfg.Name, cfg.Trainable, err), cfg: cfg}
	if l.err == nil {
		if e := checkActivation(cfg.Activation); e != nil {
			l.err = fmt.Errorf("nn: Activation: %v", e)
		}
	}
	return l
}

func (l *ActivationLayer) applyLayer(s *layerSettings) {
	s.given = append(s.given, "activation")
	s.activation = l.cfg.Activation
}

func (l *ActivationLayer) build(in []tile.Shape) (tile.Shape, error) {
	return oneInput(l, in)
}

func (l *ActivationLayer) call(c *callContext, in []*tile.Tensor) *tile.Tensor {
	return activate(c, l.cfg.Activation, in[0])
}

func (l *ActivationLayer) config() any {
	cfg := l.cfg
	cfg.Name = l.name
	return cfg
}

// oneInput checks that a layer has a single input and returns its shape
// unchanged, for layers that keep the shape.
func oneInput(l Layer, in []tile.Shape) (tile.Shape, error) {
	if len(in) != 1 {
		return nil, fmt.Errorf("takes one input, got %d", len(in))
	}
	return in[0].Clone(), nil
}

// reluLayer is Keras's ReLU layer: max(x, 0), optionally capped at a maximum
// value and leaky below zero.
type reluLayer struct {
	layerBase
	cfg reluConfig
}

type reluConfig struct {
	Name          string   `json:"name"`
	MaxValue      *float64 `json:"max_value"`
	NegativeSlope float64  `json:"negative_slope"`
	Trainable     bool     `json:"trainable"`
}

// ReLU returns a ReLU layer; MaxValue and NegativeSlope configure it.
func ReLU(opts ...LayerOption) Layer {
	s, err := newSettings("ReLU", []string{"max_value", "negative_slope"}, opts)
	return newReLU(reluConfig{Name: s.name, MaxValue: s.maxValue, NegativeSlope: s.slope, Trainable: s.trainable}, err)
}

func newReLU(cfg reluConfig, err error) Layer {
	l := &reluLayer{layerBase: newBase("ReLU", cfg.Name, cfg.Trainable, err), cfg: cfg}
	if l.err == nil && cfg.MaxValue != nil && *cfg.MaxValue < 0 {
		l.err = fmt.Errorf("nn: ReLU: max_value %g is negative", *cfg.MaxValue)
	}
	if l.err == nil && cfg.NegativeSlope < 0 {
		l.err = fmt.Errorf("nn: ReLU: negative_slope %g is negative", cfg.NegativeSlope)
	}
	return l
}

func (l *reluLayer) build(in []tile.Shape) (tile.Shape, error) { return oneInput(l, in) }

func (l *reluLayer) call(c *callContext, in []*tile.Tensor) *tile.Tensor {
	g, x := c.g, in[0]
	var y *tile.Tensor
	if l.cfg.NegativeSlope != 0 {
		y = op.LeakyReLU(g, x, l.cfg.NegativeSlope)
	} else {
		y = op.ReLU(g, x)
	}
	if l.cfg.MaxValue != nil {
		y = g.Minimum(y, g.ScalarLike(x, *l.cfg.MaxValue))
	}
	return y
}

func (l *reluLayer) config() any {
	cfg := l.cfg
	cfg.Name = l.name
	return cfg
}

// softmaxLayer is Keras's Softmax layer.
type softmaxLayer struct {
	layerBase
	cfg softmaxConfig
}

type softmaxConfig struct {
	Name      string `json:"name"`
	Axis      int    `json:"axis"`
	Trainable bool   `json:"trainable"`
}

// Softmax returns a softmax layer over the last axis, or the one Axis names.
func Softmax(opts ...LayerOption) Layer {
	s, err := newSettings("Softmax", []string{"axis"}, opts)
	return newSoftmax(softmaxConfig{Name: s.name, Axis: s.axis, Trainable: s.trainable}, err)
}

func newSoftmax(cfg softmaxConfig, err error) Layer {
	return &softmaxLayer{layerBase: newBase("Softmax", cfg.Name, cfg.Trainable, err), cfg: cfg}
}

func (l *softmaxLayer) build(in []tile.Shape) (tile.Shape, error) {
	s, err := oneInput(l, in)
	if err != nil {
		return nil, err
	}
	if _, err := sampleAxis(l.cfg.Axis, len(s)); err != nil {
		return nil, err
	}
	return s, nil
}

func (l *softmaxLayer) call(c *callContext, in []*tile.Tensor) *tile.Tensor {
	x := in[0]
	y := op.Softmax(c.g, x, l.cfg.Axis)
	if y.Valid() && (l.cfg.Axis == -1 || l.cfg.Axis == x.Rank()-1) {
		c.logits[y] = &logits{x: x, softmax: true}
	}
	return y
}

func (l *softmaxLayer) config() any {
	cfg := l.cfg
	cfg.Name = l.name
	return cfg
}

// sampleAxis resolves an axis of the full (batch-including) tensor of a
// layer whose per-sample rank is rank, and rejects the batch axis.
func sampleAxis(axis, rank int) (int, error) {
	full := rank + 1
	a := axis
	if a < 0 {
		a += full
	}
	if a < 1 || a >= full {
		return 0, fmt.Errorf("axis %d is out of range for inputs of rank %d (the batch axis 0 cannot be used)", axis, full)
	}
	return a, nil
}
