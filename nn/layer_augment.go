package nn

import (
	"fmt"
	"math"

	"github.com/tartanml/tartan/op"
	"github.com/tartanml/tartan/tile"
)

// Random augmentation layers. Like Dropout they act only in training
// (Fit's steps), drawing on the device from the step's seed and the layer's
// stream (see the package documentation), so every step draws anew and a
// run is reproducible from its seed; in Evaluate and Predict they pass
// their input through unchanged.

// randomFlipLayer is Keras's RandomFlip.
type randomFlipLayer struct {
	layerBase
	cfg randomFlipConfig
}

type randomFlipConfig struct {
	layerCommon
	Mode string `json:"mode"`
}

// RandomFlip returns a layer that, in training, flips every image (batch,
// height, width, channels) left to right with probability ½ ("horizontal"),
// upside down with probability ½ ("vertical"), or both, independently
// ("horizontal_and_vertical", the default, also meant by ""). In inference
// it is the identity.
func RandomFlip(mode string, opts ...LayerOption) Layer {
	s, err := newSettings("RandomFlip", nil, opts)
	return newRandomFlip(randomFlipConfig{layerCommon: common(s), Mode: mode}, err)
}

func newRandomFlip(cfg randomFlipConfig, err error) Layer {
	if cfg.Mode == "" {
		cfg.Mode = "horizontal_and_vertical"
	}
	l := &randomFlipLayer{layerBase: newBase("RandomFlip", cfg.Name, cfg.Trainable, err), cfg: cfg}
	l.err = firstErr(l.err, check(cfg.Mode == "horizontal" || cfg.Mode == "vertical" || cfg.Mode == "horizontal_and_vertical",
		"nn: RandomFlip: mode %q must be \"horizontal\", \"vertical\" or \"horizontal_and_vertical\"", cfg.Mode))
	return l
}

func (l *randomFlipLayer) build(in []tile.Shape) (tile.Shape, error) { return imageInput(l, in) }

// imageInput checks a single input of images (height, width, channels).
func imageInput(l Layer, in []tile.Shape) (tile.Shape, error) {
	s, err := oneInput(l, in)
	if err != nil {
		return nil, err
	}
	if len(s) != 3 {
		return nil, fmt.Errorf("needs inputs of rank 4 (batch, height, width, channels), got rank %d", len(s)+1)
	}
	return s, nil
}

// call draws two uniform numbers per sample, u[n, 0] deciding the
// horizontal flip and u[n, 1] the vertical one (a flip where u < ½), and
// selects between the image and its mirror image, which a Gather of the
// reversed positions makes.
func (l *randomFlipLayer) call(c *callContext, in []*tile.Tensor) *tile.Tensor {
	x := in[0]
	if !c.training || c.seed == nil {
		return x
	}
	g := c.g
	n := x.Dim(0)
	u := g.Random(c.seed, x.DType(), tile.Shape{n, 2}, l.stream)
	flip := func(y *tile.Tensor, axis, col int) *tile.Tensor {
		size := y.Dim(axis)
		rev := make([]float64, size)
		for i := range rev {
			rev[i] = float64(size - 1 - i)
		}
		idx, err := tile.ValueOf(tile.Int64, tile.Shape{size}, rev)
		if err != nil {
			return g.Errorf("random_flip", "%v", err)
		}
		mirrored := g.Gather(y, g.Constant(idx), axis)
		draw := g.Reshape(g.Slice(u, []int{0, col}, []int{n, col + 1}, nil), tile.Shape{n, 1, 1, 1})
		cond := g.BroadcastTo(g.Elementwise(tile.Lt, draw, g.ScalarLike(draw, 0.5)), y.Shape())
		return g.Select(cond, mirrored, y)
	}
	y := x
	if l.cfg.Mode != "vertical" {
		y = flip(y, 2, 0)
	}
	if l.cfg.Mode != "horizontal" {
		y = flip(y, 1, 1)
	}
	return y
}

func (l *randomFlipLayer) config() any {
	cfg := l.cfg
	cfg.Name = l.name
	return cfg
}

// randomContrastLayer is Keras's RandomContrast.
type randomContrastLayer struct {
	layerBase
	cfg randomContrastConfig
}

type randomContrastConfig struct {
	layerCommon
	Factor     float64   `json:"factor"`
	ValueRange []float64 `json:"value_range"`
}

// RandomContrast returns a layer that, in training, scales every image's
// deviation from its mean (per channel, over height and width) by a factor
// drawn per sample uniformly from [1 − factor, 1 + factor], and clips the
// result to the value range ([0, 255] unless ValueRange says otherwise), as
// Keras's RandomContrast does: y = clip((x − mean)·f + mean). factor lies in
// [0, 1]. In inference it is the identity.
func RandomContrast(factor float64, opts ...LayerOption) Layer {
	s, err := newSettings("RandomContrast", []string{"value_range"}, opts)
	vr := s.ext.valueRange
	if vr == nil {
		vr = []float64{0, 255}
	}
	return newRandomContrast(randomContrastConfig{layerCommon: common(s), Factor: factor, ValueRange: vr}, err)
}

func newRandomContrast(cfg randomContrastConfig, err error) Layer {
	l := &randomContrastLayer{layerBase: newBase("RandomContrast", cfg.Name, cfg.Trainable, err), cfg: cfg}
	finite := func(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }
	l.err = firstErr(l.err,
		check(cfg.Factor >= 0 && cfg.Factor <= 1, "nn: RandomContrast: factor %g must lie in [0, 1]", cfg.Factor),
		check(len(cfg.ValueRange) == 2 && finite(cfg.ValueRange[0]) && finite(cfg.ValueRange[1]) && cfg.ValueRange[0] < cfg.ValueRange[1],
			"nn: RandomContrast: value range %v must be two finite numbers, the lower first", cfg.ValueRange))
	return l
}

func (l *randomContrastLayer) build(in []tile.Shape) (tile.Shape, error) { return imageInput(l, in) }

func (l *randomContrastLayer) call(c *callContext, in []*tile.Tensor) *tile.Tensor {
	x := in[0]
	if !c.training || c.seed == nil {
		return x
	}
	g := c.g
	u := g.Random(c.seed, x.DType(), tile.Shape{x.Dim(0), 1, 1, 1}, l.stream)
	lo := 1 - l.cfg.Factor
	f := g.Add(g.Mul(u, g.ScalarLike(u, 2*l.cfg.Factor)), g.ScalarLike(u, lo))
	mean := op.Mean(g, x, []int{1, 2}, true)
	y := g.Add(g.Mul(g.Sub(x, mean), f), mean)
	y = g.Maximum(y, g.ScalarLike(y, l.cfg.ValueRange[0]))
	return g.Minimum(y, g.ScalarLike(y, l.cfg.ValueRange[1]))
}

func (l *randomContrastLayer) config() any {
	cfg := l.cfg
	cfg.Name = l.name
	return cfg
}
