package device

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tartanml/tartan/internal/fuzzcheck"
)

// FuzzParseMeasurements feeds arbitrary bytes to the measurement cache's
// parser: it must never panic, must name the file in every error, and the
// figures of every file it accepts must be written back (as Measure writes
// them) to a file that reads back the same.
func FuzzParseMeasurements(f *testing.F) {
	f.Add([]byte(`{"workload": "` + StepWorkload + `", "devices": [{"id": "cpu", "name": "AMD EPYC", "driver": "go1.26", "step_ns": 104000, "runs": 31, "measured": "2026-12-01T12:00:00Z"}]}`))
	f.Add([]byte(`{"workload": "` + StepWorkload + `", "devices": []}`))
	for _, s := range []string{"", "{", "null", `{"workload": 5}`, `{"workload": "` + StepWorkload + `", "devices": [{"id": "vulkan:0"}]}`,
		`{"workload": "` + StepWorkload + `", "devices": [{"id": "opencl:0:0", "step_ns": 9223372036854775807, "runs": 1, "measured": "2026-01-01T00:00:00+01:00"}]}`} {
		f.Add([]byte(s))
	}
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, data []byte) {
		const path = "/fuzz/tartan/measurements.json"
		var ms map[measureKey]Measurement
		fuzzcheck.Bounded(t, fuzzcheck.DefaultLimit, func() {
			var err error
			ms, err = parseMeasurements(path, data)
			if err != nil && !strings.Contains(err.Error(), path) {
				t.Fatalf("error %q does not name the file", err)
			}
			if err != nil && ms != nil {
				t.Fatalf("error %v with figures %v", err, ms)
			}
		})
		if ms == nil {
			return
		}
		var add []cachedFigure
		for k, m := range ms {
			add = append(add, cachedFigure{ID: k.id, Name: k.name, Driver: k.driver, Measurement: m})
		}
		out := filepath.Join(dir, "measurements.json")
		os.Remove(out)
		if err := saveMeasurements(out, add, nil); err != nil {
			if len(data) > MaxMeasureCacheSize/2 {
				return // its figures may not fit once indented
			}
			t.Fatalf("accepted %q but cannot write it back: %v", data, err)
		}
		back, err := loadMeasurements(out)
		if err != nil || len(back) != len(ms) {
			t.Fatalf("accepted %q as %v, read back %v, %v", data, ms, back, err)
		}
		for k, m := range ms {
			if back[k] != m {
				t.Fatalf("%v: %+v read back as %+v", k, m, back[k])
			}
		}
	})
}
