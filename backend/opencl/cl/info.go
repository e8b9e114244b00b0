package cl

import (
	"encoding/binary"
	"fmt"
	"strconv"
	"strings"
	"unsafe"
)

// Info parameter names (cl_platform_info, cl_device_info, …) used by this
// package, with the values of the OpenCL headers.
const (
	platformProfile    uint32 = 0x0900
	platformVersion    uint32 = 0x0901
	platformName       uint32 = 0x0902
	platformVendor     uint32 = 0x0903
	platformExtensions uint32 = 0x0904

	deviceType                      uint32 = 0x1000
	deviceVendorID                  uint32 = 0x1001
	deviceMaxComputeUnits           uint32 = 0x1002
	deviceMaxWorkItemDimensions     uint32 = 0x1003
	deviceMaxWorkGroupSize          uint32 = 0x1004
	deviceMaxWorkItemSizes          uint32 = 0x1005
	devicePreferredVectorWidthFloat uint32 = 0x100A
	deviceMaxClockFrequency         uint32 = 0x100C
	deviceAddressBits               uint32 = 0x100D
	deviceMaxMemAllocSize           uint32 = 0x1010
	deviceGlobalMemSize             uint32 = 0x101F
	deviceLocalMemSize              uint32 = 0x1023
	deviceAvailable                 uint32 = 0x1027
	deviceCompilerAvailable         uint32 = 0x1028
	deviceName                      uint32 = 0x102B
	deviceVendor                    uint32 = 0x102C
	driverVersion                   uint32 = 0x102D
	deviceProfile                   uint32 = 0x102E
	deviceVersion                   uint32 = 0x102F
	deviceExtensions                uint32 = 0x1030
	deviceOpenCLCVersion            uint32 = 0x103D

	programNumDevices   uint32 = 0x1162
	programDevices      uint32 = 0x1163
	programBinarySizes  uint32 = 0x1165
	programBinaries     uint32 = 0x1166
	programBuildStatus  uint32 = 0x1181
	programBuildLog     uint32 = 0x1183
	kernelFunctionName  uint32 = 0x1190
	kernelNumArgs       uint32 = 0x1191
	kernelWorkGroupSize uint32 = 0x11B0
	kernelLocalMemSize  uint32 = 0x11B2
	kernelPreferredMult uint32 = 0x11B3
	kernelPrivateMem    uint32 = 0x11B4

	eventCommandExecutionStatus uint32 = 0x11D3
	profilingCommandQueued      uint32 = 0x1280
	profilingCommandSubmit      uint32 = 0x1281
	profilingCommandStart       uint32 = 0x1282
	profilingCommandEnd         uint32 = 0x1283

	contextPlatform uintptr = 0x1084
)

// maxInfoBytes bounds the size an info query may report before this package
// allocates for it, so a corrupt size from a driver cannot exhaust memory.
const maxInfoBytes = 256 << 20

// queryInfo runs the two-step clGet*Info protocol for an entry point whose
// arguments are objs..., param, size, value, size_ret (one or two leading
// objects): it asks for the size, then fetches the value into a buffer of
// that size.
func queryInfo(t *fnTable, id fnID, objs []uintptr, param uint32) ([]byte, error) {
	var size uintptr
	var err error
	switch len(objs) {
	case 1:
		err = t.status(id, objs[0], uintptr(param), 0, 0, uintptr(unsafe.Pointer(&size)))
	case 2:
		err = t.status(id, objs[0], objs[1], uintptr(param), 0, 0, uintptr(unsafe.Pointer(&size)))
	default:
		return nil, fmt.Errorf("opencl: %s: internal error: %d leading objects", fnSpecs[id].name, len(objs))
	}
	if err != nil {
		return nil, annotate(err, "size of parameter %#x", param)
	}
	if size == 0 {
		return nil, nil
	}
	if size > maxInfoBytes {
		return nil, fmt.Errorf("opencl: %s reported %d bytes for parameter %#x", fnSpecs[id].name, size, param)
	}
	buf := make([]byte, size)
	switch len(objs) {
	case 1:
		err = t.status(id, objs[0], uintptr(param), size, uintptr(unsafe.Pointer(&buf[0])), 0)
	case 2:
		err = t.status(id, objs[0], objs[1], uintptr(param), size, uintptr(unsafe.Pointer(&buf[0])), 0)
	}
	if err != nil {
		return nil, annotate(err, "parameter %#x", param)
	}
	return buf, nil
}

// cStringFrom converts a C result buffer to a Go string, dropping the trailing
// NUL and anything after the first NUL.
func cStringFrom(b []byte) string {
	for i, c := range b {
		if c == 0 {
			return string(b[:i])
		}
	}
	return string(b)
}

// infoString queries a string-valued parameter.
func infoString(t *fnTable, id fnID, obj uintptr, param uint32) (string, error) {
	b, err := queryInfo(t, id, []uintptr{obj}, param)
	if err != nil {
		return "", err
	}
	return strings.TrimSpace(cStringFrom(b)), nil
}

// infoUint queries a cl_uint, cl_ulong, size_t or bitfield parameter and
// widens it to uint64 (the driver's reported size decides the width).
func infoUint(t *fnTable, id fnID, obj uintptr, param uint32) (uint64, error) {
	b, err := queryInfo(t, id, []uintptr{obj}, param)
	if err != nil {
		return 0, err
	}
	return decodeUint(b, fnSpecs[id].name, param)
}

// decodeUint reads a 4- or 8-byte native-endian unsigned integer.
func decodeUint(b []byte, op string, param uint32) (uint64, error) {
	switch len(b) {
	case 4:
		return uint64(binary.NativeEndian.Uint32(b)), nil
	case 8:
		return binary.NativeEndian.Uint64(b), nil
	}
	return 0, fmt.Errorf("opencl: %s parameter %#x returned %d bytes, want 4 or 8", op, param, len(b))
}

// infoSizes queries a size_t[] parameter.
func infoSizes(t *fnTable, id fnID, obj uintptr, param uint32) ([]int, error) {
	b, err := queryInfo(t, id, []uintptr{obj}, param)
	if err != nil {
		return nil, err
	}
	return decodeSizes(b), nil
}

// decodeSizes reads an array of size_t.
func decodeSizes(b []byte) []int {
	w := int(unsafe.Sizeof(uintptr(0)))
	out := make([]int, len(b)/w)
	for i := range out {
		if w == 8 {
			out[i] = int(binary.NativeEndian.Uint64(b[i*8:]))
		} else {
			out[i] = int(binary.NativeEndian.Uint32(b[i*4:]))
		}
	}
	return out
}

// decodeHandles reads an array of object handles (pointer-sized).
func decodeHandles(b []byte) []uintptr {
	s := decodeSizes(b)
	out := make([]uintptr, len(s))
	for i, v := range s {
		out[i] = uintptr(v)
	}
	return out
}

// platformString queries a string parameter of a platform.
func platformString(t *fnTable, platform uintptr, param uint32) (string, error) {
	return infoString(t, fnGetPlatformInfo, platform, param)
}

// parseVersion reads "OpenCL <major>.<minor> …" (the form every platform and
// device version string takes) into major*10+minor; it returns 10 (OpenCL
// 1.0, the safest assumption) when the string does not parse.
func parseVersion(s string) int {
	f := strings.Fields(s)
	if len(f) < 2 || f[0] != "OpenCL" {
		return 10
	}
	maj, min, ok := strings.Cut(f[1], ".")
	if !ok {
		return 10
	}
	a, err1 := strconv.Atoi(maj)
	b, err2 := strconv.Atoi(min)
	if err1 != nil || err2 != nil || a < 1 || b < 0 || b > 9 {
		return 10
	}
	return a*10 + b
}
