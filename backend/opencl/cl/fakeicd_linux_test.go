package cl

import (
	"sync"
	"syscall"
	"testing"
	"unsafe"

	"github.com/ebitengine/purego"
)

// cMemory returns n zeroed words of memory mapped outside the Go heap,
// unmapped at test end.
func cMemory(t *testing.T, n int) []uintptr {
	t.Helper()
	b, err := syscall.Mmap(-1, 0, n*8, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { syscall.Munmap(b) })
	return unsafe.Slice((*uintptr)(unsafe.Pointer(&b[0])), n)
}

// fakeVersion is the version string the fake clGetPlatformInfo reports.
var fakeVersion string

// Callbacks are a scarce, never-freed resource: make each one once.
var (
	infoCBOnce, lookupCBOnce sync.Once
	infoCB, lookupCB         uintptr
	lookupFake               *fakeICD
)

const fakeLookupSentinel = 0x20000000

func fakePlatformInfoCallback(t *testing.T) uintptr {
	infoCBOnce.Do(func() {
		infoCB = purego.NewCallback(func(platform uintptr, param uint32, size uintptr, value unsafe.Pointer, sizeRet unsafe.Pointer) int32 {
			var s string
			switch param {
			case platformVersion:
				s = fakeVersion
			case platformName:
				s = "Fake Platform"
			default:
				return InvalidValue
			}
			if sizeRet != nil {
				*(*uintptr)(sizeRet) = uintptr(len(s) + 1)
			}
			if value != nil {
				if size < uintptr(len(s)+1) {
					return InvalidValue
				}
				dst := unsafe.Slice((*byte)(value), size)
				copy(dst, s)
				dst[len(s)] = 0
			}
			return Success
		})
	})
	return infoCB
}

// fakeLookupCallback returns a clIcdGetFunctionAddressForPlatformKHR that
// knows f's platform: clGetPlatformInfo maps to the real callback, every
// other entry point to a sentinel derived from its fnID.
func fakeLookupCallback(t *testing.T, f *fakeICD) uintptr {
	lookupFake = f
	lookupCBOnce.Do(func() {
		lookupCB = purego.NewCallback(func(platform uintptr, name *byte) uintptr {
			if platform != lookupFake.platform {
				return 0
			}
			var n []byte
			for p := name; *p != 0; p = (*byte)(unsafe.Add(unsafe.Pointer(p), 1)) {
				n = append(n, *p)
			}
			for id := range numFns {
				if fnSpecs[id].name == string(n) {
					if id == fnGetPlatformInfo {
						return infoCB
					}
					return fakeLookupSentinel + uintptr(id)
				}
			}
			return 0
		})
	})
	return lookupCB
}

// fakeICD builds OpenCL-looking objects in memory the Go runtime does not
// own (as a driver's would be): a platform object whose first word points to
// a dispatch table of sentinel values, except slot 1, a Go callback that
// answers clGetPlatformInfo.
type fakeICD struct {
	mem      []uintptr
	platform uintptr
	table    []uintptr
}

const fakeSentinel = 0x10000000

func newFakeICD(t *testing.T, version string, tagged bool) *fakeICD {
	t.Helper()
	mem := cMemory(t, 512)
	f := &fakeICD{mem: mem, platform: uintptr(unsafe.Pointer(&mem[0])), table: mem[64:256]}
	mem[0] = uintptr(unsafe.Pointer(&f.table[0]))
	for i := range f.table {
		f.table[i] = fakeSentinel + uintptr(i)
	}
	f.table[1] = fakePlatformInfoCallback(t)
	if tagged {
		f.table[0] = icd2Tag
	}
	fakeVersion = version
	return f
}

func TestDispatchTableHonoursPlatformVersion(t *testing.T) {
	for _, c := range []struct {
		version string
		ver     int
	}{{"OpenCL 1.1 Fake", 11}, {"OpenCL 1.2 Fake", 12}, {"OpenCL 3.0 Fake", 30}} {
		f := newFakeICD(t, c.version, false)
		tab, err := dispatchTable(f.platform, "fake.so", 0)
		if err != nil {
			t.Fatalf("%s: %v", c.version, err)
		}
		if tab.mode != ModeDispatch || tab.version != c.ver || tab.platformName != "Fake Platform" {
			t.Errorf("%s: mode %q version %d name %q", c.version, tab.mode, tab.version, tab.platformName)
		}
		for id := range numFns {
			s := fnSpecs[id]
			want := fakeSentinel + uintptr(s.slot)
			if id == fnGetPlatformInfo {
				want = f.table[1]
			}
			if s.since > c.ver {
				want = 0
			}
			if tab.ptr[id] != want {
				t.Errorf("%s: %s = %#x, want %#x", c.version, s.name, tab.ptr[id], want)
			}
		}
		if c.ver < 12 {
			err := tab.status(fnEnqueueFillBuffer, 0)
			if err == nil || err.Error() != `opencl: clEnqueueFillBuffer is not available on platform "Fake Platform" (OpenCL 1.1, via ICD dispatch table fake.so); it needs OpenCL 1.2` {
				t.Errorf("calling a missing entry: %v", err)
			}
		}
	}
}

func TestICD2LookupByName(t *testing.T) {
	f := newFakeICD(t, "OpenCL 1.2 Fake", true)
	if _, err := dispatchTable(f.platform, "fake.so", 0); err == nil {
		t.Error("tagged table without a lookup function was accepted")
	}
	tab, err := dispatchTable(f.platform, "fake.so", fakeLookupCallback(t, f))
	if err != nil {
		t.Fatal(err)
	}
	if tab.mode != ModeICD2 {
		t.Errorf("mode %q, want %q", tab.mode, ModeICD2)
	}
	for id := range numFns {
		want := fakeLookupSentinel + uintptr(id)
		if id == fnGetPlatformInfo {
			want = f.table[1]
		}
		if tab.ptr[id] != want {
			t.Errorf("%s = %#x, want %#x", fnSpecs[id].name, tab.ptr[id], want)
		}
	}
}

func TestDispatchTableRejectsNullTable(t *testing.T) {
	mem := cMemory(t, 8)
	if _, err := dispatchTable(uintptr(unsafe.Pointer(&mem[0])), "fake.so", 0); err == nil {
		t.Error("object without a dispatch table was accepted")
	}
}
