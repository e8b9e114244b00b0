package opencl

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/tartanml/tartan/backend"
	"github.com/tartanml/tartan/tile"
)

// Host data crosses to the device as the little-endian bytes of the buffer's
// storage type (every OpenCL device Tartan runs on is little-endian). f16
// and bf16 tensors are exchanged and stored as float32, the precision
// Tartan computes them in.

// storageSize returns the bytes one element of dtype dt occupies on the
// device.
func storageSize(dt tile.DType) int { return ctypeSize(dt) }

// encode returns the device bytes of host data (already checked with
// backend.CheckHost) for a buffer of dtype dt, in a new slice.
func encode(dt tile.DType, data any) ([]byte, error) { return encodeInto(nil, dt, data) }

// encodeInto is encode into buf's storage when it has room (a new slice
// otherwise); it returns the bytes.
func encodeInto(buf []byte, dt tile.DType, data any) ([]byte, error) {
	room := func(n int) []byte {
		if cap(buf) >= n {
			return buf[:n]
		}
		return make([]byte, n)
	}
	if b := backend.HostBytes(data); b != nil {
		out := room(len(b))
		copy(out, b)
		return out, nil
	}
	switch d := data.(type) {
	case []float32:
		out := room(4 * len(d))
		for i, x := range d {
			binary.LittleEndian.PutUint32(out[4*i:], math.Float32bits(x))
		}
		return out, nil
	case []float64:
		out := room(8 * len(d))
		for i, x := range d {
			binary.LittleEndian.PutUint64(out[8*i:], math.Float64bits(x))
		}
		return out, nil
	case []int32:
		out := room(4 * len(d))
		for i, x := range d {
			binary.LittleEndian.PutUint32(out[4*i:], uint32(x))
		}
		return out, nil
	case []int64:
		out := room(8 * len(d))
		for i, x := range d {
			binary.LittleEndian.PutUint64(out[8*i:], uint64(x))
		}
		return out, nil
	case []bool:
		out := room(len(d))
		for i, x := range d {
			out[i] = 0
			if x {
				out[i] = 1
			}
		}
		return out, nil
	}
	return nil, fmt.Errorf("unsupported host type %T for %v", data, dt)
}

// decode stores device bytes of a dtype-dt buffer into host data dst.
func decode(dt tile.DType, src []byte, dst any) error {
	if b := backend.HostBytes(dst); b != nil {
		copy(b, src)
		return nil
	}
	switch d := dst.(type) {
	case []float32:
		for i := range d {
			d[i] = math.Float32frombits(binary.LittleEndian.Uint32(src[4*i:]))
		}
	case []float64:
		for i := range d {
			d[i] = math.Float64frombits(binary.LittleEndian.Uint64(src[8*i:]))
		}
	case []int32:
		for i := range d {
			d[i] = int32(binary.LittleEndian.Uint32(src[4*i:]))
		}
	case []int64:
		for i := range d {
			d[i] = int64(binary.LittleEndian.Uint64(src[8*i:]))
		}
	case []bool:
		for i := range d {
			d[i] = src[i] != 0
		}
	default:
		return fmt.Errorf("unsupported host type %T for %v", dst, dt)
	}
	return nil
}

// encodeFloat64 returns the device bytes of values given as float64 (the
// constants of a program), rounded to dt with tile.RoundTo.
func encodeFloat64(dt tile.DType, v []float64) []byte {
	switch dt {
	case tile.Float16, tile.BFloat16, tile.Float32:
		f := make([]float32, len(v))
		for i, x := range v {
			f[i] = float32(x)
		}
		b, _ := encode(dt, f)
		return b
	case tile.Float64:
		b, _ := encode(dt, v)
		return b
	case tile.Int32:
		f := make([]int32, len(v))
		for i, x := range v {
			f[i] = int32(tile.RoundTo(dt, x))
		}
		b, _ := encode(dt, f)
		return b
	case tile.Int64:
		f := make([]int64, len(v))
		for i, x := range v {
			f[i] = int64(tile.RoundTo(dt, x))
		}
		b, _ := encode(dt, f)
		return b
	case tile.Bool:
		f := make([]bool, len(v))
		for i, x := range v {
			f[i] = x != 0
		}
		b, _ := encode(dt, f)
		return b
	}
	return nil
}
