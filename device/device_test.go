package device

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tartanml/tartan/backend"
	"github.com/tartanml/tartan/backend/cpu"
	"github.com/tartanml/tartan/backend/opencl"
	"github.com/tartanml/tartan/backend/opencl/cl"
	"github.com/tartanml/tartan/tile"
)

// isolate points the config and cache directories at a fresh temporary
// directory and clears $TARTAN_DEVICE.
func isolate(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	t.Setenv("XDG_CONFIG_HOME", dir)
	t.Setenv("XDG_CACHE_HOME", filepath.Join(dir, "cache"))
	t.Setenv(EnvDevice, "")
	return filepath.Join(dir, "tartan", "config.json")
}

// TestUserPaths: the config file and the measurement cache go under their
// XDG directory when it is set, else under the home directory's default.
func TestUserPaths(t *testing.T) {
	// $XDG_CONFIG_HOME, $XDG_CACHE_HOME, $HOME, then what ConfigPath and
	// MeasureCachePath return: a path, or the start of an error.
	for _, c := range [][5]string{
		{"/x/cfg", "/x/cache", "/home/u", "/x/cfg/tartan/config.json", "/x/cache/tartan/measurements.json"},
		{"", "", "/home/u", "/home/u/.config/tartan/config.json", "/home/u/.cache/tartan/measurements.json"},
		{"/x/cfg", "", "", "/x/cfg/tartan/config.json", "no cache directory: $XDG_CACHE_HOME is unset and the home directory is unknown"},
		{"", "/x/cache", "", "no configuration directory: $XDG_CONFIG_HOME is unset", "/x/cache/tartan/measurements.json"},
	} {
		t.Setenv("XDG_CONFIG_HOME", c[0])
		t.Setenv("XDG_CACHE_HOME", c[1])
		t.Setenv("HOME", c[2])
		for i, path := range []func() (string, error){ConfigPath, MeasureCachePath} {
			p, err := path()
			if err != nil {
				p = err.Error()
			}
			if want := c[3+i]; p != want && (err == nil || !strings.HasPrefix(p, want)) {
				t.Errorf("%q, path %d: %q, want %q", c[:3], i, p, want)
			}
		}
	}
}

func TestConfigRoundTripAndAtomicWrite(t *testing.T) {
	path := isolate(t)
	if c, err := LoadConfig(); err != nil || c != (Config{}) {
		t.Fatalf("missing file: %+v, %v; want empty config and no error", c, err)
	}
	want := Config{Device: "opencl:0:1", Name: "NVIDIA H200", Checked: "2026-01-02T03:04:05Z"}
	got, err := SaveConfig(want)
	if err != nil || got != path {
		t.Fatalf("SaveConfig: %q, %v (want path %q)", got, err, path)
	}
	c, err := LoadConfig()
	if err != nil || c != want {
		t.Fatalf("LoadConfig: %+v, %v; want %+v", c, err, want)
	}
	var raw map[string]string
	data, _ := os.ReadFile(path)
	if err := json.Unmarshal(data, &raw); err != nil || raw["device"] != "opencl:0:1" {
		t.Errorf("file content %q: %v", data, err)
	}
	entries, _ := os.ReadDir(filepath.Dir(path))
	if len(entries) != 1 {
		t.Errorf("config directory holds %d entries, want only config.json (no temporary files left)", len(entries))
	}
	os.WriteFile(path, []byte("{not json"), 0o644)
	if _, err := LoadConfig(); err == nil || !strings.Contains(err.Error(), path) {
		t.Errorf("malformed file: error %v should name %s", err, path)
	}
}

// TestLoadConfigRejectsDamage checks that every kind of unusable config
// file is an error naming the file and what is wrong, without hanging on a
// FIFO or reading without bound.
func TestLoadConfigRejectsDamage(t *testing.T) {
	path := isolate(t)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	good, err := encodeConfig(Config{Device: "opencl:0:1", Name: "NVIDIA H200", Checked: "2026-01-02T03:04:05Z"})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name    string
		content string
		want    string
	}{
		{"empty", "", "is empty"},
		{"blank", " \n\t", "is empty"},
		{"truncated", string(good[:len(good)/2]), "is truncated"},
		{"one byte", "{", "is truncated"},
		{"null", "null", "does not hold a JSON object"},
		{"array", `["cpu"]`, "does not hold a JSON object"},
		{"garbage after the object", `{"device": "cpu"} {"device": "reference"}`, "more follows"},
		{"a number for the device", `{"device": 5}`, "not valid JSON"},
		{"unknown device", `{"device": "gpu"}`, `unknown device "gpu"`},
		{"bad OpenCL id", `{"device": "opencl:-1:0"}`, "bad device id"},
		{"binary", "\x00\x01\x02\xff", "does not hold a JSON object"},
		{"too large", `{"name": "` + strings.Repeat("x", MaxConfigSize) + `"}`, "more than"},
	} {
		t.Run(c.name, func(t *testing.T) {
			if err := os.WriteFile(path, []byte(c.content), 0o644); err != nil {
				t.Fatal(err)
			}
			cfg, err := loadConfig(path)
			if err == nil || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %.300v, want one naming %s and saying %q", err, path, c.want)
			}
			if cfg != (Config{}) {
				t.Errorf("config %.300q from a damaged file, want none", fmt.Sprintf("%+v", cfg))
			}
		})
	}
	if err := os.WriteFile(path, good, 0o644); err != nil {
		t.Fatal(err)
	}
	if c, err := loadConfig(path); err != nil || c.Device != "opencl:0:1" {
		t.Errorf("the good file: %+v, %v", c, err)
	}

	// Not regular files: a directory and a FIFO (which a read would wait
	// on forever).
	os.Remove(path)
	if err := os.Mkdir(path, 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := loadConfig(path); err == nil || !strings.Contains(err.Error(), path+" is a directory") {
		t.Errorf("a directory: %v", err)
	}
	os.Remove(path)
	mkfifo(t, path)
	done := make(chan error, 1)
	go func() {
		_, err := loadConfig(path)
		done <- err
	}()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), path+" is a named pipe") {
			t.Errorf("a FIFO: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("loading a FIFO as the config file hangs")
	}
	// Select goes on with the CPU and a warning naming the file.
	d, s, err := Select("")
	if d != nil {
		d.Close()
	}
	if err != nil || s.ID != "cpu" || !strings.Contains(s.Warning, path) {
		t.Errorf("Select with a FIFO config: %+v, %v", s, err)
	}
	os.Remove(path)

	// Saving refuses what loading would refuse.
	if err := saveConfig(path, Config{Device: "tpu:0"}); err == nil || !strings.Contains(err.Error(), "tpu:0") {
		t.Errorf("saving an unknown device: %v", err)
	}
	if err := saveConfig(path, Config{Device: "cpu", Name: strings.Repeat("<", MaxConfigSize/4)}); err == nil {
		t.Error("saving a configuration too large to read back succeeded")
	}
	if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a refused save left a file (%v)", err)
	}
}

// mkfifo makes a named pipe at path, or skips the test.
func mkfifo(t *testing.T, path string) {
	t.Helper()
	tool, err := exec.LookPath("mkfifo")
	if err != nil {
		t.Skipf("no mkfifo: %v", err)
	}
	if out, err := exec.Command(tool, path).CombinedOutput(); err != nil {
		t.Skipf("mkfifo %s: %v %s", path, err, out)
	}
}

func TestClassifyAndRecommend(t *testing.T) {
	info := func(typ cl.DeviceType, vendor, name string, cus int, mem uint64) cl.DeviceInfo {
		return cl.DeviceInfo{Type: typ, Vendor: vendor, Name: name, MaxComputeUnits: cus, GlobalMemSize: mem, Available: true, CompilerAvailable: true}
	}
	cpuEntry := Entry{Info: backend.Info{ID: "cpu", ComputeUnits: 8}, Kind: KindCPU, rank: 100}
	cases := []struct {
		name     string
		devs     []cl.DeviceInfo
		wantKind []string
		best     int // index into all entries, cpu first
	}{
		{"only PoCL: the CPU backend wins", []cl.DeviceInfo{info(cl.DeviceTypeCPU, "AuthenticAMD", "pthread-znver3", 16, 32<<30)},
			[]string{KindCPUOpenCL}, 0},
		{"discrete over integrated", []cl.DeviceInfo{
			info(cl.DeviceTypeGPU, "Intel(R) Corporation", "Intel(R) UHD Graphics 770", 32, 16<<30),
			info(cl.DeviceTypeGPU, "NVIDIA Corporation", "NVIDIA H200", 132, 140<<30)},
			[]string{KindIntegratedGPU, KindGPU}, 2},
		{"integrated over the CPU", []cl.DeviceInfo{info(cl.DeviceTypeGPU, "Apple", "Apple M2", 10, 16<<30)},
			[]string{KindIntegratedGPU}, 1},
		{"Intel Arc is discrete", []cl.DeviceInfo{info(cl.DeviceTypeGPU, "Intel(R) Corporation", "Intel(R) Arc(TM) A770 Graphics", 32, 16<<30)},
			[]string{KindGPU}, 1},
		{"the larger of two GPUs", []cl.DeviceInfo{
			info(cl.DeviceTypeGPU, "Advanced Micro Devices, Inc.", "gfx1030", 40, 16<<30),
			info(cl.DeviceTypeGPU, "Advanced Micro Devices, Inc.", "gfx90a", 110, 64<<30)},
			[]string{KindGPU, KindGPU}, 2},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			all := []Entry{cpuEntry}
			for i, d := range c.devs {
				e := Entry{Info: backend.Info{ComputeUnits: d.MaxComputeUnits, Memory: int64(d.GlobalMemSize)}}
				classify(&e, d)
				if e.Kind != c.wantKind[i] {
					t.Errorf("%s: kind %s, want %s", d.Name, e.Kind, c.wantKind[i])
				}
				if e.Why == "" {
					t.Errorf("%s: no reason given", d.Name)
				}
				all = append(all, e)
			}
			best := 0
			for i := range all {
				if better(all[i], all[best]) {
					best = i
				}
			}
			if best != c.best {
				t.Errorf("recommended entry %d (%s), want %d", best, all[best].Kind, c.best)
			}
		})
	}
}

func TestListAlwaysHasTheCPU(t *testing.T) {
	l := List()
	if len(l.Devices) == 0 || l.Devices[0].ID != "cpu" {
		t.Fatalf("first device %+v, want cpu", l.Devices)
	}
	n := 0
	for _, e := range l.Devices {
		if e.Recommended {
			n++
		}
		if e.ID != "cpu" && !strings.HasPrefix(e.ID, "opencl:") && !strings.HasPrefix(e.ID, "vulkan:") {
			t.Errorf("unexpected id %q", e.ID)
		}
	}
	if n != 1 {
		t.Errorf("%d recommended devices, want 1", n)
	}
	var b bytes.Buffer
	FormatTable(&b, l)
	if !strings.Contains(b.String(), "cpu") || !strings.Contains(b.String(), "*") {
		t.Errorf("table lacks the cpu row or the recommendation mark:\n%s", b.String())
	}
	// Without OpenCL and Vulkan the listing says so instead of failing,
	// Vulkan in one line.
	withoutOpenCL(t)
	l = List()
	if len(l.Devices) != 1 || !l.Devices[0].Recommended || len(l.Notes) != 2 || !strings.Contains(l.Notes[0], "no OpenCL") ||
		!strings.HasPrefix(l.Notes[1], "Vulkan is not available: ") || strings.Contains(l.Notes[1], "\n") {
		t.Errorf("without OpenCL and Vulkan: %+v", l)
	}
}

func TestSelectionOrder(t *testing.T) {
	path := isolate(t)
	closeDev := func(d backend.Device) {
		if d != nil {
			d.Close()
		}
	}
	d, s, err := Select("cpu")
	closeDev(d)
	if err != nil || s.ID != "cpu" || s.Source != "--device flag" {
		t.Errorf("flag: %+v, %v", s, err)
	}
	if _, _, err := Select("opencl:99:0"); err == nil || !strings.Contains(err.Error(), "--device opencl:99:0") {
		t.Errorf("a missing flag device must fail naming the flag, got %v", err)
	}
	if _, _, err := Select("gpu"); err == nil || !strings.Contains(err.Error(), "unknown device") {
		t.Errorf("unknown id: %v", err)
	}
	t.Setenv(EnvDevice, "reference")
	d, s, err = Select("")
	closeDev(d)
	if err != nil || s.ID != "reference" || s.Source != "$"+EnvDevice {
		t.Errorf("environment: %+v, %v", s, err)
	}
	d, s, err = Select("cpu")
	closeDev(d)
	if err != nil || s.Source != "--device flag" {
		t.Errorf("the flag must win over the environment: %+v, %v", s, err)
	}
	t.Setenv(EnvDevice, "")
	if err := saveConfig(path, Config{Device: "reference"}); err != nil {
		t.Fatal(err)
	}
	d, s, err = Select("")
	closeDev(d)
	if err != nil || s.ID != "reference" || s.Source != path || s.Warning != "" {
		t.Errorf("config file: %+v, %v", s, err)
	}
	if err := saveConfig(path, Config{Device: "reference", Name: "some other device"}); err != nil {
		t.Fatal(err)
	}
	d, s, err = Select("")
	closeDev(d)
	if err != nil || s.ID != "reference" || !strings.Contains(s.Warning, "some other device") {
		t.Errorf("renamed configured device: %+v, %v; want it used with a warning", s, err)
	}
	if err := saveConfig(path, Config{Device: "opencl:42:7"}); err != nil {
		t.Fatal(err)
	}
	d, s, err = Select("")
	closeDev(d)
	if err != nil || s.ID != "cpu" || !strings.Contains(s.Warning, "opencl:42:7") || !strings.Contains(s.Warning, "using cpu") {
		t.Errorf("missing configured device: %+v, %v; want the cpu with a warning", s, err)
	}
	os.WriteFile(path, []byte("]"), 0o644)
	d, s, err = Select("")
	closeDev(d)
	if err != nil || s.ID != "cpu" || !strings.Contains(s.Warning, path) {
		t.Errorf("damaged config: %+v, %v; want the cpu with a warning naming the file", s, err)
	}
	os.Remove(path)
	d, s, err = Select("")
	closeDev(d)
	if err != nil || s.Source != "best available" || s.ID != List().Recommended().ID {
		t.Errorf("no configuration: %+v, %v", s, err)
	}
}

// wrongDevice wraps a device and corrupts one output value.
type wrongDevice struct{ backend.Device }

type wrongExec struct{ backend.Executable }

func (w wrongDevice) Compile(g *tile.Graph) (backend.Executable, error) {
	e, err := w.Device.Compile(g)
	return wrongExec{e}, err
}

func (w wrongExec) ReadOutput(name string, dst any) error {
	err := w.Executable.ReadOutput(name, dst)
	if name == "probs" {
		dst.([]float32)[5] += 0.25
	}
	return err
}

func TestCheck(t *testing.T) {
	devs := []backend.Device{cpu.New()}
	if cs, err := opencl.List(); err == nil {
		for _, c := range cs {
			d, err := opencl.OpenCandidate(c)
			if err != nil {
				t.Fatalf("opening %s: %v", c.ID, err)
			}
			devs = append(devs, d)
		}
	}
	for _, d := range devs {
		res, err := Check(d)
		if err != nil {
			t.Errorf("%s: %v", d.Info().ID, err)
		} else if res.MaxError > 1e-3 {
			t.Errorf("%s: largest difference %g; float32 devices should agree to 1e-3", d.Info().ID, res.MaxError)
		} else if res.Speed <= 0 || res.Speed > time.Minute {
			t.Errorf("%s: the product took %v", d.Info().ID, res.Speed)
		}
		d.Close()
	}
	c := cpu.New()
	defer c.Close()
	_, err := Check(wrongDevice{c})
	if err == nil || !strings.Contains(err.Error(), "probs[5]") {
		t.Errorf("a wrong device passed the check or the error does not name the element: %v", err)
	}
}

func TestSetupInteractive(t *testing.T) {
	path := isolate(t)
	var out bytes.Buffer
	// An invalid answer is asked again; "1" picks the first device (cpu);
	// the empty answer to the save question saves.
	cfg, err := Setup(strings.NewReader("banana\n1\n\n"), &out, SetupOptions{})
	if err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	text := out.String()
	for _, want := range []string{"Recommended:", "is not one of the devices", "Checking cpu", "ok (", "Saved"} {
		if !strings.Contains(text, want) {
			t.Errorf("output lacks %q:\n%s", want, text)
		}
	}
	if cfg.Device != "cpu" || cfg.Checked == "" {
		t.Errorf("config %+v", cfg)
	}
	if c, err := loadConfig(path); err != nil || c.Device != "cpu" {
		t.Errorf("saved config %+v, %v", c, err)
	}
	// Declining to save leaves the file alone and says so in the error.
	out.Reset()
	if err := saveConfig(path, Config{Device: "reference"}); err != nil {
		t.Fatal(err)
	}
	if _, err := Setup(strings.NewReader("cpu\nn\n"), &out, SetupOptions{}); !errors.Is(err, ErrNotSaved) {
		t.Errorf("declining: error %v, want one matching ErrNotSaved", err)
	}
	if c, _ := loadConfig(path); c.Device != "reference" || !strings.Contains(out.String(), "Not saved") {
		t.Errorf("after declining: config %+v, output:\n%s", c, out.String())
	}
}

// TestSetupEndOfInputIsNo checks that setup run without an answer (input
// from /dev/null, or input that ends before the save question) saves
// nothing and says so, while a last answer without a newline still counts.
func TestSetupEndOfInputIsNo(t *testing.T) {
	path := isolate(t)
	for _, c := range []struct {
		name, input, want string
	}{
		{"no input at all", "", "before a device was chosen"},
		{"only blanks, no newline", "  ", "before a device was chosen"},
		{"a device, then the end", "cpu\n", "end of input means no"},
		{"a device without a newline", "1", "end of input means no"},
		{"a device, an empty line, then the end", "\n", "end of input means no"},
	} {
		t.Run(c.name, func(t *testing.T) {
			var out bytes.Buffer
			cfg, err := Setup(strings.NewReader(c.input), &out, SetupOptions{})
			if !errors.Is(err, ErrNotSaved) || !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %v, want one matching ErrNotSaved that says %q", err, c.want)
			}
			if cfg != (Config{}) {
				t.Errorf("returned config %+v, want none", cfg)
			}
			if !strings.Contains(out.String(), "Not saved") {
				t.Errorf("output does not say nothing was saved:\n%s", out.String())
			}
			if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("the config file exists after setup saved nothing (%v)", err)
			}
		})
	}
}

// endless is an input that never ends: the same bytes forever.
type endless struct{ b []byte }

func (e endless) Read(p []byte) (int, error) {
	n := 0
	for n < len(p) {
		n += copy(p[n:], e.b)
	}
	return n, nil
}

// TestSetupBoundedQuestions checks that hostile input cannot keep setup
// asking or reading forever, and that only yes saves.
func TestSetupBoundedQuestions(t *testing.T) {
	path := isolate(t)
	for _, c := range []struct {
		name string
		in   io.Reader
		want string
	}{
		{"endless wrong devices", endless{[]byte("banana\n")}, "named no device"},
		{"endless lines of y", endless{[]byte("y\n")}, "named no device"},
		{"input without newlines", endless{[]byte{0}}, "longer than"},
		{"an answer that is neither yes nor no", strings.NewReader("cpu\nnope\n"), "end of input"},
		{"endless unclear save answers", io.MultiReader(strings.NewReader("cpu\n"), endless{[]byte("maybe\n")}), "neither yes nor no"},
	} {
		t.Run(c.name, func(t *testing.T) {
			done := make(chan error, 1)
			var out bytes.Buffer
			go func() {
				_, err := Setup(c.in, &out, SetupOptions{})
				done <- err
			}()
			select {
			case err := <-done:
				if !errors.Is(err, ErrNotSaved) || !strings.Contains(err.Error(), c.want) {
					t.Errorf("error %v, want one matching ErrNotSaved that says %q", err, c.want)
				}
			case <-time.After(20 * time.Second):
				t.Fatal("setup is still asking after 20 s")
			}
			if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("the config file exists after setup saved nothing (%v)", err)
			}
		})
	}
	var out bytes.Buffer
	if cfg, err := Setup(strings.NewReader("cpu\nYes\n"), &out, SetupOptions{}); err != nil || cfg.Device != "cpu" {
		t.Errorf("answering Yes: %+v, %v\n%s", cfg, err, out.String())
	}
}

func TestSetupNonInteractive(t *testing.T) {
	path := isolate(t)
	var out bytes.Buffer
	cfg, err := Setup(strings.NewReader("this input must not be read\n"), &out, SetupOptions{Device: "cpu", Yes: true})
	if err != nil || cfg.Device != "cpu" {
		t.Fatalf("%+v, %v\n%s", cfg, err, out.String())
	}
	if strings.Contains(out.String(), "?") {
		t.Errorf("non-interactive setup asked a question:\n%s", out.String())
	}
	if _, err := Setup(strings.NewReader(""), &out, SetupOptions{Device: "opencl:77:0", Yes: true}); err == nil || !strings.Contains(err.Error(), "opencl:77:0") {
		t.Errorf("unknown device: %v", err)
	}
	// A device failing the check is not saved.
	old := openDevice
	defer func() { openDevice = old }()
	openDevice = func(id string) (backend.Device, error) { return wrongDevice{cpu.New()}, nil }
	_, err = Setup(strings.NewReader(""), &out, SetupOptions{Device: "cpu", Yes: true})
	if err == nil || !strings.Contains(err.Error(), "not changed") {
		t.Errorf("failing check: %v", err)
	}
	if c, _ := loadConfig(path); c.Device != "cpu" || c.Name == "" {
		t.Errorf("config after a failed check: %+v (want the earlier cpu entry)", c)
	}
	openDevice = func(id string) (backend.Device, error) { return nil, errors.New("boom") }
	if _, err := Setup(strings.NewReader(""), &out, SetupOptions{Yes: true}); err == nil || !strings.Contains(err.Error(), "boom") {
		t.Errorf("open failure: %v", err)
	}
}
