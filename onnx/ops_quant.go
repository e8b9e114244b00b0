package onnx

import (
	"github.com/tartanml/tartan/op"
	"github.com/tartanml/tartan/tile"
)

// Quantization and integer arithmetic: QuantizeLinear, DequantizeLinear,
// DynamicQuantizeLinear, MatMulInteger, ConvInteger, QLinearMatMul,
// QLinearConv, and BitShift. Quantized values are 8-bit integers, held in
// int32 like every 8- and 16-bit type; products accumulate in int32.

func init() {
	register("QuantizeLinear", opQuantize)
	register("DequantizeLinear", opDequantize)
	register("DynamicQuantizeLinear", opDynamicQuantize)
	register("MatMulInteger", func(c *ctx) { opIntegerProduct(c, false) })
	register("ConvInteger", func(c *ctx) { opIntegerProduct(c, true) })
	register("QLinearMatMul", func(c *ctx) { opQLinear(c, false) })
	register("QLinearConv", func(c *ctx) { opQLinear(c, true) })
	register("BitShift", opBitShift)
}

// along reshapes a per-axis parameter (a scalar, or a vector of x's
// dimension axis) to broadcast against x.
func (c *ctx) along(p *tile.Tensor, x *tile.Tensor, axis int, what string) *tile.Tensor {
	if p.Size() == 1 {
		return c.g.Reshape(p, tile.Shape{})
	}
	if p.Rank() != 1 || axis < 0 || axis >= x.Rank() || p.Dim(0) != x.Dim(axis) {
		return c.fail("%s %v fits neither a scalar nor axis %d of %v", what, p.Shape(), axis, x.Shape())
	}
	s := ones(x.Rank())
	s[axis] = p.Dim(0)
	return c.g.Reshape(p, s)
}

// saturate rounds x (floating-point) half to even, clamps it to the range
// of the 8-bit type t and holds it in int32.
func saturate(g *tile.Graph, x *tile.Tensor, t DataType) *tile.Tensor {
	lo, hi := 0.0, 255.0
	if t == Int8 {
		lo, hi = -128, 127
	}
	r := roundEven(g, x)
	r = g.Minimum(g.Maximum(r, g.ScalarLike(r, lo)), g.ScalarLike(r, hi))
	return g.Cast(r, tile.Int32)
}

// quantType checks the type of a zero point (or quantized input).
func (c *ctx) quantType(i int, def DataType) DataType {
	t := def
	if c.has(i) {
		t = c.typ(i)
	}
	if t != Uint8 && t != Int8 {
		c.fail("input %d is %s; uint8 or int8 expected", i, t)
	}
	return t
}

func opQuantize(c *ctx) {
	x, scale := c.in(0), c.in(1)
	a := int64(1)
	if c.opset >= 13 {
		a = c.attrInt("axis", 1)
	}
	t := c.quantType(2, Uint8)
	if c.failed() {
		return
	}
	g := c.g
	ax := 0
	if scale.Size() != 1 {
		ax = c.axis(a, x.Rank(), "axis")
	}
	if c.failed() {
		return
	}
	xf := x
	if !x.DType().IsFloat() {
		xf = g.Cast(x, tile.Float32)
	}
	sc := g.Cast(c.along(scale, x, ax, "y_scale"), xf.DType())
	q := g.Div(xf, sc)
	q = roundEven(g, q)
	if c.has(2) {
		q = g.Add(q, g.Cast(c.along(c.in(2), x, ax, "y_zero_point"), xf.DType()))
	}
	c.set(0, saturate(g, q, t))
	c.setType(0, t)
}

func opDequantize(c *ctx) {
	x, scale := c.in(0), c.in(1)
	a := int64(1)
	if c.opset >= 13 {
		a = c.attrInt("axis", 1)
	}
	if c.failed() {
		return
	}
	if t := c.typ(0); t != Uint8 && t != Int8 && t != Int32 {
		c.fail("input 0 is %s; uint8, int8 or int32 expected", t)
		return
	}
	g := c.g
	ax := 0
	if scale.Size() != 1 {
		ax = c.axis(a, x.Rank(), "axis")
	}
	if c.failed() {
		return
	}
	dt := scale.DType()
	v := g.Cast(x, dt)
	if c.has(2) {
		v = g.Sub(v, g.Cast(c.along(c.in(2), x, ax, "x_zero_point"), dt))
	}
	c.set(0, g.Mul(v, c.along(scale, x, ax, "x_scale")))
}

func opDynamicQuantize(c *ctx) {
	x := c.in(0)
	if c.failed() {
		return
	}
	if x.DType() != tile.Float32 {
		c.fail("input %s%v must be float", c.typ(0), x.Shape())
		return
	}
	g := c.g
	all := make([]int, x.Rank())
	for i := range all {
		all[i] = i
	}
	zero := g.ScalarLike(x, 0)
	lo := g.Minimum(reduce(g, x, all, false, tile.Min), zero)
	hi := g.Maximum(reduce(g, x, all, false, tile.Max), zero)
	scale := g.Div(g.Sub(hi, lo), g.ScalarLike(x, 255))
	zp := saturate(g, g.Sub(zero, g.Div(lo, scale)), Uint8)
	y := saturate(g, g.Add(roundEven(g, g.Div(x, scale)), g.Cast(zp, tile.Float32)), Uint8)
	c.set(0, y)
	c.setType(0, Uint8)
	c.set(1, scale)
	c.set(2, zp)
	c.setType(2, Uint8)
}

// centred returns quantized input i minus its zero point (input zi), in
// int32; per-row (axis 0 of a matrix) or per-channel zero points broadcast
// along axis.
func (c *ctx) centred(i, zi, axis int) *tile.Tensor {
	x := c.in(i)
	c.quantType(i, Uint8)
	if c.failed() {
		return x
	}
	if !c.has(zi) {
		return x
	}
	c.quantType(zi, Uint8)
	z := c.in(zi)
	if c.failed() {
		return x
	}
	if z.Size() == 1 {
		return c.g.Sub(x, c.g.Reshape(z, tile.Shape{}))
	}
	return c.g.Sub(x, c.along(z, x, axis, "zero point"))
}

// opIntegerProduct is MatMulInteger or ConvInteger: the int32 product of
// the inputs less their zero points.
func opIntegerProduct(c *ctx, conv bool) {
	a, b := c.in(0), c.in(1)
	if c.failed() {
		return
	}
	var y *tile.Tensor
	if conv {
		x := c.centred(0, 2, -1)
		w := c.centred(1, 3, 0)
		if c.failed() {
			return
		}
		y = convolve(c, x, w)
	} else {
		x := c.centred(0, 2, a.Rank()-2)
		w := c.centred(1, 3, b.Rank()-1)
		if c.failed() {
			return
		}
		y = intMatMul(c.g, x, w)
	}
	c.set(0, y)
	c.setType(0, Int32)
}

// opQLinear is QLinearMatMul or QLinearConv: the int32 product of the
// centred inputs (plus the int32 bias of a convolution), scaled by
// x_scale·w_scale/y_scale and requantized to y_zero_point's type.
func opQLinear(c *ctx, conv bool) {
	a := c.in(0)
	b := c.in(3)
	if c.failed() {
		return
	}
	g := c.g
	var y *tile.Tensor
	out := c.quantType(7, Uint8)
	if conv {
		x := c.centred(0, 2, -1)
		w := c.centred(3, 5, 0)
		if c.failed() {
			return
		}
		y = convolve(c, x, w)
		if c.has(8) {
			y = addChannelBias(g, y, c.in(8))
		}
	} else {
		x := c.centred(0, 2, a.Rank()-2)
		w := c.centred(3, 5, b.Rank()-1)
		if c.failed() {
			return
		}
		y = intMatMul(g, x, w)
	}
	if c.failed() {
		return
	}
	yf := g.Cast(y, tile.Float64)
	as := g.Cast(c.in(1), tile.Float64)
	bs := g.Cast(c.in(4), tile.Float64)
	ys := g.Cast(c.in(6), tile.Float64)
	if conv {
		as = g.Reshape(as, tile.Shape{})
		if bs.Size() != 1 {
			bs = channel(g, bs, y.Rank())
		} else {
			bs = g.Reshape(bs, tile.Shape{})
		}
	} else {
		as = c.along(as, yf, yf.Rank()-2, "a_scale")
		bs = c.along(bs, yf, yf.Rank()-1, "b_scale")
	}
	ys = g.Reshape(ys, tile.Shape{})
	scaled := g.Mul(yf, g.Div(g.Mul(as, bs), ys))
	r := roundEven(g, scaled)
	if c.has(7) {
		r = g.Add(r, g.Cast(g.Reshape(c.in(7), tile.Shape{}), tile.Float64))
	}
	c.set(0, saturate(g, r, out))
	c.setType(0, out)
}

// intMatMul multiplies int32 matrices of centred 8-bit values exactly: in
// float64, whose 53-bit significand holds every such sum of products below
// 2^53 / 255² terms.
func intMatMul(g *tile.Graph, a, b *tile.Tensor) *tile.Tensor {
	return g.Cast(op.MatMul(g, g.Cast(a, tile.Float64), g.Cast(b, tile.Float64)), tile.Int32)
}

func opBitShift(c *ctx) {
	x, s := c.in(0), c.in(1)
	dir := c.attrString("direction", "")
	if c.failed() {
		return
	}
	t := c.typ(0)
	if t != Uint8 && t != Uint16 && t != Uint32 {
		c.fail("%s inputs are not supported (uint8, uint16 or uint32)", t)
		return
	}
	g := c.g
	n, _ := t.span()
	xf, sf := g.Cast(x, tile.Float64), g.Cast(s, tile.Float64)
	// Powers of two keep every step exact in float64; the left shift is
	// reduced modulo 2^bits before leaving it.
	p := g.Elementwise(tile.Pow, g.ScalarLike(xf, 2), g.Minimum(sf, g.ScalarLike(sf, 64)))
	k := g.ScalarLike(xf, n)
	switch dir {
	case "LEFT":
		v := g.Mul(xf, p)
		v = g.Sub(v, g.Mul(k, g.Elementwise(tile.Floor, g.Div(v, k))))
		c.set(0, g.Cast(v, x.DType()))
	case "RIGHT":
		c.set(0, g.Cast(g.Elementwise(tile.Floor, g.Div(xf, p)), x.DType()))
	default:
		c.fail("direction %q is not supported", dir)
	}
}
