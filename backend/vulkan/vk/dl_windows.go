//go:build windows

package vk

import "syscall"

// libraryNames are the Vulkan loaders tried, in order.
func libraryNames() []string { return []string{"vulkan-1.dll"} }

// dlopen loads a DLL; the handle is never released.
func dlopen(path string) (uintptr, error) {
	h, err := syscall.LoadLibrary(path)
	return uintptr(h), err
}

// sym looks a symbol up without failing: zero means absent.
func sym(handle uintptr, name string) uintptr {
	p, err := syscall.GetProcAddress(syscall.Handle(handle), name)
	if err != nil {
		return 0
	}
	return p
}
