package kir

import (
	"slices"
	"testing"
)

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
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			k := &Kernel{Shape: c.shape}
			for range c.reduce {
				k.Reduce = append(k.Reduce, Loop{Lo: 0, Hi: 2})
			}
			a, b := &Expr{Op: Load}, &Expr{Op: Load}
			reads := func(f, v int) bool { return slices.Contains([][]int{c.a, c.b}[f], v) }
			v, why := GEMMGroups(k, a, b, reads)
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
