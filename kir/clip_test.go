package kir

import (
	"math/rand"
	"testing"

	"github.com/tartanml/tartan/tile"
)

// checkClips enumerates the loop box ranges and checks the clips of every
// variable (each clipped with the variables before it as outer): the
// points the clipped loops visit are exactly those where every absorbed
// condition holds, and every condition is absorbed by at most one loop.
func checkClips(t *testing.T, name string, conds []AffineCond, ranges []Range, wantAbsorbed int) {
	t.Helper()
	nv := len(ranges)
	clips := make([]*Clip, nv)
	owner := map[int]int{}
	for v := range nv {
		clips[v] = ClipLoop(conds, v, ranges[v], func(u int) bool { return u < v })
		for _, i := range clips[v].Absorbed {
			if w, ok := owner[i]; ok {
				t.Fatalf("%s: condition %d absorbed by loops %d and %d", name, i, w, v)
			}
			owner[i] = v
		}
	}
	if len(owner) != wantAbsorbed {
		t.Errorf("%s: %d conditions absorbed, want %d", name, len(owner), wantAbsorbed)
	}
	// Brute force over the box.
	want := map[[4]int]bool{}
	vals := make([]int, nv)
	var box func(v int)
	box = func(v int) {
		if v == nv {
			for i := range conds {
				if _, ok := owner[i]; ok && !conds[i].Holds(vals) {
					return
				}
			}
			var key [4]int
			copy(key[:], vals)
			want[key] = true
			return
		}
		for x := ranges[v].Lo; x <= ranges[v].Hi; x++ {
			vals[v] = x
			box(v + 1)
		}
	}
	box(0)
	// The clipped loops.
	got := 0
	var loop func(v int)
	loop = func(v int) {
		if v == nv {
			var key [4]int
			copy(key[:], vals)
			if !want[key] {
				t.Errorf("%s: clipped loops visit %v, where an absorbed condition fails", name, vals[:nv])
			}
			got++
			return
		}
		lo, hi := clips[v].At(vals)
		if lo < ranges[v].Lo || hi > ranges[v].Hi {
			t.Fatalf("%s: clip of %d is [%d, %d], outside its range %v", name, v, lo, hi, ranges[v])
		}
		for x := lo; x <= hi; x++ {
			vals[v] = x
			loop(v + 1)
		}
	}
	loop(0)
	if got != len(want) {
		t.Errorf("%s: clipped loops visit %d points, %d satisfy the absorbed conditions", name, got, len(want))
	}
}

func TestClipLoop(t *testing.T) {
	cases := []struct {
		name     string
		ranges   []Range
		conds    []AffineCond
		absorbed int
	}{
		{"padded window", []Range{{0, 7}, {0, 2}},
			[]AffineCond{{[]int{1, 1}, -1, 8}}, 1},
		{"strided window", []Range{{0, 3}, {0, 2}},
			[]AffineCond{{[]int{2, 1}, -1, 8}}, 1},
		{"kernel gradient, stride 2", []Range{{0, 2}, {0, 3}},
			[]AffineCond{{[]int{1, 2}, -1, 8}}, 1},
		{"input gradient, negative", []Range{{0, 7}, {0, 2}},
			[]AffineCond{{[]int{1, -1}, 1, 8}}, 1},
		{"negative stride", []Range{{-3, 9}, {0, 4}},
			[]AffineCond{{[]int{3, -2}, 2, 7}}, 1},
		{"three variables", []Range{{0, 4}, {-2, 3}, {0, 5}},
			[]AffineCond{{[]int{1, 2, -3}, 4, 9}, {[]int{0, 1, 1}, 0, 4}, {[]int{2, 0, 0}, -1, 5}}, 3},
		{"two conditions on one loop", []Range{{0, 5}, {0, 6}},
			[]AffineCond{{[]int{1, 1}, -2, 6}, {[]int{-1, 2}, 1, 9}}, 2},
		{"empty", []Range{{0, 3}, {0, 3}},
			[]AffineCond{{[]int{0, 1}, 10, 3}}, 1},
		{"no variable", []Range{{0, 3}},
			[]AffineCond{{[]int{0}, 1, 3}}, 0},
	}
	for _, c := range cases {
		checkClips(t, c.name, c.conds, c.ranges, c.absorbed)
	}
	// Random conditions of up to four variables.
	rng := rand.New(rand.NewSource(1))
	for trial := range 300 {
		nv := 1 + rng.Intn(4)
		ranges := make([]Range, nv)
		for v := range ranges {
			lo := rng.Intn(5) - 2
			ranges[v] = Range{lo, lo + rng.Intn(6)}
		}
		conds := make([]AffineCond, 1+rng.Intn(3))
		absorbed := 0
		for i := range conds {
			coef := make([]int, nv)
			any := false
			for v := range coef {
				if rng.Intn(2) == 0 {
					coef[v] = rng.Intn(7) - 3
					any = any || coef[v] != 0
				}
			}
			if any {
				absorbed++
			}
			conds[i] = AffineCond{coef, rng.Intn(9) - 4, 1 + rng.Intn(8)}
		}
		checkClips(t, "random "+string(rune('a'+trial%26)), conds, ranges, absorbed)
	}
}

// TestClipLoopOuter checks that a condition reading a variable that is not
// outer is left.
func TestClipLoopOuter(t *testing.T) {
	conds := []AffineCond{{[]int{1, 1, 0}, -1, 8}, {[]int{0, 1, 1}, -1, 8}}
	c := ClipLoop(conds, 1, Range{0, 2}, func(u int) bool { return u == 0 })
	if len(c.Absorbed) != 1 || c.Absorbed[0] != 0 {
		t.Fatalf("absorbed %v, want [0]", c.Absorbed)
	}
	if lo, hi := c.At([]int{0, 0, 0}); lo != 1 || hi != 2 {
		t.Errorf("at x=0: [%d, %d], want [1, 2]", lo, hi)
	}
	if lo, hi := c.At([]int{7, 0, 0}); lo != 0 || hi != 1 {
		t.Errorf("at x=7: [%d, %d], want [0, 1]", lo, hi)
	}
}

// TestGuards checks the guards of a padded, strided depthwise window: its
// affine Where condition and the in-range conditions of its Skip load,
// not those of dimensions provably in range, nor a modular condition.
func TestGuards(t *testing.T) {
	// out[y, c] = Σ_k in[2·y + k − 1, c] · w[k, c] where 0 ≤ y mod 2 < 1
	// and 0 ≤ k + y < 5: variables y (0..3), c (0..1), k (0..2).
	p := &Program{Buffers: []*Buffer{
		{ID: 0, DType: tile.Float32, Shape: tile.Shape{8, 2}},
		{ID: 1, DType: tile.Float32, Shape: tile.Shape{3, 2}},
		{ID: 2, DType: tile.Float32, Shape: tile.Shape{4, 2}},
	}}
	in := &Expr{Op: Load, DType: tile.Float32, Buf: 0, OOB: Skip,
		Index: []*Ix{IxSum(IxSum(IxTimes(IxOfVar(0), 2), IxOfVar(2)), IxOfConst(-1)), IxOfVar(1)}}
	w := &Expr{Op: Load, DType: tile.Float32, Buf: 1, OOB: Skip, Index: []*Ix{IxOfVar(2), IxOfVar(1)}}
	k := &Kernel{Out: 2, Shape: tile.Shape{4, 2}, Reduce: []Loop{{"k", 0, 2}}, Agg: tile.Sum,
		Where: []Cond{{IxModBy(IxOfVar(0), 2), 1}, {IxSum(IxOfVar(2), IxOfVar(0)), 5}},
		Body:  &Expr{Op: Apply, DType: tile.Float32, Fn: tile.Mul, Args: []*Expr{in, w}}}
	conds, srcs := Guards(p, k)
	if len(conds) != 2 || srcs[0].Where != 1 || srcs[1].Load != in || srcs[1].Dim != 0 {
		t.Fatalf("guards %v from %v, want Where 1 and in's dimension 0", conds, srcs)
	}
	c, _, _ := ClipKernelLoop(p, k, 2, func(u int) bool { return u < 2 })
	if len(c.Absorbed) != 2 {
		t.Fatalf("absorbed %v, want both", c.Absorbed)
	}
	// y = 0: k ≥ 1 (2·0 + k − 1 ≥ 0); y = 3: k ≤ 1 (k + 3 < 5, 6 + k − 1 < 8).
	for _, tc := range [][3]int{{0, 1, 2}, {1, 0, 2}, {3, 0, 1}} {
		if lo, hi := c.At([]int{tc[0], 0, 0}); lo != tc[1] || hi != tc[2] {
			t.Errorf("y=%d: k in [%d, %d], want [%d, %d]", tc[0], lo, hi, tc[1], tc[2])
		}
	}
}
