package cpu

import (
	"testing"

	"github.com/tartanml/tartan/tile"
)

// TestPeriodicLanesFollowWrites checks that the lanes a periodic load keeps
// between chunks (execLoadPeriodic) are never served stale or at the wrong
// phase: z = x·(c + 1) + c over 8×64 rows of channels, run three times with
// different c, at 16 channels (every chunk alike, so a later run would find
// the last one's lanes) and at 144 (chunks starting at different phases).
// Each result is compared with the value computed here.
func TestPeriodicLanesFollowWrites(t *testing.T) {
	for _, ch := range []int{16, 144} {
		g := tile.NewGraph("periodic")
		sh := tile.Shape{8, 64, ch}
		x := g.Input("x", tile.Float32, sh)
		c := g.Input("c", tile.Float32, tile.Shape{ch})
		one := g.Scalar(1, tile.Float32)
		g.SetOutput("z", g.Add(g.Mul(x, g.Add(c, one)), c))
		d := New(Cache(false))
		ex, err := d.Compile(g)
		if err != nil {
			t.Fatal(err)
		}
		xs := randomFeeds(g, 5)["x"]
		if err := ex.SetInput("x", xs); err != nil {
			t.Fatal(err)
		}
		for run := range 3 {
			cs := make([]float32, ch)
			for i := range cs {
				cs[i] = float32((i*7+run*13)%29) - 14
			}
			if err := ex.SetInput("c", cs); err != nil {
				t.Fatal(err)
			}
			if err := ex.Run(); err != nil {
				t.Fatal(err)
			}
			z := make([]float32, sh.Size())
			if err := ex.ReadOutput("z", z); err != nil {
				t.Fatal(err)
			}
			bad := 0
			for i, v := range z {
				k := i % ch
				if want := xs[i]*(cs[k]+1) + cs[k]; v != want && bad < 3 {
					t.Errorf("%d channels, run %d: z[%d] = %v, want %v", ch, run, i, v, want)
					bad++
				}
			}
		}
		ex.Close()
		d.Close()
	}
}
