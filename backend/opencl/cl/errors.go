package cl

import (
	"errors"
	"fmt"
	"strings"
)

// ErrNotAvailable is matched (with errors.Is) by the error returned when no
// OpenCL platform can be reached from this process: no ICD loader or runtime
// could be opened and no vendor library was found, or none of them reported a
// platform.
var ErrNotAvailable = errors.New("opencl: not available")

// Standard OpenCL status codes (cl_int). Only the ones a backend is likely to
// test for are given names here; CodeName knows the full standard table.
const (
	Success                    int32 = 0
	DeviceNotFound             int32 = -1
	DeviceNotAvailable         int32 = -2
	CompilerNotAvailable       int32 = -3
	MemObjectAllocationFailure int32 = -4
	OutOfResources             int32 = -5
	OutOfHostMemory            int32 = -6
	ProfilingInfoNotAvailable  int32 = -7
	BuildProgramFailure        int32 = -11
	InvalidValue               int32 = -30
	InvalidDevice              int32 = -33
	InvalidContext             int32 = -34
	InvalidCommandQueue        int32 = -36
	InvalidMemObject           int32 = -38
	InvalidBinary              int32 = -42
	InvalidBuildOptions        int32 = -43
	InvalidProgram             int32 = -44
	InvalidProgramExecutable   int32 = -45
	InvalidKernelName          int32 = -46
	InvalidKernel              int32 = -48
	InvalidArgIndex            int32 = -49
	InvalidArgValue            int32 = -50
	InvalidArgSize             int32 = -51
	InvalidKernelArgs          int32 = -52
	InvalidWorkDimension       int32 = -53
	InvalidWorkGroupSize       int32 = -54
	InvalidWorkItemSize        int32 = -55
	InvalidGlobalOffset        int32 = -56
	InvalidEventWaitList       int32 = -57
	InvalidOperation           int32 = -59
	InvalidBufferSize          int32 = -61
	InvalidGlobalWorkSize      int32 = -63
	PlatformNotFoundKHR        int32 = -1001
)

// codeNames maps every status code defined by the OpenCL 3.0 core headers,
// plus the Khronos and common vendor extension codes, to its C name.
var codeNames = map[int32]string{
	0:   "CL_SUCCESS",
	-1:  "CL_DEVICE_NOT_FOUND",
	-2:  "CL_DEVICE_NOT_AVAILABLE",
	-3:  "CL_COMPILER_NOT_AVAILABLE",
	-4:  "CL_MEM_OBJECT_ALLOCATION_FAILURE",
	-5:  "CL_OUT_OF_RESOURCES",
	-6:  "CL_OUT_OF_HOST_MEMORY",
	-7:  "CL_PROFILING_INFO_NOT_AVAILABLE",
	-8:  "CL_MEM_COPY_OVERLAP",
	-9:  "CL_IMAGE_FORMAT_MISMATCH",
	-10: "CL_IMAGE_FORMAT_NOT_SUPPORTED",
	-11: "CL_BUILD_PROGRAM_FAILURE",
	-12: "CL_MAP_FAILURE",
	-13: "CL_MISALIGNED_SUB_BUFFER_OFFSET",
	-14: "CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST",
	-15: "CL_COMPILE_PROGRAM_FAILURE",
	-16: "CL_LINKER_NOT_AVAILABLE",
	-17: "CL_LINK_PROGRAM_FAILURE",
	-18: "CL_DEVICE_PARTITION_FAILED",
	-19: "CL_KERNEL_ARG_INFO_NOT_AVAILABLE",
	-30: "CL_INVALID_VALUE",
	-31: "CL_INVALID_DEVICE_TYPE",
	-32: "CL_INVALID_PLATFORM",
	-33: "CL_INVALID_DEVICE",
	-34: "CL_INVALID_CONTEXT",
	-35: "CL_INVALID_QUEUE_PROPERTIES",
	-36: "CL_INVALID_COMMAND_QUEUE",
	-37: "CL_INVALID_HOST_PTR",
	-38: "CL_INVALID_MEM_OBJECT",
	-39: "CL_INVALID_IMAGE_FORMAT_DESCRIPTOR",
	-40: "CL_INVALID_IMAGE_SIZE",
	-41: "CL_INVALID_SAMPLER",
	-42: "CL_INVALID_BINARY",
	-43: "CL_INVALID_BUILD_OPTIONS",
	-44: "CL_INVALID_PROGRAM",
	-45: "CL_INVALID_PROGRAM_EXECUTABLE",
	-46: "CL_INVALID_KERNEL_NAME",
	-47: "CL_INVALID_KERNEL_DEFINITION",
	-48: "CL_INVALID_KERNEL",
	-49: "CL_INVALID_ARG_INDEX",
	-50: "CL_INVALID_ARG_VALUE",
	-51: "CL_INVALID_ARG_SIZE",
	-52: "CL_INVALID_KERNEL_ARGS",
	-53: "CL_INVALID_WORK_DIMENSION",
	-54: "CL_INVALID_WORK_GROUP_SIZE",
	-55: "CL_INVALID_WORK_ITEM_SIZE",
	-56: "CL_INVALID_GLOBAL_OFFSET",
	-57: "CL_INVALID_EVENT_WAIT_LIST",
	-58: "CL_INVALID_EVENT",
	-59: "CL_INVALID_OPERATION",
	-60: "CL_INVALID_GL_OBJECT",
	-61: "CL_INVALID_BUFFER_SIZE",
	-62: "CL_INVALID_MIP_LEVEL",
	-63: "CL_INVALID_GLOBAL_WORK_SIZE",
	-64: "CL_INVALID_PROPERTY",
	-65: "CL_INVALID_IMAGE_DESCRIPTOR",
	-66: "CL_INVALID_COMPILER_OPTIONS",
	-67: "CL_INVALID_LINKER_OPTIONS",
	-68: "CL_INVALID_DEVICE_PARTITION_COUNT",
	-69: "CL_INVALID_PIPE_SIZE",
	-70: "CL_INVALID_DEVICE_QUEUE",
	-71: "CL_INVALID_SPEC_ID",
	-72: "CL_MAX_SIZE_RESTRICTION_EXCEEDED",

	-1000: "CL_INVALID_GL_SHAREGROUP_REFERENCE_KHR",
	-1001: "CL_PLATFORM_NOT_FOUND_KHR",
	-1002: "CL_INVALID_D3D10_DEVICE_KHR",
	-1003: "CL_INVALID_D3D10_RESOURCE_KHR",
	-1004: "CL_D3D10_RESOURCE_ALREADY_ACQUIRED_KHR",
	-1005: "CL_D3D10_RESOURCE_NOT_ACQUIRED_KHR",
	-1006: "CL_INVALID_D3D11_DEVICE_KHR",
	-1007: "CL_INVALID_D3D11_RESOURCE_KHR",
	-1008: "CL_D3D11_RESOURCE_ALREADY_ACQUIRED_KHR",
	-1009: "CL_D3D11_RESOURCE_NOT_ACQUIRED_KHR",
	-1010: "CL_INVALID_DX9_MEDIA_ADAPTER_KHR",
	-1011: "CL_INVALID_DX9_MEDIA_SURFACE_KHR",
	-1012: "CL_DX9_MEDIA_SURFACE_ALREADY_ACQUIRED_KHR",
	-1013: "CL_DX9_MEDIA_SURFACE_NOT_ACQUIRED_KHR",
	-1057: "CL_DEVICE_PARTITION_FAILED_EXT",
	-1058: "CL_INVALID_PARTITION_COUNT_EXT",
	-1059: "CL_INVALID_PARTITION_NAME_EXT",
	-1092: "CL_EGL_RESOURCE_NOT_ACQUIRED_KHR",
	-1093: "CL_INVALID_EGL_OBJECT_KHR",
	-1094: "CL_INVALID_ACCELERATOR_INTEL",
	-1095: "CL_INVALID_ACCELERATOR_TYPE_INTEL",
	-1096: "CL_INVALID_ACCELERATOR_DESCRIPTOR_INTEL",
	-1097: "CL_ACCELERATOR_TYPE_NOT_SUPPORTED_INTEL",
	-1108: "CL_COMMAND_TERMINATED_ITSELF_WITH_FAILURE_ARM",
	-1121: "CL_CONTEXT_TERMINATED_KHR",
	-1138: "CL_INVALID_COMMAND_BUFFER_KHR",
	-1139: "CL_INVALID_SYNC_POINT_WAIT_LIST_KHR",
	-1140: "CL_INCOMPATIBLE_COMMAND_QUEUE_KHR",
	-1141: "CL_INVALID_MUTABLE_COMMAND_KHR",
	-1142: "CL_INVALID_SEMAPHORE_KHR",
}

// CodeName returns the C name of an OpenCL status code, such as
// "CL_OUT_OF_RESOURCES", or "CL_UNKNOWN_ERROR(<code>)" for a code outside the
// standard table (vendors may return private codes).
func CodeName(code int32) string {
	if n, ok := codeNames[code]; ok {
		return n
	}
	return fmt.Sprintf("CL_UNKNOWN_ERROR(%d)", code)
}

// Error is a failure status returned by an OpenCL call. Op names the C entry
// point that failed (for example "clCreateBuffer"); Detail, when not empty,
// names the objects and sizes involved so the message identifies the culprit.
type Error struct {
	Op     string
	Code   int32
	Detail string
}

// Name returns the C name of the status code, such as "CL_BUILD_PROGRAM_FAILURE".
func (e *Error) Name() string { return CodeName(e.Code) }

// Error formats the failure as "opencl: OP (DETAIL): NAME (CODE)".
func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString("opencl: ")
	b.WriteString(e.Op)
	if e.Detail != "" {
		b.WriteString(" (")
		b.WriteString(e.Detail)
		b.WriteString(")")
	}
	fmt.Fprintf(&b, ": %s (%d)", e.Name(), e.Code)
	return b.String()
}

// Is reports whether target is an *Error with the same code, so that
// errors.Is(err, &cl.Error{Code: cl.OutOfResources}) works whatever the Op.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	return ok && t.Code == e.Code && (t.Op == "" || t.Op == e.Op)
}

// IsCode reports whether err is, or wraps, an *Error with the given code.
func IsCode(err error, code int32) bool {
	var e *Error
	return errors.As(err, &e) && e.Code == code
}

// newError returns nil for CL_SUCCESS and an *Error for anything else.
func newError(op string, code int32) error {
	if code == Success {
		return nil
	}
	return &Error{Op: op, Code: code}
}

// annotate sets the Detail of err when err is an *Error without one, and
// returns err; any other error is returned unchanged.
func annotate(err error, format string, args ...any) error {
	if e, ok := err.(*Error); ok && e.Detail == "" {
		e.Detail = fmt.Sprintf(format, args...)
	}
	return err
}

// maxLogInMessage bounds how much of a build log BuildError.Error repeats;
// the full log is always kept in BuildError.Logs.
const maxLogInMessage = 8 << 10

// BuildError is returned when clBuildProgram fails. It wraps the *Error of
// the call (so IsCode(err, BuildProgramFailure) holds) and carries the build
// log of every device that produced one.
type BuildError struct {
	Err  *Error
	Logs []DeviceLog
}

// DeviceLog is the compiler output of one device for one build.
type DeviceLog struct {
	Device string
	Log    string
}

// Error reports the failed call followed by each device's build log,
// shortened to the first 8 KiB per device.
func (e *BuildError) Error() string {
	var b strings.Builder
	if e.Err != nil {
		b.WriteString(e.Err.Error())
	} else {
		b.WriteString("opencl: building the program failed")
	}
	for _, l := range e.Logs {
		log := strings.TrimSpace(l.Log)
		if log == "" {
			continue
		}
		if len(log) > maxLogInMessage {
			log = log[:maxLogInMessage] + fmt.Sprintf("\n… (%d more bytes of build log)", len(log)-maxLogInMessage)
		}
		fmt.Fprintf(&b, "\nbuild log for %s:\n%s", l.Device, log)
	}
	return b.String()
}

// Unwrap returns the underlying *Error, or nil (not a nil *Error in the
// interface) when there is none.
func (e *BuildError) Unwrap() error {
	if e.Err == nil {
		return nil
	}
	return e.Err
}

// Log returns every device's build log joined by newlines.
func (e *BuildError) Log() string {
	parts := make([]string, 0, len(e.Logs))
	for _, l := range e.Logs {
		parts = append(parts, l.Log)
	}
	return strings.Join(parts, "\n")
}

// NotAvailableError explains why no OpenCL platform was found: it lists every
// library that was tried and what happened to it. It matches ErrNotAvailable
// with errors.Is.
type NotAvailableError struct {
	Tried []Attempt
}

// Error lists every attempt, one per line after the first.
func (e *NotAvailableError) Error() string {
	var b strings.Builder
	b.WriteString("opencl: no OpenCL platform found; tried:")
	if len(e.Tried) == 0 {
		b.WriteString(" nothing")
	}
	for _, a := range e.Tried {
		b.WriteString("\n  ")
		b.WriteString(a.String())
	}
	return b.String()
}

// Is makes errors.Is(err, ErrNotAvailable) true.
func (e *NotAvailableError) Is(target error) bool { return target == ErrNotAvailable }
