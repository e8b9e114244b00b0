package opencl

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
)

// The program cache keeps built program binaries on disk so that a second
// run skips the OpenCL compiler. An entry is named by the SHA-256 of
// everything that decides the binary (source, device name, driver and
// platform versions, build options) and holds a magic line, the size of the
// binary as the driver reported it, the SHA-256 of the binary and the
// binary. Entries are written to a temporary file and renamed, so readers
// never see a partial one. Before a binary is handed to the driver its size
// and digest are checked against the recorded ones (some drivers abort the
// process on a malformed binary); an entry that fails, or that the driver
// rejects, is damaged: it is reported once per process as a warning on
// standard error, removed, and the program is built from source and cached
// again.

const cacheMagic = "TARTAN-OPENCL-BINARY-2\n"

// cacheHeader is the length of an entry's header: the magic line, the
// binary's size (8 bytes, little-endian) and its SHA-256.
const cacheHeader = len(cacheMagic) + 8 + sha256.Size

// maxBinary bounds the size of a cached binary; no program comes near.
const maxBinary = 1 << 30

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

// get returns the cached binary for key, or nil when there is none or the
// entry is damaged; a damaged entry is reported and removed.
func (c programCache) get(key string) []byte {
	if c.dir == "" {
		return nil
	}
	bin, err := c.read(key)
	if err != nil {
		c.damaged(key, err)
		return nil
	}
	return bin
}

// read returns the checked binary of the entry for key: nil and no error
// when there is no entry.
func (c programCache) read(key string) ([]byte, error) {
	f, err := os.Open(c.path(key))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, int64(cacheHeader+maxBinary+1)))
	if err != nil {
		return nil, err
	}
	return checkEntry(data)
}

// checkEntry returns the binary an entry holds after checking it against
// the entry's header: the magic line, the recorded size and the digest.
func checkEntry(data []byte) ([]byte, error) {
	if len(data) < cacheHeader || !bytes.HasPrefix(data, []byte(cacheMagic)) {
		return nil, fmt.Errorf("no entry header (%d bytes)", len(data))
	}
	size := binary.LittleEndian.Uint64(data[len(cacheMagic):])
	sum := data[len(cacheMagic)+8 : cacheHeader]
	bin := data[cacheHeader:]
	if size == 0 || size > maxBinary || size != uint64(len(bin)) {
		return nil, fmt.Errorf("the driver reported a binary of %d bytes, the entry holds %d", size, len(bin))
	}
	if got := sha256.Sum256(bin); !bytes.Equal(got[:], sum) {
		return nil, errors.New("the binary's SHA-256 does not match")
	}
	return bin, nil
}

// encodeEntry returns the contents of the entry for bin.
func encodeEntry(bin []byte) []byte {
	out := make([]byte, 0, cacheHeader+len(bin))
	out = append(out, cacheMagic...)
	out = binary.LittleEndian.AppendUint64(out, uint64(len(bin)))
	sum := sha256.Sum256(bin)
	out = append(out, sum[:]...)
	return append(out, bin...)
}

// put stores bin, a binary of the size the driver reported, under key
// atomically. Failures are returned but callers treat the cache as best
// effort.
func (c programCache) put(key string, bin []byte) error {
	if c.dir == "" || len(bin) == 0 || len(bin) > maxBinary {
		return nil
	}
	if err := os.MkdirAll(c.dir, 0o755); err != nil {
		return err
	}
	f, err := os.CreateTemp(c.dir, key+".*.tmp")
	if err != nil {
		return err
	}
	_, err = f.Write(encodeEntry(bin))
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

// damaged reports and removes the entry for key: its binary failed the
// checks or the driver rejected it.
func (c programCache) damaged(key string, why error) {
	if c.dir == "" {
		return
	}
	path := c.path(key)
	warnMu.Lock()
	if !warned[path] {
		warned[path] = true
		fmt.Fprintf(warnOut, "opencl: warning: program binary cache entry %s is damaged (%v); it is removed and the program rebuilt\n", path, why)
	}
	warnMu.Unlock()
	os.Remove(path)
}

// warnOut receives the warnings about damaged entries; tests replace it.
// warned holds the entries already reported by this process.
var (
	warnMu  sync.Mutex
	warnOut io.Writer = os.Stderr
	warned            = map[string]bool{}
)
