package cl

import (
	"errors"
	"fmt"
	"unsafe"
)

// MemFlags are cl_mem_flags. CL_MEM_USE_HOST_PTR and CL_MEM_COPY_HOST_PTR are
// deliberately absent: the driver is never given Go memory to keep.
type MemFlags uint64

// Memory flags accepted by NewBuffer.
const (
	MemReadWrite     MemFlags = 1 << 0
	MemWriteOnly     MemFlags = 1 << 1
	MemReadOnly      MemFlags = 1 << 2
	MemAllocHostPtr  MemFlags = 1 << 4
	MemHostWriteOnly MemFlags = 1 << 7
	MemHostReadOnly  MemFlags = 1 << 8
	MemHostNoAccess  MemFlags = 1 << 9

	memAllowed = MemReadWrite | MemWriteOnly | MemReadOnly | MemAllocHostPtr |
		MemHostWriteOnly | MemHostReadOnly | MemHostNoAccess
	memUseHostPtr  MemFlags = 1 << 3
	memCopyHostPtr MemFlags = 1 << 5
)

// Buffer is a device memory object of a fixed size in bytes.
type Buffer struct {
	ctx  *Context
	id   uintptr
	size int
}

// NewBuffer allocates size bytes of device memory. Flags may combine the
// Mem* constants; zero means MemReadWrite.
func (c *Context) NewBuffer(flags MemFlags, size int) (*Buffer, error) {
	if size <= 0 {
		return nil, fmt.Errorf("opencl: NewBuffer: size %d bytes must be positive", size)
	}
	if flags&(memUseHostPtr|memCopyHostPtr) != 0 {
		return nil, errors.New("opencl: NewBuffer: host-pointer flags are not supported; write the data after allocating")
	}
	if flags&^memAllowed != 0 {
		return nil, fmt.Errorf("opencl: NewBuffer: unknown memory flags %#x", uint64(flags&^memAllowed))
	}
	id, err := c.t.create(fnCreateBuffer, c.id, uintptr(flags), uintptr(size), 0)
	if err != nil {
		return nil, annotate(err, "%d bytes on %s", size, deviceNames(c.devices))
	}
	return &Buffer{ctx: c, id: id, size: size}, nil
}

// Size returns the buffer's size in bytes.
func (b *Buffer) Size() int { return b.size }

// Release releases the buffer. Releasing twice is a no-op.
func (b *Buffer) Release() error {
	if b.id == 0 {
		return nil
	}
	err := b.ctx.t.status(fnReleaseMemObject, b.id)
	b.id = 0
	return annotate(err, "buffer of %d bytes", b.size)
}

// Scalar is an element type whose slices can be copied to and from device
// memory byte for byte (no Go pointers inside).
type Scalar interface {
	~int8 | ~uint8 | ~int16 | ~uint16 | ~int32 | ~uint32 | ~int64 | ~uint64 | ~float32 | ~float64
}

// Bytes returns the memory of s as a byte slice (no copy), for transfers of
// typed data: q.WriteBuffer(b, 0, cl.Bytes(xs)).
func Bytes[T Scalar](s []T) []byte {
	if len(s) == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(&s[0])), len(s)*int(unsafe.Sizeof(s[0])))
}

// checkRange validates a transfer of size bytes at offset in b, against a
// host slice of hostLen bytes (hostLen < 0 skips that check).
func (q *Queue) checkRange(op string, b *Buffer, offset, size, hostLen int) error {
	switch {
	case b == nil || b.id == 0:
		return fmt.Errorf("opencl: %s: buffer is nil or released", op)
	case b.ctx != q.ctx:
		return fmt.Errorf("opencl: %s: buffer belongs to another context", op)
	case offset < 0 || size < 0:
		return fmt.Errorf("opencl: %s: negative offset %d or size %d", op, offset, size)
	case offset > b.size || size > b.size-offset:
		return fmt.Errorf("opencl: %s: range [%d, %d) is outside the %d-byte buffer", op, offset, offset+size, b.size)
	case hostLen >= 0 && size > hostLen:
		return fmt.Errorf("opencl: %s: host slice holds %d bytes, %d requested", op, hostLen, size)
	}
	return nil
}

// WriteBuffer copies size bytes of src into b at offset and returns once src
// may be reused.
func (q *Queue) WriteBuffer(b *Buffer, offset, size int, src []byte) error {
	if err := q.checkRange("WriteBuffer", b, offset, size, len(src)); err != nil || size == 0 {
		return err
	}
	err := q.t.status(fnEnqueueWriteBuffer, q.id, b.id, 1, uintptr(offset), uintptr(size),
		uintptr(unsafe.Pointer(&src[0])), 0, 0, 0)
	return annotate(err, "%d bytes at offset %d of a %d-byte buffer on %q", size, offset, b.size, q.device.info.Name)
}

// ReadBuffer copies size bytes of b at offset into dst and returns once the
// data is there.
func (q *Queue) ReadBuffer(b *Buffer, offset, size int, dst []byte) error {
	if err := q.checkRange("ReadBuffer", b, offset, size, len(dst)); err != nil || size == 0 {
		return err
	}
	err := q.t.status(fnEnqueueReadBuffer, q.id, b.id, 1, uintptr(offset), uintptr(size),
		uintptr(unsafe.Pointer(&dst[0])), 0, 0, 0)
	return annotate(err, "%d bytes at offset %d of a %d-byte buffer on %q", size, offset, b.size, q.device.info.Name)
}

// EnqueueWriteBuffer starts copying size bytes of src into b at offset after
// the events in wait, and returns the command's event (release it). src must
// not be modified until the event completes; the queue keeps it alive until
// then.
func (q *Queue) EnqueueWriteBuffer(b *Buffer, offset, size int, src []byte, wait ...*Event) (*Event, error) {
	return q.enqueueTransfer(fnEnqueueWriteBuffer, "EnqueueWriteBuffer", b, offset, size, src, wait)
}

// EnqueueReadBuffer starts copying size bytes of b at offset into dst after
// the events in wait, and returns the command's event (release it). dst holds
// the data once the event completes; the queue keeps it alive until then.
func (q *Queue) EnqueueReadBuffer(b *Buffer, offset, size int, dst []byte, wait ...*Event) (*Event, error) {
	return q.enqueueTransfer(fnEnqueueReadBuffer, "EnqueueReadBuffer", b, offset, size, dst, wait)
}

// enqueueTransfer enqueues a non-blocking read or write, pinning the host
// memory in a hold that owns one reference to the command's event; the
// caller gets a second reference.
func (q *Queue) enqueueTransfer(id fnID, op string, b *Buffer, offset, size int, host []byte, wait []*Event) (*Event, error) {
	if err := q.checkRange(op, b, offset, size, len(host)); err != nil {
		return nil, err
	}
	if size == 0 {
		return nil, fmt.Errorf("opencl: %s: size must be positive", op)
	}
	ids, err := eventIDs(wait)
	if err != nil {
		return nil, err
	}
	n, list := waitList(ids)
	h := newHold(host[:size])
	var ev uintptr
	err = q.t.status(id, q.id, b.id, 0, uintptr(offset), uintptr(size),
		uintptr(unsafe.Pointer(&host[0])), n, list, uintptr(unsafe.Pointer(&ev)))
	if err != nil {
		h.pin.Unpin()
		return nil, annotate(err, "%d bytes at offset %d of a %d-byte buffer on %q", size, offset, b.size, q.device.info.Name)
	}
	if err := q.t.status(fnRetainEvent, ev); err != nil {
		// Without a second reference the hold cannot share the event: wait
		// for the command so that the memory may be let go at once.
		werr := q.t.status(fnWaitForEvents, 1, uintptr(unsafe.Pointer(&ev)))
		q.t.status(fnReleaseEvent, ev)
		h.pin.Unpin()
		return nil, errors.Join(err, werr)
	}
	h.event = ev
	q.addHold(h)
	return &Event{t: q.t, id: ev, what: fmt.Sprintf("%s of %d bytes on %q", op, size, q.device.info.Name)}, nil
}

// CopyBuffer enqueues a copy of size bytes from src at srcOffset to dst at
// dstOffset. The ranges must not overlap when src and dst are the same
// buffer.
func (q *Queue) CopyBuffer(src, dst *Buffer, srcOffset, dstOffset, size int) error {
	if err := q.checkRange("CopyBuffer source", src, srcOffset, size, -1); err != nil {
		return err
	}
	if err := q.checkRange("CopyBuffer destination", dst, dstOffset, size, -1); err != nil {
		return err
	}
	if size == 0 {
		return nil
	}
	err := q.t.status(fnEnqueueCopyBuffer, q.id, src.id, dst.id, uintptr(srcOffset), uintptr(dstOffset), uintptr(size), 0, 0, 0)
	return annotate(err, "%d bytes from offset %d to offset %d on %q", size, srcOffset, dstOffset, q.device.info.Name)
}

// CanFillBuffer reports whether FillBuffer is available: the platform
// implements OpenCL 1.2 or later.
func (q *Queue) CanFillBuffer() bool { return q.t.hasFn(fnEnqueueFillBuffer) }

// FillBuffer enqueues filling size bytes of b at offset with copies of
// pattern, whose length must be 1, 2, 4, …, 128 and divide offset and size.
// It needs OpenCL 1.2.
func (q *Queue) FillBuffer(b *Buffer, pattern []byte, offset, size int) error {
	if err := q.checkRange("FillBuffer", b, offset, size, -1); err != nil {
		return err
	}
	p := len(pattern)
	if p == 0 || p > 128 || p&(p-1) != 0 {
		return fmt.Errorf("opencl: FillBuffer: pattern of %d bytes; want a power of two up to 128", p)
	}
	if offset%p != 0 || size%p != 0 {
		return fmt.Errorf("opencl: FillBuffer: offset %d and size %d must be multiples of the %d-byte pattern", offset, size, p)
	}
	if size == 0 {
		return nil
	}
	// The pattern is copied by the call, so plain call-duration pinning
	// suffices.
	err := q.t.status(fnEnqueueFillBuffer, q.id, b.id, uintptr(unsafe.Pointer(&pattern[0])), uintptr(p),
		uintptr(offset), uintptr(size), 0, 0, 0)
	return annotate(err, "%d bytes at offset %d with a %d-byte pattern on %q", size, offset, p, q.device.info.Name)
}
