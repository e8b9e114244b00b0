//go:build !windows

package vk

import (
	"runtime"

	"github.com/ebitengine/purego"
)

// libraryNames are the Vulkan loaders tried, in order.
func libraryNames() []string {
	if runtime.GOOS == "darwin" {
		return []string{"libvulkan.1.dylib", "libvulkan.dylib", "libMoltenVK.dylib",
			"/usr/local/lib/libvulkan.1.dylib", "/usr/local/lib/libMoltenVK.dylib", "/opt/homebrew/lib/libvulkan.1.dylib", "/opt/homebrew/lib/libMoltenVK.dylib"}
	}
	return []string{"libvulkan.so.1", "libvulkan.so"}
}

// dlopen opens a shared library; the handle is never closed (drivers
// commonly misbehave when unloaded).
func dlopen(path string) (uintptr, error) {
	return purego.Dlopen(path, purego.RTLD_LAZY|purego.RTLD_LOCAL)
}

// sym looks a symbol up without failing: zero means absent.
func sym(handle uintptr, name string) uintptr {
	p, err := purego.Dlsym(handle, name)
	if err != nil {
		return 0
	}
	return p
}
