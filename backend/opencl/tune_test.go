package opencl

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/tartanml/tartan/backend"
	"github.com/tartanml/tartan/compile"
	"github.com/tartanml/tartan/kir"
	"github.com/tartanml/tartan/tile"
	"github.com/tartanml/tartan/tune"
)

// tunedProgram is a batched product with a long sum and a padded
// convolution, compiled for d.
func tunedProgram(t *testing.T, d *Device) *kir.Program {
	f := tile.Float32
	g := tile.NewGraph("tuned")
	a, b := g.Input("a", f, tile.Shape{2, 70, 160}), g.Input("wb", f, tile.Shape{160, 90})
	g.SetOutput("prod", tile.ParseContraction(g, "O[n, i, j : 2, 70, 90] = +(A[n, i, k] * B[k, j])", map[string]*tile.Tensor{"A": a, "B": b}, nil))
	x, w := g.Input("x", f, tile.Shape{2, 9, 11, 16}), g.Input("wc", f, tile.Shape{3, 3, 16, 24})
	g.SetOutput("conv", tile.ParseContraction(g, "O[n, y, x, o : 2, 9, 11, 24] = +(X[n, y + i - 1, x + j - 1, c] * W[i, j, c, o])",
		map[string]*tile.Tensor{"X": x, "W": w}, nil))
	p, err := compile.Compile(g, d.Target())
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestTilings runs every tiling of the device's tuning space (blocks of 32,
// 64 and 128 on the ordinary cores and on emulated tensor cores, sums in
// one or two parts) on a product and a padded convolution and compares
// with kir.Interpret; checks that a tiling outside the space is refused
// with its name; and that a search stores a winner per kernel in its
// cache, a second search times nothing, and Apply marks the kernels as
// tuned, in the source too, with the same results.
func TestTilings(t *testing.T) {
	for _, d := range openAll(t, withTest(testHooks{gemmTile: 64, emulateMMA: Matmul3xTF32})) {
		p := tunedProgram(t, d)
		in := loopInputs(p, 5)
		want := interpretLoopProgram(t, p, in)
		check := func(what string, q *kir.Program) *Executable {
			t.Helper()
			got, e := runLoopProgram(t, d, q, in, false)
			for name, w := range want {
				if err := closeTo(got[name], w, tile.Float32, 1e-4, 1e-5); err != nil {
					t.Fatalf("%s, %s: %v", what, name, err)
				}
			}
			return e
		}
		tuned, anyParts := 0, false
		for i, k := range p.Kernels {
			model, space := d.TuneSpace(p, i)
			if len(space) == 0 {
				continue
			}
			tuned++
			// Every tiling renders, marked as tuned; a few of them, the
			// model's among them, run (each costs a build).
			parts := false
			for j, tl := range space {
				parts = parts || tl.Parts > 1
				q := withTiling(p, i, tl)
				r, err := render(q, d.traits(q))
				if err != nil {
					t.Fatalf("%s tiled %s: %v", k.Name, tl.String(), err)
				}
				if !strings.Contains(r.Source, "(tuner)") {
					t.Errorf("%s tiled %s: the source does not say tuner", k.Name, tl.String())
				}
				// Each block once over the two kernels, on the ordinary
				// cores and on the tensor cores, and sums in parts.
				block := slices.IndexFunc(gemmBlocks, func(c gemmConfig) bool { return c.BM == tl.BM && c.BN == tl.BN })
				mat := 0
				if tl.Matrix != "" {
					mat = 1
				}
				if tl.Same(model) || tl.Parts <= 1 && (block+mat)%2 == i%2 || j == len(space)-1 {
					e := check(k.Name+" tiled "+tl.String(), q)
					for _, l := range e.launches {
						if s := l.plan.Strategy; l.plan.Kernel == i && strings.HasPrefix(s, "gemm") && !strings.HasPrefix(s, "gemm-combine") && !strings.Contains(s, "(tuner)") {
							t.Errorf("%s tiled %s ran as %q, not marked as tuned", k.Name, tl.String(), s)
						}
					}
				}
			}
			anyParts = anyParts || parts
			if len(space) < 5 {
				t.Errorf("%s: model %s, space of %d tilings", k.Name, model.String(), len(space))
			}
			bad := model
			bad.BM, bad.BN = 48, 48
			if _, err := d.Load(withTiling(p, i, bad)); err == nil || !strings.Contains(err.Error(), "48x48x16") {
				t.Errorf("%s: tiling %s: error %v, want one naming it", k.Name, bad.String(), err)
			}
		}
		if !anyParts {
			t.Errorf("no space splits a sum into parts")
		}
		if tuned != 2 {
			t.Fatalf("%d kernels have tilings to choose, want 2", tuned)
		}
		path := filepath.Join(t.TempDir(), "tune.json")
		c := tune.Open(path)
		cd := &countingDevice{Device: d, keep: 3}
		res, err := tune.Search(p, cd, c, tune.Options{Beam: 2})
		if err != nil {
			t.Fatal(err)
		}
		if len(res) != 2 || cd.loads != 6 {
			t.Fatalf("search tuned %d kernels with %d loads, want 2 kernels and several candidates each", len(res), cd.loads)
		}
		cd.loads = 0
		res, err = tune.Search(p, cd, tune.Open(path), tune.Options{Beam: 2})
		if err != nil || len(res) != 0 || cd.loads != 0 {
			t.Fatalf("a second search over the stored cache tuned %d kernels with %d loads (%v)", len(res), cd.loads, err)
		}
		q, n := tune.Apply(p, d, tune.Open(path))
		if n != 2 {
			t.Fatalf("Apply set %d tilings, want 2", n)
		}
		for i, k := range q.Kernels {
			if tl := k.Schedule.Tiling; tl != nil && (tl.From != "tuner" || p.Kernels[i].Schedule.Tiling != nil) {
				t.Fatalf("kernel %s: tiling %v from %q; the original program's was changed: %v", k.Name, tl, tl.From, p.Kernels[i].Schedule.Tiling != nil)
			}
		}
		if !strings.Contains(q.String(), "(tuner)") {
			t.Errorf("the tuned program's schedule lines do not say tuner:\n%s", q)
		}
		check("tuned", q)
		// A damaged cache is ignored, and the next store replaces it.
		if err := os.WriteFile(path, []byte("{not json"), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, n := tune.Apply(p, d, tune.Open(path)); n != 0 {
			t.Errorf("a damaged cache applied %d tilings", n)
		}
	}
}

// withTiling returns p with kernel i tiled by tl, from the tuner.
func withTiling(p *kir.Program, i int, tl kir.Tiling) *kir.Program {
	q := *p
	q.Kernels = append([]*kir.Kernel(nil), p.Kernels...)
	k := *p.Kernels[i]
	tl.From = "tuner"
	k.Schedule.Tiling = &tl
	q.Kernels[i] = &k
	return &q
}

// countingDevice counts the programs a search loads, and offers it only
// the model's tiling and the first keep−1 of each space that differ from
// it in the number of parts or the matrix instruction alone (each
// candidate costs a build).
type countingDevice struct {
	*Device
	loads, keep int
}

func (c *countingDevice) TuneSpace(p *kir.Program, k int) (kir.Tiling, []kir.Tiling) {
	model, space := c.Device.TuneSpace(p, k)
	out := []kir.Tiling{model}
	for _, t := range space {
		near := t.BM == model.BM && (t.Matrix == model.Matrix || t.Parts == model.Parts)
		if len(out) < c.keep && near && !t.Same(model) {
			out = append(out, t)
		}
	}
	return model, out
}

func (c *countingDevice) LoadProgram(p *kir.Program) (backend.Executable, error) {
	c.loads++
	return c.Device.LoadProgram(p)
}
