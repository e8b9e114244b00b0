package vk

import (
	"testing"
	"unsafe"
)

// The sizes and offsets below are what a C compiler gives for the Vulkan
// 1.3.239 headers on x86-64 and arm64 (sizeof and offsetof); the
// VK_KHR_cooperative_matrix structures, newer than those headers, follow
// from their members (two pointers' worth of header, then 32-bit fields).
func TestLayouts(t *testing.T) {
	if unsafe.Sizeof(uintptr(0)) != 8 {
		t.Skip("the layouts are those of 64-bit platforms")
	}
	sizes := []struct {
		name string
		got  uintptr
		want uintptr
	}{
		{"VkApplicationInfo", unsafe.Sizeof(applicationInfo{}), 48},
		{"VkInstanceCreateInfo", unsafe.Sizeof(instanceCreateInfo{}), 64},
		{"VkExtensionProperties", unsafe.Sizeof(extensionProperties{}), 260},
		{"VkPhysicalDeviceLimits", unsafe.Sizeof(Limits{}), 504},
		{"VkPhysicalDeviceProperties", unsafe.Sizeof(physicalDeviceProperties{}), 824},
		{"VkPhysicalDeviceProperties2", unsafe.Sizeof(physicalDeviceProperties2{}), 840},
		{"VkPhysicalDeviceSubgroupProperties", unsafe.Sizeof(subgroupProperties{}), 32},
		{"VkPhysicalDeviceMaintenance3Properties", unsafe.Sizeof(maintenance3Properties{}), 32},
		{"VkPhysicalDeviceDriverProperties", unsafe.Sizeof(driverProperties{}), 536},
		{"VkPhysicalDeviceFeatures", unsafe.Sizeof(physicalDeviceFeatures{}), 220},
		{"VkPhysicalDeviceFeatures2", unsafe.Sizeof(physicalDeviceFeatures2{}), 240},
		{"VkPhysicalDevice16BitStorageFeatures", unsafe.Sizeof(storage16BitFeatures{}), 32},
		{"VkPhysicalDeviceShaderFloat16Int8Features", unsafe.Sizeof(float16Int8Features{}), 24},
		{"VkPhysicalDeviceCooperativeMatrixPropertiesKHR", unsafe.Sizeof(coopMatProperties{}), 24},
		{"VkPhysicalDeviceCooperativeMatrixFeaturesKHR", unsafe.Sizeof(coopMatFeatures{}), 24},
		{"VkCooperativeMatrixPropertiesKHR", unsafe.Sizeof(cooperativeMatrixProperties{}), 56},
		{"VkMemoryType", unsafe.Sizeof(MemoryType{}), 8},
		{"VkMemoryHeap", unsafe.Sizeof(MemoryHeap{}), 16},
		{"VkPhysicalDeviceMemoryProperties", unsafe.Sizeof(memoryProperties{}), 520},
		{"VkQueueFamilyProperties", unsafe.Sizeof(QueueFamily{}), 24},
		{"VkDeviceQueueCreateInfo", unsafe.Sizeof(deviceQueueCreateInfo{}), 40},
		{"VkDeviceCreateInfo", unsafe.Sizeof(deviceCreateInfo{}), 72},
		{"VkBufferCreateInfo", unsafe.Sizeof(bufferCreateInfo{}), 56},
		{"VkMemoryRequirements", unsafe.Sizeof(memoryRequirements{}), 24},
		{"VkMemoryAllocateInfo", unsafe.Sizeof(memoryAllocateInfo{}), 32},
		{"VkShaderModuleCreateInfo", unsafe.Sizeof(shaderModuleCreateInfo{}), 40},
		{"VkDescriptorSetLayoutBinding", unsafe.Sizeof(descriptorSetLayoutBinding{}), 24},
		{"VkDescriptorSetLayoutCreateInfo", unsafe.Sizeof(descriptorSetLayoutCreateInfo{}), 32},
		{"VkDescriptorPoolSize", unsafe.Sizeof(descriptorPoolSize{}), 8},
		{"VkDescriptorPoolCreateInfo", unsafe.Sizeof(descriptorPoolCreateInfo{}), 40},
		{"VkDescriptorSetAllocateInfo", unsafe.Sizeof(descriptorSetAllocateInfo{}), 40},
		{"VkDescriptorBufferInfo", unsafe.Sizeof(descriptorBufferInfo{}), 24},
		{"VkWriteDescriptorSet", unsafe.Sizeof(writeDescriptorSet{}), 64},
		{"VkPushConstantRange", unsafe.Sizeof(pushConstantRange{}), 12},
		{"VkPipelineLayoutCreateInfo", unsafe.Sizeof(pipelineLayoutCreateInfo{}), 48},
		{"VkPipelineShaderStageCreateInfo", unsafe.Sizeof(pipelineShaderStageCreateInfo{}), 48},
		{"VkComputePipelineCreateInfo", unsafe.Sizeof(computePipelineCreateInfo{}), 96},
		{"VkPipelineCacheCreateInfo", unsafe.Sizeof(pipelineCacheCreateInfo{}), 40},
		{"VkCommandPoolCreateInfo", unsafe.Sizeof(commandPoolCreateInfo{}), 24},
		{"VkCommandBufferAllocateInfo", unsafe.Sizeof(commandBufferAllocateInfo{}), 32},
		{"VkCommandBufferBeginInfo", unsafe.Sizeof(commandBufferBeginInfo{}), 32},
		{"VkMemoryBarrier", unsafe.Sizeof(memoryBarrier{}), 24},
		{"VkBufferCopy", unsafe.Sizeof(bufferCopy{}), 24},
		{"VkSubmitInfo", unsafe.Sizeof(submitInfo{}), 72},
		{"VkFenceCreateInfo", unsafe.Sizeof(fenceCreateInfo{}), 24},
		{"VkQueryPoolCreateInfo", unsafe.Sizeof(queryPoolCreateInfo{}), 32},
	}
	for _, s := range sizes {
		if s.got != s.want {
			t.Errorf("sizeof(%s) = %d, want %d", s.name, s.got, s.want)
		}
	}
	var l Limits
	var p physicalDeviceProperties
	var f physicalDeviceFeatures
	var m memoryProperties
	var cp computePipelineCreateInfo
	var w writeDescriptorSet
	var b bufferCreateInfo
	var si submitInfo
	var dc deviceCreateInfo
	var ss pipelineShaderStageCreateInfo
	var dp driverProperties
	var m3 maintenance3Properties
	var ai applicationInfo
	var qp queryPoolCreateInfo
	var qf QueueFamily
	offsets := []struct {
		name string
		got  uintptr
		want uintptr
	}{
		{"limits.maxStorageBufferRange", unsafe.Offsetof(l.MaxStorageBufferRange), 28},
		{"limits.maxPushConstantsSize", unsafe.Offsetof(l.MaxPushConstantsSize), 32},
		{"limits.bufferImageGranularity", unsafe.Offsetof(l.BufferImageGranularity), 48},
		{"limits.maxComputeSharedMemorySize", unsafe.Offsetof(l.MaxComputeSharedMemorySize), 216},
		{"limits.maxComputeWorkGroupCount", unsafe.Offsetof(l.MaxComputeWorkGroupCount), 220},
		{"limits.maxComputeWorkGroupInvocations", unsafe.Offsetof(l.MaxComputeWorkGroupInvocations), 232},
		{"limits.maxComputeWorkGroupSize", unsafe.Offsetof(l.MaxComputeWorkGroupSize), 236},
		{"limits.minMemoryMapAlignment", unsafe.Offsetof(l.MinMemoryMapAlignment), 304},
		{"limits.minStorageBufferOffsetAlignment", unsafe.Offsetof(l.MinStorageBufferOffsetAlignment), 328},
		{"limits.timestampPeriod", unsafe.Offsetof(l.TimestampPeriod), 424},
		{"limits.nonCoherentAtomSize", unsafe.Offsetof(l.NonCoherentAtomSize), 496},
		{"properties.deviceName", unsafe.Offsetof(p.deviceName), 20},
		{"properties.pipelineCacheUUID", unsafe.Offsetof(p.pipelineCacheUUID), 276},
		{"properties.limits", unsafe.Offsetof(p.limits), 296},
		{"properties.sparseProperties", unsafe.Offsetof(p.sparseProperties), 800},
		{"features.shaderFloat64", unsafe.Offsetof(f.shaderFloat64), 156},
		{"features.shaderInt64", unsafe.Offsetof(f.shaderInt64), 160},
		{"features.shaderInt16", unsafe.Offsetof(f.shaderInt16), 164},
		{"memory.memoryHeapCount", unsafe.Offsetof(m.memoryHeapCount), 260},
		{"memory.memoryHeaps", unsafe.Offsetof(m.memoryHeaps), 264},
		{"computePipeline.stage", unsafe.Offsetof(cp.stage), 24},
		{"computePipeline.layout", unsafe.Offsetof(cp.layout), 72},
		{"computePipeline.basePipelineIndex", unsafe.Offsetof(cp.basePipelineIndex), 88},
		{"writeDescriptorSet.dstSet", unsafe.Offsetof(w.dstSet), 16},
		{"writeDescriptorSet.descriptorType", unsafe.Offsetof(w.descriptorType), 36},
		{"writeDescriptorSet.pBufferInfo", unsafe.Offsetof(w.pBufferInfo), 48},
		{"bufferCreateInfo.size", unsafe.Offsetof(b.size), 24},
		{"bufferCreateInfo.usage", unsafe.Offsetof(b.usage), 32},
		{"bufferCreateInfo.pQueueFamilyIndices", unsafe.Offsetof(b.pQueueFamilyIndices), 48},
		{"submitInfo.commandBufferCount", unsafe.Offsetof(si.commandBufferCount), 40},
		{"submitInfo.pCommandBuffers", unsafe.Offsetof(si.pCommandBuffers), 48},
		{"deviceCreateInfo.pEnabledFeatures", unsafe.Offsetof(dc.pEnabledFeatures), 64},
		{"shaderStage.module", unsafe.Offsetof(ss.module), 24},
		{"shaderStage.pName", unsafe.Offsetof(ss.pName), 32},
		{"driverProperties.conformanceVersion", unsafe.Offsetof(dp.conformanceVersion), 532},
		{"maintenance3.maxMemoryAllocationSize", unsafe.Offsetof(m3.maxMemoryAllocationSize), 24},
		{"applicationInfo.apiVersion", unsafe.Offsetof(ai.apiVersion), 44},
		{"limits.timestampComputeAndGraphics", unsafe.Offsetof(l.TimestampComputeAndGraphics), 420},
		{"queryPoolCreateInfo.queryType", unsafe.Offsetof(qp.queryType), 20},
		{"queryPoolCreateInfo.pipelineStatistics", unsafe.Offsetof(qp.pipelineStatistics), 28},
		{"queueFamily.timestampValidBits", unsafe.Offsetof(qf.TimestampValidBits), 8},
	}
	for _, o := range offsets {
		if o.got != o.want {
			t.Errorf("offsetof(%s) = %d, want %d", o.name, o.got, o.want)
		}
	}
}
