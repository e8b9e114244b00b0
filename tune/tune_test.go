package tune

import (
	"slices"
	"testing"

	"github.com/tartanml/tartan/kir"
	"github.com/tartanml/tartan/tile"
)

// product returns the one-kernel program out[i, j] = Σ_k a[i, k]·b[k, j]
// of a 2×3 and a 3×2 matrix, scheduled as a matrix product, as kir.Extract
// gives it.
func product() *kir.Program {
	f := tile.Float32
	v := kir.IxOfVar
	a := &kir.Expr{Op: kir.Load, DType: f, Buf: 1, Index: []*kir.Ix{v(0), v(2)}}
	b := &kir.Expr{Op: kir.Load, DType: f, Buf: 2, Index: []*kir.Ix{v(2), v(1)}}
	k := &kir.Kernel{Name: "k", Out: 0, Shape: tile.Shape{2, 2}, Reduce: []kir.Loop{{Name: "k", Lo: 0, Hi: 2}}, Agg: tile.Sum,
		Body: &kir.Expr{Op: kir.Apply, DType: f, Fn: tile.Mul, Args: []*kir.Expr{a, b}}, Source: "orig",
		Schedule: kir.Schedule{Strategy: "gemm", GEMM: &kir.GEMMView{M: []int{0}, N: []int{1}, K: []int{2}, A: a, B: b}}}
	return &kir.Program{
		Name: "product",
		Buffers: []*kir.Buffer{
			{ID: 0, Name: "out", Kind: kir.Output, DType: f, Shape: tile.Shape{2, 2}, Slot: 0},
			{ID: 1, Name: "in1", Kind: kir.Input, DType: f, Shape: tile.Shape{2, 3}, Slot: 1},
			{ID: 2, Name: "in2", Kind: kir.Input, DType: f, Shape: tile.Shape{3, 2}, Slot: 2},
		},
		Kernels:   []*kir.Kernel{k},
		Inputs:    []kir.Binding{{Name: "in1", Buffer: 1}, {Name: "in2", Buffer: 2}},
		Outputs:   []kir.Binding{{Name: "out", Buffer: 0}},
		Slots:     3,
		SlotBytes: []int{16, 24, 24},
	}
}

// TestTogether checks the program of several candidates: every copy of
// the kernel carries its tiling and its Source, runs as a loop of its own
// and writes an output of its own, which kir.Interpret fills with the
// product worked by hand; and the copied program is unchanged.
func TestTogether(t *testing.T) {
	q := product()
	a := []float64{1, 2, 3, 4, 5, 6}    // [[1 2 3] [4 5 6]]
	b := []float64{1, -1, 0, 2, 0.5, 1} // [[1 -1] [0 2] [0.5 1]]
	want := []float64{2.5, 6, 7, 12}
	ts := []kir.Tiling{{BM: 64, BN: 64, BK: 16}, {BM: 32, BN: 32, BK: 16, Parts: 2}, {BM: 64, BN: 64, BK: 16, Matrix: "tf32"}}
	p, err := together(q, ts)
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Kernels) != len(ts) || len(p.Outputs) != len(ts) || len(p.Loops) != len(ts) {
		t.Fatalf("%d kernels, %d outputs, %d loops for %d candidates", len(p.Kernels), len(p.Outputs), len(p.Loops), len(ts))
	}
	bufs := make([][]float64, len(p.Buffers))
	bufs[1], bufs[2] = a, b
	if err := kir.Interpret(p, bufs); err != nil {
		t.Fatal(err)
	}
	outs := map[int]bool{}
	for i, k := range p.Kernels {
		if tl := k.Schedule.Tiling; tl == nil || !tl.Same(ts[i]) || tl.From != "tuner" || k.Source != candidateSource(i) {
			t.Errorf("kernel %d: tiling %v, source %q", i, tl, k.Source)
		}
		if l := p.Loops[i]; l.First != i || l.End != i+1 || l.Steps != 1 {
			t.Errorf("kernel %d: loop %+v", i, l)
		}
		o := p.Outputs[i]
		if o.Buffer != k.Out || outs[k.Out] || !slices.Equal(bufs[o.Buffer], want) {
			t.Errorf("output %s (kernel %d writes b%d): %v, want %v in a buffer of its own", o.Name, i, k.Out, bufs[o.Buffer], want)
		}
		outs[k.Out] = true
	}
	if k := q.Kernels[0]; k.Schedule.Tiling != nil || k.Source != "orig" || len(q.Buffers) != 3 || len(q.Outputs) != 1 {
		t.Error("together changed the program it copied")
	}
}
