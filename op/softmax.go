package op

import (
	"github.com/tartanml/tartan/tile"
)

// Softmax returns e^x / Σ e^x along axis (negative counts from the end).
// It subtracts the maximum along the axis before exponentiating, which
// changes nothing in exact arithmetic and keeps every exponential at most
// 1, so no input overflows. The result does not depend on the shift, so
// the maximum enters through StopGradient: the gradient is the same, y·(dy
// − Σ dy·y), without the maximum's own derivative (an argmax and a sum of
// terms that cancel) that differentiating the shift would add.
func Softmax(g *tile.Graph, x *tile.Tensor, axis int) *tile.Tensor {
	const op = "softmax"
	ax, ok := softmaxAxis(g, op, x, axis)
	if !ok {
		return invalid(g, op)
	}
	e := g.Exp(g.Sub(x, g.StopGradient(Max(g, x, []int{ax}, true))))
	return g.Div(e, Sum(g, e, []int{ax}, true))
}

// LogSoftmax returns the logarithm of Softmax along axis, computed stably as
// (x − m) − log Σ e^(x − m) with m the maximum along the axis, which, as in
// Softmax, enters through StopGradient.
func LogSoftmax(g *tile.Graph, x *tile.Tensor, axis int) *tile.Tensor {
	const op = "log_softmax"
	ax, ok := softmaxAxis(g, op, x, axis)
	if !ok {
		return invalid(g, op)
	}
	z := g.Sub(x, g.StopGradient(Max(g, x, []int{ax}, true)))
	return g.Sub(z, g.Log(Sum(g, g.Exp(z), []int{ax}, true)))
}

func softmaxAxis(g *tile.Graph, op string, x *tile.Tensor, axis int) (int, bool) {
	if !checkFloat(g, op, in("x", x)) {
		return 0, false
	}
	ax, ok := normAxis(axis, x.Rank())
	if !ok {
		g.Errorf(op, "axis %d out of range for x %s", axis, desc(x))
		return 0, false
	}
	if x.Dim(ax) == 0 {
		g.Errorf(op, "axis %d of x %s is empty", axis, desc(x))
		return 0, false
	}
	return ax, true
}
