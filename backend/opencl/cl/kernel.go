package cl

import (
	"errors"
	"fmt"
	"math"
	"unsafe"
)

// Kernel is one __kernel function of a built program, with its arguments.
// Setting arguments and enqueueing must not race on the same Kernel: the
// arguments are captured when the kernel is enqueued, so use one Kernel per
// goroutine (or a lock) when launching concurrently.
type Kernel struct {
	prog *Program
	t    *fnTable
	id   uintptr
	name string
}

// NewKernel creates the kernel named name from the built program.
func (p *Program) NewKernel(name string) (*Kernel, error) {
	if name == "" {
		return nil, errors.New("opencl: NewKernel: empty kernel name")
	}
	cname := cString(name)
	id, err := p.t.create(fnCreateKernel, p.id, uintptr(unsafe.Pointer(&cname[0])))
	if err != nil {
		return nil, annotate(err, "kernel %q", name)
	}
	return &Kernel{prog: p, t: p.t, id: id, name: name}, nil
}

// Name returns the kernel's function name.
func (k *Kernel) Name() string { return k.name }

// NumArgs returns the number of arguments of the kernel function.
func (k *Kernel) NumArgs() (int, error) {
	v, err := infoUint(k.t, fnGetKernelInfo, k.id, kernelNumArgs)
	return int(v), annotate(err, "kernel %q", k.name)
}

// setArg sets argument i to size bytes at value (value 0 means NULL, as for
// a __local argument).
func (k *Kernel) setArg(i int, size uintptr, value unsafe.Pointer, what string) error {
	if i < 0 || i > math.MaxUint32 {
		return fmt.Errorf("opencl: kernel %q: argument index %d out of range", k.name, i)
	}
	err := k.t.status(fnSetKernelArg, k.id, uintptr(i), size, uintptr(value))
	return annotate(err, "kernel %q argument %d (%s)", k.name, i, what)
}

// SetArgBuffer sets argument i (a __global or __constant pointer) to b.
func (k *Kernel) SetArgBuffer(i int, b *Buffer) error {
	if b == nil || b.id == 0 {
		return fmt.Errorf("opencl: kernel %q argument %d: buffer is nil or released", k.name, i)
	}
	id := new(uintptr)
	*id = b.id
	return k.setArg(i, unsafe.Sizeof(*id), unsafe.Pointer(id), fmt.Sprintf("buffer of %d bytes", b.size))
}

// SetArgInt32 sets argument i (an int) to v.
func (k *Kernel) SetArgInt32(i int, v int32) error {
	p := new(int32)
	*p = v
	return k.setArg(i, 4, unsafe.Pointer(p), "int")
}

// SetArgInt64 sets argument i (a long) to v.
func (k *Kernel) SetArgInt64(i int, v int64) error {
	p := new(int64)
	*p = v
	return k.setArg(i, 8, unsafe.Pointer(p), "long")
}

// SetArgUint32 sets argument i (a uint) to v.
func (k *Kernel) SetArgUint32(i int, v uint32) error {
	p := new(uint32)
	*p = v
	return k.setArg(i, 4, unsafe.Pointer(p), "uint")
}

// SetArgFloat32 sets argument i (a float) to v.
func (k *Kernel) SetArgFloat32(i int, v float32) error {
	p := new(float32)
	*p = v
	return k.setArg(i, 4, unsafe.Pointer(p), "float")
}

// SetArgLocal sets argument i (a __local pointer) to a work-group local
// allocation of the given size in bytes.
func (k *Kernel) SetArgLocal(i int, bytes int) error {
	if bytes <= 0 {
		return fmt.Errorf("opencl: kernel %q argument %d: local size %d must be positive", k.name, i, bytes)
	}
	return k.setArg(i, uintptr(bytes), nil, fmt.Sprintf("%d bytes of local memory", bytes))
}

// WorkGroupInfo describes how a kernel may be launched on one device.
type WorkGroupInfo struct {
	MaxSize           int    // CL_KERNEL_WORK_GROUP_SIZE
	PreferredMultiple int    // CL_KERNEL_PREFERRED_WORK_GROUP_SIZE_MULTIPLE
	LocalMemSize      uint64 // local memory used by the kernel
	PrivateMemSize    uint64 // private memory per work item
}

// WorkGroupInfo returns the kernel's launch limits on device d.
func (k *Kernel) WorkGroupInfo(d *Device) (WorkGroupInfo, error) {
	var w WorkGroupInfo
	if !k.prog.ctx.has(d) {
		return w, fmt.Errorf("opencl: WorkGroupInfo: device %v is not in the kernel's context", d)
	}
	for _, f := range []struct {
		param uint32
		set   func(uint64)
	}{
		{kernelWorkGroupSize, func(v uint64) { w.MaxSize = int(v) }},
		{kernelPreferredMult, func(v uint64) { w.PreferredMultiple = int(v) }},
		{kernelLocalMemSize, func(v uint64) { w.LocalMemSize = v }},
		{kernelPrivateMem, func(v uint64) { w.PrivateMemSize = v }},
	} {
		b, err := queryInfo(k.t, fnGetKernelWorkGroupInfo, []uintptr{k.id, d.id}, f.param)
		if err != nil {
			return w, annotate(err, "kernel %q on %q", k.name, d.info.Name)
		}
		v, err := decodeUint(b, fnSpecs[fnGetKernelWorkGroupInfo].name, f.param)
		if err != nil {
			return w, err
		}
		f.set(v)
	}
	return w, nil
}

// Release releases the kernel. Releasing twice is a no-op.
func (k *Kernel) Release() error {
	if k.id == 0 {
		return nil
	}
	err := k.t.status(fnReleaseKernel, k.id)
	k.id = 0
	return annotate(err, "kernel %q", k.name)
}

// NDRange is the index space of a kernel launch: 1 to 3 dimensions. Global
// sizes are in work items. Local (the work-group size) may be nil to let the
// driver choose; otherwise it has the same length as Global. Offset may be
// nil (zero) or have the same length as Global.
type NDRange struct {
	Global []int
	Local  []int
	Offset []int
}

// String formats the range for messages.
func (r NDRange) String() string {
	s := fmt.Sprintf("global %v", r.Global)
	if r.Local != nil {
		s += fmt.Sprintf(", local %v", r.Local)
	}
	if r.Offset != nil {
		s += fmt.Sprintf(", offset %v", r.Offset)
	}
	return s
}

// sizes converts a dimension list to size_t values, checking its length and
// signs.
func (r NDRange) sizes(name string, v []int, allowZero bool) ([]uintptr, error) {
	if v == nil {
		return nil, nil
	}
	if len(v) != len(r.Global) {
		return nil, fmt.Errorf("opencl: NDRange %s has %d dimensions, global has %d", name, len(v), len(r.Global))
	}
	out := make([]uintptr, len(v))
	for i, x := range v {
		if x < 0 || (x == 0 && !allowZero) {
			return nil, fmt.Errorf("opencl: NDRange %s[%d] = %d is invalid", name, i, x)
		}
		out[i] = uintptr(x)
	}
	return out, nil
}

// ptrOf returns the address of the first element, or 0 for nil.
func ptrOf(v []uintptr) unsafe.Pointer {
	if len(v) == 0 {
		return nil
	}
	return unsafe.Pointer(&v[0])
}

// RunKernel enqueues k over r without returning an event.
func (q *Queue) RunKernel(k *Kernel, r NDRange) error {
	_, err := q.enqueueKernel(k, r, nil, false)
	return err
}

// EnqueueKernel enqueues k over r after the events in wait and returns the
// launch's event (release it).
func (q *Queue) EnqueueKernel(k *Kernel, r NDRange, wait ...*Event) (*Event, error) {
	return q.enqueueKernel(k, r, wait, true)
}

func (q *Queue) enqueueKernel(k *Kernel, r NDRange, wait []*Event, withEvent bool) (*Event, error) {
	if k == nil || k.id == 0 {
		return nil, errors.New("opencl: EnqueueKernel: kernel is nil or released")
	}
	if k.prog.ctx != q.ctx {
		return nil, fmt.Errorf("opencl: EnqueueKernel: kernel %q belongs to another context", k.name)
	}
	dims := len(r.Global)
	if dims < 1 || dims > 3 {
		return nil, fmt.Errorf("opencl: EnqueueKernel %q: %d dimensions, want 1 to 3", k.name, dims)
	}
	global, err := r.sizes("global", r.Global, false)
	if err != nil {
		return nil, err
	}
	local, err := r.sizes("local", r.Local, false)
	if err != nil {
		return nil, err
	}
	offset, err := r.sizes("offset", r.Offset, true)
	if err != nil {
		return nil, err
	}
	ids, err := eventIDs(wait)
	if err != nil {
		return nil, err
	}
	n, list := waitList(ids)
	var ev uintptr
	evArg := unsafe.Pointer(nil)
	if withEvent {
		evArg = unsafe.Pointer(&ev)
	}
	err = q.t.status(fnEnqueueNDRangeKernel, q.id, k.id, uintptr(dims),
		uintptr(ptrOf(offset)), uintptr(ptrOf(global)), uintptr(ptrOf(local)), n, list, uintptr(evArg))
	if err != nil {
		return nil, annotate(err, "kernel %q, %v on %q", k.name, r, q.device.info.Name)
	}
	if !withEvent {
		return nil, nil
	}
	return &Event{t: q.t, id: ev, what: fmt.Sprintf("kernel %q on %q", k.name, q.device.info.Name)}, nil
}
