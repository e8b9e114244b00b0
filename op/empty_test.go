package op

import (
	"testing"

	"github.com/tartanml/tartan/ref"
	"github.com/tartanml/tartan/tile"
)

// TestEmptyBatch runs ops on a batch of zero samples: they build, run and
// give empty results of the right shapes.
func TestEmptyBatch(t *testing.T) {
	g := tile.NewGraph("empty")
	x := g.Input("x", tile.Float64, tile.Shape{0, 5, 5, 3})
	k := g.Input("k", tile.Float64, tile.Shape{2, 2, 3, 4})
	h := MaxPool2D(g, ReLU(g, Conv2D(g, x, k, ConvOptions{Padding: Same})), PoolOptions{})
	h = AvgPool2D(g, h, PoolOptions{Size: []int{2}, Strides: []int{1}, Padding: Same})
	y := Softmax(g, Dense(g, Flatten(g, h), g.Input("w", tile.Float64, tile.Shape{16, 3}), nil), -1)
	if err := g.Err(); err != nil {
		t.Fatal(err)
	}
	g.SetOutput("y", y)
	out, err := ref.Run(g, map[string]*tile.Value{
		"x": tile.NewValue(tile.Float64, tile.Shape{0, 5, 5, 3}),
		"k": tile.NewValue(tile.Float64, tile.Shape{2, 2, 3, 4}),
		"w": tile.NewValue(tile.Float64, tile.Shape{16, 3}),
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := out["y"]; !got.Shape.Equal(tile.Shape{0, 3}) || len(got.Data) != 0 {
		t.Errorf("got %v with %d elements, want [0, 3] and none", got.Shape, len(got.Data))
	}
}
