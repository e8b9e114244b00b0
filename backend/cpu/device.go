package cpu

import (
	"fmt"
	"os"
	"runtime"
	"sync"

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
	limit   int64 // the cap on held bytes (0: $TARTAN_MEMORY_LIMIT)

	mu   sync.Mutex
	held int64 // bytes of the slots of the open executables
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

// MemoryLimit caps the bytes of storage the device's open executables may
// hold together, as $TARTAN_MEMORY_LIMIT does (the option wins); a program
// that would exceed it fails to load with a *backend.OutOfMemoryError.
func MemoryLimit(bytes int64) Option {
	return func(d *Device) { d.limit = max(bytes, 1) }
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
		Memory: backend.HostMemory(), ComputeUnits: d.workers, Driver: runtime.Version() + " " + runtime.GOARCH}
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
//
// Before allocating, the program's storage is compared with the memory the
// machine has available (on Linux MemAvailable in /proc/meminfo, and the
// limit of the process's memory cgroup; elsewhere the total memory) and
// with the cap set by MemoryLimit or $TARTAN_MEMORY_LIMIT, less what the
// device's open executables hold; a program that does not fit fails with a
// *backend.OutOfMemoryError (errors.Is backend.ErrOutOfMemory) naming its
// largest slot.
func (d *Device) Load(p *kir.Program) (*Executable, error) {
	if p == nil {
		return nil, fmt.Errorf("cpu: load: nil program")
	}
	return load(d, p)
}

// reserve counts the total bytes of p's slots against the device's memory
// before they are allocated, or says why they do not fit.
func (d *Device) reserve(p *kir.Program, size []int, total int64) error {
	limit, source := d.limit, fmt.Sprintf("cpu.MemoryLimit(%d)", d.limit)
	if limit == 0 {
		var err error
		if limit, err = backend.MemoryLimit(); err != nil {
			return fmt.Errorf("cpu: %w", err)
		}
		source = backend.EnvMemoryLimit + "=" + os.Getenv(backend.EnvMemoryLimit)
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	avail, why, known := backend.HostMemoryAvailable()
	if limit > 0 {
		if free := limit - d.held; !known || free < avail {
			avail, why, known = free, source, true
			if d.held > 0 {
				why += fmt.Sprintf(", less %d bytes held by the device's other executables", d.held)
			}
		}
	}
	if known && total > avail {
		what, bytes := largestSlot(p, size)
		return &backend.OutOfMemoryError{Backend: "cpu", Device: "the machine", Program: p.Name, What: what,
			Bytes: int64(bytes), Total: total, Available: max(avail, 0), Source: why}
	}
	d.held += total
	return nil
}

// release returns bytes counted by reserve.
func (d *Device) release(bytes int64) {
	d.mu.Lock()
	d.held -= bytes
	d.mu.Unlock()
}
