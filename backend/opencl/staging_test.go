package opencl

import (
	"testing"

	"github.com/tartanml/tartan/tile"
)

// TestStagedInputs runs a program that adds a large input into a variable
// ten times with different inputs and no read in between, so that the
// inputs go through the pinned ring (each region reused), and compares the
// sum with one computed here; a small input beside it takes the ordinary
// path.
func TestStagedInputs(t *testing.T) {
	const n = 3 * stageMin / 4 // float32 elements: three times the threshold in bytes
	g := tile.NewGraph("staged")
	x := g.Input("x", tile.Float32, tile.Shape{n})
	s := g.Input("s", tile.Float32, tile.Shape{4})
	acc := g.Variable("acc", tile.Float32, tile.Shape{n})
	g.Update(acc, g.Add(acc, g.Mul(x, g.BroadcastTo(g.Reshape(g.Slice(s, []int{0}, []int{1}, nil), tile.Shape{}), tile.Shape{n}))))
	if err := g.Err(); err != nil {
		t.Fatal(err)
	}
	for _, d := range openAll(t) {
		e, err := d.Compile(g)
		if err != nil {
			t.Fatalf("%s: %v", d.Info().ID, err)
		}
		want := make([]float64, n)
		xs := make([]float32, n)
		for step := range 10 {
			for i := range xs {
				xs[i] = float32((i*7+step*13)%101) - 50
				want[i] += float64(xs[i]) * float64(step+1)
			}
			if err := e.SetInput("x", xs); err != nil {
				t.Fatal(err)
			}
			if err := e.SetInput("s", []float32{float32(step + 1), 0, 0, 0}); err != nil {
				t.Fatal(err)
			}
			if err := e.Run(); err != nil {
				t.Fatal(err)
			}
		}
		got := make([]float32, n)
		if err := e.ReadVariable("acc", got); err != nil {
			t.Fatal(err)
		}
		for i := range got {
			if float64(got[i]) != want[i] {
				t.Fatalf("%s: acc[%d] = %v, want %v", d.Info().ID, i, got[i], want[i])
			}
		}
		ex := e.(*Executable)
		if st := ex.staged[ex.inputs["x"]]; st == nil || st.off || len(st.regions) != stageRing {
			t.Errorf("%s: input x did not go through %d pinned regions: %+v", d.Info().ID, stageRing, st)
		}
		if ex.staged[ex.inputs["s"]] != nil {
			t.Errorf("%s: the small input was staged", d.Info().ID)
		}
		if err := e.Close(); err != nil {
			t.Errorf("%s: close: %v", d.Info().ID, err)
		}
	}
}
