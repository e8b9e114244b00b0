package op

import (
	"math"

	"github.com/tartanml/tartan/tile"
)

// UpSample2D enlarges x (N, H, W, C) by the integer factors size (one value
// for both dimensions or one per dimension) to (N, H·sh, W·sw, C), as Keras's
// UpSampling2D does. interpolation "nearest" repeats every row sh times and
// every column sw times; "bilinear" interpolates linearly along each
// dimension with half-pixel centres, output position Y reading input position
// (Y + ½)/sh − ½ clamped to [0, H − 1], which is what TensorFlow's
// tf.image.resize and PyTorch's interpolate(align_corners=False) compute.
func UpSample2D(g *tile.Graph, x *tile.Tensor, size []int, interpolation string) *tile.Tensor {
	const op = "upsample2d"
	if !checkFloat(g, op, in("x", x)) {
		return invalid(g, op)
	}
	if x.Rank() != 4 {
		return g.Errorf(op, "want x (N, H, W, C), got x %s", desc(x))
	}
	sz, err := spatialOption("size", size, 2, 2)
	if err != nil {
		return g.Errorf(op, "%v (x %s)", err, desc(x))
	}
	n, h, w, c := x.Dim(0), x.Dim(1), x.Dim(2), x.Dim(3)
	switch interpolation {
	case "nearest":
		y := g.Reshape(x, tile.Shape{n, h, 1, w, 1, c})
		y = g.BroadcastTo(y, tile.Shape{n, h, sz[0], w, sz[1], c})
		return g.Reshape(y, tile.Shape{n, h * sz[0], w * sz[1], c})
	case "bilinear":
		return ResizeBilinear(g, x, h*sz[0], w*sz[1])
	}
	return g.Errorf(op, "interpolation %q must be \"nearest\" or \"bilinear\" (x %s)", interpolation, desc(x))
}

// ResizeBilinear resizes x (N, H, W, C) to (N, height, width, C) with
// half-pixel linear interpolation along each dimension and no antialiasing:
// output position Y reads input position (Y + ½)·H/height − ½, clamped to
// [0, H − 1], as tf.image.resize(method="bilinear") and PyTorch's
// interpolate(mode="bilinear", align_corners=False) do.
func ResizeBilinear(g *tile.Graph, x *tile.Tensor, height, width int) *tile.Tensor {
	const op = "resize_bilinear"
	if !checkFloat(g, op, in("x", x)) {
		return invalid(g, op)
	}
	if x.Rank() != 4 || x.Dim(1) < 1 || x.Dim(2) < 1 {
		return g.Errorf(op, "want non-empty x (N, H, W, C), got x %s", desc(x))
	}
	if height < 1 || width < 1 {
		return g.Errorf(op, "size %d×%d must be positive (x %s)", height, width, desc(x))
	}
	return linearResize(g, linearResize(g, x, 1, height), 2, width)
}

// linearResize resizes x along axis to out positions with half-pixel linear
// interpolation: every output position reads its two neighbouring input
// positions (by Gather) and mixes them with constant weights.
func linearResize(g *tile.Graph, x *tile.Tensor, axis, out int) *tile.Tensor {
	n := x.Dim(axis)
	if n == out {
		return x
	}
	scale := float64(n) / float64(out)
	lo := make([]float64, out)
	hi := make([]float64, out)
	wt := make([]float64, out)
	for y := range out {
		src := math.Max((float64(y)+0.5)*scale-0.5, 0)
		i := int(math.Floor(src))
		if i > n-1 {
			i = n - 1
		}
		lo[y], hi[y], wt[y] = float64(i), float64(min(i+1, n-1)), src-float64(i)
	}
	dt := x.DType()
	wshape := make(tile.Shape, x.Rank())
	for d := range wshape {
		wshape[d] = 1
	}
	wshape[axis] = out
	loV, err1 := tile.ValueOf(tile.Int64, tile.Shape{out}, lo)
	hiV, err2 := tile.ValueOf(tile.Int64, tile.Shape{out}, hi)
	wV, err3 := tile.ValueOf(dt, wshape, wt)
	if err := firstError(err1, err2, err3); err != nil {
		return g.Errorf("upsample2d", "interpolation tables: %v (x %s)", err, desc(x))
	}
	a := g.Gather(x, g.Constant(loV), axis)
	b := g.Gather(x, g.Constant(hiV), axis)
	lambda := g.Constant(wV)
	// (1 − λ)·a + λ·b, the form PyTorch and TensorFlow evaluate.
	return g.Add(g.Mul(a, g.Sub(g.ScalarLike(lambda, 1), lambda)), g.Mul(b, lambda))
}

func firstError(errs ...error) error {
	for _, e := range errs {
		if e != nil {
			return e
		}
	}
	return nil
}
