package cl

import (
	"errors"
	"fmt"
	"unsafe"
)

// Program is an OpenCL program of a context: created from OpenCL C source or
// from a binary, then built for the context's devices.
type Program struct {
	ctx *Context
	t   *fnTable
	id  uintptr
}

// NewProgramFromSource creates a program from OpenCL C source. Build it
// before creating kernels.
func (c *Context) NewProgramFromSource(source string) (*Program, error) {
	if source == "" {
		return nil, errors.New("opencl: NewProgramFromSource: empty source")
	}
	strs := newPointerArray([][]byte{[]byte(source)})
	defer strs.Release()
	lengths := []uintptr{uintptr(len(source))}
	id, err := c.t.create(fnCreateProgramWithSource, c.id, 1, strs.addr(), uintptr(unsafe.Pointer(&lengths[0])))
	if err != nil {
		return nil, annotate(err, "%d bytes of source", len(source))
	}
	return &Program{ctx: c, t: c.t, id: id}, nil
}

// NewProgramFromBinary creates a program for device d from a binary that
// Program.Binary returned earlier for the same device and driver. Build it
// before creating kernels (which is quick for an executable binary). A binary
// the driver rejects gives an error with code CL_INVALID_BINARY.
func (c *Context) NewProgramFromBinary(d *Device, binary []byte) (*Program, error) {
	if !c.has(d) {
		return nil, fmt.Errorf("opencl: NewProgramFromBinary: device %v is not in the context", d)
	}
	if len(binary) == 0 {
		return nil, errors.New("opencl: NewProgramFromBinary: empty binary")
	}
	bins := newPointerArray([][]byte{binary})
	defer bins.Release()
	lengths := []uintptr{uintptr(len(binary))}
	devs := []uintptr{d.id}
	var binStatus int32
	id, err := c.t.create(fnCreateProgramWithBinary, c.id, 1, uintptr(unsafe.Pointer(&devs[0])),
		uintptr(unsafe.Pointer(&lengths[0])), bins.addr(), uintptr(unsafe.Pointer(&binStatus)))
	if err == nil && binStatus != Success {
		c.t.status(fnReleaseProgram, id)
		err = newError(fnSpecs[fnCreateProgramWithBinary].name, binStatus)
	}
	if err != nil {
		return nil, annotate(err, "%d-byte binary for %q", len(binary), d.info.Name)
	}
	return &Program{ctx: c, t: c.t, id: id}, nil
}

// Build compiles and links the program for every device of its context with
// the given compiler options (such as "-cl-fast-relaxed-math"). On failure
// the error is a *BuildError carrying each device's build log.
func (p *Program) Build(options string) error {
	opts := cString(options)
	err := p.t.status(fnBuildProgram, p.id, 0, 0, uintptr(unsafe.Pointer(&opts[0])), 0, 0)
	if err == nil {
		return nil
	}
	var e *Error
	if !errors.As(err, &e) {
		return err
	}
	if options != "" {
		e.Detail = fmt.Sprintf("options %q", options)
	}
	be := &BuildError{Err: e}
	for _, d := range p.ctx.devices {
		log, lerr := p.BuildLog(d)
		if lerr != nil {
			log = fmt.Sprintf("(build log unavailable: %v)", lerr)
		}
		be.Logs = append(be.Logs, DeviceLog{Device: d.info.Name, Log: log})
	}
	return be
}

// BuildLog returns the compiler output of the last build for device d.
func (p *Program) BuildLog(d *Device) (string, error) {
	if !p.ctx.has(d) {
		return "", fmt.Errorf("opencl: BuildLog: device %v is not in the program's context", d)
	}
	b, err := queryInfo(p.t, fnGetProgramBuildInfo, []uintptr{p.id, d.id}, programBuildLog)
	if err != nil {
		return "", annotate(err, "build log for %q", d.info.Name)
	}
	return cStringFrom(b), nil
}

// ProgramBinary is the compiled program of one device.
type ProgramBinary struct {
	Device *Device
	Data   []byte
}

// Binaries returns the built program's binary for each of its devices, for
// caching: NewProgramFromBinary turns one back into a program. A device the
// program was not built for has an empty binary.
func (p *Program) Binaries() ([]ProgramBinary, error) {
	devBytes, err := queryInfo(p.t, fnGetProgramInfo, []uintptr{p.id}, programDevices)
	if err != nil {
		return nil, annotate(err, "program devices")
	}
	devIDs := decodeHandles(devBytes)
	sizeBytes, err := queryInfo(p.t, fnGetProgramInfo, []uintptr{p.id}, programBinarySizes)
	if err != nil {
		return nil, annotate(err, "program binary sizes")
	}
	sizes := decodeSizes(sizeBytes)
	if len(sizes) != len(devIDs) {
		return nil, fmt.Errorf("opencl: clGetProgramInfo: %d binary sizes for %d devices", len(sizes), len(devIDs))
	}
	if len(devIDs) == 0 {
		return nil, nil
	}
	bufs := make([][]byte, len(sizes))
	for i, n := range sizes {
		if n < 0 || n > maxInfoBytes {
			return nil, fmt.Errorf("opencl: clGetProgramInfo: binary of %d bytes", n)
		}
		bufs[i] = make([]byte, n)
	}
	// CL_PROGRAM_BINARIES fills caller-allocated buffers through an array of
	// pointers; entries for empty binaries are NULL and left alone.
	arr := newPointerArray(bufs)
	defer arr.Release()
	err = p.t.status(fnGetProgramInfo, p.id, uintptr(programBinaries),
		uintptr(len(arr.ptrs))*unsafe.Sizeof(uintptr(0)), arr.addr(), 0)
	if err != nil {
		return nil, annotate(err, "program binaries")
	}
	out := make([]ProgramBinary, len(devIDs))
	for i, id := range devIDs {
		out[i] = ProgramBinary{Device: p.ctx.device(id), Data: bufs[i]}
	}
	return out, nil
}

// Binary returns the built program's binary for device d.
func (p *Program) Binary(d *Device) ([]byte, error) {
	bins, err := p.Binaries()
	if err != nil {
		return nil, err
	}
	for _, b := range bins {
		if b.Device == d {
			if len(b.Data) == 0 {
				return nil, fmt.Errorf("opencl: program has no binary for %q (not built for it?)", d.info.Name)
			}
			return b.Data, nil
		}
	}
	return nil, fmt.Errorf("opencl: device %v is not one of the program's devices", d)
}

// Release releases the program. Releasing twice is a no-op.
func (p *Program) Release() error {
	if p.id == 0 {
		return nil
	}
	err := p.t.status(fnReleaseProgram, p.id)
	p.id = 0
	return err
}
