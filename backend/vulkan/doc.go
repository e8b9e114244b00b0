// Package vulkan is Tartan's Vulkan backend: a kir.Program's kernels become
// SPIR-V compute shaders (package spirv) run through Tartan's own binding
// (package vk), with no cgo.
//
// Devices are listed in vkEnumeratePhysicalDevices order with the ids
// "vulkan:<index>". An opened Device has one compute queue and a pipeline
// cache; 64-bit integers and floats are enabled where the device has them,
// and a program using them on a device without is refused, naming the
// kernel and buffer.
//
// An Executable holds one storage buffer per slot of the program (views
// lie inside their parent's slot, reached through element offsets passed
// as push constants; a buffer larger than maxStorageBufferRange is bound
// as several descriptors, consecutive ranges of a power of two of bytes,
// one chosen per element), a descriptor set per kernel and a compute
// pipeline per distinct shader (repeated layers share theirs), and the whole program recorded once into one command buffer:
// the dispatches in the groups kir.GroupLaunches decides (dispatches that
// touch no storage slot another of them writes), each group followed by a
// compute-to-compute barrier, a step loop's kernels recorded once per step
// with that step's offsets. Run waits for
// the previous run, copies in what the host wrote since and submits the
// same command buffer again, so a training step costs one submission.
// Storage is mapped host-visible memory on CPUs and integrated GPUs, and
// device-local memory reached through a staging buffer elsewhere.
//
// The driver's pipeline cache is kept on disk per device and driver
// ($XDG_CACHE_HOME/tartan/vulkan, checked before use; TARTAN_CACHE=off
// disables it), so a later process skips the shader compiler.
//
// Float16 and BFloat16 tensors are float32 on the device, Bool a 32-bit 0
// or 1 (spirv.StorageBytes).
//
// Float32 matrix products run in float32 (MatmulFP32, the default); with
// $TARTAN_MATMUL=fp16 or WithMatmul(MatmulFP16) they run on cooperative
// matrices (VK_KHR_cooperative_matrix) of float16-rounded operands with
// float32 accumulation, and Open fails on a device that reports no such
// shape. Their tilings (spirv.Space) are tuned by package tune: Compile
// applies the cached ones.
package vulkan
