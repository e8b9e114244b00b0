package cpu

import (
	"runtime"

	"github.com/tartanml/tartan/backend"
)

// cpuModel returns the processor's model name from /proc/cpuinfo ("model
// name" on x86, "Model" or "Hardware" on ARM), or a generic name.
func cpuModel() string {
	for _, key := range []string{"model name", "Model", "Hardware", "cpu model"} {
		if v := backend.ProcField("/proc/cpuinfo", key); v != "" {
			return v
		}
	}
	return runtime.GOARCH + " CPU"
}

// cpuVendor returns the vendor id from /proc/cpuinfo, if any.
func cpuVendor() string {
	if v := backend.ProcField("/proc/cpuinfo", "vendor_id"); v != "" {
		return v
	}
	return backend.ProcField("/proc/cpuinfo", "CPU implementer")
}
