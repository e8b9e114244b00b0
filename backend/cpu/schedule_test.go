package cpu

import (
	"strings"
	"testing"

	"github.com/tartanml/tartan/compile"
	"github.com/tartanml/tartan/grad"
	"github.com/tartanml/tartan/op"
	"github.com/tartanml/tartan/tile"
)

// TestProductsFollowTheSchedule checks that the executor runs as matrix
// products exactly the kernels the compiler scheduled so: a padded
// convolution and both its gradients run packed (their results checked
// against kir.Interpret), and the same kernels rescheduled as loops run as
// loops, the executor deriving no view of its own.
func TestProductsFollowTheSchedule(t *testing.T) {
	g := tile.NewGraph("padded_conv")
	x := g.Input("x", tile.Float32, tile.Shape{2, 9, 7, 16})
	w := g.Input("w", tile.Float32, tile.Shape{3, 3, 16, 8})
	y := op.Conv2D(g, x, w, op.ConvOptions{Padding: op.Same})
	loss := op.Sum(g, g.Mul(y, g.Input("r", tile.Float32, y.Shape())), nil, false)
	gs, err := grad.Grad(g, loss, x, w)
	if err != nil {
		t.Fatal(err)
	}
	g.SetOutput("y", y)
	g.SetOutput("dx", gs[0])
	g.SetOutput("dw", gs[1])
	d := New(Cache(false))
	defer d.Close()
	p, err := compile.Compile(g, d.Target())
	if err != nil {
		t.Fatal(err)
	}
	var products []int
	for i, k := range p.Kernels {
		if k.Schedule.Strategy == "gemm" && len(k.Where) > 0 {
			products = append(products, i)
		}
	}
	if len(products) < 3 {
		t.Fatalf("%d padded products scheduled as gemm, want the convolution and its two gradients:\n%v", len(products), p)
	}
	ex, err := d.Load(p)
	if err != nil {
		t.Fatal(err)
	}
	for _, i := range products {
		if got := describe(ex.kernels[i]); !strings.HasPrefix(got, "gemm") {
			t.Errorf("kernel %d (%s), scheduled as gemm, runs as %s", i, p.Kernels[i].Source, got)
		}
	}
	ex.Close()
	checkProgram(t, d, p, 1, 3)
	for _, i := range products {
		p.Kernels[i].Schedule.Strategy, p.Kernels[i].Schedule.GEMM = "loops", nil
	}
	if ex, err = d.Load(p); err != nil {
		t.Fatal(err)
	}
	defer ex.Close()
	for _, i := range products {
		if got := describe(ex.kernels[i]); !strings.HasPrefix(got, "loops") {
			t.Errorf("kernel %d (%s), scheduled as loops, runs as %s", i, p.Kernels[i].Source, got)
		}
	}
}
