package cl

import (
	"fmt"
	"unsafe"

	"github.com/ebitengine/purego"
)

// Library is one opened OpenCL shared library: an ICD loader, a runtime that
// exports the API by name, or a vendor ICD library reached directly. A
// library is never closed: drivers commonly misbehave when unloaded, and the
// platforms it yields stay valid for the life of the process.
type Library struct {
	path   string
	handle uintptr
	// exports is non-nil when the library exports the OpenCL API by name and
	// is used that way.
	exports *fnTable
	// icdGetPlatformIDs is clIcdGetPlatformIDsKHR when the library is used as
	// a vendor ICD; icdLookup is its clIcdGetFunctionAddressForPlatformKHR,
	// or zero.
	icdGetPlatformIDs uintptr
	icdLookup         uintptr
}

// OpenLibrary opens an OpenCL library by file name or path. If the library
// exports clGetPlatformIDs (an ICD loader, or a runtime such as macOS's
// framework), its exported symbols are used; otherwise it must be a vendor
// ICD library, which is used through clIcdGetPlatformIDsKHR and the ICD
// dispatch table, as OpenVendorLibrary does.
func OpenLibrary(path string) (*Library, error) {
	h, err := dlopen(path)
	if err != nil {
		return nil, fmt.Errorf("opencl: dlopen: %v", err)
	}
	l := &Library{path: path, handle: h}
	if sym(h, "clGetPlatformIDs") != 0 && sym(h, "clGetDeviceIDs") != 0 {
		l.exports = exportsTable(h, path)
		return l, nil
	}
	if err := l.findICDEntry(); err != nil {
		return nil, err
	}
	return l, nil
}

// OpenVendorLibrary opens a vendor ICD library (such as NVIDIA's
// libnvidia-opencl.so.1) without an ICD loader: its platforms are listed with
// clIcdGetPlatformIDsKHR and every later call goes through the dispatch table
// of the platform's objects, even when the library also exports the API by
// name.
func OpenVendorLibrary(path string) (*Library, error) {
	h, err := dlopen(path)
	if err != nil {
		return nil, fmt.Errorf("opencl: dlopen: %v", err)
	}
	l := &Library{path: path, handle: h}
	if err := l.findICDEntry(); err != nil {
		return nil, err
	}
	return l, nil
}

// findICDEntry locates clIcdGetPlatformIDsKHR: exported by name, or through
// the library's clGetExtensionFunctionAddress, which is how ICD loaders find
// it and the only way for some vendors (PoCL exports nothing else).
func (l *Library) findICDEntry() error {
	l.icdGetPlatformIDs = l.extensionFunction("clIcdGetPlatformIDsKHR")
	if l.icdGetPlatformIDs == 0 {
		return fmt.Errorf("opencl: %s is not an OpenCL ICD: it exports neither clGetPlatformIDs nor clIcdGetPlatformIDsKHR, and its clGetExtensionFunctionAddress (if any) does not know clIcdGetPlatformIDsKHR", l.path)
	}
	l.icdLookup = l.extensionFunction("clIcdGetFunctionAddressForPlatformKHR")
	return nil
}

// extensionFunction returns the address of a function the library exports
// by name or hands out from clGetExtensionFunctionAddress, or zero.
func (l *Library) extensionFunction(name string) uintptr {
	if p := sym(l.handle, name); p != 0 {
		return p
	}
	gefa := sym(l.handle, "clGetExtensionFunctionAddress")
	if gefa == 0 {
		return 0
	}
	c := cString(name)
	r, _, _ := purego.SyscallN(gefa, uintptr(unsafe.Pointer(&c[0])))
	return r
}

// Path returns the name or path the library was opened with.
func (l *Library) Path() string { return l.path }

// Mode returns how the library's platforms are called: ModeExports, or
// ModeDispatch for a vendor ICD (whose platforms may individually report
// ModeICD2).
func (l *Library) Mode() string {
	if l.exports != nil {
		return ModeExports
	}
	return ModeDispatch
}

// Platforms lists the library's platforms. An implementation reporting
// CL_PLATFORM_NOT_FOUND_KHR (an ICD loader with no registered vendor) yields
// an empty list, not an error.
func (l *Library) Platforms() ([]*Platform, error) {
	var ids []uintptr
	var err error
	if l.exports != nil {
		ids, err = listPlatformIDs(l.path, "clGetPlatformIDs", l.exports.ptr[fnGetPlatformIDs])
	} else {
		ids, err = listPlatformIDs(l.path, "clIcdGetPlatformIDsKHR", l.icdGetPlatformIDs)
	}
	if err != nil {
		return nil, err
	}
	out := make([]*Platform, 0, len(ids))
	for _, id := range ids {
		var t *fnTable
		if l.exports != nil {
			name, err := platformString(l.exports, id, platformName)
			if err != nil {
				return nil, annotate(err, "platform name from %s", l.path)
			}
			ver, err := platformString(l.exports, id, platformVersion)
			if err != nil {
				return nil, annotate(err, "platform version from %s", l.path)
			}
			t = l.exports.forPlatform(name, parseVersion(ver))
		} else {
			t, err = dispatchTable(id, l.path, l.icdLookup)
			if err != nil {
				return nil, err
			}
		}
		p, err := newPlatform(t, id)
		if err != nil {
			return nil, annotate(err, "platform from %s", l.path)
		}
		out = append(out, p)
	}
	return out, nil
}

// listPlatformIDs calls a clGetPlatformIDs-shaped function twice: for the
// count and for the handles.
func listPlatformIDs(path, name string, fn uintptr) ([]uintptr, error) {
	if fn == 0 {
		return nil, fmt.Errorf("opencl: %s has no %s", path, name)
	}
	var n uint32
	r, _, _ := purego.SyscallN(fn, 0, 0, uintptr(unsafe.Pointer(&n)))
	if code := int32(r); code == PlatformNotFoundKHR || (code == Success && n == 0) {
		return nil, nil
	} else if code != Success {
		return nil, annotate(newError(name, code), "counting platforms in %s", path)
	}
	if n > 1024 {
		return nil, fmt.Errorf("opencl: %s in %s reported %d platforms", name, path, n)
	}
	ids := make([]uintptr, n)
	r, _, _ = purego.SyscallN(fn, uintptr(n), uintptr(unsafe.Pointer(&ids[0])), uintptr(unsafe.Pointer(&n)))
	if code := int32(r); code != Success {
		return nil, annotate(newError(name, code), "listing platforms in %s", path)
	}
	return ids[:min(int(n), len(ids))], nil
}
