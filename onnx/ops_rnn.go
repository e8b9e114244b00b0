package onnx

import (
	"strings"

	"github.com/tartanml/tartan/onnx/internal/pb"
	"github.com/tartanml/tartan/op"
	"github.com/tartanml/tartan/tile"
)

// Recurrent layers (RNN, GRU, LSTM) as tile recurrences: the input
// projections of all steps computed at once, the cell built once over
// time-major tensors and run by the compiled loop one step after another.

func init() {
	register("RNN", func(c *ctx) { opRecurrent(c, "RNN", 1, []string{"Tanh"}) })
	register("GRU", func(c *ctx) { opRecurrent(c, "GRU", 3, []string{"Sigmoid", "Tanh"}) })
	register("LSTM", func(c *ctx) { opRecurrent(c, "LSTM", 4, []string{"Sigmoid", "Tanh", "Tanh"}) })
}

// activation returns the named recurrent activation with its alpha and
// beta, nil when unsupported.
func activation(name string, alpha, beta float64, hasAlpha, hasBeta bool) func(g *tile.Graph, x *tile.Tensor) *tile.Tensor {
	def := func(v float64, has bool, d float64) float64 {
		if has {
			return v
		}
		return d
	}
	switch strings.ToLower(name) {
	case "tanh":
		return op.Tanh
	case "sigmoid":
		return op.Sigmoid
	case "relu":
		return op.ReLU
	case "leakyrelu":
		a := def(alpha, hasAlpha, 0.01)
		return func(g *tile.Graph, x *tile.Tensor) *tile.Tensor { return op.LeakyReLU(g, x, a) }
	case "hardsigmoid":
		a, b := def(alpha, hasAlpha, 0.2), def(beta, hasBeta, 0.5)
		return func(g *tile.Graph, x *tile.Tensor) *tile.Tensor { return hardSigmoid(g, x, a, b) }
	case "affine":
		a, b := def(alpha, hasAlpha, 1), def(beta, hasBeta, 0)
		return func(g *tile.Graph, x *tile.Tensor) *tile.Tensor {
			return g.Add(g.Mul(x, g.ScalarLike(x, a)), g.ScalarLike(x, b))
		}
	case "scaledtanh":
		a, b := def(alpha, hasAlpha, 1), def(beta, hasBeta, 1)
		return func(g *tile.Graph, x *tile.Tensor) *tile.Tensor {
			return g.Mul(g.ScalarLike(x, a), g.Tanh(g.Mul(x, g.ScalarLike(x, b))))
		}
	case "elu":
		a := def(alpha, hasAlpha, 1)
		return func(g *tile.Graph, x *tile.Tensor) *tile.Tensor { return op.ELU(g, x, a) }
	case "softsign":
		return func(g *tile.Graph, x *tile.Tensor) *tile.Tensor {
			return g.Div(x, g.Add(g.ScalarLike(x, 1), g.Elementwise(tile.Abs, x)))
		}
	case "softplus":
		return op.Softplus
	}
	return nil
}

func opRecurrent(c *ctx, kind string, gates int, defaults []string) {
	x, w, rw := c.in(0), c.in(1), c.in(2)
	hidden := int(c.attrInt("hidden_size", 0))
	direction := c.attrString("direction", "forward")
	layout := c.attrInt("layout", 0)
	clip := c.attrFloat("clip", 0)
	hasClip := c.hasAttr("clip")
	acts := c.attr("activations", pb.AttributeProto_STRINGS)
	alphas, betas := c.attrFloats("activation_alpha"), c.attrFloats("activation_beta")
	linearBeforeReset := kind == "GRU" && c.attrInt("linear_before_reset", 0) != 0
	if kind == "LSTM" && c.attrInt("input_forget", 0) != 0 {
		c.fail("input_forget=1 is not supported")
		return
	}
	if c.failed() {
		return
	}
	dirs := 1
	switch direction {
	case "forward", "reverse":
	case "bidirectional":
		dirs = 2
	default:
		c.fail("direction %q is not supported", direction)
		return
	}
	if layout == 1 {
		x = c.g.Transpose(x, []int{1, 0, 2})
	} else if layout != 0 {
		c.fail("layout %d is not supported", layout)
		return
	}
	if x.Rank() != 3 || !x.DType().IsFloat() {
		c.fail("X %s%v must be floating-point (seq, batch, input)", FromTile(x.DType()), x.Shape())
		return
	}
	seq, batch, inSize := x.Dim(0), x.Dim(1), x.Dim(2)
	if hidden <= 0 {
		hidden = rw.Dim(-1)
	}
	if !w.Shape().Equal(tile.Shape{dirs, gates * hidden, inSize}) || !rw.Shape().Equal(tile.Shape{dirs, gates * hidden, hidden}) {
		c.fail("W %v and R %v do not fit %d directions, %d gates of %d and input %d", w.Shape(), rw.Shape(), dirs, gates, hidden, inSize)
		return
	}
	names := defaults
	if acts != nil {
		names = nil
		for _, s := range acts.GetStrings() {
			names = append(names, string(s))
		}
		if len(names) != len(defaults)*dirs {
			c.fail("activations %v: %d expected", names, len(defaults)*dirs)
			return
		}
	} else if dirs == 2 {
		names = append(append([]string{}, defaults...), defaults...)
	}
	fns := make([]func(*tile.Graph, *tile.Tensor) *tile.Tensor, len(names))
	for i, n := range names {
		var a, b float64
		if i < len(alphas) {
			a = alphas[i]
		}
		if i < len(betas) {
			b = betas[i]
		}
		fns[i] = activation(n, a, b, i < len(alphas), i < len(betas))
		if fns[i] == nil {
			c.fail("activation %q is not supported", n)
			return
		}
	}
	g := c.g
	dt := x.DType()
	var lens *tile.Tensor
	if c.has(4) {
		lens = g.Cast(c.in(4), tile.Int64)
		if !lens.Shape().Equal(tile.Shape{batch}) {
			c.fail("sequence_lens %v do not fit batch %d", lens.Shape(), batch)
			return
		}
	}
	stateIn := func(i int) *tile.Tensor {
		if !c.has(i) {
			return nil
		}
		s := c.in(i)
		if layout == 1 {
			s = g.Transpose(s, []int{1, 0, 2})
		}
		if !s.Shape().Equal(tile.Shape{dirs, batch, hidden}) {
			return c.fail("initial state %v, expected %v", s.Shape(), tile.Shape{dirs, batch, hidden})
		}
		return s
	}
	h0, c0 := stateIn(5), (*tile.Tensor)(nil)
	var peep *tile.Tensor
	if kind == "LSTM" {
		c0 = stateIn(6)
		if c.has(7) {
			peep = c.in(7)
			if !peep.Shape().Equal(tile.Shape{dirs, 3 * hidden}) {
				c.fail("P %v, expected %v", peep.Shape(), tile.Shape{dirs, 3 * hidden})
				return
			}
		}
	}
	if c.failed() {
		return
	}
	slice := func(t *tile.Tensor, axis, lo, hi int) *tile.Tensor {
		start, stop := make([]int, t.Rank()), t.Shape()
		start[axis], stop[axis] = lo, hi
		return g.Slice(t, start, stop, nil)
	}
	pick := func(t *tile.Tensor, d int) *tile.Tensor { // direction d of (dirs, …)
		s := t.Shape()[1:]
		return g.Reshape(slice(t, 0, d, d+1), s)
	}
	zeros := g.BroadcastTo(g.Scalar(0, dt), tile.Shape{batch, hidden})
	var ys, hs, cs []*tile.Tensor
	for d := range dirs {
		wd, rd := pick(w, d), pick(rw, d)                   // (G·h, in), (G·h, h)
		xw := op.MatMul(g, x, g.Transpose(wd, []int{1, 0})) // (seq, batch, G·h)
		if c.has(3) {
			b := pick(c.in(3), d) // (2·G·h)
			xw = g.Add(xw, g.Add(slice(b, 0, 0, gates*hidden), slice(b, 0, gates*hidden, 2*gates*hidden)))
		}
		var rb *tile.Tensor // GRU with linear_before_reset keeps Rbh apart
		if linearBeforeReset && c.has(3) {
			b := pick(c.in(3), d)
			rb = slice(b, 0, (gates+2)*hidden, 2*gates*hidden)
			// the sum above added Rbh to the h gate; take it out again
			xw = g.Sub(xw, g.Reshape(g.Concat(0, g.BroadcastTo(g.Scalar(0, dt), tile.Shape{2 * hidden}), rb), tile.Shape{gates * hidden}))
		}
		rt := g.Transpose(rd, []int{1, 0}) // (h, G·h)
		f := fns[d*len(defaults):]
		h := zeros
		if h0 != nil {
			h = pick(h0, d)
		}
		cell := zeros
		if c0 != nil {
			cell = pick(c0, d)
		}
		// Time-major [seq, batch, …] tensors throughout: the states are
		// recurrences, so the cell below is built once for every step.
		gate := func(t *tile.Tensor, k int) *tile.Tensor { return slice(t, 2, k*hidden, (k+1)*hidden) }
		clipped := func(t *tile.Tensor) *tile.Tensor {
			if !hasClip {
				return t
			}
			return g.Minimum(g.Maximum(t, g.ScalarLike(t, -clip)), g.ScalarLike(t, clip))
		}
		reverse := direction == "reverse" || d == 1
		hp := g.Recurrence(h, seq, reverse)
		var cp *tile.Tensor
		if kind == "LSTM" {
			cp = g.Recurrence(cell, seq, reverse)
		}
		var hn, cn *tile.Tensor
		switch kind {
		case "RNN":
			hn = f[0](g, clipped(g.Add(xw, op.MatMul(g, hp, rt))))
		case "GRU":
			hr := op.MatMul(g, hp, slice(rt, 1, 0, 2*hidden))
			z := f[0](g, clipped(g.Add(gate(xw, 0), gate(hr, 0))))
			r := f[0](g, clipped(g.Add(gate(xw, 1), gate(hr, 1))))
			rh := slice(rt, 1, 2*hidden, 3*hidden)
			var pre *tile.Tensor
			if linearBeforeReset {
				lin := op.MatMul(g, hp, rh)
				if rb != nil {
					lin = g.Add(lin, rb)
				}
				pre = g.Add(gate(xw, 2), g.Mul(r, lin))
			} else {
				pre = g.Add(gate(xw, 2), op.MatMul(g, g.Mul(r, hp), rh))
			}
			hh := f[1](g, clipped(pre))
			hn = g.Add(g.Mul(g.Sub(g.ScalarLike(z, 1), z), hh), g.Mul(z, hp))
		case "LSTM":
			all := g.Add(xw, op.MatMul(g, hp, rt))
			ig, og, fg, cg := gate(all, 0), gate(all, 1), gate(all, 2), gate(all, 3)
			if peep != nil {
				p := pick(peep, d)
				ig = g.Add(ig, g.Mul(slice(p, 0, 0, hidden), cp))
				fg = g.Add(fg, g.Mul(slice(p, 0, 2*hidden, 3*hidden), cp))
			}
			i := f[0](g, clipped(ig))
			fgt := f[0](g, clipped(fg))
			cc := f[1](g, clipped(cg))
			cn = g.Add(g.Mul(fgt, cp), g.Mul(i, cc))
			if peep != nil {
				og = g.Add(og, g.Mul(slice(pick(peep, d), 0, hidden, 2*hidden), cn))
			}
			o := f[0](g, clipped(og))
			hn = g.Mul(o, f[2](g, cn))
		}
		y := hn
		if lens != nil {
			// live[t, b] = t < sequence_lens[b]: past its length a sequence
			// keeps its state and outputs zeros.
			steps := g.Iota(tile.Int64, tile.Shape{seq, batch}, 0)
			live := g.Reshape(g.Elementwise(tile.Lt, steps, g.BroadcastTo(lens, tile.Shape{seq, batch})), tile.Shape{seq, batch, 1})
			// The cell state's next value is built before h's, as without
			// sequence_lens, so that the two recurrences nest.
			if cn != nil {
				cn = g.Select(live, cn, cp)
			}
			y = g.Select(live, hn, g.BroadcastTo(g.Scalar(0, dt), hn.Shape()))
			hn = g.Select(live, hn, hp)
		}
		g.CloseRecurrence(hp, hn)
		last := seq - 1 // the step that ends the sequence
		if reverse {
			last = 0
		}
		h = g.Reshape(slice(hn, 0, last, last+1), tile.Shape{batch, hidden})
		if cp != nil {
			g.CloseRecurrence(cp, cn)
			cell = g.Reshape(slice(cn, 0, last, last+1), tile.Shape{batch, hidden})
		}
		ys = append(ys, g.Reshape(y, tile.Shape{seq, 1, batch, hidden}))
		hs = append(hs, g.Reshape(h, tile.Shape{1, batch, hidden}))
		cs = append(cs, g.Reshape(cell, tile.Shape{1, batch, hidden}))
	}
	join := func(ts []*tile.Tensor, axis int) *tile.Tensor {
		if len(ts) == 1 {
			return ts[0]
		}
		return g.Concat(axis, ts...)
	}
	y, hn, cn := join(ys, 1), join(hs, 0), join(cs, 0)
	if layout == 1 {
		y = g.Transpose(y, []int{2, 0, 1, 3})
		hn = g.Transpose(hn, []int{1, 0, 2})
		cn = g.Transpose(cn, []int{1, 0, 2})
	}
	if c.wantsOut(0) {
		c.set(0, y)
	}
	if c.wantsOut(1) {
		c.set(1, hn)
	}
	if kind == "LSTM" && c.wantsOut(2) {
		c.set(2, cn)
	}
}
