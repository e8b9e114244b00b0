package vk

import (
	"fmt"
	"unsafe"
)

// Non-dispatchable handles.
type (
	Buffer              uint64
	Memory              uint64
	ShaderModule        uint64
	DescriptorSetLayout uint64
	DescriptorPool      uint64
	DescriptorSet       uint64
	PipelineLayout      uint64
	Pipeline            uint64
	PipelineCache       uint64
	CommandPool         uint64
	Fence               uint64
)

// Device is a VkDevice with one compute queue and its device-level entry
// points.
type Device struct {
	h           DeviceHandle
	pd          *PhysicalDevice
	Queue       QueueHandle
	QueueFamily int
	// Enabled are the optional features the device was created with.
	Enabled Features

	fn deviceFns
}

type deviceFns struct {
	destroyDevice, getDeviceQueue, deviceWaitIdle, queueSubmit, queueWaitIdle,
	createBuffer, destroyBuffer, getBufferMemReq, allocateMemory, freeMemory, bindBufferMemory, mapMemory, unmapMemory,
	createShaderModule, destroyShaderModule,
	createDescSetLayout, destroyDescSetLayout, createDescPool, destroyDescPool, allocDescSets, updateDescSets,
	createPipelineLayout, destroyPipelineLayout, createComputePipelines, destroyPipeline,
	createPipelineCache, destroyPipelineCache, getPipelineCacheData,
	createCommandPool, destroyCommandPool, allocCommandBuffers, freeCommandBuffers, resetCommandBuffer,
	beginCommandBuffer, endCommandBuffer,
	cmdBindPipeline, cmdBindDescriptorSets, cmdPushConstants, cmdDispatch, cmdPipelineBarrier, cmdCopyBuffer, cmdFillBuffer,
	createFence, destroyFence, resetFences, waitForFences, getFenceStatus,
	createQueryPool, destroyQueryPool, getQueryPoolResults, cmdResetQueryPool, cmdWriteTimestamp uintptr
}

// PhysicalDevice returns the device's physical device.
func (d *Device) PhysicalDevice() *PhysicalDevice { return d.pd }

// NewDevice creates a logical device with one queue of the compute queue
// family, enabling the features of want that the device has (see
// Device.Enabled) and VK_KHR_portability_subset when the device offers it
// (the specification requires it then).
func (pd *PhysicalDevice) NewDevice(want Features) (*Device, error) {
	if pd.APIVersion < MinAPIVersion {
		return nil, fmt.Errorf("vulkan: %q supports Vulkan %s only; Tartan needs 1.1 or later", pd.Name, APIVersionString(pd.APIVersion))
	}
	qf := pd.ComputeQueueFamily()
	if qf < 0 {
		return nil, fmt.Errorf("vulkan: %q has no queue family with compute", pd.Name)
	}
	have := pd.Features
	en := Features{
		ShaderInt64: want.ShaderInt64 && have.ShaderInt64, ShaderFloat64: want.ShaderFloat64 && have.ShaderFloat64,
		ShaderInt16: want.ShaderInt16 && have.ShaderInt16, StorageBuffer16BitAccess: want.StorageBuffer16BitAccess && have.StorageBuffer16BitAccess,
		ShaderFloat16: want.ShaderFloat16 && have.ShaderFloat16, ShaderInt8: want.ShaderInt8 && have.ShaderInt8,
		CooperativeMatrix: want.CooperativeMatrix && have.CooperativeMatrix,
		VulkanMemoryModel: want.VulkanMemoryModel && pd.HasVulkanMemoryModel(),
	}
	var exts []string
	if pd.HasExtension("VK_KHR_portability_subset") {
		exts = append(exts, "VK_KHR_portability_subset")
	}
	v12 := pd.APIVersion >= MakeAPIVersion(1, 2, 0)
	if (en.ShaderFloat16 || en.ShaderInt8) && !v12 {
		exts = append(exts, "VK_KHR_shader_float16_int8")
	}
	if en.CooperativeMatrix {
		exts = append(exts, "VK_KHR_cooperative_matrix")
	}
	if !v12 && (pd.NaNPreserve32 || pd.NaNPreserve64) && pd.HasExtension("VK_KHR_shader_float_controls") {
		exts = append(exts, "VK_KHR_shader_float_controls")
	}
	var ps pins
	defer ps.done()
	feats := physicalDeviceFeatures2{sType: stPhysicalDeviceFeatures2}
	feats.features.shaderInt64 = b32(en.ShaderInt64)
	feats.features.shaderFloat64 = b32(en.ShaderFloat64)
	feats.features.shaderInt16 = b32(en.ShaderInt16)
	s16 := storage16BitFeatures{sType: stPhysicalDevice16BitStorage, storageBuffer16BitAccess: b32(en.StorageBuffer16BitAccess)}
	feats.pNext = ptr(&ps, &s16)
	next := &s16.pNext
	if en.ShaderFloat16 || en.ShaderInt8 {
		f16 := &float16Int8Features{sType: stPhysicalDeviceFloat16Int8, shaderFloat16: b32(en.ShaderFloat16), shaderInt8: b32(en.ShaderInt8)}
		*next, next = ptr(&ps, f16), &f16.pNext
	}
	if en.CooperativeMatrix {
		cm := &coopMatFeatures{sType: stPhysicalDeviceCoopMatFeatures, cooperativeMatrix: 1}
		*next, next = ptr(&ps, cm), &cm.pNext
	}
	if en.VulkanMemoryModel {
		mm, ext := pd.memoryModelFeatures()
		if *next = ptr(&ps, mm); ext != "" {
			exts = append(exts, ext)
		}
	}
	prio := float32(1)
	qci := deviceQueueCreateInfo{sType: stDeviceQueueCreateInfo, queueFamilyIndex: uint32(qf), queueCount: 1, pQueuePriorities: ptr(&ps, &prio)}
	dci := deviceCreateInfo{sType: stDeviceCreateInfo, pNext: ptr(&ps, &feats), queueCreateInfoCount: 1, pQueueCreateInfos: ptr(&ps, &qci),
		enabledExtensionCount: uint32(len(exts)), ppEnabledExtensionNames: ps.cstrs(exts)}
	var h DeviceHandle
	if r := call(pd.in.createDevice, uintptr(pd.h), ptr(&ps, &dci), 0, ptr(&ps, &h)); r != Success {
		return nil, &Error{Op: "vkCreateDevice", Result: r, Detail: fmt.Sprintf("%q, queue family %d", pd.Name, qf)}
	}
	d := &Device{h: h, pd: pd, QueueFamily: qf, Enabled: en}
	if err := d.loadFns(); err != nil {
		if d.fn.destroyDevice != 0 {
			call(d.fn.destroyDevice, uintptr(h), 0)
		}
		return nil, err
	}
	call(d.fn.getDeviceQueue, uintptr(h), uintptr(qf), 0, ptr(&ps, &d.Queue))
	return d, nil
}

func b32(b bool) uint32 {
	if b {
		return 1
	}
	return 0
}

func (d *Device) loadFns() error {
	f := &d.fn
	list := []struct {
		p    *uintptr
		name string
	}{
		{&f.destroyDevice, "vkDestroyDevice"}, {&f.getDeviceQueue, "vkGetDeviceQueue"}, {&f.deviceWaitIdle, "vkDeviceWaitIdle"},
		{&f.queueSubmit, "vkQueueSubmit"}, {&f.queueWaitIdle, "vkQueueWaitIdle"},
		{&f.createBuffer, "vkCreateBuffer"}, {&f.destroyBuffer, "vkDestroyBuffer"}, {&f.getBufferMemReq, "vkGetBufferMemoryRequirements"},
		{&f.allocateMemory, "vkAllocateMemory"}, {&f.freeMemory, "vkFreeMemory"}, {&f.bindBufferMemory, "vkBindBufferMemory"},
		{&f.mapMemory, "vkMapMemory"}, {&f.unmapMemory, "vkUnmapMemory"},
		{&f.createShaderModule, "vkCreateShaderModule"}, {&f.destroyShaderModule, "vkDestroyShaderModule"},
		{&f.createDescSetLayout, "vkCreateDescriptorSetLayout"}, {&f.destroyDescSetLayout, "vkDestroyDescriptorSetLayout"},
		{&f.createDescPool, "vkCreateDescriptorPool"}, {&f.destroyDescPool, "vkDestroyDescriptorPool"},
		{&f.allocDescSets, "vkAllocateDescriptorSets"}, {&f.updateDescSets, "vkUpdateDescriptorSets"},
		{&f.createPipelineLayout, "vkCreatePipelineLayout"}, {&f.destroyPipelineLayout, "vkDestroyPipelineLayout"},
		{&f.createComputePipelines, "vkCreateComputePipelines"}, {&f.destroyPipeline, "vkDestroyPipeline"},
		{&f.createPipelineCache, "vkCreatePipelineCache"}, {&f.destroyPipelineCache, "vkDestroyPipelineCache"},
		{&f.getPipelineCacheData, "vkGetPipelineCacheData"},
		{&f.createCommandPool, "vkCreateCommandPool"}, {&f.destroyCommandPool, "vkDestroyCommandPool"},
		{&f.allocCommandBuffers, "vkAllocateCommandBuffers"}, {&f.freeCommandBuffers, "vkFreeCommandBuffers"},
		{&f.resetCommandBuffer, "vkResetCommandBuffer"}, {&f.beginCommandBuffer, "vkBeginCommandBuffer"}, {&f.endCommandBuffer, "vkEndCommandBuffer"},
		{&f.cmdBindPipeline, "vkCmdBindPipeline"}, {&f.cmdBindDescriptorSets, "vkCmdBindDescriptorSets"},
		{&f.cmdPushConstants, "vkCmdPushConstants"}, {&f.cmdDispatch, "vkCmdDispatch"}, {&f.cmdPipelineBarrier, "vkCmdPipelineBarrier"},
		{&f.cmdCopyBuffer, "vkCmdCopyBuffer"}, {&f.cmdFillBuffer, "vkCmdFillBuffer"},
		{&f.createFence, "vkCreateFence"}, {&f.destroyFence, "vkDestroyFence"}, {&f.resetFences, "vkResetFences"},
		{&f.waitForFences, "vkWaitForFences"}, {&f.getFenceStatus, "vkGetFenceStatus"},
		{&f.createQueryPool, "vkCreateQueryPool"}, {&f.destroyQueryPool, "vkDestroyQueryPool"},
		{&f.getQueryPoolResults, "vkGetQueryPoolResults"}, {&f.cmdResetQueryPool, "vkCmdResetQueryPool"},
		{&f.cmdWriteTimestamp, "vkCmdWriteTimestamp"},
	}
	for _, e := range list {
		var ps pins
		*e.p = callRaw(d.pd.in.getDeviceProcAddr, uintptr(d.h), ps.cstr(e.name))
		ps.done()
		if *e.p == 0 {
			return fmt.Errorf("vulkan: the driver of %q has no %s", d.pd.Name, e.name)
		}
	}
	return nil
}

// Destroy destroys the device; every object made from it must be
// destroyed first.
func (d *Device) Destroy() {
	if d.h != 0 {
		call(d.fn.destroyDevice, uintptr(d.h), 0)
		d.h = 0
	}
}

// WaitIdle is vkDeviceWaitIdle.
func (d *Device) WaitIdle() error {
	return check("vkDeviceWaitIdle", call(d.fn.deviceWaitIdle, uintptr(d.h)), "")
}

// NewBuffer creates an exclusive buffer of size bytes with the given usage
// (Buffer… bits).
func (d *Device) NewBuffer(size uint64, usage uint32) (Buffer, error) {
	var ps pins
	defer ps.done()
	ci := bufferCreateInfo{sType: stBufferCreateInfo, size: size, usage: usage}
	var b Buffer
	r := call(d.fn.createBuffer, uintptr(d.h), ptr(&ps, &ci), 0, ptr(&ps, &b))
	return b, check("vkCreateBuffer", r, fmt.Sprintf("%d bytes", size))
}

// DestroyBuffer destroys b (a zero handle is ignored).
func (d *Device) DestroyBuffer(b Buffer) {
	if b != 0 {
		call(d.fn.destroyBuffer, uintptr(d.h), uintptr(b), 0)
	}
}

// MemoryRequirements are a buffer's size, alignment and the memory types
// (bit i: type i) it may be bound to.
type MemoryRequirements struct {
	Size, Alignment uint64
	TypeBits        uint32
}

// BufferMemoryRequirements is vkGetBufferMemoryRequirements.
func (d *Device) BufferMemoryRequirements(b Buffer) MemoryRequirements {
	var ps pins
	defer ps.done()
	var m memoryRequirements
	call(d.fn.getBufferMemReq, uintptr(d.h), uintptr(b), ptr(&ps, &m))
	return MemoryRequirements{Size: m.size, Alignment: m.alignment, TypeBits: m.memoryTypeBits}
}

// Allocate allocates size bytes of memory type typeIndex.
func (d *Device) Allocate(size uint64, typeIndex int) (Memory, error) {
	var ps pins
	defer ps.done()
	ai := memoryAllocateInfo{sType: stMemoryAllocateInfo, allocationSize: size, memoryTypeIndex: uint32(typeIndex)}
	var m Memory
	r := call(d.fn.allocateMemory, uintptr(d.h), ptr(&ps, &ai), 0, ptr(&ps, &m))
	return m, check("vkAllocateMemory", r, fmt.Sprintf("%d bytes of memory type %d", size, typeIndex))
}

// Free frees memory (a zero handle is ignored); it must not be mapped by a
// caller that still uses the mapping.
func (d *Device) Free(m Memory) {
	if m != 0 {
		call(d.fn.freeMemory, uintptr(d.h), uintptr(m), 0)
	}
}

// BindBufferMemory binds b to m at offset.
func (d *Device) BindBufferMemory(b Buffer, m Memory, offset uint64) error {
	return check("vkBindBufferMemory", call(d.fn.bindBufferMemory, uintptr(d.h), uintptr(b), uintptr(m), uintptr(offset)), "")
}

// Map maps size bytes of host-visible memory m from offset and returns the
// mapping as a byte slice over driver memory (not Go memory): it is valid
// until Unmap or Free.
func (d *Device) Map(m Memory, offset, size uint64) ([]byte, error) {
	var ps pins
	defer ps.done()
	var p unsafe.Pointer // the driver writes a C address here
	r := call(d.fn.mapMemory, uintptr(d.h), uintptr(m), uintptr(offset), uintptr(size), 0, ptr(&ps, &p))
	if err := check("vkMapMemory", r, fmt.Sprintf("%d bytes", size)); err != nil {
		return nil, err
	}
	return unsafe.Slice((*byte)(p), int(size)), nil
}

// Unmap is vkUnmapMemory.
func (d *Device) Unmap(m Memory) { call(d.fn.unmapMemory, uintptr(d.h), uintptr(m)) }

// NewShaderModule creates a shader module from SPIR-V words.
func (d *Device) NewShaderModule(words []uint32) (ShaderModule, error) {
	if len(words) == 0 {
		return 0, fmt.Errorf("vulkan: vkCreateShaderModule: empty SPIR-V module")
	}
	var ps pins
	defer ps.done()
	code := append([]uint32(nil), words...) // 4-byte aligned, ours
	ci := shaderModuleCreateInfo{sType: stShaderModuleCreateInfo, codeSize: uintptr(4 * len(code)), pCode: slice(&ps, code)}
	var m ShaderModule
	r := call(d.fn.createShaderModule, uintptr(d.h), ptr(&ps, &ci), 0, ptr(&ps, &m))
	return m, check("vkCreateShaderModule", r, fmt.Sprintf("%d words", len(words)))
}

// DestroyShaderModule destroys m (a zero handle is ignored).
func (d *Device) DestroyShaderModule(m ShaderModule) {
	if m != 0 {
		call(d.fn.destroyShaderModule, uintptr(d.h), uintptr(m), 0)
	}
}

// NewStorageSetLayout creates a descriptor set layout of n storage
// buffers, bindings 0 to n-1, for the compute stage.
func (d *Device) NewStorageSetLayout(n int) (DescriptorSetLayout, error) {
	var ps pins
	defer ps.done()
	bs := make([]descriptorSetLayoutBinding, n)
	for i := range bs {
		bs[i] = descriptorSetLayoutBinding{binding: uint32(i), descriptorType: descriptorTypeStorageBuffer, descriptorCount: 1, stageFlags: shaderStageCompute}
	}
	ci := descriptorSetLayoutCreateInfo{sType: stDescriptorSetLayoutCreateInfo, bindingCount: uint32(n), pBindings: slice(&ps, bs)}
	var l DescriptorSetLayout
	r := call(d.fn.createDescSetLayout, uintptr(d.h), ptr(&ps, &ci), 0, ptr(&ps, &l))
	return l, check("vkCreateDescriptorSetLayout", r, fmt.Sprintf("%d storage buffers", n))
}

// DestroySetLayout destroys l (a zero handle is ignored).
func (d *Device) DestroySetLayout(l DescriptorSetLayout) {
	if l != 0 {
		call(d.fn.destroyDescSetLayout, uintptr(d.h), uintptr(l), 0)
	}
}

// NewDescriptorPool creates a pool for maxSets sets holding storage
// storage-buffer descriptors in all.
func (d *Device) NewDescriptorPool(maxSets, storage int) (DescriptorPool, error) {
	var ps pins
	defer ps.done()
	size := descriptorPoolSize{typ: descriptorTypeStorageBuffer, descriptorCount: uint32(max(storage, 1))}
	ci := descriptorPoolCreateInfo{sType: stDescriptorPoolCreateInfo, maxSets: uint32(max(maxSets, 1)), poolSizeCount: 1, pPoolSizes: ptr(&ps, &size)}
	var p DescriptorPool
	r := call(d.fn.createDescPool, uintptr(d.h), ptr(&ps, &ci), 0, ptr(&ps, &p))
	return p, check("vkCreateDescriptorPool", r, fmt.Sprintf("%d sets, %d storage buffers", maxSets, storage))
}

// DestroyDescriptorPool destroys p and the sets allocated from it.
func (d *Device) DestroyDescriptorPool(p DescriptorPool) {
	if p != 0 {
		call(d.fn.destroyDescPool, uintptr(d.h), uintptr(p), 0)
	}
}

// AllocateSet allocates one descriptor set of layout l from pool p.
func (d *Device) AllocateSet(p DescriptorPool, l DescriptorSetLayout) (DescriptorSet, error) {
	var ps pins
	defer ps.done()
	ai := descriptorSetAllocateInfo{sType: stDescriptorSetAllocateInfo, descriptorPool: uint64(p), descriptorSetCount: 1, pSetLayouts: ptr(&ps, &l)}
	var s DescriptorSet
	r := call(d.fn.allocDescSets, uintptr(d.h), ptr(&ps, &ai), ptr(&ps, &s))
	return s, check("vkAllocateDescriptorSets", r, "")
}

// BufferRange is a range of a buffer; Size 0 means the whole buffer.
type BufferRange struct {
	Buffer       Buffer
	Offset, Size uint64
}

// WholeSize is VK_WHOLE_SIZE.
const WholeSize = ^uint64(0)

// WriteStorageSet points binding i of set s at buffer range bufs[i].
func (d *Device) WriteStorageSet(s DescriptorSet, bufs []BufferRange) {
	if len(bufs) == 0 {
		return
	}
	var ps pins
	defer ps.done()
	infos := make([]descriptorBufferInfo, len(bufs))
	writes := make([]writeDescriptorSet, len(bufs))
	for i, b := range bufs {
		size := b.Size
		if size == 0 {
			size = WholeSize
		}
		infos[i] = descriptorBufferInfo{buffer: uint64(b.Buffer), offset: b.Offset, rng: size}
	}
	base := slice(&ps, infos)
	for i := range writes {
		writes[i] = writeDescriptorSet{sType: stWriteDescriptorSet, dstSet: uint64(s), dstBinding: uint32(i), descriptorCount: 1,
			descriptorType: descriptorTypeStorageBuffer, pBufferInfo: base + uintptr(i)*unsafe.Sizeof(infos[0])}
	}
	call(d.fn.updateDescSets, uintptr(d.h), uintptr(len(writes)), slice(&ps, writes), 0, 0)
}

// NewPipelineLayout creates a pipeline layout of one descriptor set layout
// and, when pushBytes > 0, a compute push-constant range of that size.
func (d *Device) NewPipelineLayout(set DescriptorSetLayout, pushBytes int) (PipelineLayout, error) {
	var ps pins
	defer ps.done()
	ci := pipelineLayoutCreateInfo{sType: stPipelineLayoutCreateInfo, setLayoutCount: 1, pSetLayouts: ptr(&ps, &set)}
	if pushBytes > 0 {
		rng := pushConstantRange{stageFlags: shaderStageCompute, size: uint32(pushBytes)}
		ci.pushConstantRangeCount, ci.pPushConstantRanges = 1, ptr(&ps, &rng)
	}
	var l PipelineLayout
	r := call(d.fn.createPipelineLayout, uintptr(d.h), ptr(&ps, &ci), 0, ptr(&ps, &l))
	return l, check("vkCreatePipelineLayout", r, fmt.Sprintf("%d push-constant bytes", pushBytes))
}

// DestroyPipelineLayout destroys l (a zero handle is ignored).
func (d *Device) DestroyPipelineLayout(l PipelineLayout) {
	if l != 0 {
		call(d.fn.destroyPipelineLayout, uintptr(d.h), uintptr(l), 0)
	}
}

// NewComputePipeline creates a compute pipeline running entry point entry
// of module m with layout l, through cache c (0 for none).
func (d *Device) NewComputePipeline(c PipelineCache, l PipelineLayout, m ShaderModule, entry string) (Pipeline, error) {
	var ps pins
	defer ps.done()
	ci := computePipelineCreateInfo{sType: stComputePipelineCreateInfo, layout: uint64(l), basePipelineIndex: -1,
		stage: pipelineShaderStageCreateInfo{sType: stPipelineShaderStageCreateInfo, stage: shaderStageCompute, module: uint64(m), pName: ps.cstr(entry)}}
	var p Pipeline
	r := call(d.fn.createComputePipelines, uintptr(d.h), uintptr(c), 1, ptr(&ps, &ci), 0, ptr(&ps, &p))
	return p, check("vkCreateComputePipelines", r, "entry point "+entry)
}

// DestroyPipeline destroys p (a zero handle is ignored).
func (d *Device) DestroyPipeline(p Pipeline) {
	if p != 0 {
		call(d.fn.destroyPipeline, uintptr(d.h), uintptr(p), 0)
	}
}

// NewPipelineCache creates a pipeline cache primed with data (from
// PipelineCacheData, possibly of an earlier process; nil for an empty
// cache). Drivers check the data's header and ignore data that is not
// theirs.
func (d *Device) NewPipelineCache(data []byte) (PipelineCache, error) {
	var ps pins
	defer ps.done()
	ci := pipelineCacheCreateInfo{sType: stPipelineCacheCreateInfo, initialDataSize: uintptr(len(data)), pInitialData: slice(&ps, data)}
	var c PipelineCache
	r := call(d.fn.createPipelineCache, uintptr(d.h), ptr(&ps, &ci), 0, ptr(&ps, &c))
	return c, check("vkCreatePipelineCache", r, fmt.Sprintf("%d bytes of initial data", len(data)))
}

// PipelineCacheData returns the contents of cache c.
func (d *Device) PipelineCacheData(c PipelineCache) ([]byte, error) {
	for range 4 {
		var ps pins
		var n uintptr
		r := call(d.fn.getPipelineCacheData, uintptr(d.h), uintptr(c), ptr(&ps, &n), 0)
		ps.done()
		if err := check("vkGetPipelineCacheData", r, ""); err != nil {
			return nil, err
		}
		if n == 0 {
			return nil, nil
		}
		data := make([]byte, n)
		r = call(d.fn.getPipelineCacheData, uintptr(d.h), uintptr(c), ptr(&ps, &n), slice(&ps, data))
		ps.done()
		if r == Incomplete {
			continue
		}
		if err := check("vkGetPipelineCacheData", r, ""); err != nil {
			return nil, err
		}
		return data[:min(int(n), len(data))], nil
	}
	return nil, &Error{Op: "vkGetPipelineCacheData", Result: Incomplete, Detail: "the cache kept growing"}
}

// DestroyPipelineCache destroys c (a zero handle is ignored).
func (d *Device) DestroyPipelineCache(c PipelineCache) {
	if c != 0 {
		call(d.fn.destroyPipelineCache, uintptr(d.h), uintptr(c), 0)
	}
}

// NewFence creates an unsignaled fence.
func (d *Device) NewFence() (Fence, error) {
	var ps pins
	defer ps.done()
	ci := fenceCreateInfo{sType: stFenceCreateInfo}
	var f Fence
	r := call(d.fn.createFence, uintptr(d.h), ptr(&ps, &ci), 0, ptr(&ps, &f))
	return f, check("vkCreateFence", r, "")
}

// DestroyFence destroys f (a zero handle is ignored).
func (d *Device) DestroyFence(f Fence) {
	if f != 0 {
		call(d.fn.destroyFence, uintptr(d.h), uintptr(f), 0)
	}
}

// ResetFence returns f to the unsignaled state.
func (d *Device) ResetFence(f Fence) error {
	var ps pins
	defer ps.done()
	return check("vkResetFences", call(d.fn.resetFences, uintptr(d.h), 1, ptr(&ps, &f)), "")
}

// WaitFence waits up to timeout nanoseconds for f; it reports false on a
// timeout.
func (d *Device) WaitFence(f Fence, timeout uint64) (bool, error) {
	var ps pins
	defer ps.done()
	r := call(d.fn.waitForFences, uintptr(d.h), 1, ptr(&ps, &f), 1, uintptr(timeout))
	if r == Timeout {
		return false, nil
	}
	return true, check("vkWaitForFences", r, "")
}

// FenceSignaled reports whether f is signaled, without waiting.
func (d *Device) FenceSignaled(f Fence) (bool, error) {
	r := call(d.fn.getFenceStatus, uintptr(d.h), uintptr(f))
	if r == NotReady {
		return false, nil
	}
	return r == Success, check("vkGetFenceStatus", r, "")
}

// Submit submits command buffers, in order, to the device's queue in one
// batch, signaling fence (0 for none) when all complete.
func (d *Device) Submit(cbs []CommandBufferHandle, fence Fence) error {
	var ps pins
	defer ps.done()
	si := submitInfo{sType: stSubmitInfo, commandBufferCount: uint32(len(cbs)), pCommandBuffers: slice(&ps, cbs)}
	return check("vkQueueSubmit", call(d.fn.queueSubmit, uintptr(d.Queue), 1, ptr(&ps, &si), uintptr(fence)),
		fmt.Sprintf("%d command buffers", len(cbs)))
}
