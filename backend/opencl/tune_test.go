package opencl

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tartanml/tartan/backend"
	"github.com/tartanml/tartan/compile"
	"github.com/tartanml/tartan/kir"
	"github.com/tartanml/tartan/tile"
	"github.com/tartanml/tartan/tune"
)

// tunedProgram is a batched product with a long sum and a padded
// convolution, compiled for d.
func tunedProgram(t testing.TB, d *Device) *kir.Program {
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
		cd := &countingDevice{Device: d, keep: 3}
		res, err := tune.Search(p, cd, tune.Open(path), tune.Options{Beam: 2})
		if err != nil {
			t.Fatal(err)
		}
		// One build per kernel: the model's tiling and its two
		// neighbours in one program, each candidate computing the
		// extracted kernel's results into an output of its own.
		if len(res) != 2 || len(cd.loads) != 2 {
			t.Fatalf("search tuned %d kernels with %d loads, want 2 kernels with a load each", len(res), len(cd.loads))
		}
		for j, lp := range cd.loads {
			checkCandidates(t, d, p, lp, 3)
			// Every candidate but the favoured one is a second slower in
			// profiles: the search finds the favoured one.
			if r := res[j]; !r.Best.Same(cd.fast[j]) || r.ModelSeconds < 1 || r.BestSeconds > 1 || r.Tried != 3 {
				t.Errorf("kernel %s: best %s in %g s (model %g s, %d tried), want %s", r.Kernel, r.Best.String(), r.BestSeconds, r.ModelSeconds, r.Tried, cd.fast[j].String())
			}
		}
		cd.loads = nil
		res, err = tune.Search(p, cd, tune.Open(path), tune.Options{Beam: 2})
		if err != nil || len(res) != 0 || len(cd.loads) != 0 {
			t.Fatalf("a second search over the stored cache tuned %d kernels with %d loads (%v)", len(res), len(cd.loads), err)
		}
		// A candidate that does not build sinks the program of its round:
		// the candidates are loaded one by one, and the others still timed.
		var log strings.Builder
		cd = &countingDevice{Device: d, keep: 3, bad: true}
		res, err = tune.Search(p, cd, tune.Open(""), tune.Options{Beam: 2, Log: &log})
		if err != nil {
			t.Fatal(err)
		}
		if len(res) != 1 || len(cd.loads) != 5 || len(cd.loads[0].Kernels) != 4 || !strings.Contains(log.String(), "48x48x16") {
			t.Fatalf("with a tiling that does not build: %d kernels tuned with %d loads, log:\n%s", len(res), len(cd.loads), log.String())
		}
		if r := res[0]; !r.Best.Same(cd.fast[0]) || r.Tried != 4 || r.ModelSeconds < 1 {
			t.Errorf("kernel %s with a tiling that does not build: best %s (model %g s, %d tried), want %s", r.Kernel, r.Best.String(), r.ModelSeconds, r.Tried, cd.fast[0].String())
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

// checkCandidates checks a program of n tuning candidates of a kernel of
// p: each is a kernel of its own, launched with its tiling (marked as
// tuned), and computes what kir.Interpret computes for the kernel
// extracted from p.
func checkCandidates(t *testing.T, d *Device, p, cp *kir.Program, n int) {
	t.Helper()
	i := slices.IndexFunc(p.Kernels, func(k *kir.Kernel) bool { return k.Name == cp.Kernels[0].Name })
	if len(cp.Kernels) != n || len(cp.Outputs) != n || i < 0 {
		t.Fatalf("a program of %d kernels and %d outputs (kernel %d), want %d candidates", len(cp.Kernels), len(cp.Outputs), i, n)
	}
	q, err := kir.Extract(p, i)
	if err != nil {
		t.Fatal(err)
	}
	in := loopInputs(q, 9)
	want := interpretLoopProgram(t, q, in)["out"]
	got, e := runLoopProgram(t, d, cp, in, false)
	for j, o := range cp.Outputs {
		if err := closeTo(got[o.Name], want, tile.Float32, 1e-4, 1e-5); err != nil {
			t.Errorf("%s, candidate %d (%s): %v", q.Kernels[0].Name, j, cp.Kernels[j].Schedule.Tiling.String(), err)
		}
	}
	for j := range cp.Kernels {
		if !slices.ContainsFunc(e.launches, func(l launch) bool {
			return l.plan.Kernel == j && strings.HasPrefix(l.plan.Strategy, "gemm") && strings.Contains(l.plan.Strategy, "(tuner)")
		}) {
			t.Errorf("candidate %d: no tuned matrix-product launch", j)
		}
	}
}

// countingDevice records the programs a search loads, and offers it only
// the model's tiling and the first keep−1 of each space that differ from
// it in the number of parts or the matrix instruction alone, its
// neighbours (each candidate costs a build); with bad, also a tiling the templates cannot
// render, for the first kernel only. Its profiles add a second to every
// launch of a candidate but the favoured one of each kernel, the second
// or the third tiling it offers, by turns (a search loads the programs of
// one kernel after asking for its space).
type countingDevice struct {
	*Device
	keep  int
	bad   bool
	fast  []kir.Tiling
	mu    sync.Mutex // the tuner loads candidates from several goroutines
	loads []*kir.Program
}

func (c *countingDevice) TuneSpace(p *kir.Program, k int) (kir.Tiling, []kir.Tiling) {
	model, space := c.Device.TuneSpace(p, k)
	if c.bad && len(c.fast) > 0 {
		return model, nil
	}
	out := []kir.Tiling{model}
	for _, t := range space {
		block := t.BM == model.BM && t.BN == model.BN && t.BK == model.BK
		near := block && (t.Matrix == model.Matrix) != (max(t.Parts, 1) == max(model.Parts, 1))
		if len(out) < c.keep && near && !t.Same(model) {
			out = append(out, t)
		}
	}
	c.fast = append(c.fast, out[min(1+len(c.fast)%2, len(out)-1)])
	if c.bad {
		bad := model
		bad.BM, bad.BN = 48, 48
		out = append(out, bad)
	}
	return model, out
}

func (c *countingDevice) LoadProgram(p *kir.Program) (backend.Executable, error) {
	c.mu.Lock()
	c.loads = append(c.loads, p)
	c.mu.Unlock()
	e, err := c.Device.Load(p)
	if err != nil {
		return nil, err
	}
	return &slowed{e, c.fast[len(c.fast)-1]}, nil
}

// slowed is an executable whose profiles add a second to every launch of
// a kernel tiled other than by fast.
type slowed struct {
	*Executable
	fast kir.Tiling
}

func (s *slowed) Profile() ([]backend.KernelTime, error) {
	ts, err := s.Executable.Profile()
	for i, l := range s.launches {
		if tl := s.p.Kernels[l.plan.Kernel].Schedule.Tiling; err == nil && (tl == nil || !tl.Same(s.fast)) {
			ts[i].Seconds++
		}
	}
	return ts, err
}

// BenchmarkSearch times a search over the whole tuning space of the
// product and the convolution of tunedProgram (blocks forced on, emulated
// tensor cores), with a beam of 2 and budget enough to finish. Builds are
// cached within a process: run it with -benchtime=1x, and with the
// driver's own cache off (POCL_KERNEL_CACHE=0).
func BenchmarkSearch(b *testing.B) {
	cs, err := List()
	if err != nil || len(cs) == 0 {
		b.Skipf("no OpenCL device: %v", err)
	}
	d, err := OpenCandidate(cs[0], WithCacheDir(b.TempDir()), withTest(testHooks{gemmTile: 64, emulateMMA: Matmul3xTF32}))
	if err != nil {
		b.Fatal(err)
	}
	defer d.Close()
	p := tunedProgram(b, d)
	for b.Loop() {
		res, err := tune.Search(p, d, tune.Open(""), tune.Options{Beam: 2, Budget: time.Hour})
		if err != nil {
			b.Fatal(err)
		}
		tried := 0
		for _, r := range res {
			tried += r.Tried
		}
		b.ReportMetric(float64(tried), "tried")
	}
}
