package nn

import (
	"github.com/tartanml/tartan/op"
	"github.com/tartanml/tartan/tile"
)

// dropoutLayer is Keras's Dropout: in training, each element is zeroed with
// probability rate and the others scaled by 1/(1 − rate); in inference it
// passes its input through.
type dropoutLayer struct {
	layerBase
	cfg dropoutConfig
}

type dropoutConfig struct {
	layerCommon
	Rate float64 `json:"rate"`
}

// Dropout returns a dropout layer of the given rate, in [0, 1). Its masks
// are drawn on the device from the step's seed (see the package
// documentation), so every training step gets a new mask and a run is
// reproducible from its seed.
func Dropout(rate float64, opts ...LayerOption) Layer {
	s, err := newSettings("Dropout", nil, opts)
	return newDropout(dropoutConfig{layerCommon: common(s), Rate: rate}, err)
}

func newDropout(cfg dropoutConfig, err error) Layer {
	l := &dropoutLayer{layerBase: newBase("Dropout", cfg.Name, cfg.Trainable, err), cfg: cfg}
	l.err = firstErr(l.err, check(cfg.Rate >= 0 && cfg.Rate < 1, "nn: Dropout: rate %g must lie in [0, 1)", cfg.Rate))
	return l
}

func (l *dropoutLayer) build(in []tile.Shape) (tile.Shape, error) { return oneInput(l, in) }

func (l *dropoutLayer) call(c *callContext, in []*tile.Tensor) *tile.Tensor {
	if !c.training || c.seed == nil || l.cfg.Rate == 0 {
		return in[0]
	}
	return op.Dropout(c.g, in[0], l.cfg.Rate, c.seed, l.stream)
}

func (l *dropoutLayer) config() any {
	cfg := l.cfg
	cfg.Name = l.name
	return cfg
}
