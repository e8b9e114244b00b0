// Package tune is Tartan's measuring tuner. It times candidate tilings of a
// program's matrix-product kernels on the device that will run them, keeps
// the fastest for each kernel in a cache on disk, and applies the cached
// decisions to every later program that contains the same kernel.
//
// The phases:
//
//   - Key: a kernel is known by kir.Hash (what it computes and its loop
//     layout, not the buffers it touches or its name), a device by its
//     Device.TuneKey (backend, device, driver and code-generation version).
//   - Search: for each matrix-product kernel not yet in the cache, Search
//     extracts it as a program of its own (kir.Extract) and runs a small
//     beam over the device's space of tilings, starting from the cost
//     model's: each round tries the tilings that differ from a member of
//     the beam in one decision (the matrix instruction, the block, the
//     number of parts of the sum) and keeps the Beam fastest, until a
//     round finds nothing faster or the kernel's time budget is spent. A
//     round's candidates (the first round's with the model's tiling) are
//     one program, the kernel once per candidate, built at once and timed
//     by the device's per-kernel timer in the same runs; when it does not
//     load, they are loaded one by one and a candidate that fails is
//     skipped.
//   - Apply: cached decisions become the kernels' kir.Schedule.Tiling, from
//     the "tuner"; kernels without one keep the model's choice.
//
// Default runs only Apply (a backend's Compile does so); $TARTAN_TUNE=N
// makes them Search first with a beam of N, and `tartan tune` searches the
// programs of a model or of the benchmark suite. Tilings change speed,
// never results: every backend adds a sum's parts in a fixed order.
package tune

import (
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/tartanml/tartan/backend"
	"github.com/tartanml/tartan/internal/debug"
	"github.com/tartanml/tartan/kir"
)

// EnvTune names the environment variable that makes compiles search: a
// positive beam width.
const EnvTune = "TARTAN_TUNE"

// Device is what the tuner needs of a backend's device.
type Device interface {
	// TuneKey identifies the device, its driver and the backend's code
	// generation, so that decisions measured for one are not applied to
	// another.
	TuneKey() string
	// TuneSpace returns the tiling the device's cost model gives kernel k
	// of p and the tilings the device can run it with (the model's among
	// them); an empty space when there is nothing to choose.
	TuneSpace(p *kir.Program, k int) (model kir.Tiling, space []kir.Tiling)
	// LoadProgram loads p to run on the device.
	LoadProgram(p *kir.Program) (backend.Executable, error)
}

// BeamFromEnv returns $TARTAN_TUNE's beam width: 0 when it is unset or
// empty, an error naming the variable when it is not a positive integer.
func BeamFromEnv() (int, error) {
	v := strings.TrimSpace(os.Getenv(EnvTune))
	if v == "" || v == "0" {
		return 0, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 || n > 64 {
		return 0, fmt.Errorf("$%s=%q: want a beam width from 1 to 64 (0 or empty: do not tune)", EnvTune, v)
	}
	return n, nil
}

// Apply returns p with the cached tiling of every matrix-product kernel the
// cache holds for the device, and how many kernels it set. A cached tiling
// that is no longer in the device's space (the backend changed) is left
// out. p itself is not modified.
func Apply(p *kir.Program, d Device, c *Cache) (*kir.Program, int) {
	if c == nil {
		return p, 0
	}
	key := ""
	var q *kir.Program
	n := 0
	for i, k := range p.Kernels {
		if k.Schedule.Strategy != "gemm" {
			continue
		}
		if key == "" {
			key = d.TuneKey()
		}
		h, err := kir.Hash(p, i)
		if err != nil {
			continue
		}
		e, ok := c.Lookup(key, h)
		if !ok {
			continue
		}
		_, space := d.TuneSpace(p, i)
		if !slices.ContainsFunc(space, e.Tiling.Same) {
			continue
		}
		if q == nil {
			cp := *p
			cp.Kernels = slices.Clone(p.Kernels)
			q = &cp
		}
		kk := *k
		t := e.Tiling
		t.From = "tuner"
		kk.Schedule.Tiling = &t
		q.Kernels[i] = &kk
		n++
	}
	if q == nil {
		return p, 0
	}
	return q, n
}

// Options bound a search.
type Options struct {
	// Beam is the number of tilings kept after each round (at least 1).
	Beam int
	// Budget is the most time spent on one kernel (0: 20 s).
	Budget time.Duration
	// Log, when set, receives a line per kernel tuned.
	Log io.Writer
}

// Result is the outcome of tuning one kernel.
type Result struct {
	Kernel       string // the first kernel of the program with this hash
	Hash         string
	Model, Best  kir.Tiling
	ModelSeconds float64
	BestSeconds  float64
	Tried        int
}

// Search tunes every matrix-product kernel of p that the cache does not
// hold for the device, storing each winner in the cache as it is found,
// and returns what it found. Kernels of one hash are tuned once. A
// candidate that fails to build or run is skipped (and logged); only when
// the model's own tiling fails is it an error.
func Search(p *kir.Program, d Device, c *Cache, o Options) ([]Result, error) {
	if o.Beam < 1 {
		o.Beam = 1
	}
	if o.Budget <= 0 {
		o.Budget = 20 * time.Second
	}
	key := d.TuneKey()
	done := map[string]bool{}
	var out []Result
	for i, k := range p.Kernels {
		if k.Schedule.Strategy != "gemm" {
			continue
		}
		h, err := kir.Hash(p, i)
		if err != nil {
			return out, err
		}
		if done[h] {
			continue
		}
		done[h] = true
		if _, ok := c.Lookup(key, h); ok {
			continue
		}
		model, space := d.TuneSpace(p, i)
		if len(space) < 2 {
			continue
		}
		q, err := kir.Extract(p, i)
		if err != nil {
			return out, err
		}
		r, err := searchKernel(q, d, model, space, o)
		if err != nil {
			return out, fmt.Errorf("tune: kernel %s of %q: %w", k.Name, p.Name, err)
		}
		r.Kernel, r.Hash = k.Name, h
		out = append(out, r)
		if o.Log != nil {
			fmt.Fprintf(o.Log, "tune: %s: model %s %.3f ms, tuned %s %.3f ms (%.2f×, %d tried)\n", k.Name,
				model.String(), 1e3*r.ModelSeconds, r.Best.String(), 1e3*r.BestSeconds, r.ModelSeconds/r.BestSeconds, r.Tried)
		}
		if err := c.Store(key, h, Entry{Tiling: r.Best, Seconds: r.BestSeconds, Model: r.ModelSeconds}); err != nil {
			return out, err
		}
	}
	return out, nil
}

// searchKernel runs the beam over space for the one-kernel program q. The
// first round times the model's tiling with its neighbours; each round's
// candidates are built as one program (see together) and timed in the
// same profiled runs.
func searchKernel(q *kir.Program, d Device, model kir.Tiling, space []kir.Tiling, o Options) (Result, error) {
	start := time.Now()
	type scored struct {
		t kir.Tiling
		s float64
	}
	var measured []scored
	seen := func(t kir.Tiling) bool {
		return slices.ContainsFunc(measured, func(m scored) bool { return m.t.Same(t) })
	}
	logf := func(format string, args ...any) {
		if o.Log != nil {
			fmt.Fprintf(o.Log, "tune: %s"+format+"\n", append([]any{q.Kernels[0].Name}, args...)...)
		}
	}
	beam, best, ms := []kir.Tiling{model}, math.Inf(1), math.Inf(1)
	for round := 0; round == 0 || time.Since(start) < o.Budget; round++ {
		var next []kir.Tiling
		if round == 0 {
			next = append(next, model)
		}
		for _, b := range beam {
			for _, t := range space {
				if neighbours(b, t) && !seen(t) && !slices.ContainsFunc(next, t.Same) {
					next = append(next, t)
				}
			}
		}
		if len(next) == 0 {
			break
		}
		s, err := timeTogether(q, d, next)
		if err != nil {
			logf(": %d candidates in one program: %v; loading them one by one", len(next), err)
			s = timeApart(q, d, next, 4*best, logf)
		}
		for i, t := range next {
			measured = append(measured, scored{t, s[i]})
		}
		if round == 0 {
			if ms = s[0]; math.IsInf(ms, 1) {
				return Result{}, fmt.Errorf("the cost model's tiling %s does not run", model.String())
			}
		}
		sort.SliceStable(measured, func(a, b int) bool { return measured[a].s < measured[b].s })
		beam = beam[:0]
		for _, m := range measured[:min(o.Beam, len(measured))] {
			if !math.IsInf(m.s, 1) {
				beam = append(beam, m.t)
			}
		}
		if measured[0].s >= best {
			break
		}
		best = measured[0].s
	}
	r := Result{Model: model, ModelSeconds: ms, Best: measured[0].t, BestSeconds: measured[0].s, Tried: len(measured)}
	// Keep the model's tiling unless another is clearly faster: timings
	// this short vary by a few percent from run to run.
	if r.BestSeconds > 0.97*ms {
		r.Best, r.BestSeconds = model, ms
	}
	return r, nil
}

// neighbours reports whether t differs from b in exactly one decision: the
// matrix instruction, the block (BM×BN×BK) or the number of parts.
func neighbours(b, t kir.Tiling) bool {
	diff := 0
	if b.Matrix != t.Matrix {
		diff++
	}
	if b.BM != t.BM || b.BN != t.BN || b.BK != t.BK {
		diff++
	}
	if max(b.Parts, 1) != max(t.Parts, 1) {
		diff++
	}
	return diff == 1
}

// buildParallel is how many candidates build at once when they are loaded
// one by one.
const buildParallel = 8

// together returns q with its kernel repeated once per tiling of ts, all
// copies reading q's inputs, copy i writing an output of its own ("out",
// then "out1", "out2", …) and named by Source "tune candidate i". Each
// copy is a one-step loop of its own, so that no backend merges or
// reorders the launches of two candidates and each launch of a profile
// belongs to one of them. (A kernel with reduction loops never reads its
// own output, so no copy reads another's.)
func together(q *kir.Program, ts []kir.Tiling) (*kir.Program, error) {
	p := *q
	p.Buffers, p.Outputs, p.SlotBytes = slices.Clone(q.Buffers), slices.Clone(q.Outputs), slices.Clone(q.SlotBytes)
	p.Kernels, p.Loops = nil, nil
	out := q.Buffers[q.Kernels[0].Out]
	for i, t := range ts {
		// q's buffers are in the order its kernel names them, so
		// extracting the kernel again copies it with the same numbering.
		c, err := kir.Extract(q, 0)
		if err != nil {
			return nil, err
		}
		k := c.Kernels[0]
		if i > 0 {
			b := *out
			b.ID, b.Slot, b.Name = len(p.Buffers), p.Slots, "out"+strconv.Itoa(i)
			p.Buffers, p.SlotBytes = append(p.Buffers, &b), append(p.SlotBytes, q.SlotBytes[out.Slot])
			p.Outputs = append(p.Outputs, kir.Binding{Name: b.Name, Buffer: b.ID})
			p.Slots++
			k.Out = b.ID
		}
		tt := t
		tt.From = "tuner"
		k.Schedule.Tiling, k.Source = &tt, candidateSource(i)
		p.Loops = append(p.Loops, kir.StepLoop{First: i, End: i + 1, Steps: 1})
		p.Kernels = append(p.Kernels, k)
	}
	return &p, nil
}

func candidateSource(i int) string { return "tune candidate " + strconv.Itoa(i) }

// timeTogether builds the candidates ts of q as one program and returns
// the median time of each.
func timeTogether(q *kir.Program, d Device, ts []kir.Tiling) ([]float64, error) {
	p, err := together(q, ts)
	if err != nil {
		return nil, err
	}
	e, err := load(p, d)
	if err != nil {
		return nil, err
	}
	defer e.Close()
	return timeLoaded(p, e, math.Inf(1))
}

// timeApart loads the candidates ts of q one by one, building them in
// parallel, and times them one at a time; a candidate that fails to build
// or run is logged and timed as +Inf. A candidate whose first timed run
// exceeds limit seconds is not run again.
func timeApart(q *kir.Program, d Device, ts []kir.Tiling, limit float64, logf func(string, ...any)) []float64 {
	progs := make([]*kir.Program, len(ts))
	exes := make([]backend.Executable, len(ts))
	errs := make([]error, len(ts))
	var wg sync.WaitGroup
	sem := make(chan struct{}, buildParallel)
	for i, t := range ts {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			progs[i], errs[i] = together(q, []kir.Tiling{t})
			if errs[i] == nil {
				exes[i], errs[i] = load(progs[i], d)
			}
		}()
	}
	wg.Wait()
	out := make([]float64, len(ts))
	for i, t := range ts {
		var s []float64
		if errs[i] == nil {
			s, errs[i] = timeLoaded(progs[i], exes[i], limit)
			exes[i].Close()
		}
		if out[i] = math.Inf(1); errs[i] == nil {
			out[i] = s[0]
		} else {
			logf(" with %s: %v", t.String(), errs[i])
		}
	}
	return out
}

// load loads p with its inputs set to zeros.
func load(p *kir.Program, d Device) (backend.Executable, error) {
	e, err := d.LoadProgram(p)
	if err != nil {
		return nil, err
	}
	for _, in := range p.Inputs {
		b := p.Buffers[in.Buffer]
		if err := e.SetInput(in.Name, backend.HostSlice(b.DType, make([]float64, b.Size()))); err != nil {
			e.Close()
			return nil, err
		}
	}
	return e, nil
}

// timeLoaded returns the median time of each kernel of the loaded program
// p (the candidates of together) over several runs, measured with the
// device's per-kernel timer, or for a program of one kernel without one,
// with the host's clock. When every kernel's first timed run exceeds limit
// seconds, the program is not run again.
func timeLoaded(p *kir.Program, e backend.Executable, limit float64) ([]float64, error) {
	if err := e.Run(); err != nil {
		return nil, err
	}
	n := len(p.Kernels)
	prof, ok := e.(backend.Profiler)
	if !ok && n > 1 {
		return nil, fmt.Errorf("no per-kernel timer to tell %d kernels apart", n)
	}
	index := map[string]int{}
	for i, k := range p.Kernels {
		index[k.Source] = i
	}
	once := func() ([]float64, error) {
		s := make([]float64, n)
		if !ok {
			start := time.Now()
			if err := e.Run(); err != nil {
				return nil, err
			}
			out := p.Buffers[p.Outputs[0].Buffer]
			if err := e.ReadOutput(p.Outputs[0].Name, backend.HostSlice(out.DType, make([]float64, out.Size()))); err != nil {
				return nil, err
			}
			s[0] = time.Since(start).Seconds()
			return s, nil
		}
		ts, err := prof.Profile()
		if err != nil {
			return nil, err
		}
		timed := make([]bool, n)
		for _, x := range ts {
			i, found := index[x.Source]
			if !found {
				return nil, fmt.Errorf("the profile names %s (%q), no kernel of the program", x.Kernel, x.Source)
			}
			s[i] += x.Seconds
			timed[i] = true
		}
		if i := slices.Index(timed, false); i >= 0 {
			return nil, fmt.Errorf("the profile does not time kernel %d", i)
		}
		return s, nil
	}
	runs := make([][]float64, n)
	total := 0.0
	for len(runs[0]) < 7 && (len(runs[0]) < 3 || total < 0.05*float64(n)) {
		s, err := once()
		if err != nil {
			return nil, err
		}
		for i, x := range s {
			runs[i] = append(runs[i], x)
			total += x
		}
		if len(runs[0]) == 1 && slices.Min(s) > limit {
			return s, nil
		}
	}
	out := make([]float64, n)
	for i, r := range runs {
		sort.Float64s(r)
		out[i] = r[len(r)/2]
	}
	return out, nil
}

// searching keeps one search at a time in a process, so that candidates
// are not timed against each other.
var searching sync.Mutex

// Prepare is what a backend's Compile does between compiling a program and
// loading it: with $TARTAN_TUNE set, it searches the kernels the default
// cache does not hold for the device (logging to standard error), and then
// it applies the cache.
func Prepare(p *kir.Program, d Device) (*kir.Program, error) {
	c := Default()
	if c == nil {
		return p, nil
	}
	beam, err := BeamFromEnv()
	if err != nil {
		return nil, err
	}
	if beam > 0 {
		searching.Lock()
		_, err := Search(p, d, c, Options{Beam: beam, Log: os.Stderr})
		searching.Unlock()
		if err != nil {
			return nil, err
		}
	}
	q, n := Apply(p, d, c)
	if n > 0 && debug.On("schedule") {
		// The compiler printed its schedule before these decisions.
		for i, k := range q.Kernels {
			if t := k.Schedule.Tiling; t != nil && p.Kernels[i].Schedule.Tiling == nil {
				fmt.Fprintf(os.Stderr, "tune: kernel %s runs with tiling %s from the tuning cache %s (it replaces the cost model's choice)\n", k.Name, t.String(), c.path)
			}
		}
	}
	return q, nil
}
