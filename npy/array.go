package npy

import (
	"fmt"
	"math"
	"math/bits"
)

// Array is an n-dimensional array: its element type, its shape (outermost
// first; empty for a 0-d array, which holds one element) and its elements in
// C order. Data is the slice type of DType: []bool for Bool, []int8 for
// Int8, …, []Half for Float16, []float32 for Float32, []float64 for
// Float64, with exactly as many elements as the shape holds.
type Array struct {
	DType DType
	Shape []int
	Data  any
}

// New returns an array of the given shape holding data, which must be the
// slice type of its dtype ([]float32, []int64, …) with as many elements as
// the shape; the dtype follows from the slice type. The array shares data.
func New(shape []int, data any) (*Array, error) {
	dt := dtypeOf(data)
	if dt == Invalid {
		return nil, fmt.Errorf("npy: data of type %T is not a slice of a supported element type", data)
	}
	a := &Array{DType: dt, Shape: append([]int{}, shape...), Data: data}
	if err := a.Check(); err != nil {
		return nil, err
	}
	return a, nil
}

// Zeros returns an array of zeros (false for Bool) of the given type and
// shape.
func Zeros(dt DType, shape []int) (*Array, error) {
	if !dt.Valid() {
		return nil, fmt.Errorf("npy: dtype %v is not valid", dt)
	}
	n, err := elements(shape)
	if err != nil {
		return nil, err
	}
	if _, ok := mulCheck(n, dt.Size()); !ok {
		return nil, fmt.Errorf("npy: shape %v of %v holds more bytes than an int counts", shape, dt)
	}
	return &Array{DType: dt, Shape: append([]int{}, shape...), Data: makeSlice(dt, n)}, nil
}

// Check reports whether a is well formed: a valid dtype, non-negative
// dimensions whose product does not overflow, and Data of the dtype's slice
// type and of that length.
func (a *Array) Check() error {
	if a == nil {
		return fmt.Errorf("npy: nil array")
	}
	if !a.DType.Valid() {
		return fmt.Errorf("npy: dtype %v is not valid", a.DType)
	}
	n, err := elements(a.Shape)
	if err != nil {
		return err
	}
	if got := dtypeOf(a.Data); got != a.DType {
		return fmt.Errorf("npy: array of dtype %v holds data of type %T", a.DType, a.Data)
	}
	if l := sliceLen(a.Data); l != n {
		return fmt.Errorf("npy: array of shape %v needs %d elements, holds %d", a.Shape, n, l)
	}
	return nil
}

// Len returns the number of elements the shape holds (1 for a 0-d array).
func (a *Array) Len() int {
	n := 1
	for _, d := range a.Shape {
		n *= d
	}
	return n
}

func (a *Array) Bools() []bool     { v, _ := a.Data.([]bool); return v }
func (a *Array) Int8s() []int8     { v, _ := a.Data.([]int8); return v }
func (a *Array) Int16s() []int16   { v, _ := a.Data.([]int16); return v }
func (a *Array) Int32s() []int32   { v, _ := a.Data.([]int32); return v }
func (a *Array) Int64s() []int64   { v, _ := a.Data.([]int64); return v }
func (a *Array) Uint8s() []uint8   { v, _ := a.Data.([]uint8); return v }
func (a *Array) Uint16s() []uint16 { v, _ := a.Data.([]uint16); return v }
func (a *Array) Uint32s() []uint32 { v, _ := a.Data.([]uint32); return v }
func (a *Array) Uint64s() []uint64 { v, _ := a.Data.([]uint64); return v }
func (a *Array) Halfs() []Half     { v, _ := a.Data.([]Half); return v }

// Float32s returns Data as []float32, or nil when the array holds another type.
func (a *Array) Float32s() []float32 { v, _ := a.Data.([]float32); return v }

// Float64s returns Data as []float64, or nil when the array holds another type.
func (a *Array) Float64s() []float64 { v, _ := a.Data.([]float64); return v }

// AsFloat64 returns the elements converted to float64: booleans as 0 or 1,
// integers rounded to the nearest float64 (exact up to 2^53).
// AsFloat64 returns Data as []float64, or nil when the array holds another type.
func (a *Array) AsFloat64() []float64 {
	n := sliceLen(a.Data)
	out := make([]float64, n)
	for i := range out {
		out[i] = a.at(i)
	}
	return out
}

// AsFloat32 returns the elements converted to float32, as AsFloat64 then a
// rounding to float32 would (float32 and Float16 values exactly).
// AsFloat32 returns Data as []float32, or nil when the array holds another type.
func (a *Array) AsFloat32() []float32 {
	if v := a.Float32s(); v != nil {
		return append([]float32{}, v...)
	}
	n := sliceLen(a.Data)
	out := make([]float32, n)
	for i := range out {
		out[i] = float32(a.at(i))
	}
	return out
}

// at returns element i as float64.
func (a *Array) at(i int) float64 {
	switch v := a.Data.(type) {
	case []bool:
		if v[i] {
			return 1
		}
		return 0
	case []int8:
		return float64(v[i])
	case []int16:
		return float64(v[i])
	case []int32:
		return float64(v[i])
	case []int64:
		return float64(v[i])
	case []uint8:
		return float64(v[i])
	case []uint16:
		return float64(v[i])
	case []uint32:
		return float64(v[i])
	case []uint64:
		return float64(v[i])
	case []Half:
		return float64(v[i].Float32())
	case []float32:
		return float64(v[i])
	case []float64:
		return v[i]
	}
	return math.NaN()
}

func dtypeOf(data any) DType {
	switch data.(type) {
	case []bool:
		return Bool
	case []int8:
		return Int8
	case []int16:
		return Int16
	case []int32:
		return Int32
	case []int64:
		return Int64
	case []uint8:
		return Uint8
	case []uint16:
		return Uint16
	case []uint32:
		return Uint32
	case []uint64:
		return Uint64
	case []Half:
		return Float16
	case []float32:
		return Float32
	case []float64:
		return Float64
	}
	return Invalid
}

func sliceLen(data any) int {
	switch v := data.(type) {
	case []bool:
		return len(v)
	case []int8:
		return len(v)
	case []int16:
		return len(v)
	case []int32:
		return len(v)
	case []int64:
		return len(v)
	case []uint8:
		return len(v)
	case []uint16:
		return len(v)
	case []uint32:
		return len(v)
	case []uint64:
		return len(v)
	case []Half:
		return len(v)
	case []float32:
		return len(v)
	case []float64:
		return len(v)
	}
	return -1
}

func makeSlice(dt DType, n int) any {
	switch dt {
	case Bool:
		return make([]bool, n)
	case Int8:
		return make([]int8, n)
	case Int16:
		return make([]int16, n)
	case Int32:
		return make([]int32, n)
	case Int64:
		return make([]int64, n)
	case Uint8:
		return make([]uint8, n)
	case Uint16:
		return make([]uint16, n)
	case Uint32:
		return make([]uint32, n)
	case Uint64:
		return make([]uint64, n)
	case Float16:
		return make([]Half, n)
	case Float32:
		return make([]float32, n)
	case Float64:
		return make([]float64, n)
	}
	return nil
}

// elements returns the product of shape's dimensions, refusing negative
// dimensions and overflow.
func elements(shape []int) (int, error) {
	n := 1
	for _, d := range shape {
		if d < 0 {
			return 0, fmt.Errorf("npy: shape %v has a negative dimension", shape)
		}
		var ok bool
		if n, ok = mulCheck(n, d); !ok {
			return 0, fmt.Errorf("npy: shape %v has more elements than an int counts", shape)
		}
	}
	return n, nil
}

// mulCheck returns a·b for non-negative a and b, and false on overflow of
// int.
func mulCheck(a, b int) (int, bool) {
	hi, lo := bits.Mul64(uint64(a), uint64(b))
	if hi != 0 || lo > math.MaxInt {
		return 0, false
	}
	return int(lo), true
}
