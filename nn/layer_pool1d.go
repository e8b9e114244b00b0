package nn

import (
	"fmt"

	"github.com/tartanml/tartan/op"
	"github.com/tartanml/tartan/tile"
)

// pool1DLayer is Keras's MaxPooling1D and AveragePooling1D over inputs
// (batch, steps, channels).
type pool1DLayer struct {
	layerBase
	cfg poolConfig
	avg bool
}

// MaxPooling1D returns a layer taking the maximum over windows of poolSize
// steps of inputs (steps, channels), per channel. Strides defaults to the
// window size, as in Keras; Padding is "valid" by default.
func MaxPooling1D(poolSize int, opts ...LayerOption) Layer {
	return pool1DFromOptions("MaxPooling1D", poolSize, opts)
}

// AveragePooling1D returns a layer taking the mean over windows of poolSize
// steps, per channel, with MaxPooling1D's options. With "same" padding a
// window's mean is over its steps inside the input, as in Keras.
func AveragePooling1D(poolSize int, opts ...LayerOption) Layer {
	return pool1DFromOptions("AveragePooling1D", poolSize, opts)
}

func pool1DFromOptions(class string, poolSize int, opts []LayerOption) Layer {
	s, err := newSettings(class, []string{"strides", "padding"}, opts)
	return newPool1D(class, poolConfig{layerCommon: common(s), PoolSize: []int{poolSize}, Strides: s.strides, Padding: s.padding}, err)
}

func newPool1D(class string, cfg poolConfig, err error) Layer {
	l := &pool1DLayer{layerBase: newBase(class, cfg.Name, cfg.Trainable, err), avg: class == "AveragePooling1D"}
	var e1, e2 error
	cfg.PoolSize, e1 = spatial("pool size", cfg.PoolSize, 1, 2)
	if len(cfg.Strides) == 0 {
		cfg.Strides = append([]int(nil), cfg.PoolSize...)
	} else {
		cfg.Strides, e2 = spatial("strides", cfg.Strides, 1, 1)
	}
	if cfg.Padding == "" {
		cfg.Padding = "valid"
	}
	l.err = firstErr(l.err, wrapErr("nn: "+class+": ", firstErr(e1, e2)),
		check(cfg.Padding == "valid" || cfg.Padding == "same", "nn: %s: padding %q must be \"valid\" or \"same\"", class, cfg.Padding))
	l.cfg = cfg
	return l
}

func (l *pool1DLayer) build(in []tile.Shape) (tile.Shape, error) {
	s, err := oneInput(l, in)
	if err != nil {
		return nil, err
	}
	if len(s) != 2 {
		return nil, fmt.Errorf("needs inputs of rank 3 (batch, steps, channels), got rank %d", len(s)+1)
	}
	n, err := convOut(s[0], l.cfg.PoolSize[0], l.cfg.Strides[0], 1, l.cfg.Padding)
	if err != nil {
		return nil, fmt.Errorf("steps: %v", err)
	}
	return tile.Shape{n, s[1]}, nil
}

func (l *pool1DLayer) call(c *callContext, in []*tile.Tensor) *tile.Tensor {
	opt := op.PoolOptions{Size: l.cfg.PoolSize, Strides: l.cfg.Strides, Padding: op.Padding(l.cfg.Padding)}
	if l.avg {
		return op.AvgPool1D(c.g, in[0], opt)
	}
	return op.MaxPool1D(c.g, in[0], opt)
}

func (l *pool1DLayer) config() any {
	cfg := l.cfg
	cfg.Name = l.name
	return cfg
}

// globalPool1DLayer is Keras's GlobalAveragePooling1D and
// GlobalMaxPooling1D: (batch, steps, channels) to (batch, channels).
type globalPool1DLayer struct {
	layerBase
	cfg layerCommon
	avg bool
}

// GlobalAveragePooling1D returns a layer averaging each channel over the
// steps.
func GlobalAveragePooling1D(opts ...LayerOption) Layer {
	s, err := newSettings("GlobalAveragePooling1D", nil, opts)
	return newGlobalPool1D("GlobalAveragePooling1D", common(s), err)
}

// GlobalMaxPooling1D returns a layer taking each channel's maximum over the
// steps.
func GlobalMaxPooling1D(opts ...LayerOption) Layer {
	s, err := newSettings("GlobalMaxPooling1D", nil, opts)
	return newGlobalPool1D("GlobalMaxPooling1D", common(s), err)
}

func newGlobalPool1D(class string, cfg layerCommon, err error) Layer {
	return &globalPool1DLayer{layerBase: newBase(class, cfg.Name, cfg.Trainable, err), cfg: cfg, avg: class == "GlobalAveragePooling1D"}
}

func (l *globalPool1DLayer) build(in []tile.Shape) (tile.Shape, error) {
	s, err := oneInput(l, in)
	if err != nil {
		return nil, err
	}
	if len(s) != 2 || s[0] == 0 {
		return nil, fmt.Errorf("needs non-empty inputs of rank 3 (batch, steps, channels), got %s", fmtShape(s))
	}
	return tile.Shape{s[1]}, nil
}

func (l *globalPool1DLayer) call(c *callContext, in []*tile.Tensor) *tile.Tensor {
	if l.avg {
		return op.Mean(c.g, in[0], []int{1}, false)
	}
	return op.Max(c.g, in[0], []int{1}, false)
}

func (l *globalPool1DLayer) config() any {
	cfg := l.cfg
	cfg.Name = l.name
	return cfg
}
