package cpu

import (
	"fmt"
	"math"
	"strings"
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

// planSlots returns the bytes of every slot of p (the largest buffer stored
// in it) and of all of them together with their alignment, or an error
// when a size overflows.
func planSlots(p *kir.Program) (size []int, total int64, err error) {
	size = make([]int, p.Slots)
	for _, b := range p.Buffers {
		n := int64(elemBytes(b.DType))
		for _, d := range b.Shape {
			if d < 0 || d > 0 && n > math.MaxInt64/4/int64(d) {
				return nil, 0, fmt.Errorf("cpu: program %q: buffer b%d %q %s%v is too large to address", p.Name, b.ID, b.Name, b.DType, b.Shape)
			}
			n *= int64(d)
		}
		size[b.Slot] = max(size[b.Slot], int(n))
	}
	for _, n := range size {
		if n > 0 {
			if total > math.MaxInt64/4-int64(n) {
				return nil, 0, fmt.Errorf("cpu: program %q needs more than %d bytes", p.Name, total)
			}
			total += int64(slotAlloc(n))
		}
	}
	return size, total, nil
}

// slotAlloc is the bytes allocated for a slot of n bytes.
func slotAlloc(n int) int { return 8 * ((n+memAlign)/8 + 1) }

// allocSlots returns one zeroed, cache-line aligned region per slot of the
// given sizes.
func allocSlots(size []int) [][]byte {
	slots := make([][]byte, len(size))
	for i, n := range size {
		if n == 0 {
			continue
		}
		raw := make([]uint64, slotAlloc(n)/8)
		off := 0
		if a := uintptr(unsafe.Pointer(&raw[0])) % memAlign; a != 0 {
			off = int(memAlign - a)
		}
		all := unsafe.Slice((*byte)(unsafe.Pointer(&raw[0])), len(raw)*8)
		slots[i] = all[off : off+n : off+n]
	}
	return slots
}

// largestSlot names the largest slot of p and its buffers.
func largestSlot(p *kir.Program, size []int) (string, int) {
	best := 0
	for i, n := range size {
		if n > size[best] {
			best = i
		}
	}
	if len(size) == 0 {
		return "no slot", 0
	}
	var names []string
	for _, b := range p.Buffers {
		if b.Slot != best {
			continue
		}
		if len(names) == 4 {
			names = append(names, "…")
			break
		}
		n := fmt.Sprintf("b%d", b.ID)
		if b.Name != "" {
			n += fmt.Sprintf(" %q", b.Name)
		}
		names = append(names, fmt.Sprintf("%s %s %s%v", n, b.Kind, b.DType, b.Shape))
	}
	return fmt.Sprintf("slot %d (%s)", best, strings.Join(names, ", ")), size[best]
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
