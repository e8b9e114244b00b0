package nn

import (
	"math"

	"github.com/tartanml/tartan/tile"
)

// rescalingLayer is Keras's Rescaling: x·scale + offset.
type rescalingLayer struct {
	layerBase
	cfg rescalingConfig
}

type rescalingConfig struct {
	layerCommon
	Scale  float64 `json:"scale"`
	Offset float64 `json:"offset"`
}

// Rescaling returns a layer computing x·scale + offset elementwise, such as
// Rescaling(1.0/255, 0) for pixels in [0, 1] or Rescaling(1.0/127.5, -1) for
// [−1, 1]; Keras's offset defaults to 0. Both must be finite.
func Rescaling(scale, offset float64, opts ...LayerOption) Layer {
	s, err := newSettings("Rescaling", nil, opts)
	return newRescaling(rescalingConfig{layerCommon: common(s), Scale: scale, Offset: offset}, err)
}

func newRescaling(cfg rescalingConfig, err error) Layer {
	l := &rescalingLayer{layerBase: newBase("Rescaling", cfg.Name, cfg.Trainable, err), cfg: cfg}
	finite := func(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }
	l.err = firstErr(l.err,
		check(finite(cfg.Scale), "nn: Rescaling: scale %g must be finite", cfg.Scale),
		check(finite(cfg.Offset), "nn: Rescaling: offset %g must be finite", cfg.Offset))
	return l
}

func (l *rescalingLayer) build(in []tile.Shape) (tile.Shape, error) { return oneInput(l, in) }

func (l *rescalingLayer) call(c *callContext, in []*tile.Tensor) *tile.Tensor {
	x := in[0]
	y := c.g.Mul(x, c.g.ScalarLike(x, l.cfg.Scale))
	if l.cfg.Offset != 0 {
		y = c.g.Add(y, c.g.ScalarLike(x, l.cfg.Offset))
	}
	return y
}

func (l *rescalingLayer) config() any {
	cfg := l.cfg
	cfg.Name = l.name
	return cfg
}
