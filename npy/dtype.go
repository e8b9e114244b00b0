package npy

import (
	"fmt"
	"math"
)

// DType is an array's element type.
type DType uint8

// The element types, named after NumPy's.
const (
	Invalid DType = iota
	Bool
	Int8
	Int16
	Int32
	Int64
	Uint8
	Uint16
	Uint32
	Uint64
	Float16
	Float32
	Float64
)

var dtypeInfo = [...]struct {
	name string // NumPy's name
	code string // the descr without its byte-order character
	size int
}{
	Invalid: {"invalid", "", 0},
	Bool:    {"bool", "b1", 1},
	Int8:    {"int8", "i1", 1},
	Int16:   {"int16", "i2", 2},
	Int32:   {"int32", "i4", 4},
	Int64:   {"int64", "i8", 8},
	Uint8:   {"uint8", "u1", 1},
	Uint16:  {"uint16", "u2", 2},
	Uint32:  {"uint32", "u4", 4},
	Uint64:  {"uint64", "u8", 8},
	Float16: {"float16", "f2", 2},
	Float32: {"float32", "f4", 4},
	Float64: {"float64", "f8", 8},
}

// Valid reports whether d is one of the declared types.
func (d DType) Valid() bool { return d > Invalid && int(d) < len(dtypeInfo) }

// String returns NumPy's name of the type, such as "float32".
func (d DType) String() string {
	if int(d) < len(dtypeInfo) {
		return dtypeInfo[d].name
	}
	return fmt.Sprintf("dtype(%d)", uint8(d))
}

// Size returns the bytes of one element, 0 for Invalid.
func (d DType) Size() int {
	if int(d) < len(dtypeInfo) {
		return dtypeInfo[d].size
	}
	return 0
}

// Descr returns the little-endian descr written to files, such as "<f4"
// ("|b1", "|i1" and "|u1" for one-byte types).
func (d DType) Descr() string {
	if !d.Valid() {
		return ""
	}
	if d.Size() == 1 {
		return "|" + dtypeInfo[d].code
	}
	return "<" + dtypeInfo[d].code
}

// parseDescr reads a descr such as "<f4", ">i8" or "|b1": the type and
// whether its bytes are big-endian.
func parseDescr(s string) (DType, bool, error) {
	if len(s) < 2 {
		return Invalid, false, fmt.Errorf("dtype %q is not a simple type such as '<f4'", s)
	}
	order, code := s[0], s[1:]
	var dt DType
	for i := Bool; i <= Float64; i++ {
		if dtypeInfo[i].code == code {
			dt = i
		}
	}
	if dt == Invalid {
		return Invalid, false, fmt.Errorf("dtype %q is not supported (want b1, i1, i2, i4, i8, u1, u2, u4, u8, f2, f4 or f8)", s)
	}
	switch order {
	case '<':
		return dt, false, nil
	case '>':
		return dt, true, nil
	case '|':
		if dt.Size() != 1 {
			return Invalid, false, fmt.Errorf("dtype %q: byte order '|' is only for one-byte types", s)
		}
		return dt, false, nil
	}
	return Invalid, false, fmt.Errorf("dtype %q: byte order %q is not '<', '>' or '|'", s, order)
}

// Half is an IEEE 754 half-precision number, as its bits.
type Half uint16

// Float32 returns f's value; every half-precision value is exact in float32.
func (f Half) Float32() float32 {
	sign := uint32(f>>15) << 31
	exp := uint32(f>>10) & 0x1f
	frac := uint32(f) & 0x3ff
	switch {
	case exp == 0x1f: // infinity or NaN
		return math.Float32frombits(sign | 0xff<<23 | frac<<13)
	case exp == 0:
		if frac == 0 {
			return math.Float32frombits(sign)
		}
		// Subnormal: frac·2⁻²⁴.
		v := float32(frac) * (1.0 / (1 << 24))
		if sign != 0 {
			v = -v
		}
		return v
	}
	return math.Float32frombits(sign | (exp+127-15)<<23 | frac<<13)
}

// HalfFrom rounds v to the nearest half-precision value (ties to even),
// as NumPy's astype(float16) does: values beyond the range become infinite,
// NaN stays NaN.
func HalfFrom(v float32) Half {
	b := math.Float32bits(v)
	sign := uint16(b>>16) & 0x8000
	exp := int32(b>>23) & 0xff
	frac := b & 0x7fffff
	if exp == 0xff {
		if frac != 0 {
			return Half(sign | 0x7e00 | uint16(frac>>13))
		}
		return Half(sign | 0x7c00)
	}
	e := exp - 127 + 15
	if e >= 0x1f {
		return Half(sign | 0x7c00)
	}
	if e <= 0 {
		// Subnormal or zero: the value in units of 2⁻²⁴, rounded.
		if e < -10 {
			return Half(sign)
		}
		m := frac | 0x800000 // 24 significant bits, value m·2^(exp-150)
		shift := uint32(14 - e)
		h := m >> shift
		rem := m & (1<<shift - 1)
		half := uint32(1) << (shift - 1)
		if rem > half || (rem == half && h&1 == 1) {
			h++
		}
		return Half(sign | uint16(h))
	}
	h := uint32(e)<<10 | frac>>13
	rem := frac & 0x1fff
	if rem > 0x1000 || (rem == 0x1000 && h&1 == 1) {
		h++ // may carry into the exponent, up to infinity: correct
	}
	return Half(sign | uint16(h))
}
