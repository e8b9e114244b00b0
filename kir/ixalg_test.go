package kir

import (
	"math/rand/v2"
	"testing"

	"github.com/tartanml/tartan/tile"
)

func v(i int) *Ix { return IxOfVar(i) }
func c(k int) *Ix { return IxOfConst(k) }

func TestSimplifyHandWorked(t *testing.T) {
	// x0 ∈ [0, 9], x1 ∈ [0, 3], x2 ∈ [0, 1567].
	vars := []Range{{0, 9}, {0, 3}, {0, 1567}}
	cases := []struct {
		name string
		x    *Ix
		want string
	}{
		{"div of row-major pair", IxFloorDivBy(IxSum(IxTimes(v(0), 4), v(1)), 4), "v0"},
		{"mod of row-major pair", IxModBy(IxSum(IxTimes(v(0), 4), v(1)), 4), "v1"},
		{"constant folds", IxSum(IxTimes(c(3), 2), c(-6)), "0"},
		{"terms merge", IxSum(IxSum(v(1), v(0)), IxTimes(v(1), -1)), "v0"},
		{"nested div", IxFloorDivBy(IxFloorDivBy(v(2), 32), 7), "v2 div 224"},
		{"div keeps constant multiples", IxFloorDivBy(IxSum(IxTimes(v(0), 6), IxSum(v(2), c(7))), 3), "2*v0 + (v2 + 1) div 3 + 2"},
		{"mod drops multiples", IxModBy(IxSum(IxTimes(v(0), 6), v(2)), 3), "v2 mod 3"},
		{"mod of mod", IxModBy(IxModBy(v(2), 12), 4), "v2 mod 4"},
		{"small range div is constant", IxFloorDivBy(IxSum(v(1), c(4)), 8), "0"},
		{"small range mod shifts", IxModBy(IxSum(v(1), c(8)), 16), "v1 + 8"},
		{"negative coefficients", IxSum(IxTimes(v(0), -1), c(3)), "-v0 + 3"},
		{"div by a common factor", IxFloorDivBy(IxSum(IxTimes(v(0), 8), v(1)), 16), "v0 div 2"},
		{"mod by a common factor", IxModBy(IxSum(IxTimes(v(0), 8), v(1)), 16), "v1 + 8*(v0 mod 2)"},
		{"no factor when the rest is too wide", IxFloorDivBy(IxSum(IxTimes(v(0), 8), v(2)), 16), "(8*v0 + v2) div 16"},
	}
	for _, tc := range cases {
		if got := Simplify(tc.x, vars).String(); got != tc.want {
			t.Errorf("%s: got %s, want %s", tc.name, got, tc.want)
		}
	}
}

func TestOffsetRecombinesReshapes(t *testing.T) {
	// A [N, 7, 7, 32] buffer read as [N, 1568] at (v0, v1).
	vars := []Range{{0, 63}, {0, 1567}}
	flat := IxSum(IxTimes(v(0), 1568), v(1))
	shape := tile.Shape{64, 7, 7, 32}
	idx := []*Ix{
		IxFloorDivBy(flat, 1568),
		IxModBy(IxFloorDivBy(flat, 224), 7),
		IxModBy(IxFloorDivBy(flat, 32), 7),
		IxModBy(flat, 32),
	}
	for d := range idx {
		idx[d] = Simplify(idx[d], vars)
	}
	off := Offset(idx, shape, vars)
	coef, k, ok := LinearForm(off, 2)
	if !ok || coef[0] != 1568 || coef[1] != 1 || k != 0 {
		t.Errorf("offset %s: linear %v, coefficients %v, constant %d; want 1568*v0 + v1", off, ok, coef, k)
	}
}

// randIx builds a random index expression over nv variables.
func randIx(rng *rand.Rand, nv, depth int) *Ix {
	if depth == 0 || rng.IntN(4) == 0 {
		if rng.IntN(3) == 0 {
			return c(rng.IntN(11) - 5)
		}
		return v(rng.IntN(nv))
	}
	switch rng.IntN(5) {
	case 0, 1:
		return IxSum(randIx(rng, nv, depth-1), randIx(rng, nv, depth-1))
	case 2:
		return IxTimes(randIx(rng, nv, depth-1), rng.IntN(9)-4)
	case 3:
		return IxFloorDivBy(randIx(rng, nv, depth-1), 1+rng.IntN(6))
	}
	return IxModBy(randIx(rng, nv, depth-1), 1+rng.IntN(6))
}

// TestIndexAlgebraProperties checks Simplify, Bounds, Offset and
// SubstituteIx against direct evaluation on random expressions at every
// point of random variable boxes.
func TestIndexAlgebraProperties(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	noValue := func(*Expr) int { return 0 }
	for trial := range 3000 {
		nv := 1 + rng.IntN(3)
		vars := make([]Range, nv)
		for i := range vars {
			lo := rng.IntN(7) - 3
			vars[i] = Range{lo, lo + rng.IntN(6)}
		}
		x := randIx(rng, nv, 4)
		s := Simplify(x, vars)
		lo, hi, ok := Bounds(x, vars)
		sub := make([]*Ix, nv)
		for i := range sub {
			sub[i] = IxSum(IxTimes(v(i), 2), c(1)) // v ↦ 2v + 1
		}
		subbed := SubstituteIx(x, sub, nil)
		shape := tile.Shape{3, 5}
		y := randIx(rng, nv, 3)
		off := Offset([]*Ix{x, y}, shape, vars)
		p := make([]int, nv)
		for i := range p {
			p[i] = vars[i].Lo
		}
		for {
			want := EvalIx(x, p, noValue)
			if got := EvalIx(s, p, noValue); got != want {
				t.Fatalf("trial %d: %s simplifies to %s: %d vs %d at %v (ranges %v)", trial, x, s, got, want, p, vars)
			}
			if !ok || want < lo || want > hi {
				t.Fatalf("trial %d: %s = %d at %v outside bounds [%d, %d] (ok %v)", trial, x, want, p, lo, hi, ok)
			}
			q := make([]int, nv)
			for i := range q {
				q[i] = 2*p[i] + 1
			}
			if got := EvalIx(subbed, p, noValue); got != EvalIx(x, q, noValue) {
				t.Fatalf("trial %d: substitution of %s gives %s", trial, x, subbed)
			}
			if got, want := EvalIx(off, p, noValue), want*5+EvalIx(y, p, noValue); got != want {
				t.Fatalf("trial %d: offset of [%s, %s] is %s: %d vs %d at %v", trial, x, y, off, got, want, p)
			}
			i := nv - 1
			for ; i >= 0; i-- {
				if p[i]++; p[i] <= vars[i].Hi {
					break
				}
				p[i] = vars[i].Lo
			}
			if i < 0 {
				break
			}
		}
	}
}

func TestLinearForm(t *testing.T) {
	x := IxSum(IxSum(IxTimes(v(0), 3), IxTimes(IxSum(v(1), c(2)), -2)), c(5))
	coef, k, ok := LinearForm(x, 2)
	if !ok || coef[0] != 3 || coef[1] != -2 || k != 1 {
		t.Errorf("got %v %d %v", coef, k, ok)
	}
	if _, _, ok := LinearForm(IxFloorDivBy(v(0), 2), 1); ok {
		t.Error("a floor division is not linear")
	}
	if _, _, ok := LinearForm(v(3), 2); ok {
		t.Error("variable 3 of 2 accepted")
	}
}
