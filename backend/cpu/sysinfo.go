package cpu

import (
	"bufio"
	"os"
	"runtime"
	"strconv"
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

// hostMemory returns the total memory in bytes: MemTotal of /proc/meminfo,
// else what the operating system reports, else 0.
func hostMemory() int64 {
	if v := procField("/proc/meminfo", "MemTotal"); v != "" {
		f := strings.Fields(v)
		if n, err := strconv.ParseInt(f[0], 10, 64); err == nil {
			if len(f) > 1 && strings.EqualFold(f[1], "kB") {
				n *= 1024
			}
			return n
		}
	}
	return systemMemory()
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
