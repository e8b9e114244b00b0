package vk

import (
	"errors"
	"fmt"
	"strings"
)

// Result is a VkResult.
type Result int32

// The VkResult codes a compute runtime meets or tests for; ResultName knows
// every code of the Vulkan 1.3 headers.
const (
	Success                 Result = 0
	NotReady                Result = 1
	Timeout                 Result = 2
	Incomplete              Result = 5
	ErrOutOfHostMemory      Result = -1
	ErrOutOfDeviceMemory    Result = -2
	ErrInitializationFailed Result = -3
	ErrDeviceLost           Result = -4
	ErrMemoryMapFailed      Result = -5
	ErrLayerNotPresent      Result = -6
	ErrExtensionNotPresent  Result = -7
	ErrFeatureNotPresent    Result = -8
	ErrIncompatibleDriver   Result = -9
	ErrTooManyObjects       Result = -10
	ErrUnknown              Result = -13
	ErrOutOfPoolMemory      Result = -1000069000
	ErrFragmentation        Result = -1000161000
	ErrInvalidShaderNV      Result = -1000012000
)

var resultNames = map[Result]string{
	0:           "VK_SUCCESS",
	1:           "VK_NOT_READY",
	2:           "VK_TIMEOUT",
	3:           "VK_EVENT_SET",
	4:           "VK_EVENT_RESET",
	5:           "VK_INCOMPLETE",
	-1:          "VK_ERROR_OUT_OF_HOST_MEMORY",
	-2:          "VK_ERROR_OUT_OF_DEVICE_MEMORY",
	-3:          "VK_ERROR_INITIALIZATION_FAILED",
	-4:          "VK_ERROR_DEVICE_LOST",
	-5:          "VK_ERROR_MEMORY_MAP_FAILED",
	-6:          "VK_ERROR_LAYER_NOT_PRESENT",
	-7:          "VK_ERROR_EXTENSION_NOT_PRESENT",
	-8:          "VK_ERROR_FEATURE_NOT_PRESENT",
	-9:          "VK_ERROR_INCOMPATIBLE_DRIVER",
	-10:         "VK_ERROR_TOO_MANY_OBJECTS",
	-11:         "VK_ERROR_FORMAT_NOT_SUPPORTED",
	-12:         "VK_ERROR_FRAGMENTED_POOL",
	-13:         "VK_ERROR_UNKNOWN",
	-1000069000: "VK_ERROR_OUT_OF_POOL_MEMORY",
	-1000072003: "VK_ERROR_INVALID_EXTERNAL_HANDLE",
	-1000161000: "VK_ERROR_FRAGMENTATION",
	-1000257000: "VK_ERROR_INVALID_OPAQUE_CAPTURE_ADDRESS",
	1000297000:  "VK_PIPELINE_COMPILE_REQUIRED",
	-1000000000: "VK_ERROR_SURFACE_LOST_KHR",
	-1000000001: "VK_ERROR_NATIVE_WINDOW_IN_USE_KHR",
	1000001003:  "VK_SUBOPTIMAL_KHR",
	-1000001004: "VK_ERROR_OUT_OF_DATE_KHR",
	-1000003001: "VK_ERROR_INCOMPATIBLE_DISPLAY_KHR",
	-1000011001: "VK_ERROR_VALIDATION_FAILED_EXT",
	-1000012000: "VK_ERROR_INVALID_SHADER_NV",
	-1000023000: "VK_ERROR_IMAGE_USAGE_NOT_SUPPORTED_KHR",
	-1000023001: "VK_ERROR_VIDEO_PICTURE_LAYOUT_NOT_SUPPORTED_KHR",
	-1000023002: "VK_ERROR_VIDEO_PROFILE_OPERATION_NOT_SUPPORTED_KHR",
	-1000023003: "VK_ERROR_VIDEO_PROFILE_FORMAT_NOT_SUPPORTED_KHR",
	-1000023004: "VK_ERROR_VIDEO_PROFILE_CODEC_NOT_SUPPORTED_KHR",
	-1000023005: "VK_ERROR_VIDEO_STD_VERSION_NOT_SUPPORTED_KHR",
	-1000158000: "VK_ERROR_INVALID_DRM_FORMAT_MODIFIER_PLANE_LAYOUT_EXT",
	-1000174001: "VK_ERROR_NOT_PERMITTED_KHR",
	-1000255000: "VK_ERROR_FULL_SCREEN_EXCLUSIVE_MODE_LOST_EXT",
	1000268000:  "VK_THREAD_IDLE_KHR",
	1000268001:  "VK_THREAD_DONE_KHR",
	1000268002:  "VK_OPERATION_DEFERRED_KHR",
	1000268003:  "VK_OPERATION_NOT_DEFERRED_KHR",
	-1000338000: "VK_ERROR_COMPRESSION_EXHAUSTED_EXT",
}

// ResultName returns the C name of a VkResult, such as
// "VK_ERROR_DEVICE_LOST", or "VK_RESULT(<code>)" for a code the headers do
// not define.
func ResultName(r Result) string {
	if n, ok := resultNames[r]; ok {
		return n
	}
	return fmt.Sprintf("VK_RESULT(%d)", int32(r))
}

func (r Result) String() string { return ResultName(r) }

// Error is a failed Vulkan call: Op names the entry point, Detail (when
// set) the objects and sizes involved.
type Error struct {
	Op     string
	Result Result
	Detail string
}

func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString("vulkan: ")
	b.WriteString(e.Op)
	if e.Detail != "" {
		fmt.Fprintf(&b, " (%s)", e.Detail)
	}
	fmt.Fprintf(&b, ": %s (%d)", ResultName(e.Result), int32(e.Result))
	return b.String()
}

// Is reports whether target is an *Error with the same result (and Op, when
// target names one), so errors.Is(err, &vk.Error{Result: vk.ErrDeviceLost})
// works whatever the call.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	return ok && t.Result == e.Result && (t.Op == "" || t.Op == e.Op)
}

// IsResult reports whether err is, or wraps, an *Error with result r.
func IsResult(err error, r Result) bool {
	var e *Error
	return errors.As(err, &e) && e.Result == r
}

// check turns a VkResult into an error: nil for VK_SUCCESS and other
// non-negative codes.
func check(op string, r Result, detail string) error {
	if r >= 0 {
		return nil
	}
	return &Error{Op: op, Result: r, Detail: detail}
}

// ErrNotAvailable is matched (errors.Is) by the error saying that Vulkan
// cannot be used in this process: no loader could be opened, it lacks an
// entry point, or it has no driver.
var ErrNotAvailable = errors.New("vulkan: not available")

// NotAvailableError says why Vulkan cannot be used: the libraries Tried and
// why each failed, or the Reason after a loader opened. It matches
// ErrNotAvailable.
type NotAvailableError struct {
	Tried  []string
	Reason string
}

func (e *NotAvailableError) Error() string {
	var b strings.Builder
	b.WriteString("vulkan: not available")
	if e.Reason != "" {
		b.WriteString(": ")
		b.WriteString(e.Reason)
	}
	if len(e.Tried) > 0 {
		b.WriteString(" (tried ")
		b.WriteString(strings.Join(e.Tried, "; "))
		b.WriteString(")")
	}
	return b.String()
}

// Is reports whether target is ErrNotAvailable.
func (e *NotAvailableError) Is(target error) bool { return target == ErrNotAvailable }
