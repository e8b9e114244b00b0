//go:build !windows

package cl

import "github.com/ebitengine/purego"

// dlopenFlags resolves symbols lazily (vendor libraries may carry references
// that are only bound on use) and keeps them out of the global namespace.
const dlopenFlags = purego.RTLD_LAZY | purego.RTLD_LOCAL

// dlopen opens a shared library; the handle is never closed.
func dlopen(path string) (uintptr, error) { return purego.Dlopen(path, dlopenFlags) }

// sym looks a symbol up without failing: zero means absent.
func sym(handle uintptr, name string) uintptr {
	p, err := purego.Dlsym(handle, name)
	if err != nil {
		return 0
	}
	return p
}
