package opencl

import (
	"strings"
	"testing"

	"github.com/tartanml/tartan/kir"
	"github.com/tartanml/tartan/tile"
)

// stridedConvProgram is a channels-first 2-D convolution with stride 2 and
// padding 1, [2, 3, 17, 17] ⊛ [4, 3, 3, 3] → [2, 4, 9, 9], whose image
// operand reads (2·oy + ky − 1, 2·ox + kx − 1) under two guards, and a
// Where condition on the kernel operand (ky + kx < 4) that the schedule
// gives that operand. The image loop is a batch loop, or with split groups
// one of the rows' loops with the spatial ones around the channel loop.
func stridedConvProgram(t *testing.T, split bool) *kir.Program {
	f := tile.Float32
	name := "strided"
	if split {
		name = "strided_split"
	}
	lb := newLoopBuilder(name)
	in := lb.buf("in", kir.Input, tile.Shape{2, 3, 17, 17}, nil)
	w := lb.buf("w", kir.Input, tile.Shape{4, 3, 3, 3}, nil)
	y := lb.buf("y", kir.Output, tile.Shape{2, 4, 9, 9}, nil)
	// x0 n, x1 co, x2 oy, x3 ox; r0 ci (v4), r1 ky (v5), r2 kx (v6).
	at := func(o, k int) *kir.Ix { return add(add(kir.IxTimes(v(o), 2), v(k)), c(-1)) }
	k := lb.kernel("conv", y, tile.Shape{2, 4, 9, 9},
		[]kir.Loop{{Name: "ci", Lo: 0, Hi: 2}, {Name: "ky", Lo: 0, Hi: 2}, {Name: "kx", Lo: 0, Hi: 2}}, tile.Sum,
		fn(tile.Mul, f, load(w, f, kir.Skip, 0, v(1), v(4), v(5), v(6)), load(in, f, kir.Skip, 0, v(0), v(4), at(2, 5), at(3, 6))))
	k.Where = []kir.Cond{{X: add(v(5), v(6)), Bound: 4}}
	scheduleGEMMGroups(t, k, !split)
	if g := k.Schedule.GEMM; split != (len(g.Batch) == 0) {
		t.Fatalf("split groups %v: batch loops %v", split, g.Batch)
	}
	if why := k.Schedule.GEMM.Complete(lb.p, k); why != "" {
		t.Fatal(why)
	}
	if err := lb.p.Validate(); err != nil {
		t.Fatal(err)
	}
	return lb.p
}

// TestSeparableOperands runs convolutions whose image operand is read
// through slot and reduction parts (see sepOperand) on every device, with
// the GPU tiling and the CPU one, and compares with kir.Interpret. The
// inputs are normal values, so a guard that admits a point it should not,
// or an offset part that is off by one, changes the sums.
func TestSeparableOperands(t *testing.T) {
	for _, mk := range []func(*testing.T) *kir.Program{convProgram,
		func(t *testing.T) *kir.Program { return stridedConvProgram(t, false) },
		func(t *testing.T) *kir.Program { return stridedConvProgram(t, true) }} {
		p := mk(t)
		src, err := render(p, traits{Name: "gpu", GPU: true, ComputeUnits: 132, MaxWorkGroup: 1024, LocalMemBytes: 48 << 10})
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(src.Source, "_g0 = ") {
			t.Fatalf("%s: no operand was read through separate parts:\n%s", p.Name, src.Source)
		}
		in := loopInputs(p, 3)
		want := interpretLoopProgram(t, p, in)
		for _, o := range []struct {
			name string
			opt  Option
			tol  float64
		}{
			{"tile32", WithGEMMTile(32), 1e-5},
			{"tile64", WithGEMMTile(64), 1e-5},
			{"tile128", WithGEMMTile(128), 1e-5},
			{"mma-3xtf32", withTest(testHooks{emulateMMA: Matmul3xTF32}), 1e-4},
		} {
			for _, d := range openAll(t, o.opt) {
				got, e := runLoopProgram(t, d, p, in, false)
				if s := e.launches[0].plan.Strategy; !strings.HasPrefix(s, "gemm") {
					t.Fatalf("%s with %s ran as %s, not as a matrix product", p.Name, o.name, s)
				}
				for name, w := range want {
					if err := closeTo(got[name], w, tile.Float32, o.tol, o.tol); err != nil {
						t.Errorf("%s with %s on %s, output %s: %v", p.Name, o.name, d.Info().ID, name, err)
					}
				}
			}
		}
	}
}
