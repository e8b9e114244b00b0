package cpu

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/tartanml/tartan/backend"
	"github.com/tartanml/tartan/grad"
	"github.com/tartanml/tartan/kir"
	"github.com/tartanml/tartan/op"
	"github.com/tartanml/tartan/tile"
)

// TestDepthwiseClipped compares a depthwise convolution, its input
// gradient and its kernel gradient, at strides 1 and 2 with same and valid
// padding, with kir.Interpret. Their padded windows are reductions guarded
// by affine conditions, which the loops executor runs over clipped loop
// bounds; the test also checks that they run there, and that two workers
// give bit for bit what one gives.
func TestDepthwiseClipped(t *testing.T) {
	d1, d2 := New(Workers(1), Cache(false)), New(Workers(2), Cache(false))
	defer d1.Close()
	defer d2.Close()
	for _, stride := range []int{1, 2} {
		for _, pad := range []op.Padding{op.Same, op.Valid} {
			t.Run(fmt.Sprintf("stride%d_%v", stride, pad), func(t *testing.T) {
				g := tile.NewGraph("depthwise")
				x := g.Input("x", tile.Float32, tile.Shape{3, 9, 11, 20})
				k := g.Input("k", tile.Float32, tile.Shape{3, 3, 20, 1})
				y := op.DepthwiseConv2D(g, x, k, op.ConvOptions{Strides: []int{stride, stride}, Padding: pad})
				r := g.Input("r", tile.Float32, y.Shape())
				gs, err := grad.Grad(g, op.Sum(g, g.Mul(y, r), nil, false), x, k)
				if err != nil {
					t.Fatal(err)
				}
				g.SetOutput("y", y)
				g.SetOutput("dx", gs[0])
				g.SetOutput("dk", gs[1])
				p := compileFor(t, d2, g)
				checkProgram(t, d2, p, 1, 3)
				x2, err := d2.Load(p)
				if err != nil {
					t.Fatal(err)
				}
				// Every loops kernel with an affine guard on a reduction
				// loop runs over clipped loops: the forward window and the
				// kernel gradient when padded (a strided input gradient's
				// conditions are modular), a valid input gradient.
				clipped, guarded := 0, 0
				for _, kr := range x2.kernels {
					lk, ok := kr.(*loopsKernel)
					if !ok {
						continue
					}
					conds, _ := kir.Guards(p, lk.k)
					for _, c := range conds {
						if slices.ContainsFunc(c.Coef[len(lk.k.Shape):], func(a int) bool { return a != 0 }) {
							guarded++
							break
						}
					}
					if lk.clipped {
						clipped++
					}
				}
				x2.Close()
				if clipped != guarded || pad == op.Same && clipped < 2 {
					t.Errorf("%d kernels run over clipped loops, %d have guards on reduction loops:\n%v", clipped, guarded, p)
				}
				var outs [2][][]float32
				for i, d := range []*Device{d1, d2} {
					outs[i] = runOutputs(t, d, p, 5)
				}
				for j := range outs[0] {
					if !slices.Equal(outs[0][j], outs[1][j]) {
						t.Errorf("output %s differs between 1 and 2 workers", p.Outputs[j].Name)
					}
				}
			})
		}
	}
}

// runOutputs runs p once on d from random inputs of seed and returns its
// float32 outputs.
func runOutputs(t *testing.T, d *Device, kp *kir.Program, seed uint64) [][]float32 {
	t.Helper()
	x, err := d.Load(kp)
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	bufs := randomBuffers(kp, rand.New(rand.NewPCG(seed, 2)))
	for _, in := range kp.Inputs {
		if err := x.SetInput(in.Name, backend.HostSlice(kp.Buffers[in.Buffer].DType, bufs[in.Buffer])); err != nil {
			t.Fatal(err)
		}
	}
	if err := x.Run(); err != nil {
		t.Fatal(err)
	}
	var outs [][]float32
	for _, o := range kp.Outputs {
		v := make([]float32, kp.Buffers[o.Buffer].Size())
		if err := x.ReadOutput(o.Name, v); err != nil {
			t.Fatal(err)
		}
		outs = append(outs, v)
	}
	return outs
}
