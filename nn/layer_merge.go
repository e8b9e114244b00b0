package nn

import (
	"fmt"

	"github.com/tartanml/tartan/tile"
)

// addLayer is Keras's Add: the elementwise sum of inputs of one shape.
type addLayer struct {
	layerBase
	cfg layerCommon
}

// Add returns a layer summing two or more inputs of one shape, as in a
// residual connection: nn.Apply(nn.Add(), x, y).
func Add(opts ...LayerOption) Layer {
	s, err := newSettings("Add", nil, opts)
	return newAdd(common(s), err)
}

func newAdd(cfg layerCommon, err error) Layer {
	return &addLayer{layerBase: newBase("Add", cfg.Name, cfg.Trainable, err), cfg: cfg}
}

func (l *addLayer) build(in []tile.Shape) (tile.Shape, error) {
	if len(in) < 2 {
		return nil, fmt.Errorf("needs at least two inputs, got %d", len(in))
	}
	for _, s := range in[1:] {
		if !s.Equal(in[0]) {
			return nil, fmt.Errorf("inputs must have one shape, got %s", fmtShapes(in))
		}
	}
	return in[0].Clone(), nil
}

func (l *addLayer) call(c *callContext, in []*tile.Tensor) *tile.Tensor {
	y := in[0]
	for _, x := range in[1:] {
		y = c.g.Add(y, x)
	}
	return y
}

func (l *addLayer) config() any {
	cfg := l.cfg
	cfg.Name = l.name
	return cfg
}

// concatLayer is Keras's Concatenate.
type concatLayer struct {
	layerBase
	cfg concatConfig
}

type concatConfig struct {
	layerCommon
	Axis int `json:"axis"`
}

// Concatenate returns a layer joining two or more inputs along the last axis,
// or the one Axis names; the inputs agree in every other dimension.
func Concatenate(opts ...LayerOption) Layer {
	s, err := newSettings("Concatenate", []string{"axis"}, opts)
	return newConcat(concatConfig{layerCommon: common(s), Axis: s.axis}, err)
}

func newConcat(cfg concatConfig, err error) Layer {
	return &concatLayer{layerBase: newBase("Concatenate", cfg.Name, cfg.Trainable, err), cfg: cfg}
}

func (l *concatLayer) build(in []tile.Shape) (tile.Shape, error) {
	if len(in) < 2 {
		return nil, fmt.Errorf("needs at least two inputs, got %d", len(in))
	}
	a, err := sampleAxis(l.cfg.Axis, len(in[0]))
	if err != nil {
		return nil, err
	}
	out := in[0].Clone()
	for _, s := range in[1:] {
		if len(s) != len(out) {
			return nil, fmt.Errorf("inputs must have one rank, got %s", fmtShapes(in))
		}
		for d := range s {
			if d != a-1 && s[d] != out[d] {
				return nil, fmt.Errorf("inputs must agree outside axis %d, got %s", l.cfg.Axis, fmtShapes(in))
			}
		}
		out[a-1] += s[a-1]
	}
	return out, nil
}

func (l *concatLayer) call(c *callContext, in []*tile.Tensor) *tile.Tensor {
	a, _ := sampleAxis(l.cfg.Axis, in[0].Rank()-1)
	return c.g.Concat(a, in...)
}

func (l *concatLayer) config() any {
	cfg := l.cfg
	cfg.Name = l.name
	return cfg
}
