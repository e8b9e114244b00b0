package nn

import (
	"encoding/binary"
	"syscall"
)

// systemMemory returns hw.memsize, the machine's memory in bytes, or 0.
func systemMemory() int64 {
	s, err := syscall.Sysctl("hw.memsize")
	if err != nil {
		return 0
	}
	b := []byte(s)
	// Sysctl drops a trailing zero byte; put it back.
	for len(b) < 8 {
		b = append(b, 0)
	}
	return int64(binary.LittleEndian.Uint64(b[:8]))
}
