package backend

import (
	"encoding/binary"
	"unsafe"
)

// littleEndian reports whether the host stores numbers as the devices do.
var littleEndian = binary.NativeEndian.Uint16([]byte{1, 0}) == 1

// HostBytes returns the memory of a []float32, []float64, []int32, []int64
// or []uint32 host slice as bytes, which on a little-endian host are the
// slice's little-endian device bytes, so that the data crosses to or from
// a device as one copy; it returns nil for other types and on big-endian
// hosts, where the caller converts element by element. The bytes alias the
// slice.
func HostBytes(data any) []byte {
	if !littleEndian {
		return nil
	}
	switch d := data.(type) {
	case []float32:
		return unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(d))), 4*len(d))
	case []float64:
		return unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(d))), 8*len(d))
	case []int32:
		return unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(d))), 4*len(d))
	case []int64:
		return unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(d))), 8*len(d))
	case []uint32:
		return unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(d))), 4*len(d))
	}
	return nil
}
