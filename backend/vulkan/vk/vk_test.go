package vk

import (
	"encoding/binary"
	"errors"
	"strings"
	"testing"
)

// device opens the first Vulkan device, or skips the test saying why.
func device(t *testing.T) (*Instance, *Device) {
	t.Helper()
	in, err := NewInstance("tartan-vk-test")
	if errors.Is(err, ErrNotAvailable) {
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	pds, err := in.PhysicalDevices()
	if err != nil {
		in.Destroy()
		t.Fatal(err)
	}
	if len(pds) == 0 {
		in.Destroy()
		t.Skip("vulkan: the loader lists no physical device (install mesa-vulkan-drivers for lavapipe)")
	}
	d, err := pds[0].NewDevice(Features{ShaderInt64: true, ShaderFloat64: true})
	if err != nil {
		in.Destroy()
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Destroy(); in.Destroy() })
	return in, d
}

func TestNotAvailable(t *testing.T) {
	_, err := openLoader([]string{"libtartan-no-such-vulkan.so.1"})
	if !errors.Is(err, ErrNotAvailable) {
		t.Fatalf("err = %v, want ErrNotAvailable", err)
	}
	var na *NotAvailableError
	if !errors.As(err, &na) || len(na.Tried) != 1 || !strings.Contains(err.Error(), "libtartan-no-such-vulkan.so.1") {
		t.Errorf("error %q does not name what was tried", err)
	}
}

func TestResultNames(t *testing.T) {
	for r, want := range map[Result]string{
		ErrOutOfDeviceMemory: "VK_ERROR_OUT_OF_DEVICE_MEMORY", ErrDeviceLost: "VK_ERROR_DEVICE_LOST",
		Success: "VK_SUCCESS", ErrOutOfPoolMemory: "VK_ERROR_OUT_OF_POOL_MEMORY", Result(-77): "VK_RESULT(-77)",
	} {
		if got := ResultName(r); got != want {
			t.Errorf("ResultName(%d) = %q, want %q", r, got, want)
		}
	}
	err := error(&Error{Op: "vkQueueSubmit", Result: ErrDeviceLost, Detail: "2 command buffers"})
	if got, want := err.Error(), "vulkan: vkQueueSubmit (2 command buffers): VK_ERROR_DEVICE_LOST (-4)"; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
	if !errors.Is(err, &Error{Result: ErrDeviceLost}) || errors.Is(err, &Error{Result: ErrOutOfDeviceMemory}) || !IsResult(err, ErrDeviceLost) {
		t.Error("errors.Is does not match by result")
	}
	if APIVersionString(MakeAPIVersion(1, 3, 239)) != "1.3.239" {
		t.Errorf("APIVersionString = %q", APIVersionString(MakeAPIVersion(1, 3, 239)))
	}
}

func TestPhysicalDevices(t *testing.T) {
	in, d := device(t)
	pd := d.PhysicalDevice()
	t.Logf("%s (%s), API %s, driver %s %s, subgroup %d, int64 %v, float64 %v, float16 %v, 16-bit storage %v, cooperative matrix %v",
		pd.Name, pd.TypeName(), APIVersionString(pd.APIVersion), pd.DriverName, pd.DriverInfo, pd.SubgroupSize,
		pd.Features.ShaderInt64, pd.Features.ShaderFloat64, pd.Features.ShaderFloat16, pd.Features.StorageBuffer16BitAccess, pd.CooperativeMatrix)
	l := pd.Limits
	t.Logf("limits: storage buffer %d, shared %d, work-group %v (%d invocations), groups %v, push constants %d, one allocation %d",
		l.MaxStorageBufferRange, l.MaxComputeSharedMemorySize, l.MaxComputeWorkGroupSize, l.MaxComputeWorkGroupInvocations,
		l.MaxComputeWorkGroupCount, l.MaxPushConstantsSize, pd.MaxMemoryAllocationSize)
	// The minimums the specification guarantees every device: a wrong
	// structure layout would read other members here.
	if l.MaxPushConstantsSize < 128 || l.MaxComputeSharedMemorySize < 16384 || l.MaxComputeWorkGroupInvocations < 128 ||
		l.MaxComputeWorkGroupSize[0] < 128 || l.MaxComputeWorkGroupCount[0] < 65535 || l.MaxStorageBufferRange < 1<<27 ||
		l.MaxBoundDescriptorSets < 4 || l.NonCoherentAtomSize == 0 || l.NonCoherentAtomSize > 256 {
		t.Errorf("limits below the specification's minimums: %+v", l)
	}
	if pd.SubgroupSize < 1 || pd.SubgroupOperations&SubgroupBasic == 0 || pd.APIVersion < MinAPIVersion || pd.Name == "" {
		t.Errorf("subgroup size %d, operations %#x, API %s, name %q", pd.SubgroupSize, pd.SubgroupOperations, APIVersionString(pd.APIVersion), pd.Name)
	}
	if len(pd.MemoryTypes) == 0 || len(pd.MemoryHeaps) == 0 || pd.ComputeQueueFamily() < 0 || len(pd.Extensions) == 0 {
		t.Errorf("memory types %v, heaps %v, queue families %v, %d extensions", pd.MemoryTypes, pd.MemoryHeaps, pd.QueueFamilies, len(pd.Extensions))
	}
	coherent := false
	for _, m := range pd.MemoryTypes {
		coherent = coherent || m.PropertyFlags&(MemoryHostVisible|MemoryHostCoherent) == MemoryHostVisible|MemoryHostCoherent
	}
	if !coherent {
		t.Error("no host-visible coherent memory type, which the specification requires")
	}
	if strings.Contains(pd.Name, "llvmpipe") {
		if pd.Type != DeviceTypeCPU || !pd.Features.ShaderInt64 || !pd.Features.ShaderFloat64 || pd.CooperativeMatrix {
			t.Errorf("lavapipe: type %d, int64 %v, float64 %v, cooperative matrix %v", pd.Type, pd.Features.ShaderInt64, pd.Features.ShaderFloat64, pd.CooperativeMatrix)
		}
		if !d.Enabled.ShaderInt64 || !d.Enabled.ShaderFloat64 {
			t.Errorf("enabled features %+v", d.Enabled)
		}
	}
	_ = in
}

// hostBuffer makes a host-visible coherent buffer of n bytes, mapped.
func hostBuffer(t *testing.T, d *Device, n uint64) (Buffer, []byte) {
	t.Helper()
	b, err := d.NewBuffer(n, BufferStorageBuffer|BufferTransferSrc|BufferTransferDst)
	if err != nil {
		t.Fatal(err)
	}
	req := d.BufferMemoryRequirements(b)
	ti := -1
	for i, m := range d.PhysicalDevice().MemoryTypes {
		if req.TypeBits&(1<<i) != 0 && m.PropertyFlags&(MemoryHostVisible|MemoryHostCoherent) == MemoryHostVisible|MemoryHostCoherent {
			ti = i
			break
		}
	}
	if ti < 0 {
		t.Fatal("no host-visible coherent memory type for the buffer")
	}
	m, err := d.Allocate(req.Size, ti)
	if err != nil {
		t.Fatal(err)
	}
	if err := d.BindBufferMemory(b, m, 0); err != nil {
		t.Fatal(err)
	}
	data, err := d.Map(m, 0, n)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Unmap(m); d.DestroyBuffer(b); d.Free(m) })
	return b, data
}

// TestFillCopySubmit fills one buffer on the device, copies part of it into
// another over host-written words, and checks every word.
func TestFillCopySubmit(t *testing.T) {
	_, d := device(t)
	const n = 64
	a, ah := hostBuffer(t, d, 4*n)
	b, bh := hostBuffer(t, d, 4*n)
	for i := range n {
		binary.LittleEndian.PutUint32(bh[4*i:], uint32(1000+i))
	}
	pool, err := d.NewCommandPool()
	if err != nil {
		t.Fatal(err)
	}
	defer d.DestroyCommandPool(pool)
	cb, err := d.NewCommandBuffer(pool)
	if err != nil {
		t.Fatal(err)
	}
	fence, err := d.NewFence()
	if err != nil {
		t.Fatal(err)
	}
	defer d.DestroyFence(fence)
	if err := cb.Begin(false); err != nil {
		t.Fatal(err)
	}
	if err := cb.FillBuffer(a, 0, WholeSize, 0xdeadbeef); err != nil {
		t.Fatal(err)
	}
	cb.Barrier(StageTransfer, StageTransfer, AccessTransferWrite, AccessTransferRead)
	cb.CopyBuffer(a, b, []Copy{{SrcOffset: 0, DstOffset: 16 * 4, Size: 8 * 4}})
	cb.Barrier(StageTransfer, StageHost, AccessTransferWrite, AccessHostRead)
	if err := cb.End(); err != nil {
		t.Fatal(err)
	}
	if err := cb.FillBuffer(a, 2, 4, 0); err == nil {
		t.Error("FillBuffer at offset 2: no error")
	}
	for round := range 2 { // the same recording, submitted twice
		if err := d.Submit([]CommandBufferHandle{cb.H}, fence); err != nil {
			t.Fatal(err)
		}
		if ok, err := d.WaitFence(fence, 10e9); err != nil || !ok {
			t.Fatalf("round %d: WaitFence = %v, %v", round, ok, err)
		}
		if ok, err := d.FenceSignaled(fence); err != nil || !ok {
			t.Fatalf("round %d: FenceSignaled = %v, %v", round, ok, err)
		}
		if err := d.ResetFence(fence); err != nil {
			t.Fatal(err)
		}
		for i := range n {
			want := uint32(1000 + i)
			if i >= 16 && i < 24 {
				want = 0xdeadbeef
			}
			if got := binary.LittleEndian.Uint32(bh[4*i:]); got != want {
				t.Fatalf("round %d: word %d = %#x, want %#x", round, i, got, want)
			}
			if got := binary.LittleEndian.Uint32(ah[4*i:]); got != 0xdeadbeef {
				t.Fatalf("round %d: filled word %d = %#x", round, i, got)
			}
		}
		binary.LittleEndian.PutUint32(bh[16*4:], 7)
	}
	if err := d.WaitIdle(); err != nil {
		t.Fatal(err)
	}
}

// TestHugeAllocation asks for far more memory than any device has: the
// result is an error naming VK_ERROR_OUT_OF_DEVICE_MEMORY (or host
// memory), not a crash.
func TestHugeAllocation(t *testing.T) {
	_, d := device(t)
	m, err := d.Allocate(1<<50, 0)
	if err == nil {
		d.Free(m)
		t.Fatal("allocating 1 PiB succeeded")
	}
	if !IsResult(err, ErrOutOfDeviceMemory) && !IsResult(err, ErrOutOfHostMemory) {
		t.Errorf("err = %v, want an out-of-memory result", err)
	}
	t.Log(err)
}

func TestPipelineCacheData(t *testing.T) {
	_, d := device(t)
	c, err := d.NewPipelineCache(nil)
	if err != nil {
		t.Fatal(err)
	}
	data, err := d.PipelineCacheData(c)
	d.DestroyPipelineCache(c)
	if err != nil {
		t.Fatal(err)
	}
	// The data starts with the header VkPipelineCacheHeaderVersionOne: its
	// length (32), version 1, the vendor and device ids and the cache UUID.
	pd := d.PhysicalDevice()
	if len(data) < 32 || binary.LittleEndian.Uint32(data) != 32 || binary.LittleEndian.Uint32(data[4:]) != 1 ||
		binary.LittleEndian.Uint32(data[8:]) != pd.VendorID || binary.LittleEndian.Uint32(data[12:]) != pd.DeviceID ||
		string(data[16:32]) != string(pd.PipelineCacheUUID[:]) {
		t.Fatalf("cache data does not start with the device's header: % x", data[:min(len(data), 32)])
	}
	c2, err := d.NewPipelineCache(data)
	if err != nil {
		t.Fatal(err)
	}
	d.DestroyPipelineCache(c2)
}
