package op

import (
	"fmt"
	"math"
	"testing"

	"github.com/tartanml/tartan/ref"
	"github.com/tartanml/tartan/tile"
)

// f64 returns a float64 value of the given shape.
func f64(shape tile.Shape, data ...float64) *tile.Value {
	return &tile.Value{DType: tile.Float64, Shape: shape, Data: data}
}

// i64 returns an int64 value of the given shape.
func i64(shape tile.Shape, data ...float64) *tile.Value {
	return &tile.Value{DType: tile.Int64, Shape: shape, Data: data}
}

// seq returns 1, 2, …, n.
func seq(n int) []float64 {
	out := make([]float64, n)
	for i := range out {
		out[i] = float64(i + 1)
	}
	return out
}

// builder builds an op on the inputs x0, x1, … of a graph.
type builder func(g *tile.Graph, x []*tile.Tensor) *tile.Tensor

// inputs declares one graph input per value, named x0, x1, …, and returns
// them with the feeds that bind them.
func inputs(g *tile.Graph, ins []*tile.Value) ([]*tile.Tensor, map[string]*tile.Value) {
	xs := make([]*tile.Tensor, len(ins))
	feeds := map[string]*tile.Value{}
	for i, v := range ins {
		name := fmt.Sprintf("x%d", i)
		xs[i] = g.Input(name, v.DType, v.Shape)
		feeds[name] = v
	}
	return xs, feeds
}

// eval builds the op and evaluates it with the reference executor.
func eval(t *testing.T, build builder, ins ...*tile.Value) *tile.Value {
	t.Helper()
	g := tile.NewGraph("test")
	xs, feeds := inputs(g, ins)
	y := build(g, xs)
	if err := g.Err(); err != nil {
		t.Fatalf("building: %v", err)
	}
	g.SetOutput("y", y)
	out, err := ref.Run(g, feeds, nil)
	if err != nil {
		t.Fatal(err)
	}
	return out["y"]
}

// mismatch returns the first index where got and want differ by more than
// tol·max(|want|, floor), or -1. NaNs match only NaNs.
func mismatch(got, want []float64, tol, floor float64) int {
	for i := range want {
		if i >= len(got) {
			return i
		}
		g, w := got[i], want[i]
		if math.IsNaN(w) || math.IsNaN(g) {
			if math.IsNaN(w) != math.IsNaN(g) {
				return i
			}
			continue
		}
		if math.Abs(g-w) > tol*math.Max(math.Abs(w), floor) {
			return i
		}
	}
	if len(got) != len(want) {
		return len(want)
	}
	return -1
}

// fwdCase is a hand-worked forward case: the op applied to ins must give want
// with shape.
type fwdCase struct {
	name  string
	build builder
	ins   []*tile.Value
	shape tile.Shape
	want  []float64
}

func runForward(t *testing.T, cases []fwdCase) {
	t.Helper()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := eval(t, c.build, c.ins...)
			if !got.Shape.Equal(c.shape) {
				t.Fatalf("shape %v, want %v", got.Shape, c.shape)
			}
			if i := mismatch(got.Data, c.want, 1e-12, 1e-12); i >= 0 {
				t.Errorf("element %d: got %v, want %v", i, got.Data, c.want)
			}
		})
	}
}
