package tile

import "fmt"

// DType is the element type of a tensor.
type DType uint8

// The element types. Float16 and BFloat16 are declared for storage formats that
// later backends will use; the reference executor computes them as Float32.
const (
	Invalid DType = iota
	Bool
	Int32
	Int64
	Float16
	BFloat16
	Float32
	Float64
)

var dtypeNames = [...]string{
	Invalid:  "invalid",
	Bool:     "bool",
	Int32:    "i32",
	Int64:    "i64",
	Float16:  "f16",
	BFloat16: "bf16",
	Float32:  "f32",
	Float64:  "f64",
}

var dtypeSizes = [...]int{Bool: 1, Int32: 4, Int64: 8, Float16: 2, BFloat16: 2, Float32: 4, Float64: 8}

// String returns the short name used by the textual form, such as "f32".
func (d DType) String() string {
	if int(d) < len(dtypeNames) {
		return dtypeNames[d]
	}
	return fmt.Sprintf("dtype(%d)", uint8(d))
}

// Size returns the number of bytes one element occupies, or 0 for Invalid.
func (d DType) Size() int {
	if int(d) < len(dtypeSizes) {
		return dtypeSizes[d]
	}
	return 0
}

// IsFloat reports whether d is a floating-point type.
func (d DType) IsFloat() bool {
	return d == Float16 || d == BFloat16 || d == Float32 || d == Float64
}

// IsInt reports whether d is a signed integer type.
func (d DType) IsInt() bool { return d == Int32 || d == Int64 }

// Valid reports whether d is one of the declared element types.
func (d DType) Valid() bool { return d > Invalid && d <= Float64 }

// ParseDType returns the DType whose String is s.
func ParseDType(s string) (DType, error) {
	for i, n := range dtypeNames {
		if i > 0 && n == s {
			return DType(i), nil
		}
	}
	return Invalid, fmt.Errorf("tile: unknown dtype %q (want one of bool, i32, i64, f16, bf16, f32, f64)", s)
}
