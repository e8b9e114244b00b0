package cpu

import (
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/tartanml/tartan/backend"
	"github.com/tartanml/tartan/tile"
)

// doubling returns a graph "double" with input x of the given shape and
// output y = 2x.
func doubling(shape ...int) *tile.Graph {
	g := tile.NewGraph("double")
	x := g.Input("x", tile.Float32, tile.Shape(shape))
	g.SetOutput("y", g.Mul(x, g.Scalar(2, tile.Float32)))
	return g
}

func wantOOM(t *testing.T, err error, wants ...string) {
	t.Helper()
	var oom *backend.OutOfMemoryError
	if !errors.Is(err, backend.ErrOutOfMemory) || !errors.As(err, &oom) {
		t.Fatalf("want an out-of-memory error, got %v", err)
	}
	for _, w := range wants {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("%q lacks %q", err, w)
		}
	}
}

// TestMemoryLimit loads programs of 8 MiB under caps set by
// TARTAN_MEMORY_LIMIT and by the MemoryLimit option.
func TestMemoryLimit(t *testing.T) {
	t.Setenv(backend.EnvMemoryLimit, "1MiB")
	d := New(Cache(false))
	defer d.Close()
	_, err := d.Compile(doubling(1024, 1024))
	wantOOM(t, err, `program "double"`, "needs 8388", " bytes in all", "slot", `"x"`, "4194304 bytes", "1048576 bytes available", "TARTAN_MEMORY_LIMIT=1MiB")

	// The cap holds for the device's executables together.
	t.Setenv(backend.EnvMemoryLimit, "12M")
	x1, err := d.Compile(doubling(1024, 1024))
	if err != nil {
		t.Fatal(err)
	}
	_, err = d.Compile(doubling(1024, 1024))
	wantOOM(t, err, "TARTAN_MEMORY_LIMIT=12M", "held by the device's other executables")
	x1.Close()
	x1.Close() // closing twice releases once
	x2, err := d.Compile(doubling(1024, 1024))
	if err != nil {
		t.Fatalf("after closing the first executable: %v", err)
	}
	if err := x2.SetInput("x", make([]float32, 1<<20)); err != nil {
		t.Fatal(err)
	}
	if err := x2.Run(); err != nil {
		t.Fatal(err)
	}
	x2.Close()

	for _, bad := range []string{"lots", "-1", "12 parsecs"} {
		t.Setenv(backend.EnvMemoryLimit, bad)
		if _, err := d.Compile(doubling(4)); err == nil || !strings.Contains(err.Error(), "TARTAN_MEMORY_LIMIT") {
			t.Errorf("TARTAN_MEMORY_LIMIT=%q: want an error naming the variable, got %v", bad, err)
		}
	}

	// The option wins over the variable.
	t.Setenv(backend.EnvMemoryLimit, "1G")
	small := New(Cache(false), MemoryLimit(4096))
	defer small.Close()
	_, err = small.Compile(doubling(1024))
	wantOOM(t, err, "cpu.MemoryLimit(4096)")
	if x, err := small.Compile(doubling(100)); err != nil {
		t.Errorf("a program of 800 bytes under a cap of 4096: %v", err)
	} else {
		x.Close()
	}
}

// TestProgramTooBigForTheMachine loads programs larger than any machine
// and ones whose sizes overflow: each is an error, not a fatal allocation.
func TestProgramTooBigForTheMachine(t *testing.T) {
	t.Setenv(backend.EnvMemoryLimit, "")
	d := New(Cache(false))
	defer d.Close()
	if _, _, known := availableMemory(); known {
		_, err := d.Compile(doubling(1 << 40))
		wantOOM(t, err, `program "double"`, "4398046511104 bytes", "the machine has")
		t.Log(err)
	} else {
		t.Logf("the available memory is unknown on %s: only the overflowing programs are checked", runtime.GOOS)
	}
	for _, shape := range [][]int{{1 << 31, 1 << 31}, {1 << 62}} {
		if x, err := d.Compile(doubling(shape...)); err == nil {
			x.Close()
			t.Errorf("shape %v: loaded", shape)
		} else {
			t.Logf("shape %v: %v", shape, err)
		}
	}
}

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
