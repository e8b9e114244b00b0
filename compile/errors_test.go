package compile

import (
	"strings"
	"testing"

	"github.com/tartanml/tartan/tile"
)

func TestCompileErrors(t *testing.T) {
	other := tile.NewGraph("other")
	foreign := other.Input("z", f32, s(2))
	cases := []struct {
		name   string
		build  func() *tile.Graph
		target Target
		want   string
	}{
		{"nil graph", func() *tile.Graph { return nil }, testTarget, "compile: nil graph"},
		{"building error", func() *tile.Graph {
			g := tile.NewGraph("broken")
			g.Add(g.Input("a", f32, s(2)), g.Input("b", f32, s(3)))
			return g
		}, testTarget, `graph "broken" has a building error: tile: add: shapes f32[2], f32[3] do not broadcast`},
		{"foreign output", func() *tile.Graph {
			g := tile.NewGraph("foreign")
			g.SetOutput("y", foreign)
			return g
		}, testTarget, "belongs to another graph"},
		{"negative target", func() *tile.Graph { return tile.NewGraph("ok") }, Target{Workers: -1}, "negative field"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Compile(c.build(), c.target)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("got %v, want an error containing %q", err, c.want)
			}
		})
	}
}

func TestEmptyProgram(t *testing.T) {
	g := tile.NewGraph("empty")
	g.Input("unused", f32, s(2))
	g.Variable("state", f32, s(3))
	p, err := Compile(g, testTarget)
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Kernels) != 0 || len(p.Inputs) != 1 || len(p.Variables) != 1 {
		t.Errorf("want no kernels and both leaves bound:\n%s", p)
	}
}

// TestEveryNodeKindIsCovered checks that the reference comparison cases
// exercise every tile node kind and every elementwise function.
func TestEveryNodeKindIsCovered(t *testing.T) {
	kinds := map[string]bool{}
	for _, c := range graphCases {
		g := tile.NewGraph(c.name)
		c.build(g)
		for _, n := range g.Nodes() {
			kinds[n.Op().Kind()] = true
		}
	}
	want := []string{"input", "variable", "constant", "contraction", "cast", "reshape", "transpose", "slice",
		"concat", "pad", "broadcast", "gather", "scatter_add", "iota", "random"}
	for f := tile.Neg; f <= tile.Select; f++ {
		want = append(want, f.String())
	}
	for _, k := range want {
		if !kinds[k] {
			t.Errorf("no test graph has a %s node", k)
		}
	}
}
