// Package spirv emits SPIR-V compute shaders from kir kernels, for the
// Vulkan backend. Nothing here needs a Vulkan driver: the output is a
// module of 32-bit words that the runtime hands to vkCreateShaderModule.
package spirv

import (
	"encoding/binary"
	"math/bits"

	"github.com/tartanml/tartan/kir"
	"github.com/tartanml/tartan/tile"
)

// Target is what the device offers the emitter: its limits, and the
// optional features the runtime enabled when it created the device.
type Target struct {
	// MaxWorkGroupSize is the largest work-group the device runs in one
	// dimension (the smaller of maxComputeWorkGroupSize[0] and
	// maxComputeWorkGroupInvocations).
	MaxWorkGroupSize int
	// MaxGroupCount is maxComputeWorkGroupCount.
	MaxGroupCount [3]int
	// SubgroupSize is the device's sub-group width (0: unknown).
	SubgroupSize int
	// SharedBytes is maxComputeSharedMemorySize; without 8 KiB of it
	// products and reductions run as loop nests.
	SharedBytes int
	// Int64 and Float64 report shaderInt64 and shaderFloat64.
	Int64, Float64 bool
	// NaNPreserve32 and NaNPreserve64 report
	// shaderSignedZeroInfNanPreserveFloat32 and ...Float64 (Vulkan 1.2 or
	// VK_KHR_shader_float_controls): modules then ask the driver to keep
	// NaNs and infinities, which IEEE semantics need.
	NaNPreserve32, NaNPreserve64 bool
	// Coop, when its M is non-zero, runs tiled float32 products on
	// cooperative matrices (VK_KHR_cooperative_matrix) of this shape in
	// sub-groups of SubgroupSize invocations, which must be known: see
	// coop.go. The runtime sets it only where the device reports the shape
	// and it enabled the extension and the 16-bit type.
	Coop CoopShape
	// StorageRange, when not 0, is the most bytes one storage-buffer
	// descriptor may span (maxStorageBufferRange). A buffer whose storage
	// (its own elements, or those of the buffer it views) spans more is
	// split: bound as several descriptors over consecutive ChunkBytes of
	// its slot (see Kernel.Chunks).
	StorageRange uint64
}

// ChunkBytes returns the bytes of each descriptor of a split binding: the
// largest power of two within StorageRange, so that an element's
// descriptor and its place there are a shift and a mask of its index.
func (t Target) ChunkBytes() uint64 { return 1 << max(bits.Len64(t.StorageRange), 1) >> 1 }

// Chunks returns the descriptors that binding buffer id of p takes on t:
// 1, or as many ChunkBytes ranges as its storage spans where that is
// more than StorageRange.
func (t Target) Chunks(p *kir.Program, id int) int {
	b := p.Buffers[id]
	if b.View != nil {
		b = p.Buffers[b.View.Of]
	}
	n := uint64(b.Size()) * uint64(StorageBytes(b.DType))
	if t.StorageRange == 0 || n <= t.StorageRange {
		return 1
	}
	c := t.ChunkBytes()
	return int((n + c - 1) / c)
}

// CoopShape is a sub-group-scope cooperative-matrix product that the
// device runs: an M × K matrix times a K × N one, both of float16
// (BFloat16: bfloat16) components, added to an M × N float32 one.
type CoopShape struct {
	M, N, K  int
	BFloat16 bool
}

// Kernel is one kir kernel as a compute shader ("main", GLCompute), with
// what the runtime needs to dispatch it. Binding i of descriptor set 0 is
// the storage of the slot holding buffer Bindings[i] (the output first,
// each buffer once), written by the kernel when Writes[i]. The
// push-constant block holds a 32-bit element offset per binding: where
// the buffer starts in its slot, in elements of its storage type
// (kir.Buffer.Base at the current step). Binding i takes Chunks[i]
// descriptors (nil: one each): where that is more than one, binding i is
// the first ChunkBytes of the slot, and bindings after len(Bindings)
// (those of binding 0 first) hold its next Chunks[i]-1 (see
// Target.StorageRange). LocalSize is the work-group
// size and Groups the work-groups to dispatch, all 0 when the kernel has
// no points. Tiling is the tiling a tiled product runs with (nil for
// other kernels): the schedule's, or the cost model's (From "model").
type Kernel struct {
	Name              string
	Words             []uint32
	Bindings          []int
	Writes            []bool
	Chunks            []int
	LocalSize, Groups [3]int
	Tiling            *kir.Tiling
}

// Key returns the module without its debug names: kernels of one key run
// the same code (bindings are numbered, not named), so they can share one
// pipeline.
func (k *Kernel) Key() string {
	var b []byte
	for i := 0; i < len(k.Words); {
		n := 1 // the header's words one by one, then whole instructions
		if i >= 5 {
			n = min(max(int(k.Words[i]>>16), 1), len(k.Words)-i)
		}
		if i < 5 || k.Words[i]&0xffff != opName {
			for _, w := range k.Words[i : i+n] {
				b = binary.LittleEndian.AppendUint32(b, w)
			}
		}
		i += n
	}
	return string(b)
}

// PushConstantBytes returns the size of the kernel's push-constant block.
func (k *Kernel) PushConstantBytes() int { return 4 * len(k.Bindings) }

// StorageBytes returns the bytes one element of dtype dt takes in device
// memory. Float16 and BFloat16 values are held as float32 values rounded
// to their type (as the OpenCL backend holds them), and Bool as a 32-bit
// 0 or 1, so that no 8- or 16-bit storage feature is needed.
func StorageBytes(dt tile.DType) int {
	switch dt {
	case tile.Int64, tile.Float64:
		return 8
	}
	return 4
}
