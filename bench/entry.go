package bench

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/tartanml/tartan/backend"
	"github.com/tartanml/tartan/kir"
	"github.com/tartanml/tartan/tile"
)

// Config sizes an entry's step.
type Config struct {
	// Batch replaces the entry's batch size when positive.
	Batch int
	// Tiny shrinks every other dimension (resolution, widths, depth,
	// sequence length) so that the step compiles and runs in a fraction of
	// a second on the CPU, keeping the entry's structure; tests use it.
	Tiny bool
	// Seed seeds the initial weights and the synthetic data.
	Seed uint64
}

// Step is one entry's training step, compiled for a device.
type Step interface {
	// Run performs one training step and returns its loss (computed
	// before the update), once the device has finished. The first Run may
	// compile.
	Run() (float64, error)
	// Params is the number of trainable parameters.
	Params() int
	// Kernels is the number of kernels of the compiled step (on OpenCL,
	// launches after merging), or -1 before the first Run or when the
	// backend does not say.
	Kernels() int
	// CompileSeconds is the time the device took to compile the step's
	// graph (Device.Compile, not building the graph), known after the
	// first Run.
	CompileSeconds() float64
	// Close releases the step's device resources.
	Close() error
}

// Entry is one benchmark of the suite.
type Entry struct {
	// Name identifies the entry on the command line and in reports, such
	// as "resnet20"; torch_suite.py uses the same names.
	Name string
	// Fragment is true for the kernel fragments and false for the models.
	Fragment bool
	// Batch is the batch size the entry runs at unless Config says
	// otherwise.
	Batch int
	// About describes the entry and its sizes in one line.
	About string
	// params is the hand-computed number of trainable parameters at the
	// default size; tests check the built step against it.
	params int

	build func(c Config) (prepared, error)
}

// prepared is an entry built for a size but not yet compiled.
type prepared interface {
	params() int
	compile(dev backend.Device) (Step, error)
}

// Kind is "fragment" or "model".
func (e Entry) Kind() string {
	if e.Fragment {
		return "fragment"
	}
	return "model"
}

// Build builds the entry's step for dev. With a positive c.Batch it runs at
// that batch size instead of e.Batch.
func (e Entry) Build(dev backend.Device, c Config) (Step, error) {
	if dev == nil {
		return nil, fmt.Errorf("bench: %s: no device", e.Name)
	}
	if c.Batch < 0 {
		return nil, fmt.Errorf("bench: %s: batch %d is negative", e.Name, c.Batch)
	}
	if c.Batch == 0 {
		c.Batch = e.Batch
	}
	p, err := e.build(c)
	if err != nil {
		return nil, fmt.Errorf("bench: %s: %w", e.Name, err)
	}
	s, err := p.compile(dev)
	if err != nil {
		return nil, fmt.Errorf("bench: %s: %w", e.Name, err)
	}
	return s, nil
}

// Params returns the number of trainable parameters of the entry at size c,
// building it without compiling.
func (e Entry) Params(c Config) (int, error) {
	if c.Batch <= 0 {
		c.Batch = e.Batch
	}
	p, err := e.build(c)
	if err != nil {
		return 0, fmt.Errorf("bench: %s: %w", e.Name, err)
	}
	return p.params(), nil
}

// Entries returns every entry: the models, then the fragments.
func Entries() []Entry {
	return slices.Concat(modelEntries(), fragmentEntries())
}

// Select returns the entries named in only (in the suite's order), or, when
// only is empty, the models and, with fragments, the fragments too. An
// unknown name is an error that lists the known ones.
func Select(only []string, fragments bool) ([]Entry, error) {
	all := Entries()
	if len(only) == 0 {
		var out []Entry
		for _, e := range all {
			if !e.Fragment || fragments {
				out = append(out, e)
			}
		}
		return out, nil
	}
	want := map[string]bool{}
	for _, n := range only {
		n = strings.TrimSpace(n)
		if n == "" {
			continue
		}
		if !slices.ContainsFunc(all, func(e Entry) bool { return e.Name == n }) {
			return nil, fmt.Errorf("bench: unknown entry %q (known: %s)", n, strings.Join(Names(), ", "))
		}
		want[n] = true
	}
	if len(want) == 0 {
		return nil, fmt.Errorf("bench: no entry named in %q", strings.Join(only, ","))
	}
	var out []Entry
	for _, e := range all {
		if want[e.Name] {
			out = append(out, e)
		}
	}
	return out, nil
}

// Names returns the names of every entry, in the suite's order.
func Names() []string {
	var out []string
	for _, e := range Entries() {
		out = append(out, e.Name)
	}
	return out
}

// recorder is a Device that remembers what it compiled: the executables
// and the time Compile took.
type recorder struct {
	backend.Device
	mu      sync.Mutex
	exes    []backend.Executable
	seconds float64
}

func (r *recorder) Compile(g *tile.Graph) (backend.Executable, error) {
	t := time.Now()
	x, err := r.Device.Compile(g)
	r.mu.Lock()
	defer r.mu.Unlock()
	r.seconds += time.Since(t).Seconds()
	if err == nil {
		r.exes = append(r.exes, x)
	}
	return x, err
}

// kernels sums the kernels of everything compiled, or returns -1 when
// nothing is or a backend does not say.
func (r *recorder) kernels() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.exes) == 0 {
		return -1
	}
	n := 0
	for _, x := range r.exes {
		k := kernelCount(x)
		if k < 0 {
			return -1
		}
		n += k
	}
	return n
}

// kernelCount returns the number of kernels of an executable: those of its
// program on the CPU, its launches on OpenCL, or -1 when the backend does
// not expose either.
func kernelCount(x backend.Executable) int {
	if p, ok := x.(interface{ Program() *kir.Program }); ok && p.Program() != nil {
		return len(p.Program().Kernels)
	}
	if l, ok := x.(interface{ Launches() []string }); ok {
		return len(l.Launches())
	}
	return -1
}

// newRand returns the generator of an entry's weights or data: seed and a
// stream number, so that weights and data draw different numbers.
func newRand(seed, stream uint64) *rand.Rand {
	return rand.New(rand.NewPCG(seed^0x9e3779b97f4a7c15, stream))
}

// normal returns n standard normal float32 values.
func normal(r *rand.Rand, n int) []float32 {
	v := make([]float32, n)
	for i := range v {
		v[i] = float32(r.NormFloat64())
	}
	return v
}

// labels returns n class indices below classes, as float32 (for nn) and
// int32 (for tile graphs).
func labels(r *rand.Rand, n, classes int) ([]float32, []int32) {
	f, i := make([]float32, n), make([]int32, n)
	for k := range f {
		c := r.IntN(classes)
		f[k], i[k] = float32(c), int32(c)
	}
	return f, i
}

// tiny returns small when c.Tiny and full otherwise.
func tiny(c Config, full, small int) int {
	if c.Tiny {
		return small
	}
	return full
}
