package tune

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sync"

	"github.com/tartanml/tartan/backend"
	"github.com/tartanml/tartan/kir"
)

// EnvCache names the environment variable that sets the cache file
// (default $XDG_CACHE_HOME/tartan/tune.json).
const EnvCache = "TARTAN_TUNE_CACHE"

// cacheVersion changes when the file's meaning does.
const cacheVersion = 1

// Entry is the tuned decision for one kernel on one device.
type Entry struct {
	Tiling kir.Tiling
	// Seconds is the winner's measured time, Model the cost model's
	// tiling's, from the same search.
	Seconds, Model float64
}

type cacheFile struct {
	Version int
	Devices map[string]map[string]Entry
}

// Cache is the tuner's decisions on disk: per device key, per kernel hash.
// A cache file that cannot be read as one is reported once (on standard
// error) and treated as empty; the next Store replaces it. Store merges
// with what other processes stored meanwhile and replaces the file
// atomically. A Cache is safe for concurrent use.
type Cache struct {
	path string
	mu   sync.Mutex
	read bool
	devs map[string]map[string]Entry
}

// Open returns the cache kept in the file at path (created on the first
// Store); "" is a cache in memory only.
func Open(path string) *Cache { return &Cache{path: path} }

// DefaultPath is $TARTAN_TUNE_CACHE, else tune.json in Tartan's cache
// directory.
func DefaultPath() (string, error) {
	if p := os.Getenv(EnvCache); p != "" {
		return p, nil
	}
	return backend.UserPath("XDG_CACHE_HOME", ".cache", "cache", "tune.json")
}

var (
	defaultMu    sync.Mutex
	defaultCache = map[string]*Cache{}
)

// Default returns the cache at DefaultPath, one per path in a process, or
// nil when there is no cache directory.
func Default() *Cache {
	p, err := DefaultPath()
	if err != nil {
		return nil
	}
	defaultMu.Lock()
	defer defaultMu.Unlock()
	c := defaultCache[p]
	if c == nil {
		c = Open(p)
		defaultCache[p] = c
	}
	return c
}

// load reads the file once; c.mu is held.
func (c *Cache) load() {
	if c.read {
		return
	}
	c.read = true
	c.devs = c.readFile(true)
}

// readFile returns the file's entries, empty when it is missing or
// damaged (reported when report is set).
func (c *Cache) readFile(report bool) map[string]map[string]Entry {
	devs := map[string]map[string]Entry{}
	if c.path == "" {
		return devs
	}
	data, err := os.ReadFile(c.path)
	if err != nil {
		if report && !os.IsNotExist(err) {
			fmt.Fprintf(os.Stderr, "tartan: tuning cache %s unreadable, ignored: %v\n", c.path, err)
		}
		return devs
	}
	var f cacheFile
	if err := json.Unmarshal(data, &f); err != nil || f.Version != cacheVersion || !valid(f.Devices) {
		if report {
			why := "not a tuning cache of this version"
			if err != nil {
				why = err.Error()
			}
			fmt.Fprintf(os.Stderr, "tartan: tuning cache %s damaged, ignored (it is rewritten when a kernel is next tuned): %s\n", c.path, why)
		}
		return devs
	}
	return f.Devices
}

// valid checks the sizes of every entry, so that a damaged file cannot
// hand a backend a nonsensical tiling.
func valid(devs map[string]map[string]Entry) bool {
	for _, hs := range devs {
		for _, e := range hs {
			t := e.Tiling
			if t.BM <= 0 || t.BN <= 0 || t.BK <= 0 || t.Parts < 0 || t.BM > 1<<12 || t.BN > 1<<12 || t.BK > 1<<12 {
				return false
			}
		}
	}
	return true
}

// Lookup returns the entry for kernel hash h on device key dev.
func (c *Cache) Lookup(dev, h string) (Entry, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.load()
	e, ok := c.devs[dev][h]
	return e, ok
}

// Store records e for kernel hash h on device key dev and writes the file.
func (c *Cache) Store(dev, h string, e Entry) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.load()
	// Merge with what other processes stored since the file was read.
	for d, hs := range c.readFile(false) {
		for k, v := range hs {
			if _, ok := c.devs[d][k]; !ok {
				if c.devs[d] == nil {
					c.devs[d] = map[string]Entry{}
				}
				c.devs[d][k] = v
			}
		}
	}
	if c.devs[dev] == nil {
		c.devs[dev] = map[string]Entry{}
	}
	e.Tiling.From = ""
	c.devs[dev][h] = e
	if c.path == "" {
		return nil
	}
	data, err := json.MarshalIndent(cacheFile{Version: cacheVersion, Devices: c.devs}, "", " ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(c.path), 0o755); err != nil {
		return fmt.Errorf("tune: cache %s: %w", c.path, err)
	}
	tmp, err := os.CreateTemp(filepath.Dir(c.path), ".tune-*")
	if err != nil {
		return fmt.Errorf("tune: cache %s: %w", c.path, err)
	}
	_, werr := tmp.Write(data)
	cerr := tmp.Close()
	if werr == nil {
		werr = cerr
	}
	if werr == nil {
		werr = os.Rename(tmp.Name(), c.path)
	}
	if werr != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("tune: cache %s: %w", c.path, werr)
	}
	return nil
}
