package cl

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
)

// Environment variables read by Discover.
const (
	// EnvLibrary names the only OpenCL library to open (a loader, runtime or
	// vendor ICD library); when set, nothing else is tried.
	EnvLibrary = "TARTAN_OPENCL_LIBRARY"
	// EnvVendorSearch set to "0", "off" or "false" disables the search for
	// vendor libraries that no ICD file registers.
	EnvVendorSearch = "TARTAN_OPENCL_VENDOR_SEARCH"
)

// macOSFramework is the OpenCL runtime shipped with macOS.
const macOSFramework = "/System/Library/Frameworks/OpenCL.framework/OpenCL"

// vendorLibraryNames are vendor ICD libraries that containers often carry
// without an ICD file registering them: NVIDIA's beside the driver, AMD's
// ROCm/Adrenalin runtime, and Intel's GPU (NEO) and CPU runtimes.
var vendorLibraryNames = []string{
	"libnvidia-opencl.so.1",
	"libamdocl64.so",
	"libigdrcl.so",
	"libintelocl.so",
}

// Attempt records one library Discover tried and what came of it.
type Attempt struct {
	// Role is "override ($TARTAN_OPENCL_LIBRARY)", "ICD loader",
	// "vendor library" or "vendor search".
	Role string
	// Path is the name or path passed to dlopen (for the vendor search, the
	// names and directories looked through).
	Path string
	// Err is why the library gave nothing, or nil.
	Err error
	// Platforms counts the platforms this library added; Duplicates counts
	// those it listed that were already known through an earlier library.
	Platforms, Duplicates int
}

// String describes the attempt on one line.
func (a Attempt) String() string {
	s := a.Role + " " + a.Path + ": "
	switch {
	case a.Err != nil:
		return s + strings.TrimPrefix(a.Err.Error(), "opencl: ")
	case a.Platforms == 0 && a.Duplicates == 0:
		return s + "no platforms"
	case a.Duplicates > 0:
		return s + fmt.Sprintf("%d platform(s), %d already listed", a.Platforms, a.Duplicates)
	}
	return s + fmt.Sprintf("%d platform(s)", a.Platforms)
}

// Discovery is the outcome of looking for OpenCL: the platforms found, in a
// stable order (the loader's first, then vendor libraries in search order),
// and every library that was tried.
type Discovery struct {
	Platforms []*Platform
	Tried     []Attempt
}

var (
	discoverOnce sync.Once
	discovered   *Discovery
	discoverErr  error
)

// Discover finds every OpenCL platform this process can reach; it runs once
// and later calls return the same result. It opens, in order:
//
//   - $TARTAN_OPENCL_LIBRARY alone when set (any OpenCL library: a loader, a
//     runtime or a vendor ICD library);
//   - otherwise the ICD loader (libOpenCL.so.1, then libOpenCL.so) or, on
//     macOS, the OpenCL framework;
//   - then, unless $TARTAN_OPENCL_VENDOR_SEARCH is "0", vendor ICD libraries
//     that no ICD file may register (NVIDIA's libnvidia-opencl.so.1, AMD's
//     libamdocl64.so, Intel's libigdrcl.so and libintelocl.so) in the driver
//     directories and those of $LD_LIBRARY_PATH, used through the ICD
//     dispatch table. A vendor platform the loader already lists (same
//     object, or same name, vendor and version) is not listed twice.
//
// When no platform is found the error is a *NotAvailableError (matching
// ErrNotAvailable) that says what was tried; the Discovery is returned as
// well, for its Tried list.
func Discover() (*Discovery, error) {
	discoverOnce.Do(func() { discovered, discoverErr = discover(configFromEnv()) })
	return discovered, discoverErr
}

// Platforms returns the platforms found by Discover.
func Platforms() ([]*Platform, error) {
	d, err := Discover()
	if err != nil {
		return nil, err
	}
	return d.Platforms, nil
}

// Devices returns every device of every platform found by Discover, in
// platform order. A platform whose devices cannot be listed is skipped
// unless no device at all is found, in which case its error is returned.
func Devices() ([]*Device, error) {
	ps, err := Platforms()
	if err != nil {
		return nil, err
	}
	var out []*Device
	var firstErr error
	for _, p := range ps {
		ds, err := p.Devices()
		if err != nil {
			if firstErr == nil {
				firstErr = err
			}
			continue
		}
		out = append(out, ds...)
	}
	if len(out) == 0 && firstErr != nil {
		return nil, firstErr
	}
	return out, nil
}

// discoverConfig lists what discover tries; configFromEnv builds the real one
// and tests build their own.
type discoverConfig struct {
	override    string   // when not empty, the only library opened
	loaders     []string // tried in order until one opens
	vendorDirs  []string
	vendorNames []string
}

// configFromEnv builds the discovery configuration for this OS from the
// environment.
func configFromEnv() discoverConfig {
	c := discoverConfig{override: os.Getenv(EnvLibrary)}
	if c.override != "" {
		return c
	}
	switch runtime.GOOS {
	case "darwin":
		c.loaders = []string{macOSFramework}
		return c
	case "windows":
		c.loaders = []string{"OpenCL.dll"}
		return c
	}
	c.loaders = []string{"libOpenCL.so.1", "libOpenCL.so"}
	switch strings.ToLower(os.Getenv(EnvVendorSearch)) {
	case "0", "off", "false", "no":
		return c
	}
	c.vendorNames = vendorLibraryNames
	c.vendorDirs = vendorDirs(os.Getenv("LD_LIBRARY_PATH"))
	return c
}

// vendorDirs returns the directories searched for vendor libraries: where
// NVIDIA's container toolkit and the distributions put driver libraries, ROCm's
// library directory, then each directory of ldLibraryPath.
func vendorDirs(ldLibraryPath string) []string {
	dirs := []string{"/usr/local/nvidia/lib64", "/usr/local/nvidia/lib"}
	switch runtime.GOARCH {
	case "amd64":
		dirs = append(dirs, "/usr/lib/x86_64-linux-gnu")
	case "arm64":
		dirs = append(dirs, "/usr/lib/aarch64-linux-gnu")
	}
	dirs = append(dirs, "/usr/lib64", "/usr/lib", "/opt/rocm/lib", "/opt/rocm/opencl/lib")
	for _, d := range filepath.SplitList(ldLibraryPath) {
		if d != "" {
			dirs = append(dirs, d)
		}
	}
	return dirs
}

// findVendorLibraries returns the existing files among names in dirs, in
// directory order, each real file once (symbolic links resolved).
func findVendorLibraries(dirs, names []string) []string {
	var out []string
	seen := map[string]bool{}
	for _, dir := range dirs {
		for _, name := range names {
			p := filepath.Join(dir, name)
			st, err := os.Stat(p)
			if err != nil || st.IsDir() {
				continue
			}
			real, err := filepath.EvalSymlinks(p)
			if err != nil {
				real = p
			}
			if seen[real] {
				continue
			}
			seen[real] = true
			out = append(out, p)
		}
	}
	return out
}

// discover runs the discovery described by c.
func discover(c discoverConfig) (*Discovery, error) {
	d := &Discovery{}
	if c.override != "" {
		d.add("override ($"+EnvLibrary+")", c.override, OpenLibrary)
		return d.result()
	}
	for _, name := range c.loaders {
		if d.add("ICD loader", name, OpenLibrary) {
			break
		}
	}
	if len(c.vendorNames) > 0 {
		found := findVendorLibraries(c.vendorDirs, c.vendorNames)
		if len(found) == 0 {
			d.Tried = append(d.Tried, Attempt{
				Role: "vendor search",
				Path: strings.Join(c.vendorNames, ", ") + " in " + strings.Join(c.vendorDirs, ":"),
				Err:  fmt.Errorf("none found"),
			})
		}
		for _, p := range found {
			d.add("vendor library", p, OpenVendorLibrary)
		}
	}
	return d.result()
}

// add opens one library, lists its platforms and appends the new ones. It
// reports whether the library opened.
func (d *Discovery) add(role, path string, open func(string) (*Library, error)) bool {
	a := Attempt{Role: role, Path: path}
	defer func() { d.Tried = append(d.Tried, a) }()
	lib, err := open(path)
	if err != nil {
		a.Err = err
		return false
	}
	ps, err := lib.Platforms()
	if err != nil {
		a.Err = err
		return true
	}
	for _, p := range ps {
		if d.known(p) {
			a.Duplicates++
			continue
		}
		d.Platforms = append(d.Platforms, p)
		a.Platforms++
	}
	return true
}

// known reports whether an equivalent platform is already listed.
func (d *Discovery) known(p *Platform) bool {
	for _, q := range d.Platforms {
		if q.sameAs(p) {
			return true
		}
	}
	return false
}

// result returns d with a *NotAvailableError when it holds no platform.
func (d *Discovery) result() (*Discovery, error) {
	if len(d.Platforms) == 0 {
		return d, &NotAvailableError{Tried: d.Tried}
	}
	return d, nil
}
