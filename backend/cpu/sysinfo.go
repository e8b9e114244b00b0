package cpu

import (
	"bufio"
	"os"
	"runtime"
	"strings"
)

// cpuModel returns the processor's model name from /proc/cpuinfo ("model
// name" on x86, "Model" or "Hardware" on ARM), or a generic name.
func cpuModel() string {
	for _, key := range []string{"model name", "Model", "Hardware", "cpu model"} {
		if v := procField("/proc/cpuinfo", key); v != "" {
			return v
		}
	}
	return runtime.GOARCH + " CPU"
}

// cpuVendor returns the vendor id from /proc/cpuinfo, if any.
func cpuVendor() string {
	if v := procField("/proc/cpuinfo", "vendor_id"); v != "" {
		return v
	}
	return procField("/proc/cpuinfo", "CPU implementer")
}

// procField returns the value of the first "key : value" line of a /proc
// file whose key matches, or "".
func procField(path, key string) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if ok && strings.TrimSpace(k) == key {
			return strings.TrimSpace(v)
		}
	}
	return ""
}
