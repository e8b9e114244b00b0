package cpu

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/tartanml/tartan/backend"
	"github.com/tartanml/tartan/backend/reference"
	"github.com/tartanml/tartan/grad"
	"github.com/tartanml/tartan/op"
	"github.com/tartanml/tartan/tile"
)

// TestConvPacking checks the im2col packers on padded convolutions large
// enough to run as matrix products: forward (rows packed per tap over blocks
// of pixels, packRows), input gradients, and weight gradients (K-major runs
// over blocks of pixels, packCols), with strides, dilations, borders on
// every side and channel counts on both sides of the contiguous-run
// threshold, against the reference device.
func TestConvPacking(t *testing.T) {
	for _, c := range []struct {
		h, w, cin, cout, k, stride, dil int
		pad                             op.Padding
	}{
		{9, 7, 8, 8, 3, 1, 1, op.Same},
		{9, 7, 16, 5, 3, 1, 1, op.Same},
		{8, 8, 8, 8, 3, 2, 1, op.Same},
		{11, 6, 12, 4, 5, 1, 2, op.Same},
		{7, 9, 9, 3, 3, 1, 1, op.Valid},
		{6, 6, 4, 8, 3, 1, 1, op.Same},
	} {
		name := fmt.Sprintf("%dx%dx%d-%d_k%d_s%d_d%d_%v", c.h, c.w, c.cin, c.cout, c.k, c.stride, c.dil, c.pad)
		t.Run(name, func(t *testing.T) {
			g := tile.NewGraph("conv")
			x := g.Input("x", tile.Float32, tile.Shape{3, c.h, c.w, c.cin})
			w := g.Input("w", tile.Float32, tile.Shape{c.k, c.k, c.cin, c.cout})
			y := op.Conv2D(g, x, w, op.ConvOptions{Padding: c.pad, Strides: []int{c.stride, c.stride}, Dilation: []int{c.dil, c.dil}})
			r := g.Input("r", tile.Float32, y.Shape())
			loss := op.Sum(g, g.Mul(y, r), nil, false)
			gs, err := grad.Grad(g, loss, x, w)
			if err != nil {
				t.Fatal(err)
			}
			g.SetOutput("y", y)
			g.SetOutput("dx", gs[0])
			g.SetOutput("dw", gs[1])
			if err := g.Err(); err != nil {
				t.Fatal(err)
			}
			rng := rand.New(rand.NewPCG(uint64(c.h), uint64(c.cin)))
			feeds := map[string][]float32{}
			for _, in := range g.Inputs() {
				v := make([]float32, in.Size())
				for i := range v {
					v[i] = float32(rng.NormFloat64())
				}
				feeds[in.Op().(*tile.InputOp).Name] = v
			}
			got := runGraph(t, New(Cache(false)), g, feeds)
			want := runGraph(t, reference.New(), g, feeds)
			for _, o := range g.Outputs() {
				a, b := got[o.Name], want[o.Name]
				scale := 0.0
				for _, x := range b {
					scale = math.Max(scale, math.Abs(float64(x)))
				}
				for i := range b {
					if d := math.Abs(float64(a[i] - b[i])); d > 1e-4*scale+1e-5 {
						t.Fatalf("%s[%d] = %g, reference %g", o.Name, i, a[i], b[i])
					}
				}
			}
		})
	}
}

func runGraph(t *testing.T, d backend.Device, g *tile.Graph, feeds map[string][]float32) map[string][]float32 {
	t.Helper()
	x, err := d.Compile(g)
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	for name, v := range feeds {
		if err := x.SetInput(name, v); err != nil {
			t.Fatal(err)
		}
	}
	if err := x.Run(); err != nil {
		t.Fatal(err)
	}
	out := map[string][]float32{}
	for _, o := range g.Outputs() {
		v := make([]float32, o.Tensor.Size())
		if err := x.ReadOutput(o.Name, v); err != nil {
			t.Fatal(err)
		}
		out[o.Name] = v
	}
	return out
}
