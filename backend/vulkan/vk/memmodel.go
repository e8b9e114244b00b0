package vk

// vulkanMemoryModelFeatures is VkPhysicalDeviceVulkanMemoryModelFeatures.
type vulkanMemoryModelFeatures struct {
	sType                                                        uint32
	pNext                                                        uintptr
	vulkanMemoryModel, deviceScope, availabilityVisibilityChains uint32
}

const stPhysicalDeviceVulkanMemoryModel uint32 = 1000211000

// HasVulkanMemoryModel reports the vulkanMemoryModel feature (Vulkan 1.2,
// or VK_KHR_vulkan_memory_model), which SPIR-V modules with cooperative
// matrices need.
func (pd *PhysicalDevice) HasVulkanMemoryModel() bool {
	v12 := pd.APIVersion >= MakeAPIVersion(1, 2, 0)
	if pd.APIVersion < MinAPIVersion || !v12 && !pd.HasExtension("VK_KHR_vulkan_memory_model") {
		return false
	}
	var ps pins
	defer ps.done()
	mm := vulkanMemoryModelFeatures{sType: stPhysicalDeviceVulkanMemoryModel}
	feats := physicalDeviceFeatures2{sType: stPhysicalDeviceFeatures2, pNext: ptr(&ps, &mm)}
	call(pd.in.getFeatures2, uintptr(pd.h), ptr(&ps, &feats))
	return bool32(mm.vulkanMemoryModel)
}

// memoryModelFeatures returns the pNext entry enabling the Vulkan memory
// model, and the extension it needs before Vulkan 1.2 ("" for none).
func (pd *PhysicalDevice) memoryModelFeatures() (*vulkanMemoryModelFeatures, string) {
	ext := ""
	if pd.APIVersion < MakeAPIVersion(1, 2, 0) {
		ext = "VK_KHR_vulkan_memory_model"
	}
	return &vulkanMemoryModelFeatures{sType: stPhysicalDeviceVulkanMemoryModel, vulkanMemoryModel: 1}, ext
}
