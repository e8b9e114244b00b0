//go:build !linux

package cpu

// systemMemory is unknown outside Linux.
func systemMemory() int64 { return 0 }
