package backend

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestAvailableMemory reads the available memory from fake /proc and cgroup
// files: MemAvailable, or a cgroup v1 or v2 limit less use when smaller.
func TestAvailableMemory(t *testing.T) {
	write := func(root, name, text string) {
		t.Helper()
		p := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	meminfo := "MemTotal:       24684092 kB\nMemFree:         1000000 kB\nMemAvailable:   20000000 kB\n"

	root := t.TempDir()
	write(root, "proc/meminfo", meminfo)
	if n, src, ok := availableIn(root); !ok || n != 20000000*1024 || !strings.Contains(src, "MemAvailable") {
		t.Errorf("meminfo only: %d, %q, %v", n, src, ok)
	}

	// cgroup v2, limited two levels up; a looser limit below.
	root = t.TempDir()
	write(root, "proc/meminfo", meminfo)
	write(root, "proc/self/cgroup", "0::/user.slice/job/task\n")
	write(root, "proc/self/mountinfo", "30 25 0:26 / /sys/fs/cgroup rw,nosuid - cgroup2 cgroup2 rw\n")
	write(root, "sys/fs/cgroup/user.slice/memory.max", "1073741824\n")
	write(root, "sys/fs/cgroup/user.slice/memory.current", "536870912\n")
	write(root, "sys/fs/cgroup/user.slice/memory.stat", "anon 1\ninactive_file 104857600\n")
	write(root, "sys/fs/cgroup/user.slice/job/task/memory.max", "max\n")
	write(root, "sys/fs/cgroup/user.slice/job/memory.max", "4294967296\n")
	write(root, "sys/fs/cgroup/user.slice/job/memory.current", "0\n")
	want := int64(1073741824 - (536870912 - 104857600))
	if n, src, ok := availableIn(root); !ok || n != want || !strings.Contains(src, "/sys/fs/cgroup/user.slice/memory.max") {
		t.Errorf("cgroup v2: %d, %q, %v; want %d", n, src, ok, want)
	}

	// cgroup v1 in a namespaced view: the mount is the process's cgroup.
	root = t.TempDir()
	write(root, "proc/meminfo", meminfo)
	write(root, "proc/self/cgroup", "5:cpu:/\n4:memory:/process_api/abc\n0::/\n")
	write(root, "proc/self/mountinfo", "35 31 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory\n")
	write(root, "sys/fs/cgroup/memory/memory.limit_in_bytes", "2147483648\n")
	write(root, "sys/fs/cgroup/memory/memory.usage_in_bytes", "1073741824\n")
	if n, src, ok := availableIn(root); !ok || n != 1073741824 || !strings.Contains(src, "memory.limit_in_bytes") {
		t.Errorf("cgroup v1: %d, %q, %v", n, src, ok)
	}
	// No limit: MemAvailable.
	write(root, "sys/fs/cgroup/memory/memory.limit_in_bytes", "9223372036854771712\n")
	if n, _, ok := availableIn(root); !ok || n != 20000000*1024 {
		t.Errorf("cgroup v1 without a limit: %d, %v", n, ok)
	}
	if n, src, ok := availableIn(t.TempDir()); ok {
		t.Errorf("no files: %d, %q", n, src)
	}
}

// TestHostBytes checks the bytes HostBytes gives against hand-written
// little-endian encodings (on little-endian hosts; elsewhere it must give
// nil), and that it aliases the slice.
func TestHostBytes(t *testing.T) {
	f := []float32{1.5, -2}
	b := HostBytes(f)
	if !littleEndian {
		if b != nil {
			t.Fatalf("HostBytes on a big-endian host: % x, want nil", b)
		}
		return
	}
	if want := []byte{0, 0, 0xc0, 0x3f, 0, 0, 0, 0xc0}; string(b) != string(want) {
		t.Errorf("float32 bytes % x, want % x", b, want)
	}
	b[7] = 0x40
	if f[1] != 2 {
		t.Errorf("writing the bytes of -2 as 2 gave %v: the bytes do not alias the slice", f[1])
	}
	if got := HostBytes([]int64{-1, 2}); len(got) != 16 || got[0] != 0xff || got[8] != 2 {
		t.Errorf("int64 bytes % x", got)
	}
	if HostBytes([]bool{true}) != nil {
		t.Error("HostBytes of a []bool is not nil")
	}
}
