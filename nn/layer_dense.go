package nn

import (
	"fmt"

	"github.com/tartanml/tartan/op"
	"github.com/tartanml/tartan/tile"
)

// layerCommon holds the configuration every layer has; configs embed it so
// that JSON flattens it into theirs.
type layerCommon struct {
	Name      string `json:"name"`
	Trainable bool   `json:"trainable"`
}

// common returns the name and trainable flag from settings s.
func common(s *layerSettings) layerCommon {
	return layerCommon{Name: s.name, Trainable: s.trainable}
}

// initOr returns the spec of i, or of def when i is nil.
func initOr(i, def Initializer) initSpec {
	if i == nil {
		return def.spec()
	}
	return i.spec()
}

// denseLayer is Keras's Dense: activation(x·kernel + bias) along the last
// axis.
type denseLayer struct {
	layerBase
	cfg              denseConfig
	kernelInit, bias Initializer
	k, b             *Weight
}

type denseConfig struct {
	layerCommon
	Units             int      `json:"units"`
	Activation        string   `json:"activation"`
	UseBias           bool     `json:"use_bias"`
	KernelInitializer initSpec `json:"kernel_initializer"`
	BiasInitializer   initSpec `json:"bias_initializer"`
}

// Dense returns a densely connected layer of the given number of units. It
// accepts the options Activation, UseBias, KernelInitializer and
// BiasInitializer. Its kernel is (in, units), glorot-uniform by default; its
// bias is (units), zeros by default. As in Keras, it applies to the last
// axis of its input: on samples of shape (28, 28, 1) it gives (28, 28,
// units), one output per pixel; a Flatten layer before it makes one output
// per sample (Fit and Evaluate say so when targets do not suit such an
// output).
func Dense(units int, opts ...LayerOption) Layer {
	s, err := newSettings("Dense", []string{"activation", "use_bias", "kernel_initializer", "bias_initializer"}, opts)
	return newDense(denseConfig{layerCommon: common(s), Units: units, Activation: s.activation, UseBias: s.useBias,
		KernelInitializer: initOr(s.kernelInit, GlorotUniform()), BiasInitializer: initOr(s.biasInit, Zeros())}, err)
}

func newDense(cfg denseConfig, err error) Layer {
	l := &denseLayer{layerBase: newBase("Dense", cfg.Name, cfg.Trainable, err), cfg: cfg}
	l.err = firstErr(l.err,
		check(cfg.Units >= 1, "nn: Dense: units %d must be positive", cfg.Units),
		wrapErr("nn: Dense: ", checkActivation(cfg.Activation)))
	l.kernelInit, l.bias, l.err = resolveInits(l.err, "Dense", cfg.KernelInitializer, cfg.BiasInitializer)
	return l
}

func (l *denseLayer) build(in []tile.Shape) (tile.Shape, error) {
	s, err := oneInput(l, in)
	if err != nil {
		return nil, err
	}
	if len(s) < 1 {
		return nil, fmt.Errorf("needs inputs with a feature axis")
	}
	l.k = l.addWeight("kernel", tile.Shape{s[len(s)-1], l.cfg.Units}, l.kernelInit, true)
	if l.cfg.UseBias {
		l.b = l.addWeight("bias", tile.Shape{l.cfg.Units}, l.bias, true)
	}
	s[len(s)-1] = l.cfg.Units
	return s, nil
}

func (l *denseLayer) call(c *callContext, in []*tile.Tensor) *tile.Tensor {
	var b *tile.Tensor
	if l.b != nil {
		b = c.v(l.b)
	}
	return activate(c, l.cfg.Activation, op.Dense(c.g, in[0], c.v(l.k), b))
}

func (l *denseLayer) config() any {
	cfg := l.cfg
	cfg.Name = l.name
	return cfg
}

// check returns an error made from format and args when ok is false.
func check(ok bool, format string, args ...any) error {
	if ok {
		return nil
	}
	return fmt.Errorf(format, args...)
}

// wrapErr prefixes err's message, keeping nil as nil.
func wrapErr(prefix string, err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("%s%w", prefix, err)
}

// firstErr returns the first non-nil error.
func firstErr(errs ...error) error {
	for _, e := range errs {
		if e != nil {
			return e
		}
	}
	return nil
}

// resolveInits turns a layer's kernel and bias initializer specs into
// initializers, keeping an earlier error.
func resolveInits(err error, class string, kernel, bias initSpec) (Initializer, Initializer, error) {
	k, kerr := initializerFromSpec(kernel)
	b, berr := initializerFromSpec(bias)
	if err != nil {
		return k, b, err
	}
	if kerr != nil {
		return k, b, fmt.Errorf("nn: %s: kernel_initializer: %w", class, kerr)
	}
	if berr != nil {
		return k, b, fmt.Errorf("nn: %s: bias_initializer: %w", class, berr)
	}
	return k, b, nil
}
