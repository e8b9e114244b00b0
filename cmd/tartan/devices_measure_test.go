package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// TestDevicesMeasure runs tartan devices --measure on this machine's
// devices (the CPU backend, and where installed PoCL and lavapipe): every
// listed device is measured, the cache holds each figure, the recommended
// one of the host's CPU is the fastest by the cache's figures, and a later
// tartan devices shows the cached figures without measuring.
func TestDevicesMeasure(t *testing.T) {
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	cache := t.TempDir()
	t.Setenv("XDG_CACHE_HOME", cache)
	t.Setenv("TARTAN_DEVICE", "")
	path := filepath.Join(cache, "tartan", "measurements.json")

	var before struct {
		Devices []struct {
			ID   string `json:"id"`
			Kind string `json:"kind"`
		} `json:"devices"`
	}
	code, out, errs := runCLI("devices", "--json")
	if code != 0 || json.Unmarshal([]byte(out), &before) != nil {
		t.Fatalf("devices --json: exit %d\n%s%s", code, out, errs)
	}
	t0 := time.Now()
	code, out, errs = runCLIWithin(t, 3*time.Minute, strings.NewReader(""), "devices", "--measure")
	took := time.Since(t0)
	if code != 0 || errs != "" {
		t.Fatalf("devices --measure: exit %d\n%s%s", code, out, errs)
	}
	t.Logf("devices --measure took %s for %d devices:\n%s", took, len(before.Devices), out)
	if !strings.HasPrefix(out, "Measuring a training step of 4.4 MFLOP") || !strings.Contains(out, "Saved in "+path+".\n") {
		t.Errorf("output:\n%s", out)
	}
	if !regexp.MustCompile(`(?m)^ +#  ID .* UNITS  STEP +$`).MatchString(out) {
		t.Errorf("the table has no STEP column:\n%s", out)
	}

	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var file struct {
		Workload string `json:"workload"`
		Devices  []struct {
			ID   string `json:"id"`
			Name string `json:"name"`
			Step int64  `json:"step_ns"`
			Runs int    `json:"runs"`
		} `json:"devices"`
	}
	if err := json.Unmarshal(data, &file); err != nil || file.Workload == "" {
		t.Fatalf("cache %s: %v\n%s", path, err, data)
	}
	steps := map[string]time.Duration{}
	for _, d := range file.Devices {
		if d.Step <= 0 || d.Runs < 3 || d.Name == "" {
			t.Errorf("cached %+v", d)
		}
		steps[d.ID] = time.Duration(d.Step)
	}
	hostFastest, hostDevices := "", 0
	for _, d := range before.Devices {
		if _, ok := steps[d.ID]; !ok {
			t.Errorf("%s was not measured:\n%s", d.ID, out)
		}
		if !regexp.MustCompile(`(?m)^  ` + regexp.QuoteMeta(d.ID) + ` +[0-9.]+ (µs|ms|s) a step \([0-9.]+ GFLOP/s, median of [0-9]+ runs\)$`).MatchString(out) {
			t.Errorf("no progress line for %s:\n%s", d.ID, out)
		}
		if d.Kind == "cpu" || d.Kind == "cpu-opencl" || d.Kind == "cpu-vulkan" {
			hostDevices++
			if hostFastest == "" || steps[d.ID] < steps[hostFastest] {
				hostFastest = d.ID
			}
		}
	}
	if took > time.Duration(len(before.Devices))*5*time.Second {
		t.Errorf("measuring %d devices took %s", len(before.Devices), took)
	}

	// Without --measure: the cached figures rank the devices.
	var after struct {
		Devices []struct {
			ID          string `json:"id"`
			Kind        string `json:"kind"`
			Recommended bool   `json:"recommended"`
			RankedBy    string `json:"ranked_by"`
			Measured    *struct {
				Step int64 `json:"step_ns"`
			} `json:"measured"`
		} `json:"devices"`
	}
	code, js, errs := runCLI("devices", "--json")
	if code != 0 || json.Unmarshal([]byte(js), &after) != nil {
		t.Fatalf("devices --json after measuring: exit %d\n%s%s", code, js, errs)
	}
	hasGPU := false
	for _, d := range after.Devices {
		if d.Measured == nil || time.Duration(d.Measured.Step) != steps[d.ID] {
			t.Errorf("%s: measured %+v, the cache says %s", d.ID, d.Measured, steps[d.ID])
		}
		hasGPU = hasGPU || d.Kind == "gpu" || d.Kind == "integrated-gpu"
		if d.Kind == "cpu" || d.Kind == "cpu-opencl" || d.Kind == "cpu-vulkan" {
			if want := map[bool]string{true: "measured", false: "kind"}[hostDevices > 1]; d.RankedBy != want {
				t.Errorf("%s ranked by %s, want %s", d.ID, d.RankedBy, want)
			}
			if !hasGPU && d.Recommended != (d.ID == hostFastest) {
				t.Errorf("%s recommended %v; the fastest of the host's CPU is %s (%v)", d.ID, d.Recommended, hostFastest, steps)
			}
		}
	}
	code, text, errs := runCLI("devices")
	if code != 0 || strings.Contains(text, "Measuring") || !strings.Contains(text, "STEP") {
		t.Errorf("devices after measuring: exit %d\n%s%s", code, text, errs)
	}
	if hostDevices > 1 && !hasGPU && !strings.Contains(text, "ranked by measured speed: a training step in ") {
		t.Errorf("the recommendation does not say it was measured:\n%s", text)
	}
}
