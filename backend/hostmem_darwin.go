package backend

import "golang.org/x/sys/unix"

// systemMemory returns the physical memory sysctl hw.memsize reports.
func systemMemory() int64 {
	n, err := unix.SysctlUint64("hw.memsize")
	if err != nil || n > 1<<62 {
		return 0
	}
	return int64(n)
}

// availableMemory returns the machine's physical memory: macOS has no
// figure of the memory still free that accounts for what it can reclaim.
func availableMemory() (avail int64, source string, known bool) {
	n := systemMemory()
	return n, "hw.memsize, the physical memory", n > 0
}
