package device

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tartanml/tartan/backend"
	"github.com/tartanml/tartan/backend/cpu"
	"github.com/tartanml/tartan/tile"
)

// skewedDevice wraps a device and adds 0.01 to the loss it reads back, as
// a device with a slightly wrong kernel would.
type skewedDevice struct{ backend.Device }

type skewedExec struct{ backend.Executable }

func (d skewedDevice) Compile(g *tile.Graph) (backend.Executable, error) {
	e, err := d.Device.Compile(g)
	return skewedExec{e}, err
}

func (e skewedExec) ReadOutput(name string, dst any) error {
	err := e.Executable.ReadOutput(name, dst)
	if name == "loss" {
		dst.([]float32)[0] += 0.01
	}
	return err
}

// TestMeasureDevice measures the step on the CPU backend, and refuses to
// measure a device whose loss disagrees with the reference executor's.
func TestMeasureDevice(t *testing.T) {
	isolate(t)
	d := cpu.New()
	defer d.Close()
	t0 := time.Now()
	m, err := MeasureDevice(d)
	took := time.Since(t0)
	if err != nil {
		t.Fatal(err)
	}
	if m.Step <= 0 || m.Step > took || m.Runs < minStepRuns || m.Runs > maxStepRuns || m.check() != nil {
		t.Errorf("measurement %+v in %s", m, took)
	}
	if took > 5*time.Second {
		t.Errorf("measuring the CPU backend took %s", took)
	}
	// The figure is the step's arithmetic over its time.
	if want := 4440064 / m.Step.Seconds() / 1e9; m.GFLOPS() < want*0.999 || m.GFLOPS() > want*1.001 {
		t.Errorf("GFLOPS %v, want %v", m.GFLOPS(), want)
	}
	_, err = MeasureDevice(skewedDevice{d})
	if err == nil || !strings.Contains(err.Error(), "the reference computes") {
		t.Errorf("a device computing a wrong loss: %v", err)
	}
}

// fakeMeasure makes Measure open the CPU backend under any id and report
// the given step times (in µs) by id, failing for an id without one.
func fakeMeasure(t *testing.T, steps map[string]int) {
	t.Helper()
	oldOpen, oldMeasure := openDevice, measureDevice
	t.Cleanup(func() { openDevice, measureDevice = oldOpen, oldMeasure })
	openDevice = func(id string) (backend.Device, error) { return renamed{cpu.New(), id}, nil }
	measureDevice = func(d backend.Device) (Measurement, error) {
		us, ok := steps[d.Info().ID]
		if !ok {
			return Measurement{}, errors.New("the step's loss is NaN, the reference computes 2.4")
		}
		return Measurement{Step: time.Duration(us) * time.Microsecond, Runs: 31, Measured: "2026-12-01T12:00:00Z"}, nil
	}
}

// TestMeasureTimeout checks that a device whose measurement hangs is given
// up on after the timeout, naming it.
func TestMeasureTimeout(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	oldOpen, oldMeasure := openDevice, measureDevice
	defer func() { openDevice, measureDevice = oldOpen, oldMeasure }()
	openDevice = func(id string) (backend.Device, error) { return renamed{cpu.New(), id}, nil }
	measureDevice = func(backend.Device) (Measurement, error) {
		<-release // a driver call that does not return
		return Measurement{}, nil
	}
	t0 := time.Now()
	_, err := measureID("vulkan:3", 50*time.Millisecond)
	if !errors.Is(err, ErrMeasureTimeout) || !strings.Contains(err.Error(), "vulkan:3 took more than 50ms") {
		t.Errorf("error %v", err)
	}
	if d := time.Since(t0); d > 5*time.Second {
		t.Errorf("gave up after %s", d)
	}
	openDevice = func(id string) (backend.Device, error) { return nil, errors.New("no such device") }
	if _, err := measureID("vulkan:3", time.Second); err == nil || !strings.Contains(err.Error(), "opening vulkan:3: no such device") {
		t.Errorf("a device that does not open: %v", err)
	}
}

// hostCPU is a listing of the host's CPU three ways, ranked by kind.
func hostCPU() Listing {
	l := Listing{Devices: []Entry{cpuBack, pocl, lvp}}
	l.Devices[0].Driver = "go1.26"
	l.Devices[1].Driver = "3.1+debian; Portable Computing Language"
	l.Devices[2].Driver = "Vulkan 1.3.230; llvmpipe Mesa 22.3.6"
	rank(l.Devices)
	return l
}

// TestMeasureWritesTheCache measures a made-up listing through an injected
// measuring function: the figures rank it, go to the cache, and come back
// from it for the same devices only; a device that fails loses its figure.
func TestMeasureWritesTheCache(t *testing.T) {
	isolate(t)
	path, err := MeasureCachePath()
	if err != nil {
		t.Fatal(err)
	}
	fakeMeasure(t, map[string]int{"cpu": 300, "opencl:1:0": 200})
	// An earlier figure of lavapipe, whose measurement now fails.
	if err := saveMeasurements(path, []cachedFigure{{ID: "vulkan:1", Name: lvp.Name, Driver: "Vulkan 1.3.230; llvmpipe Mesa 22.3.6",
		Measurement: Measurement{Step: time.Millisecond, Runs: 5, Measured: "2026-11-30T00:00:00Z"}}}, nil); err != nil {
		t.Fatal(err)
	}
	l := hostCPU()
	l.applyCache()
	if l.Devices[2].Measured == nil || l.Devices[2].Measured.Step != time.Millisecond {
		t.Fatalf("the earlier figure was not read back: %+v", l.Devices[2])
	}
	var progress bytes.Buffer
	res, err := Measure(&l, []string{"cpu", "opencl:1:0", "vulkan:1"}, &progress)
	if err != nil {
		t.Fatal(err)
	}
	wantProgress := "  cpu         300 µs a step (14.8 GFLOP/s, median of 31 runs)\n" +
		"  opencl:1:0  200 µs a step (22.2 GFLOP/s, median of 31 runs)\n" +
		"  vulkan:1    not measured: the step's loss is NaN, the reference computes 2.4\n"
	if progress.String() != wantProgress {
		t.Errorf("progress:\n%s\nwant:\n%s", progress.String(), wantProgress)
	}
	if len(res) != 3 || res[2].Err == nil || res[0].Step != 300*time.Microsecond {
		t.Errorf("results %+v", res)
	}
	if r := l.Recommended(); r.ID != "opencl:1:0" || r.RankedBy != RankedByMeasured || l.Devices[2].Measured != nil {
		t.Errorf("after measuring: recommended %+v; lavapipe %+v", r, l.Devices[2])
	}

	ms, err := loadMeasurements(path)
	if err != nil {
		t.Fatal(err)
	}
	want := map[measureKey]time.Duration{{"cpu", cpuBack.Name, "go1.26"}: 300 * time.Microsecond,
		{"opencl:1:0", pocl.Name, "3.1+debian; Portable Computing Language"}: 200 * time.Microsecond}
	if len(ms) != len(want) {
		t.Errorf("cache holds %v, want %v", ms, want)
	}
	for k, step := range want {
		if m, ok := ms[k]; !ok || m.Step != step || m.Runs != 31 || m.Measured != "2026-12-01T12:00:00Z" {
			t.Errorf("cache: %v → %+v, want %s", k, m, step)
		}
	}
	entries, _ := os.ReadDir(filepath.Dir(path))
	if len(entries) != 1 {
		t.Errorf("the cache directory holds %d entries, want measurements.json alone", len(entries))
	}

	// A new listing takes the figures of the same devices only: a new
	// driver for PoCL makes its figure stale.
	l = hostCPU()
	l.Devices[1].Driver = "4.0; Portable Computing Language"
	l.applyCache()
	rank(l.Devices)
	if l.Devices[0].Measured == nil || l.Devices[1].Measured != nil || len(l.Notes) != 0 {
		t.Errorf("from the cache: %+v %+v, notes %q", l.Devices[0].Measured, l.Devices[1].Measured, l.Notes)
	}
	if r := l.Recommended(); r.ID != "cpu" || r.RankedBy != RankedByKind {
		t.Errorf("with one figure: recommended %s by %s", r.ID, r.RankedBy)
	}

	if _, err := Measure(&l, []string{"opencl:7:7"}, nil); err == nil || !strings.Contains(err.Error(), `no device "opencl:7:7"`) {
		t.Errorf("measuring a device not listed: %v", err)
	}
}

// TestMeasureCacheDamage checks that every kind of damaged cache is an
// error naming the file and the damage, that none of its figures is used,
// and that List notes it.
func TestMeasureCacheDamage(t *testing.T) {
	isolate(t)
	path, _ := MeasureCachePath()
	good := func(devices string) string {
		return `{"workload": "` + StepWorkload + `", "devices": [` + devices + `]}`
	}
	fig := func(id string, step, runs int, when string) string {
		return fmt.Sprintf(`{"id": %q, "name": "n", "driver": "d", "step_ns": %d, "runs": %d, "measured": %q}`, id, step, runs, when)
	}
	const when = "2026-12-01T12:00:00Z"
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	whole := good(fig("cpu", 1000, 5, when))
	for _, c := range []struct{ name, content, want string }{
		{"empty", "", "is damaged: it is empty"},
		{"truncated", whole[:len(whole)/2], "truncated"},
		{"not an object", `[1, 2]`, "does not hold a JSON object"},
		{"more after the object", whole + " {}", "more follows its object"},
		{"a string for the time", good(`{"id": "cpu", "step_ns": "fast", "runs": 5, "measured": "` + when + `"}`), "step_ns"},
		{"a fractional time", good(`{"id": "cpu", "step_ns": 1.5, "runs": 5, "measured": "` + when + `"}`), "step_ns"},
		{"a bad id", good(fig("gpu:0", 1000, 5, when)), `device 1: unknown device "gpu:0"`},
		{"an id twice", good(fig("cpu", 1000, 5, when) + "," + fig("cpu", 2000, 5, when)), "cpu is listed twice"},
		{"a zero time", good(fig("cpu", 0, 5, when)), "cpu: a step time of 0 ns"},
		{"a negative time", good(fig("opencl:0:0", -7, 5, when)), "opencl:0:0: a step time of -7 ns"},
		{"an hour and more", good(fig("cpu", 4000000000000, 5, when)), "a step time of 4000000000000 ns"},
		{"no runs", good(fig("cpu", 1000, 0, when)), "0 runs"},
		{"too many runs", good(fig("cpu", 1000, 5000, when)), "5000 runs"},
		{"a bad time", good(fig("cpu", 1000, 5, "yesterday")), `measured at "yesterday"`},
		{"binary", "\x00\xff\x10", "does not hold a JSON object"},
		{"too large", `{"workload": "` + strings.Repeat("x", MaxMeasureCacheSize) + `"}`, "more than"},
		{"another workload", `{"workload": "train-step-0", "devices": []}`, "written for another measured step"},
	} {
		t.Run(c.name, func(t *testing.T) {
			if err := os.WriteFile(path, []byte(c.content), 0o644); err != nil {
				t.Fatal(err)
			}
			ms, err := loadMeasurements(path)
			if err == nil || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), c.want) || ms != nil {
				t.Errorf("error %.300v (figures %v); want one naming %s and saying %q", err, ms, path, c.want)
			}
			l := hostCPU()
			l.applyCache()
			if len(l.Notes) != 1 || !strings.Contains(l.Notes[0], path) || !strings.Contains(l.Notes[0], "ignored") {
				t.Errorf("notes %q", l.Notes)
			}
		})
	}
	// The good file, for contrast.
	if err := os.WriteFile(path, []byte(whole), 0o644); err != nil {
		t.Fatal(err)
	}
	if ms, err := loadMeasurements(path); err != nil || ms[measureKey{"cpu", "n", "d"}].Step != time.Microsecond {
		t.Errorf("the good file: %v, %v", ms, err)
	}
	// A directory, and a FIFO, which a read would wait on forever.
	os.Remove(path)
	if err := os.Mkdir(path, 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := loadMeasurements(path); err == nil || !strings.Contains(err.Error(), path+" is a directory") {
		t.Errorf("a directory: %v", err)
	}
	l := List()
	if !strings.Contains(strings.Join(l.Notes, "\n"), path+" is a directory, not a regular file; it is ignored") {
		t.Errorf("List's notes %q", l.Notes)
	}
	os.Remove(path)
	mkfifo(t, path)
	done := make(chan error, 1)
	go func() {
		_, err := loadMeasurements(path)
		done <- err
	}()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), path+" is a named pipe") {
			t.Errorf("a FIFO: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("loading a FIFO as the measurement cache hangs")
	}
	os.Remove(path)

	// A damaged file is replaced by the next measurement.
	if err := os.WriteFile(path, []byte("{trunc"), 0o644); err != nil {
		t.Fatal(err)
	}
	fakeMeasure(t, map[string]int{"cpu": 120})
	l = hostCPU()
	l.applyCache()
	if _, err := Measure(&l, []string{"cpu"}, nil); err != nil {
		t.Fatal(err)
	}
	if len(l.Notes) != 0 {
		t.Errorf("the damage is still noted after rewriting the cache: %q", l.Notes)
	}
	if ms, err := loadMeasurements(path); err != nil || len(ms) != 1 {
		t.Errorf("the rewritten cache: %v, %v", ms, err)
	}
	// Writing refuses a figure that loading would refuse.
	if err := saveMeasurements(path, []cachedFigure{{ID: "cpu", Measurement: Measurement{Step: -1, Runs: 1, Measured: when}}}, nil); err == nil {
		t.Error("saved a negative step time")
	}
}
