package cpu

import (
	"testing"

	"github.com/tartanml/tartan/kir"
	"github.com/tartanml/tartan/tile"
)

// TestImpliedGuards checks that rewriteKernel drops a select whose
// condition the loop ranges and the Where conditions decide, keeps one they
// do not decide and one in an epilogue (evaluated where the Where
// conditions need not hold), and that the kernels, run by the loops
// executor (the channel is the outer dimension, so no window kernel takes
// them), agree with kir.Interpret.
func TestImpliedGuards(t *testing.T) {
	f32, i64 := tile.Float32, tile.Int64
	ixv := func(x *kir.Ix) *kir.Expr { return &kir.Expr{Op: kir.IndexValue, DType: i64, Index: []*kir.Ix{x}} }
	b := newProg("implied_guards")
	x := b.buf(kir.Input, "x", f32, tile.Shape{5, 4})
	at := sum(times(v(1), 2), v(2))
	guard := func(hi float64) *kir.Expr {
		return apply(tile.And, tile.Bool,
			apply(tile.Ge, tile.Bool, ixv(at), konst(i64, 0)),
			apply(tile.Le, tile.Bool, ixv(at), konst(i64, hi)))
	}
	// o[c, y] = max over r in [-1, 1] with 0 ≤ 2y + r < 4 of
	// select(0 ≤ 2y + r ≤ hi, x[c, 2y + r], 0): decided for hi = 3, not
	// for hi = 2.
	for i, hi := range []float64{3, 2} {
		o := b.buf(kir.Output, "o"+string(rune('0'+i)), f32, tile.Shape{5, 3})
		b.kernel(&kir.Kernel{Out: o, Shape: tile.Shape{5, 3}, Agg: tile.Max, Reduce: []kir.Loop{loop("r", -1, 1)},
			Where: []kir.Cond{{X: at, Bound: 4}},
			Body:  apply(tile.Select, f32, guard(hi), b.fill(x, 0, v(0), at), konst(f32, 0))})
	}
	// e[c, y] = Σ over r in [0, 1] with 1 ≤ y of x[c, y + r - 1], then
	// select(1 ≤ y, acc, 7): at y = 0 no point holds and the epilogue
	// gives 7, so its guard must stay.
	e := b.buf(kir.Output, "e", f32, tile.Shape{5, 3})
	yIx := sum(v(1), kir.IxOfConst(-1))
	b.kernel(&kir.Kernel{Out: e, Shape: tile.Shape{5, 3}, Agg: tile.Sum, Reduce: []kir.Loop{loop("r", 0, 1)},
		Where: []kir.Cond{{X: yIx, Bound: 3}},
		Body:  b.fill(x, 0, v(0), sum(yIx, v(2))),
		Epilogue: apply(tile.Select, f32, apply(tile.Ge, tile.Bool, ixv(v(1)), konst(i64, 1)),
			&kir.Expr{Op: kir.Acc, DType: f32}, konst(f32, 7))})
	p := b.p
	if got := rewriteKernel(p, p.Kernels[0]).Body; got.Op != kir.Load {
		t.Errorf("decided guard kept: body %v", got)
	}
	if got := rewriteKernel(p, p.Kernels[1]).Body; got.Op != kir.Apply || got.Fn != tile.Select {
		t.Errorf("undecided guard dropped: body %v", got)
	}
	if got := rewriteKernel(p, p.Kernels[2]).Epilogue; got.Op != kir.Apply || got.Fn != tile.Select {
		t.Errorf("epilogue guard dropped: %v", got)
	}
	d := New(Cache(false))
	defer d.Close()
	checkProgram(t, d, p, 3, 7)
}
