package onnx

import (
	"github.com/tartanml/tartan/tile"
)

// GridSample: X (N, C, H, W) read at the normalised positions of a grid
// (N, Hout, Wout, 2), nearest, bilinear or bicubic, with zero, border or
// reflection padding. Every tap is a gather from X laid out as
// (N·H·W, C) at positions computed from the grid while running.

func init() { register("GridSample", opGridSample) }

func opGridSample(c *ctx) {
	x, grid := c.in(0), c.in(1)
	align := c.attrInt("align_corners", 0) != 0
	mode := c.attrString("mode", "bilinear")
	padding := c.attrString("padding_mode", "zeros")
	if c.failed() {
		return
	}
	switch mode {
	case "bilinear", "nearest", "bicubic":
	default:
		c.fail("mode %q is not supported", mode)
		return
	}
	switch padding {
	case "zeros", "border", "reflection":
	default:
		c.fail("padding_mode %q is not supported", padding)
		return
	}
	if x.Rank() != 4 || grid.Rank() != 4 || grid.Dim(3) != 2 || grid.Dim(0) != x.Dim(0) || !x.DType().IsFloat() {
		c.fail("X %s%v must be floating-point (N, C, H, W) and the grid %v (N, Hout, Wout, 2)", FromTile(x.DType()), x.Shape(), grid.Shape())
		return
	}
	g := c.g
	n, ch, h, w := x.Dim(0), x.Dim(1), x.Dim(2), x.Dim(3)
	ho, wo := grid.Dim(1), grid.Dim(2)
	grid = g.Cast(grid, x.DType())
	coord := func(k int) *tile.Tensor {
		return g.Reshape(g.Slice(grid, []int{0, 0, 0, k}, []int{n, ho, wo, k + 1}, nil), tile.Shape{n, ho, wo})
	}
	s := func(v float64) *tile.Tensor { return g.ScalarLike(x, v) }
	unnorm := func(v *tile.Tensor, size int) *tile.Tensor {
		if align {
			return g.Mul(g.Div(g.Add(v, s(1)), s(2)), s(float64(size-1)))
		}
		return g.Div(g.Sub(g.Mul(g.Add(v, s(1)), s(float64(size))), s(1)), s(2))
	}
	clip := func(v *tile.Tensor, size int) *tile.Tensor {
		return g.Minimum(g.Maximum(v, s(0)), s(float64(size-1)))
	}
	reflect := func(v *tile.Tensor, size int) *tile.Tensor {
		lo2, hi2 := -1.0, float64(2*size-1)
		if align {
			lo2, hi2 = 0, float64(2*(size-1))
		}
		if lo2 == hi2 {
			return g.Mul(v, s(0))
		}
		lo, span := lo2/2, (hi2-lo2)/2
		a := g.Elementwise(tile.Abs, g.Sub(v, s(lo)))
		flips := g.Elementwise(tile.Floor, g.Div(a, s(span)))
		extra := g.Sub(a, g.Mul(flips, s(span)))
		even := g.Elementwise(tile.Eq, g.Sub(flips, g.Mul(s(2), g.Elementwise(tile.Floor, g.Div(flips, s(2))))), s(0))
		r := g.Select(even, g.Add(extra, s(lo)), g.Add(g.Sub(s(span), extra), s(lo)))
		return clip(r, size)
	}
	pad := func(v *tile.Tensor, size int) *tile.Tensor {
		switch padding {
		case "border":
			return clip(v, size)
		case "reflection":
			return reflect(v, size)
		}
		return v
	}
	ix, iy := unnorm(coord(0), w), unnorm(coord(1), h)
	if mode != "bicubic" {
		ix, iy = pad(ix, w), pad(iy, h)
	}
	// X as rows (N·H·W, C); the batch offset of every output point.
	rows := g.Reshape(g.Transpose(x, []int{0, 2, 3, 1}), tile.Shape{n * h * w, ch})
	base := g.Mul(g.Iota(tile.Int64, tile.Shape{n, ho, wo}, 0), g.Scalar(float64(h*w), tile.Int64))
	var out *tile.Tensor
	tap := func(tx, ty, wt *tile.Tensor) {
		if mode == "bicubic" {
			tx, ty = pad(tx, w), pad(ty, h)
		}
		in := g.Elementwise(tile.And,
			g.Elementwise(tile.And, g.Elementwise(tile.Ge, tx, s(0)), g.Elementwise(tile.Le, tx, s(float64(w-1)))),
			g.Elementwise(tile.And, g.Elementwise(tile.Ge, ty, s(0)), g.Elementwise(tile.Le, ty, s(float64(h-1)))))
		cx, cy := g.Cast(clip(tx, w), tile.Int64), g.Cast(clip(ty, h), tile.Int64)
		lin := g.Add(base, g.Add(g.Mul(cy, g.Scalar(float64(w), tile.Int64)), cx))
		v := g.Gather(rows, lin, 0) // (N, Hout, Wout, C)
		wt = g.Select(in, wt, g.BroadcastTo(s(0), wt.Shape()))
		term := g.Mul(v, g.Reshape(wt, tile.Shape{n, ho, wo, 1}))
		if out == nil {
			out = term
		} else {
			out = g.Add(out, term)
		}
	}
	switch mode {
	case "nearest":
		tap(roundEven(g, ix), roundEven(g, iy), g.BroadcastTo(s(1), tile.Shape{n, ho, wo}))
	case "bilinear":
		x0, y0 := g.Elementwise(tile.Floor, ix), g.Elementwise(tile.Floor, iy)
		fx, fy := g.Sub(ix, x0), g.Sub(iy, y0)
		x1, y1 := g.Add(x0, s(1)), g.Add(y0, s(1))
		gx, gy := g.Sub(s(1), fx), g.Sub(s(1), fy)
		tap(x0, y0, g.Mul(gx, gy))
		tap(x1, y0, g.Mul(fx, gy))
		tap(x0, y1, g.Mul(gx, fy))
		tap(x1, y1, g.Mul(fx, fy))
	case "bicubic":
		x0, y0 := g.Elementwise(tile.Floor, ix), g.Elementwise(tile.Floor, iy)
		wx, wy := cubicWeights(g, g.Sub(ix, x0)), cubicWeights(g, g.Sub(iy, y0))
		for j := range 4 {
			ty := g.Add(y0, s(float64(j-1)))
			for i := range 4 {
				tap(g.Add(x0, s(float64(i-1))), ty, g.Mul(wx[i], wy[j]))
			}
		}
	}
	c.set(0, g.Transpose(out, []int{0, 3, 1, 2}))
}

// cubicWeights returns the four weights of cubic convolution (a = −0.75)
// at fraction t of the interval between the middle taps.
func cubicWeights(g *tile.Graph, t *tile.Tensor) [4]*tile.Tensor {
	const a = -0.75
	s := func(v float64) *tile.Tensor { return g.ScalarLike(t, v) }
	near := func(x *tile.Tensor) *tile.Tensor { // ((a+2)x − (a+3))x² + 1
		return g.Add(g.Mul(g.Sub(g.Mul(s(a+2), x), s(a+3)), g.Mul(x, x)), s(1))
	}
	far := func(x *tile.Tensor) *tile.Tensor { // ((a·x − 5a)x + 8a)x − 4a
		return g.Sub(g.Mul(g.Add(g.Mul(g.Sub(g.Mul(s(a), x), s(5*a)), x), s(8*a)), x), s(4*a))
	}
	one := s(1)
	return [4]*tile.Tensor{far(g.Add(t, one)), near(t), near(g.Sub(one, t)), far(g.Sub(s(2), t))}
}
