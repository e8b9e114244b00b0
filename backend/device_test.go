package backend

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

func TestParseBytes(t *testing.T) {
	good := map[string]int64{
		"0": 0, "4096": 4096, " 12 ": 12, "7B": 7, "2k": 2048, "2K": 2048, "2KiB": 2048, "2kB": 2000,
		"3M": 3 << 20, "3 MiB": 3 << 20, "3MB": 3e6, "4G": 4 << 30, "4gib": 4 << 30, "4GB": 4e9,
		"1T": 1 << 40, "1TB": 1e12, "1.5MiB": 3 << 19, "0.5G": 1 << 29, "9223372036854775807": 1<<63 - 1,
	}
	for s, want := range good {
		if got, err := ParseBytes(s); err != nil || got != want {
			t.Errorf("ParseBytes(%q) = %d, %v; want %d", s, got, err, want)
		}
	}
	for _, s := range []string{"", "G", "-1", "1.5", "4X", "4 GiBs", "1.2.3G", "9223372036854775808", "8589934592G", "9e9T", "0x10"} {
		if n, err := ParseBytes(s); err == nil {
			t.Errorf("ParseBytes(%q) = %d, want an error", s, n)
		} else if !strings.Contains(err.Error(), fmt.Sprintf("%q", s)) {
			t.Errorf("ParseBytes(%q): the error does not quote the size: %v", s, err)
		}
	}
}

func TestMemoryLimit(t *testing.T) {
	t.Setenv(EnvMemoryLimit, "")
	if n, err := MemoryLimit(); n != 0 || err != nil {
		t.Errorf("unset: %d, %v", n, err)
	}
	t.Setenv(EnvMemoryLimit, "64MiB")
	if n, err := MemoryLimit(); n != 64<<20 || err != nil {
		t.Errorf("64MiB: %d, %v", n, err)
	}
	for _, v := range []string{"lots", "0", "-5G"} {
		t.Setenv(EnvMemoryLimit, v)
		if _, err := MemoryLimit(); err == nil || !strings.Contains(err.Error(), EnvMemoryLimit) {
			t.Errorf("%q: want an error naming %s, got %v", v, EnvMemoryLimit, err)
		}
	}
}

func TestOutOfMemoryError(t *testing.T) {
	var err error = fmt.Errorf("compiling: %w", &OutOfMemoryError{Backend: "cpu", Device: "the machine", Program: "p",
		What: "slot 3", Bytes: 10, Total: 30, Available: 20, Source: "TARTAN_MEMORY_LIMIT=20"})
	var oom *OutOfMemoryError
	if !errors.Is(err, ErrOutOfMemory) || !errors.As(err, &oom) || oom.Total != 30 {
		t.Fatalf("%v does not match ErrOutOfMemory and *OutOfMemoryError", err)
	}
	for _, want := range []string{`"p"`, "30 bytes", "slot 3", "10 bytes", "20 bytes", "TARTAN_MEMORY_LIMIT=20"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("%q lacks %q", err, want)
		}
	}
	cause := errors.New("CL_MEM_OBJECT_ALLOCATION_FAILURE")
	err = &OutOfMemoryError{Backend: "opencl", Device: "opencl:0:0", Program: "p", What: "slot 3", Bytes: 10, Total: 30, Available: 20, Source: "global memory", Err: cause}
	if !errors.Is(err, ErrOutOfMemory) || !errors.Is(err, cause) || !strings.Contains(err.Error(), "allocating 10 bytes for slot 3") {
		t.Errorf("allocation failure: %v", err)
	}
}

func TestLostError(t *testing.T) {
	cause := errors.New("VK_ERROR_DEVICE_LOST")
	for _, c := range []struct {
		err  error
		op   string // the Op errors.As finds
		want string // the whole message
	}{
		{&LostError{Backend: "vulkan", Device: `vulkan:0 "llvmpipe"`, Op: "submitting p", Err: cause}, "submitting p",
			`vulkan: device vulkan:0 "llvmpipe" lost (a kernel faulted or the driver reset the device); results are unavailable and the device must be reopened: submitting p: VK_ERROR_DEVICE_LOST`},
		{fmt.Errorf("nn: Fit: %w", &LostError{Backend: "opencl", Device: `opencl:0:0 "cpu"`, Op: "reading y", Err: cause}), "reading y",
			`nn: Fit: opencl: device opencl:0:0 "cpu" lost (a kernel faulted or the driver reset the device); results are unavailable and the device must be reopened: reading y: VK_ERROR_DEVICE_LOST`},
	} {
		var lost *LostError
		if !errors.As(c.err, &lost) || lost.Op != c.op || !errors.Is(c.err, ErrDeviceLost) || !errors.Is(c.err, cause) || errors.Is(c.err, ErrOutOfMemory) {
			t.Errorf("%v: errors.As finds %+v; errors.Is ErrDeviceLost %v, the cause %v, ErrOutOfMemory %v",
				c.err, lost, errors.Is(c.err, ErrDeviceLost), errors.Is(c.err, cause), errors.Is(c.err, ErrOutOfMemory))
		}
		if c.err.Error() != c.want {
			t.Errorf("got  %s\nwant %s", c.err, c.want)
		}
	}
}
