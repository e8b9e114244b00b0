package backend

import (
	"fmt"

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
