package nn

import (
	"fmt"

	"github.com/tartanml/tartan/op"
	"github.com/tartanml/tartan/tile"
)

// poolLayer is Keras's MaxPooling2D and AveragePooling2D.
type poolLayer struct {
	layerBase
	cfg poolConfig
	avg bool
}

type poolConfig struct {
	layerCommon
	PoolSize []int  `json:"pool_size"`
	Strides  []int  `json:"strides"`
	Padding  string `json:"padding"`
}

// MaxPooling2D returns a layer taking the maximum over square windows of the
// given size (PoolShape sets another shape), per channel. Strides default to
// the window size, as in Keras; Padding is "valid" by default.
func MaxPooling2D(poolSize int, opts ...LayerOption) Layer {
	return poolFromOptions("MaxPooling2D", poolSize, opts)
}

// AveragePooling2D returns a layer taking the mean over square windows of
// the given size, per channel, with MaxPooling2D's options. With "same"
// padding a window's mean is over its cells inside the input, as in Keras.
func AveragePooling2D(poolSize int, opts ...LayerOption) Layer {
	return poolFromOptions("AveragePooling2D", poolSize, opts)
}

func poolFromOptions(class string, poolSize int, opts []LayerOption) Layer {
	s, err := newSettings(class, []string{"pool_shape", "strides", "padding"}, opts)
	ps := s.poolShape
	if ps == nil {
		ps = []int{poolSize}
	}
	return newPool(class, poolConfig{layerCommon: common(s), PoolSize: ps, Strides: s.strides, Padding: s.padding}, err)
}

func newPool(class string, cfg poolConfig, err error) Layer {
	l := &poolLayer{layerBase: newBase(class, cfg.Name, cfg.Trainable, err), avg: class == "AveragePooling2D"}
	var e1, e2 error
	cfg.PoolSize, e1 = spatial("pool size", cfg.PoolSize, 2, 2)
	if len(cfg.Strides) == 0 {
		cfg.Strides = append([]int(nil), cfg.PoolSize...)
	} else {
		cfg.Strides, e2 = spatial("strides", cfg.Strides, 2, 1)
	}
	if cfg.Padding == "" {
		cfg.Padding = "valid"
	}
	l.err = firstErr(l.err, wrapErr("nn: "+class+": ", firstErr(e1, e2)),
		check(cfg.Padding == "valid" || cfg.Padding == "same", "nn: %s: padding %q must be \"valid\" or \"same\"", class, cfg.Padding))
	l.cfg = cfg
	return l
}

func (l *poolLayer) build(in []tile.Shape) (tile.Shape, error) {
	s, err := oneInput(l, in)
	if err != nil {
		return nil, err
	}
	if len(s) != 3 {
		return nil, fmt.Errorf("needs inputs of rank 4 (batch, height, width, channels), got rank %d", len(s)+1)
	}
	out := tile.Shape{0, 0, s[2]}
	for d := range 2 {
		n, err := convOut(s[d], l.cfg.PoolSize[d], l.cfg.Strides[d], 1, l.cfg.Padding)
		if err != nil {
			return nil, fmt.Errorf("spatial dimension %d: %v", d+1, err)
		}
		out[d] = n
	}
	return out, nil
}

// call pools with op.AvgPool2D or op.MaxPool2D, in training as in
// inference. Max pooling's gradient goes to the first maximum of each window
// in row-major order, as in TensorFlow (and so Keras) and PyTorch, which
// matters where inputs tie (flat image regions, activations clipped at zero);
// package grad's max-contraction rule provides it.
func (l *poolLayer) call(c *callContext, in []*tile.Tensor) *tile.Tensor {
	opt := op.PoolOptions{Size: l.cfg.PoolSize, Strides: l.cfg.Strides, Padding: op.Padding(l.cfg.Padding)}
	if l.avg {
		return op.AvgPool2D(c.g, in[0], opt)
	}
	return op.MaxPool2D(c.g, in[0], opt)
}

func (l *poolLayer) config() any {
	cfg := l.cfg
	cfg.Name = l.name
	return cfg
}

// globalPoolLayer is Keras's GlobalAveragePooling2D and GlobalMaxPooling2D:
// (batch, h, w, c) to (batch, c).
type globalPoolLayer struct {
	layerBase
	cfg layerCommon
	avg bool
}

// GlobalAveragePooling2D returns a layer averaging each channel over height
// and width.
func GlobalAveragePooling2D(opts ...LayerOption) Layer {
	s, err := newSettings("GlobalAveragePooling2D", nil, opts)
	return newGlobalPool("GlobalAveragePooling2D", common(s), err)
}

// GlobalMaxPooling2D returns a layer taking each channel's maximum over
// height and width.
func GlobalMaxPooling2D(opts ...LayerOption) Layer {
	s, err := newSettings("GlobalMaxPooling2D", nil, opts)
	return newGlobalPool("GlobalMaxPooling2D", common(s), err)
}

func newGlobalPool(class string, cfg layerCommon, err error) Layer {
	return &globalPoolLayer{layerBase: newBase(class, cfg.Name, cfg.Trainable, err), cfg: cfg, avg: class == "GlobalAveragePooling2D"}
}

func (l *globalPoolLayer) build(in []tile.Shape) (tile.Shape, error) {
	s, err := oneInput(l, in)
	if err != nil {
		return nil, err
	}
	if len(s) != 3 || s[0] == 0 || s[1] == 0 {
		return nil, fmt.Errorf("needs non-empty inputs of rank 4 (batch, height, width, channels), got %s", fmtShape(s))
	}
	return tile.Shape{s[2]}, nil
}

func (l *globalPoolLayer) call(c *callContext, in []*tile.Tensor) *tile.Tensor {
	if l.avg {
		return op.GlobalAvgPool2D(c.g, in[0])
	}
	return op.GlobalMaxPool2D(c.g, in[0])
}

func (l *globalPoolLayer) config() any {
	cfg := l.cfg
	cfg.Name = l.name
	return cfg
}
