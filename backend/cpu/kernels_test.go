package cpu

import (
	"fmt"
	"testing"

	"github.com/tartanml/tartan/compile"
	"github.com/tartanml/tartan/kir"
	"github.com/tartanml/tartan/tile"
)

// progBuilder writes kir programs by hand, for the kernel shapes a compiler
// may not produce today but the IR allows.
type progBuilder struct{ p *kir.Program }

func newProg(name string) *progBuilder { return &progBuilder{p: &kir.Program{Name: name}} }

// buf adds a buffer with its own slot and, for inputs, outputs and
// variables, a binding.
func (b *progBuilder) buf(kind kir.BufKind, name string, dt tile.DType, shape tile.Shape) int {
	id := len(b.p.Buffers)
	b.p.Buffers = append(b.p.Buffers, &kir.Buffer{ID: id, Name: name, Kind: kind, DType: dt, Shape: shape, Slot: b.p.Slots})
	b.p.Slots++
	b.p.SlotBytes = append(b.p.SlotBytes, shape.Size()*dt.Size())
	bind := kir.Binding{Name: name, Buffer: id}
	switch kind {
	case kir.Input:
		b.p.Inputs = append(b.p.Inputs, bind)
	case kir.Output:
		b.p.Outputs = append(b.p.Outputs, bind)
	case kir.Variable:
		b.p.Variables = append(b.p.Variables, bind)
	}
	return id
}

func (b *progBuilder) kernel(k *kir.Kernel) {
	k.Name = fmt.Sprintf("k%d", len(b.p.Kernels))
	b.p.Kernels = append(b.p.Kernels, k)
}

func v(i int) *kir.Ix { return kir.IxOfVar(i) }
func c(k int) *kir.Ix { return kir.IxOfConst(k) }
func sum(xs ...*kir.Ix) *kir.Ix {
	x := xs[0]
	for _, y := range xs[1:] {
		x = kir.IxSum(x, y)
	}
	return x
}
func times(x *kir.Ix, k int) *kir.Ix { return kir.IxTimes(x, k) }

func (b *progBuilder) load(buf int, idx ...*kir.Ix) *kir.Expr {
	return &kir.Expr{Op: kir.Load, DType: b.p.Buffers[buf].DType, Buf: buf, Index: idx}
}

func (b *progBuilder) fill(buf int, value float64, idx ...*kir.Ix) *kir.Expr {
	e := b.load(buf, idx...)
	e.OOB, e.Value = kir.Fill, value
	return e
}

func apply(fn tile.Fn, dt tile.DType, args ...*kir.Expr) *kir.Expr {
	return &kir.Expr{Op: kir.Apply, DType: dt, Fn: fn, Args: args}
}

func konst(dt tile.DType, x float64) *kir.Expr { return &kir.Expr{Op: kir.Const, DType: dt, Value: x} }

func acc(dt tile.DType) *kir.Expr { return &kir.Expr{Op: kir.Acc, DType: dt} }

func loop(name string, lo, hi int) kir.Loop { return kir.Loop{Name: name, Lo: lo, Hi: hi} }

// describe names the executor of a kernel: gemm-tiles, gemm-splitK, loops, loops-redvec (vector along the reduction),
// loops-redrows (rows of reduction points) or loops-split (reduction split
// across tasks).
func describe(k kernelRunner) string {
	switch k := k.(type) {
	case *gemmKernel:
		return [...]string{"gemm-tiles", "gemm-splitK"}[k.mode]
	case *loopsKernel:
		switch {
		case k.split > 1:
			return "loops-split"
		case k.redVec:
			return "loops-redvec"
		case k.redRows > 1:
			return "loops-redrows"
		}
	}
	return "loops"
}

// TestHandWrittenKernels compares hand-written programs with kir.Interpret
// (criterion in interp_test.go).
func TestHandWrittenKernels(t *testing.T) {
	f32 := tile.Float32
	// want lists, per kernel, the executor it must get (see describe).
	cases := []struct {
		name  string
		build func(b *progBuilder)
		runs  int
		want  []string
	}{
		{"empty_windows", func(b *progBuilder) {
			// Windows that hang over both edges; some cover no element at
			// all and must give 0 for every aggregation.
			a := b.buf(kir.Input, "a", f32, tile.Shape{3})
			for _, agg := range []tile.Agg{tile.Max, tile.Min, tile.Prod, tile.Sum, tile.Assign} {
				o := b.buf(kir.Output, "o_"+agg.String(), f32, tile.Shape{9})
				x := sum(v(0), v(1), c(-4))
				b.kernel(&kir.Kernel{Out: o, Shape: tile.Shape{9}, Reduce: []kir.Loop{loop("k", 0, 2)}, Agg: agg,
					Where: []kir.Cond{{X: x, Bound: 3}}, Body: b.load(a, x)})
			}
		}, 1, nil},
		{"assign_last_wins", func(b *progBuilder) {
			// Several contributions: the last in row-major order wins, and
			// a condition removes the later ones for some outputs.
			a := b.buf(kir.Input, "a", f32, tile.Shape{4, 6})
			o := b.buf(kir.Output, "o", f32, tile.Shape{4})
			b.kernel(&kir.Kernel{Out: o, Shape: tile.Shape{4}, Reduce: []kir.Loop{loop("k", 0, 5)}, Agg: tile.Assign,
				Where: []kir.Cond{{X: sum(v(1), times(v(0), -1)), Bound: 3}}, Body: b.load(a, v(0), v(1))})
			long := b.buf(kir.Input, "long", f32, tile.Shape{2, 3000})
			o2 := b.buf(kir.Output, "o2", f32, tile.Shape{2})
			b.kernel(&kir.Kernel{Out: o2, Shape: tile.Shape{2}, Reduce: []kir.Loop{loop("k", 0, 2999)}, Agg: tile.Assign,
				Where: []kir.Cond{{X: sum(times(v(1), -1), c(2500)), Bound: 3000}}, Body: b.load(long, v(0), v(1))})
		}, 1, []string{"loops-redvec", "loops-redvec"}},
		{"offset_and_empty_loops", func(b *progBuilder) {
			a := b.buf(kir.Input, "a", f32, tile.Shape{5, 8})
			o := b.buf(kir.Output, "o", f32, tile.Shape{5})
			b.kernel(&kir.Kernel{Out: o, Shape: tile.Shape{5}, Reduce: []kir.Loop{loop("k", 2, 6)}, Agg: tile.Sum,
				Body: b.load(a, v(0), v(1))})
			e := b.buf(kir.Output, "e", f32, tile.Shape{5})
			b.kernel(&kir.Kernel{Out: e, Shape: tile.Shape{5}, Reduce: []kir.Loop{loop("k", 3, 2)}, Agg: tile.Max,
				Body: b.load(a, v(0), v(1)), Epilogue: apply(tile.Add, f32, acc(f32), konst(f32, 1))})
		}, 1, nil},
		{"long_reductions", func(b *progBuilder) {
			// Long reductions into few outputs (split across tasks), as
			// sums, maxima with conditions, and into a scalar.
			a := b.buf(kir.Input, "a", f32, tile.Shape{40000, 3})
			s := b.buf(kir.Output, "s", f32, tile.Shape{3})
			b.kernel(&kir.Kernel{Out: s, Shape: tile.Shape{3}, Reduce: []kir.Loop{loop("n", 0, 39999)}, Agg: tile.Sum,
				Body: b.load(a, v(1), v(0))})
			m := b.buf(kir.Output, "m", f32, tile.Shape{3})
			b.kernel(&kir.Kernel{Out: m, Shape: tile.Shape{3}, Reduce: []kir.Loop{loop("n", 0, 39999)}, Agg: tile.Max,
				Where: []kir.Cond{{X: sum(v(1), times(v(0), -10000)), Bound: 10000}}, Body: b.load(a, v(1), v(0))})
			all := b.buf(kir.Output, "all", f32, tile.Shape{})
			b.kernel(&kir.Kernel{Out: all, Shape: tile.Shape{}, Reduce: []kir.Loop{loop("n", 0, 39999), loop("j", 0, 2)}, Agg: tile.Sum,
				Body: apply(tile.Mul, f32, b.load(a, v(0), v(1)), b.load(a, v(0), v(1)))})
			sq := b.buf(kir.Output, "sq", f32, tile.Shape{})
			b.kernel(&kir.Kernel{Out: sq, Shape: tile.Shape{}, Reduce: []kir.Loop{loop("n", 0, 39999)}, Agg: tile.Sum,
				Body: apply(tile.Exp, f32, b.load(a, v(0), c(1)))})
			// "all" is a dot product (a 1 x 1 matrix product): a reduction,
			// not a gemm (kir.GEMMView.DotProducts).
		}, 1, []string{"loops-split", "loops-split", "loops-split", "loops-redvec"}},
		{"column_sums_outer_loops", func(b *progBuilder) {
			// Column sums over rows of reduction points whose values also
			// depend on the outer reduction loops (an index value, a
			// per-row factor), so every row must see them move on.
			a := b.buf(kir.Input, "a", f32, tile.Shape{3, 5, 40, 16})
			w := b.buf(kir.Input, "w", f32, tile.Shape{5, 16})
			o := b.buf(kir.Output, "o", f32, tile.Shape{16})
			y := &kir.Expr{Op: kir.Cast, DType: f32, Args: []*kir.Expr{{Op: kir.IndexValue, DType: tile.Int64, Index: []*kir.Ix{sum(v(2), times(v(1), 5))}}}}
			b.kernel(&kir.Kernel{Out: o, Shape: tile.Shape{16}, Reduce: []kir.Loop{loop("n", 0, 2), loop("y", 0, 4), loop("x", 0, 39)}, Agg: tile.Sum,
				Body: apply(tile.Mul, f32, apply(tile.Mul, f32, b.load(a, v(1), v(2), v(3), v(0)), b.load(w, v(2), v(0))), y)})
		}, 1, []string{"loops-redrows"}},
		{"gemm_layouts", func(b *progBuilder) {
			// Batched products with the output laid out batch, N, M; a
			// transposed operand; an epilogue of another dtype.
			a := b.buf(kir.Input, "a", f32, tile.Shape{3, 37, 19})
			w := b.buf(kir.Input, "w", f32, tile.Shape{3, 19, 29})
			o := b.buf(kir.Output, "o", f32, tile.Shape{3, 29, 37})
			b.kernel(&kir.Kernel{Out: o, Shape: tile.Shape{3, 29, 37}, Reduce: []kir.Loop{loop("k", 0, 18)}, Agg: tile.Sum,
				Body: apply(tile.Mul, f32, b.load(a, v(0), v(2), v(3)), b.load(w, v(0), v(3), v(1)))})
			d := b.buf(kir.Output, "d", tile.Float64, tile.Shape{37, 29})
			b.kernel(&kir.Kernel{Out: d, Shape: tile.Shape{37, 29}, Reduce: []kir.Loop{loop("b", 0, 2), loop("k", 0, 18)}, Agg: tile.Sum,
				Body:     apply(tile.Mul, f32, b.load(a, v(2), v(0), v(3)), b.load(w, v(2), v(3), v(1))),
				Epilogue: &kir.Expr{Op: kir.Cast, DType: tile.Float64, Args: []*kir.Expr{acc(f32)}}})
			p := b.buf(kir.Output, "p", tile.Bool, tile.Shape{37, 29})
			b.kernel(&kir.Kernel{Out: p, Shape: tile.Shape{37, 29}, Reduce: []kir.Loop{loop("k", 0, 18)}, Agg: tile.Sum,
				Body:     apply(tile.Mul, f32, b.load(a, c(1), v(0), v(2)), b.load(w, c(2), v(2), v(1))),
				Epilogue: apply(tile.Gt, tile.Bool, acc(f32), konst(f32, 0))})
		}, 1, []string{"gemm-tiles", "gemm-tiles", "gemm-tiles"}},
		{"gemm_padded_split", func(b *progBuilder) {
			// A weight gradient: long K with padding conditions on the
			// row operand, so the sum is split and packed.
			x := b.buf(kir.Input, "x", f32, tile.Shape{8, 30, 30, 3})
			dy := b.buf(kir.Input, "dy", f32, tile.Shape{8, 30, 30, 5})
			o := b.buf(kir.Output, "dw", f32, tile.Shape{3, 3, 3, 5})
			yy, xx := sum(v(5), v(0), c(-1)), sum(v(6), v(1), c(-1))
			b.kernel(&kir.Kernel{Out: o, Shape: tile.Shape{3, 3, 3, 5},
				Reduce: []kir.Loop{loop("n", 0, 7), loop("y", 0, 29), loop("x", 0, 29)}, Agg: tile.Sum,
				Where: []kir.Cond{{X: yy, Bound: 30}, {X: xx, Bound: 30}},
				Body:  apply(tile.Mul, f32, b.load(x, v(4), yy, xx, v(2)), b.load(dy, v(4), v(5), v(6), v(3)))})
		}, 1, []string{"gemm-splitK"}},
		{"gemm_split_blocks", func(b *progBuilder) {
			// A weight gradient whose parts of the split batch hold more
			// images than one packed block: each part adds block after
			// block into its partial product.
			x := b.buf(kir.Input, "x", f32, tile.Shape{50, 39, 39, 4})
			dy := b.buf(kir.Input, "dy", f32, tile.Shape{50, 39, 39, 5})
			o := b.buf(kir.Output, "dw", f32, tile.Shape{3, 3, 4, 5})
			yy, xx := sum(v(5), v(0), c(-1)), sum(v(6), v(1), c(-1))
			b.kernel(&kir.Kernel{Out: o, Shape: tile.Shape{3, 3, 4, 5},
				Reduce: []kir.Loop{loop("n", 0, 49), loop("y", 0, 38), loop("x", 0, 38)}, Agg: tile.Sum,
				Where: []kir.Cond{{X: yy, Bound: 39}, {X: xx, Bound: 39}},
				Body:  apply(tile.Mul, f32, b.load(x, v(4), yy, xx, v(2)), b.load(dy, v(4), v(5), v(6), v(3)))})
		}, 1, []string{"gemm-splitK"}},
		{"in_place_update", func(b *progBuilder) {
			vv := b.buf(kir.Variable, "v", f32, tile.Shape{5, 300})
			x := b.buf(kir.Input, "x", f32, tile.Shape{300})
			b.kernel(&kir.Kernel{Out: vv, Shape: tile.Shape{5, 300}, Agg: tile.Assign,
				Body: apply(tile.Add, f32, apply(tile.Mul, f32, b.load(vv, v(0), v(1)), konst(f32, 0.5)), b.load(x, v(1)))})
			n := b.buf(kir.Variable, "n", tile.Int64, tile.Shape{})
			b.kernel(&kir.Kernel{Out: n, Shape: tile.Shape{}, Agg: tile.Assign,
				Body: apply(tile.Add, tile.Int64, b.load(n), konst(tile.Int64, 1))})
		}, 3, nil},
		{"gathers_and_conditions", func(b *progBuilder) {
			// Loaded indices in loads and in conditions, out of range both
			// ways.
			data := b.buf(kir.Input, "data", f32, tile.Shape{6, 40})
			idx := b.buf(kir.Input, "idx", tile.Int32, tile.Shape{7})
			o := b.buf(kir.Output, "o", f32, tile.Shape{7, 40})
			gi := kir.IxOfValue(b.load(idx, v(0)))
			b.kernel(&kir.Kernel{Out: o, Shape: tile.Shape{7, 40}, Agg: tile.Assign, Body: b.fill(data, -3, gi, v(1))})
			s := b.buf(kir.Output, "s", f32, tile.Shape{40})
			b.kernel(&kir.Kernel{Out: s, Shape: tile.Shape{40}, Reduce: []kir.Loop{loop("j", 0, 6)}, Agg: tile.Sum,
				Where: []kir.Cond{{X: kir.IxOfValue(b.load(idx, v(1))), Bound: 6}},
				Body:  b.load(data, kir.IxOfValue(b.load(idx, v(1))), v(0))})
		}, 1, nil},
		{"integer_reductions", func(b *progBuilder) {
			for _, dt := range []tile.DType{tile.Int32, tile.Int64, tile.Float64} {
				a := b.buf(kir.Input, "a_"+dt.String(), dt, tile.Shape{5, 7})
				for _, agg := range []tile.Agg{tile.Sum, tile.Max, tile.Min, tile.Prod} {
					o := b.buf(kir.Output, fmt.Sprintf("o_%s_%s", dt, agg), dt, tile.Shape{7})
					b.kernel(&kir.Kernel{Out: o, Shape: tile.Shape{7}, Reduce: []kir.Loop{loop("i", 0, 4)}, Agg: agg,
						Body: b.load(a, v(1), v(0))})
				}
			}
		}, 1, nil},
		{"zero_sizes", func(b *progBuilder) {
			a := b.buf(kir.Input, "a", f32, tile.Shape{0, 4})
			o := b.buf(kir.Output, "o", f32, tile.Shape{0, 4})
			b.kernel(&kir.Kernel{Out: o, Shape: tile.Shape{0, 4}, Agg: tile.Assign, Body: b.load(a, v(0), v(1))})
			s := b.buf(kir.Output, "s", f32, tile.Shape{4})
			b.kernel(&kir.Kernel{Out: s, Shape: tile.Shape{4}, Reduce: []kir.Loop{loop("i", 0, -1)}, Agg: tile.Sum,
				Body: b.load(a, v(1), v(0))})
		}, 1, nil},
		{"output_is_input", func(b *progBuilder) {
			a := b.buf(kir.Input, "a", f32, tile.Shape{3, 3})
			b.p.Outputs = append(b.p.Outputs, kir.Binding{Name: "same", Buffer: a})
			o := b.buf(kir.Output, "o", f32, tile.Shape{3})
			b.kernel(&kir.Kernel{Out: o, Shape: tile.Shape{3}, Agg: tile.Assign,
				Body: apply(tile.Sqrt, f32, apply(tile.Abs, f32, b.load(a, v(0), v(0))))})
		}, 1, nil},
	}
	for _, workers := range []int{1, 3} {
		d := New(Workers(workers), Cache(false))
		for _, tc := range cases {
			t.Run(fmt.Sprintf("%s/workers=%d", tc.name, workers), func(t *testing.T) {
				b := newProg(tc.name)
				tc.build(b)
				compile.Schedule(b.p, d.Target())
				if err := b.p.Validate(); err != nil {
					t.Fatal(err)
				}
				if tc.want != nil {
					x, err := d.Load(b.p)
					if err != nil {
						t.Fatal(err)
					}
					for i, w := range tc.want {
						if got := describe(x.kernels[i]); got != w {
							t.Errorf("kernel %d runs as %s, want %s", i, got, w)
						}
					}
				}
				checkProgram(t, d, b.p, tc.runs, 7)
			})
		}
		d.Close()
	}
}
