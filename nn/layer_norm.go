package nn

import (
	"fmt"

	"github.com/tartanml/tartan/op"
	"github.com/tartanml/tartan/tile"
)

// batchNormLayer is Keras's BatchNormalization over the last (channel) axis.
type batchNormLayer struct {
	layerBase
	cfg                   batchNormConfig
	gamma, beta, mean, vr *Weight
}

type batchNormConfig struct {
	layerCommon
	Momentum float64 `json:"momentum"`
	Epsilon  float64 `json:"epsilon"`
	Center   bool    `json:"center"`
	Scale    bool    `json:"scale"`
}

// BatchNormalization returns a batch normalisation layer over the channel
// (last) axis, with Keras's defaults: Momentum 0.99, Epsilon 1e-3, Center
// and Scale on. In training it normalises with the batch's mean and biased
// variance and moves its moving statistics toward them:
// moving = moving·momentum + batch·(1 − momentum). In inference it uses the
// moving statistics. Its weights are gamma and beta (trainable), and
// moving_mean and moving_variance (not trainable).
func BatchNormalization(opts ...LayerOption) Layer {
	s, err := newSettings("BatchNormalization", []string{"momentum", "epsilon", "center", "scale", "axis"}, opts)
	cfg := batchNormConfig{layerCommon: common(s), Momentum: 0.99, Epsilon: 1e-3, Center: s.center, Scale: s.scale}
	if s.has("momentum") {
		cfg.Momentum = s.momentum
	}
	if s.has("epsilon") {
		cfg.Epsilon = s.epsilon
	}
	if err == nil && s.axis != -1 {
		err = fmt.Errorf("nn: BatchNormalization: only the channel axis -1 is supported, got axis %d", s.axis)
	}
	return newBatchNorm(cfg, err)
}

func newBatchNorm(cfg batchNormConfig, err error) Layer {
	l := &batchNormLayer{layerBase: newBase("BatchNormalization", cfg.Name, cfg.Trainable, err), cfg: cfg}
	l.err = firstErr(l.err,
		check(cfg.Momentum >= 0 && cfg.Momentum <= 1, "nn: BatchNormalization: momentum %g must lie in [0, 1]", cfg.Momentum),
		check(cfg.Epsilon > 0, "nn: BatchNormalization: epsilon %g must be positive", cfg.Epsilon))
	return l
}

func (l *batchNormLayer) build(in []tile.Shape) (tile.Shape, error) {
	s, err := oneInput(l, in)
	if err != nil {
		return nil, err
	}
	if len(s) < 1 {
		return nil, fmt.Errorf("needs inputs with a channel axis")
	}
	c := tile.Shape{s[len(s)-1]}
	if l.cfg.Scale {
		l.gamma = l.addWeight("gamma", c, Ones(), true)
	}
	if l.cfg.Center {
		l.beta = l.addWeight("beta", c, Zeros(), true)
	}
	l.mean = l.addWeight("moving_mean", c, Zeros(), false)
	l.vr = l.addWeight("moving_variance", c, Ones(), false)
	return s, nil
}

func (l *batchNormLayer) call(c *callContext, in []*tile.Tensor) *tile.Tensor {
	g := c.g
	var gamma, beta *tile.Tensor
	if l.gamma != nil {
		gamma = c.v(l.gamma)
	}
	if l.beta != nil {
		beta = c.v(l.beta)
	}
	mm, mv := c.v(l.mean), c.v(l.vr)
	y, mean, variance := op.BatchNorm(g, in[0], gamma, beta, mm, mv, c.training, l.cfg.Epsilon)
	if c.training && g.Err() == nil {
		mom := g.ScalarLike(mm, l.cfg.Momentum)
		rest := g.ScalarLike(mm, 1-l.cfg.Momentum)
		c.updates = append(c.updates,
			weightUpdate{l.mean, g.Add(g.Mul(mm, mom), g.Mul(mean, rest))},
			weightUpdate{l.vr, g.Add(g.Mul(mv, mom), g.Mul(variance, rest))})
	}
	return y
}

func (l *batchNormLayer) config() any {
	cfg := l.cfg
	cfg.Name = l.name
	return cfg
}

// layerNormLayer is Keras's LayerNormalization over one axis.
type layerNormLayer struct {
	layerBase
	cfg         layerNormConfig
	gamma, beta *Weight
}

type layerNormConfig struct {
	layerCommon
	Axis    int     `json:"axis"`
	Epsilon float64 `json:"epsilon"`
	Center  bool    `json:"center"`
	Scale   bool    `json:"scale"`
}

// LayerNormalization returns a layer normalising every sample over one axis
// (the last by default; Axis sets another) with the biased variance, with
// Keras's defaults: Epsilon 1e-3, Center and Scale on. Its weights gamma and
// beta run along that axis.
func LayerNormalization(opts ...LayerOption) Layer {
	s, err := newSettings("LayerNormalization", []string{"axis", "epsilon", "center", "scale"}, opts)
	cfg := layerNormConfig{layerCommon: common(s), Axis: s.axis, Epsilon: 1e-3, Center: s.center, Scale: s.scale}
	if s.has("epsilon") {
		cfg.Epsilon = s.epsilon
	}
	return newLayerNorm(cfg, err)
}

func newLayerNorm(cfg layerNormConfig, err error) Layer {
	l := &layerNormLayer{layerBase: newBase("LayerNormalization", cfg.Name, cfg.Trainable, err), cfg: cfg}
	l.err = firstErr(l.err, check(cfg.Epsilon > 0, "nn: LayerNormalization: epsilon %g must be positive", cfg.Epsilon))
	return l
}

func (l *layerNormLayer) build(in []tile.Shape) (tile.Shape, error) {
	s, err := oneInput(l, in)
	if err != nil {
		return nil, err
	}
	a, err := sampleAxis(l.cfg.Axis, len(s))
	if err != nil {
		return nil, err
	}
	c := tile.Shape{s[a-1]}
	if l.cfg.Scale {
		l.gamma = l.addWeight("gamma", c, Ones(), true)
	}
	if l.cfg.Center {
		l.beta = l.addWeight("beta", c, Zeros(), true)
	}
	return s, nil
}

func (l *layerNormLayer) call(c *callContext, in []*tile.Tensor) *tile.Tensor {
	var gamma, beta *tile.Tensor
	if l.gamma != nil {
		gamma = c.v(l.gamma)
	}
	if l.beta != nil {
		beta = c.v(l.beta)
	}
	return op.LayerNorm(c.g, in[0], gamma, beta, l.cfg.Axis, l.cfg.Epsilon)
}

func (l *layerNormLayer) config() any {
	cfg := l.cfg
	cfg.Name = l.name
	return cfg
}
