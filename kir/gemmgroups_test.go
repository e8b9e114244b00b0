package kir

import (
	"slices"
	"strings"
	"testing"

	"github.com/tartanml/tartan/tile"
)

// productProgram is O[i, j] = Σ_k A[i, k]·B[k, j] over k in [0, 5] with A
// [4, 5], so that A's load leaves its buffer at k = 5 and yields fill
// there, and with the given Where conditions, scheduled as the view that
// GEMMGroups and Complete give it.
func productProgram(t *testing.T, fill float64, where ...Cond) (*Program, string) {
	f32 := tile.Float32
	a := load(0, f32, v(0), v(2))
	a.OOB, a.Value = Fill, fill
	k := &Kernel{Name: "mm", Out: 2, Shape: tile.Shape{4, 3}, Reduce: []Loop{{Name: "k", Lo: 0, Hi: 5}}, Agg: tile.Sum,
		Where: where, Body: fn(tile.Mul, f32, a, load(1, f32, v(2), v(1)))}
	p := program([]*Buffer{
		{Name: "a", Kind: Input, DType: f32, Shape: tile.Shape{4, 5}},
		{Name: "b", Kind: Input, DType: f32, Shape: tile.Shape{6, 3}, Slot: 1},
		{Name: "o", Kind: Output, DType: f32, Shape: tile.Shape{4, 3}, Slot: 2},
	}, k)
	reads := [2]map[int]bool{{}, {}}
	ExprVars(k.Body.Args[0], reads[0])
	ExprVars(k.Body.Args[1], reads[1])
	view, why := GEMMGroups(k, k.Body.Args[0], k.Body.Args[1], func(f, x int) bool { return reads[f][x] }, true)
	if view == nil {
		t.Fatal(why)
	}
	why = view.Complete(p, k)
	k.Schedule = Schedule{Strategy: "gemm", GEMM: view}
	return p, why
}

// TestGEMMComplete checks how Complete sorts conditions by operand and
// marks guarded operands, what it refuses, and that Validate refuses views
// that leave a condition out or read a guarded operand unchecked.
func TestGEMMComplete(t *testing.T) {
	onA := Cond{X: IxSum(v(0), v(2)), Bound: 6}         // i + k < 6: A's loops
	onB := Cond{X: IxSum(v(1), v(2)), Bound: 7}         // j + k < 7: B's loops
	onK := Cond{X: IxSum(v(2), IxOfConst(1)), Bound: 6} // k + 1 < 6: K only, A's
	both := Cond{X: IxSum(v(0), v(1)), Bound: 5}        // i + j < 5: both
	p, why := productProgram(t, 0, onA, onB, onK)
	g := p.Kernels[0].Schedule.GEMM
	switch {
	case why != "":
		t.Fatalf("Complete: %s", why)
	case len(g.CondA) != 2 || g.CondA[0] != 0 || g.CondA[1] != 2 || len(g.CondB) != 1 || g.CondB[0] != 1:
		t.Errorf("conditions A %v, B %v; want [0 2], [1]", g.CondA, g.CondB)
	case !g.GuardA || g.GuardB:
		t.Errorf("guards %v, %v; want A's only", g.GuardA, g.GuardB)
	}
	if err := p.Validate(); err != nil {
		t.Fatal(err)
	}
	if c := g.Conds(p.Kernels[0], true); len(c) != 1 || c[0] != onB {
		t.Errorf("Conds(B) = %v, want the condition on j + k", c)
	}
	if s := p.String(); !strings.Contains(s, "where-a=[0 2] where-b=[1] guard=a") {
		t.Errorf("printed schedule lacks the conditions and guards:\n%s", s)
	}
	for _, c := range []struct {
		name string
		edit func(g *GEMMView)
		want string
	}{
		{"condition left out", func(g *GEMMView) { g.CondB = nil }, "neither operand"},
		{"condition given twice", func(g *GEMMView) { g.CondB = append(g.CondB, 0) }, "twice"},
		{"condition on the wrong operand", func(g *GEMMView) { g.CondA, g.CondB = []int{2}, []int{0, 1} }, "wrong operand"},
		{"guard dropped", func(g *GEMMView) { g.GuardA = false }, "unchecked"},
	} {
		p, _ := productProgram(t, 0, onA, onB, onK)
		c.edit(p.Kernels[0].Schedule.GEMM)
		if err := p.Validate(); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: Validate gives %v, want an error with %q", c.name, err, c.want)
		}
	}
	if _, why := productProgram(t, 1); !strings.Contains(why, "padded with 1") {
		t.Errorf("padding by 1: Complete gives %q, want a refusal", why)
	}
	if _, why := productProgram(t, 0, both); !strings.Contains(why, "both operands") {
		t.Errorf("a condition on i + j: Complete gives %q, want a refusal", why)
	}
}

// TestGEMMGroups checks the grouping of hand-worked loop nests: which loops
// each factor reads decides the groups, and a factor's loops split by the
// other factor's become batch loops.
func TestGEMMGroups(t *testing.T) {
	cases := []struct {
		name    string
		shape   []int
		reduce  int
		a, b    []int // the loop variables each factor reads
		batch   []int
		m, n    []int
		swapped bool // B is the first factor
		split   bool // groups may split: runs false
	}{
		{name: "plain product [i, j]", shape: []int{8, 6}, reduce: 1,
			a: []int{0, 2}, b: []int{2, 1}, m: []int{0}, n: []int{1}},
		{name: "channels-last convolution [n, h, w, c]", shape: []int{4, 5, 5, 16}, reduce: 3,
			a: []int{0, 1, 2, 4, 5, 6}, b: []int{3, 4, 5, 6}, m: []int{0, 1, 2}, n: []int{3}},
		{name: "channels-first convolution [n, c, h, w]", shape: []int{4, 16, 5, 5}, reduce: 3,
			a: []int{0, 2, 3, 4, 5, 6}, b: []int{1, 4, 5, 6}, batch: []int{0}, m: []int{1}, n: []int{2, 3}, swapped: true},
		{name: "channels-first convolution at batch 1", shape: []int{1, 16, 5, 5}, reduce: 3,
			a: []int{0, 2, 3, 4, 5, 6}, b: []int{1, 4, 5, 6}, batch: []int{0}, m: []int{1}, n: []int{2, 3}, swapped: true},
		{name: "attention [b, i, h, d]", shape: []int{2, 8, 4, 16}, reduce: 1,
			a: []int{0, 1, 2, 4}, b: []int{0, 2, 3, 4}, batch: []int{0, 2}, m: []int{1}, n: []int{3}},
		{name: "two splits [p, q, p, q, p]", shape: []int{2, 3, 4, 5, 6}, reduce: 1,
			a: []int{0, 2, 4, 5}, b: []int{1, 3, 5}, batch: []int{0, 1, 2}, m: []int{3}, n: []int{4}, swapped: true},
		{name: "channels-first convolution, split groups", shape: []int{4, 16, 5, 5}, reduce: 3, split: true,
			a: []int{0, 2, 3, 4, 5, 6}, b: []int{1, 4, 5, 6}, m: []int{0, 2, 3}, n: []int{1}},
		{name: "channels-first at batch 1, split groups", shape: []int{1, 16, 5, 5}, reduce: 3, split: true,
			a: []int{0, 2, 3, 4, 5, 6}, b: []int{1, 4, 5, 6}, batch: []int{0}, m: []int{1}, n: []int{2, 3}, swapped: true},
		{name: "two splits, split groups", shape: []int{2, 3, 4, 5, 6}, reduce: 1, split: true,
			a: []int{0, 2, 4, 5}, b: []int{1, 3, 5}, m: []int{0, 2, 4}, n: []int{1, 3}},
		{name: "attention, split groups", shape: []int{2, 8, 4, 16}, reduce: 1, split: true,
			a: []int{0, 1, 2, 4}, b: []int{0, 2, 3, 4}, batch: []int{0, 2}, m: []int{1}, n: []int{3}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			k := &Kernel{Shape: c.shape}
			for range c.reduce {
				k.Reduce = append(k.Reduce, Loop{Lo: 0, Hi: 2})
			}
			a, b := &Expr{Op: Load}, &Expr{Op: Load}
			reads := func(f, v int) bool { return slices.Contains([][]int{c.a, c.b}[f], v) }
			v, why := GEMMGroups(k, a, b, reads, !c.split)
			if v == nil {
				t.Fatalf("no view: %s", why)
			}
			if !slices.Equal(v.Batch, c.batch) || !slices.Equal(v.M, c.m) || !slices.Equal(v.N, c.n) {
				t.Errorf("groups batch %v, M %v, N %v; want %v, %v, %v", v.Batch, v.M, v.N, c.batch, c.m, c.n)
			}
			if (v.A == b) != c.swapped {
				t.Errorf("A is the second factor: %v, want %v", v.A == b, c.swapped)
			}
			if len(v.K) != c.reduce {
				t.Errorf("K %v, want %d loops", v.K, c.reduce)
			}
		})
	}
}
