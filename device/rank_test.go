package device

import (
	"strings"
	"testing"
	"time"

	"github.com/tartanml/tartan/backend"
)

// entry makes a listing entry for the ranking tests: its id, kind, rank
// by kind, vendor (name and PCI id) and name.
func entry(id, kind string, rank int, vendor string, pci uint32, name string) Entry {
	return Entry{Info: backend.Info{ID: id, Name: name, Vendor: vendor}, Kind: kind, rank: rank, pciVendor: pci}
}

// The devices of the ranking tests: one H200 through OpenCL and Vulkan,
// another GPU model, and the host's CPU three ways.
var (
	clH200  = entry("opencl:0:0", KindGPU, 300, "NVIDIA Corporation", 0x10de, "NVIDIA H200")
	clA100  = entry("opencl:0:1", KindGPU, 300, "NVIDIA Corporation", 0x10de, "NVIDIA A100-SXM4-80GB")
	vkH200  = entry("vulkan:0", KindGPU, 190, "NVIDIA", 0x10de, "NVIDIA H200")
	cpuBack = entry("cpu", KindCPU, 100, "AuthenticAMD", 0, "AMD EPYC")
	pocl    = entry("opencl:1:0", KindCPUOpenCL, 50, "AuthenticAMD", 0x1002, "pthread-znver3")
	lvp     = entry("vulkan:1", KindCPUVulkan, 30, "Mesa", 0x10005, "llvmpipe (LLVM 15.0.6, 256 bits)")
)

// TestRankByMeasurement checks the order List gives for made-up listings
// and measurements: the backends of the same hardware are ordered by
// their measured step when at least two of them are measured, the rest by
// kind.
func TestRankByMeasurement(t *testing.T) {
	ms := func(us int) *Measurement {
		return &Measurement{Step: time.Duration(us) * time.Microsecond, Runs: 9, Measured: "2026-12-01T00:00:00Z"}
	}
	type dev struct {
		e    Entry
		step int // µs; 0 for none
	}
	unusable := vkH200
	unusable.rank = 0
	for _, c := range []struct {
		name     string
		devs     []dev
		order    string // ids best first
		measured string // the ids ranked by measurement
	}{
		{"nothing measured: OpenCL before Vulkan by kind",
			[]dev{{clH200, 0}, {vkH200, 0}, {cpuBack, 0}}, "opencl:0:0 vulkan:0 cpu", ""},
		{"Vulkan measured faster on the same GPU",
			[]dev{{cpuBack, 0}, {clH200, 900}, {vkH200, 700}}, "vulkan:0 opencl:0:0 cpu", "opencl:0:0 vulkan:0"},
		{"OpenCL measured faster on the same GPU",
			[]dev{{cpuBack, 0}, {clH200, 700}, {vkH200, 900}}, "opencl:0:0 vulkan:0 cpu", "opencl:0:0 vulkan:0"},
		{"equal times keep the order by kind",
			[]dev{{vkH200, 800}, {clH200, 800}, {cpuBack, 0}}, "opencl:0:0 vulkan:0 cpu", "vulkan:0 opencl:0:0"},
		{"one backend measured is not a comparison",
			[]dev{{clH200, 0}, {vkH200, 10}, {cpuBack, 0}}, "opencl:0:0 vulkan:0 cpu", ""},
		{"a faster measurement does not cross to other hardware",
			[]dev{{clH200, 900}, {cpuBack, 5}, {pocl, 0}}, "opencl:0:0 cpu opencl:1:0", ""},
		{"the fast backend takes its group's best place, past another GPU",
			[]dev{{clH200, 900}, {clA100, 0}, {vkH200, 400}, {cpuBack, 0}},
			"vulkan:0 opencl:0:1 opencl:0:0 cpu", "opencl:0:0 vulkan:0"},
		{"the host's CPU three ways, PoCL fastest",
			[]dev{{cpuBack, 300}, {pocl, 200}, {lvp, 15000}}, "opencl:1:0 cpu vulkan:1", "cpu opencl:1:0 vulkan:1"},
		{"the host's CPU, the unmeasured one keeps its place",
			[]dev{{cpuBack, 0}, {pocl, 2100}, {lvp, 1500}}, "cpu vulkan:1 opencl:1:0", "opencl:1:0 vulkan:1"},
		{"an unusable device stays last however fast",
			[]dev{{clH200, 900}, {unusable, 1}, {cpuBack, 0}}, "opencl:0:0 cpu vulkan:0", ""},
		{"two GPUs and the CPU, each pair measured",
			[]dev{{cpuBack, 100}, {pocl, 2000}, {clH200, 900}, {vkH200, 600}, {lvp, 0}},
			"vulkan:0 opencl:0:0 cpu opencl:1:0 vulkan:1", "cpu opencl:1:0 opencl:0:0 vulkan:0"},
	} {
		t.Run(c.name, func(t *testing.T) {
			var l Listing
			for _, d := range c.devs {
				e := d.e
				if d.step > 0 {
					e.Measured = ms(d.step)
				}
				l.Devices = append(l.Devices, e)
			}
			rank(l.Devices)
			var order, measured []string
			for _, e := range l.Sorted() {
				order = append(order, e.ID)
			}
			for _, e := range l.Devices {
				if e.RankedBy == RankedByMeasured {
					measured = append(measured, e.ID)
				} else if e.RankedBy != RankedByKind {
					t.Errorf("%s ranked by %q", e.ID, e.RankedBy)
				}
			}
			if got := strings.Join(order, " "); got != c.order {
				t.Errorf("order %s, want %s", got, c.order)
			}
			if got := strings.Join(measured, " "); got != c.measured {
				t.Errorf("ranked by measurement: %q, want %q", got, c.measured)
			}
			if r := l.Recommended(); r.ID != order[0] {
				t.Errorf("recommended %s, want the first, %s", r.ID, order[0])
			}
			n := 0
			for _, e := range l.Devices {
				if e.Recommended {
					n++
				}
			}
			if n != 1 {
				t.Errorf("%d recommended entries", n)
			}
		})
	}
}

// TestRankingWords checks how the recommendation's reason reads, by kind
// and by measurement.
func TestRankingWords(t *testing.T) {
	l := Listing{Devices: []Entry{cpuBack, pocl, lvp}}
	l.Devices[0].Why = "Tartan's own CPU backend, 2 cores"
	l.Devices[1].Measured = &Measurement{Step: 2100 * time.Microsecond, Runs: 9, Measured: "2026-12-01T00:00:00Z"}
	rank(l.Devices)
	r := l.Recommended()
	if got, want := l.Reason(r), "Tartan's own CPU backend, 2 cores; ranked by kind"; got != want {
		t.Errorf("by kind: %q, want %q", got, want)
	}
	if got, want := l.Ranking(l.Devices[1]), "ranked by kind (measured: a training step in 2.1 ms)"; got != want {
		t.Errorf("measured alone: %q, want %q", got, want)
	}
	if got := strings.Join(l.Devices[0].SameHardware, " "); got != "opencl:1:0 vulkan:1" {
		t.Errorf("the CPU backend's same hardware: %s", got)
	}
	l.Devices[0].Measured = &Measurement{Step: 110 * time.Microsecond, Runs: 31, Measured: "2026-12-01T00:00:00Z"}
	l.Devices[2].Measured = &Measurement{Step: 14700 * time.Microsecond, Runs: 31, Measured: "2026-12-01T00:00:00Z"}
	rank(l.Devices)
	r = l.Recommended()
	want := "Tartan's own CPU backend, 2 cores; ranked by measured speed: a training step in 110 µs, against 2.1 ms on opencl:1:0 and 15 ms on vulkan:1 (the same CPU)"
	if got := l.Reason(r); r.ID != "cpu" || got != want {
		t.Errorf("measured: %s %q, want cpu %q", r.ID, got, want)
	}
}

func TestSameHardware(t *testing.T) {
	radv := entry("vulkan:0", KindGPU, 190, "AMD", 0x1002, "AMD Instinct MI210 (RADV GFX90A)")
	radv.pciDevice = 0x740f
	amdvlk := entry("vulkan:1", KindGPU, 190, "AMD", 0x1002, "AMD Instinct MI210")
	amdvlk.pciDevice = 0x740f
	rocm := entry("opencl:0:0", KindGPU, 300, "Advanced Micro Devices, Inc.", 0x1002, "gfx90a")
	other := entry("vulkan:2", KindGPU, 190, "AMD", 0x1002, "AMD Radeon RX 6800 (RADV NAVI21)")
	other.pciDevice = 0x73bf
	uhdCL := entry("opencl:1:0", KindIntegratedGPU, 200, "Intel(R) Corporation", 0x8086, "Intel(R) UHD Graphics 770")
	uhdVK := entry("vulkan:3", KindIntegratedGPU, 180, "Intel", 0x8086, "Intel(R) UHD Graphics 770 (ADL-S GT1)")
	noPCI := entry("opencl:2:0", KindGPU, 300, "NVIDIA Corporation", 0, "NVIDIA H200")
	for _, c := range []struct {
		a, b Entry
		same bool
	}{
		{clH200, vkH200, true},
		{clH200, clA100, false},
		{radv, amdvlk, true}, // the same PCI ids, two Vulkan drivers
		{radv, rocm, true},   // ROCm's gfx name within RADV's
		{rocm, amdvlk, false},
		{radv, other, false},
		{uhdCL, uhdVK, true},
		{noPCI, vkH200, true}, // the vendor by name
		{clH200, radv, false},
		{cpuBack, pocl, true},
		{pocl, lvp, true},
		{cpuBack, clH200, false},
		{entry("vulkan:9", KindGPU, 190, "Mesa", 0x10005, "H200 emulator"), vkH200, false},
	} {
		if got := sameHardware(c.a, c.b); got != c.same {
			t.Errorf("sameHardware(%s %q, %s %q) = %v", c.a.ID, c.a.Name, c.b.ID, c.b.Name, got)
		}
		if got := sameHardware(c.b, c.a); got != c.same {
			t.Errorf("sameHardware is not symmetric for %s and %s", c.a.ID, c.b.ID)
		}
	}
}
