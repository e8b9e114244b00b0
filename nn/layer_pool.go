package nn

import (
	"fmt"
	"math"

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

func (l *poolLayer) call(c *callContext, in []*tile.Tensor) *tile.Tensor {
	opt := op.PoolOptions{Size: l.cfg.PoolSize, Strides: l.cfg.Strides, Padding: op.Padding(l.cfg.Padding)}
	if l.avg {
		return op.AvgPool2D(c.g, in[0], opt)
	}
	if !c.training {
		// Without a gradient the tie rule does not matter.
		return op.MaxPool2D(c.g, in[0], opt)
	}
	return firstMaxPool(c.g, in[0], opt, l.cfg)
}

// firstMaxPool is max pooling whose gradient reaches only the first maximum
// of each window, in row-major window order, as in TensorFlow (and so
// Keras) and PyTorch. op.MaxPool2D's own gradient gives the whole cotangent
// to every input tied for the maximum, which in images with flat regions
// (saturated pixels, constant backgrounds after a convolution) multiplies
// gradients and sets training on another course.
//
// First, per window, the position of the first maximum O is found with a
// min contraction over the positions whose input equals it:
//
//	first[n, y, x, c] = <(X[n, sy·y + i − top, sx·x + j − left, c] == O[n, y, x, c] ? P[i, j])
//
// with P[i, j] = i·pw + j. When windows do not overlap (strides at least the
// window), first is spread back over the inputs, every
// input that is not its window's first maximum is replaced by −∞, and
// op.MaxPool2D of the result has the same values with a single maximum per
// window, so its gradient goes where TensorFlow's does. Overlapping windows
// instead pick the input at the first maximum with a one-hot mask M over
// the window, Y[n, y, x, c] = +(X[…] · M[n, y, x, c, i, j]). Either way
// the comparisons and masks are not differentiable, so only the selected
// input receives a gradient. A window holding a NaN returns NaN, as O does.
func firstMaxPool(g *tile.Graph, x *tile.Tensor, opt op.PoolOptions, cfg poolConfig) *tile.Tensor {
	o := op.MaxPool2D(g, x, opt)
	if !o.Valid() {
		return o
	}
	ph, pw := cfg.PoolSize[0], cfg.PoolSize[1]
	sy, sx := cfg.Strides[0], cfg.Strides[1]
	before := func(in, out, k, s int) int {
		if cfg.Padding != "same" {
			return 0
		}
		return max((out-1)*s+k-in, 0) / 2
	}
	n, oh, ow, ch := o.Dim(0), o.Dim(1), o.Dim(2), o.Dim(3)
	h, w := x.Dim(1), x.Dim(2)
	top, left := before(h, oh, ph, sy), before(w, ow, pw, sx)
	pos := tile.NewValue(x.DType(), tile.Shape{ph, pw})
	for i := range pos.Data {
		pos.Data[i] = float64(i)
	}
	p := g.Constant(pos)
	ix := tile.Ix
	xAccess := []tile.Affine{ix("n"), ix("y").Times(sy).Plus(ix("i")).AddConst(-top), ix("x").Times(sx).Plus(ix("j")).AddConst(-left), ix("c")}
	out := []tile.Affine{ix("n"), ix("y"), ix("x"), ix("c")}
	window := []tile.Constraint{{Expr: ix("i"), Bound: ph}, {Expr: ix("j"), Bound: pw}}
	first := g.Contract(tile.Min, tile.CombEq, o.Shape(), out, []tile.Operand{
		{Tensor: x, Index: xAccess}, {Tensor: o, Index: out}, {Tensor: p, Index: []tile.Affine{ix("i"), ix("j")}},
	}, window...)
	if sy >= ph && sx >= pw {
		// Each input lies in one window at most, so this sum copies its
		// window's first position to it (and 0 to inputs in no window,
		// which no window reads); the compiler turns it into a plain read
		// first[n, h div sy, w div sx, c].
		spread := g.Contract(tile.Sum, tile.CombNone, x.Shape(), xAccess, []tile.Operand{{Tensor: first, Index: out}}, window...)
		// The position of every input within its window.
		at := tile.NewValue(x.DType(), tile.Shape{h, w, 1})
		for r := range h {
			for q := range w {
				at.Data[r*w+q] = float64(((r+top)%sy)*pw + (q+left)%sx)
			}
		}
		keep := g.Elementwise(tile.Eq, spread, g.Constant(at))
		z := g.Select(keep, x, g.ScalarLike(x, math.Inf(-1)))
		return keepNaN(g, o, op.MaxPool2D(g, z, opt))
	}
	mask := g.Cast(g.Elementwise(tile.Eq, g.Reshape(first, tile.Shape{n, oh, ow, ch, 1, 1}), p), x.DType())
	return keepNaN(g, o, g.Contract(tile.Sum, tile.CombMul, o.Shape(), out, []tile.Operand{
		{Tensor: x, Index: xAccess}, {Tensor: mask, Index: append(append([]tile.Affine(nil), out...), ix("i"), ix("j"))},
	}))
}

// keepNaN returns o where it is NaN (a window holding a NaN, which no
// equality finds) and y elsewhere. Such a window passes no gradient back;
// its loss is NaN anyway.
func keepNaN(g *tile.Graph, o, y *tile.Tensor) *tile.Tensor {
	return g.Select(g.Elementwise(tile.Ne, o, o), o, y)
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
