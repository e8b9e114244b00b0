package device

import (
	"errors"
	"strings"
	"testing"

	"github.com/tartanml/tartan/backend/opencl"
	"github.com/tartanml/tartan/backend/opencl/cl"
	"github.com/tartanml/tartan/backend/vulkan"
	"github.com/tartanml/tartan/backend/vulkan/vk"
)

func TestVulkanIDs(t *testing.T) {
	for _, id := range []string{"vulkan:0", "vulkan:12"} {
		if err := ValidID(id); err != nil {
			t.Errorf("ValidID(%q): %v", id, err)
		}
	}
	for _, id := range []string{"vulkan:", "vulkan:a", "vulkan:-1", "vulkan:0:0"} {
		if err := ValidID(id); err == nil || !strings.Contains(err.Error(), "vulkan:<index>") {
			t.Errorf("ValidID(%q): %v", id, err)
		}
	}
	withoutOpenCL(t)
	if _, err := Open("vulkan:0"); err == nil || !errors.Is(err, vk.ErrNotAvailable) || !strings.Contains(err.Error(), "device vulkan:0") {
		t.Errorf("Open(vulkan:0) without Vulkan: %v", err)
	}
}

// TestVulkanRanking: a GPU through Vulkan ranks after the GPUs through
// OpenCL and before the CPU backend; a CPU through Vulkan after PoCL.
func TestVulkanRanking(t *testing.T) {
	old, oldVulkan := openclList, vulkanList
	defer func() { openclList, vulkanList = old, oldVulkan }()
	openclList = func() ([]opencl.Candidate, error) { return nil, &cl.NotAvailableError{} }
	pd := func(name string, typ uint32) *vk.PhysicalDevice {
		return &vk.PhysicalDevice{Name: name, Type: typ, APIVersion: vk.MakeAPIVersion(1, 3, 0),
			QueueFamilies: []vk.QueueFamily{{QueueFlags: vk.QueueCompute, QueueCount: 1}},
			MemoryHeaps:   []vk.MemoryHeap{{Size: 8 << 30, Flags: vk.HeapDeviceLocal}}}
	}
	vulkanList = func() ([]vulkan.Candidate, error) {
		return []vulkan.Candidate{{ID: "vulkan:0", Device: pd("llvmpipe", vk.DeviceTypeCPU)},
			{ID: "vulkan:1", Device: pd("Radeon", vk.DeviceTypeDiscreteGPU)}, {ID: "vulkan:2", Device: pd("UHD", vk.DeviceTypeIntegratedGPU)}}, nil
	}
	l := List()
	var kinds []string
	for _, e := range l.Sorted() {
		kinds = append(kinds, e.ID+" "+e.Kind)
	}
	if got, want := strings.Join(kinds, ", "), "vulkan:1 gpu, vulkan:2 integrated-gpu, cpu cpu, vulkan:0 cpu-vulkan"; got != want {
		t.Errorf("ranked %s, want %s", got, want)
	}
	if r := l.Recommended(); r.ID != "vulkan:1" || !strings.Contains(r.Why, "through Vulkan") {
		t.Errorf("recommended %+v", r)
	}
	// Behind every OpenCL GPU.
	if a, b := (Entry{rank: 190}), (Entry{rank: 200}); better(a, b) {
		t.Error("a discrete GPU through Vulkan outranks an integrated GPU through OpenCL")
	}
}

// TestVulkanDevice lists and opens the machine's Vulkan devices (lavapipe
// here) through package device.
func TestVulkanDevice(t *testing.T) {
	cs, err := vulkan.List()
	if err != nil || len(cs) == 0 {
		t.Skipf("no Vulkan device: %v", err)
	}
	l := List()
	e, ok := l.Find(cs[0].ID)
	if !ok || e.Backend != "vulkan" || e.Name != cs[0].Device.Name || e.Kind == "" || e.Why == "" {
		t.Fatalf("entry %+v (found %v)", e, ok)
	}
	d, sel, err := Select(cs[0].ID)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if sel.ID != cs[0].ID || d.Info().Backend != "vulkan" {
		t.Errorf("selection %+v, device %+v", sel, d.Info())
	}
	if _, err := Open("vulkan:99"); err == nil || !strings.Contains(err.Error(), "Vulkan devices: vulkan:0") {
		t.Errorf("Open(vulkan:99): %v", err)
	}
}
