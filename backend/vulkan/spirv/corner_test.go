package spirv

import (
	"math"

	"github.com/tartanml/tartan/kir"
	"github.com/tartanml/tartan/tile"
)

// progBuilder assembles hand-written kir programs whose kernels reach the
// corners of the IR's meaning that compiled graphs rarely do.
type progBuilder struct{ p *kir.Program }

func newProg(name string) *progBuilder { return &progBuilder{p: &kir.Program{Name: name}} }

// buf adds a buffer of its own slot and binds it by name.
func (pb *progBuilder) buf(name string, kind kir.BufKind, dt tile.DType, shape ...int) int {
	p := pb.p
	id := len(p.Buffers)
	p.Buffers = append(p.Buffers, &kir.Buffer{ID: id, Name: name, Kind: kind, DType: dt, Shape: shape, Slot: p.Slots})
	p.Slots++
	p.SlotBytes = append(p.SlotBytes, max(tile.Shape(shape).Size()*dt.Size(), 1))
	bind := kir.Binding{Name: name, Buffer: id}
	switch kind {
	case kir.Input:
		p.Inputs = append(p.Inputs, bind)
	case kir.Output:
		p.Outputs = append(p.Outputs, bind)
	case kir.Variable:
		p.Variables = append(p.Variables, bind)
	}
	return id
}

func (pb *progBuilder) kernel(name string, out int, shape tile.Shape, red []kir.Loop, agg tile.Agg, where []kir.Cond, body, epi *kir.Expr) *kir.Kernel {
	k := &kir.Kernel{Name: name, Out: out, Shape: shape, Reduce: red, Agg: agg, Where: where, Body: body, Epilogue: epi,
		Schedule: kir.Schedule{Strategy: "loops"}}
	pb.p.Kernels = append(pb.p.Kernels, k)
	return k
}

func iv(i int) *kir.Ix                       { return kir.IxOfVar(i) }
func ic(c int) *kir.Ix                       { return kir.IxOfConst(c) }
func iadd(a, b *kir.Ix) *kir.Ix              { return kir.IxSum(a, b) }
func cst(dt tile.DType, v float64) *kir.Expr { return &kir.Expr{Op: kir.Const, DType: dt, Value: v} }
func acc(dt tile.DType) *kir.Expr            { return &kir.Expr{Op: kir.Acc, DType: dt} }

func ld(b int, dt tile.DType, oob kir.OOB, fill float64, idx ...*kir.Ix) *kir.Expr {
	return &kir.Expr{Op: kir.Load, DType: dt, Buf: b, Index: idx, OOB: oob, Value: fill}
}

func ap(f tile.Fn, dt tile.DType, args ...*kir.Expr) *kir.Expr {
	return &kir.Expr{Op: kir.Apply, Fn: f, DType: dt, Args: args}
}

func cast(dt tile.DType, x *kir.Expr) *kir.Expr {
	return &kir.Expr{Op: kir.Cast, DType: dt, Args: []*kir.Expr{x}}
}

func ixval(dt tile.DType, x *kir.Ix) *kir.Expr {
	return &kir.Expr{Op: kir.IndexValue, DType: dt, Index: []*kir.Ix{x}}
}

// cornerProgram returns the corner kernels and the inputs to run them on.
func cornerProgram() (*kir.Program, map[string][]float64) {
	f32, f64, i32, i64, bl := tile.Float32, tile.Float64, tile.Int32, tile.Int64, tile.Bool
	pb := newProg("corners")
	a := pb.buf("a", kir.Input, f32, 6)
	m := pb.buf("m", kir.Input, f32, 4, 5)
	idx := pb.buf("idx", kir.Input, f32, 8)
	n := pb.buf("n", kir.Input, i64, 7)
	d := pb.buf("d", kir.Input, i64, 7)
	sp := pb.buf("sp", kir.Input, f32, 12)
	seed := pb.buf("seed", kir.Input, i64)
	w := pb.buf("w", kir.Variable, f32, 6)
	r := func(lo, hi int) []kir.Loop { return []kir.Loop{{Name: "r", Lo: lo, Hi: hi}} }

	// A sliding maximum whose Skip loads leave the buffer at both ends,
	// without a Where condition: those points contribute nothing (the data
	// are negative, so reading them as 0 would show).
	o := pb.buf("slidemax", kir.Output, f32, 6)
	pb.kernel("slidemax", o, tile.Shape{6}, r(0, 2), tile.Max, nil, ld(a, f32, kir.Skip, 0, iadd(iadd(iv(0), iv(1)), ic(-1))), nil)
	// A product whose Where excludes every point of some outputs (0).
	o = pb.buf("prodwhere", kir.Output, f32, 4)
	pb.kernel("prodwhere", o, tile.Shape{4}, r(0, 4), tile.Prod,
		[]kir.Cond{{X: iadd(iadd(iv(1), kir.IxTimes(iv(0), -2)), ic(1)), Bound: 3}}, ld(m, f32, kir.Skip, 0, iv(0), iv(1)), nil)
	// Assign over a reduction: the last point wins.
	o = pb.buf("assign", kir.Output, f32, 4)
	pb.kernel("assign", o, tile.Shape{4}, r(0, 4), tile.Assign, nil, ld(m, f32, kir.Skip, 0, iv(0), iv(1)), nil)
	// A gather through float indices (NaN, infinities, fractions, out of
	// range) with a Fill value.
	o = pb.buf("gather", kir.Output, f32, 8)
	pb.kernel("gather", o, tile.Shape{8}, nil, tile.Assign, nil,
		ld(a, f32, kir.Fill, -7.5, kir.IxOfValue(ld(idx, f32, kir.Skip, 0, iv(0)))), nil)
	// An empty reduction gives 0 for a maximum.
	o = pb.buf("empty", kir.Output, f32, 3)
	pb.kernel("empty", o, tile.Shape{3}, r(2, 1), tile.Max, nil, ld(a, f32, kir.Skip, 0, iv(0)), nil)
	// Floor division and modulo of negative values, as index values.
	o = pb.buf("floors", kir.Output, i32, 9, 2)
	x := iadd(iv(0), ic(-5))
	pb.kernel("floors", o, tile.Shape{9, 2}, nil, tile.Assign, nil,
		ap(tile.Add, i32, ixval(i32, kir.IxTimes(kir.IxFloorDivBy(x, 3), 10)),
			ixval(i32, kir.IxModBy(iadd(x, kir.IxTimes(iv(1), 7)), 4))), nil)
	// A sum with an epilogue that reads another buffer: tanh(acc)·a[i].
	o = pb.buf("epilogue", kir.Output, f32, 4)
	pb.kernel("epilogue", o, tile.Shape{4}, r(1, 4), tile.Sum, nil,
		ap(tile.Mul, f32, ld(m, f32, kir.Skip, 0, iv(0), iv(1)), ld(m, f32, kir.Skip, 0, iv(0), iadd(iv(1), ic(-1)))),
		ap(tile.Mul, f32, ap(tile.Tanh, f32, acc(f32)), ld(a, f32, kir.Skip, 0, iv(0))))
	// Integer division by zero and by -1, wrapping products, signs.
	o = pb.buf("intdiv", kir.Output, i64, 7)
	nv, dv := ld(n, i64, kir.Skip, 0, iv(0)), ld(d, i64, kir.Skip, 0, iv(0))
	pb.kernel("intdiv", o, tile.Shape{7}, nil, tile.Assign, nil,
		ap(tile.Add, i64, ap(tile.Div, i64, nv, dv), ap(tile.Mul, i64, ap(tile.Sign, i64, dv), ap(tile.Abs, i64, nv))), nil)
	o = pb.buf("int32ops", kir.Output, i32, 7)
	n32, d32 := cast(i32, nv), cast(i32, dv)
	pb.kernel("int32ops", o, tile.Shape{7}, nil, tile.Assign, nil,
		ap(tile.Sub, i32, ap(tile.Div, i32, n32, d32), ap(tile.Maximum, i32, ap(tile.Neg, i32, n32), ap(tile.Mul, i32, d32, cst(i32, 1e9)))), nil)
	// Special values through every float function, with NaN propagating
	// through maximum and minimum.
	for _, f := range []tile.Fn{tile.Neg, tile.Abs, tile.Sign, tile.Exp, tile.Log, tile.Log1p, tile.Sqrt, tile.Rsqrt,
		tile.Tanh, tile.Sigmoid, tile.Erf, tile.Floor, tile.Ceil, tile.Recip} {
		for _, dt := range []tile.DType{f32, f64} {
			o = pb.buf(f.String()+"_"+dt.String(), kir.Output, dt, 12)
			pb.kernel(f.String()+"_"+dt.String(), o, tile.Shape{12}, nil, tile.Assign, nil,
				ap(f, dt, cast(dt, ld(sp, f32, kir.Skip, 0, iv(0)))), nil)
		}
	}
	for _, f := range []tile.Fn{tile.Pow, tile.Maximum, tile.Minimum, tile.Div, tile.Eq, tile.Ne, tile.Lt, tile.Le, tile.Gt, tile.Ge} {
		dt := f32
		if f.IsComparison() {
			dt = bl
		}
		o = pb.buf(f.String(), kir.Output, dt, 12, 12)
		pb.kernel(f.String(), o, tile.Shape{12, 12}, nil, tile.Assign, nil,
			ap(f, dt, ld(sp, f32, kir.Skip, 0, iv(0)), ld(sp, f32, kir.Skip, 0, iv(1))), nil)
	}
	// Casts of special values to every dtype, and logic on the results.
	for _, dt := range []tile.DType{bl, i32, i64, f64, tile.Float16} {
		o = pb.buf("cast_"+dt.String(), kir.Output, dt, 12)
		pb.kernel("cast_"+dt.String(), o, tile.Shape{12}, nil, tile.Assign, nil,
			cast(dt, ap(tile.Mul, f32, ld(sp, f32, kir.Skip, 0, iv(0)), cst(f32, 1e9))), nil)
	}
	o = pb.buf("logic", kir.Output, bl, 12)
	nz := cast(bl, ld(sp, f32, kir.Skip, 0, iv(0)))
	pb.kernel("logic", o, tile.Shape{12}, nil, tile.Assign, nil,
		ap(tile.Select, bl, ap(tile.Not, bl, nz), ap(tile.And, bl, nz, cst(bl, 1)), ap(tile.Or, bl, nz, cst(bl, 0))), nil)
	// Philox numbers at every position of a [3, 5] f64 tensor.
	o = pb.buf("random", kir.Output, f64, 3, 5)
	pb.kernel("random", o, tile.Shape{3, 5}, nil, tile.Assign, nil,
		&kir.Expr{Op: kir.Random, DType: f64, Stream: 0x1234_0000_0007, Args: []*kir.Expr{ld(seed, i64, kir.Skip, 0)},
			Index: []*kir.Ix{iadd(kir.IxTimes(iv(0), 5), iv(1))}}, nil)
	// An in-place variable update reading the point it writes.
	pb.kernel("update", w, tile.Shape{6}, nil, tile.Assign, nil,
		ap(tile.Add, f32, ld(w, f32, kir.Skip, 0, iv(0)), ap(tile.Mul, f32, ld(a, f32, kir.Skip, 0, iv(0)), cst(f32, 0.5))), nil)

	inputs := map[string][]float64{
		"a":    {-3, -1.5, -4, -0.25, -2, -6},
		"m":    {1, 2, 3, 4, 5, -1, 0.5, 2, -2, 3, 1.5, 1.5, 1.5, 1.5, 1.5, 2, -1, 0.25, 4, 1},
		"idx":  {0, 5.9, math.NaN(), math.Inf(1), -1, 6, math.Inf(-1), 3e9},
		"n":    {7, -7, 9, math.MinInt32, 5, -3_000_000_000, 0},
		"d":    {2, 2, 0, -1, -1, 7, -4},
		"sp":   {0, math.Copysign(0, -1), 1, -1, 0.5, -2.5, 3, 1e-5, 100, math.Inf(1), math.Inf(-1), math.NaN()},
		"seed": {987654321987},
	}
	return pb.p, inputs
}
