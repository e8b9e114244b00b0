package backend

import (
	"bufio"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// The host's memory, for the checks that keep a program, a model or a
// batch from being allocated beyond it (an out-of-memory error then names
// the sizes instead of the Go runtime dying).

// HostMemory returns the total memory in bytes: MemTotal of /proc/meminfo,
// else what the operating system reports, else 0.
func HostMemory() int64 {
	if n, ok := memInfo("/", "MemTotal"); ok {
		return n
	}
	return systemMemory()
}

// HostMemoryAvailable returns the memory the process may still allocate
// and where that figure comes from: on Linux the smaller of MemAvailable
// and the room its memory cgroups leave, on macOS the physical memory;
// known is false where it cannot be told.
func HostMemoryAvailable() (avail int64, source string, known bool) { return availableMemory() }

// ProcField returns the value of the first "key: value" line of a /proc
// file (meminfo, cpuinfo) whose key matches, or "".
func ProcField(path, key string) string {
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

// memInfo returns a field of /proc/meminfo under root in bytes.
func memInfo(root, key string) (int64, bool) {
	f := strings.Fields(ProcField(filepath.Join(root, "proc", "meminfo"), key))
	if len(f) == 0 {
		return 0, false
	}
	n, err := strconv.ParseInt(f[0], 10, 64)
	if err != nil || n < 0 {
		return 0, false
	}
	if len(f) > 1 && strings.EqualFold(f[1], "kB") {
		if n > math.MaxInt64/1024 {
			return 0, false
		}
		n *= 1024
	}
	return n, true
}

// availableIn returns the memory a process may still allocate on a Linux
// system whose files are under root: the smaller of MemAvailable in
// /proc/meminfo and what the process's memory cgroup allows beyond its use,
// and which of them it is; known is false when neither can be read.
func availableIn(root string) (avail int64, source string, known bool) {
	if n, ok := memInfo(root, "MemAvailable"); ok {
		avail, source, known = n, "MemAvailable in /proc/meminfo", true
	}
	if n, src, ok := cgroupAvailable(root); ok && (!known || n < avail) {
		avail, source, known = n, src, true
	}
	return avail, source, known
}

// unlimited is the least cgroup v1 limit that means none (the kernel
// reports "no limit" as the largest page multiple below 2^63).
const unlimited = 1 << 62

// cgroupAvailable returns the room left under the memory limits of the
// process's cgroup (version 2's memory.max, or version 1's
// memory.limit_in_bytes) and of the cgroups above it: the least of limit
// less use, with reclaimable file pages not counted as use. ok is false
// without a memory cgroup or a limit.
func cgroupAvailable(root string) (avail int64, source string, ok bool) {
	data, err := os.ReadFile(filepath.Join(root, "proc", "self", "cgroup"))
	if err != nil {
		return 0, "", false
	}
	var v1, v2 string
	have1, have2 := false, false
	for _, line := range strings.Split(string(data), "\n") {
		f := strings.SplitN(line, ":", 3)
		if len(f) != 3 {
			continue
		}
		switch {
		case f[0] == "0" && f[1] == "":
			v2, have2 = f[2], true
		case slices.Contains(strings.Split(f[1], ","), "memory"):
			v1, have1 = f[2], true
		}
	}
	mounts, _ := os.ReadFile(filepath.Join(root, "proc", "self", "mountinfo"))
	for _, line := range strings.Split(string(mounts), "\n") {
		// id parent dev root mountpoint options [optional…] - fstype source superoptions
		f := strings.Fields(line)
		sep := -1
		for i, x := range f {
			if x == "-" {
				sep = i
				break
			}
		}
		if sep < 5 || sep+3 > len(f) {
			continue
		}
		mroot, point, fstype := f[3], f[4], f[sep+1]
		var files [3]string // limit, use, reclaimable file pages in memory.stat
		var cg string
		switch {
		case fstype == "cgroup2" && have2:
			files, cg = [3]string{"memory.max", "memory.current", "inactive_file"}, v2
		case fstype == "cgroup" && have1 && slices.Contains(strings.Split(f[len(f)-1], ","), "memory"):
			files, cg = [3]string{"memory.limit_in_bytes", "memory.usage_in_bytes", "total_inactive_file"}, v1
		default:
			continue
		}
		rel, inside := strings.CutPrefix(cg, mroot)
		if !inside {
			continue
		}
		top := filepath.Join(root, point)
		dir := filepath.Join(top, rel)
		if _, err := os.Stat(dir); err != nil {
			dir = top // a namespaced view: the mount is the process's cgroup
		}
		for {
			if n, src, found := cgroupRoom(root, dir, files); found && (!ok || n < avail) {
				avail, source, ok = n, src, true
			}
			if dir == top || !strings.HasPrefix(dir, top) {
				break
			}
			dir = filepath.Dir(dir)
		}
	}
	return avail, source, ok
}

// cgroupRoom reads one cgroup's limit and use.
func cgroupRoom(root, dir string, files [3]string) (int64, string, bool) {
	read := func(name string) (int64, bool) {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			return 0, false
		}
		n, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
		return n, err == nil && n >= 0
	}
	limit, ok := read(files[0]) // "max" does not parse: no limit
	if !ok || limit >= unlimited {
		return 0, "", false
	}
	use, _ := read(files[1])
	if b, err := os.ReadFile(filepath.Join(dir, "memory.stat")); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if f := strings.Fields(line); len(f) == 2 && f[0] == files[2] {
				if n, err := strconv.ParseInt(f[1], 10, 64); err == nil && n > 0 {
					use -= min(n, use)
				}
			}
		}
	}
	path := "/" + strings.TrimPrefix(strings.TrimPrefix(filepath.Join(dir, files[0]), root), "/")
	return max(limit-use, 0), fmt.Sprintf("the memory cgroup limit in %s: %d bytes, %d in use", path, limit, use), true
}
