package nn

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/tartanml/tartan/backend"
	"github.com/tartanml/tartan/tile"
)

// store keeps a model's variables (weights, optimizer slots and counters,
// metric accumulators) across the several executables that use them: a
// training step per batch size, an evaluation step per batch size, a
// prediction step. Each executable has its own copy of the variables it
// declares, so the store tracks, per variable, a version number and who holds
// the latest version: the host or one executable. Before an executable runs,
// every variable it reads is brought up to date in it (through the host when
// another executable holds the latest version); after it runs, it holds the
// latest version of every variable it updates. Within an epoch the same
// executable runs step after step, so nothing crosses to the host.
type store struct {
	vars  map[string]*hostVar
	clock int
	times hostTimes // where Fit's host time goes, under TARTAN_DEBUG=timing
	// labels name the model's outputs (Model.SetLabels); they live with
	// the variables because Save and Load carry them alongside.
	labels []string
}

// hostVar is one variable: its host copy and where its latest version is.
type hostVar struct {
	name        string
	dtype       tile.DType
	shape       tile.Shape
	f32         []float32 // Float32 variables
	i64         []int64   // Int64 variables
	version     int
	hostVersion int
	holder      *program // holds the latest version when hostVersion < version
}

// program is one compiled executable and the bookkeeping of its variables.
type program struct {
	key     progKey
	g       *tile.Graph
	exe     backend.Executable
	reads   []string       // every variable of the graph
	updates []string       // the variables it updates
	have    map[string]int // the version of each variable it holds
	broken  error          // set when a run failed; the program is not used again
}

func newStore() *store { return &store{vars: map[string]*hostVar{}} }

// declare adds a variable of zeros, or keeps an existing one of the same
// dtype and shape. A variable of another dtype or shape is replaced.
func (s *store) declare(name string, dt tile.DType, shape tile.Shape) *hostVar {
	if v := s.vars[name]; v != nil && v.dtype == dt && v.shape.Equal(shape) {
		return v
	}
	s.clock++
	v := &hostVar{name: name, dtype: dt, shape: shape.Clone(), version: s.clock, hostVersion: s.clock}
	switch dt {
	case tile.Int64:
		v.i64 = make([]int64, shape.Size())
	default:
		v.f32 = make([]float32, shape.Size())
	}
	s.vars[name] = v
	return v
}

// has reports whether the variable is declared.
func (s *store) has(name string) bool { return s.vars[name] != nil }

// pull brings the host copy of v up to date.
func (s *store) pull(v *hostVar) error {
	if v.hostVersion == v.version {
		return nil
	}
	p := v.holder
	if p == nil {
		return fmt.Errorf("nn: internal: variable %q has no holder", v.name)
	}
	var err error
	if v.dtype == tile.Int64 {
		err = p.exe.ReadVariable(v.name, v.i64)
	} else {
		err = p.exe.ReadVariable(v.name, v.f32)
	}
	if err != nil {
		return fmt.Errorf("nn: reading variable %q from the device: %w", v.name, err)
	}
	v.hostVersion = v.version
	return nil
}

// lookup returns the variable called name with its host copy up to date.
func (s *store) lookup(name string) (*hostVar, error) {
	v := s.vars[name]
	if v == nil {
		return nil, fmt.Errorf("nn: no variable %q", name)
	}
	return v, s.pull(v)
}

// f32 returns the current value of a float32 variable. The slice belongs to
// the store and must not be modified.
func (s *store) f32(name string) ([]float32, error) {
	v, err := s.lookup(name)
	if err != nil {
		return nil, err
	}
	if v.dtype != tile.Float32 {
		return nil, fmt.Errorf("nn: variable %q is %v, not f32", name, v.dtype)
	}
	return v.f32, nil
}

// i64 returns the current value of an int64 variable.
func (s *store) i64(name string) ([]int64, error) {
	v, err := s.lookup(name)
	if err != nil {
		return nil, err
	}
	if v.dtype != tile.Int64 {
		return nil, fmt.Errorf("nn: variable %q is %v, not i64", name, v.dtype)
	}
	return v.i64, nil
}

// setF32 replaces a float32 variable's value with data, which the store
// keeps.
func (s *store) setF32(name string, data []float32) error {
	v := s.vars[name]
	if v == nil || v.dtype != tile.Float32 || len(data) != v.shape.Size() {
		return fmt.Errorf("nn: internal: cannot set variable %q to %d f32 values", name, len(data))
	}
	s.clock++
	v.f32, v.version, v.hostVersion, v.holder = data, s.clock, s.clock, nil
	return nil
}

// setI64 replaces an int64 variable's value.
func (s *store) setI64(name string, data []int64) error {
	v := s.vars[name]
	if v == nil || v.dtype != tile.Int64 || len(data) != v.shape.Size() {
		return fmt.Errorf("nn: internal: cannot set variable %q to %d i64 values", name, len(data))
	}
	s.clock++
	v.i64, v.version, v.hostVersion, v.holder = data, s.clock, s.clock, nil
	return nil
}

// readScalars reads the current values of float32 scalar variables straight
// from wherever they are, without moving anything else. The progress bar
// uses it.
func (s *store) readScalars(names []string) ([]float64, error) {
	out := make([]float64, len(names))
	buf := make([]float32, 1)
	for i, n := range names {
		v := s.vars[n]
		if v == nil || v.dtype != tile.Float32 || v.shape.Size() != 1 {
			return nil, fmt.Errorf("nn: internal: %q is not a scalar f32 variable", n)
		}
		if v.hostVersion == v.version {
			out[i] = float64(v.f32[0])
			continue
		}
		if err := v.holder.exe.ReadVariable(n, buf); err != nil {
			return nil, fmt.Errorf("nn: reading metric %q from the device: %w", n, err)
		}
		out[i] = float64(buf[0])
	}
	return out, nil
}

// readI64Scalar reads the current value of an int64 scalar variable
// straight from wherever it is, as readScalars does.
func (s *store) readI64Scalar(name string) (int64, error) {
	v := s.vars[name]
	if v == nil || v.dtype != tile.Int64 || v.shape.Size() != 1 {
		return 0, fmt.Errorf("nn: internal: %q is not a scalar i64 variable", name)
	}
	if v.hostVersion == v.version {
		return v.i64[0], nil
	}
	buf := make([]int64, 1)
	if err := v.holder.exe.ReadVariable(name, buf); err != nil {
		return 0, fmt.Errorf("nn: reading %q from the device: %w", name, err)
	}
	return buf[0], nil
}

// prepare brings every variable p reads up to date in p.
func (s *store) prepare(p *program) error {
	if p.broken != nil {
		return p.broken
	}
	for _, name := range p.reads {
		v := s.vars[name]
		if v == nil {
			return fmt.Errorf("nn: internal: graph %q uses undeclared variable %q", p.g.Name(), name)
		}
		if p.have[name] == v.version {
			continue
		}
		if err := s.pull(v); err != nil {
			return err
		}
		var err error
		if v.dtype == tile.Int64 {
			err = p.exe.WriteVariable(name, v.i64)
		} else {
			err = p.exe.WriteVariable(name, v.f32)
		}
		if err != nil {
			return fmt.Errorf("nn: writing variable %q to the device: %w", name, err)
		}
		p.have[name] = v.version
	}
	return nil
}

// ran records that p has run: it now holds the latest version of every
// variable it updates.
func (s *store) ran(p *program) {
	s.clock++
	for _, name := range p.updates {
		v := s.vars[name]
		v.version, v.holder = s.clock, p
		p.have[name] = s.clock
	}
}

// run binds the inputs, brings p's variables up to date, runs it and
// records the new versions. A failed run leaves the variables it updates in
// an unknown state on the device; the host keeps their last known values,
// and the program is not used again.
func (s *store) run(p *program, inputs map[string]any) error {
	t := time.Now()
	if err := s.prepare(p); err != nil {
		return err
	}
	for name, data := range inputs {
		if err := p.exe.SetInput(name, data); err != nil {
			return fmt.Errorf("nn: binding input %q of %q: %w", name, p.g.Name(), err)
		}
	}
	t = s.times.since(&s.times.bind, t)
	defer s.times.since(&s.times.launch, t)
	if err := p.exe.Run(); err != nil {
		p.broken = fmt.Errorf("nn: running %q failed earlier: %w", p.g.Name(), err)
		return fmt.Errorf("nn: running %q: %w", p.g.Name(), err)
	}
	s.ran(p)
	return nil
}

// syncAll copies the latest version of every variable to the host.
func (m *Model) syncAll() error {
	for _, v := range m.st.vars {
		if err := m.st.pull(v); err != nil {
			return err
		}
	}
	return nil
}

// dropPrograms closes every executable after the host has the latest
// values.
func (m *Model) dropPrograms() error {
	var errs []error
	for k, p := range m.progs {
		for _, v := range m.st.vars {
			if v.holder == p && v.hostVersion != v.version {
				errs = append(errs, fmt.Errorf("nn: internal: variable %q would be lost", v.name))
			}
		}
		if err := p.exe.Close(); err != nil {
			errs = append(errs, err)
		}
		delete(m.progs, k)
	}
	return errors.Join(errs...)
}

// progKind tells apart the graphs of a model.
type progKind int

const (
	trainProg progKind = iota
	evalProg
	predictProg
	weightedTrainProg // a training step whose loss takes per-sample weights
)

func (k progKind) String() string {
	return [...]string{"train", "eval", "predict", "weighted train"}[k]
}

// progKey identifies an executable: its kind and batch size.
type progKey struct {
	kind  progKind
	batch int
}

// program returns the executable for key, building and compiling it on
// first use.
func (m *Model) program(key progKey) (*program, error) {
	if err := m.programs(key); err != nil {
		return nil, err
	}
	return m.progs[key], nil
}

// programs makes sure the executables for keys exist. The missing graphs
// are built in order, then compiled at once: a device compiles several
// programs faster together than one after another.
func (m *Model) programs(keys ...progKey) error {
	var todo []progKey
	var graphs []*tile.Graph
	for _, key := range keys {
		if m.progs[key] != nil || slices.Contains(todo, key) {
			continue
		}
		if m.dev == nil {
			return fmt.Errorf("nn: model %q has no device; pass nn.OnDevice to Compile or call SetDevice", m.name)
		}
		g, err := m.buildGraph(key)
		if err != nil {
			return err
		}
		todo = append(todo, key)
		graphs = append(graphs, g)
	}
	if len(todo) == 0 {
		return nil
	}
	start := time.Now()
	exes := make([]backend.Executable, len(todo))
	errs := make([]error, len(todo))
	var wg sync.WaitGroup
	for i := range todo {
		wg.Add(1)
		go func() {
			defer wg.Done()
			exes[i], errs[i] = m.dev.Compile(graphs[i])
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			for _, x := range exes {
				if x != nil {
					x.Close()
				}
			}
			key := todo[i]
			return fmt.Errorf("nn: compiling %s step of %q (batch %d) on device %s: %w", key.kind, m.name, key.batch, m.dev.Info().ID, err)
		}
	}
	m.stats.Compiles += len(todo)
	m.stats.CompileSeconds += time.Since(start).Seconds()
	var bad error
	for i, key := range todo {
		if err := m.register(key, graphs[i], exes[i]); err != nil && bad == nil {
			bad = err
		}
	}
	return bad
}

// register records a compiled executable for key.
func (m *Model) register(key progKey, g *tile.Graph, exe backend.Executable) error {
	p := &program{key: key, g: g, exe: exe, have: map[string]int{}}
	for _, v := range g.Variables() {
		p.reads = append(p.reads, v.Op().(*tile.VariableOp).Name)
	}
	for _, u := range g.Updates() {
		p.updates = append(p.updates, u.Variable.Op().(*tile.VariableOp).Name)
	}
	for _, name := range p.reads {
		if !m.st.has(name) {
			exe.Close()
			return fmt.Errorf("nn: internal: graph %q uses undeclared variable %q", g.Name(), name)
		}
	}
	slices.Sort(p.updates)
	m.progs[key] = p
	return nil
}
