package opencl

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
)

// The program cache keeps built program binaries on disk so that a second
// run skips the OpenCL compiler. An entry is named by the SHA-256 of
// everything that decides the binary (source, device name, driver and
// platform versions, build options) and holds a magic line, the SHA-256 of
// the binary and the binary. Entries are written to a temporary file and
// renamed, so readers never see a partial one; an entry that is truncated,
// corrupt or rejected by the driver is ignored and rewritten.

const cacheMagic = "TARTAN-OPENCL-BINARY-1\n"

// defaultCacheDir returns $XDG_CACHE_HOME/tartan/opencl, or
// ~/.cache/tartan/opencl, or "" when neither can be determined.
func defaultCacheDir() string {
	if d := os.Getenv("XDG_CACHE_HOME"); d != "" {
		return filepath.Join(d, "tartan", "opencl")
	}
	if h, err := os.UserHomeDir(); err == nil && h != "" {
		return filepath.Join(h, ".cache", "tartan", "opencl")
	}
	return ""
}

// cacheKey hashes the parts, each length-prefixed so that no two different
// lists collide by concatenation.
func cacheKey(parts ...string) string {
	h := sha256.New()
	for _, p := range parts {
		var n [8]byte
		for i := range n {
			n[i] = byte(len(p) >> (8 * i))
		}
		h.Write(n[:])
		h.Write([]byte(p))
	}
	return hex.EncodeToString(h.Sum(nil))
}

// programCache is a directory of cached binaries; the zero value (empty
// dir) caches nothing.
type programCache struct{ dir string }

func (c programCache) path(key string) string { return filepath.Join(c.dir, key+".bin") }

// get returns the cached binary for key, or nil when there is no valid
// entry. A damaged entry is removed.
func (c programCache) get(key string) []byte {
	if c.dir == "" {
		return nil
	}
	data, err := os.ReadFile(c.path(key))
	if err != nil {
		return nil
	}
	if len(data) < len(cacheMagic)+sha256.Size || !bytes.HasPrefix(data, []byte(cacheMagic)) {
		os.Remove(c.path(key))
		return nil
	}
	sum := data[len(cacheMagic) : len(cacheMagic)+sha256.Size]
	bin := data[len(cacheMagic)+sha256.Size:]
	if got := sha256.Sum256(bin); !bytes.Equal(got[:], sum) || len(bin) == 0 {
		os.Remove(c.path(key))
		return nil
	}
	return bin
}

// put stores bin under key atomically. Failures are returned but callers
// treat the cache as best effort.
func (c programCache) put(key string, bin []byte) error {
	if c.dir == "" || len(bin) == 0 {
		return nil
	}
	if err := os.MkdirAll(c.dir, 0o755); err != nil {
		return err
	}
	f, err := os.CreateTemp(c.dir, key+".*.tmp")
	if err != nil {
		return err
	}
	sum := sha256.Sum256(bin)
	_, err = f.Write(append(append([]byte(cacheMagic), sum[:]...), bin...))
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(f.Name(), c.path(key))
	}
	if err != nil {
		os.Remove(f.Name())
	}
	return err
}

// remove deletes the entry for key (a binary the driver rejected).
func (c programCache) remove(key string) {
	if c.dir != "" {
		os.Remove(c.path(key))
	}
}
