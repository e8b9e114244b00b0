package onnx

import (
	"github.com/tartanml/tartan/grad"
	"github.com/tartanml/tartan/onnx/internal/pb"
	"github.com/tartanml/tartan/tile"
)

// The optimizers of domain ai.onnx.preview.training: one update step of
// Adagrad, Momentum (standard or Nesterov) and Adam over n tensors.

const trainingDomain = "ai.onnx.preview.training"

func init() {
	registerIn(trainingDomain, "Adagrad", func(c *ctx) { opOptimizer(c, "Adagrad", 3) })
	registerIn(trainingDomain, "Momentum", func(c *ctx) { opOptimizer(c, "Momentum", 3) })
	registerIn(trainingDomain, "Adam", func(c *ctx) { opOptimizer(c, "Adam", 4) })
	registerIn(trainingDomain, "Gradient", opGradient)
	noFold["Gradient"] = true
}

// opGradient differentiates the tensor named by y (its sum, when it is not
// a scalar) with respect to the inputs named by xs, with package grad on the
// graph built so far. y and the xs must be computed in the graph, not known
// when converting.
func opGradient(c *ctx) {
	xa := c.attr("xs", pb.AttributeProto_STRINGS)
	yName := c.attrString("y", "")
	c.ignore("zs") // inputs that are not differentiated: nothing to do
	if c.failed() {
		return
	}
	if xa == nil || len(xa.GetStrings()) == 0 || yName == "" {
		c.fail("the attributes xs and y are required")
		return
	}
	yv := c.cv.env[yName]
	if yv == nil || yv.isSeq || yv.none {
		c.fail("y %q is no tensor computed before the node", yName)
		return
	}
	if yv.c != nil || yv.t == nil {
		c.fail("y %q is known when converting: it does not depend on the xs", yName)
		return
	}
	var xs []*tile.Tensor
	for _, b := range xa.GetStrings() {
		xv := c.cv.env[string(b)]
		if xv == nil || xv.isSeq || xv.none || xv.t == nil || xv.c != nil {
			c.fail("x %q is no tensor computed in the graph", string(b))
			return
		}
		xs = append(xs, xv.t)
	}
	if len(xs) != c.nout() {
		c.fail("%d xs for %d outputs", len(xs), c.nout())
		return
	}
	g := c.cv.g
	y := yv.t
	ones := g.BroadcastTo(g.ScalarLike(y, 1), y.Shape())
	grads, err := grad.VJP(g, []*tile.Tensor{y}, []*tile.Tensor{ones}, xs...)
	if err != nil {
		c.fail("%v", err)
		return
	}
	for i, d := range grads {
		c.set(i, d)
	}
}

// opOptimizer reads inputs R, T, then lists lists of n tensors (X, G, and
// the optimizer's state), and writes the new X and state lists.
func opOptimizer(c *ctx, kind string, lists int) {
	norm := c.attrFloat("norm_coefficient", 0)
	var decay, eps, alpha, beta, post float64
	mode := "standard"
	switch kind {
	case "Adagrad":
		decay, eps = c.attrFloat("decay_factor", 0), c.attrFloat("epsilon", 1e-6)
	case "Momentum":
		alpha, beta = c.attrFloat("alpha", 0), c.attrFloat("beta", 0)
		mode = c.attrString("mode", "standard")
	case "Adam":
		alpha, beta = c.attrFloat("alpha", 0.9), c.attrFloat("beta", 0.999)
		eps, post = c.attrFloat("epsilon", 1e-6), c.attrFloat("norm_coefficient_post", 0)
	}
	if c.failed() {
		return
	}
	if mode != "standard" && mode != "nesterov" {
		c.fail("mode %q is not supported", mode)
		return
	}
	if (c.nin()-2)%lists != 0 || c.nin() < 2+lists {
		c.fail("%d inputs do not make R, T and %d lists of tensors", c.nin(), lists)
		return
	}
	n := (c.nin() - 2) / lists
	g := c.g
	r, t := c.in(0), c.in(1)
	if c.failed() {
		return
	}
	for i := range n {
		x, grad := c.in(2+i), c.in(2+n+i)
		if c.failed() {
			return
		}
		dt := x.DType()
		rr, tt := g.Reshape(g.Cast(r, dt), tile.Shape{}), g.Reshape(g.Cast(t, dt), tile.Shape{})
		s := func(v float64) *tile.Tensor { return g.ScalarLike(x, v) }
		gr := g.Add(g.Mul(s(norm), x), grad)
		switch kind {
		case "Adagrad":
			h := c.in(2 + 2*n + i)
			rate := g.Div(rr, g.Add(s(1), g.Mul(tt, s(decay))))
			hn := g.Add(h, g.Mul(gr, gr))
			xn := g.Sub(x, g.Div(g.Mul(rate, gr), g.Add(g.Sqrt(hn), s(eps))))
			c.set(i, xn)
			c.set(n+i, hn)
		case "Momentum":
			v := c.in(2 + 2*n + i)
			b := g.Select(g.Elementwise(tile.Gt, tt, s(0)), s(beta), s(1))
			vn := g.Add(g.Mul(s(alpha), v), g.Mul(b, gr))
			var xn *tile.Tensor
			if mode == "standard" {
				xn = g.Sub(x, g.Mul(rr, vn))
			} else {
				xn = g.Sub(x, g.Mul(rr, g.Add(gr, g.Mul(s(alpha), vn))))
			}
			c.set(i, xn)
			c.set(n+i, vn)
		case "Adam":
			v, h := c.in(2+2*n+i), c.in(2+3*n+i)
			vn := g.Add(g.Mul(s(alpha), v), g.Mul(s(1-alpha), gr))
			hn := g.Add(g.Mul(s(beta), h), g.Mul(s(1-beta), g.Mul(gr, gr)))
			pa := g.Elementwise(tile.Pow, s(alpha), tt)
			pb := g.Elementwise(tile.Pow, s(beta), tt)
			adj := g.Div(g.Mul(rr, g.Sqrt(g.Sub(s(1), pb))), g.Sub(s(1), pa))
			rate := g.Select(g.Elementwise(tile.Gt, tt, s(0)), adj, rr)
			xn := g.Sub(x, g.Div(g.Mul(rate, vn), g.Add(g.Sqrt(hn), s(eps))))
			c.set(i, g.Mul(s(1-post), xn))
			c.set(n+i, vn)
			c.set(2*n+i, hn)
		}
	}
}
