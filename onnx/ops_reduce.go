package onnx

import (
	"fmt"
	"math"

	"github.com/tartanml/tartan/op"
	"github.com/tartanml/tartan/tile"
)

// Reductions, arg-extremes and the softmax family.

func init() {
	kinds := map[string]reduceKind{
		"ReduceSum": redSum, "ReduceMean": redMean, "ReduceMax": redMax,
		"ReduceMin": redMin, "ReduceProd": redProd, "ReduceL1": redL1,
		"ReduceL2": redL2, "ReduceLogSum": redLogSum,
		"ReduceLogSumExp": redLogSumExp, "ReduceSumSquare": redSumSquare,
	}
	for name, k := range kinds {
		since := int64(18) // axes became an input
		if k == redSum {
			since = 13
		}
		register(name, func(c *ctx) { opReduce(c, k, since) })
	}
	register("ArgMax", func(c *ctx) { opArg(c, true) })
	register("ArgMin", func(c *ctx) { opArg(c, false) })
	register("Softmax", func(c *ctx) { opSoftmax(c, op.Softmax) })
	register("LogSoftmax", func(c *ctx) { opSoftmax(c, op.LogSoftmax) })
	register("Hardmax", func(c *ctx) { opSoftmax(c, hardmax) })
}

type reduceKind int

const (
	redSum reduceKind = iota
	redMean
	redMax
	redMin
	redProd
	redL1
	redL2
	redLogSum
	redLogSumExp
	redSumSquare
)

// reduce aggregates x over axes with agg, keeping them as dimensions of 1
// when keep. An empty reduction gives the aggregation's identity.
func reduce(g *tile.Graph, x *tile.Tensor, axes []int, keep bool, agg tile.Agg) *tile.Tensor {
	s := x.Shape()
	red := map[int]bool{}
	for _, a := range axes {
		red[a] = true
	}
	var outShape tile.Shape
	var out, acc []tile.Affine
	empty := false
	for i, d := range s {
		ix := tile.Ix(fmt.Sprintf("i%d", i))
		acc = append(acc, ix)
		if red[i] {
			if d == 0 {
				empty = true
			}
			if keep {
				outShape = append(outShape, 1)
				out = append(out, tile.Lit(0))
			}
			continue
		}
		outShape = append(outShape, d)
		out = append(out, ix)
	}
	if outShape == nil {
		outShape = tile.Shape{}
	}
	if empty {
		id := 0.0
		switch agg {
		case tile.Prod:
			id = 1
		case tile.Max:
			id = math.Inf(-1)
		case tile.Min:
			id = math.Inf(1)
		}
		return g.BroadcastTo(g.Scalar(id, x.DType()), outShape)
	}
	if len(axes) == 0 {
		return x
	}
	return g.Contract(agg, tile.CombNone, outShape, out, []tile.Operand{{Tensor: x, Index: acc}})
}

func opReduce(c *ctx, k reduceKind, since int64) {
	x := c.in(0)
	keep := c.attrInt("keepdims", 1) != 0
	noop := false
	if c.opset >= since {
		noop = c.attrInt("noop_with_empty_axes", 0) != 0
	}
	as, given := c.axesFrom(since, 1)
	if c.failed() {
		return
	}
	var axes []int
	if given && len(as) > 0 {
		axes = c.axes(as, x.Rank(), "axis")
	} else if noop {
		c.set(0, x)
		return
	} else {
		for i := range x.Rank() {
			axes = append(axes, i)
		}
	}
	if c.failed() {
		return
	}
	g := c.g
	count := 1
	for _, a := range axes {
		count *= x.Dim(a)
	}
	var y *tile.Tensor
	switch k {
	case redSum:
		y = reduce(g, x, axes, keep, tile.Sum)
	case redMean:
		y = g.Div(reduce(g, x, axes, keep, tile.Sum), g.ScalarLike(x, float64(count)))
	case redMax:
		y = reduce(g, x, axes, keep, tile.Max)
	case redMin:
		y = reduce(g, x, axes, keep, tile.Min)
	case redProd:
		y = reduce(g, x, axes, keep, tile.Prod)
	case redL1:
		y = reduce(g, g.Elementwise(tile.Abs, x), axes, keep, tile.Sum)
	case redL2:
		y = reduce(g, g.Mul(x, x), axes, keep, tile.Sum)
		if x.DType().IsFloat() {
			y = g.Sqrt(y)
		} else {
			y = g.Cast(g.Sqrt(g.Cast(y, tile.Float64)), x.DType())
		}
	case redLogSum:
		y = g.Log(reduce(g, x, axes, keep, tile.Sum))
	case redLogSumExp:
		if count == 0 {
			y = reduce(g, x, axes, keep, tile.Max)
			break
		}
		m := reduce(g, x, axes, true, tile.Max)
		// A row of -inf keeps its maximum out of the subtraction. The
		// result does not depend on the shift, so it has no gradient (see
		// op.Softmax).
		safe := g.StopGradient(g.Select(g.Elementwise(tile.Eq, m, g.ScalarLike(m, math.Inf(-1))), g.ScalarLike(m, 0), m))
		y = g.Add(safe, g.Log(reduce(g, g.Exp(g.Sub(x, safe)), axes, true, tile.Sum)))
		if !keep {
			y = g.Reshape(y, reduce(g, x, axes, false, tile.Max).Shape())
		}
	case redSumSquare:
		y = reduce(g, g.Mul(x, x), axes, keep, tile.Sum)
	}
	c.set(0, y)
}

func opArg(c *ctx, isMax bool) {
	x := c.in(0)
	a := c.attrInt("axis", 0)
	keep := c.attrInt("keepdims", 1) != 0
	last := c.opset >= 12 && c.attrInt("select_last_index", 0) != 0
	if c.failed() {
		return
	}
	ax := c.axis(a, x.Rank(), "axis")
	if c.failed() {
		return
	}
	g := c.g
	d := x.Dim(ax)
	if d == 0 {
		c.fail("axis %d of %v is empty", ax, x.Shape())
		return
	}
	src := x
	if last && d > maxIndexList {
		c.fail("select_last_index over %d elements is too large", d)
		return
	}
	if last {
		idx := make([]int, d)
		for i := range idx {
			idx[i] = d - 1 - i
		}
		src = gatherIndex(g, x, ax, idx)
	}
	var y *tile.Tensor
	if isMax {
		y = op.ArgMax(g, src, ax)
	} else {
		y = op.ArgMin(g, src, ax)
	}
	if last {
		y = g.Sub(g.ScalarLike(y, float64(d-1)), y)
	}
	if keep {
		s := x.Shape()
		s[ax] = 1
		y = g.Reshape(y, s)
	}
	c.set(0, y)
}

// hardmax is 1 at the first maximum along axis and 0 elsewhere.
func hardmax(g *tile.Graph, x *tile.Tensor, axis int) *tile.Tensor {
	s := x.Shape()
	am := op.ArgMax(g, x, axis)
	ks := x.Shape()
	ks[axis] = 1
	am = g.Reshape(am, ks)
	pos := g.Iota(tile.Int64, s, axis)
	return g.Cast(g.Elementwise(tile.Eq, pos, am), x.DType())
}

// opSoftmax applies f along the axis: before opset 13 over the input
// flattened to 2-D at the axis (default 1), from 13 on along the one axis
// (default -1).
func opSoftmax(c *ctx, f func(*tile.Graph, *tile.Tensor, int) *tile.Tensor) {
	x := c.in(0)
	def := int64(-1)
	if c.opset < 13 {
		def = 1
	}
	a := c.attrInt("axis", def)
	if c.failed() {
		return
	}
	if !x.DType().IsFloat() {
		c.fail("%s inputs are not supported", FromTile(x.DType()))
		return
	}
	r := x.Rank()
	if c.opset >= 13 {
		ax := c.axis(a, r, "axis")
		if c.failed() {
			return
		}
		c.set(0, f(c.g, x, ax))
		return
	}
	if a < -int64(r) || a > int64(r) {
		c.fail("axis %d is out of range for rank %d", a, r)
		return
	}
	if a < 0 {
		a += int64(r)
	}
	s := x.Shape()
	outer, inner := 1, 1
	for i, d := range s {
		if int64(i) < a {
			outer *= d
		} else {
			inner *= d
		}
	}
	y := f(c.g, c.g.Reshape(x, tile.Shape{outer, inner}), 1)
	c.set(0, c.g.Reshape(y, s))
}
