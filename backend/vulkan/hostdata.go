package vulkan

import (
	"encoding/binary"
	"fmt"
	"reflect"

	"github.com/tartanml/tartan/backend"
	"github.com/tartanml/tartan/tile"
)

// Host data crosses to the device as the little-endian bytes of each
// buffer's storage type (spirv.StorageBytes): float16 and bfloat16 tensors
// are held as float32 values, the precision Tartan computes them in, and
// bool tensors as 32-bit words 0 or 1.

// words returns bool host data as 32-bit words 0 or 1, other data as is.
func words(data any) any {
	b, ok := data.([]bool)
	if !ok {
		return data
	}
	w := make([]uint32, len(b))
	for i, x := range b {
		if x {
			w[i] = 1
		}
	}
	return w
}

// deviceType reports whether data is a slice type the device bytes carry.
func deviceType(data any) bool {
	switch data.(type) {
	case []float32, []float64, []int32, []int64, []bool, []uint32:
		return true
	}
	return false
}

// toDevice returns the device bytes of host data already checked with
// backend.CheckHost for a buffer of dtype dt, in buf's storage when it has
// room.
func toDevice(buf []byte, dt tile.DType, data any) ([]byte, error) {
	if !deviceType(data) {
		return nil, fmt.Errorf("unsupported host type %T for %v", data, dt)
	}
	if b := backend.HostBytes(data); b != nil {
		return append(buf[:0], b...), nil
	}
	return binary.Append(buf[:0], binary.LittleEndian, words(data))
}

// fromDevice stores the device bytes src of a dtype-dt buffer into host
// data dst.
func fromDevice(dt tile.DType, src []byte, dst any) error {
	if !deviceType(dst) {
		return fmt.Errorf("unsupported host type %T for %v", dst, dt)
	}
	w := words(dst)
	if n := binary.Size(w); len(src) < n {
		return fmt.Errorf("%d device bytes for %d %v elements", len(src), reflect.ValueOf(dst).Len(), dt)
	}
	if b := backend.HostBytes(dst); b != nil {
		copy(b, src)
		return nil
	}
	if _, err := binary.Decode(src, binary.LittleEndian, w); err != nil {
		return err
	}
	if b, ok := dst.([]bool); ok {
		for i, x := range w.([]uint32) {
			b[i] = x != 0
		}
	}
	return nil
}

// constantBytes returns the device bytes of a constant's elements, each
// rounded to dt as tile.RoundTo does (float16 and bfloat16 ones held as
// float32 values).
func constantBytes(dt tile.DType, v []float64) []byte {
	if dt == tile.Int32 || dt == tile.Int64 {
		r := make([]float64, len(v))
		for i, x := range v {
			r[i] = tile.RoundTo(dt, x)
		}
		v = r
	}
	b, _ := toDevice(nil, dt, backend.HostSlice(dt, v))
	return b
}
