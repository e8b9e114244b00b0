package onnx

import (
	"math"
	"testing"

	"github.com/tartanml/tartan/ref"
	"github.com/tartanml/tartan/tile"
)

// TestTrig compares the trigonometric functions built from tile arithmetic
// with Go's math package over a spread of arguments up to 2^20.
func TestTrig(t *testing.T) {
	var xs []float64
	for i := -2000; i <= 2000; i++ {
		xs = append(xs, float64(i)*0.0137*float64(1+i*i%7))
	}
	xs = append(xs, 1e5, -3e5, 1<<20, 0.5, 1, -1, 0.99999, 2, math.Inf(1), math.NaN())
	fns := []struct {
		name string
		f    func(*tile.Graph, *tile.Tensor) *tile.Tensor
		want func(float64) float64
		tol  float64
	}{
		{"sin", sin64, math.Sin, 1e-10},
		{"cos", cos64, math.Cos, 1e-10},
		{"atan", atan64, math.Atan, 1e-14},
		{"asin", asin64, math.Asin, 1e-12},
	}
	for _, fn := range fns {
		g := tile.NewGraph(fn.name)
		x := g.Input("x", tile.Float64, tile.Shape{len(xs)})
		g.SetOutput("y", fn.f(g, x))
		v, _ := tile.ValueOf(tile.Float64, tile.Shape{len(xs)}, xs)
		out, err := ref.Run(g, map[string]*tile.Value{"x": v}, nil)
		if err != nil {
			t.Fatal(err)
		}
		for i, xv := range xs {
			got, want := out["y"].Data[i], fn.want(xv)
			if math.IsNaN(want) != math.IsNaN(got) || math.Abs(got-want) > fn.tol {
				t.Errorf("%s(%v) = %v, want %v", fn.name, xv, got, want)
			}
		}
	}
}
