package nn

import (
	"fmt"

	"github.com/tartanml/tartan/tile"
)

// padCropLayer is Keras's ZeroPadding2D and Cropping2D: rows and columns of
// zeros added around every image (batch, height, width, channels), or
// removed from its borders.
type padCropLayer struct {
	layerBase
	cfg  padCropConfig
	crop bool
}

type padCropConfig struct {
	layerCommon
	Padding  [][]int `json:"padding,omitempty"`
	Cropping [][]int `json:"cropping,omitempty"`
}

// ZeroPadding2D returns a layer adding zeros around the height and width of
// its inputs (batch, height, width, channels). padding holds 1 value (every
// side), 2 (height and width, each on both sides) or 4 (top, bottom, left,
// right); nil means 1 on every side, Keras's default.
func ZeroPadding2D(padding []int, opts ...LayerOption) Layer {
	s, err := newSettings("ZeroPadding2D", nil, opts)
	p, perr := sides("padding", padding, 1)
	if err == nil && perr != nil {
		err = fmt.Errorf("nn: ZeroPadding2D: %w", perr)
	}
	return newPadCrop("ZeroPadding2D", padCropConfig{layerCommon: common(s), Padding: p}, err)
}

// Cropping2D returns a layer removing rows and columns from the borders of
// its inputs (batch, height, width, channels). cropping holds 1, 2 or 4
// values as ZeroPadding2D's padding does; nil crops nothing, Keras's
// default. Something of every image must remain.
func Cropping2D(cropping []int, opts ...LayerOption) Layer {
	s, err := newSettings("Cropping2D", nil, opts)
	c, cerr := sides("cropping", cropping, 0)
	if err == nil && cerr != nil {
		err = fmt.Errorf("nn: Cropping2D: %w", cerr)
	}
	return newPadCrop("Cropping2D", padCropConfig{layerCommon: common(s), Cropping: c}, err)
}

func newPadCrop(class string, cfg padCropConfig, err error) Layer {
	l := &padCropLayer{layerBase: newBase(class, cfg.Name, cfg.Trainable, err), crop: class == "Cropping2D"}
	if l.err == nil {
		if l.crop {
			l.err = wrapErr("nn: Cropping2D: ", firstErr(checkSides("cropping", cfg.Cropping),
				check(cfg.Padding == nil, "padding does not apply")))
		} else {
			l.err = wrapErr("nn: ZeroPadding2D: ", firstErr(checkSides("padding", cfg.Padding),
				check(cfg.Cropping == nil, "cropping does not apply")))
		}
	}
	l.cfg = cfg
	return l
}

// amounts returns the [[top, bottom], [left, right]] of the layer.
func (l *padCropLayer) amounts() [][]int {
	if l.crop {
		return l.cfg.Cropping
	}
	return l.cfg.Padding
}

func (l *padCropLayer) build(in []tile.Shape) (tile.Shape, error) {
	s, err := oneInput(l, in)
	if err != nil {
		return nil, err
	}
	if len(s) != 3 {
		return nil, fmt.Errorf("needs inputs of rank 4 (batch, height, width, channels), got rank %d", len(s)+1)
	}
	a := l.amounts()
	for d, what := range []string{"height", "width"} {
		if l.crop {
			total, ok := checkedAdd(a[d][0], a[d][1])
			if !ok || total >= s[d] {
				return nil, fmt.Errorf("cropping %d and %d of the %s leaves nothing of %d", a[d][0], a[d][1], what, s[d])
			}
			s[d] -= total
			continue
		}
		n, ok := checkedAdd(s[d], a[d][0])
		if ok {
			n, ok = checkedAdd(n, a[d][1])
		}
		if !ok {
			return nil, fmt.Errorf("padding %d and %d makes the %s of %d overflow", a[d][0], a[d][1], what, s[d])
		}
		s[d] = n
	}
	return s, nil
}

func (l *padCropLayer) call(c *callContext, in []*tile.Tensor) *tile.Tensor {
	x := in[0]
	a := l.amounts()
	if l.crop {
		sh := x.Shape()
		start := []int{0, a[0][0], a[1][0], 0}
		stop := []int{sh[0], sh[1] - a[0][1], sh[2] - a[1][1], sh[3]}
		return c.g.Slice(x, start, stop, nil)
	}
	return c.g.Pad(x, []int{0, a[0][0], a[1][0], 0}, []int{0, a[0][1], a[1][1], 0}, 0)
}

func (l *padCropLayer) config() any {
	cfg := l.cfg
	cfg.Name = l.name
	return cfg
}

// padCrop1DLayer is Keras's ZeroPadding1D and Cropping1D: steps of zeros
// added at both ends of every sequence (batch, steps, channels), or removed.
type padCrop1DLayer struct {
	layerBase
	cfg  padCrop1DConfig
	crop bool
}

type padCrop1DConfig struct {
	layerCommon
	Padding  []int `json:"padding,omitempty"`
	Cropping []int `json:"cropping,omitempty"`
}

// ZeroPadding1D returns a layer adding zero steps at the start and end of
// its inputs (batch, steps, channels): padding holds one value (both ends)
// or two (start, end); nil means 1 at each end, Keras's default.
func ZeroPadding1D(padding []int, opts ...LayerOption) Layer {
	s, err := newSettings("ZeroPadding1D", nil, opts)
	p, perr := ends("padding", padding)
	if err == nil && perr != nil {
		err = fmt.Errorf("nn: ZeroPadding1D: %w", perr)
	}
	return newPadCrop1D("ZeroPadding1D", padCrop1DConfig{layerCommon: common(s), Padding: p}, err)
}

// Cropping1D returns a layer removing steps from the start and end of its
// inputs (batch, steps, channels), given as ZeroPadding1D's padding is;
// nil means 1 at each end, Keras's default. Some steps must remain.
func Cropping1D(cropping []int, opts ...LayerOption) Layer {
	s, err := newSettings("Cropping1D", nil, opts)
	c, cerr := ends("cropping", cropping)
	if err == nil && cerr != nil {
		err = fmt.Errorf("nn: Cropping1D: %w", cerr)
	}
	return newPadCrop1D("Cropping1D", padCrop1DConfig{layerCommon: common(s), Cropping: c}, err)
}

// ends expands a 1-D padding or cropping of 1 or 2 values (both ends;
// start and end) to [start, end], none negative; nil means [1, 1].
func ends(what string, v []int) ([]int, error) {
	var out []int
	switch len(v) {
	case 0:
		out = []int{1, 1}
	case 1:
		out = []int{v[0], v[0]}
	case 2:
		out = []int{v[0], v[1]}
	default:
		return nil, fmt.Errorf("%s %v must have 1 or 2 values (both ends; start and end)", what, v)
	}
	if out[0] < 0 || out[1] < 0 {
		return nil, fmt.Errorf("%s %v must not be negative", what, v)
	}
	return out, nil
}

func newPadCrop1D(class string, cfg padCrop1DConfig, err error) Layer {
	l := &padCrop1DLayer{layerBase: newBase(class, cfg.Name, cfg.Trainable, err), crop: class == "Cropping1D"}
	if l.err == nil {
		what, v, otherName, other := "padding", cfg.Padding, "cropping", cfg.Cropping
		if l.crop {
			what, v, otherName, other = "cropping", cfg.Cropping, "padding", cfg.Padding
		}
		ok := len(v) == 2 && v[0] >= 0 && v[1] >= 0
		l.err = firstErr(check(ok, "nn: %s: %s %v must be [start, end], neither negative", class, what, v),
			check(other == nil, "nn: %s: %s does not apply", class, otherName))
	}
	l.cfg = cfg
	return l
}

func (l *padCrop1DLayer) build(in []tile.Shape) (tile.Shape, error) {
	s, err := oneInput(l, in)
	if err != nil {
		return nil, err
	}
	if len(s) != 2 {
		return nil, fmt.Errorf("needs inputs of rank 3 (batch, steps, channels), got rank %d", len(s)+1)
	}
	if l.crop {
		c := l.cfg.Cropping
		total, ok := checkedAdd(c[0], c[1])
		if !ok || total >= s[0] {
			return nil, fmt.Errorf("cropping %d and %d leaves nothing of %d steps", c[0], c[1], s[0])
		}
		s[0] -= total
		return s, nil
	}
	p := l.cfg.Padding
	n, ok := checkedAdd(s[0], p[0])
	if ok {
		n, ok = checkedAdd(n, p[1])
	}
	if !ok {
		return nil, fmt.Errorf("padding %d and %d makes the %d steps overflow", p[0], p[1], s[0])
	}
	s[0] = n
	return s, nil
}

func (l *padCrop1DLayer) call(c *callContext, in []*tile.Tensor) *tile.Tensor {
	x := in[0]
	if l.crop {
		cr := l.cfg.Cropping
		return c.g.Slice(x, []int{0, cr[0], 0}, []int{x.Dim(0), x.Dim(1) - cr[1], x.Dim(2)}, nil)
	}
	return c.g.Pad(x, []int{0, l.cfg.Padding[0], 0}, []int{0, l.cfg.Padding[1], 0}, 0)
}

func (l *padCrop1DLayer) config() any {
	cfg := l.cfg
	cfg.Name = l.name
	return cfg
}
