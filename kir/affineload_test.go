package kir

import (
	"testing"

	"github.com/tartanml/tartan/tile"
)

// TestAffineLoadOf checks the affine forms of a strided, padded window load
// with a Where condition against direct evaluation of its index
// expressions at every point of the loop box: the offset must agree
// wherever the load reads, and the guards must hold exactly where every
// index is in range and the condition holds.
func TestAffineLoadOf(t *testing.T) {
	p := &Program{Buffers: []*Buffer{{ID: 0, Shape: tile.Shape{2, 7, 3}, DType: tile.Float32}}}
	v := IxOfVar
	// y[n, o, c] over r: reads x[n, 2o + r - 1, c], Where o + r < 5.
	at := IxSum(IxTimes(v(1), 2), IxSum(v(3), IxOfConst(-1)))
	e := &Expr{Op: Load, DType: tile.Float32, Buf: 0, Index: []*Ix{v(0), at, v(2)}, OOB: Skip}
	k := &Kernel{Shape: tile.Shape{2, 4, 3}, Reduce: []Loop{{Name: "r", Lo: 0, Hi: 2}}}
	conds := []Cond{{X: IxSum(v(1), v(3)), Bound: 5}}
	a, ok := AffineLoadOf(p, k, e, conds)
	if !ok {
		t.Fatal("the window load is not affine")
	}
	if len(a.Guards) != 2 {
		t.Fatalf("%d guards, want 2 (the window's index and the condition)", len(a.Guards))
	}
	vals := make([]int, 4)
	for vals[0] = 0; vals[0] < 2; vals[0]++ {
		for vals[1] = 0; vals[1] < 4; vals[1]++ {
			for vals[2] = 0; vals[2] < 3; vals[2]++ {
				for vals[3] = 0; vals[3] < 3; vals[3]++ {
					h := EvalIx(at, vals, nil)
					want := h >= 0 && h < 7 && vals[1]+vals[3] < 5
					got := true
					for _, g := range a.Guards {
						got = got && g.Holds(vals)
					}
					if got != want {
						t.Fatalf("at %v the guards say %v, want %v", vals, got, want)
					}
					if !want {
						continue
					}
					off := a.Konst
					for i, c := range a.Coef {
						off += c * vals[i]
					}
					if w := (vals[0]*7+h)*3 + vals[2]; off != w {
						t.Fatalf("at %v offset %d, want %d", vals, off, w)
					}
				}
			}
		}
	}
	// Not affine: a modular index; a Fill load of 1 that may leave its
	// buffer.
	mod := &Expr{Op: Load, DType: tile.Float32, Buf: 0, Index: []*Ix{v(0), IxModBy(IxSum(v(1), v(3)), 7), v(2)}, OOB: Skip}
	k2 := &Kernel{Shape: tile.Shape{2, 9, 3}, Reduce: []Loop{{Name: "r", Lo: 0, Hi: 2}}}
	if _, ok := AffineLoadOf(p, k2, mod, nil); ok {
		t.Error("a modular index over more than one period was taken as affine")
	}
	// The window's in-range condition again as a Where condition, with
	// a tighter bound: one guard, the tighter one.
	twice, ok := AffineLoadOf(p, k, e, []Cond{{X: at, Bound: 6}})
	if !ok || len(twice.Guards) != 1 || twice.Guards[0].Bound != 6 {
		t.Errorf("a Where condition repeating the index's: guards %+v, want one of bound 6", twice.Guards)
	}
	fill := *e
	fill.OOB, fill.Value = Fill, 1
	if _, ok := AffineLoadOf(p, k, &fill, nil); ok {
		t.Error("a load filled with 1 was taken as 0 out of range")
	}
}
