package onnx

import (
	"math"

	"github.com/tartanml/tartan/tile"
)

// Resize and Upsample: nearest, linear and cubic interpolation, one axis at
// a time (each mode is separable), with the output positions' sources and
// weights computed here from the static sizes.

func init() {
	register("Resize", opResize)
	register("Upsample", opUpsample)
}

// resizer holds a Resize node's settings.
type resizer struct {
	mode, transform, nearest string
	cubicA                   float64
	excludeOutside           bool
	extrapolation            float64
}

func opUpsample(c *ctx) {
	x := c.in(0)
	mode := c.attrString("mode", "nearest")
	var scales []float64
	if c.opset < 9 {
		scales = c.attrFloats("scales")
	} else {
		if v := c.known(1); v != nil {
			scales = v.Data
		}
	}
	if c.failed() {
		return
	}
	if mode == "bilinear" {
		mode = "linear"
	}
	r := resizer{mode: mode, transform: "asymmetric", nearest: "floor"}
	resize(c, r, x, scales, nil, nil)
}

func opResize(c *ctx) {
	x := c.in(0)
	r := resizer{mode: c.attrString("mode", "nearest")}
	if c.opset < 11 {
		r.transform, r.nearest = "asymmetric", "floor"
		var scales []float64
		if v := c.known(1); v != nil {
			scales = v.Data
		}
		if c.failed() {
			return
		}
		resize(c, r, x, scales, nil, nil)
		return
	}
	r.transform = c.attrString("coordinate_transformation_mode", "half_pixel")
	r.nearest = c.attrString("nearest_mode", "round_prefer_floor")
	r.cubicA = c.attrFloat("cubic_coeff_a", -0.75)
	r.excludeOutside = c.attrInt("exclude_outside", 0) != 0
	r.extrapolation = c.attrFloat("extrapolation_value", 0)
	var roi, scales []float64
	var sizes []int64
	if c.has(1) && r.transform == "tf_crop_and_resize" {
		if v := c.known(1); v != nil {
			roi = v.Data
		}
	}
	if c.has(2) {
		if v := c.known(2); v != nil {
			scales = v.Data
		}
	}
	if c.has(3) {
		sizes = c.knownInts(3)
	}
	if c.failed() {
		return
	}
	resize(c, r, x, scales, sizes, roi)
}

func resize(c *ctx, r resizer, x *tile.Tensor, scales []float64, sizes []int64, roi []float64) {
	switch r.mode {
	case "nearest", "linear", "cubic":
	default:
		c.fail("mode %q is not supported", r.mode)
		return
	}
	switch r.transform {
	case "half_pixel", "pytorch_half_pixel", "align_corners", "asymmetric", "tf_half_pixel_for_nn", "tf_crop_and_resize":
	default:
		c.fail("coordinate_transformation_mode %q is not supported", r.transform)
		return
	}
	switch r.nearest {
	case "round_prefer_floor", "round_prefer_ceil", "floor", "ceil":
	default:
		c.fail("nearest_mode %q is not supported", r.nearest)
		return
	}
	if !x.DType().IsFloat() {
		c.fail("%s inputs are not supported", FromTile(x.DType()))
		return
	}
	n := x.Rank()
	in := x.Shape()
	out := make([]int, n)
	scale := make([]float64, n)
	switch {
	case len(sizes) > 0:
		if len(sizes) != n {
			c.fail("sizes %v do not fit rank %d", sizes, n)
			return
		}
		for i, s := range sizes {
			if s < 0 || s > MaxElements {
				c.fail("sizes %v are out of range", sizes)
				return
			}
			out[i] = int(s)
			scale[i] = float64(s) / float64(in[i])
		}
	case len(scales) == n:
		for i, s := range scales {
			o := math.Floor(float64(in[i]) * s)
			if !(s > 0) || o > MaxElements {
				c.fail("scales %v are out of range", scales)
				return
			}
			out[i] = int(o)
			scale[i] = s
		}
	default:
		c.fail("scales %v or sizes %v do not fit rank %d", scales, sizes, n)
		return
	}
	if _, err := elementCount(int64s(out)); err != nil {
		c.fail("output: %v", err)
		return
	}
	if r.transform == "tf_crop_and_resize" && len(roi) != 2*n {
		c.fail("roi %v does not fit rank %d", roi, n)
		return
	}
	y := x
	for a := range n {
		if out[a] > maxIndexList {
			c.fail("an output of %d elements along axis %d is too large", out[a], a)
			return
		}
		var lo, hi float64
		if roi != nil {
			lo, hi = roi[a], roi[n+a]
		}
		y = resizeAxis(c, r, y, a, in[a], out[a], scale[a], lo, hi)
		if c.failed() {
			return
		}
	}
	c.set(0, y)
}

// resizeAxis interpolates x along axis from d to o elements.
func resizeAxis(c *ctx, r resizer, x *tile.Tensor, axis, d, o int, scale, roiLo, roiHi float64) *tile.Tensor {
	g := c.g
	if d == 0 || o == 0 {
		s := x.Shape()
		s[axis] = o
		if o > 0 {
			return c.fail("cannot resize an empty axis %d to %d", axis, o)
		}
		return g.Slice(x, make([]int, len(s)), s, nil)
	}
	taps := 2
	if r.mode == "cubic" {
		taps = 4
	}
	idx := make([][]int, taps)
	wts := make([][]float64, taps)
	outside := make([]bool, o)
	identity := o == d
	width := scale * float64(d)
	for j := range o {
		xj := float64(j)
		var src float64
		switch r.transform {
		case "half_pixel":
			src = (xj+0.5)/scale - 0.5
		case "pytorch_half_pixel":
			if width == 1 {
				src = -0.5
			} else {
				src = (xj+0.5)/scale - 0.5
			}
		case "align_corners":
			if width == 1 {
				src = 0
			} else {
				src = xj * float64(d-1) / (width - 1)
			}
		case "asymmetric":
			src = xj / scale
		case "tf_half_pixel_for_nn":
			src = (xj + 0.5) / scale
		case "tf_crop_and_resize":
			if width == 1 {
				src = (roiHi - roiLo) * float64(d-1) / 2
			} else {
				src = xj * (roiHi - roiLo) * float64(d-1) / (width - 1)
			}
			src += roiLo * float64(d-1)
			if src < 0 || src > float64(d-1) {
				outside[j] = true
				identity = false
			}
		}
		left := math.Ceil(src) - 1
		ratio := src - left // in (0, 1]
		var coef []float64
		first := left
		switch r.mode {
		case "nearest":
			pick := 1.0
			if ratio != 1 {
				switch r.nearest {
				case "round_prefer_floor":
					if ratio <= 0.5 {
						pick = 0
					}
				case "round_prefer_ceil":
					if ratio < 0.5 {
						pick = 0
					}
				case "floor":
					pick = 0
				case "ceil":
				}
			}
			coef = []float64{1 - pick, pick}
		case "linear":
			coef = []float64{1 - ratio, ratio}
		case "cubic":
			a := r.cubicA
			t := ratio + 1
			u := 1 - ratio
			v := u + 1
			coef = []float64{
				((a*t-5*a)*t+8*a)*t - 4*a,
				((a+2)*ratio-(a+3))*ratio*ratio + 1,
				((a+2)*u-(a+3))*u*u + 1,
				((a*v-5*a)*v+8*a)*v - 4*a,
			}
			first = left - 1
		}
		if r.excludeOutside {
			sum := 0.0
			for i := range coef {
				p := first + float64(i)
				if p < 0 || p > float64(d-1) {
					coef[i] = 0
				}
				sum += coef[i]
			}
			for i := range coef {
				coef[i] /= sum
			}
		}
		for i := range taps {
			p := int(min(max(first+float64(i), 0), float64(d-1)))
			idx[i] = append(idx[i], p)
			wts[i] = append(wts[i], coef[i])
			if coef[i] != 0 && (p != j || coef[i] != 1) {
				identity = false
			}
		}
	}
	if identity {
		return x
	}
	bshape := ones(x.Rank())
	bshape[axis] = o
	var y *tile.Tensor
	if r.mode == "nearest" {
		pick := make([]int, o)
		for j := range o {
			pick[j] = idx[0][j]
			if wts[1][j] == 1 {
				pick[j] = idx[1][j]
			}
		}
		y = gatherIndex(g, x, axis, pick)
	} else {
		for i := range taps {
			w, err := tile.ValueOf(x.DType(), bshape, wts[i])
			if err != nil {
				return c.fail("%v", err)
			}
			term := g.Mul(gatherIndex(g, x, axis, idx[i]), g.Constant(w))
			if y == nil {
				y = term
			} else {
				y = g.Add(y, term)
			}
		}
	}
	if r.transform == "tf_crop_and_resize" {
		mask := make([]float64, o)
		any := false
		for j, out := range outside {
			if out {
				mask[j] = 1
				any = true
			}
		}
		if any {
			mv, _ := tile.ValueOf(tile.Bool, bshape, mask)
			y = g.Select(g.Constant(mv), g.ScalarLike(y, r.extrapolation), y)
		}
	}
	return y
}
