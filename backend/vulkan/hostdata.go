package vulkan

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/tartanml/tartan/backend/vulkan/spirv"
	"github.com/tartanml/tartan/tile"
)

// Host data crosses to the device as the little-endian bytes of each
// buffer's storage type (spirv.StorageBytes): float16 and bfloat16 tensors
// are held as float32 values, the precision Tartan computes them in, and
// bool tensors as 32-bit words 0 or 1.

// toDevice returns the device bytes of host data already checked with
// backend.CheckHost for a buffer of dtype dt.
func toDevice(dt tile.DType, data any) ([]byte, error) {
	le := binary.LittleEndian
	switch d := data.(type) {
	case []float32:
		out := make([]byte, 4*len(d))
		for i, x := range d {
			le.PutUint32(out[4*i:], math.Float32bits(x))
		}
		return out, nil
	case []float64:
		out := make([]byte, 8*len(d))
		for i, x := range d {
			le.PutUint64(out[8*i:], math.Float64bits(x))
		}
		return out, nil
	case []int32:
		out := make([]byte, 4*len(d))
		for i, x := range d {
			le.PutUint32(out[4*i:], uint32(x))
		}
		return out, nil
	case []int64:
		out := make([]byte, 8*len(d))
		for i, x := range d {
			le.PutUint64(out[8*i:], uint64(x))
		}
		return out, nil
	case []bool:
		out := make([]byte, 4*len(d))
		for i, x := range d {
			if x {
				out[4*i] = 1
			}
		}
		return out, nil
	}
	return nil, fmt.Errorf("unsupported host type %T for %v", data, dt)
}

// fromDevice stores the device bytes src of a dtype-dt buffer into host
// data dst.
func fromDevice(dt tile.DType, src []byte, dst any) error {
	le := binary.LittleEndian
	if n := hostLen(dst) * spirv.StorageBytes(dt); len(src) < n {
		return fmt.Errorf("%d device bytes for %d %v elements", len(src), hostLen(dst), dt)
	}
	switch d := dst.(type) {
	case []float32:
		for i := range d {
			d[i] = math.Float32frombits(le.Uint32(src[4*i:]))
		}
	case []float64:
		for i := range d {
			d[i] = math.Float64frombits(le.Uint64(src[8*i:]))
		}
	case []int32:
		for i := range d {
			d[i] = int32(le.Uint32(src[4*i:]))
		}
	case []int64:
		for i := range d {
			d[i] = int64(le.Uint64(src[8*i:]))
		}
	case []bool:
		for i := range d {
			d[i] = le.Uint32(src[4*i:]) != 0
		}
	default:
		return fmt.Errorf("unsupported host type %T for %v", dst, dt)
	}
	return nil
}

func hostLen(data any) int {
	switch d := data.(type) {
	case []float32:
		return len(d)
	case []float64:
		return len(d)
	case []int32:
		return len(d)
	case []int64:
		return len(d)
	case []bool:
		return len(d)
	}
	return 0
}

// constantBytes returns the device bytes of a constant's elements, each
// rounded to dt as tile.RoundTo does.
func constantBytes(dt tile.DType, v []float64) []byte {
	var host any
	switch dt {
	case tile.Float64:
		host = v
	case tile.Int32:
		h := make([]int32, len(v))
		for i, x := range v {
			h[i] = int32(tile.RoundTo(dt, x))
		}
		host = h
	case tile.Int64:
		h := make([]int64, len(v))
		for i, x := range v {
			h[i] = int64(tile.RoundTo(dt, x))
		}
		host = h
	case tile.Bool:
		h := make([]bool, len(v))
		for i, x := range v {
			h[i] = x != 0
		}
		host = h
	default: // float32, float16, bfloat16
		h := make([]float32, len(v))
		for i, x := range v {
			h[i] = float32(x)
		}
		host = h
	}
	b, _ := toDevice(dt, host)
	return b
}
