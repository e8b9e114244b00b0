package vk

import (
	"fmt"
	"sync"
)

// loader is the opened Vulkan loader and its global entry points.
type loader struct {
	path                 string
	getInstanceProcAddr  uintptr
	createInstance       uintptr
	enumInstanceExts     uintptr
	enumerateInstanceVer uintptr // absent in 1.0 loaders
}

var (
	loadOnce sync.Once
	loaded   *loader
	loadErr  error
)

// load opens the Vulkan loader once per process.
func load() (*loader, error) {
	loadOnce.Do(func() { loaded, loadErr = openLoader(libraryNames()) })
	return loaded, loadErr
}

// openLoader opens the first of names that is a Vulkan loader.
func openLoader(names []string) (*loader, error) {
	var tried []string
	for _, n := range names {
		h, err := dlopen(n)
		if err != nil {
			tried = append(tried, fmt.Sprintf("%s: %v", n, err))
			continue
		}
		gipa := sym(h, "vkGetInstanceProcAddr")
		if gipa == 0 {
			tried = append(tried, n+": no vkGetInstanceProcAddr")
			continue
		}
		l := &loader{path: n, getInstanceProcAddr: gipa}
		l.createInstance = l.instanceProc(0, "vkCreateInstance")
		l.enumInstanceExts = l.instanceProc(0, "vkEnumerateInstanceExtensionProperties")
		l.enumerateInstanceVer = l.instanceProc(0, "vkEnumerateInstanceVersion")
		if l.createInstance == 0 || l.enumInstanceExts == 0 {
			tried = append(tried, n+": vkGetInstanceProcAddr knows no vkCreateInstance")
			continue
		}
		return l, nil
	}
	return nil, &NotAvailableError{Tried: tried, Reason: "no Vulkan loader could be opened"}
}

// instanceProc returns vkGetInstanceProcAddr(instance, name), or 0.
func (l *loader) instanceProc(instance InstanceHandle, name string) uintptr {
	var ps pins
	defer ps.done()
	return callRaw(l.getInstanceProcAddr, uintptr(instance), ps.cstr(name))
}
