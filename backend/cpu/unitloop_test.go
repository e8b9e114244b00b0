package cpu

import (
	"fmt"
	"testing"

	"github.com/tartanml/tartan/grad"
	"github.com/tartanml/tartan/kir"
	"github.com/tartanml/tartan/op"
	"github.com/tartanml/tartan/tile"
)

// TestUnitChannelConvolutions runs convolutions with one input or one output
// channel, forward and both gradients, and compares them with kir.Interpret
// (criterion in interp_test.go). The channel's unit loop would be read by
// both operands of such a product (the input gradient of a one-channel
// input reads it in its output and in the kernel); package compile drops
// it (squeeze.go), so it must not keep the kernel off the matrix-product
// executor: every kernel that sums a product must run as one.
func TestUnitChannelConvolutions(t *testing.T) {
	cases := []struct {
		x, k tile.Shape
		opt  op.ConvOptions
	}{
		{tile.Shape{3, 9, 8, 1}, tile.Shape{2, 2, 1, 12}, op.ConvOptions{Padding: op.Same}},
		{tile.Shape{2, 7, 9, 1}, tile.Shape{3, 2, 1, 5}, op.ConvOptions{}},
		{tile.Shape{2, 9, 7, 1}, tile.Shape{3, 3, 1, 7}, op.ConvOptions{Strides: []int{2, 2}, Padding: op.Same}},
		{tile.Shape{2, 8, 8, 6}, tile.Shape{2, 3, 6, 1}, op.ConvOptions{Padding: op.Same}},
		{tile.Shape{2, 8, 8, 1}, tile.Shape{2, 2, 1, 1}, op.ConvOptions{}},
	}
	d := New(Cache(false))
	defer d.Close()
	for _, c := range cases {
		name := fmt.Sprintf("x%v_k%v_s%v_%v", c.x, c.k, c.opt.Strides, c.opt.Padding)
		t.Run(name, func(t *testing.T) {
			g := tile.NewGraph("unit_channel")
			x := g.Input("x", tile.Float32, c.x)
			k := g.Input("k", tile.Float32, c.k)
			y := op.Conv2D(g, x, k, c.opt)
			dy := g.Input("dy", tile.Float32, y.Shape())
			gs, err := grad.VJP(g, []*tile.Tensor{y}, []*tile.Tensor{dy}, x, k)
			if err != nil {
				t.Fatal(err)
			}
			g.SetOutput("y", y)
			g.SetOutput("dx", gs[0])
			g.SetOutput("dk", gs[1])
			p := compileFor(t, d, g)
			ex, err := d.Load(p)
			if err != nil {
				t.Fatal(err)
			}
			defer ex.Close()
			for i, kr := range ex.kernels {
				if b := p.Kernels[i].Body; p.Kernels[i].Agg != tile.Sum || b.Op != kir.Apply || b.Fn != tile.Mul ||
					b.Args[0].Op != kir.Load || b.Args[1].Op != kir.Load {
					continue
				}
				switch kr.(type) {
				case *gemmKernel, *gemvKernel:
				default:
					t.Errorf("kernel %s runs as %s, not as a matrix product\n%v", p.Kernels[i].Name, describe(kr), p.Kernels[i])
				}
			}
			checkProgram(t, d, p, 1, 3)
		})
	}
}
