package device

import (
	"bytes"
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/tartanml/tartan/backend"
	"github.com/tartanml/tartan/backend/opencl"
	"github.com/tartanml/tartan/backend/opencl/cl"
	"github.com/tartanml/tartan/backend/vulkan"
	"github.com/tartanml/tartan/backend/vulkan/vk"
)

// withoutOpenCL makes List and Open find no OpenCL, as on a machine
// without its runtime, failing with the given attempts, and no Vulkan
// loader either.
func withoutOpenCL(t *testing.T, tried ...cl.Attempt) {
	t.Helper()
	old, oldVulkan := openclList, vulkanList
	t.Cleanup(func() { openclList, vulkanList = old, oldVulkan })
	openclList = func() ([]opencl.Candidate, error) { return nil, &cl.NotAvailableError{Tried: tried} }
	vulkanList = func() ([]vulkan.Candidate, error) { return nil, noVulkan }
}

// noVulkan is the error of a machine without a Vulkan loader.
var noVulkan = &vk.NotAvailableError{Reason: "no Vulkan loader could be opened",
	Tried: []string{"libvulkan.so.1: libvulkan.so.1: cannot open shared object file", "libvulkan.so: libvulkan.so: cannot open shared object file"}}

// TestChooseAgreesWithSelect checks that what Choose says a run uses is
// what Select opens, from each source.
func TestChooseAgreesWithSelect(t *testing.T) {
	path := isolate(t)
	withoutOpenCL(t)
	for _, c := range []struct {
		name, env, config string // config: the file's content, "" for none
		id, source, why   string
	}{
		{"nothing configured", "", "", "cpu", SourceRecommended, "no device is configured, so a run takes the recommended one (*): Tartan's own CPU backend, "},
		{"configured", "", `{"device":"reference"}`, "reference", SourceConfig, "configured in " + path + " (by tartan setup)"},
		{"the environment wins", "cpu", `{"device":"reference"}`, "cpu", SourceEnv, "set by $TARTAN_DEVICE, which overrides the configured reference (" + path + ")"},
		{"the environment alone", "reference", "", "reference", SourceEnv, "set by $TARTAN_DEVICE"},
		{"a configured device not listed", "", `{"device":"opencl:42:7"}`, "cpu", SourceFallback,
			"the configured device opencl:42:7 (" + path + ") is not listed, so a run falls back to the CPU backend (run tartan setup to choose again)"},
		{"a damaged file", "", `{"device":`, "cpu", SourceFallback,
			"config file " + path + " is truncated: it ends inside its JSON object, so a run falls back to the CPU backend (run tartan setup to fix the configuration)"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Setenv(EnvDevice, c.env)
			os.Remove(path)
			if c.config != "" {
				if err := os.MkdirAll(strings.TrimSuffix(path, "/config.json"), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(path, []byte(c.config), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			ch := Choose(List())
			if ch.ID != c.id || ch.Source != c.source || !strings.HasPrefix(ch.Why, c.why) || ch.Error != "" || ch.Name == "" {
				t.Errorf("Choose: %+v; want id %s, source %s, a name and a reason starting %q", ch, c.id, c.source, c.why)
			}
			if (c.source == SourceConfig || c.source == SourceFallback) != (ch.ConfigFile == path) {
				t.Errorf("config file %q", ch.ConfigFile)
			}
			d, sel, err := Select("")
			if err != nil {
				t.Fatal(err)
			}
			info := d.Info()
			d.Close()
			if sel.ID != ch.ID || info.Name != ch.Name {
				t.Errorf("Select opened %s (%s), Choose says %s (%s)", sel.ID, info.Name, ch.ID, ch.Name)
			}
		})
	}
}

// TestChooseUnusableEnvironment checks that a $TARTAN_DEVICE that Select
// refuses is an error in the Choice, naming the variable and the ids.
func TestChooseUnusableEnvironment(t *testing.T) {
	isolate(t)
	withoutOpenCL(t)
	for _, c := range []struct{ env, want string }{
		{"opencl:0:0", "$TARTAN_DEVICE=opencl:0:0 names no device listed (the ids are cpu ("},
		{"gpu", `$TARTAN_DEVICE=gpu: unknown device "gpu": want cpu, opencl:<platform>:<device>, vulkan:<index> (see tartan devices) or reference`},
	} {
		t.Setenv(EnvDevice, c.env)
		ch := Choose(List())
		if ch.ID != c.env || ch.Source != SourceEnv || !strings.HasPrefix(ch.Error, c.want) {
			t.Errorf("%s: %+v; want the error %q", c.env, ch, c.want)
		}
		if _, _, err := Select(""); err == nil {
			t.Errorf("%s: Select opened a device", c.env)
		}
	}
}

// TestChooseRenamedDevice checks the warning for a configured id that now
// holds a device of another name.
func TestChooseRenamedDevice(t *testing.T) {
	path := isolate(t)
	withoutOpenCL(t)
	if err := saveConfig(path, Config{Device: "cpu", Name: "Old CPU"}); err != nil {
		t.Fatal(err)
	}
	l := List()
	ch := Choose(l)
	want := `the configured device cpu was "Old CPU" at setup and is now "` + l.Devices[0].Name + `" (run tartan setup to choose again)`
	if ch.ID != "cpu" || ch.Source != SourceConfig || ch.Warning != want {
		t.Errorf("%+v\nwant the warning %q", ch, want)
	}
}

// TestFormatTableWithoutOpenCL checks the whole text a listing without
// OpenCL prints: every library and directory tried, and the install hint.
func TestFormatTableWithoutOpenCL(t *testing.T) {
	withoutOpenCL(t,
		cl.Attempt{Role: "ICD loader", Path: "libOpenCL.so.1", Err: errors.New("opencl: dlopen: libOpenCL.so.1: cannot open shared object file: No such file or directory")},
		cl.Attempt{Role: "ICD loader", Path: "libOpenCL.so", Err: errors.New("opencl: dlopen: libOpenCL.so: cannot open shared object file: No such file or directory")},
		cl.Attempt{Role: "vendor search", Path: "libnvidia-opencl.so.1, libamdocl64.so in /usr/lib:/opt/rocm/lib", Err: errors.New("none found")})
	l := List()
	l.Devices[0].Info = backend.Info{ID: "cpu", Name: "Some CPU", Memory: 8 << 30, ComputeUnits: 4}
	var b bytes.Buffer
	FormatTable(&b, l)
	want := `   #  ID   KIND  NAME      MEMORY  UNITS  
 * 1  cpu  cpu   Some CPU  8 GiB   4      
   note: no OpenCL platform found; tried:
           ICD loader libOpenCL.so.1: dlopen: libOpenCL.so.1: cannot open shared object file: No such file or directory
           ICD loader libOpenCL.so: dlopen: libOpenCL.so: cannot open shared object file: No such file or directory
           vendor search libnvidia-opencl.so.1, libamdocl64.so in /usr/lib:/opt/rocm/lib: none found
   note: Vulkan is not available: no Vulkan loader could be opened (tried libvulkan.so.1: libvulkan.so.1: cannot open shared object file; libvulkan.so: libvulkan.so: cannot open shared object file)

No OpenCL platform was found, so Tartan runs on its CPU backend. To use a GPU, install
its vendor's OpenCL driver (an ICD) and the ICD loader:
  Debian/Ubuntu: nvidia-opencl-icd (NVIDIA), mesa-opencl-icd or ROCm (AMD), intel-opencl-icd (Intel);
                 pocl-opencl-icd to try OpenCL on the CPU; ocl-icd-libopencl1 is the ICD loader
  Fedora: ocl-icd, with pocl, mesa-libOpenCL, intel-compute-runtime or rocm-opencl (NVIDIA's comes with its driver)
  Arch: ocl-icd, with opencl-nvidia, rocm-opencl-runtime, intel-compute-runtime or pocl
  macOS: OpenCL is built in
Then check: clinfo (package clinfo) lists each platform, and each installed driver has a file
in /etc/OpenCL/vendors; tartan devices lists its devices.
`
	if b.String() != want {
		t.Errorf("got:\n%s\nwant:\n%s", b.String(), want)
	}
	// The table that marks the device a run uses leaves the hint to its
	// caller.
	b.Reset()
	FormatTableUsing(&b, l, "cpu")
	if want := "    #  ID   KIND  NAME      MEMORY  UNITS  \n >* 1  cpu  cpu   Some CPU  8 GiB   4      \n   note: no OpenCL platform found; tried:\n"; !strings.HasPrefix(b.String(), want) || strings.Contains(b.String(), "Debian") {
		t.Errorf("got:\n%s\nwant it to start:\n%s\nand hold no hint", b.String(), want)
	}
}

// TestListHintWithoutGPU checks that OpenCL without a GPU gets the install
// hint for GPU drivers, without the note that OpenCL is missing.
func TestListHintWithoutGPU(t *testing.T) {
	old, oldVulkan := openclList, vulkanList
	defer func() { openclList, vulkanList = old, oldVulkan }()
	openclList = func() ([]opencl.Candidate, error) { return nil, nil }
	vulkanList = func() ([]vulkan.Candidate, error) {
		return []vulkan.Candidate{{ID: "vulkan:0", Device: &vk.PhysicalDevice{Name: "a CPU", Type: vk.DeviceTypeCPU, APIVersion: vk.MakeAPIVersion(1, 3, 0),
			QueueFamilies: []vk.QueueFamily{{QueueFlags: vk.QueueCompute, QueueCount: 1}}}}}, nil
	}
	l := List()
	if len(l.Notes) != 0 || !strings.HasPrefix(l.Hint, "No GPU is listed. To use one, install its vendor's OpenCL driver (an ICD):\n  Debian/Ubuntu: ") {
		t.Errorf("notes %q, hint %q", l.Notes, l.Hint)
	}
}
