package device

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"time"

	"github.com/tartanml/tartan/backend"
	"github.com/tartanml/tartan/internal/fileinfo"
)

// The measurement cache, $XDG_CACHE_HOME/tartan/measurements.json, holds
// the latest measurement of each device id together with the device's
// name and driver at the time: a measurement counts only for a device of
// the same id, name and driver, so that a driver update or a different
// device at the same position is measured afresh rather than ranked by
// another's figure.

// measureFile is the content of the measurement cache.
type measureFile struct {
	// Workload is StepWorkload when written: figures of another step are
	// not comparable and are ignored.
	Workload string         `json:"workload"`
	Devices  []cachedFigure `json:"devices"`
}

// cachedFigure is one device's measurement with its key.
type cachedFigure struct {
	ID     string `json:"id"`
	Name   string `json:"name"`
	Driver string `json:"driver"`
	Measurement
}

// key is what a measurement counts for.
type measureKey struct{ id, name, driver string }

func keyOf(e Entry) measureKey { return measureKey{e.ID, e.Name, e.Driver} }

// MaxMeasureCacheSize bounds the measurement cache file: a few hundred
// bytes a device.
const MaxMeasureCacheSize = 256 << 10

// maxCachedStep bounds a credible step time; the step takes milliseconds.
const maxCachedStep = time.Hour

// MeasureCachePath returns $XDG_CACHE_HOME/tartan/measurements.json, or
// ~/.cache/tartan/measurements.json when XDG_CACHE_HOME is unset.
func MeasureCachePath() (string, error) {
	return backend.UserPath("XDG_CACHE_HOME", ".cache", "cache", "measurements.json")
}

// errOtherWorkload is matched by the error of a cache written for another
// measured step.
var errOtherWorkload = errors.New("written for another measured step")

// loadMeasurements reads the measurement cache at path. A missing file is
// no measurements and no error; a file that cannot be trusted (not a
// regular file, too large, not the JSON tartan writes, or holding an
// impossible figure) is an error naming it and what is wrong, and none of
// its figures is used.
func loadMeasurements(path string) (map[measureKey]Measurement, error) {
	fi, err := os.Stat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("measurement cache %s: %w", path, err)
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("measurement cache %s is %s, not a regular file", path, fileinfo.Kind(fi.Mode()))
	}
	if fi.Size() > MaxMeasureCacheSize {
		return nil, fmt.Errorf("measurement cache %s is %d bytes, more than the %d tartan writes", path, fi.Size(), MaxMeasureCacheSize)
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("reading measurement cache %s: %w", path, err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, MaxMeasureCacheSize+1))
	if err != nil {
		return nil, fmt.Errorf("reading measurement cache %s: %w", path, err)
	}
	return parseMeasurements(path, data)
}

// parseMeasurements decodes the measurement cache's content, checking every
// figure.
func parseMeasurements(path string, data []byte) (map[measureKey]Measurement, error) {
	bad := func(format string, a ...any) error {
		return fmt.Errorf("measurement cache %s is damaged: %s", path, fmt.Sprintf(format, a...))
	}
	if len(data) > MaxMeasureCacheSize {
		return nil, bad("more than %d bytes", MaxMeasureCacheSize)
	}
	trimmed := bytes.TrimSpace(data)
	if len(trimmed) == 0 {
		return nil, bad("it is empty")
	}
	if trimmed[0] != '{' {
		return nil, bad("it does not hold a JSON object")
	}
	var mf measureFile
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&mf); err != nil {
		if errors.Is(err, io.ErrUnexpectedEOF) {
			return nil, bad("it ends inside its JSON object (truncated)")
		}
		return nil, bad("%v", err)
	}
	if off := dec.InputOffset(); len(bytes.TrimSpace(data[off:])) > 0 {
		return nil, bad("more follows its object at byte %d", off)
	}
	if mf.Workload != StepWorkload {
		return nil, fmt.Errorf("measurement cache %s was %w (%q, not %q)", path, errOtherWorkload, mf.Workload, StepWorkload)
	}
	out := make(map[measureKey]Measurement, len(mf.Devices))
	seen := map[string]bool{}
	for i, c := range mf.Devices {
		if err := ValidID(c.ID); err != nil {
			return nil, bad("device %d: %v", i+1, err)
		}
		if seen[c.ID] {
			return nil, bad("%s is listed twice", c.ID)
		}
		seen[c.ID] = true
		if err := c.Measurement.check(); err != nil {
			return nil, bad("%s: %v", c.ID, err)
		}
		out[measureKey{c.ID, c.Name, c.Driver}] = c.Measurement
	}
	return out, nil
}

// check reports whether m is a figure MeasureDevice could have produced.
func (m Measurement) check() error {
	switch {
	case m.Step <= 0 || m.Step > maxCachedStep:
		return fmt.Errorf("a step time of %d ns", int64(m.Step))
	case m.Runs < 1 || m.Runs > maxStepRuns:
		return fmt.Errorf("%d runs (want 1 to %d)", m.Runs, maxStepRuns)
	}
	if _, err := time.Parse(time.RFC3339, m.Measured); err != nil {
		return fmt.Errorf("measured at %q, not an RFC 3339 time", m.Measured)
	}
	return nil
}

// saveMeasurements writes the cache at path with the given figures added,
// each replacing any earlier one of its id, and the figures of the ids in
// drop removed. The earlier figures come from the file when it can be
// trusted; a damaged file is replaced.
func saveMeasurements(path string, add []cachedFigure, drop []string) error {
	old, err := loadMeasurements(path)
	if err != nil {
		old = nil
	}
	byID := map[string]cachedFigure{}
	for k, m := range old {
		byID[k.id] = cachedFigure{ID: k.id, Name: k.name, Driver: k.driver, Measurement: m}
	}
	for _, id := range drop {
		delete(byID, id)
	}
	for _, c := range add {
		if err := ValidID(c.ID); err != nil {
			return fmt.Errorf("writing %s: %w", path, err)
		}
		if err := c.Measurement.check(); err != nil {
			return fmt.Errorf("writing %s: %s: %w", path, c.ID, err)
		}
		byID[c.ID] = c
	}
	mf := measureFile{Workload: StepWorkload, Devices: []cachedFigure{}}
	for _, c := range byID {
		mf.Devices = append(mf.Devices, c)
	}
	sort.Slice(mf.Devices, func(i, j int) bool { return mf.Devices[i].ID < mf.Devices[j].ID })
	data, err := json.MarshalIndent(mf, "", "  ")
	if err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	data = append(data, '\n')
	if len(data) > MaxMeasureCacheSize {
		return fmt.Errorf("writing %s: %d bytes, more than the cache may hold (%d)", path, len(data), MaxMeasureCacheSize)
	}
	return writeAtomic(path, data, ".measurements-*.json")
}

// writeAtomic writes data to path through a temporary file in the same
// directory (named by pattern) renamed over it, so that a crash leaves
// either the old or the new content.
func writeAtomic(path string, data []byte, pattern string) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("creating %s: %w", dir, err)
	}
	f, err := os.CreateTemp(dir, pattern)
	if err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(f.Name(), 0o644)
	}
	if err == nil {
		err = os.Rename(f.Name(), path)
	}
	if err != nil {
		os.Remove(f.Name())
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return nil
}

// applyCache sets the Measured figure of each entry from the measurement
// cache, noting on l a cache that cannot be trusted (and then using none
// of its figures).
func (l *Listing) applyCache() {
	path, err := MeasureCachePath()
	if err != nil {
		return // no cache directory: nothing was measured
	}
	ms, err := loadMeasurements(path)
	switch {
	case errors.Is(err, errOtherWorkload):
		l.Notes = append(l.Notes, err.Error()+"; its figures are ignored (tartan devices --measure measures again)")
		return
	case err != nil:
		l.Notes = append(l.Notes, err.Error()+"; it is ignored (tartan devices --measure measures again and rewrites it)")
		return
	}
	for i := range l.Devices {
		if m, ok := ms[keyOf(l.Devices[i])]; ok {
			l.Devices[i].Measured = &m
		}
	}
}
