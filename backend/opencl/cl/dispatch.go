package cl

import (
	"fmt"
	"runtime"
	"unsafe"

	"github.com/ebitengine/purego"
)

// fnID names one OpenCL entry point that this package calls. Every call goes
// through a fnTable, which holds one C function pointer per fnID for one
// platform, whichever way the platform was reached.
type fnID int

const (
	fnGetPlatformIDs fnID = iota
	fnGetPlatformInfo
	fnGetDeviceIDs
	fnGetDeviceInfo
	fnCreateContext
	fnReleaseContext
	fnCreateCommandQueue
	fnReleaseCommandQueue
	fnCreateBuffer
	fnReleaseMemObject
	fnCreateProgramWithSource
	fnCreateProgramWithBinary
	fnReleaseProgram
	fnBuildProgram
	fnGetProgramInfo
	fnGetProgramBuildInfo
	fnCreateKernel
	fnReleaseKernel
	fnSetKernelArg
	fnGetKernelInfo
	fnGetKernelWorkGroupInfo
	fnWaitForEvents
	fnGetEventInfo
	fnRetainEvent
	fnReleaseEvent
	fnGetEventProfilingInfo
	fnFlush
	fnFinish
	fnEnqueueReadBuffer
	fnEnqueueWriteBuffer
	fnEnqueueCopyBuffer
	fnEnqueueNDRangeKernel
	fnGetExtensionFunctionAddress
	fnEnqueueFillBuffer
	fnGetExtensionFunctionAddressForPlatform
	numFns
)

// fnSpec describes an entry point: its C name, its position (slot) in the
// Khronos ICD dispatch table struct _cl_icd_dispatch, and the OpenCL version
// (major*10+minor) that introduced it. The slots follow the fixed order of
// that struct: the OpenCL 1.0 entries first (0..74), then Direct3D 10
// sharing, the OpenCL 1.1 entries (81..88), device fission, GL events, and
// the OpenCL 1.2 entries from slot 93.
type fnSpec struct {
	name  string
	slot  int
	since int
}

var fnSpecs = [numFns]fnSpec{
	fnGetPlatformIDs:                         {"clGetPlatformIDs", 0, 10},
	fnGetPlatformInfo:                        {"clGetPlatformInfo", 1, 10},
	fnGetDeviceIDs:                           {"clGetDeviceIDs", 2, 10},
	fnGetDeviceInfo:                          {"clGetDeviceInfo", 3, 10},
	fnCreateContext:                          {"clCreateContext", 4, 10},
	fnReleaseContext:                         {"clReleaseContext", 7, 10},
	fnCreateCommandQueue:                     {"clCreateCommandQueue", 9, 10},
	fnReleaseCommandQueue:                    {"clReleaseCommandQueue", 11, 10},
	fnCreateBuffer:                           {"clCreateBuffer", 14, 10},
	fnReleaseMemObject:                       {"clReleaseMemObject", 18, 10},
	fnCreateProgramWithSource:                {"clCreateProgramWithSource", 26, 10},
	fnCreateProgramWithBinary:                {"clCreateProgramWithBinary", 27, 10},
	fnReleaseProgram:                         {"clReleaseProgram", 29, 10},
	fnBuildProgram:                           {"clBuildProgram", 30, 10},
	fnGetProgramInfo:                         {"clGetProgramInfo", 32, 10},
	fnGetProgramBuildInfo:                    {"clGetProgramBuildInfo", 33, 10},
	fnCreateKernel:                           {"clCreateKernel", 34, 10},
	fnReleaseKernel:                          {"clReleaseKernel", 37, 10},
	fnSetKernelArg:                           {"clSetKernelArg", 38, 10},
	fnGetKernelInfo:                          {"clGetKernelInfo", 39, 10},
	fnGetKernelWorkGroupInfo:                 {"clGetKernelWorkGroupInfo", 40, 10},
	fnWaitForEvents:                          {"clWaitForEvents", 41, 10},
	fnGetEventInfo:                           {"clGetEventInfo", 42, 10},
	fnRetainEvent:                            {"clRetainEvent", 43, 10},
	fnReleaseEvent:                           {"clReleaseEvent", 44, 10},
	fnGetEventProfilingInfo:                  {"clGetEventProfilingInfo", 45, 10},
	fnFlush:                                  {"clFlush", 46, 10},
	fnFinish:                                 {"clFinish", 47, 10},
	fnEnqueueReadBuffer:                      {"clEnqueueReadBuffer", 48, 10},
	fnEnqueueWriteBuffer:                     {"clEnqueueWriteBuffer", 49, 10},
	fnEnqueueCopyBuffer:                      {"clEnqueueCopyBuffer", 50, 10},
	fnEnqueueNDRangeKernel:                   {"clEnqueueNDRangeKernel", 59, 10},
	fnGetExtensionFunctionAddress:            {"clGetExtensionFunctionAddress", 65, 10},
	fnEnqueueFillBuffer:                      {"clEnqueueFillBuffer", 102, 12},
	fnGetExtensionFunctionAddressForPlatform: {"clGetExtensionFunctionAddressForPlatform", 107, 12},
}

// icd2Tag is the value an ICD that implements cl_khr_icd 2.0 loader-managed
// dispatch stores in the first slot of its objects' dispatch table instead
// of a clGetPlatformIDs pointer ("OPENCL31" in ASCII). Such a vendor's
// function pointers are obtained by name with
// clIcdGetFunctionAddressForPlatformKHR rather than read from the table.
const icd2Tag = 0x4F50454E434C3331

// Dispatch modes say how a platform's fnTable was filled.
const (
	// ModeExports: the library exports the OpenCL API by name (an ICD loader
	// or a runtime such as macOS's framework).
	ModeExports = "exported symbols"
	// ModeDispatch: a vendor ICD library reached directly; every pointer is
	// read from the KHR ICD dispatch table that the platform object points to.
	ModeDispatch = "ICD dispatch table"
	// ModeICD2: a vendor ICD that tags its dispatch table (cl_khr_icd 2.0);
	// pointers are looked up by name with clIcdGetFunctionAddressForPlatformKHR.
	ModeICD2 = "ICD function lookup"
)

// fnTable holds the C entry points used for one platform and every object
// created from it. It is immutable once built and safe for concurrent use.
type fnTable struct {
	ptr     [numFns]uintptr
	mode    string
	library string
	// platformName is used in "not available" messages.
	platformName string
	version      int
}

// hasFn reports whether the entry point is available on this platform.
func (t *fnTable) hasFn(id fnID) bool { return t.ptr[id] != 0 }

// missing returns the error for an entry point the platform does not offer.
func (t *fnTable) missing(id fnID) error {
	s := fnSpecs[id]
	return fmt.Errorf("opencl: %s is not available on platform %q (OpenCL %d.%d, via %s %s); it needs OpenCL %d.%d",
		s.name, t.platformName, t.version/10, t.version%10, t.mode, t.library, s.since/10, s.since%10)
}

// call invokes entry point id with the given arguments and returns the raw
// result register. Pointer arguments written as uintptr(unsafe.Pointer(p))
// directly in the call are kept alive and in place until the C function
// returns.
//
//go:uintptrescapes
func (t *fnTable) call(id fnID, args ...uintptr) (uintptr, error) {
	p := t.ptr[id]
	if p == 0 {
		return 0, t.missing(id)
	}
	r, _, _ := purego.SyscallN(p, args...)
	return r, nil
}

// status invokes an entry point that returns a cl_int status and converts a
// failure into an *Error naming the entry point.
//
//go:uintptrescapes
func (t *fnTable) status(id fnID, args ...uintptr) error {
	r, err := t.call(id, args...)
	if err != nil {
		return err
	}
	return newError(fnSpecs[id].name, int32(r))
}

// create invokes an entry point that returns an object and reports its status
// through a trailing cl_int* argument, which create supplies itself. A zero
// object with a success status is reported as CL_INVALID_VALUE rather than
// returned as a valid handle.
//
//go:uintptrescapes
func (t *fnTable) create(id fnID, args ...uintptr) (uintptr, error) {
	// The status word must stay put while C writes it: pinning also moves it
	// to the heap.
	code := new(int32)
	var pin runtime.Pinner
	pin.Pin(code)
	defer pin.Unpin()
	all := append(args, uintptr(unsafe.Pointer(code)))
	r, err := t.call(id, all...)
	if err != nil {
		return 0, err
	}
	if *code != Success {
		return 0, newError(fnSpecs[id].name, *code)
	}
	if r == 0 {
		return 0, newError(fnSpecs[id].name, InvalidValue)
	}
	return r, nil
}

// peekWord reads one pointer-sized word of C memory at addr.
func peekWord(addr uintptr) uintptr {
	return *(*uintptr)(unsafe.Add(nil, addr))
}

// dispatchTableOf returns the address of the ICD dispatch table of an OpenCL
// object: every object of an ICD-capable implementation begins with a pointer
// to it.
func dispatchTableOf(object uintptr) uintptr { return peekWord(object) }

// exportsTable fills a table from the symbols a library exports by name.
// Missing symbols leave zero entries (optional entry points are looked up
// with Dlsym so that a missing one never panics).
func exportsTable(handle uintptr, library string) *fnTable {
	t := &fnTable{mode: ModeExports, library: library}
	for id := range numFns {
		t.ptr[id] = sym(handle, fnSpecs[id].name)
	}
	return t
}

// forPlatform returns a copy of a library-wide table for one platform,
// dropping the entry points newer than the platform's OpenCL version: an ICD
// loader exports them all but would forward the call into a vendor table
// that may not have the slot.
func (t *fnTable) forPlatform(name string, version int) *fnTable {
	c := *t
	c.platformName = name
	c.version = version
	for id := range numFns {
		if fnSpecs[id].since > version {
			c.ptr[id] = 0
		}
	}
	return &c
}

// dispatchTable builds the table of a platform reached through a vendor ICD
// library: from the object's dispatch table, or, for a cl_khr_icd 2.0 vendor
// whose table is tagged, by name through lookup (which may be zero when the
// vendor offers no clIcdGetFunctionAddressForPlatformKHR). Only the slots the
// platform's OpenCL version guarantees are read, so a short table from an old
// runtime is never read past its end.
func dispatchTable(platform uintptr, library string, lookup uintptr) (*fnTable, error) {
	table := dispatchTableOf(platform)
	if table == 0 {
		return nil, fmt.Errorf("opencl: platform object %#x from %s has no ICD dispatch table", platform, library)
	}
	slot := func(i int) uintptr { return peekWord(table + uintptr(i)*unsafe.Sizeof(uintptr(0))) }
	t := &fnTable{library: library}
	if slot(0) == icd2Tag {
		if lookup == 0 {
			return nil, fmt.Errorf("opencl: %s uses cl_khr_icd 2.0 dispatch but offers no clIcdGetFunctionAddressForPlatformKHR", library)
		}
		t.mode = ModeICD2
		for id := range numFns {
			name := cString(fnSpecs[id].name)
			r, _, _ := purego.SyscallN(lookup, platform, uintptr(unsafe.Pointer(&name[0])))
			t.ptr[id] = r
		}
	} else {
		t.mode = ModeDispatch
		// Slot 1 (clGetPlatformInfo) exists in every version; use it to learn
		// the version before reading slots that only newer tables hold.
		t.ptr[fnGetPlatformInfo] = slot(fnSpecs[fnGetPlatformInfo].slot)
	}
	if t.ptr[fnGetPlatformInfo] == 0 {
		return nil, fmt.Errorf("opencl: platform object %#x from %s has no clGetPlatformInfo entry", platform, library)
	}
	ver, err := platformString(t, platform, platformVersion)
	if err != nil {
		return nil, err
	}
	version := parseVersion(ver)
	if t.mode == ModeDispatch {
		for id := range numFns {
			if fnSpecs[id].since <= version {
				t.ptr[id] = slot(fnSpecs[id].slot)
			}
		}
	}
	name, _ := platformString(t, platform, platformName)
	return t.forPlatform(name, version), nil
}
