package nn

import (
	"fmt"

	"github.com/tartanml/tartan/op"
	"github.com/tartanml/tartan/tile"
)

// upSamplingLayer is Keras's UpSampling2D.
type upSamplingLayer struct {
	layerBase
	cfg upSamplingConfig
}

type upSamplingConfig struct {
	layerCommon
	Size          []int  `json:"size"`
	Interpolation string `json:"interpolation"`
}

// UpSampling2D returns a layer enlarging the height and width of its inputs
// (batch, height, width, channels) by integer factors: size holds one
// factor for both dimensions or one per dimension; nil means 2 and 2,
// Keras's default. Interpolation chooses "nearest" (the default: every row
// and column repeated) or "bilinear" (half-pixel linear interpolation, as
// tf.image.resize and Keras compute it).
func UpSampling2D(size []int, opts ...LayerOption) Layer {
	s, err := newSettings("UpSampling2D", []string{"interpolation"}, opts)
	cfg := upSamplingConfig{layerCommon: common(s), Size: append([]int(nil), size...), Interpolation: s.ext.interpolation}
	return newUpSampling(cfg, err)
}

func newUpSampling(cfg upSamplingConfig, err error) Layer {
	l := &upSamplingLayer{layerBase: newBase("UpSampling2D", cfg.Name, cfg.Trainable, err)}
	var e error
	cfg.Size, e = spatial("size", cfg.Size, 2, 2)
	if cfg.Interpolation == "" {
		cfg.Interpolation = "nearest"
	}
	l.err = firstErr(l.err, wrapErr("nn: UpSampling2D: ", e),
		check(cfg.Interpolation == "nearest" || cfg.Interpolation == "bilinear",
			"nn: UpSampling2D: interpolation %q must be \"nearest\" or \"bilinear\"", cfg.Interpolation))
	l.cfg = cfg
	return l
}

func (l *upSamplingLayer) build(in []tile.Shape) (tile.Shape, error) {
	s, err := oneInput(l, in)
	if err != nil {
		return nil, err
	}
	if len(s) != 3 {
		return nil, fmt.Errorf("needs inputs of rank 4 (batch, height, width, channels), got rank %d", len(s)+1)
	}
	for d, what := range []string{"height", "width"} {
		n, ok := checkedMul(s[d], l.cfg.Size[d])
		if !ok {
			return nil, fmt.Errorf("the %s %d times %d overflows", what, s[d], l.cfg.Size[d])
		}
		s[d] = n
	}
	return s, nil
}

func (l *upSamplingLayer) call(c *callContext, in []*tile.Tensor) *tile.Tensor {
	return op.UpSample2D(c.g, in[0], l.cfg.Size, l.cfg.Interpolation)
}

func (l *upSamplingLayer) config() any {
	cfg := l.cfg
	cfg.Name = l.name
	return cfg
}

// upSampling1DLayer is Keras's UpSampling1D.
type upSampling1DLayer struct {
	layerBase
	cfg upSampling1DConfig
}

type upSampling1DConfig struct {
	layerCommon
	Size int `json:"size"`
}

// UpSampling1D returns a layer repeating every step of its inputs (batch,
// steps, channels) size times; Keras's default size is 2.
func UpSampling1D(size int, opts ...LayerOption) Layer {
	s, err := newSettings("UpSampling1D", nil, opts)
	return newUpSampling1D(upSampling1DConfig{layerCommon: common(s), Size: size}, err)
}

func newUpSampling1D(cfg upSampling1DConfig, err error) Layer {
	l := &upSampling1DLayer{layerBase: newBase("UpSampling1D", cfg.Name, cfg.Trainable, err), cfg: cfg}
	l.err = firstErr(l.err, check(cfg.Size >= 1, "nn: UpSampling1D: size %d must be positive", cfg.Size))
	return l
}

func (l *upSampling1DLayer) build(in []tile.Shape) (tile.Shape, error) {
	s, err := oneInput(l, in)
	if err != nil {
		return nil, err
	}
	if len(s) != 2 {
		return nil, fmt.Errorf("needs inputs of rank 3 (batch, steps, channels), got rank %d", len(s)+1)
	}
	n, ok := checkedMul(s[0], l.cfg.Size)
	if !ok {
		return nil, fmt.Errorf("the %d steps times %d overflow", s[0], l.cfg.Size)
	}
	s[0] = n
	return s, nil
}

func (l *upSampling1DLayer) call(c *callContext, in []*tile.Tensor) *tile.Tensor {
	x := in[0]
	n, w, ch := x.Dim(0), x.Dim(1), x.Dim(2)
	y := c.g.BroadcastTo(c.g.Reshape(x, tile.Shape{n, w, 1, ch}), tile.Shape{n, w, l.cfg.Size, ch})
	return c.g.Reshape(y, tile.Shape{n, w * l.cfg.Size, ch})
}

func (l *upSampling1DLayer) config() any {
	cfg := l.cfg
	cfg.Name = l.name
	return cfg
}
