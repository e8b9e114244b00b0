package onnx

import (
	"github.com/tartanml/tartan/op"
	"github.com/tartanml/tartan/tile"
)

// Losses: NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss.

func init() {
	register("NegativeLogLikelihoodLoss", func(c *ctx) {
		x := c.in(0)
		if c.failed() {
			return
		}
		c.set(0, nllLoss(c, x))
	})
	register("SoftmaxCrossEntropyLoss", func(c *ctx) {
		x := c.in(0)
		if c.failed() {
			return
		}
		if x.Rank() < 2 {
			c.fail("scores %v have rank below 2", x.Shape())
			return
		}
		lp := op.LogSoftmax(c.g, x, 1)
		c.set(0, nllLoss(c, lp))
		if c.wantsOut(1) {
			c.set(1, lp)
		}
	})
}

// nllLoss is −x[n, target, d…]·weight[target], reduced by the node's
// reduction (mean by default: divided by the targets' total weight); targets
// equal to ignore_index contribute nothing.
func nllLoss(c *ctx, x *tile.Tensor) *tile.Tensor {
	target := c.indexInput(1)
	reduction := c.attrString("reduction", "mean")
	hasIgnore := c.hasAttr("ignore_index")
	ignore := c.attrInt("ignore_index", 0)
	if c.failed() {
		return nil
	}
	g := c.g
	s := x.Shape()
	if len(s) < 2 || !x.DType().IsFloat() {
		return c.fail("input %s%v must be floating-point (N, C, …)", FromTile(x.DType()), s)
	}
	ts := target.Shape()
	want := append(tile.Shape{s[0]}, s[2:]...)
	if !ts.Equal(want) {
		return c.fail("target %v does not fit input %v: %v expected", ts, s, want)
	}
	ks := append(tile.Shape{s[0], 1}, s[2:]...)
	tk := g.Reshape(target, ks)
	hot := g.Elementwise(tile.Eq, g.Iota(tile.Int64, s, 1), tk)
	zero := g.BroadcastTo(g.ScalarLike(x, 0), s)
	picked := reduce(g, g.Select(hot, x, zero), []int{1}, false, tile.Sum)
	var w *tile.Tensor
	if c.has(2) {
		wt := c.in(2)
		if c.failed() {
			return nil
		}
		if !wt.Shape().Equal(tile.Shape{s[1]}) {
			return c.fail("weight %v does not fit %d classes", wt.Shape(), s[1])
		}
		wb := g.BroadcastTo(g.Reshape(wt, append(tile.Shape{1, s[1]}, ones(len(s)-2)...)), s)
		w = reduce(g, g.Select(hot, wb, zero), []int{1}, false, tile.Sum)
	} else {
		w = g.BroadcastTo(g.ScalarLike(x, 1), want)
	}
	if hasIgnore {
		valid := g.Elementwise(tile.Ne, target, g.Scalar(float64(clampInt(ignore, -1<<53, 1<<53)), tile.Int64))
		w = g.Select(valid, w, g.BroadcastTo(g.ScalarLike(x, 0), want))
	}
	loss := g.Neg(g.Mul(picked, w))
	if hasIgnore {
		// an ignored target may select nothing, or an infinite log-probability
		loss = g.Select(g.Elementwise(tile.Eq, w, g.ScalarLike(w, 0)), g.BroadcastTo(g.ScalarLike(x, 0), want), loss)
	}
	all := make([]int, len(want))
	for i := range all {
		all[i] = i
	}
	switch reduction {
	case "none":
		return loss
	case "sum":
		return reduce(g, loss, all, false, tile.Sum)
	case "mean":
		return g.Div(reduce(g, loss, all, false, tile.Sum), reduce(g, w, all, false, tile.Sum))
	}
	return c.fail("reduction %q is not supported", reduction)
}

// ones returns a shape of n ones.
func ones(n int) tile.Shape {
	s := make(tile.Shape, max(n, 0))
	for i := range s {
		s[i] = 1
	}
	return s
}
