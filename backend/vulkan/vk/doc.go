// Package vk is Tartan's thin binding of the Vulkan API for compute, over
// purego (no cgo): the Vulkan loader (libvulkan.so.1, vulkan-1.dll,
// libvulkan.1.dylib or MoltenVK) is opened at run time, and a machine
// without it gets a NotAvailableError naming what was tried.
//
// The binding covers what a compute runtime needs and nothing else: an
// instance, physical devices with their properties, features, extensions,
// memory types and queue families, a logical device with one compute
// queue, buffers and their memory, shader modules, descriptor sets of
// storage buffers, pipeline layouts with a push-constant range, compute
// pipelines and a pipeline cache, command pools and buffers (dispatch,
// barriers, copies, fills), submission and fences.
//
// C structures are declared as Go structures with the C layout of 64-bit
// platforms (pointers and size_t as uintptr, VkDeviceSize and
// non-dispatchable handles as uint64, enums, flags and VkBool32 as
// uint32); layout_test.go checks their sizes and offsets against the
// Vulkan headers' figures. Pointers the driver reads during a call are
// pinned for that call (runtime.Pinner); the driver keeps no Go memory.
//
// Failures are *Error values naming the entry point and the VkResult, such
// as VK_ERROR_OUT_OF_DEVICE_MEMORY.
package vk
