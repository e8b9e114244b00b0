package cpu

import (
	"fmt"
	"runtime"

	"github.com/tartanml/tartan/backend"
	"github.com/tartanml/tartan/compile"
	"github.com/tartanml/tartan/kir"
	"github.com/tartanml/tartan/tile"
	"golang.org/x/sys/cpu"
)

// Device is the CPU: it compiles graphs with package compile and runs their
// kernels on a pool of goroutines. A Device may be shared by several
// executables; their runs are serialised on its workers.
type Device struct {
	workers int
	cache   bool
	pool    *workerPool
	info    backend.Info
}

var _ backend.Device = (*Device)(nil)

// Option configures a Device.
type Option func(*Device)

// Workers sets the number of goroutines that run kernels (at least 1); the
// default is runtime.GOMAXPROCS(0).
func Workers(n int) Option {
	return func(d *Device) { d.workers = max(1, n) }
}

// Cache turns the on-disk program cache of package compile on or off; it is
// on by default (and TARTAN_CACHE=off turns it off too).
func Cache(on bool) Option {
	return func(d *Device) { d.cache = on }
}

// New returns the CPU device.
func New(opts ...Option) *Device {
	d := &Device{workers: runtime.GOMAXPROCS(0), cache: true}
	for _, o := range opts {
		o(d)
	}
	d.pool = newPool(d.workers)
	name := cpuModel()
	d.info = backend.Info{ID: "cpu", Backend: "cpu", Name: name, Vendor: cpuVendor(),
		Memory: hostMemory(), ComputeUnits: d.workers, Driver: runtime.Version() + " " + runtime.GOARCH}
	return d
}

// Info implements backend.Device.
func (d *Device) Info() backend.Info { return d.info }

// Close implements backend.Device: it stops the worker goroutines. The
// device must not be used afterwards.
func (d *Device) Close() error {
	d.pool.close()
	return nil
}

// Target returns the compile target describing this device.
func (d *Device) Target() compile.Target {
	vw := 4
	switch {
	case cpu.X86.HasAVX512F:
		vw = 16
	case cpu.X86.HasAVX2:
		vw = 8
	}
	return compile.Target{Backend: "cpu", Workers: d.workers, ComputeUnits: runtime.NumCPU(), VectorWidth: vw}
}

// Compile implements backend.Device: it compiles g for this CPU (through the
// program cache unless it is off) and loads the program.
func (d *Device) Compile(g *tile.Graph) (backend.Executable, error) {
	if g == nil {
		return nil, fmt.Errorf("cpu: compile: nil graph")
	}
	var p *kir.Program
	var err error
	if d.cache {
		p, _, err = compile.CompileCached(g, d.Target(), "cpu "+d.info.Name+" "+runtime.GOARCH)
	} else {
		p, err = compile.Compile(g, d.Target())
	}
	if err != nil {
		return nil, err
	}
	x, err := d.Load(p)
	if err != nil {
		return nil, err
	}
	return x, nil
}

// Load builds an executable for a compiled program: storage for every slot,
// constants filled, variables zero, and an executor for every kernel.
func (d *Device) Load(p *kir.Program) (*Executable, error) {
	if p == nil {
		return nil, fmt.Errorf("cpu: load: nil program")
	}
	return load(d, p)
}
