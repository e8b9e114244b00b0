package nn

import (
	"fmt"

	"github.com/tartanml/tartan/op"
	"github.com/tartanml/tartan/tile"
)

// flattenLayer is Keras's Flatten: (batch, d1, d2, …) to (batch, d1·d2·…)
// in row-major (channels-last) order.
type flattenLayer struct {
	layerBase
	cfg layerCommon
}

// Flatten returns a layer that flattens every sample into a vector.
func Flatten(opts ...LayerOption) Layer {
	s, err := newSettings("Flatten", nil, opts)
	return newFlatten(common(s), err)
}

func newFlatten(cfg layerCommon, err error) Layer {
	return &flattenLayer{layerBase: newBase("Flatten", cfg.Name, cfg.Trainable, err), cfg: cfg}
}

func (l *flattenLayer) build(in []tile.Shape) (tile.Shape, error) {
	s, err := oneInput(l, in)
	if err != nil {
		return nil, err
	}
	return tile.Shape{s.Size()}, nil
}

func (l *flattenLayer) call(c *callContext, in []*tile.Tensor) *tile.Tensor {
	return op.Flatten(c.g, in[0])
}

func (l *flattenLayer) config() any {
	cfg := l.cfg
	cfg.Name = l.name
	return cfg
}

// reshapeLayer is Keras's Reshape.
type reshapeLayer struct {
	layerBase
	cfg reshapeConfig
}

type reshapeConfig struct {
	layerCommon
	TargetShape []int `json:"target_shape"`
}

// Reshape returns a layer that gives every sample the target shape, which
// has as many elements; one dimension may be -1, meaning whatever makes the
// sizes agree.
func Reshape(target []int, opts ...LayerOption) Layer {
	s, err := newSettings("Reshape", nil, opts)
	return newReshape(reshapeConfig{layerCommon: common(s), TargetShape: append([]int(nil), target...)}, err)
}

func newReshape(cfg reshapeConfig, err error) Layer {
	l := &reshapeLayer{layerBase: newBase("Reshape", cfg.Name, cfg.Trainable, err), cfg: cfg}
	infer := 0
	for _, d := range cfg.TargetShape {
		if d == -1 {
			infer++
		} else if d < 0 {
			infer = 2
		}
	}
	l.err = firstErr(l.err, check(len(cfg.TargetShape) > 0 && infer <= 1,
		"nn: Reshape: target shape %v must be non-empty, with dimensions >= 0 and at most one -1", cfg.TargetShape))
	return l
}

func (l *reshapeLayer) build(in []tile.Shape) (tile.Shape, error) {
	s, err := oneInput(l, in)
	if err != nil {
		return nil, err
	}
	out := tile.Shape(append([]int(nil), l.cfg.TargetShape...))
	known, at := 1, -1
	for i, d := range out {
		if d == -1 {
			at = i
		} else {
			var ok bool
			if known, ok = checkedMul(known, d); !ok {
				return nil, fmt.Errorf("target shape %v has more elements than an int holds", l.cfg.TargetShape)
			}
		}
	}
	if at >= 0 {
		if known == 0 || s.Size()%known != 0 {
			return nil, fmt.Errorf("cannot reshape %d elements per sample to %v", s.Size(), l.cfg.TargetShape)
		}
		out[at] = s.Size() / known
	}
	if out.Size() != s.Size() {
		return nil, fmt.Errorf("cannot reshape %s (%d elements per sample) to %s (%d elements)", fmtShape(s), s.Size(), fmtShape(out), out.Size())
	}
	return out, nil
}

func (l *reshapeLayer) call(c *callContext, in []*tile.Tensor) *tile.Tensor {
	x := in[0]
	return c.g.Reshape(x, batchShape(x.Dim(0), l.base().outShape))
}

func (l *reshapeLayer) config() any {
	cfg := l.cfg
	cfg.Name = l.name
	return cfg
}
