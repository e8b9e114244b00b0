package onnx

import (
	"math"

	"github.com/tartanml/tartan/op"
	"github.com/tartanml/tartan/tile"
)

// Elementwise math, comparisons, logic and activations.

func init() {
	unary := map[string]tile.Fn{
		"Abs": tile.Abs, "Neg": tile.Neg, "Exp": tile.Exp, "Log": tile.Log,
		"Sqrt": tile.Sqrt, "Reciprocal": tile.Recip, "Tanh": tile.Tanh,
		"Sigmoid": tile.Sigmoid, "Erf": tile.Erf, "Sign": tile.Sign,
		"Floor": tile.Floor, "Ceil": tile.Ceil,
	}
	for name, fn := range unary {
		register(name, func(c *ctx) {
			x := c.in(0)
			if fn != tile.Abs && fn != tile.Neg && fn != tile.Sign && !x.DType().IsFloat() && !c.failed() {
				c.fail("%s inputs are not supported", FromTile(x.DType()))
				return
			}
			c.set(0, c.g.Elementwise(fn, x))
		})
	}
	binary := map[string]tile.Fn{
		"Add": tile.Add, "Sub": tile.Sub, "Mul": tile.Mul, "Div": tile.Div,
		"Equal": tile.Eq, "Less": tile.Lt, "Greater": tile.Gt,
		"LessOrEqual": tile.Le, "GreaterOrEqual": tile.Ge,
		"And": tile.And, "Or": tile.Or, "Xor": tile.Ne,
	}
	for name, fn := range binary {
		register(name, func(c *ctx) {
			a, b := c.in(0), c.in(1)
			if c.failed() {
				return
			}
			if c.opset < 7 {
				c.ignore("consumed_inputs")
				b = legacyBroadcast(c, a, b)
				if c.failed() {
					return
				}
			}
			if (fn == tile.And || fn == tile.Or || fn == tile.Ne) && (a.DType() != tile.Bool || b.DType() != tile.Bool) {
				c.fail("%s needs bool inputs, not %s and %s", c.op, FromTile(a.DType()), FromTile(b.DType()))
				return
			}
			c.set(0, c.g.Elementwise(fn, a, b))
		})
	}
	register("Not", func(c *ctx) { c.set(0, c.g.Elementwise(tile.Not, c.in(0))) })
	register("Identity", func(c *ctx) {
		if !c.has(0) {
			c.fail("input 0 is missing")
			return
		}
		c.outs = append(c.outs, c.ins[0])
	})
	register("Where", func(c *ctx) { c.set(0, c.g.Select(c.in(0), c.in(1), c.in(2))) })
	register("IsNaN", func(c *ctx) {
		x := c.in(0)
		c.set(0, c.g.Elementwise(tile.Ne, x, x))
	})
	register("IsInf", func(c *ctx) {
		x := c.in(0)
		pos, neg := c.attrInt("detect_positive", 1) != 0, c.attrInt("detect_negative", 1) != 0
		if c.failed() {
			return
		}
		r := c.g.BroadcastTo(c.g.Scalar(0, tile.Bool), x.Shape())
		if pos {
			r = c.g.Elementwise(tile.Or, r, c.g.Elementwise(tile.Eq, x, c.g.ScalarLike(x, math.Inf(1))))
		}
		if neg {
			r = c.g.Elementwise(tile.Or, r, c.g.Elementwise(tile.Eq, x, c.g.ScalarLike(x, math.Inf(-1))))
		}
		c.set(0, r)
	})
	register("Pow", opPow)
	register("Mod", opMod)
	register("Round", opRound)
	for name, fn := range map[string]tile.Fn{"Max": tile.Maximum, "Min": tile.Minimum, "Sum": tile.Add, "Mean": tile.Add} {
		register(name, func(c *ctx) {
			if c.opset < 6 {
				c.ignore("consumed_inputs")
			}
			if c.nin() == 0 {
				c.fail("no inputs")
				return
			}
			r := c.in(0)
			for i := 1; i < c.nin(); i++ {
				r = c.g.Elementwise(fn, r, c.in(i))
			}
			if name == "Mean" {
				r = c.g.Div(r, c.g.ScalarLike(r, float64(c.nin())))
			}
			c.set(0, r)
		})
	}
	register("Clip", opClip)
	register("Cast", func(c *ctx) {
		to, dt := c.attrType("to", Undefined)
		c.ignore("saturate")
		x := c.in(0)
		if c.failed() {
			return
		}
		c.set(0, castTo(c.g, x, to, dt))
		c.setType(0, to)
	})
	register("CastLike", func(c *ctx) {
		c.ignore("saturate")
		x := c.in(0)
		to := c.typ(1)
		if c.failed() {
			return
		}
		c.set(0, castTo(c.g, x, to, c.dtype(1)))
		c.setType(0, to)
	})

	// Hyperbolic functions, from exponentials and logarithms.
	register("Sinh", floatUnary(func(g *tile.Graph, x *tile.Tensor) *tile.Tensor {
		return g.Mul(g.Sub(g.Exp(x), g.Exp(g.Neg(x))), g.ScalarLike(x, 0.5))
	}))
	register("Cosh", floatUnary(func(g *tile.Graph, x *tile.Tensor) *tile.Tensor {
		return g.Mul(g.Add(g.Exp(x), g.Exp(g.Neg(x))), g.ScalarLike(x, 0.5))
	}))
	register("Asinh", floatUnary(func(g *tile.Graph, x *tile.Tensor) *tile.Tensor {
		return g.Log(g.Add(x, g.Sqrt(g.Add(g.Mul(x, x), g.ScalarLike(x, 1)))))
	}))
	register("Acosh", floatUnary(func(g *tile.Graph, x *tile.Tensor) *tile.Tensor {
		return g.Log(g.Add(x, g.Sqrt(g.Sub(g.Mul(x, x), g.ScalarLike(x, 1)))))
	}))
	register("Atanh", floatUnary(func(g *tile.Graph, x *tile.Tensor) *tile.Tensor {
		one := g.ScalarLike(x, 1)
		return g.Mul(g.Log(g.Div(g.Add(one, x), g.Sub(one, x))), g.ScalarLike(x, 0.5))
	}))

	// Activations.
	register("Relu", floatUnary(op.ReLU))
	register("LeakyRelu", func(c *ctx) {
		alpha := c.attrFloat("alpha", 0.01)
		c.set(0, op.LeakyReLU(c.g, c.in(0), alpha))
	})
	register("Elu", func(c *ctx) {
		alpha := c.attrFloat("alpha", 1)
		c.set(0, op.ELU(c.g, c.in(0), alpha))
	})
	register("Selu", func(c *ctx) {
		alpha := c.attrFloat("alpha", 1.67326319217681884765625)
		gamma := c.attrFloat("gamma", 1.05070102214813232421875)
		x := c.in(0)
		g := c.g
		neg := g.Mul(g.ScalarLike(x, alpha), g.Sub(g.Exp(g.Minimum(x, g.ScalarLike(x, 0))), g.ScalarLike(x, 1)))
		c.set(0, g.Mul(g.ScalarLike(x, gamma), g.Select(g.Elementwise(tile.Gt, x, g.ScalarLike(x, 0)), x, neg)))
	})
	register("Celu", func(c *ctx) {
		alpha := c.attrFloat("alpha", 1)
		x := c.in(0)
		g := c.g
		zero := g.ScalarLike(x, 0)
		neg := g.Mul(g.ScalarLike(x, alpha), g.Sub(g.Exp(g.Div(g.Minimum(x, zero), g.ScalarLike(x, alpha))), g.ScalarLike(x, 1)))
		c.set(0, g.Add(g.Maximum(x, zero), g.Minimum(zero, neg)))
	})
	register("HardSigmoid", func(c *ctx) {
		alpha, beta := c.attrFloat("alpha", 0.2), c.attrFloat("beta", 0.5)
		x := c.in(0)
		c.set(0, hardSigmoid(c.g, x, alpha, beta))
	})
	register("HardSwish", floatUnary(func(g *tile.Graph, x *tile.Tensor) *tile.Tensor {
		return g.Mul(x, hardSigmoid(g, x, 1.0/6, 0.5))
	}))
	register("Softplus", floatUnary(op.Softplus))
	register("Softsign", floatUnary(func(g *tile.Graph, x *tile.Tensor) *tile.Tensor {
		return g.Div(x, g.Add(g.ScalarLike(x, 1), g.Elementwise(tile.Abs, x)))
	}))
	register("Mish", floatUnary(func(g *tile.Graph, x *tile.Tensor) *tile.Tensor {
		return g.Mul(x, g.Tanh(op.Softplus(g, x)))
	}))
	register("ThresholdedRelu", func(c *ctx) {
		alpha := c.attrFloat("alpha", 1)
		x := c.in(0)
		g := c.g
		c.set(0, g.Select(g.Elementwise(tile.Gt, x, g.ScalarLike(x, alpha)), x, g.ScalarLike(x, 0)))
	})
	register("PRelu", func(c *ctx) {
		x, slope := c.in(0), c.in(1)
		g := c.g
		if c.failed() {
			return
		}
		if c.opset < 7 {
			// One slope, or one per channel (axis 1), or one per element.
			c.ignore("consumed_inputs")
			switch {
			case slope.Size() == 1:
				slope = g.Reshape(slope, tile.Shape{})
			case slope.Rank() == 1 && x.Rank() >= 2 && slope.Dim(0) == x.Dim(1):
				slope = g.Reshape(slope, append(tile.Shape{1, slope.Dim(0)}, ones(x.Rank()-2)...))
			case slope.Shape().Equal(x.Shape()):
			default:
				c.fail("slopes of shape %v do not fit input %v at opset %d", slope.Shape(), x.Shape(), c.opset)
				return
			}
		}
		c.set(0, g.Select(g.Elementwise(tile.Lt, x, g.ScalarLike(x, 0)), g.Mul(slope, x), x))
	})
	register("Shrink", func(c *ctx) {
		bias, lambd := c.attrFloat("bias", 0), c.attrFloat("lambd", 0.5)
		x := c.in(0)
		g := c.g
		if c.failed() {
			return
		}
		r := g.Select(g.Elementwise(tile.Lt, x, g.ScalarLike(x, -lambd)), g.Add(x, g.ScalarLike(x, bias)),
			g.Select(g.Elementwise(tile.Gt, x, g.ScalarLike(x, lambd)), g.Sub(x, g.ScalarLike(x, bias)), g.ScalarLike(x, 0)))
		c.set(0, g.BroadcastTo(r, x.Shape()))
	})
}

// legacyBroadcast applies the broadcasting of opsets before 7: without the
// broadcast attribute both shapes must be equal; with it, b's dimensions
// match a's from axis on (by default, a's last ones) and b is repeated over
// the others.
func legacyBroadcast(c *ctx, a, b *tile.Tensor) *tile.Tensor {
	on := c.attrInt("broadcast", 0) != 0
	ra, rb := a.Rank(), b.Rank()
	axis := int64(ra - rb)
	if c.hasAttr("axis") {
		axis = c.attrInt("axis", 0)
		if axis < 0 {
			axis += int64(ra)
		}
	}
	if c.failed() {
		return b
	}
	if !on {
		if !a.Shape().Equal(b.Shape()) {
			return c.fail("shapes %v and %v differ, and broadcast is not set", a.Shape(), b.Shape())
		}
		return b
	}
	if axis < 0 || axis+int64(rb) > int64(ra) {
		return c.fail("B %v does not fit A %v at axis %d", b.Shape(), a.Shape(), axis)
	}
	s := append(append(ones(int(axis)), b.Shape()...), ones(ra-int(axis)-rb)...)
	for i, d := range s {
		if d != 1 && d != a.Dim(i) {
			return c.fail("B %v does not fit A %v at axis %d", b.Shape(), a.Shape(), axis)
		}
	}
	return c.g.BroadcastTo(c.g.Reshape(b, s), a.Shape())
}

// castTo converts x to ONNX type to held in dt; floating-point values
// become 8- and 16-bit integers by truncation toward zero, before wrapping.
func castTo(g *tile.Graph, x *tile.Tensor, to DataType, dt tile.DType) *tile.Tensor {
	if to.narrow() && x.DType().IsFloat() {
		return g.Cast(trunc(g, x), dt)
	}
	return g.Cast(x, dt)
}

// floatUnary registers a function of one floating-point input.
func floatUnary(f func(g *tile.Graph, x *tile.Tensor) *tile.Tensor) opFunc {
	return func(c *ctx) {
		x := c.in(0)
		if c.failed() {
			return
		}
		if !x.DType().IsFloat() {
			c.fail("%s inputs are not supported", FromTile(x.DType()))
			return
		}
		c.set(0, f(c.g, x))
	}
}

func hardSigmoid(g *tile.Graph, x *tile.Tensor, alpha, beta float64) *tile.Tensor {
	y := g.Add(g.Mul(x, g.ScalarLike(x, alpha)), g.ScalarLike(x, beta))
	return g.Maximum(g.ScalarLike(x, 0), g.Minimum(g.ScalarLike(x, 1), y))
}

// opPow raises input 0 to input 1; the result has input 0's type. Integer
// operands are computed in float64 and converted back.
func opPow(c *ctx) {
	x, y := c.in(0), c.in(1)
	if c.failed() {
		return
	}
	g := c.g
	if x.DType().IsFloat() {
		c.set(0, g.Elementwise(tile.Pow, x, g.Cast(y, x.DType())))
		return
	}
	r := g.Elementwise(tile.Pow, g.Cast(x, tile.Float64), g.Cast(y, tile.Float64))
	c.set(0, g.Cast(r, x.DType()))
}

// trunc rounds toward zero.
func trunc(g *tile.Graph, x *tile.Tensor) *tile.Tensor {
	return g.Select(g.Elementwise(tile.Lt, x, g.ScalarLike(x, 0)), g.Elementwise(tile.Ceil, x), g.Elementwise(tile.Floor, x))
}

// opMod is the remainder with the divisor's sign (fmod=0, integers only)
// or the dividend's (fmod=1, C's fmod).
func opMod(c *ctx) {
	fmod := c.attrInt("fmod", 0)
	a, b := c.in(0), c.in(1)
	if c.failed() {
		return
	}
	g := c.g
	if a.DType().IsFloat() {
		if fmod != 1 {
			c.fail("fmod=0 with %s inputs is not defined", FromTile(a.DType()))
			return
		}
		x, y := g.Cast(a, tile.Float64), g.Cast(b, tile.Float64)
		r := g.Sub(x, g.Mul(y, trunc(g, g.Div(x, y))))
		c.set(0, g.Cast(r, a.DType()))
		return
	}
	r := g.Sub(a, g.Mul(b, g.Div(a, b))) // integer division truncates
	if fmod == 0 {
		zero := g.ScalarLike(r, 0)
		differ := g.Elementwise(tile.Ne, g.Elementwise(tile.Lt, r, zero), g.Elementwise(tile.Lt, b, zero))
		fix := g.Elementwise(tile.And, g.Elementwise(tile.Ne, r, zero), differ)
		r = g.Select(fix, g.Add(r, b), r)
	}
	c.set(0, r)
}

// opRound rounds to the nearest integer, halves to even.
func opRound(c *ctx) {
	x := c.in(0)
	if c.failed() {
		return
	}
	c.set(0, roundEven(c.g, x))
}

// roundEven rounds x to the nearest integer, halves to even.
func roundEven(g *tile.Graph, x *tile.Tensor) *tile.Tensor {
	f := g.Elementwise(tile.Floor, x)
	d := g.Sub(x, f)
	half := g.ScalarLike(x, 0.5)
	one := g.ScalarLike(x, 1)
	two := g.ScalarLike(x, 2)
	odd := g.Elementwise(tile.Ne, g.Sub(f, g.Mul(two, g.Elementwise(tile.Floor, g.Div(f, two)))), g.ScalarLike(x, 0))
	up := g.Elementwise(tile.Or, g.Elementwise(tile.Gt, d, half), g.Elementwise(tile.And, g.Elementwise(tile.Eq, d, half), odd))
	return g.Select(up, g.Add(f, one), f)
}

// opClip bounds input 0 by min and max: attributes before opset 11,
// optional inputs from 11 on.
func opClip(c *ctx) {
	x := c.in(0)
	if c.failed() {
		return
	}
	g := c.g
	if c.opset < 11 {
		c.ignore("consumed_inputs")
		lo, hi := c.attrFloat("min", math.Inf(-1)), c.attrFloat("max", math.Inf(1))
		c.set(0, g.Minimum(g.Maximum(x, g.ScalarLike(x, lo)), g.ScalarLike(x, hi)))
		return
	}
	r := x
	if c.has(1) {
		r = g.Maximum(r, c.in(1))
	}
	if c.has(2) {
		r = g.Minimum(r, c.in(2))
	}
	c.set(0, r)
}
