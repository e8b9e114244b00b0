package cpu

import (
	"testing"

	"github.com/tartanml/tartan/op"
	"github.com/tartanml/tartan/tile"
)

// TestBatchedDotProductsAreReductions checks that a per-channel sum of
// products (batch norm's gradient with respect to its scale) is neither
// scheduled nor run as a matrix product of 1 x 1 matrices, which packed
// its strided operands for every channel (3.2 s instead of 41 ms for
// 128 x 32 x 32 x 96 on 2 cores), and that it computes what kir.Interpret
// does.
func TestBatchedDotProductsAreReductions(t *testing.T) {
	g := tile.NewGraph("dots")
	a := g.Input("a", tile.Float32, tile.Shape{8, 6, 5, 24})
	b := g.Input("b", tile.Float32, tile.Shape{8, 6, 5, 24})
	g.SetOutput("s", op.Sum(g, g.Mul(a, b), []int{0, 1, 2}, false))
	d := New(Cache(false))
	defer d.Close()
	p := compileFor(t, d, g)
	x, err := d.Load(p)
	if err != nil {
		t.Fatal(err)
	}
	for i, k := range p.Kernels {
		if k.Schedule.Strategy == "gemm" {
			t.Errorf("kernel %s scheduled as gemm:\n%v", k.Name, k)
		}
		if _, ok := x.kernels[i].(*gemmKernel); ok {
			t.Errorf("kernel %s runs on the gemm executor:\n%v", k.Name, k)
		}
	}
	x.Close()
	checkProgram(t, d, p, 1, 9)
}
