package op

import (
	"github.com/tartanml/tartan/tile"
)

// BatchNorm normalises x (…, C) per channel, over every axis but the last, as
// Keras's BatchNormalization does:
//
//	y = gamma · (x − mean) / √(var + epsilon) + beta
//
// In training mode mean and var are the batch's own statistics, var being
// the biased (divide-by-count) variance; otherwise they are movingMean and
// movingVar. It returns y and the statistics used, each of shape (C), so that
// a training step can update its moving averages from them. gamma and beta
// may be nil (no scale, no offset); movingMean and movingVar may be nil in
// training mode. Every given parameter has shape (C).
func BatchNorm(g *tile.Graph, x, gamma, beta, movingMean, movingVar *tile.Tensor, training bool, epsilon float64) (y, mean, variance *tile.Tensor) {
	const op = "batch_norm"
	if !training && g != nil && g.Err() == nil && (movingMean == nil || movingVar == nil) {
		bad := g.Errorf(op, "inference mode needs moving_mean and moving_var, got nil (x %s)", descOrNil(x))
		return bad, bad, bad
	}
	args := []arg{in("x", x)}
	for _, a := range []arg{in("gamma", gamma), in("beta", beta), in("moving_mean", movingMean), in("moving_var", movingVar)} {
		if a.t != nil {
			args = append(args, a)
		}
	}
	if !checkFloat(g, op, args...) {
		bad := invalid(g, op)
		return bad, bad, bad
	}
	if x.Rank() < 2 {
		bad := g.Errorf(op, "x must have rank >= 2 (batch…, channels), got %s", desc(x))
		return bad, bad, bad
	}
	c := x.Dim(-1)
	for _, a := range args[1:] {
		if a.t.Rank() != 1 || a.t.Dim(0) != c {
			bad := g.Errorf(op, "%s must have shape (%d) to match the channels of x: %s", a.name, c, descAll(args))
			return bad, bad, bad
		}
	}
	if epsilon < 0 {
		bad := g.Errorf(op, "epsilon %g is negative (x %s)", epsilon, desc(x))
		return bad, bad, bad
	}
	axes := make([]int, x.Rank()-1)
	for i := range axes {
		axes[i] = i
	}
	if training {
		mean = Mean(g, x, axes, false)
		variance = centredMeanSquare(g, x, mean, axes, false)
	} else {
		mean, variance = movingMean, movingVar
	}
	return affineNorm(g, x, mean, variance, gamma, beta, epsilon), mean, variance
}

// LayerNorm normalises x over one axis (negative counts from the end), as
// Keras's LayerNormalization does with the biased variance of that axis:
// y = gamma · (x − mean) / √(var + epsilon) + beta, where gamma and beta
// (either may be nil) have shape (x.Dim(axis)) and apply along the axis.
func LayerNorm(g *tile.Graph, x, gamma, beta *tile.Tensor, axis int, epsilon float64) *tile.Tensor {
	const op = "layer_norm"
	args := []arg{in("x", x)}
	if gamma != nil {
		args = append(args, in("gamma", gamma))
	}
	if beta != nil {
		args = append(args, in("beta", beta))
	}
	if !checkFloat(g, op, args...) {
		return invalid(g, op)
	}
	ax, ok := normAxis(axis, x.Rank())
	if !ok {
		return g.Errorf(op, "axis %d out of range for x %s", axis, desc(x))
	}
	if x.Dim(ax) == 0 {
		return g.Errorf(op, "axis %d of x %s is empty", axis, desc(x))
	}
	if epsilon < 0 {
		return g.Errorf(op, "epsilon %g is negative (x %s)", epsilon, desc(x))
	}
	// Parameters are shaped (n, 1, …, 1) so that they broadcast along ax.
	pshape := make(tile.Shape, x.Rank()-ax)
	for i := range pshape {
		pshape[i] = 1
	}
	pshape[0] = x.Dim(ax)
	var params []*tile.Tensor
	for _, a := range args[1:] {
		if a.t.Rank() != 1 || a.t.Dim(0) != x.Dim(ax) {
			return g.Errorf(op, "%s must have shape (%d) to match axis %d: %s", a.name, x.Dim(ax), axis, descAll(args))
		}
		params = append(params, g.Reshape(a.t, pshape))
	}
	if gamma != nil {
		gamma = params[0]
		params = params[1:]
	}
	if beta != nil {
		beta = params[0]
	}
	mean := Mean(g, x, []int{ax}, true)
	variance := centredMeanSquare(g, x, mean, []int{ax}, true)
	return affineNorm(g, x, mean, variance, gamma, beta, epsilon)
}

// centredMeanSquare returns the biased variance mean((x − mean)²) over axes,
// mean being x's mean over them. Its derivative with respect to mean,
// −2·mean(x − mean), is zero, so mean enters through StopGradient: the
// gradient is the same, but its graph leaves out a term that is zero only
// after a sum over the whole input (a pass over memory to write it and one
// to sum it back, for every normalisation of a training step), which is the
// gradient PyTorch's and cuDNN's batch-norm backward compute.
func centredMeanSquare(g *tile.Graph, x, mean *tile.Tensor, axes []int, keepDims bool) *tile.Tensor {
	d := g.Sub(x, g.StopGradient(mean))
	return Mean(g, g.Mul(d, d), axes, keepDims)
}

// affineNorm returns gamma·(x − mean)/√(variance + epsilon) + beta, with the
// statistics and parameters broadcast against x; nil gamma or beta are
// skipped.
func affineNorm(g *tile.Graph, x, mean, variance, gamma, beta *tile.Tensor, epsilon float64) *tile.Tensor {
	y := g.Div(g.Sub(x, mean), g.Sqrt(g.Add(variance, scalar(g, x, epsilon))))
	if gamma != nil {
		y = g.Mul(gamma, y)
	}
	if beta != nil {
		y = g.Add(y, beta)
	}
	return y
}
