package onnx

import (
	"github.com/tartanml/tartan/tile"
)

// RoiAlign with average pooling over a fixed sampling grid: every sample
// point of every bin is a bilinear read of X (N, C, H, W) at positions
// computed from the regions while running.

func init() { register("RoiAlign", opRoiAlign) }

func opRoiAlign(c *ctx) {
	x, rois, bidx := c.in(0), c.in(1), c.indexInput(2)
	mode := c.attrString("mode", "avg")
	oh, ow := int(c.attrInt("output_height", 1)), int(c.attrInt("output_width", 1))
	ratio := int(c.attrInt("sampling_ratio", 0))
	scale := c.attrFloat("spatial_scale", 1)
	transform := "output_half_pixel"
	if c.opset >= 16 {
		transform = c.attrString("coordinate_transformation_mode", "half_pixel")
	}
	if c.failed() {
		return
	}
	if mode != "avg" {
		c.fail("mode %q is not supported", mode)
		return
	}
	if transform != "half_pixel" && transform != "output_half_pixel" {
		c.fail("coordinate_transformation_mode %q is not supported", transform)
		return
	}
	if ratio <= 0 {
		c.fail("sampling_ratio %d (adaptive sampling, a count depending on the regions) is not supported", ratio)
		return
	}
	if oh < 1 || ow < 1 || int64(oh)*int64(ow)*int64(ratio)*int64(ratio) > maxIndexList {
		c.fail("output %d × %d with sampling_ratio %d is out of range", oh, ow, ratio)
		return
	}
	if x.Rank() != 4 || !x.DType().IsFloat() || rois.Rank() != 2 || rois.Dim(1) != 4 || !bidx.Shape().Equal(tile.Shape{rois.Dim(0)}) {
		c.fail("X %s%v, rois %v and batch_indices %v must be (N, C, H, W), (R, 4) and (R)", FromTile(x.DType()), x.Shape(), rois.Shape(), bidx.Shape())
		return
	}
	g := c.g
	n, ch, h, w := x.Dim(0), x.Dim(1), x.Dim(2), x.Dim(3)
	nr := rois.Dim(0)
	dt := x.DType()
	s := func(v float64) *tile.Tensor { return g.Scalar(v, dt) }
	grid := tile.Shape{nr, oh, ow, ratio, ratio}
	roi := func(k int) *tile.Tensor { // column k of rois, scaled, as (R, 1, 1, 1, 1)
		col := g.Slice(g.Cast(rois, dt), []int{0, k}, []int{nr, k + 1}, nil)
		v := g.Mul(g.Reshape(col, tile.Shape{nr, 1, 1, 1, 1}), s(scale))
		if transform == "half_pixel" {
			v = g.Sub(v, s(0.5))
		}
		return v
	}
	x1, y1, x2, y2 := roi(0), roi(1), roi(2), roi(3)
	rw, rh := g.Sub(x2, x1), g.Sub(y2, y1)
	if transform == "output_half_pixel" {
		rw, rh = g.Maximum(rw, s(1)), g.Maximum(rh, s(1))
	}
	bh, bw := g.Div(rh, s(float64(oh))), g.Div(rw, s(float64(ow)))
	sample := func(start, bin *tile.Tensor, binAxis, subAxis int) *tile.Tensor {
		p := g.Iota(dt, grid, binAxis)
		q := g.Add(g.Iota(dt, grid, subAxis), s(0.5))
		return g.Add(g.Add(start, g.Mul(p, bin)), g.Div(g.Mul(q, bin), s(float64(ratio))))
	}
	ys, xs := sample(y1, bh, 1, 3), sample(x1, bw, 2, 4)
	// Bilinear reads with the clamping of the reference implementation.
	valid := g.Elementwise(tile.And,
		g.Elementwise(tile.And, g.Elementwise(tile.Ge, ys, s(-1)), g.Elementwise(tile.Le, ys, s(float64(h)))),
		g.Elementwise(tile.And, g.Elementwise(tile.Ge, xs, s(-1)), g.Elementwise(tile.Le, xs, s(float64(w)))))
	axis := func(v *tile.Tensor, size int) (lo, hi, frac *tile.Tensor) {
		v = g.Maximum(v, s(0))
		lo = g.Elementwise(tile.Floor, v)
		top := s(float64(size - 1))
		edge := g.Elementwise(tile.Ge, lo, top)
		lo = g.Select(edge, g.BroadcastTo(top, v.Shape()), lo)
		hi = g.Select(edge, lo, g.Add(lo, s(1)))
		v = g.Select(edge, lo, v)
		return lo, hi, g.Sub(v, lo)
	}
	ylo, yhi, ly := axis(ys, h)
	xlo, xhi, lx := axis(xs, w)
	hy, hx := g.Sub(s(1), ly), g.Sub(s(1), lx)
	rows := g.Reshape(g.Transpose(x, []int{0, 2, 3, 1}), tile.Shape{n * h * w, ch})
	base := g.Mul(g.BroadcastTo(g.Reshape(bidx, tile.Shape{nr, 1, 1, 1, 1}), grid), g.Scalar(float64(h*w), tile.Int64))
	var sum *tile.Tensor
	tap := func(yy, xx, wt *tile.Tensor) {
		lin := g.Add(base, g.Add(g.Mul(g.Cast(yy, tile.Int64), g.Scalar(float64(w), tile.Int64)), g.Cast(xx, tile.Int64)))
		v := g.Gather(rows, lin, 0) // (R, oh, ow, r, r, C)
		wt = g.Select(valid, wt, g.BroadcastTo(s(0), grid))
		term := g.Mul(v, g.Reshape(wt, append(grid.Clone(), 1)))
		if sum == nil {
			sum = term
		} else {
			sum = g.Add(sum, term)
		}
	}
	tap(ylo, xlo, g.Mul(hy, hx))
	tap(ylo, xhi, g.Mul(hy, lx))
	tap(yhi, xlo, g.Mul(ly, hx))
	tap(yhi, xhi, g.Mul(ly, lx))
	avg := g.Div(reduce(g, sum, []int{3, 4}, false, tile.Sum), s(float64(ratio*ratio))) // (R, oh, ow, C)
	c.set(0, g.Transpose(avg, []int{0, 3, 1, 2}))
}
