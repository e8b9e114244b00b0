package conformance

import (
	"github.com/tartanml/tartan/grad"
	"github.com/tartanml/tartan/op"
	"github.com/tartanml/tartan/tile"
)

// stateCases cover variables: reads of old values, updates in place and
// through temporaries, and several steps.
func stateCases() []Case {
	f32 := tile.Float32
	return []Case{
		{Name: "state/counters", Steps: 3, Build: func(b *Builder) {
			g := b.G
			n := b.Variable("n", tile.Int64, tile.Shape{}, Ints(0, 5))
			acc := b.Variable("acc", f32, tile.Shape{4, 3}, nil)
			x := b.Input("x", f32, tile.Shape{4, 3}, nil)
			g.Update(n, g.Add(n, g.Scalar(1, tile.Int64)))
			g.Update(acc, g.Add(g.Mul(acc, g.Scalar(0.5, f32)), x))
			b.Output("old_n", n)
			b.Output("total", op.Sum(g, acc, nil, false))
		}},
		{Name: "state/swap", Steps: 3, Build: func(b *Builder) {
			// Each update reads the other variable's old value.
			g := b.G
			p := b.Variable("p", f32, tile.Shape{5, 2}, nil)
			q := b.Variable("q", f32, tile.Shape{5, 2}, nil)
			g.Update(p, q)
			g.Update(q, g.Add(p, g.Transpose(g.Reshape(q, tile.Shape{2, 5}), []int{1, 0})))
		}},
		{Name: "state/sgd", Steps: 3, Build: func(b *Builder) {
			g := b.G
			x := b.Input("x", f32, tile.Shape{8, 5}, nil)
			y := b.Input("y", f32, tile.Shape{8, 3}, nil)
			w := b.Variable("w", f32, tile.Shape{5, 3}, nil)
			bias := b.Variable("bias", f32, tile.Shape{3}, nil)
			loss := op.MeanSquaredError(g, y, op.Dense(g, x, w, bias))
			gs, err := grad.Grad(g, loss, w, bias)
			if err != nil {
				g.Errorf("conformance", "%v", err)
				return
			}
			lr := g.Scalar(0.1, f32)
			g.Update(w, g.Sub(w, g.Mul(lr, gs[0])))
			g.Update(bias, g.Sub(bias, g.Mul(lr, gs[1])))
			b.Output("loss", loss)
		}},
	}
}
