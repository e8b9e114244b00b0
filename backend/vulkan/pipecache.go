package vulkan

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"

	"github.com/tartanml/tartan/backend"
	"github.com/tartanml/tartan/backend/vulkan/vk"
)

// The pipeline cache keeps the driver's VkPipelineCache data on disk, one
// file per device and driver, so that a later process skips the shader
// compiler for pipelines it built before. A file holds a magic line, the
// data's size and SHA-256, and the data; it is written to a temporary file
// and renamed. Before the data reaches the driver its size, digest and
// Vulkan header (VkPipelineCacheHeaderVersionOne: vendor, device and
// pipeline cache UUID) are checked; a file that fails, or that the driver
// rejects, is reported once as a warning on standard error and removed.
// TARTAN_CACHE=off disables it.

const (
	pipeMagic   = "TARTAN-VULKAN-PIPELINE-CACHE-1\n"
	pipeHeader  = len(pipeMagic) + 8 + sha256.Size
	maxPipeData = 1 << 30 // the most data a cache file may hold
)

// defaultPipeDir returns $XDG_CACHE_HOME/tartan/vulkan, or
// ~/.cache/tartan/vulkan, or "" when neither can be told or
// TARTAN_CACHE=off.
func defaultPipeDir() string {
	if os.Getenv("TARTAN_CACHE") == "off" {
		return ""
	}
	dir, _ := backend.UserPath("XDG_CACHE_HOME", ".cache", "cache", "vulkan")
	return dir
}

// pipePath returns the cache file of a device, or "" without a directory.
func pipePath(dir string, pd *vk.PhysicalDevice) string {
	if dir == "" {
		return ""
	}
	return filepath.Join(dir, fmt.Sprintf("%04x-%04x-%08x-%x.bin", pd.VendorID, pd.DeviceID, pd.DriverVersion, pd.PipelineCacheUUID))
}

// readPipeData returns the checked data of the cache file for pd, nil when
// there is none; a damaged file is reported and removed.
func readPipeData(path string, pd *vk.PhysicalDevice) []byte {
	if path == "" {
		return nil
	}
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	var data []byte
	if err == nil {
		data, err = io.ReadAll(io.LimitReader(f, int64(pipeHeader+maxPipeData+1)))
		f.Close()
	}
	if err == nil {
		data, err = checkPipeData(data, pd)
	}
	if err != nil {
		pipeDamaged(path, err)
		return nil
	}
	return data
}

// checkPipeData returns the data a cache file holds after checking its
// size, digest and Vulkan header.
func checkPipeData(b []byte, pd *vk.PhysicalDevice) ([]byte, error) {
	if len(b) < pipeHeader || !bytes.HasPrefix(b, []byte(pipeMagic)) {
		return nil, fmt.Errorf("no cache file header (%d bytes)", len(b))
	}
	le := binary.LittleEndian
	size, data := le.Uint64(b[len(pipeMagic):]), b[pipeHeader:]
	if size != uint64(len(data)) || size > maxPipeData {
		return nil, fmt.Errorf("the file records %d bytes of data and holds %d", size, len(data))
	}
	if sum := sha256.Sum256(data); !bytes.Equal(sum[:], b[len(pipeMagic)+8:pipeHeader]) {
		return nil, errors.New("the data's SHA-256 does not match")
	}
	if len(data) < 32 || le.Uint32(data) < 32 || le.Uint32(data[4:]) != 1 || le.Uint32(data[8:]) != pd.VendorID ||
		le.Uint32(data[12:]) != pd.DeviceID || !bytes.Equal(data[16:32], pd.PipelineCacheUUID[:]) {
		return nil, errors.New("the data's Vulkan header is not this device's")
	}
	return data, nil
}

// writePipeData stores data as the cache file path, atomically.
func writePipeData(path string, data []byte) error {
	if path == "" || len(data) == 0 || len(data) > maxPipeData {
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	f, err := os.CreateTemp(filepath.Dir(path), filepath.Base(path)+".*.tmp")
	if err != nil {
		return err
	}
	sum := sha256.Sum256(data)
	out := binary.LittleEndian.AppendUint64([]byte(pipeMagic), uint64(len(data)))
	_, err = f.Write(append(append(out, sum[:]...), data...))
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(f.Name(), path)
	}
	if err != nil {
		os.Remove(f.Name())
	}
	return err
}

// warnOut receives the warnings about damaged cache files; tests replace
// it. warned holds the files already reported by this process.
var (
	warnMu  sync.Mutex
	warnOut io.Writer = os.Stderr
	warned            = map[string]bool{}
)

// pipeDamaged reports and removes a damaged cache file.
func pipeDamaged(path string, why error) {
	warnMu.Lock()
	if !warned[path] {
		warned[path] = true
		fmt.Fprintf(warnOut, "vulkan: warning: pipeline cache file %s is damaged (%v); it is removed\n", path, why)
	}
	warnMu.Unlock()
	os.Remove(path)
}
