package backend

import "syscall"

// systemMemory returns the total memory sysinfo(2) reports.
func systemMemory() int64 {
	var si syscall.Sysinfo_t
	if err := syscall.Sysinfo(&si); err != nil {
		return 0
	}
	return int64(si.Totalram) * int64(si.Unit)
}

// availableMemory returns the memory the process may still allocate and
// where that figure comes from (see availableIn); known is false when it
// cannot be told.
func availableMemory() (avail int64, source string, known bool) { return availableIn("/") }
