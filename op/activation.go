package op

import (
	"math"

	"github.com/tartanml/tartan/tile"
)

// The activations are elementwise. Piecewise ones are built with Select,
// so that the gradient at 0 is the left piece's, as in Keras and PyTorch,
// and so that the unused piece never receives a gradient. A NaN propagates
// through every activation, as in PyTorch and TensorFlow: each select's
// condition is false for NaN exactly where the piece it then takes carries
// the NaN on.

// ReLU returns max(x, 0), and NaN for NaN. It is select(x ≤ 0, 0, x): the
// gradient is 0 where x ≤ 0 and passes elsewhere, NaN included, as
// PyTorch's threshold_backward does.
func ReLU(g *tile.Graph, x *tile.Tensor) *tile.Tensor {
	const op = "relu"
	if !checkFloat(g, op, in("x", x)) {
		return invalid(g, op)
	}
	zero := scalar(g, x, 0)
	return g.Select(g.Elementwise(tile.Le, x, zero), zero, x)
}

// LeakyReLU returns x where x > 0 and alpha·x elsewhere (NaN for NaN).
// Keras's LeakyReLU layer uses alpha = 0.3 by default.
func LeakyReLU(g *tile.Graph, x *tile.Tensor, alpha float64) *tile.Tensor {
	const op = "leaky_relu"
	if !checkFloat(g, op, in("x", x)) {
		return invalid(g, op)
	}
	return g.Select(g.Elementwise(tile.Gt, x, scalar(g, x, 0)), x, g.Mul(x, scalar(g, x, alpha)))
}

// ELU returns x where x > 0 and alpha·(eˣ − 1) elsewhere (NaN for NaN). The
// exponential is taken of min(x, 0), so large positive inputs cannot
// overflow it.
func ELU(g *tile.Graph, x *tile.Tensor, alpha float64) *tile.Tensor {
	const op = "elu"
	if !checkFloat(g, op, in("x", x)) {
		return invalid(g, op)
	}
	zero := scalar(g, x, 0)
	pos := g.Elementwise(tile.Gt, x, zero)
	neg := g.Select(pos, zero, x)
	e := g.Mul(g.Sub(g.Exp(neg), scalar(g, x, 1)), scalar(g, x, alpha))
	return g.Select(pos, x, e)
}

// GELU returns the Gaussian error linear unit: exactly
// x·(1 + erf(x/√2))/2, or with approximate the tanh form
// x·(1 + tanh(√(2/π)·(x + 0.044715·x³)))/2.
func GELU(g *tile.Graph, x *tile.Tensor, approximate bool) *tile.Tensor {
	const op = "gelu"
	if !checkFloat(g, op, in("x", x)) {
		return invalid(g, op)
	}
	var t *tile.Tensor
	if approximate {
		x3 := g.Mul(g.Mul(x, x), x)
		inner := g.Mul(g.Add(x, g.Mul(x3, scalar(g, x, 0.044715))), scalar(g, x, math.Sqrt(2/math.Pi)))
		t = g.Tanh(inner)
	} else {
		t = g.Elementwise(tile.Erf, g.Mul(x, scalar(g, x, 1/math.Sqrt2)))
	}
	return g.Mul(g.Mul(x, scalar(g, x, 0.5)), g.Add(t, scalar(g, x, 1)))
}

// Sigmoid returns 1/(1 + e⁻ˣ).
func Sigmoid(g *tile.Graph, x *tile.Tensor) *tile.Tensor {
	const op = "sigmoid"
	if !checkFloat(g, op, in("x", x)) {
		return invalid(g, op)
	}
	return g.Elementwise(tile.Sigmoid, x)
}

// Tanh returns the hyperbolic tangent of x.
func Tanh(g *tile.Graph, x *tile.Tensor) *tile.Tensor {
	const op = "tanh"
	if !checkFloat(g, op, in("x", x)) {
		return invalid(g, op)
	}
	return g.Tanh(x)
}

// Softplus returns log(1 + eˣ), computed as max(x, 0) + log1p(e^−|x|) so
// that it neither overflows for large x nor loses precision for very
// negative x.
func Softplus(g *tile.Graph, x *tile.Tensor) *tile.Tensor {
	const op = "softplus"
	if !checkFloat(g, op, in("x", x)) {
		return invalid(g, op)
	}
	negAbs := g.Neg(g.Elementwise(tile.Abs, x))
	return g.Add(ReLU(g, x), g.Elementwise(tile.Log1p, g.Exp(negAbs)))
}
