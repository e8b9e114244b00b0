package tile

import (
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
