package cl

import (
	"errors"
	"fmt"
	"sync"
	"unsafe"
)

// Context is an OpenCL context over one or more devices of one platform.
// Release it when done; objects created from it hold their own references,
// so releasing it early is safe.
type Context struct {
	t        *fnTable
	id       uintptr
	platform *Platform
	devices  []*Device
}

// NewContext creates a context over the given devices, which must all belong
// to the same platform.
func NewContext(devices ...*Device) (*Context, error) {
	if len(devices) == 0 {
		return nil, errors.New("opencl: NewContext needs at least one device")
	}
	p := devices[0].platform
	ids := make([]uintptr, len(devices))
	for i, d := range devices {
		if d == nil {
			return nil, fmt.Errorf("opencl: NewContext: device %d is nil", i)
		}
		if d.platform != p {
			return nil, fmt.Errorf("opencl: NewContext: device %q is on platform %q, device %q on %q",
				d.info.Name, d.platform.Name, devices[0].info.Name, p.Name)
		}
		ids[i] = d.id
	}
	// cl_context_properties: {CL_CONTEXT_PLATFORM, platform, 0}.
	props := []uintptr{contextPlatform, p.id, 0}
	id, err := p.t.create(fnCreateContext,
		uintptr(unsafe.Pointer(&props[0])), uintptr(len(ids)), uintptr(unsafe.Pointer(&ids[0])), 0, 0)
	if err != nil {
		return nil, annotate(err, "devices %s", deviceNames(devices))
	}
	return &Context{t: p.t, id: id, platform: p, devices: append([]*Device(nil), devices...)}, nil
}

// deviceNames lists device names for messages.
func deviceNames(ds []*Device) string {
	s := make([]string, len(ds))
	for i, d := range ds {
		s[i] = fmt.Sprintf("%q", d.info.Name)
	}
	return fmt.Sprint(s)
}

// Platform returns the context's platform.
func (c *Context) Platform() *Platform { return c.platform }

// Devices returns the context's devices in creation order.
func (c *Context) Devices() []*Device { return append([]*Device(nil), c.devices...) }

// device finds a context device by handle.
func (c *Context) device(id uintptr) *Device {
	for _, d := range c.devices {
		if d.id == id {
			return d
		}
	}
	return nil
}

// has reports whether d is one of the context's devices.
func (c *Context) has(d *Device) bool { return d != nil && c.device(d.id) == d }

// Release releases the context. Releasing twice is a no-op.
func (c *Context) Release() error {
	if c.id == 0 {
		return nil
	}
	err := c.t.status(fnReleaseContext, c.id)
	c.id = 0
	return err
}

// QueueProperties are cl_command_queue_properties. Only profiling is
// offered: queues of this package execute in order.
type QueueProperties uint64

// QueueProfiling enables Event.Profile on the queue's commands.
const QueueProfiling QueueProperties = 1 << 1

// Queue is an in-order command queue on one device. Its methods may be
// called from several goroutines. Host memory given to a non-blocking
// transfer is held (pinned) by the queue until the transfer completes.
type Queue struct {
	ctx    *Context
	t      *fnTable
	id     uintptr
	device *Device

	mu    sync.Mutex
	holds []*hostHold
}

// NewQueue creates an in-order command queue on d, which must be one of the
// context's devices.
func (c *Context) NewQueue(d *Device, props QueueProperties) (*Queue, error) {
	if !c.has(d) {
		return nil, fmt.Errorf("opencl: NewQueue: device %v is not in the context", d)
	}
	if props&^QueueProfiling != 0 {
		return nil, fmt.Errorf("opencl: NewQueue: unsupported queue properties %#x (only QueueProfiling)", uint64(props))
	}
	id, err := c.t.create(fnCreateCommandQueue, c.id, d.id, uintptr(props))
	if err != nil {
		return nil, annotate(err, "device %q", d.info.Name)
	}
	return &Queue{ctx: c, t: c.t, id: id, device: d}, nil
}

// Device returns the queue's device.
func (q *Queue) Device() *Device { return q.device }

// Context returns the queue's context.
func (q *Queue) Context() *Context { return q.ctx }

// Flush submits every queued command to the device without waiting.
func (q *Queue) Flush() error {
	return annotate(q.t.status(fnFlush, q.id), "queue on %q", q.device.info.Name)
}

// Finish waits until every queued command has completed, then lets go of
// the host memory held for non-blocking transfers.
func (q *Queue) Finish() error {
	err := annotate(q.t.status(fnFinish, q.id), "queue on %q", q.device.info.Name)
	if err == nil {
		// Held memory is let go only once the commands are known complete.
		q.releaseHolds(true)
	}
	return err
}

// Release waits for the queue's commands to finish and releases it.
// Releasing twice is a no-op.
func (q *Queue) Release() error {
	if q.id == 0 {
		return nil
	}
	err := q.Finish()
	if e := q.t.status(fnReleaseCommandQueue, q.id); err == nil {
		err = e
	}
	q.id = 0
	return err
}
