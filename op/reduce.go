package op

import (
	"github.com/tartanml/tartan/tile"
)

// Sum returns the sum of x over axes. Negative axes count from the end; nil
// (or empty) axes mean every axis. With keepDims the reduced axes stay as
// dimensions of size 1, otherwise they are removed.
func Sum(g *tile.Graph, x *tile.Tensor, axes []int, keepDims bool) *tile.Tensor {
	return reduce(g, "sum", tile.Sum, x, axes, keepDims)
}

// Mean returns the arithmetic mean of floating-point x over axes, with Sum's
// conventions for axes and keepDims. The mean over an empty axis is NaN.
func Mean(g *tile.Graph, x *tile.Tensor, axes []int, keepDims bool) *tile.Tensor {
	const op = "mean"
	if !checkFloat(g, op, in("x", x)) {
		return invalid(g, op)
	}
	red, ok := reducedAxes(g, op, x, axes)
	if !ok {
		return invalid(g, op)
	}
	n := 1
	for d, r := range red {
		if r {
			n *= x.Dim(d)
		}
	}
	s := reduce(g, op, tile.Sum, x, axes, keepDims)
	return g.Div(s, scalar(g, x, float64(n)))
}

// Max returns the maximum of x over axes, with Sum's conventions for axes and
// keepDims. A NaN element makes its maximum NaN. The axes reduced must not be
// empty.
func Max(g *tile.Graph, x *tile.Tensor, axes []int, keepDims bool) *tile.Tensor {
	return reduce(g, "max", tile.Max, x, axes, keepDims)
}

// Min returns the minimum of x over axes, with Max's conventions.
func Min(g *tile.Graph, x *tile.Tensor, axes []int, keepDims bool) *tile.Tensor {
	return reduce(g, "min", tile.Min, x, axes, keepDims)
}

// ArgMax returns the i64 position along axis of the largest element of x,
// the first one when several are equal and the first NaN when there is one,
// as NumPy does. The axis is removed from the shape. Cast the result for
// another integer type.
func ArgMax(g *tile.Graph, x *tile.Tensor, axis int) *tile.Tensor {
	return argExtreme(g, "argmax", tile.Max, x, axis)
}

// ArgMin returns the i64 position along axis of the smallest element of x,
// with ArgMax's conventions for ties and NaN.
func ArgMin(g *tile.Graph, x *tile.Tensor, axis int) *tile.Tensor {
	return argExtreme(g, "argmin", tile.Min, x, axis)
}

// argExtreme finds the extreme m along axis, marks the positions equal to m
// (or NaN), replaces every other position's coordinate by the axis length,
// and takes the smallest coordinate left with a min contraction.
func argExtreme(g *tile.Graph, op string, agg tile.Agg, x *tile.Tensor, axis int) *tile.Tensor {
	if !check(g, op, in("x", x)) {
		return invalid(g, op)
	}
	if x.DType() == tile.Bool {
		return g.Errorf(op, "x must be numeric, got %s", desc(x))
	}
	ax, ok := normAxis(axis, x.Rank())
	if !ok {
		return g.Errorf(op, "axis %d out of range for x %s", axis, desc(x))
	}
	if x.Dim(ax) == 0 {
		return g.Errorf(op, "axis %d of x %s is empty", axis, desc(x))
	}
	m := reduce(g, op, agg, x, []int{ax}, true)
	hit := g.Elementwise(tile.Or, g.Elementwise(tile.Eq, x, m), g.Elementwise(tile.Ne, x, x))
	pos := g.Iota(tile.Int64, x.Shape(), ax)
	cand := g.Select(hit, pos, g.Scalar(float64(x.Dim(ax)), tile.Int64))
	return reduce(g, op, tile.Min, cand, []int{ax}, false)
}

// reducedAxes returns, per dimension of x, whether axes reduces it, recording
// an error for op on an out-of-range or repeated axis.
func reducedAxes(g *tile.Graph, op string, x *tile.Tensor, axes []int) ([]bool, bool) {
	red := make([]bool, x.Rank())
	if len(axes) == 0 {
		for d := range red {
			red[d] = true
		}
		return red, true
	}
	for _, a := range axes {
		d, ok := normAxis(a, x.Rank())
		if !ok {
			g.Errorf(op, "axis %d out of range for x %s", a, desc(x))
			return nil, false
		}
		if red[d] {
			g.Errorf(op, "axis %d repeated in %v for x %s", a, axes, desc(x))
			return nil, false
		}
		red[d] = true
	}
	return red, true
}

// reduce aggregates x over axes with one contraction: kept dimensions are
// indexed by the output, reduced ones only by the operand, and with keepDims
// the output writes them at index 0.
func reduce(g *tile.Graph, op string, agg tile.Agg, x *tile.Tensor, axes []int, keepDims bool) *tile.Tensor {
	if !check(g, op, in("x", x)) {
		return invalid(g, op)
	}
	if x.DType() == tile.Bool {
		return g.Errorf(op, "x must be numeric, got %s", desc(x))
	}
	red, ok := reducedAxes(g, op, x, axes)
	if !ok {
		return invalid(g, op)
	}
	var outShape tile.Shape
	var out []tile.Affine
	acc := ixs(names("a", x.Rank())...)
	for d, r := range red {
		switch {
		case !r:
			outShape = append(outShape, x.Dim(d))
			out = append(out, acc[d])
		case keepDims:
			outShape = append(outShape, 1)
			out = append(out, tile.Lit(0))
		}
		if r && agg != tile.Sum && x.Dim(d) == 0 {
			return g.Errorf(op, "cannot take the %s over empty axis %d of x %s", op, d, desc(x))
		}
	}
	if outShape == nil {
		outShape = tile.Shape{}
	}
	return g.Contract(agg, tile.CombNone, outShape, out, []tile.Operand{{Tensor: x, Index: acc}})
}
