package onnx

import (
	"math"

	"github.com/tartanml/tartan/tile"
)

// Trigonometric functions, which tile has no elementwise function for,
// written from its arithmetic: computed in float64 and rounded to the input's
// type. Sine and cosine reduce the argument by multiples of π/2 in three parts
// (Cody and Waite) and sum Taylor polynomials on [−π/4, π/4], so they keep
// float32's accuracy for |x| below about 2^20 and lose it gradually beyond;
// the arc tangent reduces its argument to [0, tan(π/12)] and sums its
// series there; arcsine and arccosine come from it.

func init() {
	register("Sin", floatUnary(func(g *tile.Graph, x *tile.Tensor) *tile.Tensor { return in64(g, x, sin64) }))
	register("Cos", floatUnary(func(g *tile.Graph, x *tile.Tensor) *tile.Tensor { return in64(g, x, cos64) }))
	register("Tan", floatUnary(func(g *tile.Graph, x *tile.Tensor) *tile.Tensor {
		return in64(g, x, func(g *tile.Graph, x *tile.Tensor) *tile.Tensor { return g.Div(sin64(g, x), cos64(g, x)) })
	}))
	register("Atan", floatUnary(func(g *tile.Graph, x *tile.Tensor) *tile.Tensor { return in64(g, x, atan64) }))
	register("Asin", floatUnary(func(g *tile.Graph, x *tile.Tensor) *tile.Tensor { return in64(g, x, asin64) }))
	register("Acos", floatUnary(func(g *tile.Graph, x *tile.Tensor) *tile.Tensor {
		return in64(g, x, func(g *tile.Graph, x *tile.Tensor) *tile.Tensor {
			return g.Sub(g.ScalarLike(x, math.Pi/2), asin64(g, x))
		})
	}))
}

// in64 applies f to x computed in float64.
func in64(g *tile.Graph, x *tile.Tensor, f func(*tile.Graph, *tile.Tensor) *tile.Tensor) *tile.Tensor {
	return g.Cast(f(g, g.Cast(x, tile.Float64)), x.DType())
}

// poly evaluates Σ coef[i]·t^i by Horner's rule.
func poly(g *tile.Graph, t *tile.Tensor, coef []float64) *tile.Tensor {
	r := g.BroadcastTo(g.ScalarLike(t, coef[len(coef)-1]), t.Shape())
	for i := len(coef) - 2; i >= 0; i-- {
		r = g.Add(g.Mul(r, t), g.ScalarLike(t, coef[i]))
	}
	return r
}

// reduceQuarter returns r = x − k·π/2 with k the nearest integer to x·2/π,
// and q = k mod 4.
func reduceQuarter(g *tile.Graph, x *tile.Tensor) (r, q *tile.Tensor) {
	k := g.Elementwise(tile.Floor, g.Add(g.Mul(x, g.ScalarLike(x, 2/math.Pi)), g.ScalarLike(x, 0.5)))
	// π/2 split into parts whose products with k are exact.
	const p1, p2 = 1.5707963267341256e+00, 6.077100506506192e-11
	const p3 = math.Pi/2 - p1 - p2
	r = g.Sub(x, g.Mul(k, g.ScalarLike(x, p1)))
	r = g.Sub(r, g.Mul(k, g.ScalarLike(x, p2)))
	r = g.Sub(r, g.Mul(k, g.ScalarLike(x, p3)))
	q = g.Sub(k, g.Mul(g.ScalarLike(k, 4), g.Elementwise(tile.Floor, g.Mul(k, g.ScalarLike(k, 0.25)))))
	return r, q
}

// sinCosPoly returns sin r and cos r for |r| ≤ π/4.
func sinCosPoly(g *tile.Graph, r *tile.Tensor) (s, c *tile.Tensor) {
	r2 := g.Mul(r, r)
	var sc, cc []float64
	f := 1.0
	for i := 0; i <= 18; i++ {
		if i > 0 {
			f *= float64(i)
		}
		sign := 1.0
		if (i/2)%2 == 1 {
			sign = -1
		}
		if i%2 == 0 {
			cc = append(cc, sign/f)
		} else {
			sc = append(sc, sign/f)
		}
	}
	s = g.Mul(r, poly(g, r2, sc))
	c = poly(g, r2, cc)
	return s, c
}

// quadrant picks one of four values by q ∈ {0, 1, 2, 3}.
func quadrant(g *tile.Graph, q *tile.Tensor, v [4]*tile.Tensor) *tile.Tensor {
	is := func(k float64) *tile.Tensor { return g.Elementwise(tile.Eq, q, g.ScalarLike(q, k)) }
	return g.Select(is(0), v[0], g.Select(is(1), v[1], g.Select(is(2), v[2], v[3])))
}

func sin64(g *tile.Graph, x *tile.Tensor) *tile.Tensor {
	r, q := reduceQuarter(g, x)
	s, c := sinCosPoly(g, r)
	return quadrant(g, q, [4]*tile.Tensor{s, c, g.Neg(s), g.Neg(c)})
}

func cos64(g *tile.Graph, x *tile.Tensor) *tile.Tensor {
	r, q := reduceQuarter(g, x)
	s, c := sinCosPoly(g, r)
	return quadrant(g, q, [4]*tile.Tensor{c, g.Neg(s), g.Neg(c), s})
}

// atan64 is the arc tangent: atan(−x) = −atan x, atan x = π/2 − atan(1/x)
// above 1, atan t = π/6 + atan((√3·t − 1)/(t + √3)) above tan(π/12), and
// the series t − t³/3 + t⁵/5 − … below.
func atan64(g *tile.Graph, x *tile.Tensor) *tile.Tensor {
	ax := g.Elementwise(tile.Abs, x)
	big := g.Elementwise(tile.Gt, ax, g.ScalarLike(x, 1))
	t := g.Select(big, g.Div(g.ScalarLike(x, 1), ax), ax)
	mid := g.Elementwise(tile.Gt, t, g.ScalarLike(x, 2-math.Sqrt(3)))
	s3 := g.ScalarLike(x, math.Sqrt(3))
	t = g.Select(mid, g.Div(g.Sub(g.Mul(t, s3), g.ScalarLike(x, 1)), g.Add(t, s3)), t)
	var coef []float64
	for i := 0; i < 14; i++ {
		sign := 1.0
		if i%2 == 1 {
			sign = -1
		}
		coef = append(coef, sign/float64(2*i+1))
	}
	a := g.Mul(t, poly(g, g.Mul(t, t), coef))
	a = g.Select(mid, g.Add(a, g.ScalarLike(x, math.Pi/6)), a)
	a = g.Select(big, g.Sub(g.ScalarLike(x, math.Pi/2), a), a)
	// NaN stays NaN through the selects above; restore the sign.
	return g.Select(g.Elementwise(tile.Lt, x, g.ScalarLike(x, 0)), g.Neg(a), a)
}

// asin64 is atan(x / √(1 − x²)): ±π/2 at ±1, NaN beyond.
func asin64(g *tile.Graph, x *tile.Tensor) *tile.Tensor {
	return atan64(g, g.Div(x, g.Sqrt(g.Sub(g.ScalarLike(x, 1), g.Mul(x, x)))))
}
