package cl

import (
	"runtime"
	"unsafe"
)

// cString returns s as a NUL-terminated byte slice allocated by Go. Pass
// &b[0] directly in a call argument so it stays in place for the call.
func cString(s string) []byte {
	b := make([]byte, len(s)+1)
	copy(b, s)
	return b
}

// pointerArray is a C array of pointers (const char**, const unsigned
// char**) built in Go memory. The arrays it points to are pinned so that the
// runtime neither moves nor frees them while C reads or writes them; call
// Release once the C call has returned.
type pointerArray struct {
	ptrs []uintptr
	keep [][]byte
	pin  runtime.Pinner
}

// newPointerArray pins every non-empty slice of items and records its address.
// An empty slice is recorded as a NULL pointer.
func newPointerArray(items [][]byte) *pointerArray {
	a := &pointerArray{ptrs: make([]uintptr, max(len(items), 1)), keep: items}
	a.pin.Pin(&a.ptrs[0])
	for i, it := range items {
		if len(it) == 0 {
			continue
		}
		a.pin.Pin(&it[0])
		a.ptrs[i] = uintptr(unsafe.Pointer(&it[0]))
	}
	return a
}

// addr returns the address of the first pointer, for use as a C argument.
func (a *pointerArray) addr() uintptr { return uintptr(unsafe.Pointer(&a.ptrs[0])) }

// Release unpins everything.
func (a *pointerArray) Release() {
	a.pin.Unpin()
	runtime.KeepAlive(a.keep)
}
