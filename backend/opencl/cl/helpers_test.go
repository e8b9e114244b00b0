package cl

import (
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sync"
	"testing"
)

// target is a device reached one particular way: through Discover (the
// loader, or the vendor search), or through the dispatch table of the vendor
// test library opened directly.
type target struct {
	name string
	dev  *Device
}

// discoveredDevices returns the devices Discover finds, or skips the test saying
// why there are none.
func discoveredDevices(t *testing.T) []*Device {
	t.Helper()
	ds, err := Devices()
	if errors.Is(err, ErrNotAvailable) {
		t.Skipf("no OpenCL here: %v", err)
	}
	if err != nil {
		t.Fatalf("Devices: %v", err)
	}
	if len(ds) == 0 {
		t.Skip("OpenCL platforms found but no devices")
	}
	return ds
}

// vendorTestFile returns the vendor ICD library that the dispatch-path
// tests load directly: $TARTAN_TEST_VENDOR_LIBRARY when set (on a GPU
// machine, NVIDIA's libnvidia-opencl.so.1), else PoCL's libpocl.so.2, or ""
// when absent. When $TARTAN_OPENCL_LIBRARY is set it is the only OpenCL
// library the tests may use (it simulates a machine without OpenCL when it
// names a missing file), so PoCL is not looked for.
func vendorTestFile() string {
	if p := os.Getenv("TARTAN_TEST_VENDOR_LIBRARY"); p != "" {
		return p
	}
	if os.Getenv(EnvLibrary) != "" {
		return ""
	}
	for _, dir := range []string{"/usr/lib/x86_64-linux-gnu", "/usr/lib/aarch64-linux-gnu", "/usr/lib64", "/usr/lib", "/usr/local/lib"} {
		p := filepath.Join(dir, "libpocl.so.2")
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	return ""
}

var (
	vendorOnce sync.Once
	vendorLib  *Library
	vendorErr  error
)

// vendorTestLibrary opens the vendor test library (PoCL by default) directly
// as an unregistered vendor library, the way NVIDIA's library is used where
// no ICD file names it, or skips the test.
func vendorTestLibrary(t *testing.T) *Library {
	t.Helper()
	vendorOnce.Do(func() {
		p := vendorTestFile()
		if p == "" && os.Getenv(EnvLibrary) != "" {
			vendorErr = errors.New("$" + EnvLibrary + " restricts OpenCL to " + os.Getenv(EnvLibrary))
			return
		}
		if p == "" {
			vendorErr = errors.New("libpocl.so.2 not found (install pocl-opencl-icd)")
			return
		}
		vendorLib, vendorErr = OpenVendorLibrary(p)
	})
	if vendorErr != nil {
		t.Skipf("vendor test library unavailable: %v", vendorErr)
	}
	return vendorLib
}

// allTargets returns every device Discover finds and every device of the
// vendor test library reached through its dispatch table. It skips only when neither path has a device.
func allTargets(t *testing.T) []target {
	t.Helper()
	var out []target
	if ds, err := Devices(); err == nil {
		for _, d := range ds {
			out = append(out, target{"discovered/" + d.Name(), d})
		}
	}
	if p := vendorTestFile(); p != "" {
		lib, err := OpenVendorLibrary(p)
		if err != nil {
			t.Fatalf("OpenVendorLibrary(%s): %v", p, err)
		}
		ps, err := lib.Platforms()
		if err != nil {
			t.Fatalf("%s: Platforms: %v", p, err)
		}
		for _, pl := range ps {
			ds, err := pl.Devices()
			if err != nil {
				t.Fatalf("%s: Devices: %v", pl.Name, err)
			}
			for _, d := range ds {
				out = append(out, target{"dispatch/" + d.Name(), d})
			}
		}
	}
	if len(out) == 0 {
		_, err := Discover()
		t.Skipf("no OpenCL device here: %v", err)
	}
	return out
}

// session is a context and queue on one device, released at test end.
type session struct {
	ctx *Context
	q   *Queue
	dev *Device
}

func newSession(t *testing.T, d *Device, props QueueProperties) *session {
	t.Helper()
	ctx, err := NewContext(d)
	if err != nil {
		t.Fatalf("NewContext(%v): %v", d, err)
	}
	q, err := ctx.NewQueue(d, props)
	if err != nil {
		ctx.Release()
		t.Fatalf("NewQueue: %v", err)
	}
	t.Cleanup(func() {
		if err := q.Release(); err != nil {
			t.Errorf("Queue.Release: %v", err)
		}
		if err := ctx.Release(); err != nil {
			t.Errorf("Context.Release: %v", err)
		}
	})
	return &session{ctx: ctx, q: q, dev: d}
}

// build compiles source and releases the program at test end.
func (s *session) build(t *testing.T, source, options string) *Program {
	t.Helper()
	p, err := s.ctx.NewProgramFromSource(source)
	if err != nil {
		t.Fatalf("NewProgramFromSource: %v", err)
	}
	t.Cleanup(func() { p.Release() })
	if err := p.Build(options); err != nil {
		t.Fatalf("Build: %v", err)
	}
	return p
}

// kernel creates a kernel released at test end.
func kernel(t *testing.T, p *Program, name string) *Kernel {
	t.Helper()
	k, err := p.NewKernel(name)
	if err != nil {
		t.Fatalf("NewKernel(%q): %v", name, err)
	}
	t.Cleanup(func() { k.Release() })
	return k
}

// buffer allocates a buffer released at test end and fills it from data.
func (s *session) buffer(t *testing.T, data []byte, size int) *Buffer {
	t.Helper()
	b, err := s.ctx.NewBuffer(MemReadWrite, size)
	if err != nil {
		t.Fatalf("NewBuffer(%d): %v", size, err)
	}
	t.Cleanup(func() { b.Release() })
	if data != nil {
		if err := s.q.WriteBuffer(b, 0, len(data), data); err != nil {
			t.Fatalf("WriteBuffer: %v", err)
		}
	}
	return b
}

// randomFloats returns n values in [-1, 1) from a seeded generator.
func randomFloats(seed uint64, n int) []float32 {
	r := rand.New(rand.NewPCG(seed, 1))
	out := make([]float32, n)
	for i := range out {
		out[i] = float32(r.Float64()*2 - 1)
	}
	return out
}

const vecAddSource = `
__kernel void vec_add(__global const float *a, __global const float *b,
                      __global float *c, const int n) {
	int i = get_global_id(0);
	if (i < n) c[i] = a[i] + b[i];
}
`

// runVecAdd adds two random vectors of n floats on the session's device and
// compares with the sums computed in Go (float32 addition is correctly
// rounded on both sides, so they must match exactly).
func runVecAdd(t *testing.T, s *session, p *Program, n int) {
	t.Helper()
	a, b := randomFloats(1, n), randomFloats(2, n)
	ba := s.buffer(t, Bytes(a), 4*n)
	bb := s.buffer(t, Bytes(b), 4*n)
	bc := s.buffer(t, nil, 4*n)
	k := kernel(t, p, "vec_add")
	for i, err := range []error{k.SetArgBuffer(0, ba), k.SetArgBuffer(1, bb), k.SetArgBuffer(2, bc), k.SetArgInt32(3, int32(n))} {
		if err != nil {
			t.Fatalf("SetArg %d: %v", i, err)
		}
	}
	global := (n + 63) / 64 * 64
	if err := s.q.RunKernel(k, NDRange{Global: []int{global}, Local: []int{64}}); err != nil {
		t.Fatalf("RunKernel: %v", err)
	}
	c := make([]float32, n)
	if err := s.q.ReadBuffer(bc, 0, 4*n, Bytes(c)); err != nil {
		t.Fatalf("ReadBuffer: %v", err)
	}
	for i := range c {
		if want := a[i] + b[i]; c[i] != want {
			t.Fatalf("c[%d] = %v, want %v + %v = %v", i, c[i], a[i], b[i], want)
		}
	}
}
