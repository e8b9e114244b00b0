//go:build !darwin

package nn

// systemMemory returns 0 where /proc/meminfo is the only source (Linux) or
// none is known.
func systemMemory() int64 { return 0 }
