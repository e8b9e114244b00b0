package kir

import (
	"bytes"
	"encoding/gob"
	"math"
	"testing"

	"github.com/tartanml/tartan/tile"
)

// digestProgram is a small program touching most of the types a program
// holds: a constant, a view, a scheduled matrix product with a tiling and
// a step loop.
func digestProgram() *Program {
	f := tile.Float32
	a := &Expr{Op: Load, DType: f, Buf: 1, Index: []*Ix{IxOfVar(0), IxOfVar(2)}, OOB: Fill, Value: math.Inf(-1)}
	b := &Expr{Op: Load, DType: f, Buf: 2, Index: []*Ix{IxOfVar(2), IxOfVar(1)}}
	body := &Expr{Op: Apply, DType: f, Fn: tile.Mul, Args: []*Expr{a, b}}
	k := &Kernel{Name: "k", Out: 0, Shape: tile.Shape{2, 2}, Reduce: []Loop{{Name: "k", Lo: 0, Hi: 3}}, Agg: tile.Sum, Body: body,
		Epilogue: &Expr{Op: Const, DType: f, Value: 0.5},
		Schedule: Schedule{Strategy: "gemm", GEMM: &GEMMView{M: []int{0}, N: []int{1}, K: []int{2}, A: a, B: b},
			Tiling: &Tiling{BM: 64, BN: 64, BK: 16, From: "tuner"}}}
	return &Program{
		Name: "digest",
		Buffers: []*Buffer{
			{ID: 0, Name: "out", Kind: Output, DType: f, Shape: tile.Shape{2, 2}, Slot: 0},
			{ID: 1, Name: "c", Kind: Constant, DType: f, Shape: tile.Shape{2, 3}, Init: []float64{1, 2, 3, 4, 5, 0}, Slot: 1},
			{ID: 2, Name: "v", Kind: Temp, DType: f, Shape: tile.Shape{3, 2}, Slot: 2, View: &View{Of: 1, Offset: 0, Stride: 6}},
		},
		Kernels:   []*Kernel{k},
		Outputs:   []Binding{{Name: "out", Buffer: 0}},
		Loops:     []StepLoop{{First: 0, End: 1, Steps: 2}},
		Slots:     3,
		SlotBytes: []int{16, 24, 24},
	}
}

// TestDigest checks that a copy digests alike and that changing any one
// of a sample of fields, down to a float's sign bit, changes the digest.
func TestDigest(t *testing.T) {
	p := digestProgram()
	var buf bytes.Buffer
	if err := gob.NewEncoder(&buf).Encode(p); err != nil {
		t.Fatal(err)
	}
	var q Program
	if err := gob.NewDecoder(&buf).Decode(&q); err != nil {
		t.Fatal(err)
	}
	if Digest(p) != Digest(&q) {
		t.Fatal("a copy of the program digests differently")
	}
	if Digest(p) != Digest(digestProgram()) {
		t.Fatal("two builds of one program digest differently")
	}
	changes := map[string]func(p *Program){
		"a constant's -0":      func(p *Program) { p.Buffers[1].Init[5] = math.Copysign(0, -1) },
		"a fill value":         func(p *Program) { p.Kernels[0].Body.Args[0].Value = math.Inf(1) },
		"a tiling's block":     func(p *Program) { p.Kernels[0].Schedule.Tiling.BN = 32 },
		"a tiling's source":    func(p *Program) { p.Kernels[0].Schedule.Tiling.From = "" },
		"no tiling":            func(p *Program) { p.Kernels[0].Schedule.Tiling = nil },
		"a view's stride":      func(p *Program) { p.Buffers[2].View.Stride = 0 },
		"a loop's direction":   func(p *Program) { p.Loops[0].Reverse = true },
		"an index":             func(p *Program) { p.Kernels[0].Body.Args[1].Index[0] = IxOfVar(1) },
		"a reduction bound":    func(p *Program) { p.Kernels[0].Reduce[0].Hi = 2 },
		"an epilogue constant": func(p *Program) { p.Kernels[0].Epilogue.Value = 0.25 },
		"a name":               func(p *Program) { p.Buffers[1].Name = "d" },
		"the empty name moved": func(p *Program) { p.Name, p.Buffers[0].Name = "", "digestout" },
		"a slot size":          func(p *Program) { p.SlotBytes[2] = 28 },
		"a product's K loops":  func(p *Program) { p.Kernels[0].Schedule.GEMM.K = nil },
		"an extra kernel":      func(p *Program) { p.Kernels = append(p.Kernels, p.Kernels[0]) },
		"a guard flag":         func(p *Program) { p.Kernels[0].Schedule.GEMM.GuardA = true },
		"the strategy":         func(p *Program) { p.Kernels[0].Schedule.Strategy = "loops" },
		"the vector width":     func(p *Program) { p.Kernels[0].Schedule.Vector = 4 },
		"an output binding":    func(p *Program) { p.Outputs[0].Name = "y" },
		"the aggregation":      func(p *Program) { p.Kernels[0].Agg = tile.Max },
		"a buffer's dtype":     func(p *Program) { p.Buffers[2].DType = tile.Float64 },
		"a constant's length":  func(p *Program) { p.Buffers[1].Init = p.Buffers[1].Init[:5] },
		"a shape":              func(p *Program) { p.Buffers[0].Shape = tile.Shape{4} },
		"the number of slots":  func(p *Program) { p.Slots = 4 },
	}
	seen := map[[32]byte]string{Digest(p): "the program"}
	for what, change := range changes {
		c := digestProgram()
		change(c)
		d := Digest(c)
		if other, ok := seen[d]; ok {
			t.Errorf("changing %s digests as %s does", what, other)
		}
		seen[d] = what
	}
}
