package cl

import (
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
)

func TestCodeNames(t *testing.T) {
	// Values as printed in the Khronos headers CL/cl.h and CL/cl_ext.h.
	for _, c := range []struct {
		code int32
		name string
	}{
		{0, "CL_SUCCESS"},
		{-1, "CL_DEVICE_NOT_FOUND"},
		{-4, "CL_MEM_OBJECT_ALLOCATION_FAILURE"},
		{-5, "CL_OUT_OF_RESOURCES"},
		{-6, "CL_OUT_OF_HOST_MEMORY"},
		{-11, "CL_BUILD_PROGRAM_FAILURE"},
		{-19, "CL_KERNEL_ARG_INFO_NOT_AVAILABLE"},
		{-30, "CL_INVALID_VALUE"},
		{-46, "CL_INVALID_KERNEL_NAME"},
		{-54, "CL_INVALID_WORK_GROUP_SIZE"},
		{-61, "CL_INVALID_BUFFER_SIZE"},
		{-72, "CL_MAX_SIZE_RESTRICTION_EXCEEDED"},
		{-1001, "CL_PLATFORM_NOT_FOUND_KHR"},
		{-20, "CL_UNKNOWN_ERROR(-20)"},
		{-9999, "CL_UNKNOWN_ERROR(-9999)"},
	} {
		if got := CodeName(c.code); got != c.name {
			t.Errorf("CodeName(%d) = %q, want %q", c.code, got, c.name)
		}
	}
	// The standard table is contiguous from 0 to -19 and from -30 to -72.
	for code := int32(0); code >= -72; code-- {
		if code < -19 && code > -30 {
			continue
		}
		if _, ok := codeNames[code]; !ok {
			t.Errorf("standard code %d has no name", code)
		}
	}
	// Exported constants agree with the table.
	for code, name := range map[int32]string{
		OutOfResources: "CL_OUT_OF_RESOURCES", MemObjectAllocationFailure: "CL_MEM_OBJECT_ALLOCATION_FAILURE",
		BuildProgramFailure: "CL_BUILD_PROGRAM_FAILURE", InvalidArgIndex: "CL_INVALID_ARG_INDEX",
		InvalidGlobalWorkSize: "CL_INVALID_GLOBAL_WORK_SIZE", InvalidBinary: "CL_INVALID_BINARY",
		PlatformNotFoundKHR: "CL_PLATFORM_NOT_FOUND_KHR", InvalidKernelArgs: "CL_INVALID_KERNEL_ARGS",
	} {
		if CodeName(code) != name {
			t.Errorf("constant %d is named %s, want %s", code, CodeName(code), name)
		}
	}
}

func TestErrorFormattingAndMatching(t *testing.T) {
	err := annotate(newError("clCreateBuffer", -61), "%d bytes on %s", 1<<40, `"GPU"`)
	want := `opencl: clCreateBuffer (1099511627776 bytes on "GPU"): CL_INVALID_BUFFER_SIZE (-61)`
	if err.Error() != want {
		t.Errorf("Error() = %q, want %q", err.Error(), want)
	}
	wrapped := fmt.Errorf("alloc: %w", err)
	if !IsCode(wrapped, InvalidBufferSize) || IsCode(wrapped, OutOfResources) {
		t.Error("IsCode does not see through wrapping")
	}
	if !errors.Is(wrapped, &Error{Code: InvalidBufferSize}) || errors.Is(wrapped, &Error{Code: InvalidBufferSize, Op: "clFinish"}) {
		t.Error("errors.Is by code (and optional op) misbehaves")
	}
	if newError("clFinish", 0) != nil {
		t.Error("CL_SUCCESS became an error")
	}
	// annotate keeps the first detail and leaves foreign errors alone.
	if e := annotate(err, "other"); !strings.Contains(e.Error(), "1099511627776") {
		t.Errorf("annotate replaced detail: %v", e)
	}
	plain := errors.New("x")
	if annotate(plain, "y") != plain {
		t.Error("annotate changed a non-*Error")
	}
}

func TestBuildErrorMessage(t *testing.T) {
	long := strings.Repeat("a", maxLogInMessage+100)
	be := &BuildError{
		Err:  &Error{Op: "clBuildProgram", Code: BuildProgramFailure},
		Logs: []DeviceLog{{Device: "dev0", Log: "  error: bad thing\n"}, {Device: "dev1", Log: ""}, {Device: "dev2", Log: long}},
	}
	msg := be.Error()
	for _, want := range []string{"CL_BUILD_PROGRAM_FAILURE", "build log for dev0:\nerror: bad thing", "build log for dev2", "(100 more bytes of build log)"} {
		if !strings.Contains(msg, want) {
			t.Errorf("message lacks %q", want)
		}
	}
	if strings.Contains(msg, "dev1") {
		t.Error("empty log was reported")
	}
	if !IsCode(be, BuildProgramFailure) {
		t.Error("BuildError does not unwrap to its *Error")
	}
	if !strings.Contains(be.Log(), long) {
		t.Error("Log() lost the full log")
	}
}

// TestBuildErrorWithoutCause checks that a BuildError with no *Error
// unwraps to a nil interface (not a nil *Error in a non-nil one, on which
// errors.Is and errors.As would call methods) and still has a message.
func TestBuildErrorWithoutCause(t *testing.T) {
	be := &BuildError{Logs: []DeviceLog{{Device: "dev0", Log: "error: x"}}}
	if u := be.Unwrap(); u != nil {
		t.Errorf("Unwrap = %#v, want nil", u)
	}
	if IsCode(be, BuildProgramFailure) || errors.Is(be, io.EOF) {
		t.Error("a BuildError without cause matched a code")
	}
	if msg := be.Error(); !strings.Contains(msg, "building the program failed") || !strings.Contains(msg, "error: x") {
		t.Errorf("message %q", msg)
	}
}

func TestNotAvailableError(t *testing.T) {
	e := &NotAvailableError{Tried: []Attempt{
		{Role: "ICD loader", Path: "libOpenCL.so.1", Err: errors.New("cannot open")},
		{Role: "vendor library", Path: "/x/libnvidia-opencl.so.1", Platforms: 1, Duplicates: 1},
		{Role: "vendor library", Path: "/y/libamdocl64.so"},
	}}
	if !errors.Is(fmt.Errorf("w: %w", e), ErrNotAvailable) {
		t.Error("NotAvailableError does not match ErrNotAvailable")
	}
	want := "opencl: no OpenCL platform found; tried:\n" +
		"  ICD loader libOpenCL.so.1: cannot open\n" +
		"  vendor library /x/libnvidia-opencl.so.1: 1 platform(s), 1 already listed\n" +
		"  vendor library /y/libamdocl64.so: no platforms"
	if e.Error() != want {
		t.Errorf("got\n%s\nwant\n%s", e.Error(), want)
	}
}
