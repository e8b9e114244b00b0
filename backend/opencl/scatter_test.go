package opencl

import (
	"slices"
	"strings"
	"testing"

	"github.com/tartanml/tartan/tile"
)

// TestScatterRendered checks that a scatter_add is rendered as a loop over
// its indices (a "scatter" launch, alone or merged with others) and gives
// the sums worked by hand: repeated indices add up, negative and too large
// ones are skipped, rows no index names are zero, and a second run does not
// add onto the first. Two column blocks (inner 3) and two outer positions
// cover the work-item decomposition.
func TestScatterRendered(t *testing.T) {
	g := tile.NewGraph("scatter")
	u := g.Input("u", tile.Float32, tile.Shape{2, 5, 3})
	i := g.Input("i", tile.Int64, tile.Shape{5})
	g.SetOutput("y", g.ScatterAdd(u, i, 1, tile.Shape{2, 3, 3}))
	ups := make([]float32, 30)
	for k := range ups {
		ups[k] = float32(k + 1)
	}
	idx := []int64{2, -1, 0, 2, 5}
	want := make([]float32, 18)
	for o := range 2 {
		for j, r := range idx {
			if r < 0 || r >= 3 {
				continue
			}
			for c := range 3 {
				want[(o*3+int(r))*3+c] += ups[(o*5+j)*3+c]
			}
		}
	}
	for _, d := range openAll(t) {
		x, err := d.Compile(g)
		if err != nil {
			t.Fatal(err)
		}
		defer x.Close()
		ls := x.(*Executable).Launches()
		if !strings.Contains(strings.Join(ls, "\n"), "scatter") {
			t.Errorf("%s: no scatter launch in %v", d.Info().ID, ls)
		}
		if err := x.SetInput("u", ups); err != nil {
			t.Fatal(err)
		}
		if err := x.SetInput("i", idx); err != nil {
			t.Fatal(err)
		}
		for run := range 2 {
			if err := x.Run(); err != nil {
				t.Fatal(err)
			}
			got := make([]float32, 18)
			if err := x.ReadOutput("y", got); err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, want) {
				t.Errorf("%s run %d: got %v, want %v", d.Info().ID, run, got, want)
			}
		}
	}
}
