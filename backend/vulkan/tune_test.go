package vulkan

import (
	"math"
	"math/rand/v2"
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

// tunedGraph has a product of sizes that are not multiples of the
// blocks, a batched product and a padded convolution.
func tunedGraph() *tile.Graph {
	f := tile.Float32
	g := tile.NewGraph("tuned")
	con := func(name, src string, a, b *tile.Tensor) {
		g.SetOutput(name, tile.ParseContraction(g, src, map[string]*tile.Tensor{"A": a, "B": b}, nil))
	}
	con("plain", "O[i, j : 37, 150] = +(A[i, k] * B[k, j])", g.Input("a", f, tile.Shape{37, 70}), g.Input("b", f, tile.Shape{70, 150}))
	con("batched", "O[n, i, j : 2, 67, 33] = +(A[n, i, k] * B[n, k, j])", g.Input("x", f, tile.Shape{2, 67, 45}), g.Input("w", f, tile.Shape{2, 45, 33}))
	con("conv", "O[n, y, x, o : 2, 9, 7, 24] = +(A[n, y + i - 1, x + j - 1, c] * B[i, j, c, o])",
		g.Input("img", f, tile.Shape{2, 9, 7, 16}), g.Input("k", f, tile.Shape{3, 3, 16, 24}))
	return g
}

// randomInputs returns normal values for p's inputs, by name.
func randomInputs(p *kir.Program) map[string][]float64 {
	r := rand.New(rand.NewPCG(5, 6))
	in := map[string][]float64{}
	for _, b := range p.Inputs {
		v := make([]float64, p.Buffers[b.Buffer].Size())
		for i := range v {
			v[i] = float64(float32(r.NormFloat64()))
		}
		in[b.Name] = v
	}
	return in
}

// checkRun compares the outputs of x, run on inputs, with kir.Interpret's
// of p.
func checkRun(t *testing.T, what string, p *kir.Program, x backend.Executable, in map[string][]float64) {
	t.Helper()
	want := make([][]float64, len(p.Buffers))
	for _, b := range p.Inputs {
		want[b.Buffer] = in[b.Name]
		if err := x.SetInput(b.Name, backend.HostSlice(tile.Float32, in[b.Name])); err != nil {
			t.Fatal(err)
		}
	}
	if err := kir.Interpret(p, want); err != nil {
		t.Fatal(err)
	}
	if err := x.Run(); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	for _, b := range p.Outputs {
		got := make([]float32, p.Buffers[b.Buffer].Size())
		if err := x.ReadOutput(b.Name, got); err != nil {
			t.Fatal(err)
		}
		for j, w := range want[b.Buffer] {
			if math.Abs(float64(got[j])-w) > 1e-4*(1+math.Abs(w)) {
				t.Fatalf("%s: %s[%d] = %v, want %v", what, b.Name, j, got[j], w)
			}
		}
	}
}

// withTiling returns p with kernel i tiled by tl, from the tuner.
func withTiling(p *kir.Program, i int, tl kir.Tiling) *kir.Program {
	q := *p
	q.Kernels = slices.Clone(p.Kernels)
	k := *p.Kernels[i]
	tl.From = "tuner"
	k.Schedule.Tiling = &tl
	q.Kernels[i] = &k
	return &q
}

// TestTilings runs each matrix-product kernel of tunedGraph with every
// tiling of the device's space and compares it with kir.Interpret, and
// checks that the shaders run the tiling asked for and that tilings
// outside the space are refused by name. It then searches with a cache
// in a temporary file: the winners are stored, a second search loads
// nothing, Apply marks the kernels as tuned, and Compile runs the
// tilings the default cache holds.
func TestTilings(t *testing.T) {
	t.Setenv(tune.EnvTune, "")
	d := openTest(t)
	g := tunedGraph()
	p, err := compile.Compile(g, d.Target())
	if err != nil {
		t.Fatal(err)
	}
	var gemms []int
	for i, k := range p.Kernels {
		model, space := d.TuneSpace(p, i)
		if len(space) == 0 {
			continue
		}
		gemms = append(gemms, i)
		if !slices.ContainsFunc(space, model.Same) || len(space) != 18 {
			t.Errorf("%s: model %s, %d tilings", k.Name, model.String(), len(space))
		}
		q, err := kir.Extract(p, i)
		if err != nil {
			t.Fatal(err)
		}
		in := randomInputs(q)
		for _, tl := range space {
			x, err := d.Load(withTiling(q, 0, tl))
			if err != nil {
				t.Fatalf("%s tiled %s: %v", k.Name, tl.String(), err)
			}
			if r := x.pipes[0].k.Tiling; r == nil || !r.Same(tl) || r.From != "tuner" {
				t.Errorf("%s tiled %s ran tiled %v", k.Name, tl.String(), r)
			}
			checkRun(t, k.Name+" tiled "+tl.String(), q, x, in)
			x.Close()
		}
		for _, bad := range []kir.Tiling{{BM: 48, BN: 48, BK: 16}, {BM: 64, BN: 64, BK: 32, Matrix: "coop-f16"}} {
			if _, err := d.Load(withTiling(p, i, bad)); err == nil || !strings.Contains(err.Error(), bad.String()) || !strings.Contains(err.Error(), k.Name) {
				t.Errorf("%s: tiling %s: error %v, want one naming the kernel and the tiling", k.Name, bad.String(), err)
			}
		}
	}
	if len(gemms) != 3 {
		t.Fatalf("%d kernels have tilings to choose, want 3:\n%v", len(gemms), p)
	}

	path := filepath.Join(t.TempDir(), "tune.json")
	cd := &countingDevice{Device: d, keep: 3}
	res, err := tune.Search(p, cd, tune.Open(path), tune.Options{Beam: 2})
	if err != nil {
		t.Fatal(err)
	}
	// A search round is one program: each kernel's model and its two
	// neighbours in one load.
	if len(res) != 3 || cd.loads != 3 || cd.kernels != 9 {
		t.Fatalf("search tuned %d kernels with %d loads of %d kernels, want 3 kernels of 3 candidates, one load each", len(res), cd.loads, cd.kernels)
	}
	cd.loads = 0
	if res, err := tune.Search(p, cd, tune.Open(path), tune.Options{Beam: 2}); err != nil || len(res) != 0 || cd.loads != 0 {
		t.Fatalf("a second search over the stored cache tuned %d kernels with %d loads (%v)", len(res), cd.loads, err)
	}
	q, n := tune.Apply(p, d, tune.Open(path))
	if n != 3 {
		t.Fatalf("Apply set %d tilings, want 3", n)
	}
	for _, i := range gemms {
		if tl := q.Kernels[i].Schedule.Tiling; tl == nil || tl.From != "tuner" || p.Kernels[i].Schedule.Tiling != nil {
			t.Fatalf("kernel %s: tiling %v; the original program's is %v", q.Kernels[i].Name, tl, p.Kernels[i].Schedule.Tiling)
		}
	}

	// Compile applies the default cache: store a tiling other than the
	// model's for each product and see it run.
	path = filepath.Join(t.TempDir(), "default.json")
	t.Setenv(tune.EnvCache, path)
	c, want := tune.Open(path), map[int]kir.Tiling{}
	for _, i := range gemms {
		model, space := d.TuneSpace(p, i)
		h, err := kir.Hash(p, i)
		if err != nil {
			t.Fatal(err)
		}
		tl := space[slices.IndexFunc(space, func(s kir.Tiling) bool { return !s.Same(model) })]
		if err := c.Store(d.TuneKey(), h, tune.Entry{Tiling: tl}); err != nil {
			t.Fatal(err)
		}
		want[i] = tl
	}
	x, err := d.Compile(g)
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	e := x.(*Executable)
	for i, tl := range want {
		if r := e.pipes[i].k.Tiling; r == nil || !r.Same(tl) || r.From != "tuner" {
			t.Errorf("compiled kernel %s ran tiled %v, want %s from the cache", p.Kernels[i].Name, r, tl.String())
		}
	}
	checkRun(t, "compiled", e.p, x, randomInputs(p))
}

// countingDevice counts the programs a search loads, and offers it only
// the model's tiling and the first keep−1 others of each space.
type countingDevice struct {
	*Device
	loads, kernels, keep int
}

func (c *countingDevice) TuneSpace(p *kir.Program, k int) (kir.Tiling, []kir.Tiling) {
	model, space := c.Device.TuneSpace(p, k)
	out := []kir.Tiling{model}
	for _, t := range space {
		if len(out) < c.keep && !t.Same(model) {
			out = append(out, t)
		}
	}
	return model, out
}

func (c *countingDevice) LoadProgram(p *kir.Program) (backend.Executable, error) {
	c.loads++
	c.kernels += len(p.Kernels)
	return c.Device.LoadProgram(p)
}
