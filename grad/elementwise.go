package grad

import (
	"math"

	"github.com/tartanml/tartan/tile"
)

// Derivative rules for elementwise functions and casts.
//
// The operands of an elementwise node always have the node's shape (the tile
// builder makes broadcasting explicit), so each rule is elementwise too: with
// y = f(a, b) and cotangent dy, da = dy · ∂f/∂a. Where it is cheaper or more
// accurate the rules reuse the node's own value y (Exp, Sqrt, Tanh, Sigmoid,
// Recip, Rsqrt, Div).
//
// Conventions at points where a derivative does not exist:
//
//   - Abs has derivative sign(a), so 0 at a = 0.
//   - Sign, Floor and Ceil have derivative 0 (their derivative is zero wherever
//     it exists); the walk does not propagate through them at all.
//   - Maximum sends the cotangent to a where a ≥ b or a is NaN, and to b
//     elsewhere; Minimum to a where a ≤ b or a is NaN, and to b elsewhere.
//     Ties therefore go to the first operand, and a NaN result's cotangent
//     goes to the operand it came from (a when both are NaN), so that a NaN
//     is never cut off from its gradient.
//   - Pow's derivative with respect to the exponent, log(a) · a^b, is taken as
//     0 where a ≤ 0: there a^b is either constant in b (a = 0, b > 0) or defined
//     only at integer b.
//   - Comparisons, And, Or and Not return Bool and carry no derivative; Select
//     carries none to its condition and sends the cotangent to the branch it
//     chose.
//
// A Cast between floating-point dtypes has the cast back as its derivative;
// casts from or to integers and Bool carry none.

// elementwiseDiffArgs returns the operand positions of f that carry a
// derivative.
func elementwiseDiffArgs(f tile.Fn) []int {
	switch f {
	case tile.Neg, tile.Abs, tile.Exp, tile.Log, tile.Log1p, tile.Sqrt, tile.Rsqrt, tile.Tanh,
		tile.Sigmoid, tile.Erf, tile.Recip:
		return []int{0}
	case tile.Add, tile.Sub, tile.Mul, tile.Div, tile.Pow, tile.Maximum, tile.Minimum:
		return []int{0, 1}
	case tile.Select:
		return []int{1, 2}
	}
	// Sign, Floor, Ceil: zero derivative; Not, comparisons, And, Or: Bool.
	return nil
}

// elementwiseRule builds the cotangents of the operands of t = f(args…) from
// its cotangent dy, for the positions marked in want.
func elementwiseRule(g *tile.Graph, t *tile.Tensor, f tile.Fn, dy *tile.Tensor, want []bool) []*tile.Tensor {
	args := t.Args()
	out := make([]*tile.Tensor, len(args))
	c := func(k float64) *tile.Tensor { return g.ScalarLike(t, k) }
	a := args[0]
	var b *tile.Tensor
	if len(args) > 1 {
		b = args[1]
	}
	switch f {
	case tile.Neg:
		out[0] = g.Neg(dy)
	case tile.Abs:
		out[0] = g.Mul(dy, g.Elementwise(tile.Sign, a))
	case tile.Exp:
		out[0] = g.Mul(dy, t)
	case tile.Log:
		out[0] = g.Div(dy, a)
	case tile.Log1p:
		out[0] = g.Div(dy, g.Add(a, c(1)))
	case tile.Sqrt:
		// d√a = 1 / (2√a).
		out[0] = g.Div(dy, g.Mul(t, c(2)))
	case tile.Rsqrt:
		// d a^(-1/2) = -½ a^(-3/2) = -½ y³.
		out[0] = g.Mul(dy, g.Mul(g.Mul(g.Mul(t, t), t), c(-0.5)))
	case tile.Tanh:
		out[0] = g.Mul(dy, g.Sub(c(1), g.Mul(t, t)))
	case tile.Sigmoid:
		out[0] = g.Mul(dy, g.Mul(t, g.Sub(c(1), t)))
	case tile.Erf:
		// d erf(a) = 2/√π · e^(-a²).
		out[0] = g.Mul(dy, g.Mul(g.Exp(g.Neg(g.Mul(a, a))), c(2/math.SqrtPi)))
	case tile.Recip:
		// d(1/a) = -1/a² = -y².
		out[0] = g.Neg(g.Mul(dy, g.Mul(t, t)))
	case tile.Add:
		out[0], out[1] = dy, dy
	case tile.Sub:
		out[0] = dy
		if want[1] {
			out[1] = g.Neg(dy)
		}
	case tile.Mul:
		if want[0] {
			out[0] = g.Mul(dy, b)
		}
		if want[1] {
			out[1] = g.Mul(dy, a)
		}
	case tile.Div:
		// y = a/b: da = dy/b, db = -dy·a/b² = -dy·y/b.
		if want[0] {
			out[0] = g.Div(dy, b)
		}
		if want[1] {
			out[1] = g.Neg(g.Div(g.Mul(dy, t), b))
		}
	case tile.Pow:
		// y = a^b: da = dy·b·a^(b-1), db = dy·y·log(a) (0 where a ≤ 0).
		if want[0] {
			out[0] = g.Mul(dy, g.Mul(b, g.Elementwise(tile.Pow, a, g.Sub(b, c(1)))))
		}
		if want[1] {
			positive := g.Elementwise(tile.Gt, a, c(0))
			logA := g.Log(g.Select(positive, a, c(1)))
			out[1] = g.Mul(dy, g.Mul(t, logA))
		}
	case tile.Maximum, tile.Minimum:
		cmp := tile.Ge
		if f == tile.Minimum {
			cmp = tile.Le
		}
		// a ≥ b (or ≤) or a is NaN: where the result is a's value.
		first := g.Elementwise(tile.Or, g.Elementwise(cmp, a, b), g.Elementwise(tile.Ne, a, a))
		if want[0] {
			out[0] = g.Select(first, dy, c(0))
		}
		if want[1] {
			out[1] = g.Select(first, c(0), dy)
		}
	case tile.Select:
		cond := a
		if want[1] {
			out[1] = g.Select(cond, dy, c(0))
		}
		if want[2] {
			out[2] = g.Select(cond, c(0), dy)
		}
	}
	return out
}
