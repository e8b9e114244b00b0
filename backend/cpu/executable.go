package cpu

import (
	"errors"
	"fmt"

	"github.com/tartanml/tartan/backend"
	"github.com/tartanml/tartan/kir"
)

// kernelRunner executes one kernel of a program.
type kernelRunner interface {
	run(x *Executable)
}

// Executable is a program loaded on the CPU: one piece of memory per storage
// slot, typed views of it for every buffer, and an executor built once for
// every kernel. Run replays the kernels in order and allocates nothing.
type Executable struct {
	dev     *Device
	prog    *kir.Program
	slots   [][]byte
	bufs    []*buffer
	kernels []kernelRunner
	frames  []*frame
	pool    *workerPool
	nwork   int
	inputs  map[string]int
	outputs map[string]int
	vars    map[string]int
	given   []bool // per buffer: an input that has been set
	views   []int  // the buffers that are views, placed at each step
	held    int64  // bytes of the slots, counted against the device's limit
	ran     bool
	closed  bool
}

var _ backend.Executable = (*Executable)(nil)

// Program returns the kernel program the executable runs.
func (x *Executable) Program() *kir.Program { return x.prog }

// workers returns the number of workers a kernel asking for w may use.
func (x *Executable) workers(w int) int {
	if w <= 0 || w > x.nwork {
		return x.nwork
	}
	return w
}

// load builds an executable for p on d.
func load(d *Device, p *kir.Program) (*Executable, error) {
	if err := p.Validate(); err != nil {
		return nil, fmt.Errorf("cpu: %w", err)
	}
	size, total, err := planSlots(p)
	if err != nil {
		return nil, err
	}
	if err := d.reserve(p, size, total); err != nil {
		return nil, err
	}
	x := &Executable{dev: d, prog: p, pool: d.pool, nwork: d.workers, held: total,
		inputs: map[string]int{}, outputs: map[string]int{}, vars: map[string]int{},
		given: make([]bool, len(p.Buffers))}
	x.slots = allocSlots(size)
	x.bufs = make([]*buffer, len(p.Buffers))
	for i, b := range p.Buffers {
		if b.View != nil {
			x.views = append(x.views, i)
			x.bufs[i] = &buffer{kind: b.Kind, dt: b.DType, n: b.Size(), name: b.Name}
			continue
		}
		x.bufs[i] = view(b, x.slots[b.Slot])
		if b.Kind == kir.Constant {
			x.bufs[i].fill(b.Init)
		}
	}
	x.place(0)
	for _, b := range p.Inputs {
		x.inputs[b.Name] = b.Buffer
	}
	for _, b := range p.Outputs {
		x.outputs[b.Name] = b.Buffer
	}
	for _, b := range p.Variables {
		x.vars[b.Name] = b.Buffer
	}
	// Kernels run one at a time, so their registers share a frame.
	var r regs
	nvars, pack, ints := 1, 0, 0
	for _, k := range p.Kernels {
		var kr regs
		kernel, err := newKernel(p, k, &kr)
		r = regs{max(r.f, kr.f), max(r.d, kr.d), max(r.i, kr.i)}
		kr2 := kernel
		if err != nil {
			x.Close()
			return nil, fmt.Errorf("cpu: program %q: kernel %s: %w", p.Name, k.Name, err)
		}
		x.kernels = append(x.kernels, kr2)
		nvars = max(nvars, k.NumVars()+1)
		if g, ok := kr2.(*gemmKernel); ok {
			pack = max(pack, g.packScratch())
			ints = max(ints, g.intScratch())
		}
	}
	x.frames = make([]*frame, d.workers)
	for w := range x.frames {
		x.frames[w] = newFrame(x.bufs, nvars, r, pack, ints)
	}
	return x, nil
}

// newKernel builds the executor of one kernel: the window executor for the
// pooling kernels it recognises, for a kernel the compiler scheduled as a
// matrix product the matrix-vector executor when the product has few
// columns or rows and the matrix-product executor otherwise, else the
// generic loops executor. The compiler's schedule alone says which kernels
// are products: a kernel it left as loops runs as loops.
func newKernel(p *kir.Program, k *kir.Kernel, r *regs) (kernelRunner, error) {
	if s, ok := newScatterKernel(p, k); ok {
		return s, nil
	}
	k = rewriteKernel(p, k)
	if w, ok := newWindowKernel(p, k); ok {
		return w, nil
	}
	if g, ok := newGemvKernel(p, k, r); ok {
		return g, nil
	}
	if k.Schedule.Strategy == "gemm" && k.Schedule.GEMM != nil {
		if g, ok := newGemmKernel(p, k, r); ok {
			return g, nil
		}
	}
	return newLoopsKernel(p, k, r), nil
}

// SetInput implements backend.Executable.
func (x *Executable) SetInput(name string, data any) error {
	b, err := x.host("input", x.inputs, name, data)
	if err != nil {
		return err
	}
	b.write(data)
	x.given[x.inputs[name]] = true
	return nil
}

// host returns the buffer named name among those of kind in m, after
// checking that the executable is open and that host data fits it.
func (x *Executable) host(kind string, m map[string]int, name string, data any) (*buffer, error) {
	if x.closed {
		return nil, errClosed
	}
	id, ok := m[name]
	if !ok {
		return nil, fmt.Errorf("cpu: program %q has no %s %q", x.prog.Name, kind, name)
	}
	b := x.bufs[id]
	if err := b.checkHost(kind, data); err != nil {
		return nil, err
	}
	return b, nil
}

var errClosed = errors.New("cpu: executable is closed")

// Run implements backend.Executable. It runs every kernel in order on the
// device's workers; it returns once all are done.
func (x *Executable) Run() error {
	if x.closed {
		return errClosed
	}
	for _, in := range x.prog.Inputs {
		if !x.given[in.Buffer] {
			return fmt.Errorf("cpu: program %q: input %q is not set", x.prog.Name, in.Name)
		}
	}
	for i := 0; i < len(x.kernels); i++ {
		l := x.prog.LoopOf(i)
		if l < 0 {
			x.kernels[i].run(x)
			continue
		}
		lp := x.prog.Loops[l]
		for it := range lp.Steps {
			x.place(lp.Step(it))
			for _, k := range x.kernels[lp.First:lp.End] {
				k.run(x)
			}
		}
		x.place(0)
		i = lp.End - 1
	}
	x.ran = true
	return nil
}

// place points every view at its elements for step s (see kir.View).
func (x *Executable) place(s int) {
	for _, i := range x.views {
		b := x.prog.Buffers[i]
		lo, hi := b.Base(s), b.Base(s)+b.Size()
		of, v := x.bufs[b.View.Of], x.bufs[i]
		switch {
		case of.f32 != nil:
			v.f32 = of.f32[lo:hi:hi]
		case of.f64 != nil:
			v.f64 = of.f64[lo:hi:hi]
		case of.i32 != nil:
			v.i32 = of.i32[lo:hi:hi]
		case of.i64 != nil:
			v.i64 = of.i64[lo:hi:hi]
		case of.b != nil:
			v.b = of.b[lo:hi:hi]
		}
	}
}

// ReadOutput implements backend.Executable.
func (x *Executable) ReadOutput(name string, dst any) error {
	b, err := x.host("output", x.outputs, name, dst)
	if err != nil {
		return err
	}
	if !x.ran {
		return fmt.Errorf("cpu: program %q: output %q read before any run", x.prog.Name, name)
	}
	b.read(dst)
	return nil
}

// ReadVariable implements backend.Executable.
func (x *Executable) ReadVariable(name string, dst any) error {
	b, err := x.host("variable", x.vars, name, dst)
	if err != nil {
		return err
	}
	b.read(dst)
	return nil
}

// WriteVariable implements backend.Executable.
func (x *Executable) WriteVariable(name string, data any) error {
	b, err := x.host("variable", x.vars, name, data)
	if err != nil {
		return err
	}
	b.write(data)
	return nil
}

// Close implements backend.Executable: it releases the buffers.
func (x *Executable) Close() error {
	if x.closed {
		return nil
	}
	x.closed = true
	x.dev.release(x.held)
	x.slots, x.bufs, x.kernels, x.frames = nil, nil, nil, nil
	return nil
}
