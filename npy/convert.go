package npy

import (
	"fmt"
	"math"

	"github.com/tartanml/tartan/tile"
)

// maxExact is the largest integer every float64 below it holds exactly.
const maxExact = 1 << 53

// ToValue converts a to a tile.Value. Bool, Int32, Int64, Float16, Float32
// and Float64 keep their type; Int8, Int16, Uint8 and Uint16 widen to Int32,
// Uint32 and Uint64 to Int64. Because a Value holds float64 elements, an
// integer beyond ±2^53 (or a uint64 beyond int64) is refused rather than
// rounded.
func (a *Array) ToValue() (*tile.Value, error) {
	if err := a.Check(); err != nil {
		return nil, err
	}
	var dt tile.DType
	switch a.DType {
	case Bool:
		dt = tile.Bool
	case Int8, Int16, Int32, Uint8, Uint16:
		dt = tile.Int32
	case Int64, Uint32, Uint64:
		dt = tile.Int64
	case Float16:
		dt = tile.Float16
	case Float32:
		dt = tile.Float32
	case Float64:
		dt = tile.Float64
	}
	data := a.AsFloat64()
	switch v := a.Data.(type) {
	case []int64:
		for i, x := range v {
			if x > maxExact || x < -maxExact {
				return nil, fmt.Errorf("npy: int64 element %d (%d) of shape %v is beyond ±2^53, which a tile.Value cannot hold exactly", i, x, a.Shape)
			}
		}
	case []uint64:
		for i, x := range v {
			if x > maxExact {
				return nil, fmt.Errorf("npy: uint64 element %d (%d) of shape %v is beyond 2^53, which a tile.Value cannot hold exactly", i, x, a.Shape)
			}
		}
	}
	return tile.ValueOf(dt, tile.Shape(append([]int{}, a.Shape...)), data)
}

// FromValue converts a tile.Value to an Array of the same type (Bool, Int32,
// Int64, Float16, Float32, Float64); BFloat16 has no NumPy type and is
// refused. Integer elements must be whole numbers within their type's range.
func FromValue(v *tile.Value) (*Array, error) {
	if v == nil {
		return nil, fmt.Errorf("npy: nil tile.Value")
	}
	n, err := elements(v.Shape)
	if err != nil {
		return nil, err
	}
	if len(v.Data) != n {
		return nil, fmt.Errorf("npy: tile.Value of shape %v holds %d elements, want %d", v.Shape, len(v.Data), n)
	}
	shape := append([]int{}, v.Shape...)
	intAt := func(i int, lo, hi float64, what string) (float64, error) {
		x := v.Data[i]
		if x != math.Trunc(x) || x < lo || x > hi {
			return 0, fmt.Errorf("npy: element %d (%g) of a %v tile.Value is not a %s", i, x, v.DType, what)
		}
		return x, nil
	}
	switch v.DType {
	case tile.Bool:
		out := make([]bool, n)
		for i, x := range v.Data {
			out[i] = x != 0
		}
		return New(shape, out)
	case tile.Int32:
		out := make([]int32, n)
		for i := range v.Data {
			x, err := intAt(i, math.MinInt32, math.MaxInt32, "32-bit integer")
			if err != nil {
				return nil, err
			}
			out[i] = int32(x)
		}
		return New(shape, out)
	case tile.Int64:
		out := make([]int64, n)
		for i := range v.Data {
			x, err := intAt(i, -(1 << 63), 1<<63-1024, "64-bit integer")
			if err != nil {
				return nil, err
			}
			out[i] = int64(x)
		}
		return New(shape, out)
	case tile.Float16:
		out := make([]Half, n)
		for i, x := range v.Data {
			out[i] = HalfFrom(float32(x))
		}
		return New(shape, out)
	case tile.Float32:
		out := make([]float32, n)
		for i, x := range v.Data {
			out[i] = float32(x)
		}
		return New(shape, out)
	case tile.Float64:
		return New(shape, append([]float64{}, v.Data...))
	}
	return nil, fmt.Errorf("npy: tile.Value of dtype %v has no NumPy type", v.DType)
}
