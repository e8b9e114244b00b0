package vk

import "fmt"

// NewCommandPool creates a command pool on the device's queue family whose
// buffers may be reset one by one.
func (d *Device) NewCommandPool() (CommandPool, error) {
	var ps pins
	defer ps.done()
	ci := commandPoolCreateInfo{sType: stCommandPoolCreateInfo, flags: commandPoolResetBuffer, queueFamilyIndex: uint32(d.QueueFamily)}
	var p CommandPool
	r := call(d.fn.createCommandPool, uintptr(d.h), ptr(&ps, &ci), 0, ptr(&ps, &p))
	return p, check("vkCreateCommandPool", r, "")
}

// DestroyCommandPool destroys p and its command buffers.
func (d *Device) DestroyCommandPool(p CommandPool) {
	if p != 0 {
		call(d.fn.destroyCommandPool, uintptr(d.h), uintptr(p), 0)
	}
}

// CommandBuffer is a primary command buffer being recorded or ready to
// submit. Recording calls report no errors (Vulkan's vkCmd… return
// nothing); End reports what recording ran into.
type CommandBuffer struct {
	H    CommandBufferHandle
	d    *Device
	pool CommandPool
}

// NewCommandBuffer allocates a primary command buffer from pool p.
func (d *Device) NewCommandBuffer(p CommandPool) (*CommandBuffer, error) {
	var ps pins
	defer ps.done()
	ai := commandBufferAllocateInfo{sType: stCommandBufferAllocateInfo, commandPool: uint64(p), level: commandBufferLevelPrimary, commandBufferCount: 1}
	cb := &CommandBuffer{d: d, pool: p}
	r := call(d.fn.allocCommandBuffers, uintptr(d.h), ptr(&ps, &ai), ptr(&ps, &cb.H))
	if err := check("vkAllocateCommandBuffers", r, ""); err != nil {
		return nil, err
	}
	return cb, nil
}

// Free returns the command buffer to its pool; it must not be pending.
func (c *CommandBuffer) Free() {
	if c.H != 0 {
		var ps pins
		call(c.d.fn.freeCommandBuffers, uintptr(c.d.h), uintptr(c.pool), 1, ptr(&ps, &c.H))
		ps.done()
		c.H = 0
	}
}

// Begin starts recording; oneTime marks a buffer submitted once before it
// is recorded again (VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT).
// Recording resets a buffer recorded before.
func (c *CommandBuffer) Begin(oneTime bool) error {
	var ps pins
	defer ps.done()
	bi := commandBufferBeginInfo{sType: stCommandBufferBeginInfo}
	if oneTime {
		bi.flags = 0x1
	}
	return check("vkBeginCommandBuffer", call(c.d.fn.beginCommandBuffer, uintptr(c.H), ptr(&ps, &bi)), "")
}

// End finishes recording.
func (c *CommandBuffer) End() error {
	return check("vkEndCommandBuffer", call(c.d.fn.endCommandBuffer, uintptr(c.H)), "")
}

// Reset returns the buffer to the initial state; it must not be pending.
func (c *CommandBuffer) Reset() error {
	return check("vkResetCommandBuffer", call(c.d.fn.resetCommandBuffer, uintptr(c.H), 0), "")
}

// BindPipeline binds compute pipeline p.
func (c *CommandBuffer) BindPipeline(p Pipeline) {
	call(c.d.fn.cmdBindPipeline, uintptr(c.H), uintptr(pipelineBindPointCompute), uintptr(p))
}

// BindSet binds descriptor set s as set 0 of compute pipeline layout l.
func (c *CommandBuffer) BindSet(l PipelineLayout, s DescriptorSet) {
	var ps pins
	defer ps.done()
	call(c.d.fn.cmdBindDescriptorSets, uintptr(c.H), uintptr(pipelineBindPointCompute), uintptr(l), 0, 1, ptr(&ps, &s), 0, 0)
}

// PushConstants records values as the compute push constants of layout l
// from offset 0; the values are copied into the command buffer.
func (c *CommandBuffer) PushConstants(l PipelineLayout, values []uint32) {
	if len(values) == 0 {
		return
	}
	var ps pins
	defer ps.done()
	call(c.d.fn.cmdPushConstants, uintptr(c.H), uintptr(l), uintptr(shaderStageCompute), 0, uintptr(4*len(values)), slice(&ps, values))
}

// Dispatch records vkCmdDispatch of x×y×z work-groups.
func (c *CommandBuffer) Dispatch(x, y, z int) {
	call(c.d.fn.cmdDispatch, uintptr(c.H), uintptr(x), uintptr(y), uintptr(z))
}

// Barrier records a global memory barrier: writes of srcAccess by stages
// srcStage become visible to dstAccess of stages dstStage.
func (c *CommandBuffer) Barrier(srcStage, dstStage, srcAccess, dstAccess uint32) {
	var ps pins
	defer ps.done()
	mb := memoryBarrier{sType: stMemoryBarrier, srcAccessMask: srcAccess, dstAccessMask: dstAccess}
	call(c.d.fn.cmdPipelineBarrier, uintptr(c.H), uintptr(srcStage), uintptr(dstStage), 0, 1, ptr(&ps, &mb), 0, 0, 0, 0)
}

// Copy is one region of a buffer copy.
type Copy struct{ SrcOffset, DstOffset, Size uint64 }

// CopyBuffer records copies of regions from src to dst.
func (c *CommandBuffer) CopyBuffer(src, dst Buffer, regions []Copy) {
	if len(regions) == 0 {
		return
	}
	var ps pins
	defer ps.done()
	rs := make([]bufferCopy, len(regions))
	for i, r := range regions {
		rs[i] = bufferCopy{srcOffset: r.SrcOffset, dstOffset: r.DstOffset, size: r.Size}
	}
	call(c.d.fn.cmdCopyBuffer, uintptr(c.H), uintptr(src), uintptr(dst), uintptr(len(rs)), slice(&ps, rs))
}

// FillBuffer records filling size bytes of b from offset (both multiples of
// 4, or size WholeSize) with the 32-bit word data.
func (c *CommandBuffer) FillBuffer(b Buffer, offset, size uint64, data uint32) error {
	if offset%4 != 0 || (size != WholeSize && size%4 != 0) {
		return fmt.Errorf("vulkan: vkCmdFillBuffer: offset %d and size %d must be multiples of 4", offset, size)
	}
	call(c.d.fn.cmdFillBuffer, uintptr(c.H), uintptr(b), uintptr(offset), uintptr(size), uintptr(data))
	return nil
}
