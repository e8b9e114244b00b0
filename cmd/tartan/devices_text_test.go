package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tartanml/tartan/backend/cpu"
)

// envCLIArgs carries the command line to TestDevicesHelperProcess, which
// runs it in a process of its own: OpenCL discovery runs once a process,
// so a test that points it at nothing needs a fresh one.
const envCLIArgs = "TARTAN_TEST_CLI_ARGS"

func TestDevicesHelperProcess(t *testing.T) {
	args, ok := os.LookupEnv(envCLIArgs)
	if !ok {
		t.Skip("runs a command line for the other devices tests")
	}
	os.Exit(runWith(strings.Split(args, "\x1f"), strings.NewReader(""), os.Stdout, os.Stderr))
}

// cliWithoutOpenCL runs tartan with args in a new process whose OpenCL
// discovery finds nothing (it may open only a library that does not
// exist), with the config directory dir and $TARTAN_DEVICE set to envDevice.
func cliWithoutOpenCL(t *testing.T, dir, envDevice string, args ...string) (int, string, string) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestDevicesHelperProcess$")
	cmd.Env = append(os.Environ(), envCLIArgs+"="+strings.Join(args, "\x1f"),
		"TARTAN_OPENCL_LIBRARY="+missingLibrary, "TARTAN_VULKAN_LIBRARY="+missingVulkan, "XDG_CONFIG_HOME="+dir,
		"XDG_CACHE_HOME="+filepath.Join(dir, "cache"), "TARTAN_DEVICE="+envDevice)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return code, out.String(), errb.String()
}

const missingLibrary = "/nonexistent/libOpenCL.so"

// missingVulkan stands for the Vulkan loader in those runs.
const missingVulkan = "/nonexistent/libvulkan.so.1"

// cpuTable is the table of the CPU backend alone on this machine, marked as
// given, with the name column as wide as the name (or its heading).
func cpuTable(mark string) string {
	i := cpu.New().Info()
	w := max(len(i.Name), len("NAME"))
	mem := fmt.Sprintf("%.0f GiB", float64(i.Memory)/(1<<30))
	mw := max(len(mem), len("MEMORY"))
	uw := max(len(fmt.Sprint(i.ComputeUnits)), len("UNITS"))
	return fmt.Sprintf("    #  ID   KIND  %-*s  %-*s  %-*s  \n %s 1  cpu  cpu   %-*s  %-*s  %-*d  \n",
		w, "NAME", mw, "MEMORY", uw, "UNITS", mark, w, i.Name, mw, mem, uw, i.ComputeUnits)
}

// dlopenLine returns the note's line for the missing library, checking the
// part Tartan writes; the rest is the system's dlopen message.
func dlopenLine(t *testing.T, out string) string {
	t.Helper()
	const prefix = "           override ($TARTAN_OPENCL_LIBRARY) " + missingLibrary + ": dlopen: "
	for _, line := range strings.Split(out, "\n") {
		if strings.HasPrefix(line, prefix) && len(line) > len(prefix) {
			return line
		}
	}
	t.Fatalf("no line %q… in:\n%s", prefix, out)
	return ""
}

// vulkanLine returns the one-line note for the missing Vulkan loader,
// checking the part Tartan writes.
func vulkanLine(t *testing.T, out string) string {
	t.Helper()
	const prefix = "   note: Vulkan is not available: no Vulkan loader could be opened (tried " + missingVulkan + ": "
	for _, line := range strings.Split(out, "\n") {
		if strings.HasPrefix(line, prefix) && strings.HasSuffix(line, ")") {
			return line
		}
	}
	t.Fatalf("no line %q… in:\n%s", prefix, out)
	return ""
}

const hintWithoutOpenCL = `No OpenCL platform was found, so Tartan runs on its CPU backend. To use a GPU, install
its vendor's OpenCL driver (an ICD) and the ICD loader:
  Debian/Ubuntu: nvidia-opencl-icd (NVIDIA), mesa-opencl-icd or ROCm (AMD), intel-opencl-icd (Intel);
                 pocl-opencl-icd to try OpenCL on the CPU; ocl-icd-libopencl1 is the ICD loader
  Fedora: ocl-icd, with pocl, mesa-libOpenCL, intel-compute-runtime or rocm-opencl (NVIDIA's comes with its driver)
  Arch: ocl-icd, with opencl-nvidia, rocm-opencl-runtime, intel-compute-runtime or pocl
  macOS: OpenCL is built in
Then check: clinfo (package clinfo) lists each platform, and each installed driver has a file
in /etc/OpenCL/vendors; tartan devices lists its devices.
`

// TestDevicesWithoutOpenCL checks the whole text of tartan devices on a
// machine without OpenCL and nothing configured: the complete note, the
// device a run uses and why, and the install hint.
func TestDevicesWithoutOpenCL(t *testing.T) {
	code, out, errs := cliWithoutOpenCL(t, t.TempDir(), "", "devices")
	if code != 0 || errs != "" {
		t.Fatalf("exit %d, stderr %q", code, errs)
	}
	i := cpu.New().Info()
	want := cpuTable(">*") +
		"   note: no OpenCL platform found; tried:\n" +
		dlopenLine(t, out) + "\n" + vulkanLine(t, out) + "\n\n" +
		fmt.Sprintf("> A run uses cpu (%s): no device is configured, so a run takes the recommended one (*): Tartan's own CPU backend, %d cores; ranked by kind.\n", i.Name, i.ComputeUnits) +
		"Choose with --device ID for one run, TARTAN_DEVICE=ID for a shell, or tartan setup for the default.\n\n" +
		hintWithoutOpenCL
	if out != want {
		t.Errorf("got:\n%s\nwant:\n%s", out, want)
	}
}

// TestDevicesSaysWhichDeviceARunUses checks what tartan devices says after
// tartan setup chose a device, with $TARTAN_DEVICE overriding it, naming
// a device that is not there, and as JSON.
func TestDevicesSaysWhichDeviceARunUses(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "tartan", "config.json")
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	i := cpu.New().Info()
	recommended := fmt.Sprintf("* Recommended: cpu (%s): Tartan's own CPU backend, %d cores; ranked by kind.\n", i.Name, i.ComputeUnits)
	choose := "Choose with --device ID for one run, TARTAN_DEVICE=ID for a shell, or tartan setup for the default.\n"
	for _, c := range []struct {
		name, config, env, mark, says string
	}{
		{"configured", `{"device": "cpu", "name": "` + i.Name + `"}`, "", ">*",
			fmt.Sprintf("> A run uses cpu (%s): configured in %s (by tartan setup).\n", i.Name, path)},
		{"configured, then renamed", `{"device": "cpu", "name": "Old CPU"}`, "", ">*",
			fmt.Sprintf("> A run uses cpu (%s): configured in %s (by tartan setup).\n", i.Name, path) +
				fmt.Sprintf("  warning: the configured device cpu was \"Old CPU\" at setup and is now %q (run tartan setup to choose again).\n", i.Name)},
		{"the environment overrides", `{"device": "cpu"}`, "reference", " *",
			fmt.Sprintf("> A run uses reference (float64 reference executor): set by $TARTAN_DEVICE, which overrides the configured cpu (%s).\n", path)},
		{"the environment names a missing device", "", "opencl:0:0", " *",
			fmt.Sprintf("A run without --device stops with an error: $TARTAN_DEVICE=opencl:0:0 names no device listed (the ids are cpu (%s)).\n", i.Name)},
		{"the configured device is missing", `{"device": "opencl:0:0"}`, "", ">*",
			fmt.Sprintf("> A run uses cpu (%s): the configured device opencl:0:0 (%s) is not listed, so a run falls back to the CPU backend (run tartan setup to choose again).\n", i.Name, path)},
	} {
		t.Run(c.name, func(t *testing.T) {
			os.Remove(path)
			if c.config != "" {
				if err := os.WriteFile(path, []byte(c.config), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			code, out, errs := cliWithoutOpenCL(t, dir, c.env, "devices")
			if code != 0 || errs != "" {
				t.Fatalf("exit %d, stderr %q", code, errs)
			}
			want := cpuTable(c.mark) + "   note: no OpenCL platform found; tried:\n" + dlopenLine(t, out) + "\n" + vulkanLine(t, out) + "\n\n" +
				c.says + recommended + choose + "\n" + hintWithoutOpenCL
			if out != want {
				t.Errorf("got:\n%s\nwant:\n%s", out, want)
			}
		})
	}

	// --json keeps the listing's fields and adds the chosen device.
	if err := os.WriteFile(path, []byte(`{"device": "cpu"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errs := cliWithoutOpenCL(t, dir, "", "devices", "--json")
	var got struct {
		Devices []struct {
			ID          string `json:"id"`
			Recommended bool   `json:"recommended"`
		} `json:"devices"`
		Notes  []string          `json:"notes"`
		Hint   string            `json:"hint"`
		Chosen map[string]string `json:"chosen"`
	}
	if code != 0 || json.Unmarshal([]byte(out), &got) != nil {
		t.Fatalf("exit %d: %s%s", code, out, errs)
	}
	wantChosen := map[string]string{"id": "cpu", "name": i.Name, "source": "config", "config_file": path,
		"why": "configured in " + path + " (by tartan setup)"}
	if fmt.Sprint(got.Chosen) != fmt.Sprint(wantChosen) {
		t.Errorf("chosen %v, want %v", got.Chosen, wantChosen)
	}
	if len(got.Devices) != 1 || got.Devices[0].ID != "cpu" || !got.Devices[0].Recommended ||
		len(got.Notes) != 2 || !strings.HasPrefix(got.Notes[0], "no OpenCL platform found; tried:\n  override ($TARTAN_OPENCL_LIBRARY) "+missingLibrary+": dlopen: ") ||
		!strings.HasPrefix(got.Notes[1], "Vulkan is not available: ") ||
		got.Hint+"\n" != hintWithoutOpenCL {
		t.Errorf("listing %+v", got)
	}
}
