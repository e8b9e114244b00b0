package cpu

import (
	"testing"

	"github.com/tartanml/tartan/compile"
	"github.com/tartanml/tartan/grad"
	"github.com/tartanml/tartan/kir"
	"github.com/tartanml/tartan/op"
	"github.com/tartanml/tartan/tile"
)

// countGemv returns the number of kernels of x run by the matrix-vector
// executor.
func countGemv(x *Executable) int {
	n := 0
	for _, k := range x.kernels {
		if _, ok := k.(*gemvKernel); ok {
			n++
		}
	}
	return n
}

// convGraph builds a convolution of x by k and, with wrt, the gradients of
// the sum of its product with a cotangent with respect to x and k.
func convGraph(xs, ks tile.Shape, opt op.ConvOptions, backward bool) func(g *tile.Graph) error {
	return func(g *tile.Graph) error {
		x := g.Input("x", tile.Float32, xs)
		k := g.Input("k", tile.Float32, ks)
		y := op.Conv2D(g, x, k, opt)
		if !backward {
			g.SetOutput("y", y)
			return nil
		}
		dy := g.Input("dy", tile.Float32, y.Shape())
		gs, err := grad.VJP(g, []*tile.Tensor{y}, []*tile.Tensor{dy}, x, k)
		if err != nil {
			return err
		}
		g.SetOutput("dx", gs[0])
		g.SetOutput("dk", gs[1])
		return nil
	}
}

// TestGemvCompiledGraphs compares programs whose products have one column
// (or a few) with kir.Interpret (criterion in interp_test.go) and checks
// how many of their kernels the matrix-vector executor runs: those whose
// sum is short on its innermost K variable, none of the others (the gemm
// path runs them).
func TestGemvCompiledGraphs(t *testing.T) {
	same, valid := op.ConvOptions{Padding: op.Same}, op.ConvOptions{Padding: op.Valid}
	stride2 := op.ConvOptions{Padding: op.Same, Strides: []int{2, 2}}
	cases := []struct {
		name  string
		build func(g *tile.Graph) error
		gemv  int // kernels the matrix-vector executor must run
	}{
		// Input gradients of one-channel convolutions: a sum over the
		// taps and, innermost, the output channels (long: the gemm path).
		{"conv1ch_same_dx", convGraph(tile.Shape{3, 9, 8, 1}, tile.Shape{2, 2, 1, 12}, same, true), 0},
		{"conv1ch_valid_dx", convGraph(tile.Shape{2, 7, 9, 1}, tile.Shape{3, 3, 1, 16}, valid, true), 0},
		// With one channel in and out the sum is over the taps alone.
		{"conv1ch_1out", convGraph(tile.Shape{3, 9, 8, 1}, tile.Shape{3, 3, 1, 1}, same, false), 1},
		// Strides make the input gradient's indices floor divisions and
		// modulos: not affine, left to the gemm path.
		{"conv1ch_stride2_dx", convGraph(tile.Shape{2, 10, 9, 1}, tile.Shape{3, 3, 1, 10}, stride2, true), 0},
		// A convolution with one output channel: a sum over the taps and
		// the input channels, the gemm path's.
		{"conv_out1_same", convGraph(tile.Shape{2, 7, 6, 10}, tile.Shape{3, 3, 10, 1}, same, false), 0},
		{"conv_out1_valid_stride2", convGraph(tile.Shape{2, 9, 9, 9}, tile.Shape{2, 2, 9, 1}, op.ConvOptions{Padding: op.Valid, Strides: []int{2, 2}}, false), 0},
		{"conv_out1_short", convGraph(tile.Shape{2, 7, 6, 3}, tile.Shape{3, 3, 3, 1}, same, false), 1},
		{"matvec", func(g *tile.Graph) error {
			a := g.Input("a", tile.Float32, tile.Shape{37, 50})
			v := g.Input("v", tile.Float32, tile.Shape{50})
			g.SetOutput("y", op.ReLU(g, op.MatMul(g, a, v)))
			return nil
		}, 0},
		{"matvec_bias_several_tasks", func(g *tile.Graph) error {
			a := g.Input("a", tile.Float32, tile.Shape{700, 64})
			v := g.Input("v", tile.Float32, tile.Shape{64, 1})
			bias := g.Input("bias", tile.Float32, tile.Shape{1})
			g.SetOutput("y", op.BiasAdd(g, op.MatMul(g, a, v), bias))
			return nil
		}, 0},
		{"matmul_3_columns", func(g *tile.Graph) error {
			a := g.Input("a", tile.Float32, tile.Shape{33, 40})
			b := g.Input("b", tile.Float32, tile.Shape{40, 3})
			g.SetOutput("y", op.MatMul(g, a, b))
			return nil
		}, 0},
		{"batched_matvec", func(g *tile.Graph) error {
			a := g.Input("a", tile.Float32, tile.Shape{4, 21, 30})
			b := g.Input("b", tile.Float32, tile.Shape{4, 30, 1})
			g.SetOutput("y", op.MatMul(g, a, b))
			return nil
		}, 0},
		// Near misses: five columns; a row vector times a matrix. A sum
		// short along K runs here.
		{"matmul_5_columns", func(g *tile.Graph) error {
			a := g.Input("a", tile.Float32, tile.Shape{33, 40})
			b := g.Input("b", tile.Float32, tile.Shape{40, 5})
			g.SetOutput("y", op.MatMul(g, a, b))
			return nil
		}, 0},
		{"vecmat", func(g *tile.Graph) error {
			v := g.Input("v", tile.Float32, tile.Shape{50})
			a := g.Input("a", tile.Float32, tile.Shape{50, 37})
			g.SetOutput("y", op.MatMul(g, v, a))
			return nil
		}, 0},
		{"short_k", func(g *tile.Graph) error {
			a := g.Input("a", tile.Float32, tile.Shape{40, 4})
			b := g.Input("b", tile.Float32, tile.Shape{4, 1})
			g.SetOutput("y", op.MatMul(g, a, b))
			return nil
		}, 1},
	}
	d := New(Cache(false))
	defer d.Close()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			g := tile.NewGraph(c.name)
			if err := c.build(g); err != nil {
				t.Fatal(err)
			}
			p := compileFor(t, d, g)
			x, err := d.Load(p)
			if err != nil {
				t.Fatal(err)
			}
			n := countGemv(x)
			x.Close()
			if n != c.gemv {
				t.Errorf("%d kernels run as matrix-vector products, want %d\n%v", n, c.gemv, p)
			}
			checkProgram(t, d, p, 2, 3)
		})
	}
}

// TestGemvHandWritten compares hand-written matrix-vector kernels with
// kir.Interpret: the forms the compiler does not produce today (few rows,
// conditions on either side and along K, Fill loads, offset and multiple
// reduction loops, epilogues into a non-float32 output, a matrix read
// backwards), with sums long along K (the gemm path's) and short (this
// executor's), and near misses the executor must reject.
func TestGemvHandWritten(t *testing.T) {
	f32, f16 := tile.Float32, tile.Float16
	mul := func(b *progBuilder, x, y *kir.Expr) *kir.Expr { return apply(tile.Mul, f32, x, y) }
	cases := []struct {
		name  string
		build func(b *progBuilder)
		gemv  bool
	}{
		{"two_rows_epilogue_f16", func(b *progBuilder) {
			// out[j, p] = 2·(Σ_k a[j, k]·m[p, k] + bias[p]): the matrix
			// feeds the columns.
			a := b.buf(kir.Input, "a", f16, tile.Shape{2, 2048})
			m := b.buf(kir.Input, "m", f16, tile.Shape{300, 2048})
			bias := b.buf(kir.Input, "bias", f16, tile.Shape{300})
			o := b.buf(kir.Output, "o", f16, tile.Shape{2, 300})
			epi := apply(tile.Mul, f16, apply(tile.Add, f16, acc(f16), b.load(bias, v(1))), konst(f16, 2))
			b.kernel(&kir.Kernel{Out: o, Shape: tile.Shape{2, 300}, Reduce: []kir.Loop{loop("k", 0, 2047)}, Agg: tile.Sum,
				Body: apply(tile.Mul, f16, b.load(a, v(0), v(2)), b.load(m, v(1), v(2))), Epilogue: epi})
		}, false},
		{"affine_epilogue_several_tasks", func(b *progBuilder) {
			// out[p] = 2·Σ_k a[p, k]·w[k] + 1 over several tasks.
			a := b.buf(kir.Input, "a", f32, tile.Shape{700, 64})
			w := b.buf(kir.Input, "w", f32, tile.Shape{64})
			o := b.buf(kir.Output, "o", f32, tile.Shape{700})
			epi := apply(tile.Add, f32, apply(tile.Mul, f32, acc(f32), konst(f32, 2)), konst(f32, 1))
			b.kernel(&kir.Kernel{Out: o, Shape: tile.Shape{700}, Reduce: []kir.Loop{loop("k", 0, 63)}, Agg: tile.Sum,
				Body: mul(b, b.load(a, v(0), v(1)), b.load(w, v(1))), Epilogue: epi})
		}, false},
		{"band_and_fill", func(b *progBuilder) {
			// out[p, j] = Σ_k a[p, k-2]·w[k, j] over 0 ≤ k-p+5 < 11, a
			// padded with zeros: conditions along the axis, per point.
			a := b.buf(kir.Input, "a", f32, tile.Shape{30, 20})
			w := b.buf(kir.Input, "w", f32, tile.Shape{24, 2})
			o := b.buf(kir.Output, "o", f32, tile.Shape{30, 2})
			b.kernel(&kir.Kernel{Out: o, Shape: tile.Shape{30, 2}, Reduce: []kir.Loop{loop("k", 0, 23)}, Agg: tile.Sum,
				Where: []kir.Cond{{X: sum(v(2), times(v(0), -1), c(5)), Bound: 11}},
				Body:  mul(b, b.fill(a, 0, v(0), sum(v(2), c(-2))), b.load(w, v(2), v(1)))})
		}, false},
		{"zero_padding", func(b *progBuilder) {
			// out[p, j] = Σ_k a[p, k-2]·w[k, j], a padded with zeros on
			// both sides: the same interval of the axis for every point.
			a := b.buf(kir.Input, "a", f32, tile.Shape{30, 20})
			w := b.buf(kir.Input, "w", f32, tile.Shape{24, 2})
			o := b.buf(kir.Output, "o", f32, tile.Shape{30, 2})
			b.kernel(&kir.Kernel{Out: o, Shape: tile.Shape{30, 2}, Reduce: []kir.Loop{loop("k", 0, 23)}, Agg: tile.Sum,
				Body: mul(b, b.fill(a, 0, v(0), sum(v(2), c(-2))), b.load(w, v(2), v(1)))})
		}, false},
		{"vector_condition_offset_loops", func(b *progBuilder) {
			// Two reduction loops, the inner one starting at 3, and a
			// condition on the vector's column and K.
			a := b.buf(kir.Input, "a", f32, tile.Shape{3, 17, 5, 14})
			w := b.buf(kir.Input, "w", f32, tile.Shape{5, 14, 3})
			o := b.buf(kir.Output, "o", f32, tile.Shape{3, 17, 3})
			b.kernel(&kir.Kernel{Out: o, Shape: tile.Shape{3, 17, 3},
				Reduce: []kir.Loop{loop("r", 0, 4), loop("k", 3, 13)}, Agg: tile.Sum,
				Where: []kir.Cond{{X: sum(v(4), times(v(2), -3)), Bound: 9}},
				Body:  mul(b, b.load(a, v(0), v(1), v(3), v(4)), b.load(w, v(3), v(4), v(2)))})
		}, false},
		{"reversed_rows", func(b *progBuilder) {
			// out[p] = Σ_k a[22-p, k]·v[k]: the matrix's rows run backwards.
			a := b.buf(kir.Input, "a", f32, tile.Shape{23, 16})
			vv := b.buf(kir.Input, "v", f32, tile.Shape{16})
			o := b.buf(kir.Output, "o", f32, tile.Shape{23})
			b.kernel(&kir.Kernel{Out: o, Shape: tile.Shape{23}, Reduce: []kir.Loop{loop("k", 0, 15)}, Agg: tile.Sum,
				Body: mul(b, b.load(a, sum(times(v(0), -1), c(22)), v(1)), b.load(vv, v(1)))})
		}, false},
		{"short_band_fill_epilogue_f16", func(b *progBuilder) {
			// out[p, j] = 2·(Σ_k a[p, k-2]·w[k, j] + bias[j]) over
			// 0 ≤ k-p+3 < 5, a padded with zeros, into f16.
			a := b.buf(kir.Input, "a", f32, tile.Shape{30, 20})
			w := b.buf(kir.Input, "w", f32, tile.Shape{6, 2})
			bias := b.buf(kir.Input, "bias", f16, tile.Shape{2})
			o := b.buf(kir.Output, "o", f16, tile.Shape{30, 2})
			epi := apply(tile.Mul, f16, apply(tile.Add, f16, acc(f16), b.load(bias, v(1))), konst(f16, 2))
			b.kernel(&kir.Kernel{Out: o, Shape: tile.Shape{30, 2}, Reduce: []kir.Loop{loop("k", 0, 5)}, Agg: tile.Sum,
				Where:    []kir.Cond{{X: sum(v(2), times(v(0), -1), c(3)), Bound: 5}},
				Body:     apply(tile.Mul, f16, b.fill(a, 0, v(0), sum(v(2), c(-2))), b.load(w, v(2), v(1))),
				Epilogue: epi})
		}, true},
		{"short_vector_condition_offset_loops", func(b *progBuilder) {
			// Two reduction loops, the inner one starting at 3, and a
			// condition on the vector's column and K.
			a := b.buf(kir.Input, "a", f32, tile.Shape{3, 17, 5, 7})
			w := b.buf(kir.Input, "w", f32, tile.Shape{5, 7, 3})
			o := b.buf(kir.Output, "o", f32, tile.Shape{3, 17, 3})
			b.kernel(&kir.Kernel{Out: o, Shape: tile.Shape{3, 17, 3},
				Reduce: []kir.Loop{loop("r", 0, 4), loop("k", 3, 6)}, Agg: tile.Sum,
				Where: []kir.Cond{{X: sum(v(4), times(v(2), -2)), Bound: 5}},
				Body:  mul(b, b.load(a, v(0), v(1), v(3), v(4)), b.load(w, v(3), v(4), v(2)))})
		}, true},
		{"short_reversed_rows", func(b *progBuilder) {
			// out[p] = Σ_k a[22-p, k]·v[k]: the matrix's rows run backwards.
			a := b.buf(kir.Input, "a", f32, tile.Shape{23, 4})
			vv := b.buf(kir.Input, "v", f32, tile.Shape{4})
			o := b.buf(kir.Output, "o", f32, tile.Shape{23})
			b.kernel(&kir.Kernel{Out: o, Shape: tile.Shape{23}, Reduce: []kir.Loop{loop("k", 0, 3)}, Agg: tile.Sum,
				Body: mul(b, b.load(a, sum(times(v(0), -1), c(22)), v(1)), b.load(vv, v(1)))})
		}, true},
		{"fill_nonzero_rejected", func(b *progBuilder) {
			// Padding with ones is not a zero contribution.
			a := b.buf(kir.Input, "a", f32, tile.Shape{30, 20})
			w := b.buf(kir.Input, "w", f32, tile.Shape{24})
			o := b.buf(kir.Output, "o", f32, tile.Shape{30})
			b.kernel(&kir.Kernel{Out: o, Shape: tile.Shape{30}, Reduce: []kir.Loop{loop("k", 0, 23)}, Agg: tile.Sum,
				Body: mul(b, b.fill(a, 1, v(0), sum(v(1), c(-2))), b.load(w, v(1)))})
		}, false},
		{"strided_axis_rejected", func(b *progBuilder) {
			// The matrix is read down its columns along K.
			a := b.buf(kir.Input, "a", f32, tile.Shape{20, 30})
			w := b.buf(kir.Input, "w", f32, tile.Shape{20})
			o := b.buf(kir.Output, "o", f32, tile.Shape{30})
			b.kernel(&kir.Kernel{Out: o, Shape: tile.Shape{30}, Reduce: []kir.Loop{loop("k", 0, 19)}, Agg: tile.Sum,
				Body: mul(b, b.load(a, v(1), v(0)), b.load(w, v(1)))})
		}, false},
		{"max_rejected", func(b *progBuilder) {
			a := b.buf(kir.Input, "a", f32, tile.Shape{30, 20})
			w := b.buf(kir.Input, "w", f32, tile.Shape{20})
			o := b.buf(kir.Output, "o", f32, tile.Shape{30})
			b.kernel(&kir.Kernel{Out: o, Shape: tile.Shape{30}, Reduce: []kir.Loop{loop("k", 0, 19)}, Agg: tile.Max,
				Body: mul(b, b.load(a, v(0), v(1)), b.load(w, v(1)))})
		}, false},
	}
	d := New()
	defer d.Close()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			b := newProg(c.name)
			c.build(b)
			compile.Schedule(b.p, d.Target())
			if err := b.p.Validate(); err != nil {
				t.Fatal(err)
			}
			x, err := d.Load(b.p)
			if err != nil {
				t.Fatal(err)
			}
			got := countGemv(x) == 1
			x.Close()
			if got != c.gemv {
				t.Errorf("matrix-vector executor taken: %v, want %v\n%v", got, c.gemv, b.p)
			}
			checkProgram(t, d, b.p, 1, 5)
		})
	}
}

// TestGemvWorkersAndAllocations checks that a matrix-vector kernel gives
// the same bits on one worker as on several and that running it allocates
// nothing.
func TestGemvWorkersAndAllocations(t *testing.T) {
	g := tile.NewGraph("conv_dx")
	if err := convGraph(tile.Shape{4, 12, 12, 1}, tile.Shape{2, 2, 1, 1}, op.ConvOptions{Padding: op.Same}, true)(g); err != nil {
		t.Fatal(err)
	}
	var outs [2][]float32
	for i, workers := range []int{1, 3} {
		d := New(Workers(workers), Cache(false))
		p := compileFor(t, d, g)
		x, err := d.Load(p)
		if err != nil {
			t.Fatal(err)
		}
		if countGemv(x) != 1 {
			t.Fatalf("%d matrix-vector kernels, want 1", countGemv(x))
		}
		for _, in := range g.Inputs() {
			v := make([]float32, in.Size())
			for j := range v {
				v[j] = float32((j*7919+i*0)%97)/48 - 1
			}
			if err := x.SetInput(in.Op().(*tile.InputOp).Name, v); err != nil {
				t.Fatal(err)
			}
		}
		if err := x.Run(); err != nil {
			t.Fatal(err)
		}
		outs[i] = make([]float32, 4*12*12)
		if err := x.ReadOutput("dx", outs[i]); err != nil {
			t.Fatal(err)
		}
		if a := testing.AllocsPerRun(3, func() { x.Run() }); a != 0 {
			t.Errorf("%d workers: Run allocates %v times", workers, a)
		}
		x.Close()
		d.Close()
	}
	for i := range outs[0] {
		if outs[0][i] != outs[1][i] {
			t.Fatalf("element %d: %v on one worker, %v on three", i, outs[0][i], outs[1][i])
		}
	}
}
