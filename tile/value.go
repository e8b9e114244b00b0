package tile

import (
	"fmt"
	"math"
)

// Value is a tensor's contents on the host: row-major elements stored as
// float64 whatever the dtype. Integers are exact up to 2^53 and booleans are 0
// or 1. Values of Float32 (and narrower) dtypes hold numbers that float32 can
// represent. Value is the currency of constants and of the reference executor.
type Value struct {
	DType DType
	Shape Shape
	Data  []float64
}

// NewValue returns a zero value of the given dtype and shape.
func NewValue(dt DType, shape Shape) *Value {
	return &Value{DType: dt, Shape: shape.Clone(), Data: make([]float64, shape.Size())}
}

// ValueOf returns a value holding data, checking that its length matches the
// shape and rounding it to dt.
func ValueOf(dt DType, shape Shape, data []float64) (*Value, error) {
	if !dt.Valid() {
		return nil, fmt.Errorf("tile: value: invalid dtype %v", dt)
	}
	for _, d := range shape {
		if d < 0 {
			return nil, fmt.Errorf("tile: value: negative dimension in shape %v", shape)
		}
	}
	if len(data) != shape.Size() {
		return nil, fmt.Errorf("tile: value: %d elements given for shape %v (%d elements)", len(data), shape, shape.Size())
	}
	v := &Value{DType: dt, Shape: shape.Clone(), Data: make([]float64, len(data))}
	for i, x := range data {
		v.Data[i] = RoundTo(dt, x)
	}
	return v, nil
}

// ValueFromFloat32 returns an f32 value holding a copy of data.
func ValueFromFloat32(shape Shape, data []float32) (*Value, error) {
	f := make([]float64, len(data))
	for i, x := range data {
		f[i] = float64(x)
	}
	return ValueOf(Float32, shape, f)
}

// Float32s returns the elements converted to float32.
func (v *Value) Float32s() []float32 {
	out := make([]float32, len(v.Data))
	for i, x := range v.Data {
		out[i] = float32(x)
	}
	return out
}

// Clone returns a deep copy of v.
func (v *Value) Clone() *Value {
	return &Value{DType: v.DType, Shape: v.Shape.Clone(), Data: append([]float64(nil), v.Data...)}
}

// RoundTo rounds x to the nearest value that dtype dt can hold: float32
// rounding for Float32, Float16 and BFloat16 (which the reference computes as
// float32), truncation toward zero and wrap-around for integers, and 0 or 1
// for Bool. NaN converts to 0 for integer dtypes.
func RoundTo(dt DType, x float64) float64 {
	switch dt {
	case Float64:
		return x
	case Float32, Float16, BFloat16:
		return float64(float32(x))
	case Int32:
		if math.IsNaN(x) {
			return 0
		}
		return float64(int32(int64(math.Trunc(x))))
	case Int64:
		if math.IsNaN(x) {
			return 0
		}
		return math.Trunc(x)
	case Bool:
		if x != 0 {
			return 1
		}
		return 0
	}
	return x
}

// ConstantOp is a constant tensor.
type ConstantOp struct{ Value *Value }

// Kind implements Op.
func (*ConstantOp) Kind() string { return "constant" }

// Constant returns a node holding a copy of v.
func (g *Graph) Constant(v *Value) *Tensor {
	if !g.check("constant") {
		return g.invalid()
	}
	if v == nil {
		return g.Errorf("constant", "nil value")
	}
	if len(v.Data) != v.Shape.Size() || !v.DType.Valid() {
		return g.Errorf("constant", "value of dtype %v, shape %v holds %d elements", v.DType, v.Shape, len(v.Data))
	}
	if !g.checkStorage("constant", v.DType, v.Shape) {
		return g.invalid()
	}
	c := v.Clone()
	for i, x := range c.Data {
		c.Data[i] = RoundTo(c.DType, x)
	}
	return g.add(&ConstantOp{Value: c}, c.DType, c.Shape)
}

// Scalar returns a scalar constant of dtype dt.
func (g *Graph) Scalar(x float64, dt DType) *Tensor {
	return g.Constant(&Value{DType: dt, Shape: Shape{}, Data: []float64{x}})
}

// ScalarLike returns a scalar constant of t's dtype.
func (g *Graph) ScalarLike(t *Tensor, x float64) *Tensor {
	if !g.check("constant", t) {
		return g.invalid()
	}
	return g.Scalar(x, t.dtype)
}
