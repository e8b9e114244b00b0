package npy

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"strconv"
	"strings"
	"unicode/utf8"
)

// magic opens every .npy file.
const magic = "\x93NUMPY"

// MaxHeaderBytes bounds the header a reader accepts. NumPy writes headers of
// a few hundred bytes; its own reader refuses more than 10000 by default.
const MaxHeaderBytes = 1 << 20

// ErrFormat is wrapped by every error about a malformed file.
var ErrFormat = errors.New("npy: not a valid .npy file")

// formatErr returns an error wrapping ErrFormat with a description.
func formatErr(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrFormat, fmt.Sprintf(format, args...))
}

// header is what a .npy header says.
type header struct {
	dtype     DType
	bigEndian bool
	fortran   bool
	shape     []int
	n         int   // elements
	dataBytes int64 // n · dtype size
	size      int64 // bytes of magic, version, length and header
}

// readHeader reads the magic string, the version and the header dictionary.
func readHeader(r io.Reader) (*header, error) {
	var pre [8]byte
	if _, err := io.ReadFull(r, pre[:]); err != nil {
		return nil, formatErr("the file ends within its first 8 bytes (%v)", err)
	}
	if string(pre[:6]) != magic {
		return nil, formatErr("it does not start with \\x93NUMPY")
	}
	major, minor := pre[6], pre[7]
	var hlen int64
	size := int64(8)
	switch major {
	case 1:
		var b [2]byte
		if _, err := io.ReadFull(r, b[:]); err != nil {
			return nil, formatErr("the file ends within its header length (%v)", err)
		}
		hlen = int64(binary.LittleEndian.Uint16(b[:]))
		size += 2
	case 2, 3:
		var b [4]byte
		if _, err := io.ReadFull(r, b[:]); err != nil {
			return nil, formatErr("the file ends within its header length (%v)", err)
		}
		hlen = int64(binary.LittleEndian.Uint32(b[:]))
		size += 4
	default:
		return nil, formatErr("format version %d.%d is not 1.0, 2.0 or 3.0", major, minor)
	}
	if minor != 0 {
		return nil, formatErr("format version %d.%d is not 1.0, 2.0 or 3.0", major, minor)
	}
	if hlen > MaxHeaderBytes {
		return nil, formatErr("header of %d bytes is longer than the %d accepted", hlen, MaxHeaderBytes)
	}
	text := make([]byte, hlen)
	if _, err := io.ReadFull(r, text); err != nil {
		return nil, formatErr("the file ends within its %d-byte header (%v)", hlen, err)
	}
	size += hlen
	var s string
	if major == 3 {
		if !utf8.Valid(text) {
			return nil, formatErr("version 3.0 header is not valid UTF-8")
		}
		s = string(text)
	} else {
		// Latin-1: every byte is one code point.
		rs := make([]rune, len(text))
		for i, b := range text {
			rs[i] = rune(b)
		}
		s = string(rs)
	}
	h, err := parseHeader(s)
	if err != nil {
		return nil, err
	}
	h.size = size
	return h, nil
}

// parseHeader reads the Python dictionary literal of a header.
func parseHeader(s string) (*header, error) {
	p := &pyParser{s: s}
	v, err := p.value(0)
	if err != nil {
		return nil, formatErr("header %q: %v", clip(s), err)
	}
	p.space()
	if p.i != len(p.s) {
		return nil, formatErr("header %q: unexpected text after the dictionary", clip(s))
	}
	d, ok := v.(map[string]any)
	if !ok {
		return nil, formatErr("header %q is not a dictionary", clip(s))
	}
	if len(d) != 3 {
		return nil, formatErr("header %q must have exactly the keys descr, fortran_order and shape", clip(s))
	}
	h := &header{}
	descr, ok := d["descr"].(string)
	if !ok {
		return nil, formatErr("header %q: descr is not a string (structured dtypes are not supported)", clip(s))
	}
	if h.dtype, h.bigEndian, err = parseDescr(descr); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrFormat, err)
	}
	if h.fortran, ok = d["fortran_order"].(bool); !ok {
		return nil, formatErr("header %q: fortran_order is not True or False", clip(s))
	}
	tup, ok := d["shape"].(pyTuple)
	if !ok {
		return nil, formatErr("header %q: shape is not a tuple", clip(s))
	}
	for _, x := range tup {
		n, ok := x.(int64)
		if !ok || n < 0 || n > math.MaxInt {
			return nil, formatErr("header %q: shape holds %v, not a non-negative int", clip(s), x)
		}
		h.shape = append(h.shape, int(n))
	}
	if h.shape == nil {
		h.shape = []int{}
	}
	if h.n, err = elements(h.shape); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrFormat, err)
	}
	nb, ok := mulCheck(h.n, h.dtype.Size())
	if !ok {
		return nil, formatErr("shape %v of %v holds more bytes than an int counts", h.shape, h.dtype)
	}
	h.dataBytes = int64(nb)
	return h, nil
}

// clip shortens a header for messages.
func clip(s string) string {
	if len(s) > 200 {
		return s[:200] + "…"
	}
	return s
}

// pyTuple is a parsed Python tuple.
type pyTuple []any

// pyParser reads the subset of Python literals headers use: dictionaries
// with string keys, strings, True, False, None, integers, tuples and lists.
type pyParser struct {
	s string
	i int
}

const maxPyDepth = 16

func (p *pyParser) space() {
	for p.i < len(p.s) && strings.IndexByte(" \t\r\n", p.s[p.i]) >= 0 {
		p.i++
	}
}

func (p *pyParser) value(depth int) (any, error) {
	if depth > maxPyDepth {
		return nil, fmt.Errorf("nested too deeply")
	}
	p.space()
	if p.i >= len(p.s) {
		return nil, fmt.Errorf("ends where a value should be")
	}
	switch c := p.s[p.i]; {
	case c == '{':
		p.i++
		d := map[string]any{}
		for {
			p.space()
			if p.i < len(p.s) && p.s[p.i] == '}' {
				p.i++
				return d, nil
			}
			k, err := p.value(depth + 1)
			if err != nil {
				return nil, err
			}
			key, ok := k.(string)
			if !ok {
				return nil, fmt.Errorf("dictionary key %v is not a string", k)
			}
			if _, dup := d[key]; dup {
				return nil, fmt.Errorf("key %q appears twice", key)
			}
			p.space()
			if p.i >= len(p.s) || p.s[p.i] != ':' {
				return nil, fmt.Errorf("missing ':' after key %q", key)
			}
			p.i++
			v, err := p.value(depth + 1)
			if err != nil {
				return nil, err
			}
			d[key] = v
			p.space()
			if p.i < len(p.s) && p.s[p.i] == ',' {
				p.i++
			} else if p.i >= len(p.s) || p.s[p.i] != '}' {
				return nil, fmt.Errorf("missing ',' or '}' after the value of %q", key)
			}
		}
	case c == '(' || c == '[':
		end := byte(')')
		if c == '[' {
			end = ']'
		}
		p.i++
		var items pyTuple
		for {
			p.space()
			if p.i < len(p.s) && p.s[p.i] == end {
				p.i++
				if items == nil {
					items = pyTuple{}
				}
				if c == '[' {
					return []any(items), nil
				}
				return items, nil
			}
			v, err := p.value(depth + 1)
			if err != nil {
				return nil, err
			}
			items = append(items, v)
			p.space()
			if p.i < len(p.s) && p.s[p.i] == ',' {
				p.i++
			} else if p.i >= len(p.s) || p.s[p.i] != end {
				return nil, fmt.Errorf("missing ',' or %q in a sequence", end)
			}
		}
	case c == '\'' || c == '"':
		p.i++
		var b strings.Builder
		for p.i < len(p.s) && p.s[p.i] != c {
			if p.s[p.i] == '\\' {
				return nil, fmt.Errorf("escapes in strings are not supported")
			}
			b.WriteByte(p.s[p.i])
			p.i++
		}
		if p.i >= len(p.s) {
			return nil, fmt.Errorf("unterminated string")
		}
		p.i++
		return b.String(), nil
	case c == '-' || c >= '0' && c <= '9':
		j := p.i
		if c == '-' {
			j++
		}
		for j < len(p.s) && p.s[j] >= '0' && p.s[j] <= '9' {
			j++
		}
		n, err := strconv.ParseInt(p.s[p.i:j], 10, 64)
		if err != nil {
			return nil, fmt.Errorf("integer %q: %v", p.s[p.i:j], err)
		}
		if j < len(p.s) && (p.s[j] == 'L' || p.s[j] == 'l') { // Python 2's long
			j++
		}
		p.i = j
		return n, nil
	}
	for _, w := range []struct {
		word string
		v    any
	}{{"True", true}, {"False", false}, {"None", nil}} {
		if strings.HasPrefix(p.s[p.i:], w.word) {
			p.i += len(w.word)
			return w.v, nil
		}
	}
	return nil, fmt.Errorf("unexpected %q", p.s[p.i:min(p.i+10, len(p.s))])
}

// Read reads one .npy array from r, consuming exactly its bytes (so several
// arrays written one after another read in turn).
func Read(r io.Reader) (*Array, error) {
	h, err := readHeader(r)
	if err != nil {
		return nil, err
	}
	return readData(r, h, -1)
}

// ReadBytes reads a .npy file held in b, which must hold nothing after the
// array.
func ReadBytes(b []byte) (*Array, error) {
	r := bytes.NewReader(b)
	h, err := readHeader(r)
	if err != nil {
		return nil, err
	}
	if rest := int64(r.Len()); rest != h.dataBytes {
		return nil, dataSizeErr(h, rest)
	}
	return readData(r, h, h.dataBytes)
}

// ReadFile reads the .npy file at path, which must hold nothing after the
// array.
func ReadFile(path string) (*Array, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("npy: %w", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("npy: %w", err)
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("npy: %s is not a regular file", path)
	}
	br := bufio.NewReader(f)
	h, err := readHeader(br)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if rest := st.Size() - h.size; rest != h.dataBytes {
		return nil, fmt.Errorf("%s: %w", path, dataSizeErr(h, rest))
	}
	a, err := readData(br, h, h.dataBytes)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return a, nil
}

func dataSizeErr(h *header, got int64) error {
	if got < h.dataBytes {
		return formatErr("shape %v of %v needs %d bytes of data, the file holds %d", h.shape, h.dtype, h.dataBytes, max(got, 0))
	}
	return formatErr("shape %v of %v needs %d bytes of data, the file holds %d more after them", h.shape, h.dtype, h.dataBytes, got-h.dataBytes)
}

// readData reads the h.dataBytes bytes of data after a header. known is
// the number of bytes the caller knows to be there (-1 when unknown): the
// buffer then grows only as data arrives.
func readData(r io.Reader, h *header, known int64) (*Array, error) {
	var raw []byte
	if known >= h.dataBytes || h.dataBytes <= 1<<20 {
		raw = make([]byte, h.dataBytes)
		if n, err := io.ReadFull(r, raw); err != nil {
			return nil, dataSizeErr(h, int64(n))
		}
	} else {
		var buf bytes.Buffer
		n, err := io.CopyN(&buf, r, h.dataBytes)
		if err != nil {
			if err == io.EOF {
				return nil, dataSizeErr(h, n)
			}
			return nil, fmt.Errorf("npy: reading %d bytes of data: %w", h.dataBytes, err)
		}
		raw = buf.Bytes()
	}
	if h.bigEndian {
		swapBytes(raw, h.dtype.Size())
	}
	if h.fortran && len(h.shape) > 1 {
		raw = fortranToC(raw, h.shape, h.dtype.Size())
	}
	a := &Array{DType: h.dtype, Shape: h.shape, Data: decode(h.dtype, raw, h.n)}
	return a, nil
}

// swapBytes reverses the bytes of every size-byte element of b.
func swapBytes(b []byte, size int) {
	if size == 1 {
		return
	}
	for i := 0; i+size <= len(b); i += size {
		e := b[i : i+size]
		for j, k := 0, size-1; j < k; j, k = j+1, k-1 {
			e[j], e[k] = e[k], e[j]
		}
	}
}

// fortranToC reorders column-major elements of the given shape into row-major
// order.
func fortranToC(src []byte, shape []int, size int) []byte {
	dst := make([]byte, len(src))
	if len(src) == 0 {
		return dst
	}
	r := len(shape)
	fstride := make([]int, r) // in elements
	s := 1
	for k := range r {
		fstride[k] = s
		s *= shape[k]
	}
	idx := make([]int, r)
	off := 0 // Fortran offset of idx
	for o := 0; o < len(dst); o += size {
		copy(dst[o:o+size], src[off*size:off*size+size])
		for k := r - 1; k >= 0; k-- {
			idx[k]++
			off += fstride[k]
			if idx[k] < shape[k] {
				break
			}
			off -= idx[k] * fstride[k]
			idx[k] = 0
		}
	}
	return dst
}

// decode turns n little-endian elements into the dtype's slice.
func decode(dt DType, raw []byte, n int) any {
	le := binary.LittleEndian
	switch dt {
	case Bool:
		v := make([]bool, n)
		for i := range v {
			v[i] = raw[i] != 0
		}
		return v
	case Int8:
		v := make([]int8, n)
		for i := range v {
			v[i] = int8(raw[i])
		}
		return v
	case Uint8:
		return raw[:n:n]
	case Int16:
		v := make([]int16, n)
		for i := range v {
			v[i] = int16(le.Uint16(raw[2*i:]))
		}
		return v
	case Uint16:
		v := make([]uint16, n)
		for i := range v {
			v[i] = le.Uint16(raw[2*i:])
		}
		return v
	case Float16:
		v := make([]Half, n)
		for i := range v {
			v[i] = Half(le.Uint16(raw[2*i:]))
		}
		return v
	case Int32:
		v := make([]int32, n)
		for i := range v {
			v[i] = int32(le.Uint32(raw[4*i:]))
		}
		return v
	case Uint32:
		v := make([]uint32, n)
		for i := range v {
			v[i] = le.Uint32(raw[4*i:])
		}
		return v
	case Float32:
		v := make([]float32, n)
		for i := range v {
			v[i] = math.Float32frombits(le.Uint32(raw[4*i:]))
		}
		return v
	case Int64:
		v := make([]int64, n)
		for i := range v {
			v[i] = int64(le.Uint64(raw[8*i:]))
		}
		return v
	case Uint64:
		v := make([]uint64, n)
		for i := range v {
			v[i] = le.Uint64(raw[8*i:])
		}
		return v
	case Float64:
		v := make([]float64, n)
		for i := range v {
			v[i] = math.Float64frombits(le.Uint64(raw[8*i:]))
		}
		return v
	}
	return nil
}

// encode returns the little-endian bytes of an array's elements.
func encode(a *Array) []byte {
	le := binary.LittleEndian
	out := make([]byte, 0, sliceLen(a.Data)*a.DType.Size())
	switch v := a.Data.(type) {
	case []bool:
		for _, x := range v {
			b := byte(0)
			if x {
				b = 1
			}
			out = append(out, b)
		}
	case []int8:
		for _, x := range v {
			out = append(out, byte(x))
		}
	case []uint8:
		out = append(out, v...)
	case []int16:
		for _, x := range v {
			out = le.AppendUint16(out, uint16(x))
		}
	case []uint16:
		for _, x := range v {
			out = le.AppendUint16(out, x)
		}
	case []Half:
		for _, x := range v {
			out = le.AppendUint16(out, uint16(x))
		}
	case []int32:
		for _, x := range v {
			out = le.AppendUint32(out, uint32(x))
		}
	case []uint32:
		for _, x := range v {
			out = le.AppendUint32(out, x)
		}
	case []float32:
		for _, x := range v {
			out = le.AppendUint32(out, math.Float32bits(x))
		}
	case []int64:
		for _, x := range v {
			out = le.AppendUint64(out, uint64(x))
		}
	case []uint64:
		for _, x := range v {
			out = le.AppendUint64(out, x)
		}
	case []float64:
		for _, x := range v {
			out = le.AppendUint64(out, math.Float64bits(x))
		}
	}
	return out
}

// headerBytes returns the magic string, version, length and padded header
// of a in the given major version (1, 2 or 3), or an error when the header
// does not fit version 1.0's length field.
func headerBytes(a *Array, major int) ([]byte, error) {
	var b strings.Builder
	fmt.Fprintf(&b, "{'descr': '%s', 'fortran_order': False, 'shape': (", a.DType.Descr())
	for i, d := range a.Shape {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(strconv.Itoa(d))
	}
	if len(a.Shape) == 1 {
		b.WriteByte(',')
	}
	b.WriteString("), }")
	dict := b.String()
	pre := 10
	if major > 1 {
		pre = 12
	}
	// Pad with spaces and end with a newline so that the data starts at a
	// multiple of 64 bytes, as NumPy does.
	total := pre + len(dict) + 1
	pad := (64 - total%64) % 64
	hlen := len(dict) + pad + 1
	if major == 1 && hlen > math.MaxUint16 {
		return nil, fmt.Errorf("npy: a header of %d bytes does not fit format 1.0", hlen)
	}
	out := make([]byte, 0, pre+hlen)
	out = append(out, magic...)
	out = append(out, byte(major), 0)
	if major == 1 {
		out = binary.LittleEndian.AppendUint16(out, uint16(hlen))
	} else {
		out = binary.LittleEndian.AppendUint32(out, uint32(hlen))
	}
	out = append(out, dict...)
	out = append(out, bytes.Repeat([]byte{' '}, pad)...)
	return append(out, '\n'), nil
}

// Write writes a as a .npy file: format 1.0, or 2.0 when its header needs
// more than 65535 bytes, little-endian and in C order.
func Write(w io.Writer, a *Array) error {
	if err := a.Check(); err != nil {
		return err
	}
	major := 1
	if _, err := headerBytes(a, 1); err != nil {
		major = 2
	}
	return WriteVersion(w, a, major)
}

// WriteVersion writes a as a .npy file of format version major.0 (1, 2 or
// 3).
func WriteVersion(w io.Writer, a *Array, major int) error {
	if err := a.Check(); err != nil {
		return err
	}
	if major < 1 || major > 3 {
		return fmt.Errorf("npy: format version %d.0 is not 1.0, 2.0 or 3.0", major)
	}
	h, err := headerBytes(a, major)
	if err != nil {
		return err
	}
	if _, err := w.Write(h); err != nil {
		return fmt.Errorf("npy: writing the header: %w", err)
	}
	if _, err := w.Write(encode(a)); err != nil {
		return fmt.Errorf("npy: writing the data: %w", err)
	}
	return nil
}

// WriteFile writes a to a .npy file at path.
func WriteFile(path string, a *Array) error {
	var buf bytes.Buffer
	if err := Write(&buf, a); err != nil {
		return err
	}
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		return fmt.Errorf("npy: %w", err)
	}
	return nil
}
