package opencl

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/tartanml/tartan/kir"
)

// Rendered programs are cached beside the binaries they build into:
// rendering a large training step takes longer than loading its cached
// binaries (ResNet-20's 0.5–0.6 s on the H200 machine, against about 0.1 s
// of loads). An entry is keyed by the program's digest (kir.Digest), the traits
// and the running executable (its path, size and modification time: another
// build of Tartan may render differently), and is checked against the
// program before use; a damaged one is removed and the program rendered
// again. Debugging output that rendering prints (TARTAN_DEBUG=kernels or
// schedule) bypasses the cache.

// renderCached is render through the device's cache of rendered programs.
func (d *Device) renderCached(p *kir.Program, tr traits) (*rendered, error) {
	start := time.Now()
	key := d.renderKey(p, tr)
	if debugOn("timing") && key != "" {
		fmt.Fprintf(os.Stderr, "opencl: program %q: render cache key in %.3f s\n", p.Name, time.Since(start).Seconds())
	}
	if key != "" {
		if data := d.cache.get(key); data != nil {
			var r rendered
			err := json.Unmarshal(data, &r)
			if err == nil {
				err = r.check(p)
			}
			if err == nil {
				return &r, nil
			}
			d.cache.damaged(key, fmt.Errorf("a rendered program that does not fit: %w", err))
		}
	}
	r, err := render(p, tr)
	if err == nil && key != "" {
		if data, err := json.Marshal(r); err == nil {
			d.cache.put(key, data) // best effort
		}
	}
	return r, err
}

// renderKey returns the cache key of p rendered with tr on the device, or
// "" when rendered programs are not to be cached.
func (d *Device) renderKey(p *kir.Program, tr traits) string {
	exe := executableID()
	if d.cache.dir == "" || exe == "" || debugOn("kernels") || debugOn("schedule") {
		return ""
	}
	sum := d.digest(p)
	return cacheKey("tartan-opencl-rendered-1", exe, string(sum[:]), fmt.Sprintf("%+v", tr), d.info.Name, d.info.DriverVersion)
}

// digest returns kir.Digest(p), computed once while p is being loaded
// (Load forgets it at its end).
func (d *Device) digest(p *kir.Program) [32]byte {
	d.digestMu.Lock()
	defer d.digestMu.Unlock()
	if d.digestOf != p {
		d.digestOf, d.digestSum = p, kir.Digest(p)
	}
	return d.digestSum
}

// forgetDigest drops the memoised digest of p.
func (d *Device) forgetDigest(p *kir.Program) {
	d.digestMu.Lock()
	defer d.digestMu.Unlock()
	if d.digestOf == p {
		d.digestOf = nil
	}
}

// executableID names the running executable's build, "" when it cannot
// be found.
var executableID = sync.OnceValue(func() string {
	path, err := os.Executable()
	if err != nil {
		return ""
	}
	fi, err := os.Stat(path)
	if err != nil {
		return ""
	}
	return fmt.Sprintf("%s %d %d", path, fi.Size(), fi.ModTime().UnixNano())
})

// check reports whether r can be the rendering of p: its launches compute
// p's kernels over p's buffers, in shards and scratch buffers r has.
func (r *rendered) check(p *kir.Program) error {
	if r.Source == "" || r.Shards < 1 {
		return errors.New("no source")
	}
	for _, lp := range r.Launches {
		if lp.Fn == "" || lp.Kernel < 0 || lp.Kernel >= len(p.Kernels) || lp.Shard < 0 || lp.Shard >= r.Shards || lp.Global < 0 || lp.Local < 0 {
			return fmt.Errorf("launch %q", lp.Name)
		}
		for _, a := range lp.Args {
			if a.Buf >= len(p.Buffers) || a.View >= len(p.Buffers) || a.Scratch >= len(r.Scratch) || (a.Buf < 0 && a.View < 0 && a.Scratch < 0) {
				return fmt.Errorf("launch %q: argument %+v", lp.Name, a)
			}
		}
	}
	return nil
}
