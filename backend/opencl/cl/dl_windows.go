//go:build windows

package cl

import "errors"

// dlopen always fails: Tartan does not load OpenCL on Windows yet, so
// discovery reports OpenCL as not available there.
func dlopen(path string) (uintptr, error) {
	return 0, errors.New("loading OpenCL is not supported on Windows")
}

// sym is never reached on Windows since dlopen fails.
func sym(handle uintptr, name string) uintptr { return 0 }
