//go:build !linux && !darwin

package backend

// systemMemory is unknown outside Linux and macOS.
func systemMemory() int64 { return 0 }

// availableMemory is unknown outside Linux and macOS: only the explicit
// limit applies.
func availableMemory() (avail int64, source string, known bool) { return 0, "", false }
