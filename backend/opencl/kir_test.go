package opencl

import (
	"math"
	"testing"

	"github.com/tartanml/tartan/backend"
	"github.com/tartanml/tartan/kir"
	"github.com/tartanml/tartan/tile"
)

// Hand-built kernel IR with the corner cases of the IR's meaning that graphs
// from the compiler rarely reach: Skip loads out of range with no Where
// condition, outputs without any contribution, Assign over a reduction,
// gathers from non-finite and out-of-range indices, empty reduction ranges,
// floor division and modulo of negative values, and epilogues. The oracle is
// kir.Interpret, the IR's executable definition.

func v(i int) *kir.Ix          { return kir.IxOfVar(i) }
func c(k int) *kir.Ix          { return kir.IxOfConst(k) }
func add(a, b *kir.Ix) *kir.Ix { return kir.IxSum(a, b) }

func load(buf int, dt tile.DType, oob kir.OOB, fill float64, idx ...*kir.Ix) *kir.Expr {
	return &kir.Expr{Op: kir.Load, DType: dt, Buf: buf, Index: idx, OOB: oob, Value: fill}
}

func fn(f tile.Fn, dt tile.DType, args ...*kir.Expr) *kir.Expr {
	return &kir.Expr{Op: kir.Apply, Fn: f, DType: dt, Args: args}
}

// cornerProgram builds the program; buffers 0–3 are inputs.
func cornerProgram() *kir.Program {
	f32, i64 := tile.Float32, tile.Int64
	p := &kir.Program{Name: "corners"}
	buf := func(name string, kind kir.BufKind, dt tile.DType, shape ...int) int {
		id := len(p.Buffers)
		p.Buffers = append(p.Buffers, &kir.Buffer{ID: id, Name: name, Kind: kind, DType: dt, Shape: shape, Slot: id})
		p.SlotBytes = append(p.SlotBytes, tile.Shape(shape).Size()*dt.Size())
		switch kind {
		case kir.Input:
			p.Inputs = append(p.Inputs, kir.Binding{Name: name, Buffer: id})
		case kir.Output:
			p.Outputs = append(p.Outputs, kir.Binding{Name: name, Buffer: id})
		case kir.Variable:
			p.Variables = append(p.Variables, kir.Binding{Name: name, Buffer: id})
		}
		return id
	}
	a := buf("a", kir.Input, f32, 6)
	m := buf("m", kir.Input, f32, 4, 5)
	idx := buf("idx", kir.Input, f32, 7)
	w := buf("w", kir.Variable, f32, 6)
	kern := func(name string, out int, shape tile.Shape, red []kir.Loop, agg tile.Agg, where []kir.Cond, body, epi *kir.Expr) {
		p.Kernels = append(p.Kernels, &kir.Kernel{Name: name, Out: out, Shape: shape, Reduce: red, Agg: agg, Where: where,
			Body: body, Epilogue: epi, Schedule: kir.Schedule{Strategy: "loops"}})
	}
	// Sliding max with Skip loads at both ends and no Where: points out of
	// range contribute nothing (the data are negative, so reading them as
	// 0 would show).
	o := buf("slidemax", kir.Output, f32, 6)
	kern("slidemax", o, tile.Shape{6}, []kir.Loop{{Name: "r", Lo: 0, Hi: 2}}, tile.Max, nil,
		load(a, f32, kir.Skip, 0, add(add(v(0), v(1)), c(-1))), nil)
	// Product over a Where that excludes every point of some outputs.
	o = buf("prodwhere", kir.Output, f32, 4)
	kern("prodwhere", o, tile.Shape{4}, []kir.Loop{{Name: "r", Lo: 0, Hi: 4}}, tile.Prod,
		[]kir.Cond{{X: add(add(v(1), kir.IxTimes(v(0), -2)), c(1)), Bound: 3}},
		load(m, f32, kir.Skip, 0, v(0), v(1)), nil)
	// Assign over a reduction: the last point in order wins.
	o = buf("assign", kir.Output, f32, 4)
	kern("assign", o, tile.Shape{4}, []kir.Loop{{Name: "r", Lo: 0, Hi: 4}}, tile.Assign, nil,
		load(m, f32, kir.Skip, 0, v(0), v(1)), nil)
	// Gather through a float index (NaN, infinities, fractions, out of
	// range) with a Fill value.
	o = buf("gather", kir.Output, f32, 7)
	kern("gather", o, tile.Shape{7}, nil, tile.Assign, nil,
		load(a, f32, kir.Fill, -7.5, kir.IxOfValue(load(idx, f32, kir.Skip, 0, v(0)))), nil)
	// An empty reduction range gives 0 for max.
	o = buf("empty", kir.Output, f32, 3)
	kern("empty", o, tile.Shape{3}, []kir.Loop{{Name: "r", Lo: 2, Hi: 1}}, tile.Max, nil,
		load(a, f32, kir.Skip, 0, v(0)), nil)
	// Floor division and modulo of negative values, as index values.
	o = buf("floors", kir.Output, i64, 9, 2)
	x := add(v(0), c(-5))
	kern("floors", o, tile.Shape{9, 2}, nil, tile.Assign, nil,
		fn(tile.Add, i64,
			&kir.Expr{Op: kir.IndexValue, DType: i64, Index: []*kir.Ix{kir.IxTimes(kir.IxFloorDivBy(x, 3), 10)}},
			&kir.Expr{Op: kir.IndexValue, DType: i64, Index: []*kir.Ix{add(kir.IxModBy(add(x, kir.IxTimes(v(1), 7)), 4), c(0))}}), nil)
	// A sum with an epilogue reading another buffer: tanh(acc) · a[i].
	o = buf("epilogue", kir.Output, f32, 4)
	kern("epilogue", o, tile.Shape{4}, []kir.Loop{{Name: "r", Lo: 1, Hi: 4}}, tile.Sum, nil,
		fn(tile.Mul, f32, load(m, f32, kir.Skip, 0, v(0), v(1)), load(m, f32, kir.Skip, 0, v(0), add(v(1), c(-1)))),
		fn(tile.Mul, f32, fn(tile.Tanh, f32, &kir.Expr{Op: kir.Acc, DType: f32}), load(a, f32, kir.Skip, 0, v(0))))
	// An in-place variable update reading the point it writes.
	kern("update", w, tile.Shape{6}, nil, tile.Assign, nil,
		fn(tile.Add, f32, load(w, f32, kir.Skip, 0, v(0)), fn(tile.Mul, f32, load(a, f32, kir.Skip, 0, v(0)), &kir.Expr{Op: kir.Const, DType: f32, Value: 0.5})), nil)
	p.Slots = len(p.Buffers)
	return p
}

func TestKernelIRCorners(t *testing.T) {
	p := cornerProgram()
	if err := p.Validate(); err != nil {
		t.Fatal(err)
	}
	inputs := map[string][]float64{
		"a":   {-3, -1.5, -4, -0.25, -2, -6},
		"m":   {1, 2, 3, 4, 5, -1, 0.5, 2, -2, 3, 1.5, 1.5, 1.5, 1.5, 1.5, 2, -1, 0.25, 4, 1},
		"idx": {0, 5.9, math.NaN(), math.Inf(1), -1, 6, math.Inf(-1)},
	}
	// The oracle, run twice so that the variable update accumulates.
	bufs := make([][]float64, len(p.Buffers))
	for _, b := range p.Inputs {
		bufs[b.Buffer] = inputs[b.Name]
	}
	bufs[3] = []float64{1, 2, 3, 4, 5, 6}
	for range 2 {
		if err := kir.Interpret(p, bufs); err != nil {
			t.Fatal(err)
		}
	}
	configs := []struct {
		name string
		opt  Option
	}{
		{"default", withTest(testHooks{})},
		{"reduce", withTest(testHooks{force: "reduce"})},
		{"reduce-split", withTest(testHooks{force: "reduce", split: 2})},
	}
	for _, cfg := range configs {
		for _, d := range openAll(t, cfg.opt) {
			t.Run(cfg.name+"/"+d.Info().ID, func(t *testing.T) {
				e, err := d.Load(p)
				if err != nil {
					t.Fatal(err)
				}
				defer e.Close()
				for _, b := range p.Inputs {
					data := hostData(p.Buffers[b.Buffer].DType, len(inputs[b.Name]))
					backend.FromFloat64(data, inputs[b.Name])
					if err := e.SetInput(b.Name, data); err != nil {
						t.Fatal(err)
					}
				}
				if err := e.WriteVariable("w", []float32{1, 2, 3, 4, 5, 6}); err != nil {
					t.Fatal(err)
				}
				for range 2 {
					if err := e.Run(); err != nil {
						t.Fatal(err)
					}
				}
				for _, b := range append(append([]kir.Binding(nil), p.Outputs...), p.Variables...) {
					buf := p.Buffers[b.Buffer]
					got := hostData(buf.DType, buf.Size())
					var err error
					if buf.Kind == kir.Variable {
						err = e.ReadVariable(b.Name, got)
					} else {
						err = e.ReadOutput(b.Name, got)
					}
					if err != nil {
						t.Fatal(err)
					}
					if err := closeTo(backend.ToFloat64(got), bufs[b.Buffer], buf.DType, 1e-6, 1e-7); err != nil {
						t.Errorf("%s: %v (got %v, want %v)", b.Name, err, backend.ToFloat64(got), bufs[b.Buffer])
					}
				}
			})
		}
	}
}
