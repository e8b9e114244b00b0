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

// randomCropLayer is Keras's RandomCrop.
type randomCropLayer struct {
	layerBase
	cfg randomCropConfig
}

type randomCropConfig struct {
	layerCommon
	Height int `json:"height"`
	Width  int `json:"width"`
}

// RandomCrop returns a layer cropping images (batch, height, width,
// channels) to the given height and width. In training, when the images are
// at least that large, it takes a window at a random offset, drawn anew
// every step and shared by the whole batch, as Keras does. In inference, and
// in training when the images are smaller, it takes the largest centred
// window of the target's aspect ratio (Keras's crop box: height
// ⌊W·height/width⌋ and width ⌊H·width/height⌋, each at most the image's and
// at least 1, starting at half the rest, rounded down) and resizes it to the
// target bilinearly (op.ResizeBilinear); an image of the target's size passes
// unchanged.
func RandomCrop(height, width int, opts ...LayerOption) Layer {
	s, err := newSettings("RandomCrop", nil, opts)
	return newRandomCrop(randomCropConfig{layerCommon: common(s), Height: height, Width: width}, err)
}

func newRandomCrop(cfg randomCropConfig, err error) Layer {
	l := &randomCropLayer{layerBase: newBase("RandomCrop", cfg.Name, cfg.Trainable, err), cfg: cfg}
	l.err = firstErr(l.err, check(cfg.Height >= 1 && cfg.Width >= 1, "nn: RandomCrop: height %d and width %d must be positive", cfg.Height, cfg.Width))
	return l
}

func (l *randomCropLayer) build(in []tile.Shape) (tile.Shape, error) {
	s, err := imageInput(l, in)
	if err != nil {
		return nil, err
	}
	if s[0] == 0 || s[1] == 0 {
		return nil, fmt.Errorf("needs non-empty images, got %s", fmtShape(s))
	}
	return tile.Shape{l.cfg.Height, l.cfg.Width, s[2]}, nil
}

// centreBox returns Keras's inference crop box of an h×w image for the
// layer's target: its start and size along height and width.
func (l *randomCropLayer) centreBox(h, w int) (h0, w0, ch, cw int) {
	th, tw := l.cfg.Height, l.cfg.Width
	ch = max(min(h, int(float64(w)*float64(th)/float64(tw))), 1)
	cw = max(min(w, int(float64(h)*float64(tw)/float64(th))), 1)
	return (h - ch) / 2, (w - cw) / 2, ch, cw
}

func (l *randomCropLayer) call(c *callContext, in []*tile.Tensor) *tile.Tensor {
	x := in[0]
	g := c.g
	h, w := x.Dim(1), x.Dim(2)
	th, tw := l.cfg.Height, l.cfg.Width
	if c.training && c.seed != nil && h >= th && w >= tw {
		u := g.Random(c.seed, x.DType(), tile.Shape{2}, l.stream)
		window := func(y *tile.Tensor, axis, col, size, target int) *tile.Tensor {
			if size == target {
				return y
			}
			draw := g.Reshape(g.Slice(u, []int{col}, []int{col + 1}, nil), tile.Shape{})
			// ⌊u·(rest + 1)⌋, at most rest however u rounds.
			start := g.Minimum(g.Elementwise(tile.Floor, g.Mul(draw, g.ScalarLike(draw, float64(size-target+1)))),
				g.ScalarLike(draw, float64(size-target)))
			idx := g.Add(g.Iota(tile.Int64, tile.Shape{target}, 0), g.Cast(start, tile.Int64))
			return g.Gather(y, idx, axis)
		}
		return window(window(x, 1, 0, h, th), 2, 1, w, tw)
	}
	h0, w0, ch, cw := l.centreBox(h, w)
	y := x
	if ch != h || cw != w {
		y = g.Slice(x, []int{0, h0, w0, 0}, []int{x.Dim(0), h0 + ch, w0 + cw, x.Dim(3)}, nil)
	}
	if ch == th && cw == tw {
		return y
	}
	return op.ResizeBilinear(g, y, th, tw)
}

func (l *randomCropLayer) config() any {
	cfg := l.cfg
	cfg.Name = l.name
	return cfg
}
