package cl

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestNoOpenCLReportsWhatWasTried(t *testing.T) {
	t.Setenv(EnvLibrary, "/nonexistent")
	d, err := discover(configFromEnv())
	if !errors.Is(err, ErrNotAvailable) {
		t.Fatalf("discover with %s=/nonexistent: got %v, want ErrNotAvailable", EnvLibrary, err)
	}
	var na *NotAvailableError
	if !errors.As(err, &na) || len(na.Tried) != 1 || len(d.Platforms) != 0 {
		t.Fatalf("got %#v, want one attempt and no platforms", err)
	}
	for _, want := range []string{"no OpenCL platform found", "$TARTAN_OPENCL_LIBRARY", "/nonexistent", "dlopen"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("message lacks %q:\n%v", want, err)
		}
	}
	// The override is exclusive: no loader or vendor library is tried.
	if c := configFromEnv(); len(c.loaders) != 0 || len(c.vendorNames) != 0 {
		t.Errorf("override config still tries %v and %v", c.loaders, c.vendorNames)
	}
}

func TestLoaderOrder(t *testing.T) {
	discoveredDevices(t)
	d, err := discover(discoverConfig{loaders: []string{"/nonexistent/libOpenCL.so", "libOpenCL.so.1", "libOpenCL.so"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Tried) != 2 || d.Tried[0].Err == nil || d.Tried[1].Err != nil || d.Tried[1].Platforms == 0 {
		t.Fatalf("attempts = %v; want a failed first loader, then libOpenCL.so.1 with platforms and nothing after", d.Tried)
	}
	if p := d.Platforms[0]; p.Mode() != ModeExports || p.Library() != "libOpenCL.so.1" {
		t.Errorf("platform reached via %s %s", p.Mode(), p.Library())
	}
}

// fakeVendorDir makes a directory holding the vendor test library (PoCL's
// by default) under NVIDIA's file name, like a container with the driver's
// library but no ICD file naming it.
func fakeVendorDir(t *testing.T) (dir, target string) {
	t.Helper()
	target = vendorTestFile()
	if target == "" {
		t.Skip("no vendor test library (PoCL not installed, or $TARTAN_OPENCL_LIBRARY is set)")
	}
	dir = t.TempDir()
	if err := os.Symlink(target, filepath.Join(dir, "libnvidia-opencl.so.1")); err != nil {
		t.Fatal(err)
	}
	return dir, target
}

func TestVendorSearchFindsUnregisteredLibrary(t *testing.T) {
	dir, _ := fakeVendorDir(t)
	lib := filepath.Join(dir, "libnvidia-opencl.so.1")
	d, err := discover(discoverConfig{vendorDirs: []string{"/nonexistent", dir}, vendorNames: vendorLibraryNames})
	if err != nil {
		t.Fatalf("discover: %v", err)
	}
	if len(d.Platforms) == 0 {
		t.Fatalf("no platforms; attempts %v", d.Tried)
	}
	for _, p := range d.Platforms {
		if p.Mode() != ModeDispatch && p.Mode() != ModeICD2 || p.Library() != lib {
			t.Errorf("platform %v reached via %s %s, want the ICD dispatch path of %s", p, p.Mode(), p.Library(), lib)
		}
	}
	ds, err := d.Platforms[0].Devices()
	if err != nil || len(ds) == 0 {
		t.Fatalf("Devices: %v, %v", ds, err)
	}
	s := newSession(t, ds[0], 0)
	runVecAdd(t, s, s.build(t, vecAddSource, ""), 513)
}

func TestVendorPlatformSeenByLoaderIsListedOnce(t *testing.T) {
	discoveredDevices(t)
	dir, _ := fakeVendorDir(t)
	direct, err := vendorTestLibrary(t).Platforms()
	if err != nil || len(direct) == 0 {
		t.Fatalf("vendor platforms: %v, %v", direct, err)
	}
	name := direct[0].Name
	loaderOnly, err := discover(discoverConfig{loaders: []string{"libOpenCL.so.1"}})
	if err != nil {
		t.Fatal(err)
	}
	inLoader := 0
	for _, p := range loaderOnly.Platforms {
		if p.sameAs(direct[0]) {
			inLoader++
		}
	}
	d, err := discover(discoverConfig{loaders: []string{"libOpenCL.so.1"}, vendorDirs: []string{dir}, vendorNames: vendorLibraryNames})
	if err != nil {
		t.Fatal(err)
	}
	var found []*Platform
	for _, p := range d.Platforms {
		if p.sameAs(direct[0]) {
			found = append(found, p)
		}
	}
	last := d.Tried[len(d.Tried)-1]
	switch {
	case inLoader > 1:
		t.Skipf("the loader itself lists %q %d times", name, inLoader)
	case len(found) != 1:
		t.Errorf("%q listed %d times, want once; attempts %v", name, len(found), d.Tried)
	case inLoader == 1 && (found[0].Mode() != ModeExports || last.Duplicates != 1 || last.Platforms != 0):
		t.Errorf("loader already lists %q: kept the one via %s, vendor attempt %v; want the loader's kept and 1 duplicate", name, found[0].Mode(), last)
	case inLoader == 0 && found[0].Mode() == ModeExports:
		t.Errorf("%q is not registered with the loader but was reached via %s", name, found[0].Mode())
	}
}

func TestOverrideAcceptsVendorLibrary(t *testing.T) {
	lib := vendorTestFile()
	if lib == "" {
		t.Skip("no vendor test library (PoCL not installed, or $TARTAN_OPENCL_LIBRARY is set)")
	}
	d, err := discover(discoverConfig{override: lib})
	if err != nil {
		t.Fatal(err)
	}
	// A library exporting the API is called by name; an ICD-only one
	// (PoCL's, NVIDIA's) through its dispatch table.
	h, err := dlopen(lib)
	if err != nil {
		t.Fatal(err)
	}
	exports := sym(h, "clGetPlatformIDs") != 0 && sym(h, "clGetDeviceIDs") != 0
	for _, p := range d.Platforms {
		if (p.Mode() == ModeExports) != exports {
			t.Errorf("override %s: platform %q via %s, but the library exports the API: %v", lib, p.Name, p.Mode(), exports)
		}
	}
	if len(d.Platforms) == 0 {
		t.Errorf("override %s: no platforms", lib)
	}
}

func TestFindVendorLibraries(t *testing.T) {
	a, b := t.TempDir(), t.TempDir()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.WriteFile(filepath.Join(a, "libigdrcl.so"), []byte("x"), 0o644))
	must(os.Symlink(filepath.Join(a, "libigdrcl.so"), filepath.Join(b, "libigdrcl.so")))
	must(os.Mkdir(filepath.Join(a, "libamdocl64.so"), 0o755))
	must(os.WriteFile(filepath.Join(b, "libintelocl.so"), []byte("x"), 0o644))
	got := findVendorLibraries([]string{a, "/nonexistent", b}, vendorLibraryNames)
	want := []string{filepath.Join(a, "libigdrcl.so"), filepath.Join(b, "libintelocl.so")}
	if !slices.Equal(got, want) {
		t.Errorf("findVendorLibraries = %v, want %v", got, want)
	}
}

func TestVendorDirs(t *testing.T) {
	dirs := vendorDirs("/opt/a::/opt/b")
	if dirs[0] != "/usr/local/nvidia/lib64" {
		t.Errorf("first dir %q, want NVIDIA's container driver dir", dirs[0])
	}
	for _, want := range []string{"/usr/lib64", "/usr/lib"} {
		if !slices.Contains(dirs, want) {
			t.Errorf("%q not searched", want)
		}
	}
	if n := len(dirs); dirs[n-2] != "/opt/a" || dirs[n-1] != "/opt/b" {
		t.Errorf("LD_LIBRARY_PATH dirs not appended: %v", dirs)
	}
}

func TestOpenLibraryRejectsNonOpenCL(t *testing.T) {
	if _, err := OpenLibrary("libc.so.6"); err == nil || !strings.Contains(err.Error(), "not an OpenCL ICD") {
		t.Errorf("OpenLibrary(libc.so.6) = %v, want a 'not an OpenCL ICD' error", err)
	}
	if _, err := OpenVendorLibrary("/nonexistent/libnvidia-opencl.so.1"); err == nil || !strings.Contains(err.Error(), "/nonexistent/libnvidia-opencl.so.1") {
		t.Errorf("OpenVendorLibrary(missing) = %v", err)
	}
}
