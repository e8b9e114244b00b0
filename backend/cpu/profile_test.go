package cpu

import (
	"testing"

	"github.com/tartanml/tartan/op"
	"github.com/tartanml/tartan/tile"
)

// TestProfile checks that Profile times every kernel, names its executor
// and computes what Run computes.
func TestProfile(t *testing.T) {
	g := tile.NewGraph("profiled")
	a := g.Input("a", tile.Float32, tile.Shape{64, 64})
	b := g.Input("b", tile.Float32, tile.Shape{64, 64})
	g.SetOutput("y", op.ReLU(g, g.Add(op.MatMul(g, a, b), a)))
	g.SetOutput("s", op.Sum(g, a, nil, false))
	d := New(Cache(false))
	defer d.Close()
	p := compileFor(t, d, g)
	x, err := d.Load(p)
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	if _, err := x.Profile(); err == nil {
		t.Error("Profile ran without inputs")
	}
	av, bv := make([]float32, 64*64), make([]float32, 64*64)
	for i := range av {
		av[i], bv[i] = float32(i%7)-3, float32(i%5)-2
	}
	x.SetInput("a", av)
	x.SetInput("b", bv)
	times, err := x.Profile()
	if err != nil {
		t.Fatal(err)
	}
	if len(times) != len(p.Kernels) {
		t.Fatalf("%d times for %d kernels", len(times), len(p.Kernels))
	}
	sawGemm := false
	for i, kt := range times {
		if kt.Kernel != p.Kernels[i].Name || kt.Seconds <= 0 || kt.How == "" {
			t.Errorf("time %d: %+v", i, kt)
		}
		sawGemm = sawGemm || kt.How == "gemm"
	}
	if !sawGemm {
		t.Errorf("no kernel ran on the gemm executor: %+v", times)
	}
	var s [1]float32
	if err := x.ReadOutput("s", s[:]); err != nil {
		t.Fatal(err)
	}
	want := float32(0)
	for _, v := range av {
		want += v
	}
	if s[0] != want {
		t.Errorf("sum after Profile %v, want %v", s[0], want)
	}
}
