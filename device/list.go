package device

import (
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/tartanml/tartan/backend"
	"github.com/tartanml/tartan/backend/cpu"
	"github.com/tartanml/tartan/backend/opencl"
	"github.com/tartanml/tartan/backend/opencl/cl"
	"github.com/tartanml/tartan/backend/vulkan"
	"github.com/tartanml/tartan/backend/vulkan/vk"
)

// Kinds of device, from most to least preferred for training.
const (
	KindGPU           = "gpu"            // a discrete GPU
	KindIntegratedGPU = "integrated-gpu" // a GPU sharing the host's memory
	KindCPU           = "cpu"            // Tartan's own CPU backend
	KindCPUOpenCL     = "cpu-opencl"     // a CPU reached through OpenCL (PoCL, Intel's CPU runtime)
	KindAccelerator   = "accelerator"    // another OpenCL device type
	KindCPUVulkan     = "cpu-vulkan"     // a CPU reached through Vulkan (lavapipe)
	KindOtherVulkan   = "vulkan"         // another Vulkan device type
)

// Entry is one device Tartan can use.
type Entry struct {
	backend.Info
	// Kind is one of the Kind constants.
	Kind string `json:"kind"`
	// Recommended marks the device Tartan picks when none is configured.
	Recommended bool `json:"recommended"`
	// Why explains the device's rank by kind, such as "discrete GPU, 132
	// compute units, 140 GiB" (Listing.Reason adds how its place was
	// decided).
	Why string `json:"why"`
	// Measured is the device's cached measurement (see Measure), nil when
	// it has none for its current name and driver.
	Measured *Measurement `json:"measured,omitempty"`
	// RankedBy says how the device's place was decided: RankedByKind or
	// RankedByMeasured.
	RankedBy string `json:"ranked_by"`
	// SameHardware lists the other entries that reach the same hardware
	// (another backend of the same GPU, or the host's CPU).
	SameHardware []string `json:"same_hardware,omitempty"`

	rank      int
	order     int    // place, best first (rank)
	pciVendor uint32 // PCI vendor id, 0 when unknown
	pciDevice uint32 // PCI device id, 0 when unknown (OpenCL)
	candidate *opencl.Candidate
}

// Listing is what List finds: the devices, in a stable order (cpu, then
// OpenCL devices in discovery order, then Vulkan devices), the best one
// marked Recommended (Sorted gives them best first), and notes on what
// could not be used.
type Listing struct {
	Devices []Entry  `json:"devices"`
	Notes   []string `json:"notes,omitempty"`
	// Hint says how to install OpenCL, when it is missing or lists no GPU.
	Hint string `json:"hint,omitempty"`
}

// Recommended returns the recommended entry. The CPU is always listed, so
// there is always one.
func (l Listing) Recommended() Entry {
	for _, e := range l.Devices {
		if e.Recommended {
			return e
		}
	}
	return l.Devices[0]
}

// Find returns the entry with the given id.
func (l Listing) Find(id string) (Entry, bool) {
	for _, e := range l.Devices {
		if e.ID == id {
			return e, true
		}
	}
	return Entry{}, false
}

// IDs lists the ids with names, for messages.
func (l Listing) IDs() string {
	var s []string
	for _, e := range l.Devices {
		s = append(s, e.ID+" ("+e.Name+")")
	}
	return strings.Join(s, ", ")
}

// openclList is cl discovery through package opencl; tests replace it.
var openclList = opencl.List

// vulkanList is Vulkan discovery; tests replace it.
var vulkanList = vulkan.List

// List finds every device: the CPU backend always, every OpenCL device and
// every Vulkan device (a missing OpenCL or Vulkan is noted). Exactly one
// entry is Recommended: the best by kind (discrete GPU, integrated GPU,
// Tartan's CPU backend, OpenCL on a CPU), then by compute throughput and
// memory; by kind a GPU through Vulkan ranks after every GPU through
// OpenCL, and a CPU through Vulkan last. But the backends of the same
// hardware that have a measurement in the cache (see Measure) are ordered
// by it. List measures nothing; a damaged cache is noted and ignored.
func List() Listing {
	var l Listing
	cd := cpu.New()
	ci := cd.Info()
	cd.Close()
	l.Devices = append(l.Devices, Entry{Info: ci, Kind: KindCPU, rank: 100,
		Why: fmt.Sprintf("Tartan's own CPU backend, %d cores", ci.ComputeUnits)})
	cs, err := openclList()
	switch {
	case errors.Is(err, cl.ErrNotAvailable):
		// The whole error: it lists every library and directory tried.
		l.Notes = append(l.Notes, strings.TrimPrefix(err.Error(), "opencl: "))
		l.Hint = hintNoOpenCL + installHint
	case err != nil:
		l.Notes = append(l.Notes, "OpenCL devices could not be listed: "+err.Error())
	}
	for i := range cs {
		c := cs[i]
		e := Entry{Info: c.Info(), candidate: &c}
		di := c.Device.Info()
		classify(&e, di)
		e.pciVendor = di.VendorID
		l.Devices = append(l.Devices, e)
	}
	l.Devices = append(l.Devices, vulkanEntries(&l)...)
	l.applyCache()
	rank(l.Devices)
	if l.Hint == "" && err == nil && !hasGPU(l) {
		l.Hint = hintNoGPU + installHint
	}
	return l
}

// hasGPU reports whether l lists a GPU, discrete or integrated.
func hasGPU(l Listing) bool {
	for _, e := range l.Devices {
		if e.Kind == KindGPU || e.Kind == KindIntegratedGPU {
			return true
		}
	}
	return false
}

// The install hint: a first line for the case, then the packages.
const (
	hintNoOpenCL = "No OpenCL platform was found, so Tartan runs on its CPU backend. To use a GPU, install\n" +
		"its vendor's OpenCL driver (an ICD) and the ICD loader:\n"
	hintNoGPU   = "No GPU is listed. To use one, install its vendor's OpenCL driver (an ICD):\n"
	installHint = "  Debian/Ubuntu: nvidia-opencl-icd (NVIDIA), mesa-opencl-icd or ROCm (AMD), intel-opencl-icd (Intel);\n" +
		"                 pocl-opencl-icd to try OpenCL on the CPU; ocl-icd-libopencl1 is the ICD loader\n" +
		"  Fedora: ocl-icd, with pocl, mesa-libOpenCL, intel-compute-runtime or rocm-opencl (NVIDIA's comes with its driver)\n" +
		"  Arch: ocl-icd, with opencl-nvidia, rocm-opencl-runtime, intel-compute-runtime or pocl\n" +
		"  macOS: OpenCL is built in\n" +
		"Then check: clinfo (package clinfo) lists each platform, and each installed driver has a file\n" +
		"in /etc/OpenCL/vendors; tartan devices lists its devices."
)

// classify sets an OpenCL entry's kind, rank and reason.
func classify(e *Entry, i cl.DeviceInfo) {
	mem := fmt.Sprintf("%d GiB", (i.GlobalMemSize+(1<<29))>>30)
	if i.GlobalMemSize < 1<<30 {
		mem = fmt.Sprintf("%d MiB", i.GlobalMemSize>>20)
	}
	switch {
	case i.Type&cl.DeviceTypeGPU != 0 && integrated(i):
		e.Kind, e.rank = KindIntegratedGPU, 200
		e.Why = fmt.Sprintf("integrated GPU, %d compute units, shares %s with the host", i.MaxComputeUnits, mem)
	case i.Type&cl.DeviceTypeGPU != 0:
		e.Kind, e.rank = KindGPU, 300
		e.Why = fmt.Sprintf("discrete GPU, %d compute units, %s", i.MaxComputeUnits, mem)
	case i.Type&cl.DeviceTypeCPU != 0:
		e.Kind, e.rank = KindCPUOpenCL, 50
		e.Why = "a CPU through OpenCL: Tartan's own CPU backend is faster on the same cores"
	default:
		e.Kind, e.rank = KindAccelerator, 40
		e.Why = fmt.Sprintf("OpenCL %s device", i.Type)
	}
	if !i.Available || !i.CompilerAvailable {
		e.rank = 0
		e.Why += " (unavailable or without a compiler)"
	}
}

// integrated guesses whether a GPU shares the host's memory: Intel's GPUs
// other than Arc, Apple's, and the mobile GPUs of ARM, Qualcomm and
// Imagination. (The binding does not query CL_DEVICE_HOST_UNIFIED_MEMORY.)
func integrated(i cl.DeviceInfo) bool {
	v, n := strings.ToLower(i.Vendor), strings.ToLower(i.Name)
	switch {
	case strings.Contains(v, "intel"):
		return !strings.Contains(n, "arc")
	case strings.Contains(v, "apple"), strings.Contains(v, "arm"), strings.Contains(v, "qualcomm"), strings.Contains(v, "imagination"):
		return true
	}
	return false
}

// better reports whether a outranks b: by kind, then compute units, then
// memory. Ties keep the earlier entry.
func better(a, b Entry) bool {
	if a.rank != b.rank {
		return a.rank > b.rank
	}
	if a.ComputeUnits != b.ComputeUnits {
		return a.ComputeUnits > b.ComputeUnits
	}
	return a.Memory > b.Memory
}

// Sorted returns the entries best first, as ranked by List.
func (l Listing) Sorted() []Entry {
	out := append([]Entry(nil), l.Devices...)
	sort.SliceStable(out, func(i, j int) bool { return out[i].order < out[j].order })
	return out
}

// vulkanEntries lists the Vulkan devices, noting on l why there are none.
func vulkanEntries(l *Listing) []Entry {
	cs, err := vulkanList()
	switch {
	case errors.Is(err, vk.ErrNotAvailable):
		l.Notes = append(l.Notes, "Vulkan is "+strings.ReplaceAll(strings.TrimPrefix(err.Error(), "vulkan: "), "\n", " "))
		return nil
	case err != nil:
		l.Notes = append(l.Notes, "Vulkan devices could not be listed: "+strings.ReplaceAll(err.Error(), "\n", " "))
		return nil
	case len(cs) == 0:
		l.Notes = append(l.Notes, "Vulkan is available but lists no device")
		return nil
	}
	var out []Entry
	for _, c := range cs {
		e := Entry{Info: c.Info(), pciVendor: c.Device.VendorID, pciDevice: c.Device.DeviceID}
		classifyVulkan(&e, c.Device)
		out = append(out, e)
	}
	return out
}

// classifyVulkan sets a Vulkan entry's kind, rank and reason: below the
// OpenCL devices of its kind, as the Vulkan backend is the younger one.
func classifyVulkan(e *Entry, pd *vk.PhysicalDevice) {
	mem := formatBytes(int64(min(pd.DeviceLocalBytes(), 1<<62)))
	switch pd.Type {
	case vk.DeviceTypeDiscreteGPU:
		e.Kind, e.rank = KindGPU, 190
		e.Why = "discrete GPU through Vulkan, " + mem
	case vk.DeviceTypeIntegratedGPU:
		e.Kind, e.rank = KindIntegratedGPU, 180
		e.Why = "integrated GPU through Vulkan, shares " + mem + " with the host"
	case vk.DeviceTypeCPU:
		e.Kind, e.rank = KindCPUVulkan, 30
		e.Why = "a CPU through Vulkan: Tartan's own CPU backend is faster on the same cores"
	default:
		e.Kind, e.rank = KindOtherVulkan, 35
		e.Why = "Vulkan " + pd.TypeName() + " device"
	}
	if pd.APIVersion < vk.MinAPIVersion || pd.ComputeQueueFamily() < 0 {
		e.rank = 0
		e.Why += " (Vulkan " + vk.APIVersionString(pd.APIVersion) + " or no compute queue: unusable)"
	}
}
