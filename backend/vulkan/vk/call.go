package vk

import (
	"runtime"
	"unsafe"

	"github.com/ebitengine/purego"
)

// callRaw invokes a C function and returns its integer or pointer result.
//
//go:uintptrescapes
func callRaw(fn uintptr, args ...uintptr) uintptr {
	r, _, _ := purego.SyscallN(fn, args...)
	return r
}

// call invokes a Vulkan entry point and returns its VkResult (meaningless
// for void functions).
//
//go:uintptrescapes
func call(fn uintptr, args ...uintptr) Result { return Result(int32(callRaw(fn, args...))) }

// pins holds the Go memory one call hands the driver: every pointer given
// to C, directly or inside a structure, is pinned until done.
type pins struct{ p runtime.Pinner }

// ptr pins *x and returns its address.
func ptr[T any](ps *pins, x *T) uintptr {
	if x == nil {
		return 0
	}
	ps.p.Pin(x)
	return uintptr(unsafe.Pointer(x))
}

// slice pins the elements of s and returns the address of the first, or 0
// for an empty slice.
func slice[T any](ps *pins, s []T) uintptr {
	if len(s) == 0 {
		return 0
	}
	return ptr(ps, &s[0])
}

// cstr returns the pinned address of a NUL-terminated copy of s.
func (ps *pins) cstr(s string) uintptr {
	b := make([]byte, len(s)+1)
	copy(b, s)
	return slice(ps, b)
}

// cstrs returns the pinned address of an array of C strings.
func (ps *pins) cstrs(ss []string) uintptr {
	if len(ss) == 0 {
		return 0
	}
	a := make([]uintptr, len(ss))
	for i, s := range ss {
		a[i] = ps.cstr(s)
	}
	return slice(ps, a)
}

func (ps *pins) done() { ps.p.Unpin() }

// goString returns the NUL-terminated string at the start of b.
func goString(b []byte) string {
	for i, c := range b {
		if c == 0 {
			return string(b[:i])
		}
	}
	return string(b)
}

// bool32 converts a VkBool32.
func bool32(v uint32) bool { return v != 0 }
