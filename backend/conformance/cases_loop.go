package conformance

import (
	"github.com/tartanml/tartan/grad"
	"github.com/tartanml/tartan/op"
	"github.com/tartanml/tartan/tile"
)

// contract builds a contraction from its textual form.
func contract(g *tile.Graph, src string, ops map[string]*tile.Tensor, sizes map[string]int) *tile.Tensor {
	return tile.ParseContraction(g, src, ops, sizes)
}

// rnn is h[t] = tanh(x[t]·w + h[t∓1]·u + bias) over time-major x [T, B, F].
func rnn(g *tile.Graph, x, h0, w, u, bias *tile.Tensor, reverse bool) *tile.Tensor {
	T, B, U := x.Dim(0), x.Dim(1), u.Dim(0)
	sz := map[string]int{"T": T, "B": B, "U": U}
	prev := g.Recurrence(h0, T, reverse)
	xw := contract(g, "O[t, b, j : T, B, U] = +(X[t, b, f] * W[f, j])", map[string]*tile.Tensor{"X": x, "W": w}, sz)
	hu := contract(g, "O[t, b, j : T, B, U] = +(H[t, b, k] * R[k, j])", map[string]*tile.Tensor{"H": prev, "R": u}, sz)
	h := g.Tanh(g.Add(g.Add(xw, hu), g.BroadcastTo(bias, tile.Shape{T, B, U})))
	g.CloseRecurrence(prev, h)
	return h
}

// lstm is an LSTM cell over time-major x [T, B, F]: two recurrences (h and
// c) that form one loop.
func lstm(g *tile.Graph, x, w, u *tile.Tensor) *tile.Tensor {
	T, B, U := x.Dim(0), x.Dim(1), u.Dim(0)
	sz := map[string]int{"T": T, "B": B, "G": 4 * U}
	zero := g.BroadcastTo(g.Scalar(0, x.DType()), tile.Shape{B, U})
	hp := g.Recurrence(zero, T, false)
	cp := g.Recurrence(zero, T, false)
	z := g.Add(contract(g, "O[t, b, j : T, B, G] = +(X[t, b, f] * W[f, j])", map[string]*tile.Tensor{"X": x, "W": w}, sz),
		contract(g, "O[t, b, j : T, B, G] = +(H[t, b, k] * R[k, j])", map[string]*tile.Tensor{"H": hp, "R": u}, sz))
	gate := func(i int) *tile.Tensor { return g.Slice(z, []int{0, 0, i * U}, []int{T, B, (i + 1) * U}, nil) }
	c := g.Add(g.Mul(op.Sigmoid(g, gate(1)), cp), g.Mul(op.Sigmoid(g, gate(0)), g.Tanh(gate(2))))
	h := g.Mul(op.Sigmoid(g, gate(3)), g.Tanh(c))
	g.CloseRecurrence(hp, h)
	g.CloseRecurrence(cp, c)
	return h
}

// loopCases cover recurrences, which compile runs as loops over time steps.
func loopCases() []Case {
	f32 := tile.Float32
	return []Case{
		{Name: "loop/rnn_two_layers", Grad: true, Build: func(b *Builder) {
			// A forward layer, then a reverse one reading all its states.
			x := b.Input("x", f32, tile.Shape{5, 3, 4}, nil)
			h0 := b.Input("h0", f32, tile.Shape{3, 6}, nil)
			w1 := b.Input("w1", f32, tile.Shape{4, 6}, Uniform(-0.5, 0.5))
			u1 := b.Input("u1", f32, tile.Shape{6, 6}, Uniform(-0.5, 0.5))
			b1 := b.Input("b1", f32, tile.Shape{6}, nil)
			w2 := b.Input("w2", f32, tile.Shape{6, 2}, Uniform(-0.5, 0.5))
			u2 := b.Input("u2", f32, tile.Shape{2, 2}, Uniform(-0.5, 0.5))
			b2 := b.Input("b2", f32, tile.Shape{2}, nil)
			h1 := rnn(b.G, x, h0, w1, u1, b1, false)
			h2 := rnn(b.G, h1, b.G.Slice(h0, []int{0, 0}, []int{3, 2}, nil), w2, u2, b2, true)
			b.Output("h1", h1)
			b.Output("h2", h2)
		}},
		{Name: "loop/lstm", Grad: true, Build: func(b *Builder) {
			x := b.Input("x", f32, tile.Shape{6, 2, 3}, nil)
			w := b.Input("w", f32, tile.Shape{3, 16}, Uniform(-0.5, 0.5))
			u := b.Input("u", f32, tile.Shape{4, 16}, Uniform(-0.5, 0.5))
			b.Output("h", lstm(b.G, x, w, u))
		}},
		{Name: "loop/one_step", Grad: true, Build: func(b *Builder) {
			x := b.Input("x", f32, tile.Shape{1, 2, 3}, nil)
			h0 := b.Input("h0", f32, tile.Shape{2, 3}, nil)
			w := b.Input("w", f32, tile.Shape{3, 3}, nil)
			b.Output("h", rnn(b.G, x, h0, w, w, b.G.Slice(h0, []int{0, 0}, []int{1, 3}, []int{1, 1}), false))
		}},
		{Name: "loop/shift", Grad: true, Build: func(b *Builder) {
			// Next states that do not read the states: a shift, no loop.
			g := b.G
			x := b.Input("x", f32, tile.Shape{4, 3}, nil)
			s := g.Recurrence(g.BroadcastTo(g.Scalar(7, f32), tile.Shape{3}), 4, true)
			g.CloseRecurrence(s, g.Exp(x))
			b.Output("s", g.Mul(s, x))
		}},
		{Name: "loop/sgd", Steps: 3, Build: func(b *Builder) {
			// Training through a loop: the weights the loop reads are
			// updated after it.
			g := b.G
			x := b.Input("x", f32, tile.Shape{4, 2, 3}, nil)
			y := b.Input("y", f32, tile.Shape{4, 2, 5}, nil)
			h0 := b.Variable("h0", f32, tile.Shape{2, 5}, Uniform(-0.3, 0.3))
			w := b.Variable("w", f32, tile.Shape{3, 5}, Uniform(-0.5, 0.5))
			u := b.Variable("u", f32, tile.Shape{5, 5}, Uniform(-0.5, 0.5))
			bias := b.Variable("bias", f32, tile.Shape{5}, nil)
			loss := op.MeanSquaredError(g, y, rnn(g, x, h0, w, u, bias, false))
			vs := []*tile.Tensor{h0, w, u, bias}
			gs, err := grad.Grad(g, loss, vs...)
			if err != nil {
				g.Errorf("loop/sgd", "%v", err)
				return
			}
			for i, v := range vs {
				g.Update(v, g.Sub(v, g.Mul(gs[i], g.ScalarLike(v, 0.1))))
			}
			b.Output("loss", loss)
		}},
	}
}
