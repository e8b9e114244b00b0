package vk

import (
	"fmt"
	"slices"
)

// Instance is a VkInstance with its instance-level entry points.
type Instance struct {
	h          InstanceHandle
	l          *loader
	APIVersion uint32 // the version the instance was created for
	// Portability reports that VK_KHR_portability_enumeration was enabled,
	// so that portability drivers (MoltenVK) are listed too.
	Portability bool

	destroy, enumPhysical, getProps, getProps2, getFeatures2, getMemProps,
	getQueueFamilies, enumDeviceExts, createDevice, getDeviceProcAddr, getCoopMatProps uintptr
}

// MinAPIVersion is the least Vulkan version the binding works with: 1.1,
// which made properties2, features2, sub-group properties and 16-bit
// storage core.
var MinAPIVersion = MakeAPIVersion(1, 1, 0)

// LoaderPath returns the Vulkan loader the process opened, or an error
// saying why none could be.
func LoaderPath() (string, error) {
	l, err := load()
	if err != nil {
		return "", err
	}
	return l.path, nil
}

// NewInstance creates a Vulkan instance for API 1.1 up to 1.3 (as much of
// it as the loader supports), enabling VK_KHR_portability_enumeration
// when the loader offers it. Without a usable loader the error matches
// ErrNotAvailable.
func NewInstance(appName string) (*Instance, error) {
	l, err := load()
	if err != nil {
		return nil, err
	}
	return l.newInstance(appName)
}

func (l *loader) newInstance(appName string) (*Instance, error) {
	version := MakeAPIVersion(1, 0, 0)
	if l.enumerateInstanceVer != 0 {
		var v uint32
		var ps pins
		r := call(l.enumerateInstanceVer, ptr(&ps, &v))
		ps.done()
		if r == Success {
			version = v
		}
	}
	if version < MinAPIVersion {
		return nil, &NotAvailableError{Tried: []string{l.path}, Reason: fmt.Sprintf("the Vulkan loader supports API %s, and Tartan needs 1.1 or later", APIVersionString(version))}
	}
	api := min(version&^0xfff, MakeAPIVersion(1, 3, 0))
	exts, err := l.instanceExtensions()
	if err != nil {
		return nil, err
	}
	var enable []string
	flags := uint32(0)
	portability := slices.Contains(exts, "VK_KHR_portability_enumeration")
	if portability {
		enable = append(enable, "VK_KHR_portability_enumeration")
		flags |= instanceCreateEnumeratePortability
	}
	var ps pins
	defer ps.done()
	app := applicationInfo{sType: stApplicationInfo, pApplicationName: ps.cstr(appName), applicationVersion: 1,
		pEngineName: ps.cstr("Tartan"), engineVersion: 1, apiVersion: api}
	ci := instanceCreateInfo{sType: stInstanceCreateInfo, flags: flags, pApplicationInfo: ptr(&ps, &app),
		enabledExtensionCount: uint32(len(enable)), ppEnabledExtensionNames: ps.cstrs(enable)}
	var h InstanceHandle
	if r := call(l.createInstance, ptr(&ps, &ci), 0, ptr(&ps, &h)); r != Success {
		if r == ErrIncompatibleDriver {
			return nil, &NotAvailableError{Tried: []string{l.path}, Reason: "vkCreateInstance found no compatible driver (VK_ERROR_INCOMPATIBLE_DRIVER)"}
		}
		return nil, &Error{Op: "vkCreateInstance", Result: r, Detail: "API " + APIVersionString(api)}
	}
	in := &Instance{h: h, l: l, APIVersion: api, Portability: portability}
	fns := []struct {
		p    *uintptr
		name string
	}{
		{&in.destroy, "vkDestroyInstance"},
		{&in.enumPhysical, "vkEnumeratePhysicalDevices"},
		{&in.getProps, "vkGetPhysicalDeviceProperties"},
		{&in.getProps2, "vkGetPhysicalDeviceProperties2"},
		{&in.getFeatures2, "vkGetPhysicalDeviceFeatures2"},
		{&in.getMemProps, "vkGetPhysicalDeviceMemoryProperties"},
		{&in.getQueueFamilies, "vkGetPhysicalDeviceQueueFamilyProperties"},
		{&in.enumDeviceExts, "vkEnumerateDeviceExtensionProperties"},
		{&in.createDevice, "vkCreateDevice"},
		{&in.getDeviceProcAddr, "vkGetDeviceProcAddr"},
	}
	for _, f := range fns {
		if *f.p = l.instanceProc(h, f.name); *f.p == 0 {
			if in.destroy != 0 {
				call(in.destroy, uintptr(h), 0)
			}
			return nil, &NotAvailableError{Tried: []string{l.path}, Reason: "the Vulkan instance has no " + f.name}
		}
	}
	in.getCoopMatProps = l.instanceProc(h, "vkGetPhysicalDeviceCooperativeMatrixPropertiesKHR")
	return in, nil
}

// instanceExtensions lists the loader's instance extensions.
func (l *loader) instanceExtensions() ([]string, error) {
	return enumerateExtensions("vkEnumerateInstanceExtensionProperties", func(n *uint32, p *extensionProperties) Result {
		var ps pins
		defer ps.done()
		return call(l.enumInstanceExts, 0, ptr(&ps, n), ptr(&ps, p))
	})
}

// enumerateExtensions runs a two-call extension enumeration.
func enumerateExtensions(op string, fn func(n *uint32, p *extensionProperties) Result) ([]string, error) {
	for range 4 {
		var n uint32
		if r := fn(&n, nil); r != Success {
			return nil, &Error{Op: op, Result: r}
		}
		if n == 0 {
			return nil, nil
		}
		props := make([]extensionProperties, n)
		r := fn(&n, &props[0])
		if r == Incomplete {
			continue // the list grew between the calls
		}
		if r != Success {
			return nil, &Error{Op: op, Result: r}
		}
		out := make([]string, 0, n)
		for _, p := range props[:min(int(n), len(props))] {
			out = append(out, goString(p.extensionName[:]))
		}
		return out, nil
	}
	return nil, &Error{Op: op, Result: Incomplete, Detail: "the list kept changing"}
}

// Destroy destroys the instance. Devices created from it must be destroyed
// first.
func (in *Instance) Destroy() {
	if in.h != 0 {
		call(in.destroy, uintptr(in.h), 0)
		in.h = 0
	}
}

// PhysicalDevices lists the instance's physical devices in
// vkEnumeratePhysicalDevices order, with their properties.
func (in *Instance) PhysicalDevices() ([]*PhysicalDevice, error) {
	var hs []PhysicalDeviceHandle
	for range 4 {
		var n uint32
		var ps pins
		r := call(in.enumPhysical, uintptr(in.h), ptr(&ps, &n), 0)
		ps.done()
		if r != Success {
			return nil, &Error{Op: "vkEnumeratePhysicalDevices", Result: r}
		}
		if n == 0 {
			return nil, nil
		}
		hs = make([]PhysicalDeviceHandle, n)
		r = call(in.enumPhysical, uintptr(in.h), ptr(&ps, &n), slice(&ps, hs))
		ps.done()
		if r == Incomplete {
			continue
		}
		if r != Success {
			return nil, &Error{Op: "vkEnumeratePhysicalDevices", Result: r}
		}
		hs = hs[:min(int(n), len(hs))]
		break
	}
	out := make([]*PhysicalDevice, 0, len(hs))
	for i, h := range hs {
		pd, err := in.describe(i, h)
		if err != nil {
			return nil, fmt.Errorf("vulkan: physical device %d: %w", i, err)
		}
		out = append(out, pd)
	}
	return out, nil
}

// PhysicalDevice is a VkPhysicalDevice and what compute needs to know
// about it.
type PhysicalDevice struct {
	in    *Instance
	h     PhysicalDeviceHandle
	Index int // position in vkEnumeratePhysicalDevices order

	Name          string
	Type          uint32 // DeviceType…
	VendorID      uint32
	DeviceID      uint32
	APIVersion    uint32
	DriverVersion uint32
	// DriverName and DriverInfo come from VkPhysicalDeviceDriverProperties
	// (Vulkan 1.2 or VK_KHR_driver_properties), else are empty.
	DriverName, DriverInfo string
	PipelineCacheUUID      [16]byte
	Limits                 Limits
	// MaxMemoryAllocationSize is maintenance3's limit on one allocation
	// (0 when the device does not say).
	MaxMemoryAllocationSize uint64

	SubgroupSize       int
	SubgroupStages     uint32 // VkShaderStageFlags
	SubgroupOperations uint32 // Subgroup… bits

	Features   Features
	Extensions []string
	// CooperativeMatrix reports VK_KHR_cooperative_matrix; CoopMatrixShapes
	// lists its supported shapes and types when present.
	CooperativeMatrix bool
	CoopMatrixStages  uint32
	CoopMatrixShapes  []CoopMatrixShape
	// NaNPreserve32 and NaNPreserve64 report the float-controls properties
	// shaderSignedZeroInfNanPreserveFloat32 and ...Float64.
	NaNPreserve32, NaNPreserve64 bool

	MemoryTypes   []MemoryType
	MemoryHeaps   []MemoryHeap
	QueueFamilies []QueueFamily
}

// Features are the optional device features compute may use; NewDevice
// enables the ones set.
type Features struct {
	ShaderInt64, ShaderFloat64, ShaderInt16 bool
	StorageBuffer16BitAccess                bool
	ShaderFloat16, ShaderInt8               bool
	CooperativeMatrix                       bool
	// VulkanMemoryModel is vulkanMemoryModel; PhysicalDevice.Features
	// leaves it false (see PhysicalDevice.HasVulkanMemoryModel).
	VulkanMemoryModel bool
}

// CoopMatrixShape is one VkCooperativeMatrixPropertiesKHR: an M×N×K
// product with its component types (VkComponentTypeKHR) and scope.
type CoopMatrixShape struct {
	M, N, K                     int
	AType, BType, CType, Result uint32
	SaturatingAccumulation      bool
	Scope                       uint32
}

// HasExtension reports whether the device offers extension name.
func (pd *PhysicalDevice) HasExtension(name string) bool { return slices.Contains(pd.Extensions, name) }

// TypeName names the device type.
func (pd *PhysicalDevice) TypeName() string {
	switch pd.Type {
	case DeviceTypeIntegratedGPU:
		return "integrated GPU"
	case DeviceTypeDiscreteGPU:
		return "discrete GPU"
	case DeviceTypeVirtualGPU:
		return "virtual GPU"
	case DeviceTypeCPU:
		return "CPU"
	}
	return "other"
}

// DeviceLocalBytes returns the size of the largest device-local heap.
func (pd *PhysicalDevice) DeviceLocalBytes() uint64 {
	var n uint64
	for _, h := range pd.MemoryHeaps {
		if h.Flags&HeapDeviceLocal != 0 {
			n = max(n, h.Size)
		}
	}
	return n
}

func (in *Instance) describe(index int, h PhysicalDeviceHandle) (*PhysicalDevice, error) {
	pd := &PhysicalDevice{in: in, h: h, Index: index}
	var ps pins
	defer ps.done()
	var base physicalDeviceProperties
	call(in.getProps, uintptr(h), ptr(&ps, &base))
	pd.fillBase(&base)
	exts, err := enumerateExtensions("vkEnumerateDeviceExtensionProperties", func(n *uint32, p *extensionProperties) Result {
		var ps pins
		defer ps.done()
		return call(in.enumDeviceExts, uintptr(h), 0, ptr(&ps, n), ptr(&ps, p))
	})
	if err != nil {
		return nil, err
	}
	pd.Extensions = exts
	var mem memoryProperties
	call(in.getMemProps, uintptr(h), ptr(&ps, &mem))
	pd.MemoryTypes = append([]MemoryType(nil), mem.memoryTypes[:min(mem.memoryTypeCount, 32)]...)
	pd.MemoryHeaps = append([]MemoryHeap(nil), mem.memoryHeaps[:min(mem.memoryHeapCount, 16)]...)
	var nq uint32
	call(in.getQueueFamilies, uintptr(h), ptr(&ps, &nq), 0)
	if nq > 0 {
		qs := make([]QueueFamily, nq)
		call(in.getQueueFamilies, uintptr(h), ptr(&ps, &nq), slice(&ps, qs))
		pd.QueueFamilies = qs[:min(int(nq), len(qs))]
	}
	if pd.APIVersion < MinAPIVersion {
		return pd, nil // properties2 and features2 are not for it
	}
	v12 := pd.APIVersion >= MakeAPIVersion(1, 2, 0)
	pd.CooperativeMatrix = pd.HasExtension("VK_KHR_cooperative_matrix") && in.getCoopMatProps != 0

	// Properties, through a pNext chain.
	var sub subgroupProperties
	var m3 maintenance3Properties
	var drv driverProperties
	var cmp coopMatProperties
	props := physicalDeviceProperties2{sType: stPhysicalDeviceProperties2}
	sub.sType, m3.sType = stPhysicalDeviceSubgroup, stPhysicalDeviceMaintenance3
	props.pNext = ptr(&ps, &sub)
	sub.pNext = ptr(&ps, &m3)
	next := &m3.pNext
	if v12 || pd.HasExtension("VK_KHR_driver_properties") {
		drv.sType = stPhysicalDeviceDriverProperties
		*next, next = ptr(&ps, &drv), &drv.pNext
	}
	var fc floatControlsProperties
	if v12 || pd.HasExtension("VK_KHR_shader_float_controls") {
		fc.sType = stPhysicalDeviceFloatControls
		*next, next = ptr(&ps, &fc), &fc.pNext
	}
	if pd.CooperativeMatrix {
		cmp.sType = stPhysicalDeviceCoopMatProperties
		*next = ptr(&ps, &cmp)
	}
	call(in.getProps2, uintptr(h), ptr(&ps, &props))
	pd.NaNPreserve32, pd.NaNPreserve64 = bool32(fc.signedZeroInfNanPreserve[1]), bool32(fc.signedZeroInfNanPreserve[2])
	pd.fillBase(&props.properties)
	pd.SubgroupSize = int(sub.subgroupSize)
	pd.SubgroupStages, pd.SubgroupOperations = sub.supportedStages, sub.supportedOperations
	pd.MaxMemoryAllocationSize = m3.maxMemoryAllocationSize
	pd.DriverName, pd.DriverInfo = goString(drv.driverName[:]), goString(drv.driverInfo[:])
	pd.CoopMatrixStages = cmp.cooperativeMatrixSupportedStages

	// Features.
	var s16 storage16BitFeatures
	var f16 float16Int8Features
	var cmf coopMatFeatures
	feats := physicalDeviceFeatures2{sType: stPhysicalDeviceFeatures2}
	s16.sType = stPhysicalDevice16BitStorage
	feats.pNext = ptr(&ps, &s16)
	next = &s16.pNext
	if v12 || pd.HasExtension("VK_KHR_shader_float16_int8") {
		f16.sType = stPhysicalDeviceFloat16Int8
		*next, next = ptr(&ps, &f16), &f16.pNext
	}
	if pd.CooperativeMatrix {
		cmf.sType = stPhysicalDeviceCoopMatFeatures
		*next = ptr(&ps, &cmf)
	}
	call(in.getFeatures2, uintptr(h), ptr(&ps, &feats))
	pd.Features = Features{
		ShaderInt64: bool32(feats.features.shaderInt64), ShaderFloat64: bool32(feats.features.shaderFloat64),
		ShaderInt16: bool32(feats.features.shaderInt16), StorageBuffer16BitAccess: bool32(s16.storageBuffer16BitAccess),
		ShaderFloat16: bool32(f16.shaderFloat16), ShaderInt8: bool32(f16.shaderInt8),
		CooperativeMatrix: bool32(cmf.cooperativeMatrix),
	}
	if pd.CooperativeMatrix {
		shapes, err := pd.coopMatrixShapes()
		if err != nil {
			return nil, err
		}
		pd.CoopMatrixShapes = shapes
	}
	return pd, nil
}

func (pd *PhysicalDevice) fillBase(p *physicalDeviceProperties) {
	pd.Name = goString(p.deviceName[:])
	pd.Type, pd.VendorID, pd.DeviceID = p.deviceType, p.vendorID, p.deviceID
	pd.APIVersion, pd.DriverVersion = p.apiVersion, p.driverVersion
	pd.PipelineCacheUUID = p.pipelineCacheUUID
	pd.Limits = p.limits
}

// coopMatrixShapes calls vkGetPhysicalDeviceCooperativeMatrixPropertiesKHR.
func (pd *PhysicalDevice) coopMatrixShapes() ([]CoopMatrixShape, error) {
	const op = "vkGetPhysicalDeviceCooperativeMatrixPropertiesKHR"
	var ps pins
	defer ps.done()
	var n uint32
	if r := call(pd.in.getCoopMatProps, uintptr(pd.h), ptr(&ps, &n), 0); r != Success {
		return nil, &Error{Op: op, Result: r}
	}
	if n == 0 || n > 4096 {
		return nil, nil
	}
	cs := make([]cooperativeMatrixProperties, n)
	for i := range cs {
		cs[i].sType = stCooperativeMatrixProperties
	}
	if r := call(pd.in.getCoopMatProps, uintptr(pd.h), ptr(&ps, &n), slice(&ps, cs)); r != Success && r != Incomplete {
		return nil, &Error{Op: op, Result: r}
	}
	var out []CoopMatrixShape
	for _, c := range cs[:min(int(n), len(cs))] {
		out = append(out, CoopMatrixShape{M: int(c.mSize), N: int(c.nSize), K: int(c.kSize),
			AType: c.aType, BType: c.bType, CType: c.cType, Result: c.resultType,
			SaturatingAccumulation: bool32(c.saturatingAccumulation), Scope: c.scope})
	}
	return out, nil
}

// ComputeQueueFamily returns the index of the queue family to compute on:
// one with compute and without graphics when there is one (a dedicated
// compute queue), else the first with compute; -1 when none has it.
func (pd *PhysicalDevice) ComputeQueueFamily() int {
	best := -1
	for i, q := range pd.QueueFamilies {
		if q.QueueFlags&QueueCompute == 0 || q.QueueCount == 0 {
			continue
		}
		if q.QueueFlags&QueueGraphics == 0 {
			return i
		}
		if best < 0 {
			best = i
		}
	}
	return best
}
