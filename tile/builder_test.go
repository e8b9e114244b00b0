package tile

import (
	"math"
	"strings"
	"testing"
)

func TestBuilderRejectsDegenerateArguments(t *testing.T) {
	cases := []struct {
		name  string
		build func(g *Graph)
		want  string
	}{
		{"zero-coefficient constraint", func(g *Graph) {
			a := g.Input("a", Float32, Shape{3})
			g.Contract(Sum, CombNone, Shape{}, nil, []Operand{{a, []Affine{Ix("i")}}},
				Constraint{Expr: Affine{Terms: []Term{{"j", 0}}}, Bound: 2})
		}, "has no index"},
		{"negative broadcast dimension", func(g *Graph) {
			a := g.Input("a", Float32, Shape{1})
			g.BroadcastTo(a, Shape{-3})
		}, "negative dimension"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			g := NewGraph("g")
			c.build(g)
			if g.Err() == nil || !strings.Contains(g.Err().Error(), c.want) {
				t.Errorf("got error %v, want one containing %q", g.Err(), c.want)
			}
		})
	}
}

// TestShapeSizeOverflow checks that Size never wraps around and that
// CheckedSize and Bytes report an overflow.
func TestShapeSizeOverflow(t *testing.T) {
	for _, c := range []struct {
		s     Shape
		n     int
		ok    bool
		bytes int64
		bok   bool
	}{
		{Shape{}, 1, true, 4, true},
		{Shape{2, 3}, 6, true, 24, true},
		{Shape{0, 1 << 62}, 0, true, 0, true},
		{Shape{1 << 31, 1 << 31}, 1 << 62, true, 0, false},
		{Shape{1 << 31, 1 << 31, 4}, 0, false, 0, false},
		{Shape{3037000500, 3037000500}, 0, false, 0, false},
		{Shape{2, -3}, 0, false, 0, false},
	} {
		n, ok := c.s.CheckedSize()
		b, bok := c.s.Bytes(Float32)
		if n != c.n || ok != c.ok || b != c.bytes || bok != c.bok {
			t.Errorf("%v: CheckedSize %d, %v; Bytes %d, %v; want %d, %v; %d, %v", c.s, n, ok, b, bok, c.n, c.ok, c.bytes, c.bok)
		}
		if want := c.n; !c.ok {
			if got := c.s.Size(); got != math.MaxInt {
				t.Errorf("%v: Size %d, want math.MaxInt", c.s, got)
			}
		} else if got := c.s.Size(); got != want {
			t.Errorf("%v: Size %d, want %d", c.s, got, want)
		}
	}
}

// TestBuilderRejectsHugeShapes checks that no node may hold more than
// MaxBytes or have a size that overflows, and that the error names the op
// and the shape.
func TestBuilderRejectsHugeShapes(t *testing.T) {
	cases := []struct {
		name  string
		build func(g *Graph)
		want  string
	}{
		{"input overflows", func(g *Graph) {
			g.Input("x", Float32, Shape{1 << 31, 1 << 31})
		}, "tile: input: shape [2147483648, 2147483648] of f32 holds 4611686018427387904 elements, more than 9223372036854775807 bytes (the count overflows)"},
		{"variable overflows the count", func(g *Graph) {
			g.Variable("w", Float32, Shape{3037000500, 3037000500})
		}, "tile: variable: shape [3037000500, 3037000500] has more than 9223372036854775807 elements (the count overflows)"},
		{"input over the limit", func(g *Graph) {
			g.Input("x", Float64, Shape{1 << 20, 1 << 28})
		}, "tile: input: shape [1048576, 268435456] of f64 holds 281474976710656 elements (2251799813685248 bytes), over the limit of 1125899906842624 bytes for one tensor"},
		{"broadcast result", func(g *Graph) {
			a := g.Input("a", Float32, Shape{1 << 25, 1})
			b := g.Input("b", Float32, Shape{1, 1 << 25})
			g.Add(a, b)
		}, "tile: broadcast: shape [33554432, 33554432] of f32 holds 1125899906842624 elements (4503599627370496 bytes), over the limit"},
		{"reshape target", func(g *Graph) {
			a := g.Input("a", Float32, Shape{4})
			g.Reshape(a, Shape{-1, 1 << 40, 1 << 40})
		}, "tile: reshape: target shape [-1, 1099511627776, 1099511627776] has more elements than an int holds"},
		{"pad", func(g *Graph) {
			a := g.Input("a", Float32, Shape{4})
			g.Pad(a, []int{math.MaxInt}, []int{math.MaxInt}, 0)
		}, "tile: pad: padding lo [9223372036854775807], hi [9223372036854775807] of f32[4] overflows"},
		{"iota", func(g *Graph) {
			g.Iota(Int32, Shape{1 << 30, 1 << 30}, 0)
		}, "tile: iota: shape [1073741824, 1073741824] of i32 holds 1152921504606846976 elements (4611686018427387904 bytes), over the limit"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			g := NewGraph("g")
			c.build(g)
			if g.Err() == nil || !strings.Contains(g.Err().Error(), c.want) {
				t.Errorf("got error %v, want one containing %q", g.Err(), c.want)
			}
		})
	}
}
