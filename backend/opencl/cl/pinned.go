package cl

import (
	"fmt"
	"unsafe"
)

// Pinned is host memory the driver transfers from without staging it first:
// a buffer allocated with MemAllocHostPtr and mapped once for writing. Its
// Bytes stay valid until Release; no command ever uses the buffer itself,
// only transfers from its mapped bytes.
type Pinned struct {
	q   *Queue
	buf *Buffer
	ptr uintptr
	// Bytes is the mapped memory.
	Bytes []byte
}

// CL_MAP_WRITE.
const mapWrite = 1 << 1

// NewPinned allocates and maps size bytes of host-accessible memory.
func (q *Queue) NewPinned(size int) (*Pinned, error) {
	b, err := q.ctx.NewBuffer(MemReadOnly|MemAllocHostPtr, size)
	if err != nil {
		return nil, err
	}
	p, err := q.t.create(fnEnqueueMapBuffer, q.id, b.id, 1, mapWrite, 0, uintptr(size), 0, 0, 0)
	if err != nil {
		b.Release()
		return nil, annotate(err, "mapping %d bytes of pinned memory on %q", size, q.device.info.Name)
	}
	return &Pinned{q: q, buf: b, ptr: p, Bytes: unsafe.Slice((*byte)(unsafe.Add(nil, p)), size)}, nil
}

// EnqueueWriteFromPinned starts copying size bytes of p from poff into b at
// offset and returns the command's event (release it). p's bytes must not
// change until the event completes.
func (q *Queue) EnqueueWriteFromPinned(b *Buffer, offset int, p *Pinned, poff, size int) (*Event, error) {
	if err := q.checkRange("EnqueueWriteFromPinned", b, offset, size, size); err != nil {
		return nil, err
	}
	if p == nil || p.Bytes == nil || poff < 0 || size <= 0 || poff+size > len(p.Bytes) {
		return nil, fmt.Errorf("opencl: EnqueueWriteFromPinned: %d bytes at %d outside the pinned memory", size, poff)
	}
	var ev uintptr
	err := q.t.status(fnEnqueueWriteBuffer, q.id, b.id, 0, uintptr(offset), uintptr(size),
		p.ptr+uintptr(poff), 0, 0, uintptr(unsafe.Pointer(&ev)))
	if err != nil {
		return nil, annotate(err, "%d bytes at offset %d of a %d-byte buffer on %q", size, offset, b.size, q.device.info.Name)
	}
	return &Event{t: q.t, id: ev, what: fmt.Sprintf("write of %d bytes on %q", size, q.device.info.Name)}, nil
}

// Release unmaps and frees the memory; Bytes must no longer be used.
// Releasing twice is a no-op.
func (p *Pinned) Release() error {
	if p.Bytes == nil {
		return nil
	}
	p.Bytes = nil
	err := p.q.t.status(fnEnqueueUnmapMemObject, p.q.id, p.buf.id, p.ptr, 0, 0, 0)
	if err == nil {
		err = p.q.Finish()
	}
	if e := p.buf.Release(); err == nil {
		err = e
	}
	return err
}
