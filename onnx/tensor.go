package onnx

import (
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"google.golang.org/protobuf/encoding/protowire"

	"github.com/tartanml/tartan/onnx/internal/pb"
	"github.com/tartanml/tartan/tile"
)

// MaxElements bounds the element count a tensor or value may declare:
// 2^31 elements. Dimensions whose product exceeds it (or overflows) are
// refused before anything is allocated.
const MaxElements = 1 << 31

// Tensor is a decoded ONNX tensor: an initializer, a Constant's value or a
// test's input or output.
type Tensor struct {
	Name string
	Type DataType
	Dims []int64
	// Data holds the row-major elements as float64 whatever the type
	// (integers exact up to 2^53, booleans 0 or 1).
	Data []float64
	// Int64 holds the exact elements of an INT64 tensor too (nil for other
	// types), since float64 cannot hold every int64.
	Int64 []int64
}

// Shape returns the tensor's dimensions as a tile shape.
func (t *Tensor) Shape() tile.Shape {
	s := make(tile.Shape, len(t.Dims))
	for i, d := range t.Dims {
		s[i] = int(d)
	}
	return s
}

// Value returns the tensor as a tile value of the dtype that holds its type
// (DataType.Storage: int32 for 8- and 16-bit integers), or an error when
// there is none.
func (t *Tensor) Value() (*tile.Value, error) {
	dt, ok := t.Type.Storage()
	if !ok {
		return nil, fmt.Errorf("tensor %q: %s tensors are not supported", t.Name, t.Type)
	}
	return tile.ValueOf(dt, t.Shape(), t.Data)
}

// elementCount checks dims and returns their product, refusing negative
// dimensions and products over MaxElements.
func elementCount(dims []int64) (int, error) {
	n := int64(1)
	for _, d := range dims {
		if d < 0 {
			return 0, fmt.Errorf("dimension %d of %v is negative", d, dims)
		}
		if d != 0 && n > MaxElements/d {
			return 0, fmt.Errorf("dimensions %v hold more than %d elements", dims, int64(MaxElements))
		}
		n *= d
	}
	if n > MaxElements {
		return 0, fmt.Errorf("dimensions %v hold more than %d elements", dims, int64(MaxElements))
	}
	return int(n), nil
}

// DecodeTensor decodes a serialized TensorProto (such as a test's
// input_0.pb). External data is read relative to dir; an empty dir refuses it.
func DecodeTensor(data []byte, dir string) (*Tensor, error) {
	var tp pb.TensorProto
	if err := unmarshal(data, &tp); err != nil {
		return nil, fmt.Errorf("decoding a TensorProto: %w", err)
	}
	return decodeTensor(&tp, dir)
}

// DecodeSequence decodes a serialized SequenceProto of tensors (such as a
// test's input_0.pb for a sequence input) into its elements.
func DecodeSequence(data []byte, dir string) ([]*Tensor, error) {
	var out []*Tensor
	for len(data) > 0 {
		num, typ, n := protowire.ConsumeTag(data)
		if n < 0 {
			return nil, fmt.Errorf("decoding a SequenceProto: %w", protowire.ParseError(n))
		}
		data = data[n:]
		if num == 3 && typ == protowire.BytesType { // tensor_values
			b, n := protowire.ConsumeBytes(data)
			if n < 0 {
				return nil, fmt.Errorf("decoding a SequenceProto: %w", protowire.ParseError(n))
			}
			data = data[n:]
			t, err := DecodeTensor(b, dir)
			if err != nil {
				return nil, fmt.Errorf("sequence element %d: %w", len(out), err)
			}
			out = append(out, t)
			continue
		}
		if num >= 4 && num <= 7 && typ == protowire.BytesType {
			return nil, fmt.Errorf("decoding a SequenceProto: only sequences of tensors are supported")
		}
		n = protowire.ConsumeFieldValue(num, typ, data)
		if n < 0 {
			return nil, fmt.Errorf("decoding a SequenceProto: %w", protowire.ParseError(n))
		}
		data = data[n:]
	}
	return out, nil
}

// decodeTensor converts tp, checking that its data agrees with its dims.
func decodeTensor(tp *pb.TensorProto, dir string) (*Tensor, error) {
	t := &Tensor{Name: tp.GetName(), Type: DataType(tp.GetDataType()), Dims: append([]int64(nil), tp.GetDims()...)}
	fail := func(format string, args ...any) (*Tensor, error) {
		return nil, fmt.Errorf("tensor %q (%s %v): %s", t.Name, t.Type, t.Dims, fmt.Sprintf(format, args...))
	}
	n, err := elementCount(t.Dims)
	if err != nil {
		return fail("%v", err)
	}
	if tp.Segment != nil {
		return fail("segmented tensors are not supported")
	}
	switch t.Type {
	case String:
		return fail("string tensors are not supported")
	case Complex64, Complex128:
		return fail("complex tensors are not supported")
	case Undefined:
		return fail("the data type is undefined")
	}
	if t.Type.size() == 0 {
		return fail("unknown data type %d", int32(t.Type))
	}
	raw := tp.GetRawData()
	hasRaw := tp.RawData != nil
	if tp.GetDataLocation() == pb.TensorProto_EXTERNAL {
		raw, err = readExternal(tp, dir, int64(n)*int64(t.Type.size()))
		if err != nil {
			return fail("%v", err)
		}
		hasRaw = true
	}
	t.Data = make([]float64, 0, min(n, 1<<16))
	if t.Type == Int64 {
		t.Int64 = make([]int64, 0, min(n, 1<<16))
	}
	if hasRaw {
		size := t.Type.size()
		if len(raw) != n*size {
			return fail("raw_data holds %d bytes, the dims need %d", len(raw), n*size)
		}
		t.Data = make([]float64, n)
		if t.Type == Int64 {
			t.Int64 = make([]int64, n)
		}
		for i := range n {
			b := raw[i*size : (i+1)*size]
			switch t.Type {
			case Float:
				t.Data[i] = float64(math.Float32frombits(binary.LittleEndian.Uint32(b)))
			case Double:
				t.Data[i] = math.Float64frombits(binary.LittleEndian.Uint64(b))
			case Float16:
				t.Data[i] = float64(halfToFloat(binary.LittleEndian.Uint16(b)))
			case BFloat16:
				t.Data[i] = float64(math.Float32frombits(uint32(binary.LittleEndian.Uint16(b)) << 16))
			case Int8:
				t.Data[i] = float64(int8(b[0]))
			case Uint8:
				t.Data[i] = float64(b[0])
			case Bool:
				t.Data[i] = float64(min(b[0], 1))
			case Int16:
				t.Data[i] = float64(int16(binary.LittleEndian.Uint16(b)))
			case Uint16:
				t.Data[i] = float64(binary.LittleEndian.Uint16(b))
			case Int32:
				t.Data[i] = float64(int32(binary.LittleEndian.Uint32(b)))
			case Uint32:
				t.Data[i] = float64(binary.LittleEndian.Uint32(b))
			case Int64:
				v := int64(binary.LittleEndian.Uint64(b))
				t.Int64[i] = v
				t.Data[i] = float64(v)
			case Uint64:
				t.Data[i] = float64(binary.LittleEndian.Uint64(b))
			}
		}
		return t, nil
	}
	check := func(field string, got int) error {
		if got != n {
			return fmt.Errorf("%s holds %d elements, the dims need %d", field, got, n)
		}
		return nil
	}
	switch t.Type {
	case Float:
		if err := check("float_data", len(tp.FloatData)); err != nil {
			return fail("%v", err)
		}
		for _, v := range tp.FloatData {
			t.Data = append(t.Data, float64(v))
		}
	case Double:
		if err := check("double_data", len(tp.DoubleData)); err != nil {
			return fail("%v", err)
		}
		t.Data = append(t.Data, tp.DoubleData...)
	case Int64:
		if err := check("int64_data", len(tp.Int64Data)); err != nil {
			return fail("%v", err)
		}
		for _, v := range tp.Int64Data {
			t.Data = append(t.Data, float64(v))
		}
		t.Int64 = append(t.Int64, tp.Int64Data...)
	case Uint32, Uint64:
		if err := check("uint64_data", len(tp.Uint64Data)); err != nil {
			return fail("%v", err)
		}
		for _, v := range tp.Uint64Data {
			t.Data = append(t.Data, float64(v))
		}
	default: // int32_data: INT32, INT16, INT8, UINT16, UINT8, BOOL, FLOAT16, BFLOAT16
		if err := check("int32_data", len(tp.Int32Data)); err != nil {
			return fail("%v", err)
		}
		for _, v := range tp.Int32Data {
			var x float64
			switch t.Type {
			case Float16:
				x = float64(halfToFloat(uint16(v)))
			case BFloat16:
				x = float64(math.Float32frombits(uint32(uint16(v)) << 16))
			case Bool:
				x = float64(min(uint32(v), 1))
			case Int8:
				x = float64(int8(v))
			case Uint8:
				x = float64(uint8(v))
			case Int16:
				x = float64(int16(v))
			case Uint16:
				x = float64(uint16(v))
			default:
				x = float64(v)
			}
			t.Data = append(t.Data, x)
		}
	}
	return t, nil
}

// readExternal reads the bytes of a tensor stored outside the model, at the
// location, offset and length its external_data names, relative to dir. A
// location that leaves dir (absolute, through "..", or through a symbolic
// link) is refused, and so is a length other than want.
func readExternal(tp *pb.TensorProto, dir string, want int64) ([]byte, error) {
	var location string
	offset, length := int64(0), int64(-1)
	for _, kv := range tp.GetExternalData() {
		var err error
		switch kv.GetKey() {
		case "location":
			location = kv.GetValue()
		case "offset":
			offset, err = strconv.ParseInt(kv.GetValue(), 10, 64)
		case "length":
			length, err = strconv.ParseInt(kv.GetValue(), 10, 64)
		case "checksum":
		default:
			return nil, fmt.Errorf("external data: unknown key %q", kv.GetKey())
		}
		if err != nil || offset < 0 || length < -1 {
			return nil, fmt.Errorf("external data: %s %q is not a byte count", kv.GetKey(), kv.GetValue())
		}
	}
	if location == "" {
		return nil, fmt.Errorf("external data: no location")
	}
	if dir == "" {
		return nil, fmt.Errorf("external data %q: the model was not read from a directory", location)
	}
	if filepath.IsAbs(location) || strings.HasPrefix(location, "/") || strings.HasPrefix(location, `\`) {
		return nil, fmt.Errorf("external data %q: an absolute location is not allowed", location)
	}
	clean := filepath.Clean(filepath.FromSlash(location))
	if clean == ".." || strings.HasPrefix(clean, ".."+string(filepath.Separator)) {
		return nil, fmt.Errorf("external data %q: the location leaves the model's directory", location)
	}
	root, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return nil, fmt.Errorf("external data %q: %w", location, err)
	}
	path, err := filepath.EvalSymlinks(filepath.Join(root, clean))
	if err != nil {
		return nil, fmt.Errorf("external data %q: %w", location, err)
	}
	rel, err := filepath.Rel(root, path)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) || filepath.IsAbs(rel) {
		return nil, fmt.Errorf("external data %q: the location resolves to %s, outside the model's directory %s", location, path, root)
	}
	if length == -1 {
		length = want
	}
	if length != want {
		return nil, fmt.Errorf("external data %q: length %d, the dims need %d bytes", location, length, want)
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("external data: %w", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("external data: %w", err)
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("external data %q: not a regular file", location)
	}
	if offset > st.Size() || length > st.Size()-offset {
		return nil, fmt.Errorf("external data %q: bytes %d to %d lie past the file's end (%d bytes)", location, offset, offset+length, st.Size())
	}
	buf := make([]byte, length)
	if _, err := f.ReadAt(buf, offset); err != nil && !(err == io.EOF && length == 0) {
		return nil, fmt.Errorf("external data %q: %w", location, err)
	}
	return buf, nil
}

// halfToFloat converts IEEE 754 half-precision bits to float32.
func halfToFloat(h uint16) float32 {
	sign := uint32(h>>15) << 31
	exp := uint32(h>>10) & 0x1f
	mant := uint32(h) & 0x3ff
	switch {
	case exp == 0x1f:
		return math.Float32frombits(sign | 0x7f800000 | mant<<13)
	case exp == 0:
		if mant == 0 {
			return math.Float32frombits(sign)
		}
		f := float32(mant) / 1024 / 16384
		if sign != 0 {
			f = -f
		}
		return f
	}
	return math.Float32frombits(sign | (exp+112)<<23 | mant<<13)
}
