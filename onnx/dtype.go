package onnx

import (
	"fmt"

	"github.com/tartanml/tartan/tile"
)

// DataType is an ONNX tensor element type (TensorProto.DataType).
type DataType int32

// The ONNX element types, with TensorProto's numbers.
const (
	Undefined  DataType = 0
	Float      DataType = 1
	Uint8      DataType = 2
	Int8       DataType = 3
	Uint16     DataType = 4
	Int16      DataType = 5
	Int32      DataType = 6
	Int64      DataType = 7
	String     DataType = 8
	Bool       DataType = 9
	Float16    DataType = 10
	Double     DataType = 11
	Uint32     DataType = 12
	Uint64     DataType = 13
	Complex64  DataType = 14
	Complex128 DataType = 15
	BFloat16   DataType = 16
)

var dataTypeNames = map[DataType]string{
	Undefined: "undefined", Float: "float", Uint8: "uint8", Int8: "int8",
	Uint16: "uint16", Int16: "int16", Int32: "int32", Int64: "int64",
	String: "string", Bool: "bool", Float16: "float16", Double: "double",
	Uint32: "uint32", Uint64: "uint64", Complex64: "complex64",
	Complex128: "complex128", BFloat16: "bfloat16",
}

// String returns ONNX's name of the type, such as "float" or "int64".
func (d DataType) String() string {
	if s, ok := dataTypeNames[d]; ok {
		return s
	}
	return fmt.Sprintf("DataType(%d)", int32(d))
}

// Tile returns the tile dtype that holds d exactly, and false for the ONNX
// types tile has no dtype for (unsigned and 8- and 16-bit integers, strings,
// complex numbers).
func (d DataType) Tile() (tile.DType, bool) {
	switch d {
	case Float:
		return tile.Float32, true
	case Double:
		return tile.Float64, true
	case Float16:
		return tile.Float16, true
	case BFloat16:
		return tile.BFloat16, true
	case Int32:
		return tile.Int32, true
	case Int64:
		return tile.Int64, true
	case Bool:
		return tile.Bool, true
	}
	return tile.Invalid, false
}

// narrow reports whether d is an integer type tile has no dtype for but
// that a wider one holds (see Storage): the 8- and 16-bit integers, and
// uint32.
func (d DataType) narrow() bool {
	return d == Int8 || d == Uint8 || d == Int16 || d == Uint16 || d == Uint32
}

// Storage returns the tile dtype that holds d: the one Tile returns, int32
// for the 8- and 16-bit integer types and int64 for uint32, whose values a
// graph keeps in the wider type and wraps around to their range after
// every op.
func (d DataType) Storage() (tile.DType, bool) {
	switch {
	case d == Uint32:
		return tile.Int64, true
	case d.narrow():
		return tile.Int32, true
	}
	return d.Tile()
}

// span returns the number of values of a narrow type and its smallest.
func (d DataType) span() (n, lo float64) {
	switch d {
	case Int8:
		return 256, -128
	case Uint8:
		return 256, 0
	case Int16:
		return 65536, -32768
	case Uint16:
		return 65536, 0
	case Uint32:
		return 1 << 32, 0
	}
	return 0, 0
}

// FromTile returns the ONNX type of a tile dtype.
func FromTile(dt tile.DType) DataType {
	switch dt {
	case tile.Float32:
		return Float
	case tile.Float64:
		return Double
	case tile.Float16:
		return Float16
	case tile.BFloat16:
		return BFloat16
	case tile.Int32:
		return Int32
	case tile.Int64:
		return Int64
	case tile.Bool:
		return Bool
	}
	return Undefined
}

// size returns the bytes of one element in raw_data, 0 for types without a
// fixed-size raw encoding (strings) or unknown ones.
func (d DataType) size() int {
	switch d {
	case Uint8, Int8, Bool:
		return 1
	case Uint16, Int16, Float16, BFloat16:
		return 2
	case Float, Int32, Uint32:
		return 4
	case Int64, Uint64, Double, Complex64:
		return 8
	case Complex128:
		return 16
	}
	return 0
}
