package device

import (
	"bytes"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/tartanml/tartan/backend"
	"github.com/tartanml/tartan/backend/cpu"
)

// renamed is the CPU backend under another id, so that Setup can open the
// devices of a made-up listing.
type renamed struct {
	backend.Device
	id string
}

func (d renamed) Info() backend.Info {
	i := d.Device.Info()
	i.ID = d.id
	return i
}

// fakeSetupDevices makes Setup offer the CPU backend (recommended) and an
// OpenCL CPU device, and makes the check report the given product times by
// device id (a device without one fails its check).
func fakeSetupDevices(t *testing.T, speeds map[string]time.Duration) {
	t.Helper()
	oldList, oldOpen, oldCheck := listDevices, openDevice, checkDevice
	t.Cleanup(func() { listDevices, openDevice, checkDevice = oldList, oldOpen, oldCheck })
	listDevices = func() Listing {
		return Listing{Devices: []Entry{
			{Info: backend.Info{ID: "cpu", Name: "Some CPU", Memory: 8 << 30, ComputeUnits: 4}, Kind: KindCPU, Recommended: true,
				Why: "Tartan's own CPU backend, 4 cores"},
			{Info: backend.Info{ID: "opencl:0:0", Name: "PoCL", Memory: 4 << 30, ComputeUnits: 4}, Kind: KindCPUOpenCL,
				Why: "a CPU through OpenCL"},
		}}
	}
	openDevice = func(id string) (backend.Device, error) { return renamed{cpu.New(), id}, nil }
	checkDevice = func(d backend.Device) (CheckResult, error) {
		sp, ok := speeds[d.Info().ID]
		if !ok {
			return CheckResult{}, errors.New("device check on " + d.Info().ID + " failed: probs[3] is NaN")
		}
		return CheckResult{MaxError: 2.5e-7, Compile: 4 * time.Millisecond, Run: 310 * time.Microsecond, Speed: sp}, nil
	}
}

const setupHead = `Tartan device setup

   #  ID          KIND        NAME      MEMORY  UNITS  
 * 1  cpu         cpu         Some CPU  8 GiB   4      
   2  opencl:0:0  cpu-opencl  PoCL      4 GiB   4      

Recommended: cpu Some CPU: Tartan's own CPU backend, 4 cores; ranked by kind.
`

const (
	checkPoCL = "Checking opencl:0:0 PoCL: a small dense layer and softmax against the reference, then a 256×256 product for speed... " +
		"ok (largest difference 2.5e-07; compile 4.0 ms, run 310 µs; product 16 ms).\n"
	checkCPU = "Checking the recommended cpu Some CPU to compare... ok (largest difference 2.5e-07; compile 4.0 ms, run 310 µs; product 330 µs).\n"
	slowPoCL = "opencl:0:0 (PoCL) ran the check 48× slower than cpu (Some CPU): the product took 16 ms against 330 µs"
)

// TestSetupWarnsOfASlowDevice checks the whole dialogue when the chosen
// device ran the check's product much slower than the recommended one:
// the question defaults to no, and only yes saves.
func TestSetupWarnsOfASlowDevice(t *testing.T) {
	path := isolate(t)
	fakeSetupDevices(t, map[string]time.Duration{"cpu": 330 * time.Microsecond, "opencl:0:0": 16 * time.Millisecond})
	ask := "Which device should Tartan use? Enter a number or an id [1]: "
	anyway := slowPoCL + ".\nSave opencl:0:0 as the default device in " + path + " anyway? [y/N]: "
	for _, c := range []struct {
		name, input, tail string
		saved             bool
	}{
		{"the empty answer is no", "2\n\n",
			"Not saved: run tartan setup again to choose another device, or tartan setup --device cpu --yes for cpu.\n", false},
		{"no", "opencl:0:0\nn\n",
			"Not saved: run tartan setup again to choose another device, or tartan setup --device cpu --yes for cpu.\n", false},
		{"the end of input is no", "2\n",
			"\nNot saved: the input ended before an answer (end of input means no).\n", false},
		{"yes, after an unclear answer", "2\nperhaps\nY\n",
			`"perhaps" is neither yes nor no; answer y or n.` + "\n" + anyway +
				"Saved: Tartan now uses opencl:0:0 (PoCL). Override with --device ID or $TARTAN_DEVICE.\n", true},
	} {
		t.Run(c.name, func(t *testing.T) {
			os.Remove(path)
			var out bytes.Buffer
			cfg, err := Setup(strings.NewReader(c.input), &out, SetupOptions{})
			want := setupHead + ask + checkPoCL + checkCPU + anyway + c.tail
			if out.String() != want {
				t.Errorf("got:\n%s\nwant:\n%s", out.String(), want)
			}
			_, statErr := os.Stat(path)
			if c.saved {
				if err != nil || cfg.Device != "opencl:0:0" || statErr != nil {
					t.Errorf("config %+v, error %v, file %v; want opencl:0:0 saved", cfg, err, statErr)
				}
				return
			}
			if !errors.Is(err, ErrNotSaved) || !strings.Contains(err.Error(), `"Save anyway?"`) || statErr == nil {
				t.Errorf("error %v, file %v; want one matching ErrNotSaved about \"Save anyway?\", and no file", err, statErr)
			}
		})
	}
}

// TestSetupYesSavesASlowDeviceWithAWarning checks that --device with --yes
// saves the slow device it names, warning on the warnings writer.
func TestSetupYesSavesASlowDeviceWithAWarning(t *testing.T) {
	path := isolate(t)
	fakeSetupDevices(t, map[string]time.Duration{"cpu": 330 * time.Microsecond, "opencl:0:0": 16 * time.Millisecond})
	var out, warn bytes.Buffer
	cfg, err := Setup(strings.NewReader(""), &out, SetupOptions{Device: "opencl:0:0", Yes: true, Warnings: &warn})
	if err != nil || cfg.Device != "opencl:0:0" {
		t.Fatalf("config %+v, %v", cfg, err)
	}
	if c, err := loadConfig(path); err != nil || c.Device != "opencl:0:0" {
		t.Errorf("saved %+v, %v", c, err)
	}
	wantOut := setupHead + checkPoCL + checkCPU + "Saved: Tartan now uses opencl:0:0 (PoCL). Override with --device ID or $TARTAN_DEVICE.\n"
	wantWarn := "tartan: warning: " + slowPoCL + "; saving it as --device and --yes ask (tartan setup --device cpu --yes saves the faster one)\n"
	if out.String() != wantOut || warn.String() != wantWarn {
		t.Errorf("output:\n%s\nwant:\n%s\nwarnings:\n%s\nwant:\n%s", out.String(), wantOut, warn.String(), wantWarn)
	}
}

// TestSetupComparesOnlyWhenItMatters checks that no warning comes for a
// device less than slowRatio times slower, for the recommended device
// itself, nor when the recommended device fails its check.
func TestSetupComparesOnlyWhenItMatters(t *testing.T) {
	path := isolate(t)
	saveQ := func(id string) string {
		return "Save " + id + " as the default device in " + path + "? [Y/n]: "
	}
	saved := "Saved: Tartan now uses opencl:0:0 (PoCL). Override with --device ID or $TARTAN_DEVICE.\n"

	// 2.9 times slower: below the ratio.
	fakeSetupDevices(t, map[string]time.Duration{"cpu": 10 * time.Millisecond, "opencl:0:0": 29 * time.Millisecond})
	var out bytes.Buffer
	if _, err := Setup(strings.NewReader("2\n\n"), &out, SetupOptions{}); err != nil {
		t.Fatal(err)
	}
	want := setupHead + "Which device should Tartan use? Enter a number or an id [1]: " +
		strings.Replace(checkPoCL, "product 16 ms", "product 29 ms", 1) +
		strings.Replace(checkCPU, "product 330 µs", "product 10 ms", 1) + saveQ("opencl:0:0") + saved
	if out.String() != want {
		t.Errorf("2.9× slower: got:\n%s\nwant:\n%s", out.String(), want)
	}

	// The recommended device is not compared with itself.
	out.Reset()
	if _, err := Setup(strings.NewReader("\n\n"), &out, SetupOptions{}); err != nil {
		t.Fatal(err)
	}
	want = setupHead + "Which device should Tartan use? Enter a number or an id [1]: " +
		"Checking cpu Some CPU: a small dense layer and softmax against the reference, then a 256×256 product for speed... " +
		"ok (largest difference 2.5e-07; compile 4.0 ms, run 310 µs; product 10 ms).\n" + saveQ("cpu") +
		"Saved: Tartan now uses cpu (Some CPU). Override with --device ID or $TARTAN_DEVICE.\n"
	if out.String() != want {
		t.Errorf("the recommended device: got:\n%s\nwant:\n%s", out.String(), want)
	}

	// A recommended device that fails its check is not compared.
	fakeSetupDevices(t, map[string]time.Duration{"opencl:0:0": 16 * time.Millisecond})
	out.Reset()
	var warn bytes.Buffer
	if _, err := Setup(strings.NewReader(""), &out, SetupOptions{Device: "opencl:0:0", Yes: true, Warnings: &warn}); err != nil {
		t.Fatal(err)
	}
	want = setupHead + checkPoCL +
		"Checking the recommended cpu Some CPU to compare... failed, so not compared: device check on cpu failed: probs[3] is NaN.\n" + saved
	if out.String() != want || warn.Len() != 0 {
		t.Errorf("a failing recommended device: got:\n%s\nwant:\n%s\nwarnings: %q", out.String(), want, warn.String())
	}
}

func TestFormatDurationAndRatio(t *testing.T) {
	for d, want := range map[time.Duration]string{
		0: "0 µs", 999 * time.Nanosecond: "0 µs", 330 * time.Microsecond: "330 µs", 1500 * time.Microsecond: "1.5 ms",
		16 * time.Millisecond: "16 ms", 999 * time.Millisecond: "999 ms", 2346 * time.Millisecond: "2.35 s",
	} {
		if got := formatDuration(d); got != want {
			t.Errorf("formatDuration(%v) = %q, want %q", d, got, want)
		}
	}
	for x, want := range map[float64]string{3: "3.0×", 4.64: "4.6×", 9.94: "9.9×", 10: "10×", 48.48: "48×"} {
		if got := formatRatio(x); got != want {
			t.Errorf("formatRatio(%v) = %q, want %q", x, got, want)
		}
	}
}

// TestSetupMeasuresSharedHardware checks that setup measures the backends
// of the same hardware that have no cached figure, recommends by the
// figures, and measures nothing again while the cache holds them.
func TestSetupMeasuresSharedHardware(t *testing.T) {
	path := isolate(t)
	oldList := listDevices
	t.Cleanup(func() { listDevices = oldList })
	listDevices = func() Listing {
		l := hostCPU()
		l.Devices[0].Why = "Tartan's own CPU backend, 2 cores"
		l.Devices[1].Why = "a CPU through OpenCL"
		l.applyCache()
		rank(l.Devices)
		return l
	}
	fakeMeasure(t, map[string]int{"cpu": 300, "opencl:1:0": 200, "vulkan:1": 15000})
	var out bytes.Buffer
	cfg, err := Setup(strings.NewReader(""), &out, SetupOptions{Yes: true})
	if err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	text := out.String()
	for _, want := range []string{
		"Measuring a training step of 4.4 MFLOP (a 64×256 batch through dense layers of 64 and 10 units, softmax cross-entropy, SGD), the median of up to 31 runs after a warm-up run checked against the reference, on the devices that reach the same hardware:\n" +
			"  cpu         300 µs a step (14.8 GFLOP/s, median of 31 runs)\n" +
			"  opencl:1:0  200 µs a step (22.2 GFLOP/s, median of 31 runs)\n" +
			"  vulkan:1    15 ms a step (0.3 GFLOP/s, median of 31 runs)\n",
		"STEP",
		"Recommended: opencl:1:0 pthread-znver3: a CPU through OpenCL",
		"; ranked by measured speed: a training step in 200 µs, against 300 µs on cpu and 15 ms on vulkan:1 (the same CPU).\n",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("output lacks %q:\n%s", want, text)
		}
	}
	if cfg.Device != "opencl:1:0" {
		t.Errorf("saved %+v, want the measured fastest", cfg)
	}
	if c, err := loadConfig(path); err != nil || c.Device != "opencl:1:0" {
		t.Errorf("config file %+v, %v", c, err)
	}
	// Again: the figures come from the cache.
	fakeMeasure(t, nil) // would fail every device
	out.Reset()
	if _, err := Setup(strings.NewReader(""), &out, SetupOptions{Device: "cpu", Yes: true}); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	if strings.Contains(out.String(), "Measuring") || !strings.Contains(out.String(), "Recommended: opencl:1:0") {
		t.Errorf("the second setup:\n%s", out.String())
	}
}
