package vk

// Handles. Dispatchable handles (instance, physical device, device, queue,
// command buffer) are pointers; the others are 64-bit on every platform.
type (
	InstanceHandle       uintptr
	PhysicalDeviceHandle uintptr
	DeviceHandle         uintptr
	QueueHandle          uintptr
	CommandBufferHandle  uintptr
)

// StructureType values (VkStructureType) of the structures declared here.
const (
	stApplicationInfo                 uint32 = 0
	stInstanceCreateInfo              uint32 = 1
	stDeviceQueueCreateInfo           uint32 = 2
	stDeviceCreateInfo                uint32 = 3
	stSubmitInfo                      uint32 = 4
	stMemoryAllocateInfo              uint32 = 5
	stFenceCreateInfo                 uint32 = 8
	stQueryPoolCreateInfo             uint32 = 11
	stBufferCreateInfo                uint32 = 12
	stShaderModuleCreateInfo          uint32 = 16
	stPipelineCacheCreateInfo         uint32 = 17
	stPipelineShaderStageCreateInfo   uint32 = 18
	stComputePipelineCreateInfo       uint32 = 29
	stPipelineLayoutCreateInfo        uint32 = 30
	stDescriptorSetLayoutCreateInfo   uint32 = 32
	stDescriptorPoolCreateInfo        uint32 = 33
	stDescriptorSetAllocateInfo       uint32 = 34
	stWriteDescriptorSet              uint32 = 35
	stCommandPoolCreateInfo           uint32 = 39
	stCommandBufferAllocateInfo       uint32 = 40
	stCommandBufferBeginInfo          uint32 = 42
	stMemoryBarrier                   uint32 = 46
	stPhysicalDeviceFeatures2         uint32 = 1000059000
	stPhysicalDeviceProperties2       uint32 = 1000059001
	stPhysicalDeviceFloat16Int8       uint32 = 1000082000 // VkPhysicalDeviceShaderFloat16Int8Features
	stPhysicalDevice16BitStorage      uint32 = 1000083000
	stPhysicalDeviceSubgroup          uint32 = 1000094000 // VkPhysicalDeviceSubgroupProperties
	stPhysicalDeviceMaintenance3      uint32 = 1000168000
	stPhysicalDeviceDriverProperties  uint32 = 1000196000
	stPhysicalDeviceCoopMatFeatures   uint32 = 1000506000 // VkPhysicalDeviceCooperativeMatrixFeaturesKHR
	stCooperativeMatrixProperties     uint32 = 1000506001 // VkCooperativeMatrixPropertiesKHR
	stPhysicalDeviceCoopMatProperties uint32 = 1000506002 // VkPhysicalDeviceCooperativeMatrixPropertiesKHR
	stPhysicalDeviceFloatControls     uint32 = 1000197000 // VkPhysicalDeviceFloatControlsProperties
)

// Enumerants and flag bits used by the binding and its callers.
const (
	instanceCreateEnumeratePortability uint32 = 0x1 // VK_INSTANCE_CREATE_ENUMERATE_PORTABILITY_BIT_KHR

	// VkPhysicalDeviceType
	DeviceTypeOther         uint32 = 0
	DeviceTypeIntegratedGPU uint32 = 1
	DeviceTypeDiscreteGPU   uint32 = 2
	DeviceTypeVirtualGPU    uint32 = 3
	DeviceTypeCPU           uint32 = 4

	// VkQueueFlagBits
	QueueGraphics uint32 = 0x1
	QueueCompute  uint32 = 0x2
	QueueTransfer uint32 = 0x4

	// VkMemoryPropertyFlagBits
	MemoryDeviceLocal  uint32 = 0x1
	MemoryHostVisible  uint32 = 0x2
	MemoryHostCoherent uint32 = 0x4
	MemoryHostCached   uint32 = 0x8

	// VkMemoryHeapFlagBits
	HeapDeviceLocal uint32 = 0x1

	// VkBufferUsageFlagBits
	BufferTransferSrc   uint32 = 0x1
	BufferTransferDst   uint32 = 0x2
	BufferStorageBuffer uint32 = 0x20

	descriptorTypeStorageBuffer uint32 = 7
	shaderStageCompute          uint32 = 0x20
	pipelineBindPointCompute    uint32 = 1
	commandBufferLevelPrimary   uint32 = 0
	commandPoolResetBuffer      uint32 = 0x2 // VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT
	queryTypeTimestamp          uint32 = 2   // VK_QUERY_TYPE_TIMESTAMP
	queryResult64               uint32 = 0x1 // VK_QUERY_RESULT_64_BIT
	queryResultWait             uint32 = 0x2 // VK_QUERY_RESULT_WAIT_BIT

	// VkPipelineStageFlagBits
	StageTopOfPipe     uint32 = 0x1
	StageComputeShader uint32 = 0x800
	StageTransfer      uint32 = 0x1000
	StageBottomOfPipe  uint32 = 0x2000
	StageHost          uint32 = 0x4000

	// VkAccessFlagBits
	AccessShaderRead    uint32 = 0x20
	AccessShaderWrite   uint32 = 0x40
	AccessTransferRead  uint32 = 0x800
	AccessTransferWrite uint32 = 0x1000
	AccessHostRead      uint32 = 0x2000
	AccessHostWrite     uint32 = 0x4000

	// VkSubgroupFeatureFlagBits
	SubgroupBasic      uint32 = 0x1
	SubgroupVote       uint32 = 0x2
	SubgroupArithmetic uint32 = 0x4
	SubgroupBallot     uint32 = 0x8
	SubgroupShuffle    uint32 = 0x10
)

// MakeAPIVersion is VK_MAKE_API_VERSION(0, major, minor, patch).
func MakeAPIVersion(major, minor, patch uint32) uint32 { return major<<22 | minor<<12 | patch }

// APIVersionString formats a packed API version as "major.minor.patch".
func APIVersionString(v uint32) string {
	return itoa(v>>22&0x7f) + "." + itoa(v>>12&0x3ff) + "." + itoa(v&0xfff)
}

func itoa(v uint32) string {
	if v == 0 {
		return "0"
	}
	var b [10]byte
	i := len(b)
	for v > 0 {
		i--
		b[i] = byte('0' + v%10)
		v /= 10
	}
	return string(b[i:])
}

// The structures below are the C structures of the same name without the
// Vk prefix (the lower-case ones are private). Pointer members are uintptr,
// filled with pinned addresses.

type applicationInfo struct { // VkApplicationInfo, 48 bytes
	sType              uint32
	pNext              uintptr
	pApplicationName   uintptr
	applicationVersion uint32
	pEngineName        uintptr
	engineVersion      uint32
	apiVersion         uint32
}

type instanceCreateInfo struct { // VkInstanceCreateInfo, 64 bytes
	sType                   uint32
	pNext                   uintptr
	flags                   uint32
	pApplicationInfo        uintptr
	enabledLayerCount       uint32
	ppEnabledLayerNames     uintptr
	enabledExtensionCount   uint32
	ppEnabledExtensionNames uintptr
}

type extensionProperties struct { // VkExtensionProperties, 260 bytes
	extensionName [256]byte
	specVersion   uint32
}

// Limits is VkPhysicalDeviceLimits (504 bytes).
type Limits struct {
	MaxImageDimension1D                             uint32
	MaxImageDimension2D                             uint32
	MaxImageDimension3D                             uint32
	MaxImageDimensionCube                           uint32
	MaxImageArrayLayers                             uint32
	MaxTexelBufferElements                          uint32
	MaxUniformBufferRange                           uint32
	MaxStorageBufferRange                           uint32
	MaxPushConstantsSize                            uint32
	MaxMemoryAllocationCount                        uint32
	MaxSamplerAllocationCount                       uint32
	BufferImageGranularity                          uint64
	SparseAddressSpaceSize                          uint64
	MaxBoundDescriptorSets                          uint32
	MaxPerStageDescriptorSamplers                   uint32
	MaxPerStageDescriptorUniformBuffers             uint32
	MaxPerStageDescriptorStorageBuffers             uint32
	MaxPerStageDescriptorSampledImages              uint32
	MaxPerStageDescriptorStorageImages              uint32
	MaxPerStageDescriptorInputAttachments           uint32
	MaxPerStageResources                            uint32
	MaxDescriptorSetSamplers                        uint32
	MaxDescriptorSetUniformBuffers                  uint32
	MaxDescriptorSetUniformBuffersDynamic           uint32
	MaxDescriptorSetStorageBuffers                  uint32
	MaxDescriptorSetStorageBuffersDynamic           uint32
	MaxDescriptorSetSampledImages                   uint32
	MaxDescriptorSetStorageImages                   uint32
	MaxDescriptorSetInputAttachments                uint32
	MaxVertexInputAttributes                        uint32
	MaxVertexInputBindings                          uint32
	MaxVertexInputAttributeOffset                   uint32
	MaxVertexInputBindingStride                     uint32
	MaxVertexOutputComponents                       uint32
	MaxTessellationGenerationLevel                  uint32
	MaxTessellationPatchSize                        uint32
	MaxTessellationControlPerVertexInputComponents  uint32
	MaxTessellationControlPerVertexOutputComponents uint32
	MaxTessellationControlPerPatchOutputComponents  uint32
	MaxTessellationControlTotalOutputComponents     uint32
	MaxTessellationEvaluationInputComponents        uint32
	MaxTessellationEvaluationOutputComponents       uint32
	MaxGeometryShaderInvocations                    uint32
	MaxGeometryInputComponents                      uint32
	MaxGeometryOutputComponents                     uint32
	MaxGeometryOutputVertices                       uint32
	MaxGeometryTotalOutputComponents                uint32
	MaxFragmentInputComponents                      uint32
	MaxFragmentOutputAttachments                    uint32
	MaxFragmentDualSrcAttachments                   uint32
	MaxFragmentCombinedOutputResources              uint32
	MaxComputeSharedMemorySize                      uint32
	MaxComputeWorkGroupCount                        [3]uint32
	MaxComputeWorkGroupInvocations                  uint32
	MaxComputeWorkGroupSize                         [3]uint32
	SubPixelPrecisionBits                           uint32
	SubTexelPrecisionBits                           uint32
	MipmapPrecisionBits                             uint32
	MaxDrawIndexedIndexValue                        uint32
	MaxDrawIndirectCount                            uint32
	MaxSamplerLodBias                               float32
	MaxSamplerAnisotropy                            float32
	MaxViewports                                    uint32
	MaxViewportDimensions                           [2]uint32
	ViewportBoundsRange                             [2]float32
	ViewportSubPixelBits                            uint32
	MinMemoryMapAlignment                           uintptr
	MinTexelBufferOffsetAlignment                   uint64
	MinUniformBufferOffsetAlignment                 uint64
	MinStorageBufferOffsetAlignment                 uint64
	MinTexelOffset                                  int32
	MaxTexelOffset                                  uint32
	MinTexelGatherOffset                            int32
	MaxTexelGatherOffset                            uint32
	MinInterpolationOffset                          float32
	MaxInterpolationOffset                          float32
	SubPixelInterpolationOffsetBits                 uint32
	MaxFramebufferWidth                             uint32
	MaxFramebufferHeight                            uint32
	MaxFramebufferLayers                            uint32
	FramebufferColorSampleCounts                    uint32
	FramebufferDepthSampleCounts                    uint32
	FramebufferStencilSampleCounts                  uint32
	FramebufferNoAttachmentsSampleCounts            uint32
	MaxColorAttachments                             uint32
	SampledImageColorSampleCounts                   uint32
	SampledImageIntegerSampleCounts                 uint32
	SampledImageDepthSampleCounts                   uint32
	SampledImageStencilSampleCounts                 uint32
	StorageImageSampleCounts                        uint32
	MaxSampleMaskWords                              uint32
	TimestampComputeAndGraphics                     uint32
	TimestampPeriod                                 float32
	MaxClipDistances                                uint32
	MaxCullDistances                                uint32
	MaxCombinedClipAndCullDistances                 uint32
	DiscreteQueuePriorities                         uint32
	PointSizeRange                                  [2]float32
	LineWidthRange                                  [2]float32
	PointSizeGranularity                            float32
	LineWidthGranularity                            float32
	StrictLines                                     uint32
	StandardSampleLocations                         uint32
	OptimalBufferCopyOffsetAlignment                uint64
	OptimalBufferCopyRowPitchAlignment              uint64
	NonCoherentAtomSize                             uint64
}

type physicalDeviceProperties struct { // VkPhysicalDeviceProperties, 824 bytes
	apiVersion        uint32
	driverVersion     uint32
	vendorID          uint32
	deviceID          uint32
	deviceType        uint32
	deviceName        [256]byte
	pipelineCacheUUID [16]byte
	limits            Limits
	sparseProperties  [5]uint32
}

type physicalDeviceProperties2 struct { // VkPhysicalDeviceProperties2, 840 bytes
	sType      uint32
	pNext      uintptr
	properties physicalDeviceProperties
}

type floatControlsProperties struct { // VkPhysicalDeviceFloatControlsProperties, 88 bytes
	sType                      uint32
	pNext                      uintptr
	denormBehaviorIndependence uint32
	roundingModeIndependence   uint32
	// shaderSignedZeroInfNanPreserveFloat16, 32, 64, then the denorm and
	// rounding-mode flags, 3 each (VkBool32).
	signedZeroInfNanPreserve [3]uint32
	rest                     [12]uint32
}

type subgroupProperties struct { // VkPhysicalDeviceSubgroupProperties, 32 bytes
	sType                     uint32
	pNext                     uintptr
	subgroupSize              uint32
	supportedStages           uint32
	supportedOperations       uint32
	quadOperationsInAllStages uint32
}

type maintenance3Properties struct { // VkPhysicalDeviceMaintenance3Properties, 32 bytes
	sType                   uint32
	pNext                   uintptr
	maxPerSetDescriptors    uint32
	maxMemoryAllocationSize uint64
}

type driverProperties struct { // VkPhysicalDeviceDriverProperties, 536 bytes
	sType              uint32
	pNext              uintptr
	driverID           uint32
	driverName         [256]byte
	driverInfo         [256]byte
	conformanceVersion [4]uint8
}

type coopMatProperties struct { // VkPhysicalDeviceCooperativeMatrixPropertiesKHR, 24 bytes
	sType                            uint32
	pNext                            uintptr
	cooperativeMatrixSupportedStages uint32
}

type coopMatFeatures struct { // VkPhysicalDeviceCooperativeMatrixFeaturesKHR, 24 bytes
	sType                               uint32
	pNext                               uintptr
	cooperativeMatrix                   uint32
	cooperativeMatrixRobustBufferAccess uint32
}

type cooperativeMatrixProperties struct { // VkCooperativeMatrixPropertiesKHR, 56 bytes
	sType                  uint32
	pNext                  uintptr
	mSize, nSize, kSize    uint32
	aType, bType, cType    uint32
	resultType             uint32
	saturatingAccumulation uint32
	scope                  uint32
}

// physicalDeviceFeatures is VkPhysicalDeviceFeatures (55 VkBool32, 220
// bytes). Only the members compute uses are named.
type physicalDeviceFeatures struct {
	robustBufferAccess uint32
	_                  [38]uint32 // fullDrawIndexUint32 … shaderCullDistance
	shaderFloat64      uint32     // member 39
	shaderInt64        uint32
	shaderInt16        uint32
	_                  [13]uint32 // shaderResourceResidency … inheritedQueries
}

type physicalDeviceFeatures2 struct { // VkPhysicalDeviceFeatures2, 240 bytes
	sType    uint32
	pNext    uintptr
	features physicalDeviceFeatures
}

type storage16BitFeatures struct { // VkPhysicalDevice16BitStorageFeatures, 32 bytes
	sType                              uint32
	pNext                              uintptr
	storageBuffer16BitAccess           uint32
	uniformAndStorageBuffer16BitAccess uint32
	storagePushConstant16              uint32
	storageInputOutput16               uint32
}

type float16Int8Features struct { // VkPhysicalDeviceShaderFloat16Int8Features, 24 bytes
	sType         uint32
	pNext         uintptr
	shaderFloat16 uint32
	shaderInt8    uint32
}

// MemoryType is VkMemoryType.
type MemoryType struct {
	PropertyFlags uint32
	HeapIndex     uint32
}

// MemoryHeap is VkMemoryHeap.
type MemoryHeap struct {
	Size  uint64
	Flags uint32
}

type memoryProperties struct { // VkPhysicalDeviceMemoryProperties, 520 bytes
	memoryTypeCount uint32
	memoryTypes     [32]MemoryType
	memoryHeapCount uint32
	memoryHeaps     [16]MemoryHeap
}

// QueueFamily is VkQueueFamilyProperties.
type QueueFamily struct {
	QueueFlags                  uint32
	QueueCount                  uint32
	TimestampValidBits          uint32
	MinImageTransferGranularity [3]uint32
}

type deviceQueueCreateInfo struct { // VkDeviceQueueCreateInfo, 40 bytes
	sType            uint32
	pNext            uintptr
	flags            uint32
	queueFamilyIndex uint32
	queueCount       uint32
	pQueuePriorities uintptr
}

type deviceCreateInfo struct { // VkDeviceCreateInfo, 72 bytes
	sType                   uint32
	pNext                   uintptr
	flags                   uint32
	queueCreateInfoCount    uint32
	pQueueCreateInfos       uintptr
	enabledLayerCount       uint32
	ppEnabledLayerNames     uintptr
	enabledExtensionCount   uint32
	ppEnabledExtensionNames uintptr
	pEnabledFeatures        uintptr
}

type bufferCreateInfo struct { // VkBufferCreateInfo, 56 bytes
	sType                 uint32
	pNext                 uintptr
	flags                 uint32
	size                  uint64
	usage                 uint32
	sharingMode           uint32
	queueFamilyIndexCount uint32
	pQueueFamilyIndices   uintptr
}

type memoryRequirements struct { // VkMemoryRequirements, 24 bytes
	size           uint64
	alignment      uint64
	memoryTypeBits uint32
}

type memoryAllocateInfo struct { // VkMemoryAllocateInfo, 32 bytes
	sType           uint32
	pNext           uintptr
	allocationSize  uint64
	memoryTypeIndex uint32
}

type shaderModuleCreateInfo struct { // VkShaderModuleCreateInfo, 40 bytes
	sType    uint32
	pNext    uintptr
	flags    uint32
	codeSize uintptr
	pCode    uintptr
}

type descriptorSetLayoutBinding struct { // VkDescriptorSetLayoutBinding, 24 bytes
	binding            uint32
	descriptorType     uint32
	descriptorCount    uint32
	stageFlags         uint32
	pImmutableSamplers uintptr
}

type descriptorSetLayoutCreateInfo struct { // VkDescriptorSetLayoutCreateInfo, 32 bytes
	sType        uint32
	pNext        uintptr
	flags        uint32
	bindingCount uint32
	pBindings    uintptr
}

type descriptorPoolSize struct { // VkDescriptorPoolSize, 8 bytes
	typ             uint32
	descriptorCount uint32
}

type descriptorPoolCreateInfo struct { // VkDescriptorPoolCreateInfo, 40 bytes
	sType         uint32
	pNext         uintptr
	flags         uint32
	maxSets       uint32
	poolSizeCount uint32
	pPoolSizes    uintptr
}

type descriptorSetAllocateInfo struct { // VkDescriptorSetAllocateInfo, 40 bytes
	sType              uint32
	pNext              uintptr
	descriptorPool     uint64
	descriptorSetCount uint32
	pSetLayouts        uintptr
}

type descriptorBufferInfo struct { // VkDescriptorBufferInfo, 24 bytes
	buffer uint64
	offset uint64
	rng    uint64
}

type writeDescriptorSet struct { // VkWriteDescriptorSet, 64 bytes
	sType            uint32
	pNext            uintptr
	dstSet           uint64
	dstBinding       uint32
	dstArrayElement  uint32
	descriptorCount  uint32
	descriptorType   uint32
	pImageInfo       uintptr
	pBufferInfo      uintptr
	pTexelBufferView uintptr
}

type pushConstantRange struct { // VkPushConstantRange, 12 bytes
	stageFlags uint32
	offset     uint32
	size       uint32
}

type pipelineLayoutCreateInfo struct { // VkPipelineLayoutCreateInfo, 48 bytes
	sType                  uint32
	pNext                  uintptr
	flags                  uint32
	setLayoutCount         uint32
	pSetLayouts            uintptr
	pushConstantRangeCount uint32
	pPushConstantRanges    uintptr
}

type pipelineShaderStageCreateInfo struct { // VkPipelineShaderStageCreateInfo, 48 bytes
	sType               uint32
	pNext               uintptr
	flags               uint32
	stage               uint32
	module              uint64
	pName               uintptr
	pSpecializationInfo uintptr
}

type computePipelineCreateInfo struct { // VkComputePipelineCreateInfo, 96 bytes
	sType              uint32
	pNext              uintptr
	flags              uint32
	stage              pipelineShaderStageCreateInfo
	layout             uint64
	basePipelineHandle uint64
	basePipelineIndex  int32
}

type pipelineCacheCreateInfo struct { // VkPipelineCacheCreateInfo, 40 bytes
	sType           uint32
	pNext           uintptr
	flags           uint32
	initialDataSize uintptr
	pInitialData    uintptr
}

type commandPoolCreateInfo struct { // VkCommandPoolCreateInfo, 24 bytes
	sType            uint32
	pNext            uintptr
	flags            uint32
	queueFamilyIndex uint32
}

type commandBufferAllocateInfo struct { // VkCommandBufferAllocateInfo, 32 bytes
	sType              uint32
	pNext              uintptr
	commandPool        uint64
	level              uint32
	commandBufferCount uint32
}

type commandBufferBeginInfo struct { // VkCommandBufferBeginInfo, 32 bytes
	sType            uint32
	pNext            uintptr
	flags            uint32
	pInheritanceInfo uintptr
}

type memoryBarrier struct { // VkMemoryBarrier, 24 bytes
	sType         uint32
	pNext         uintptr
	srcAccessMask uint32
	dstAccessMask uint32
}

type bufferCopy struct { // VkBufferCopy, 24 bytes
	srcOffset, dstOffset, size uint64
}

type submitInfo struct { // VkSubmitInfo, 72 bytes
	sType                uint32
	pNext                uintptr
	waitSemaphoreCount   uint32
	pWaitSemaphores      uintptr
	pWaitDstStageMask    uintptr
	commandBufferCount   uint32
	pCommandBuffers      uintptr
	signalSemaphoreCount uint32
	pSignalSemaphores    uintptr
}

type fenceCreateInfo struct { // VkFenceCreateInfo, 24 bytes
	sType uint32
	pNext uintptr
	flags uint32
}

type queryPoolCreateInfo struct { // VkQueryPoolCreateInfo, 32 bytes
	sType              uint32
	pNext              uintptr
	flags              uint32
	queryType          uint32
	queryCount         uint32
	pipelineStatistics uint32
}
