package cpu

import (
	"fmt"
	"unsafe"

	"github.com/tartanml/tartan/backend"
	"github.com/tartanml/tartan/kir"
	"github.com/tartanml/tartan/tile"
)

// buffer is one kir buffer's storage: a typed view of its slot's memory.
// f32, f16 and bf16 buffers are stored as float32 (Tartan computes the
// narrower floats as float32), bool buffers as one byte per element.
type buffer struct {
	kind kir.BufKind
	dt   tile.DType
	n    int
	name string
	f32  []float32
	f64  []float64
	i32  []int32
	i64  []int64
	b    []bool
}

// elemBytes is the number of bytes the CPU backend stores per element.
func elemBytes(dt tile.DType) int {
	switch dt {
	case tile.Float32, tile.Float16, tile.BFloat16, tile.Int32:
		return 4
	case tile.Float64, tile.Int64:
		return 8
	}
	return 1
}

// memAlign is the alignment of every slot, a cache line.
const memAlign = 64

// allocSlots returns one zeroed, cache-line aligned region per slot, large
// enough for every buffer stored in it.
func allocSlots(p *kir.Program) [][]byte {
	size := make([]int, p.Slots)
	for _, b := range p.Buffers {
		size[b.Slot] = max(size[b.Slot], b.Size()*elemBytes(b.DType))
	}
	slots := make([][]byte, p.Slots)
	for i, n := range size {
		if n == 0 {
			continue
		}
		raw := make([]uint64, (n+memAlign)/8+1)
		off := 0
		if a := uintptr(unsafe.Pointer(&raw[0])) % memAlign; a != 0 {
			off = int(memAlign - a)
		}
		all := unsafe.Slice((*byte)(unsafe.Pointer(&raw[0])), len(raw)*8)
		slots[i] = all[off : off+n : off+n]
	}
	return slots
}

// view makes buffer b's typed view of mem.
func view(b *kir.Buffer, mem []byte) *buffer {
	n := b.Size()
	out := &buffer{kind: b.Kind, dt: b.DType, n: n, name: b.Name}
	if n == 0 {
		return out
	}
	ptr := unsafe.Pointer(&mem[0])
	switch b.DType {
	case tile.Float32, tile.Float16, tile.BFloat16:
		out.f32 = unsafe.Slice((*float32)(ptr), n)
	case tile.Float64:
		out.f64 = unsafe.Slice((*float64)(ptr), n)
	case tile.Int32:
		out.i32 = unsafe.Slice((*int32)(ptr), n)
	case tile.Int64:
		out.i64 = unsafe.Slice((*int64)(ptr), n)
	case tile.Bool:
		out.b = unsafe.Slice((*bool)(ptr), n)
	}
	return out
}

// setFloat64 stores v (a value of the buffer's dtype) at i.
func (b *buffer) setFloat64(i int, v float64) {
	switch {
	case b.f32 != nil:
		b.f32[i] = float32(v)
	case b.f64 != nil:
		b.f64[i] = v
	case b.i32 != nil:
		b.i32[i] = int32(tile.RoundTo(tile.Int32, v))
	case b.i64 != nil:
		b.i64[i] = int64(tile.RoundTo(tile.Int64, v))
	case b.b != nil:
		b.b[i] = v != 0
	}
}

// fill sets every element from float64 values, rounding to the dtype.
func (b *buffer) fill(vals []float64) {
	for i, v := range vals {
		b.setFloat64(i, tile.RoundTo(b.dt, v))
	}
}

// write copies host data (already checked with backend.CheckHost) into b.
func (b *buffer) write(data any) {
	switch d := data.(type) {
	case []float32:
		if b.dt == tile.Float32 {
			copy(b.f32, d)
			return
		}
		for i, x := range d {
			b.f32[i] = float32(tile.RoundTo(b.dt, float64(x)))
		}
	case []float64:
		copy(b.f64, d)
	case []int32:
		copy(b.i32, d)
	case []int64:
		copy(b.i64, d)
	case []bool:
		copy(b.b, d)
	}
}

// read copies b into host data (already checked with backend.CheckHost).
func (b *buffer) read(dst any) {
	switch d := dst.(type) {
	case []float32:
		copy(d, b.f32)
	case []float64:
		copy(d, b.f64)
	case []int32:
		copy(d, b.i32)
	case []int64:
		copy(d, b.i64)
	case []bool:
		copy(d, b.b)
	}
}

// checkHost wraps backend.CheckHost with the buffer's description.
func (b *buffer) checkHost(what string, data any) error {
	if err := backend.CheckHost(fmt.Sprintf("%s %q", what, b.name), b.dt, b.n, data); err != nil {
		return fmt.Errorf("cpu: %w", err)
	}
	return nil
}
