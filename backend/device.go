package backend

import (
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/tartanml/tartan/tile"
)

// Info describes a device.
type Info struct {
	// ID is stable across runs and readable, e.g. "cpu" or "opencl:0:0".
	ID string `json:"id"`
	// Backend names the backend: "cpu", "opencl", "reference".
	Backend string `json:"backend"`
	// Name is the device's own name, e.g. "NVIDIA H200".
	Name   string `json:"name"`
	Vendor string `json:"vendor"`
	// Memory is the device memory in bytes (host memory for the CPU).
	Memory int64 `json:"memory_bytes"`
	// ComputeUnits is the number of cores or compute units used.
	ComputeUnits int `json:"compute_units"`
	// Driver is the driver or runtime version, when there is one.
	Driver string `json:"driver,omitempty"`
}

// Device compiles tile graphs into Executables that run on it.
type Device interface {
	Info() Info
	// Compile checks and compiles g. The graph must have no building error.
	// Compile is safe for concurrent use: several graphs may be compiled
	// at once (each graph by one call at a time).
	Compile(g *tile.Graph) (Executable, error)
	// Close releases the device's resources.
	Close() error
}

// Executable is a compiled program with its buffers: inputs are bound by
// name, Run executes the whole program (outputs computed, then variable
// updates applied) and results are read back by name. Variables keep their
// values between runs and start at zero. An Executable is not safe for
// concurrent use.
type Executable interface {
	// SetInput copies host data into the named input.
	SetInput(name string, data any) error
	// Run executes the program once. It may return before the device
	// finishes; reads wait for completion.
	Run() error
	// ReadOutput copies the named output of the last run into dst.
	ReadOutput(name string, dst any) error
	// ReadVariable copies the named variable's current value into dst.
	ReadVariable(name string, dst any) error
	// WriteVariable replaces the named variable's value with host data.
	WriteVariable(name string, data any) error
	// Close releases the executable's buffers.
	Close() error
}

// CheckHost verifies that data is a slice of the Go type that carries dtype dt
// and holds exactly n elements; what names the tensor in the error.
func CheckHost(what string, dt tile.DType, n int, data any) error {
	var got int
	ok := false
	switch d := data.(type) {
	case []float32:
		got, ok = len(d), dt == tile.Float32 || dt == tile.Float16 || dt == tile.BFloat16
	case []float64:
		got, ok = len(d), dt == tile.Float64
	case []int32:
		got, ok = len(d), dt == tile.Int32
	case []int64:
		got, ok = len(d), dt == tile.Int64
	case []bool:
		got, ok = len(d), dt == tile.Bool
	}
	if !ok {
		return fmt.Errorf("%s is %v, but the host data is %T", what, dt, data)
	}
	if got != n {
		return fmt.Errorf("%s has %d elements, but the host data has %d", what, n, got)
	}
	return nil
}

// ToFloat64 converts host data of any supported slice type to float64.
func ToFloat64(data any) []float64 {
	switch d := data.(type) {
	case []float32:
		out := make([]float64, len(d))
		for i, x := range d {
			out[i] = float64(x)
		}
		return out
	case []float64:
		return append([]float64(nil), d...)
	case []int32:
		out := make([]float64, len(d))
		for i, x := range d {
			out[i] = float64(x)
		}
		return out
	case []int64:
		out := make([]float64, len(d))
		for i, x := range d {
			out[i] = float64(x)
		}
		return out
	case []bool:
		out := make([]float64, len(d))
		for i, x := range d {
			if x {
				out[i] = 1
			}
		}
		return out
	}
	return nil
}

// FromFloat64 stores src into host data dst of any supported slice type. The
// lengths must match.
func FromFloat64(dst any, src []float64) {
	switch d := dst.(type) {
	case []float32:
		for i := range d {
			d[i] = float32(src[i])
		}
	case []float64:
		copy(d, src)
	case []int32:
		for i := range d {
			d[i] = int32(src[i])
		}
	case []int64:
		for i := range d {
			d[i] = int64(src[i])
		}
	case []bool:
		for i := range d {
			d[i] = src[i] != 0
		}
	}
}

// HostSlice returns v converted to the Go slice type that carries dtype dt
// (see the package documentation), rounding with Go's conversions.
func HostSlice(dt tile.DType, v []float64) any {
	var out any
	switch dt {
	case tile.Float64:
		out = make([]float64, len(v))
	case tile.Int32:
		out = make([]int32, len(v))
	case tile.Int64:
		out = make([]int64, len(v))
	case tile.Bool:
		out = make([]bool, len(v))
	default:
		out = make([]float32, len(v))
	}
	FromFloat64(out, v)
	return out
}

// ErrOutOfMemory is matched (errors.Is) by the errors of Compile and Load
// that report a program needing more memory than its device has or may use.
var ErrOutOfMemory = errors.New("out of memory")

// OutOfMemoryError reports a program whose storage does not fit on its
// device: found before allocating anything, when the program's planned bytes
// exceed what the device has (Err is nil), or when an allocation failed
// (Err says how). It matches ErrOutOfMemory.
type OutOfMemoryError struct {
	// Backend names the backend: "cpu", "opencl".
	Backend string
	// Device names the device, e.g. `opencl:0:0 "NVIDIA H200"`, or "the
	// machine" for the CPU.
	Device  string
	Program string
	// What names the storage at fault, a slot and the buffers in it: the
	// one whose allocation failed, else the largest. Bytes is its size.
	What  string
	Bytes int64
	// Total is the bytes of all the program's storage.
	Total int64
	// Available is the memory the device has, or may still use, in bytes,
	// and Source where that figure comes from (such as "MemAvailable in
	// /proc/meminfo" or "TARTAN_MEMORY_LIMIT=4GiB").
	Available int64
	Source    string
	Err       error
}

func (e *OutOfMemoryError) Error() string {
	if e.Err != nil {
		return fmt.Sprintf("%s: out of device memory on %s: allocating %d bytes for %s (program %q needs %d bytes in all; the device has %d (%s)): %v",
			e.Backend, e.Device, e.Bytes, e.What, e.Program, e.Total, e.Available, e.Source, e.Err)
	}
	return fmt.Sprintf("%s: out of memory: program %q needs %d bytes in all (largest: %s, %d bytes); %s has %d bytes available (%s)",
		e.Backend, e.Program, e.Total, e.What, e.Bytes, e.Device, e.Available, e.Source)
}

// Unwrap returns the allocation's failure, if any.
func (e *OutOfMemoryError) Unwrap() error { return e.Err }

// Is reports whether target is ErrOutOfMemory.
func (e *OutOfMemoryError) Is(target error) bool { return target == ErrOutOfMemory }

// ErrDeviceLost is matched (errors.Is) by the errors of a device that
// stopped working: a kernel faulted, the driver reset it or it went away.
var ErrDeviceLost = errors.New("device lost")

// LostError reports a lost device: Op, the operation that found the loss,
// failed with Err. A backend returns the same LostError for every later call
// on the device. It matches ErrDeviceLost.
type LostError struct {
	// Backend and Device are as in OutOfMemoryError.
	Backend, Device string
	Op              string
	Err             error
}

func (e *LostError) Error() string {
	return fmt.Sprintf("%s: device %s lost (a kernel faulted or the driver reset the device); results are unavailable and the device must be reopened: %s: %v",
		e.Backend, e.Device, e.Op, e.Err)
}

// Unwrap returns the failure of the operation.
func (e *LostError) Unwrap() error { return e.Err }

// Is reports whether target is ErrDeviceLost.
func (e *LostError) Is(target error) bool { return target == ErrDeviceLost }

// UserPath returns $env/tartan/name, or ~/home/tartan/name when env is
// unset: env and home are XDG_CACHE_HOME and .cache, or XDG_CONFIG_HOME and
// .config. When the home directory is unknown too, the error says so,
// calling the directory what.
func UserPath(env, home, what, name string) (string, error) {
	if d := os.Getenv(env); d != "" {
		return filepath.Join(d, "tartan", name), nil
	}
	h, err := os.UserHomeDir()
	if err != nil || h == "" {
		return "", fmt.Errorf("no %s directory: $%s is unset and the home directory is unknown (%v)", what, env, err)
	}
	return filepath.Join(h, home, "tartan", name), nil
}

// EnvMemoryLimit names the environment variable that caps the host memory
// the programs of a CPU device may hold together, in bytes (see ParseBytes).
const EnvMemoryLimit = "TARTAN_MEMORY_LIMIT"

// MemoryLimit returns the cap $TARTAN_MEMORY_LIMIT sets, or 0 when it is
// unset or empty. A value that is not a positive byte count is an error
// naming the variable.
func MemoryLimit() (int64, error) {
	v := os.Getenv(EnvMemoryLimit)
	if strings.TrimSpace(v) == "" {
		return 0, nil
	}
	n, err := ParseBytes(v)
	if err == nil && n <= 0 {
		err = errors.New("not a positive size")
	}
	if err != nil {
		return 0, fmt.Errorf("$%s=%q: %v (want a byte count such as 4294967296, 4G or 512MiB)", EnvMemoryLimit, v, err)
	}
	return n, nil
}

// byteUnits are the suffixes ParseBytes accepts, in lower case: the letters
// K, M, G, T and the IEC units KiB … TiB are powers of 1024, the SI units
// kB … TB powers of 1000.
var byteUnits = map[string]float64{
	"": 1, "b": 1,
	"k": 1 << 10, "kib": 1 << 10, "kb": 1e3,
	"m": 1 << 20, "mib": 1 << 20, "mb": 1e6,
	"g": 1 << 30, "gib": 1 << 30, "gb": 1e9,
	"t": 1 << 40, "tib": 1 << 40, "tb": 1e12,
}

// ParseBytes parses a byte count: a non-negative number (a decimal fraction
// is allowed with a unit) optionally followed by a unit, case-insensitive: B;
// K, M, G, T or KiB, MiB, GiB, TiB (powers of 1024); kB, MB, GB, TB (powers of
// 1000). "4G" and "4GiB" are 4294967296 bytes, "1.5MB" 1500000.
func ParseBytes(s string) (int64, error) {
	t := strings.TrimSpace(s)
	i := 0
	for i < len(t) && (t[i] >= '0' && t[i] <= '9' || t[i] == '.') {
		i++
	}
	num, unit := t[:i], strings.ToLower(strings.TrimSpace(t[i:]))
	mult, ok := byteUnits[unit]
	if !ok {
		return 0, fmt.Errorf("size %q: unknown unit %q (want B, K, M, G, T, KiB, MiB, GiB, TiB, kB, MB, GB or TB)", s, t[i:])
	}
	if num == "" {
		return 0, fmt.Errorf("size %q: no number", s)
	}
	if !strings.Contains(num, ".") {
		n, err := strconv.ParseInt(num, 10, 64)
		if err == nil && n > math.MaxInt64/int64(mult) {
			err = errors.New("overflow")
		}
		if err != nil {
			return 0, fmt.Errorf("size %q is not a byte count that fits in 64 bits", s)
		}
		return n * int64(mult), nil
	}
	f, err := strconv.ParseFloat(num, 64)
	if err != nil {
		return 0, fmt.Errorf("size %q: %q is not a number", s, num)
	}
	if mult == 1 {
		return 0, fmt.Errorf("size %q: a fraction needs a unit larger than a byte", s)
	}
	if f*mult >= math.MaxInt64 {
		return 0, fmt.Errorf("size %q is not a byte count that fits in 64 bits", s)
	}
	return int64(f * mult), nil
}

// KernelTime is the time one kernel of a program took in a profiled run.
type KernelTime struct {
	Kernel  string // the kernel: its kir name, or the OpenCL function running it
	How     string // what ran it: the CPU executor, the OpenCL template, the Vulkan schedule and dispatch
	Source  string // the tile nodes the kernel computes
	Seconds float64
}

// Profiler is an Executable that can run its program once timing each
// kernel (the CPU, OpenCL and Vulkan backends' are). The run's effects are
// those of Run.
type Profiler interface {
	Profile() ([]KernelTime, error)
}
