package opencl

import (
	"slices"
	"strings"
	"testing"

	"github.com/tartanml/tartan/compile"
)

// TestMergedLaunchesKeepDependencies renders programs with and without
// launch merging and checks the merged schedule: fewer launches, every
// launch of the plain program exactly once, and any two launches that
// share a storage slot or scratch buffer, one of them writing it, in their
// original order and in different launches.
func TestMergedLaunchesKeepDependencies(t *testing.T) {
	g, _ := buildSuite(t, "merge", func(gc graphCase) bool {
		return slices.Contains([]string{"sgd", "softmax_ce", "pool", "reductions", "random", "conv_same"}, gc.name)
	})
	for _, gpu := range []bool{true, false} {
		tg := compile.Target{Backend: "opencl", ComputeUnits: 132, MaxWorkGroup: 1024, LocalMemBytes: 48 << 10}
		p, err := compile.Compile(g, tg)
		if err != nil {
			t.Fatal(err)
		}
		tr := traits{Name: "dev", GPU: gpu, ComputeUnits: 132, MaxWorkGroup: 1024, LocalMemBytes: 48 << 10}
		plainTr := tr
		plainTr.NoMerge = true
		plain, err := render(p, plainTr)
		if err != nil {
			t.Fatal(err)
		}
		merged, err := render(p, tr)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("gpu=%v: %d launches, %d merged", gpu, len(plain.Launches), len(merged.Launches))
		if len(merged.Launches) >= len(plain.Launches) {
			t.Errorf("gpu=%v: merging left %d launches of %d", gpu, len(merged.Launches), len(plain.Launches))
		}
		// pos is the launch and stage of every plain launch.
		pos := map[string][2]int{}
		chains := 0
		for i, l := range merged.Launches {
			stages := [][]string{{l.Name}}
			kind, rest, _ := strings.Cut(l.Strategy, " ")
			if kind == "merged" || kind == "chain" {
				stages = nil
				for _, st := range strings.Split(rest, "|") {
					stages = append(stages, strings.Split(st, "+"))
				}
				if !strings.Contains(merged.Source, "void "+l.Fn+"(") {
					t.Errorf("merged kernel %s missing from the source", l.Fn)
				}
			}
			if kind == "chain" {
				chains++
				if !l.Fixed || l.Global != l.Local {
					t.Errorf("chain %s is not one fixed work-group: %+v", l.Fn, l)
				}
			}
			for si, st := range stages {
				for _, n := range st {
					if _, dup := pos[n]; dup {
						t.Errorf("%s launched twice", n)
					}
					pos[n] = [2]int{i, si}
				}
			}
		}
		if gpu && chains == 0 {
			t.Errorf("no chain of small kernels formed")
		}
		before := func(a, b [2]int) bool { return a[0] < b[0] || a[0] == b[0] && a[1] < b[1] }
		type use struct {
			res   int
			write bool
		}
		uses := func(l launchPlan) []use {
			var u []use
			for j, a := range l.Args {
				if a.View >= 0 {
					continue // a view's offset; its buffer is an argument too
				}
				res := -1 - a.Scratch
				if a.Buf >= 0 {
					res = p.Buffers[a.Buf].Slot
				}
				point := l.Strategy == "loops" || strings.HasSuffix(l.Strategy, "-combine")
				u = append(u, use{res, j == 0 || !point})
			}
			return u
		}
		for i, a := range plain.Launches {
			pa, ok := pos[a.Name]
			if !ok {
				t.Errorf("%s not launched", a.Name)
				continue
			}
			for _, b := range plain.Launches[i+1:] {
				conflict := false
				for _, x := range uses(a) {
					for _, y := range uses(b) {
						conflict = conflict || x.res == y.res && (x.write || y.write)
					}
				}
				if conflict && !before(pa, pos[b.Name]) {
					t.Errorf("gpu=%v: %s (launch, stage %v) must run before %s (%v)", gpu, a.Name, pa, b.Name, pos[b.Name])
				}
			}
		}
	}
}
