package kir

import (
	"math"
	"strings"
	"testing"

	"github.com/tartanml/tartan/tile"
)

func load(buf int, dt tile.DType, idx ...*Ix) *Expr {
	return &Expr{Op: Load, DType: dt, Buf: buf, Index: idx}
}

func fn(f tile.Fn, dt tile.DType, args ...*Expr) *Expr {
	return &Expr{Op: Apply, Fn: f, DType: dt, Args: args}
}

// program returns a program over the given buffers, each in its own slot
// unless the buffer says otherwise (slots are then sized to fit).
func program(bufs []*Buffer, ks ...*Kernel) *Program {
	p := &Program{Name: "test", Buffers: bufs, Kernels: ks}
	for i, b := range bufs {
		b.ID = i
		if b.Slot >= p.Slots {
			p.Slots = b.Slot + 1
		}
	}
	p.SlotBytes = make([]int, p.Slots)
	for _, b := range bufs {
		p.SlotBytes[b.Slot] = max(p.SlotBytes[b.Slot], b.Size()*b.DType.Size())
		switch b.Kind {
		case Input:
			p.Inputs = append(p.Inputs, Binding{b.Name, b.ID})
		case Output:
			p.Outputs = append(p.Outputs, Binding{b.Name, b.ID})
		case Variable:
			p.Variables = append(p.Variables, Binding{b.Name, b.ID})
		}
	}
	return p
}

func TestInterpretHandWorked(t *testing.T) {
	f64 := tile.Float64
	// conv1d with one cell of padding each side: out[x] = Σ_i in[x+i-1]·w[i],
	// the padding expressed as a Skip load (out-of-range points contribute
	// nothing), then relu(acc - 100) in the epilogue.
	conv := &Kernel{Name: "conv", Out: 2, Shape: tile.Shape{4}, Agg: tile.Sum,
		Reduce: []Loop{{Name: "i", Lo: 0, Hi: 2}},
		Body:   fn(tile.Mul, f64, load(0, f64, IxSum(IxSum(v(0), v(1)), c(-1))), load(1, f64, v(1))),
		Epilogue: fn(tile.Maximum, f64, fn(tile.Sub, f64, &Expr{Op: Acc, DType: f64}, &Expr{Op: Const, DType: f64, Value: 100}),
			&Expr{Op: Const, DType: f64, Value: 0})}
	// Max over pairs with a Where condition, NaN propagating.
	pool := &Kernel{Name: "pool", Out: 3, Shape: tile.Shape{2}, Agg: tile.Max,
		Reduce: []Loop{{Name: "j", Lo: 0, Hi: 2}},
		Where:  []Cond{{X: v(1), Bound: 2}},
		Body:   load(0, f64, IxSum(IxTimes(v(0), 2), v(1)))}
	// Assign keeps the last contribution; Fill loads pad.
	last := &Kernel{Name: "last", Out: 4, Shape: tile.Shape{2}, Agg: tile.Assign,
		Reduce: []Loop{{Name: "j", Lo: 0, Hi: 3}},
		Body:   &Expr{Op: Load, DType: f64, Buf: 0, Index: []*Ix{IxSum(IxTimes(v(0), 2), v(1))}, OOB: Fill, Value: -5}}
	p := program([]*Buffer{
		{Name: "in", Kind: Input, DType: f64, Shape: tile.Shape{4}},
		{Name: "w", Kind: Input, DType: f64, Shape: tile.Shape{3}, Slot: 1},
		{Name: "conv", Kind: Output, DType: f64, Shape: tile.Shape{4}, Slot: 2},
		{Name: "pool", Kind: Output, DType: f64, Shape: tile.Shape{2}, Slot: 3},
		{Name: "last", Kind: Output, DType: f64, Shape: tile.Shape{2}, Slot: 4},
	}, conv, pool, last)
	bufs := [][]float64{{1, 2, 3, 4}, {1, 10, 100}, nil, nil, nil}
	if err := Interpret(p, bufs); err != nil {
		t.Fatal(err)
	}
	// conv: [0·1 + 1·10 + 2·100, 1 + 20 + 300, 2 + 30 + 400, 3 + 40 + 0] - 100.
	want := map[int][]float64{2: {110, 221, 332, 0}, 3: {2, 4}, 4: {4, -5}}
	for b, w := range want {
		for i := range w {
			if bufs[b][i] != w[i] {
				t.Errorf("b%d = %v, want %v", b, bufs[b], w)
				break
			}
		}
	}
	bufs = [][]float64{{1, math.NaN(), 3, 4}, {1, 10, 100}, nil, nil, nil}
	if err := Interpret(p, bufs); err != nil {
		t.Fatal(err)
	}
	if !math.IsNaN(bufs[3][0]) || bufs[3][1] != 4 {
		t.Errorf("max pool with NaN: %v", bufs[3])
	}
	// The conv's Skip load goes out of range with every condition holding
	// (there are none): the strict interpreter reports it.
	if err := InterpretStrict(p, [][]float64{{1, 2, 3, 4}, {1, 10, 100}, nil, nil, nil}); err == nil || !strings.Contains(err.Error(), "Skip load") {
		t.Errorf("strict interpretation: got %v", err)
	}
}

func TestInterpretRoundsAndSharesSlots(t *testing.T) {
	f32, f64 := tile.Float32, tile.Float64
	third := &Expr{Op: Const, DType: f64, Value: 1.0 / 3}
	// t (slot 1) = x/3 in f32; y = t·3 in f64; u (slot 1 too, t is dead) =
	// x + 1; z = u.
	k1 := &Kernel{Name: "t", Out: 1, Shape: tile.Shape{2}, Agg: tile.Assign,
		Body: &Expr{Op: Cast, DType: f32, Args: []*Expr{fn(tile.Mul, f64, load(0, f64, v(0)), third)}}}
	k2 := &Kernel{Name: "y", Out: 2, Shape: tile.Shape{2}, Agg: tile.Assign,
		Body: fn(tile.Mul, f64, &Expr{Op: Cast, DType: f64, Args: []*Expr{load(1, f32, v(0))}}, &Expr{Op: Const, DType: f64, Value: 3})}
	k3 := &Kernel{Name: "u", Out: 3, Shape: tile.Shape{2}, Agg: tile.Assign,
		Body: &Expr{Op: Cast, DType: f32, Args: []*Expr{fn(tile.Add, f64, load(0, f64, v(0)), &Expr{Op: Const, DType: f64, Value: 1})}}}
	k4 := &Kernel{Name: "z", Out: 4, Shape: tile.Shape{2}, Agg: tile.Assign,
		Body: &Expr{Op: Cast, DType: f64, Args: []*Expr{load(3, f32, v(0))}}}
	p := program([]*Buffer{
		{Name: "x", Kind: Input, DType: f64, Shape: tile.Shape{2}, Slot: 0},
		{Kind: Temp, DType: f32, Shape: tile.Shape{2}, Slot: 1},
		{Name: "y", Kind: Output, DType: f64, Shape: tile.Shape{2}, Slot: 2},
		{Kind: Temp, DType: f32, Shape: tile.Shape{2}, Slot: 1},
		{Name: "z", Kind: Output, DType: f64, Shape: tile.Shape{2}, Slot: 3},
	}, k1, k2, k3, k4)
	bufs := make([][]float64, 5)
	bufs[0] = []float64{1, 0.1}
	if err := Interpret(p, bufs); err != nil {
		t.Fatal(err)
	}
	if want := float64(float32(1.0/3)) * 3; bufs[2][0] != want || bufs[2][0] == 1 {
		t.Errorf("f32 rounding lost: y[0] = %v, want %v", bufs[2][0], want)
	}
	if bufs[4][1] != float64(float32(1.1)) {
		t.Errorf("z = %v", bufs[4])
	}
	if &bufs[1][0] != &bufs[3][0] {
		t.Error("temporaries of one slot do not share storage")
	}
}

func TestInterpretErrors(t *testing.T) {
	f64 := tile.Float64
	k := &Kernel{Name: "copy", Out: 1, Shape: tile.Shape{2}, Agg: tile.Assign, Body: load(0, f64, v(0))}
	p := program([]*Buffer{
		{Name: "x", Kind: Input, DType: f64, Shape: tile.Shape{2}},
		{Name: "y", Kind: Output, DType: f64, Shape: tile.Shape{2}, Slot: 1},
	}, k)
	cases := map[string]struct {
		bufs [][]float64
		want string
	}{
		"missing input": {[][]float64{nil, nil}, `input buffer b0 "x" is not given`},
		"short input":   {[][]float64{{1}, nil}, `input buffer b0 "x" has 1 elements, want 2`},
		"buffer count":  {[][]float64{{1, 2}}, "1 buffers given for 2"},
	}
	for name, tc := range cases {
		if err := Interpret(p, tc.bufs); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: got %v, want %q", name, err, tc.want)
		}
	}
}

func TestValidate(t *testing.T) {
	f64 := tile.Float64
	good := func() *Program {
		k := &Kernel{Name: "k", Out: 1, Shape: tile.Shape{2}, Agg: tile.Sum, Reduce: []Loop{{Name: "r", Lo: 0, Hi: 1}},
			Body: fn(tile.Mul, f64, load(0, f64, v(1)), load(0, f64, v(0)))}
		return program([]*Buffer{
			{Name: "x", Kind: Input, DType: f64, Shape: tile.Shape{2}},
			{Name: "y", Kind: Output, DType: f64, Shape: tile.Shape{2}, Slot: 1},
		}, k)
	}
	if err := good().Validate(); err != nil {
		t.Fatalf("valid program rejected: %v", err)
	}
	cases := []struct {
		name   string
		breakf func(p *Program)
		want   string
	}{
		{"variable out of range", func(p *Program) { p.Kernels[0].Body.Args[0].Index[0] = v(5) }, "loop variable 5 out of 2"},
		{"wrong index count", func(p *Program) { p.Kernels[0].Body.Args[0].Index = nil }, "with 0 indices"},
		{"writes an input", func(p *Program) { p.Kernels[0].Out = 0 }, "writes b0, a input buffer"},
		{"shape mismatch", func(p *Program) { p.Kernels[0].Shape = tile.Shape{3} }, "has another size than its output"},
		{"agg without loops", func(p *Program) { p.Kernels[0].Reduce = nil }, "without reduction loops"},
		{"acc in body", func(p *Program) { p.Kernels[0].Body = &Expr{Op: Acc, DType: f64} }, "acc outside an epilogue"},
		{"division by zero", func(p *Program) { p.Kernels[0].Body.Args[0].Index[0] = IxModBy(v(0), 0) }, "modulo by 0"},
		{"dtype mismatch", func(p *Program) { p.Kernels[0].Body.Args[0].DType = tile.Float32 }, "load of f32 from the f64 buffer"},
		{"arity", func(p *Program) { p.Kernels[0].Body.Args = p.Kernels[0].Body.Args[:1] }, "mul applied to 1 arguments"},
		{"slot too small", func(p *Program) { p.SlotBytes[1] = 8 }, "needs 16 bytes but slot 1 has 8"},
		{"shared non-temp slot", func(p *Program) { p.Buffers[1].Slot = 0 }, "only temporaries may"},
		{"bad binding", func(p *Program) { p.Inputs[0].Buffer = 1 }, `input "x" binds b1, a output buffer`},
		{"gemm without view", func(p *Program) { p.Kernels[0].Schedule.Strategy = "gemm" }, "gemm schedule without a matching GEMMView"},
		{"unknown strategy", func(p *Program) { p.Kernels[0].Schedule.Strategy = "magic" }, `unknown strategy "magic"`},
	}
	for _, tc := range cases {
		p := good()
		tc.breakf(p)
		if err := p.Validate(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: got %v, want %q", tc.name, err, tc.want)
		}
	}
}

func TestKernelString(t *testing.T) {
	f32 := tile.Float32
	k := &Kernel{Name: "k0_pool", Out: 2, Shape: tile.Shape{4, 8}, Agg: tile.Max,
		Reduce: []Loop{{Name: "i", Lo: 0, Hi: 1}},
		Where:  []Cond{{X: IxSum(IxTimes(v(0), 2), v(2)), Bound: 7}},
		Body:   load(0, f32, IxSum(IxTimes(v(0), 2), v(2)), v(1)),
		Epilogue: fn(tile.Add, f32, &Expr{Op: Acc, DType: f32},
			&Expr{Op: Load, DType: f32, Buf: 1, Index: []*Ix{IxFloorDivBy(v(1), 2)}, OOB: Fill, Value: 0}),
		Schedule: Schedule{Strategy: "loops", Parallel: 1, Vector: 8, Unroll: 2, Workers: 4},
		Source:   "%3 contraction + %4 add"}
	want := `kernel k0_pool -> b2 [4, 8]  (%3 contraction + %4 add)
  schedule: loops parallel=1 workers=4 vector=8 unroll=2
  for x0 in [0, 4) parallel:
    for x1 in [0, 8) vector 8:
      acc = 0
      for i in [0, 1] unroll 2:
        if 0 <= 2*x0 + i < 7:
          acc = max(acc, b0[2*x0 + i, x1])
      b2[x0, x1] = (acc + b1[x1 div 2; fill 0])
`
	if got := k.String(); got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
}
