package opencl

import (
	"errors"
	"fmt"
	"math"
	"os"
	"strings"
	"time"

	"github.com/tartanml/tartan/backend"
	"github.com/tartanml/tartan/backend/opencl/cl"
	"github.com/tartanml/tartan/internal/debug"
	"github.com/tartanml/tartan/kir"
)

// Executable is a kir.Program loaded on a device: one built OpenCL program,
// one device buffer per storage slot (temporaries of a slot, views
// included, lie in it), scratch buffers for split reductions and the
// launches with their arguments set once, except the offsets of views that
// move with a loop's step, which are set before each iteration's launch.
// Run enqueues every launch on the device's in-order queue, a loop's
// launches once per step, and returns without waiting; reads wait.
type Executable struct {
	d        *Device
	p        *kir.Program
	progs    []*cl.Program // one, or one per shard
	slots    []*cl.Buffer
	scratch  []*cl.Buffer
	launches []launch
	// runs split the launches into consecutive ranges, each outside every
	// loop or the body of one loop.
	runs    []launchRun
	inputs  map[string]int
	outputs map[string]int
	vars    map[string]int
	// staged[id] holds the copies of host data written into buffer id, oldest
	// first, kept for later writes of that buffer (see write).
	staged map[int][]*staging
	closed bool
}

// staging is host bytes the queue copies to the device asynchronously, and
// the event of that transfer (nil once it is known complete).
type staging struct {
	buf []byte
	ev  *cl.Event
}

// maxStaged bounds the copies of one buffer's writes in flight: a training
// loop enqueues its steps without waiting, and a write waits for the
// transfer of the write maxStaged before it only once that many are
// pending, so the host may run that many steps ahead of the device.
const maxStaged = 4

// done reports whether st's transfer is over (its event released), waiting
// for it when wait is set.
func (st *staging) done(wait bool) (bool, error) {
	if st.ev == nil {
		return true, nil
	}
	if !wait {
		if s, err := st.ev.Status(); err == nil && s > cl.StatusComplete {
			return false, nil
		}
	}
	err := st.ev.Wait()
	st.ev.Release()
	st.ev = nil
	return true, err
}

type launch struct {
	plan   launchPlan
	kernel *cl.Kernel
	rng    cl.NDRange
	// moving lists the arguments holding the offsets of views that move
	// with the step; the other offsets are set once.
	moving []offsetArg
}

// offsetArg is a kernel argument holding the element offset of view
// buffer buf within its slot.
type offsetArg struct {
	index, buf int
	wide       bool // a long, not an int
}

// launchRun is the launches first up to end, run once (loop < 0) or once
// per step of loop.
type launchRun struct {
	first, end int
	loop       int
}

// Load builds p for the device: it renders every kernel to OpenCL C, builds
// the program (or takes its binary from the cache), allocates the slots,
// fills constants, zeroes variables and prepares the launches.
func (d *Device) Load(p *kir.Program) (*Executable, error) {
	if err := d.usable(); err != nil {
		return nil, err
	}
	if err := p.Validate(); err != nil {
		return nil, fmt.Errorf("opencl: %w", err)
	}
	start := time.Now()
	defer d.forgetDigest(p) // p may change once loaded
	loaded := d.prestart(p)
	tr := d.traits(p)
	e, err := d.load(p, tr, start)
	var be *BuildError
	if err != nil && tr.MMA != "" && !tr.EmulateMMA && errors.As(err, &be) {
		// The driver passed the tensor-core probe but rejects this
		// program: use the ordinary cores from now on.
		d.disableTensorCores("a program using them failed to build: " + firstLine(err.Error()))
		tr.MMA = ""
		e, err = d.load(withoutMatrixTilings(p), tr, time.Now())
	}
	loaded(err == nil)
	return e, err
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

// load renders p with traits tr and loads it (start: when Load began).
func (d *Device) load(p *kir.Program, tr traits, start time.Time) (*Executable, error) {
	r, err := d.renderCached(p, tr)
	if err != nil {
		return nil, err
	}
	if debugOn("timing") {
		fmt.Fprintf(os.Stderr, "opencl: program %q: traits and rendering %.3f s (%d launches, %d shards)\n",
			p.Name, time.Since(start).Seconds(), len(r.Launches), r.Shards)
	}
	debugKernels(d, p, r)
	e := &Executable{d: d, p: p, inputs: map[string]int{}, outputs: map[string]int{}, vars: map[string]int{}}
	for _, b := range p.Inputs {
		e.inputs[b.Name] = b.Buffer
	}
	for _, b := range p.Outputs {
		e.outputs[b.Name] = b.Buffer
	}
	for _, b := range p.Variables {
		e.vars[b.Name] = b.Buffer
	}
	if err := e.load(r); err != nil {
		e.Close()
		return nil, err
	}
	return e, nil
}

func (e *Executable) load(r *rendered) error {
	d, p := e.d, e.p
	slotBytes, total, err := d.planMemory(p, r)
	if err != nil {
		return err
	}
	if len(r.Launches) > 0 {
		progs, err := d.buildProgram(p.Name, r)
		if err != nil {
			return err
		}
		e.progs = progs
	}
	alloc := func(what string, n int) (*cl.Buffer, error) {
		size := allocSize(n)
		b, err := d.ctx.NewBuffer(cl.MemReadWrite, size)
		if err == nil {
			// Touch the memory now so that a shortage shows here, naming
			// the buffer, rather than at some later launch.
			if d.queue.CanFillBuffer() {
				err = d.queue.FillBuffer(b, []byte{0, 0, 0, 0}, 0, size)
			} else {
				err = d.queue.WriteBuffer(b, 0, size, make([]byte, size))
			}
			if err == nil {
				err = d.queue.Finish()
			}
			if err != nil {
				b.Release()
			}
		}
		if err != nil {
			if isOOM(err) {
				return nil, d.outOfMemory(p, what, size, total, err)
			}
			return nil, d.execError("allocating "+what, err)
		}
		return b, nil
	}
	for s, n := range slotBytes {
		b, err := alloc(slotDescription(p, s), n)
		if err != nil {
			return err
		}
		e.slots = append(e.slots, b)
	}
	for i, n := range r.Scratch {
		b, err := alloc(fmt.Sprintf("scratch buffer %d", i), n)
		if err != nil {
			return err
		}
		e.scratch = append(e.scratch, b)
	}
	for _, b := range p.Buffers {
		if b.Kind == kir.Constant && b.Size() > 0 {
			data := encodeFloat64(b.DType, b.Init)
			if err := d.queue.WriteBuffer(e.slots[b.Slot], 0, len(data), data); err != nil {
				return d.execError(fmt.Sprintf("writing constant b%d", b.ID), err)
			}
		}
	}
	for _, lp := range r.Launches {
		prog := e.progs[0]
		if len(e.progs) > 1 {
			prog = e.progs[lp.Shard]
		}
		k, err := prog.NewKernel(lp.Fn)
		if err != nil {
			return fmt.Errorf("opencl: program %q: kernel %s: %w", p.Name, lp.Name, err)
		}
		e.launches = append(e.launches, launch{plan: lp, kernel: k})
		l := &e.launches[len(e.launches)-1]
		for i, a := range lp.Args {
			if a.View >= 0 {
				b := p.Buffers[a.View]
				o := offsetArg{index: i, buf: a.View, wide: wideView(p, b)}
				if err := e.setOffset(l, o, 0); err != nil {
					return err
				}
				if b.View.Stride != 0 {
					l.moving = append(l.moving, o)
				}
				continue
			}
			buf := e.scratchOr(a)
			if err := k.SetArgBuffer(i, buf); err != nil {
				return fmt.Errorf("opencl: program %q: kernel %s: %w", p.Name, lp.Name, err)
			}
		}
		local := lp.Local
		if !lp.Fixed {
			local = 256
			if wi, err := k.WorkGroupInfo(d.cand.Device); err == nil && wi.MaxSize > 0 {
				for local > wi.MaxSize {
					local /= 2
				}
			}
			local = min(local, max(d.info.MaxWorkGroupSize, 1))
			for local > 1 && local/2 >= lp.Global {
				local /= 2
			}
		} else if wi, err := k.WorkGroupInfo(d.cand.Device); err == nil && wi.MaxSize > 0 && wi.MaxSize < local {
			return fmt.Errorf("opencl: program %q: kernel %s (%s) needs work-groups of %d, but %s allows %d for it",
				p.Name, lp.Name, lp.Strategy, local, d.info.Name, wi.MaxSize)
		}
		global := ceilDiv(lp.Global, local) * local
		l.rng = cl.NDRange{Global: []int{global}, Local: []int{local}}
	}
	for i, l := range e.launches {
		loop := p.LoopOf(l.plan.Kernel)
		if n := len(e.runs); n > 0 && e.runs[n-1].loop == loop {
			e.runs[n-1].end = i + 1
			continue
		}
		e.runs = append(e.runs, launchRun{first: i, end: i + 1, loop: loop})
	}
	return d.execError("preparing program "+p.Name, d.queue.Finish())
}

// setOffset sets argument o of launch l to the offset of its view at step s.
func (e *Executable) setOffset(l *launch, o offsetArg, s int) error {
	base := e.p.Buffers[o.buf].Base(s)
	var err error
	if o.wide {
		err = l.kernel.SetArgInt64(o.index, int64(base))
	} else {
		err = l.kernel.SetArgInt32(o.index, int32(base))
	}
	if err != nil {
		return e.d.execError(fmt.Sprintf("setting the offset of view b%d at step %d for kernel %s of %q", o.buf, s, l.plan.Name, e.p.Name), err)
	}
	return nil
}

// schedule calls launch for every launch in execution order, with the step
// of its loop (0 outside loops), after setting the offsets of the views
// that move with the step.
func (e *Executable) schedule(enqueue func(i, step int) error) error {
	for _, r := range e.runs {
		steps, lp := 1, kir.StepLoop{}
		if r.loop >= 0 {
			lp = e.p.Loops[r.loop]
			steps = lp.Steps
		}
		for it := range steps {
			s := 0
			if r.loop >= 0 {
				s = lp.Step(it)
			}
			for i := r.first; i < r.end; i++ {
				l := &e.launches[i]
				for _, o := range l.moving {
					if err := e.setOffset(l, o, s); err != nil {
						return err
					}
				}
				if err := enqueue(i, s); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// allocSize rounds a buffer size up to a positive multiple of 16 bytes.
func allocSize(n int) int { return max((n+15)/16*16, 16) }

// planMemory returns the bytes of every slot of p on the device (in the
// device's storage types, f16 and bf16 as float32, which may be wider than
// the plan assumed) and of all its buffers, slots and scratch, together.
// A program that cannot fit is refused before anything is built or
// allocated: more bytes in all than the device's global memory, or a
// buffer larger than its largest allocation.
func (d *Device) planMemory(p *kir.Program, r *rendered) ([]int, int64, error) {
	const most = math.MaxInt64 / 4
	slotBytes := append([]int(nil), p.SlotBytes...)
	for _, b := range p.Buffers {
		n := int64(storageSize(b.DType))
		for _, x := range b.Shape {
			if x < 0 || x > 0 && n > most/int64(x) {
				return nil, 0, fmt.Errorf("opencl: program %q: buffer b%d %q %s%v is too large to address", p.Name, b.ID, b.Name, b.DType, b.Shape)
			}
			n *= int64(x)
		}
		slotBytes[b.Slot] = max(slotBytes[b.Slot], int(n))
	}
	var total int64
	for _, n := range append(append([]int(nil), slotBytes...), r.Scratch...) {
		if n < 0 || n > most || total > most-int64(n) {
			return nil, 0, fmt.Errorf("opencl: program %q needs more than %d bytes", p.Name, total)
		}
		total += int64(allocSize(n))
	}
	if avail := d.info.GlobalMemSize; avail > 0 && uint64(total) > avail {
		best := 0
		for s, n := range slotBytes {
			if n > slotBytes[best] {
				best = s
			}
		}
		what, n := "no slot", 0
		if len(slotBytes) > 0 {
			what, n = slotDescription(p, best), allocSize(slotBytes[best])
		}
		return nil, 0, d.outOfMemory(p, what, n, total, nil)
	}
	if largest := d.info.MaxMemAllocSize; largest > 0 {
		tooBig := fmt.Errorf("larger than the device's largest buffer (%d bytes)", largest)
		for s, n := range slotBytes {
			if uint64(allocSize(n)) > largest {
				return nil, 0, d.outOfMemory(p, slotDescription(p, s), allocSize(n), total, tooBig)
			}
		}
		for i, n := range r.Scratch {
			if uint64(allocSize(n)) > largest {
				return nil, 0, d.outOfMemory(p, fmt.Sprintf("scratch buffer %d", i), allocSize(n), total, tooBig)
			}
		}
	}
	return slotBytes, total, nil
}

func (e *Executable) scratchOr(a argRef) *cl.Buffer {
	if a.Buf >= 0 {
		return e.slots[e.p.Buffers[a.Buf].Slot]
	}
	return e.scratch[a.Scratch]
}

func (e *Executable) ready() error {
	if e.closed {
		return fmt.Errorf("opencl: executable %q is closed", e.p.Name)
	}
	return e.d.usable()
}

// Run implements backend.Executable: every kernel is enqueued in order, the
// kernels of a loop once per step; the call returns once they are
// submitted.
func (e *Executable) Run() error {
	if err := e.ready(); err != nil {
		return err
	}
	err := e.schedule(func(i, s int) error {
		l := &e.launches[i]
		if err := e.d.queue.RunKernel(l.kernel, l.rng); err != nil {
			return e.d.execError(fmt.Sprintf("launching kernel %s (%s) of %q%s", l.plan.Name, l.plan.Strategy, e.p.Name, e.stepNote(l, s)), err)
		}
		return nil
	})
	if err != nil {
		return err
	}
	return e.d.execError("submitting "+e.p.Name, e.d.queue.Flush())
}

// stepNote names the step of a launch inside a loop, for messages.
func (e *Executable) stepNote(l *launch, s int) string {
	if lp := e.p.LoopOf(l.plan.Kernel); lp >= 0 {
		return fmt.Sprintf(" at step %d of loop %d", s, lp)
	}
	return ""
}

// Finish waits until every enqueued command has completed.
func (e *Executable) Finish() error {
	if err := e.ready(); err != nil {
		return err
	}
	return e.d.execError("waiting for "+e.p.Name, e.d.queue.Finish())
}

// write enqueues host data into buffer id without waiting: the data is
// encoded into a staging copy that the queue reads asynchronously. The
// copy is kept for the buffer's next write, which first waits for the
// transfer (long complete by then when a step ran in between), so that a
// training step writing its batch allocates nothing.
func (e *Executable) write(what string, id int, data any) error {
	b := e.p.Buffers[id]
	if err := backend.CheckHost(what, b.DType, b.Size(), data); err != nil {
		return fmt.Errorf("opencl: %q: %w", e.p.Name, err)
	}
	if b.Size() == 0 {
		return nil
	}
	if e.staged == nil {
		e.staged = map[int][]*staging{}
	}
	ring := e.staged[id]
	var st *staging
	if len(ring) > 0 {
		// The oldest copy, if its transfer is over (or, with maxStaged
		// pending, once it is).
		done, err := ring[0].done(len(ring) >= maxStaged)
		if err != nil {
			// The transfer failed or is unknown: never reuse its bytes.
			e.staged[id] = ring[1:]
			return e.d.execError("writing "+what, err)
		}
		if done {
			st, ring = ring[0], ring[1:]
		}
	}
	if st == nil {
		st = &staging{}
	}
	e.staged[id] = append(ring, st)
	bytes, err := encodeInto(st.buf, b.DType, data)
	if err != nil {
		return fmt.Errorf("opencl: %q: %s: %w", e.p.Name, what, err)
	}
	st.buf = bytes
	ev, err := e.d.queue.EnqueueWriteBuffer(e.slots[b.Slot], b.Base(0)*storageSize(b.DType), len(bytes), bytes)
	if err != nil {
		st.buf = nil
		return e.d.execError("writing "+what, err)
	}
	st.ev = ev
	return nil
}

// read copies buffer id into host data, waiting for the queue.
func (e *Executable) read(what string, id int, dst any) error {
	b := e.p.Buffers[id]
	if err := backend.CheckHost(what, b.DType, b.Size(), dst); err != nil {
		return fmt.Errorf("opencl: %q: %w", e.p.Name, err)
	}
	if b.Size() == 0 {
		return nil
	}
	n := b.Size() * storageSize(b.DType)
	buf := backend.HostBytes(dst)
	direct := len(buf) == n
	if !direct {
		buf = make([]byte, n)
	}
	if err := e.d.queue.ReadBuffer(e.slots[b.Slot], b.Base(0)*storageSize(b.DType), len(buf), buf); err != nil {
		return e.d.execError("reading "+what, err)
	}
	if direct {
		return nil
	}
	return decode(b.DType, buf, dst)
}

func (e *Executable) names(m map[string]int) string {
	var s []string
	for n := range m {
		s = append(s, fmt.Sprintf("%q", n))
	}
	if len(s) == 0 {
		return "none"
	}
	return strings.Join(s, ", ")
}

// SetInput implements backend.Executable.
func (e *Executable) SetInput(name string, data any) error {
	if err := e.ready(); err != nil {
		return err
	}
	id, ok := e.inputs[name]
	if !ok {
		return fmt.Errorf("opencl: program %q has no input %q (inputs: %s)", e.p.Name, name, e.names(e.inputs))
	}
	return e.write("input "+name, id, data)
}

// ReadOutput implements backend.Executable.
func (e *Executable) ReadOutput(name string, dst any) error {
	if err := e.ready(); err != nil {
		return err
	}
	id, ok := e.outputs[name]
	if !ok {
		return fmt.Errorf("opencl: program %q has no output %q (outputs: %s)", e.p.Name, name, e.names(e.outputs))
	}
	return e.read("output "+name, id, dst)
}

// ReadVariable implements backend.Executable.
func (e *Executable) ReadVariable(name string, dst any) error {
	if err := e.ready(); err != nil {
		return err
	}
	id, ok := e.vars[name]
	if !ok {
		return fmt.Errorf("opencl: program %q has no variable %q (variables: %s)", e.p.Name, name, e.names(e.vars))
	}
	return e.read("variable "+name, id, dst)
}

// WriteVariable implements backend.Executable.
func (e *Executable) WriteVariable(name string, data any) error {
	if err := e.ready(); err != nil {
		return err
	}
	id, ok := e.vars[name]
	if !ok {
		return fmt.Errorf("opencl: program %q has no variable %q (variables: %s)", e.p.Name, name, e.names(e.vars))
	}
	return e.write("variable "+name, id, data)
}

// Close implements backend.Executable: it waits for the queue and releases
// the kernels, program and buffers. Closing twice is harmless.
func (e *Executable) Close() error {
	if e.closed {
		return nil
	}
	e.closed = true
	var first error
	keep := func(err error) {
		if first == nil && err != nil {
			first = err
		}
	}
	if e.d.usable() == nil && (len(e.slots) > 0 || len(e.scratch) > 0 || len(e.launches) > 0) {
		keep(e.d.queue.Finish())
	}
	for _, ring := range e.staged {
		for _, st := range ring {
			if st.ev != nil {
				keep(st.ev.Release())
			}
		}
	}
	e.staged = nil
	for _, l := range e.launches {
		keep(l.kernel.Release())
	}
	for _, p := range e.progs {
		keep(p.Release())
	}
	for _, b := range e.slots {
		keep(b.Release())
	}
	for _, b := range e.scratch {
		keep(b.Release())
	}
	return first
}

// Profile runs the program once with an event per launch and returns each
// launch's device time (Kernel is the __kernel function, How its template
// and tiling), in launch order; a launch inside a loop reports the
// sum over the loop's steps. A device opened without WithProfiling times
// the launches on a second queue, after its own has finished.
func (e *Executable) Profile() ([]backend.KernelTime, error) {
	if err := e.ready(); err != nil {
		return nil, err
	}
	q, err := e.d.profilingQueue()
	if err != nil {
		return nil, err
	}
	if q != e.d.queue {
		// The inputs' uploads and earlier runs finish before the timed
		// launches start on the other queue.
		if err := e.d.queue.Finish(); err != nil {
			return nil, e.d.execError("profiling "+e.p.Name, err)
		}
	}
	type timed struct {
		launch int
		ev     *cl.Event
	}
	var events []timed
	defer func() {
		for _, t := range events {
			t.ev.Release()
		}
	}()
	err = e.schedule(func(i, s int) error {
		l := &e.launches[i]
		ev, err := q.EnqueueKernel(l.kernel, l.rng)
		if err != nil {
			return e.d.execError(fmt.Sprintf("launching kernel %s of %q%s", l.plan.Name, e.p.Name, e.stepNote(l, s)), err)
		}
		events = append(events, timed{i, ev})
		return nil
	})
	if err != nil {
		return nil, err
	}
	if err := q.Finish(); err != nil {
		return nil, e.d.execError("profiling "+e.p.Name, err)
	}
	out := make([]backend.KernelTime, len(e.launches))
	for i, l := range e.launches {
		out[i] = backend.KernelTime{Kernel: l.plan.Name, How: l.plan.Strategy, Source: e.p.Kernels[l.plan.Kernel].Source}
	}
	for _, x := range events {
		t, err := x.ev.Profile()
		if err != nil {
			return nil, fmt.Errorf("opencl: profile of %s: %w", e.launches[x.launch].plan.Name, err)
		}
		out[x.launch].Seconds += float64(t.Ended-t.Started) / 1e9
	}
	return out, nil
}

var _ backend.Profiler = (*Executable)(nil)

// Launches describes the launches of the executable, one line each, for
// debugging and benchmarks.
func (e *Executable) Launches() []string {
	var out []string
	for _, l := range e.launches {
		s := fmt.Sprintf("%s: %s, %v", l.plan.Name, l.plan.Strategy, l.rng)
		if lp := e.p.LoopOf(l.plan.Kernel); lp >= 0 {
			s += fmt.Sprintf(", loop %d (%d steps)", lp, e.p.Loops[lp].Steps)
		}
		out = append(out, s)
	}
	return out
}

// debugKernels prints the rendered source when TARTAN_DEBUG lists
// "kernels".
func debugKernels(d *Device, p *kir.Program, r *rendered) {
	if !debugOn("kernels") {
		return
	}
	fmt.Fprintf(os.Stderr, "=== OpenCL program %q for %s %q: %d launches\n", p.Name, d.cand.ID, d.info.Name, len(r.Launches))
	for _, l := range r.Launches {
		loop := ""
		if lp := p.LoopOf(l.Kernel); lp >= 0 {
			loop = fmt.Sprintf(", loop %d (%d steps)", lp, p.Loops[lp].Steps)
		}
		if l.Fn != l.Name {
			loop += ", the code of " + l.Fn
		}
		fmt.Fprintf(os.Stderr, "  %s: kernel %d, %s, %d work-items%s\n", l.Name, l.Kernel, l.Strategy, l.Global, loop)
	}
	fmt.Fprintln(os.Stderr, r.Source)
}

// debugOn reports whether TARTAN_DEBUG lists what.
func debugOn(what string) bool { return debug.On(what) }

var _ backend.Executable = (*Executable)(nil)
