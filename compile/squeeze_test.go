package compile

import (
	"testing"

	"github.com/tartanml/tartan/grad"
	"github.com/tartanml/tartan/op"
	"github.com/tartanml/tartan/tile"
)

// TestSqueezeUnitLoops checks that kernels lose their loops of one point
// (a depthwise convolution's channel multiplier, keep-dims reductions, a
// one-channel input, a reduction over one tap) while computing what the
// reference executor computes, forward and backward.
func TestSqueezeUnitLoops(t *testing.T) {
	cases := map[string]func(g *tile.Graph){
		"depthwise": func(g *tile.Graph) {
			x := g.Input("x", tile.Float32, s(2, 6, 5, 4))
			k := g.Input("k", tile.Float32, s(3, 3, 4, 1))
			y := op.DepthwiseConv2D(g, x, k, op.ConvOptions{Padding: op.Same})
			dy := g.Input("dy", tile.Float32, y.Shape())
			gs, err := grad.VJP(g, []*tile.Tensor{y}, []*tile.Tensor{dy}, x, k)
			if err != nil {
				t.Fatal(err)
			}
			g.SetOutput("y", y)
			g.SetOutput("dx", gs[0])
			g.SetOutput("dk", gs[1])
		},
		"keepdims_and_one_channel": func(g *tile.Graph) {
			x := g.Input("x", tile.Float32, s(1, 7, 1, 3))
			m := op.Max(g, x, []int{1, 3}, true) // [1, 1, 1, 1]
			g.SetOutput("sum", g.Add(op.Sum(g, x, []int{1}, true), m))
			k := g.Input("k", tile.Float32, s(1, 1, 1, 5))
			c := g.Input("c", tile.Float32, s(2, 4, 3, 1))
			g.SetOutput("conv", op.Conv2D(g, c, k, op.ConvOptions{Padding: op.Valid}))
		},
	}
	for name, build := range cases {
		t.Run(name, func(t *testing.T) {
			g := tile.NewGraph(name)
			build(g)
			p := checkAgainstRef(t, g, Target{}, 3, 4, 2, 1e-5)
			for _, k := range p.Kernels {
				for d, n := range k.Shape {
					if n == 1 {
						t.Errorf("kernel %s keeps output loop %d of extent 1:\n%v", k.Name, d, k)
					}
				}
				for _, l := range k.Reduce {
					if l.Lo == l.Hi && len(k.Reduce) > 1 {
						t.Errorf("kernel %s keeps reduction loop %s of one point:\n%v", k.Name, l.Name, k)
					}
				}
			}
		})
	}
}
