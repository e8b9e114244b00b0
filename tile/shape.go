package tile

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Shape is the list of a tensor's dimensions, outermost first. A scalar has
// the empty shape. Dimensions are never negative.
type Shape []int

// MaxBytes bounds the storage of one tensor: 2^50 bytes (1 PiB). The builder
// rejects every node whose shape holds more, so that sizes, byte counts and
// offsets of a built graph, even multiplied by a dtype size, never overflow
// an int64.
const MaxBytes = 1 << 50

// Size returns the number of elements, 1 for a scalar. It never wraps
// around: a shape whose element count does not fit an int (or that has a
// negative dimension) has size math.MaxInt, which no allocation or
// comparison with a real length accepts. CheckedSize tells the two apart;
// every tensor of a Graph has a shape for which they agree.
func (s Shape) Size() int {
	n, ok := s.CheckedSize()
	if !ok {
		return math.MaxInt
	}
	return n
}

// CheckedSize returns the number of elements and true, or 0 and false when
// a dimension is negative or the count overflows an int.
func (s Shape) CheckedSize() (int, bool) {
	n := 1
	for _, d := range s {
		if d < 0 {
			return 0, false
		}
		var ok bool
		if n, ok = mulInt(n, d); !ok {
			return 0, false
		}
	}
	return n, true
}

// Bytes returns the number of bytes a tensor of shape s and dtype dt
// occupies, and false when the count overflows an int64 or dt is invalid.
func (s Shape) Bytes(dt DType) (int64, bool) {
	n, ok := s.CheckedSize()
	if !ok || dt.Size() == 0 {
		return 0, false
	}
	b, ok := mulInt(n, dt.Size())
	return int64(b), ok
}

// CheckStorage returns nil when a tensor of shape s and dtype dt has no
// negative dimension and fits in MaxBytes, and otherwise an error naming
// the shape, its element count and its bytes. With an invalid dt only the
// element count is bounded, by MaxBytes.
func (s Shape) CheckStorage(dt DType) error {
	for _, d := range s {
		if d < 0 {
			return fmt.Errorf("negative dimension in shape %v", s)
		}
	}
	n, ok := s.CheckedSize()
	if !ok {
		return fmt.Errorf("shape %v has more than %d elements (the count overflows)", s, math.MaxInt64)
	}
	if !dt.Valid() {
		// No dtype yet: bound the element count alone.
		if n > MaxBytes {
			return fmt.Errorf("shape %v holds %d elements, over the limit of %d bytes for one tensor", s, n, MaxBytes)
		}
		return nil
	}
	b, ok := s.Bytes(dt)
	if !ok {
		return fmt.Errorf("shape %v of %v holds %d elements, more than %d bytes (the count overflows)", s, dt, n, int64(math.MaxInt64))
	}
	if b > MaxBytes {
		return fmt.Errorf("shape %v of %v holds %d elements (%d bytes), over the limit of %d bytes for one tensor", s, dt, n, b, MaxBytes)
	}
	return nil
}

// Rank returns the number of dimensions.
func (s Shape) Rank() int { return len(s) }

// Equal reports whether s and t have the same dimensions.
func (s Shape) Equal(t Shape) bool {
	if len(s) != len(t) {
		return false
	}
	for i := range s {
		if s[i] != t[i] {
			return false
		}
	}
	return true
}

// Clone returns a copy of s that shares no memory with it.
func (s Shape) Clone() Shape {
	if s == nil {
		return Shape{}
	}
	return append(Shape{}, s...)
}

// Strides returns the row-major element strides of s. For a shape with
// more elements than an int holds they wrap around; the shapes of a Graph's
// tensors never do.
func (s Shape) Strides() []int {
	st := make([]int, len(s))
	n := 1
	for i := len(s) - 1; i >= 0; i-- {
		st[i] = n
		n *= s[i]
	}
	return st
}

// String formats s as "[2, 3]".
func (s Shape) String() string {
	var b strings.Builder
	b.WriteByte('[')
	for i, d := range s {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(strconv.Itoa(d))
	}
	b.WriteByte(']')
	return b.String()
}

// BroadcastShapes returns the NumPy broadcast of the given shapes: shapes are
// aligned at their last dimension, and each dimension must be equal across
// shapes or 1. It reports false when the shapes do not broadcast.
func BroadcastShapes(shapes ...Shape) (Shape, bool) {
	rank := 0
	for _, s := range shapes {
		rank = max(rank, len(s))
	}
	out := make(Shape, rank)
	for i := range out {
		out[i] = 1
	}
	for _, s := range shapes {
		off := rank - len(s)
		for i, d := range s {
			switch {
			case out[off+i] == d || d == 1:
			case out[off+i] == 1:
				out[off+i] = d
			default:
				return nil, false
			}
		}
	}
	return out, true
}
