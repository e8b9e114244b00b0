package data

import (
	"bufio"
	"compress/flate"
	"compress/gzip"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
)

// DType is the element type of an IDX file, the third byte of its magic
// number.
type DType byte

// The element types the IDX format defines. Multi-byte elements are stored
// big-endian.
const (
	Uint8   DType = 0x08
	Int8    DType = 0x09
	Int16   DType = 0x0B
	Int32   DType = 0x0C
	Float32 DType = 0x0D
	Float64 DType = 0x0E
)

// Size returns the number of bytes one element of type t takes, or 0 when t
// is not an IDX element type.
func (t DType) Size() int {
	switch t {
	case Uint8, Int8:
		return 1
	case Int16:
		return 2
	case Int32, Float32:
		return 4
	case Float64:
		return 8
	}
	return 0
}

// String returns the Go-style name of t, such as "uint8", or its code in
// hexadecimal when t is not an IDX element type.
func (t DType) String() string {
	switch t {
	case Uint8:
		return "uint8"
	case Int8:
		return "int8"
	case Int16:
		return "int16"
	case Int32:
		return "int32"
	case Float32:
		return "float32"
	case Float64:
		return "float64"
	}
	return fmt.Sprintf("type 0x%02x", byte(t))
}

// IDX is the content of one IDX file: an array of Dims with elements of
// Type, row-major. Data holds the raw big-endian elements as stored in the
// file, and len(Data) is always the product of Dims times Type.Size().
type IDX struct {
	Type DType
	Dims []int
	Data []byte
}

// Errors that ReadIDX and ReadIDXFile wrap, so that callers can tell the kinds
// of damage apart with errors.Is. The full message also names the file and
// gives the numbers involved.
var (
	// ErrTruncated means the data ends too early: inside the header, or
	// inside a gzip stream that was cut off.
	ErrTruncated = errors.New("truncated")
	// ErrBadMagic means the file does not start like an IDX file.
	ErrBadMagic = errors.New("not an IDX file")
	// ErrPayloadSize means the payload is shorter than the header's
	// dimensions say, or those dimensions describe an impossible size. An
	// uncompressed file cut inside its payload reports this error, since the
	// two cannot be told apart.
	ErrPayloadSize = errors.New("payload does not match the dimensions")
	// ErrTrailingData means bytes follow the payload the header describes.
	ErrTrailingData = errors.New("trailing data")
	// ErrBadGzip means the file is gzip-compressed but the compressed data
	// is corrupt.
	ErrBadGzip = errors.New("corrupt gzip data")
)

// maxIDXPayload bounds the payload size a header may declare (16 GiB), so
// that a damaged header cannot ask for an absurd amount of memory.
const maxIDXPayload = 16 << 30

// ReadIDX reads one IDX file from r. Gzip-compressed input is recognised by
// its magic bytes and decompressed. It reads r to its end: any byte after the
// payload is an error.
func ReadIDX(r io.Reader) (*IDX, error) {
	return readIDX(r, "IDX stream")
}

// ReadIDXFile reads the IDX file at path, compressed with gzip or not. Its
// errors name path.
func ReadIDXFile(path string) (*IDX, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("data: %w", err)
	}
	defer f.Close()
	return readIDX(f, path)
}

// idxError formats an error about the IDX file name, wrapping kind.
func idxError(name string, kind error, format string, args ...any) error {
	return fmt.Errorf("data: %s: %w: %s", name, kind, fmt.Sprintf(format, args...))
}

// readIDX parses one IDX file from r; name identifies it in errors.
func readIDX(r io.Reader, name string) (*IDX, error) {
	br := bufio.NewReaderSize(r, 1<<16)
	var src io.Reader = br
	compressed := false
	if isGzip(br) {
		g, err := newGzipMembers(br)
		if err != nil {
			return nil, streamError(name, err)
		}
		src, compressed = g, true
	}
	where := ""
	if compressed {
		where = " (after decompression)"
	}

	var magic [4]byte
	n, err := readFull(src, magic[:])
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, streamError(name, err)
	}
	if (n >= 1 && magic[0] != 0) || (n >= 2 && magic[1] != 0) {
		return nil, idxError(name, ErrBadMagic, "it starts with bytes % x%s, but an IDX file starts with 00 00", magic[:min(n, 2)], where)
	}
	if n < 4 {
		if n == 0 {
			return nil, idxError(name, ErrTruncated, "it is empty%s", where)
		}
		return nil, idxError(name, ErrTruncated, "it ends after %d bytes, inside the 4-byte magic number%s", n, where)
	}
	typ, ndims := DType(magic[2]), int(magic[3])
	if typ.Size() == 0 {
		return nil, idxError(name, ErrBadMagic, "element type code 0x%02x is not one of the IDX types (0x08, 0x09, 0x0b, 0x0c, 0x0d, 0x0e)", magic[2])
	}
	if ndims == 0 {
		return nil, idxError(name, ErrBadMagic, "the header declares 0 dimensions")
	}

	raw := make([]byte, 4*ndims)
	n, err = readFull(src, raw)
	if err != nil {
		if errors.Is(err, io.EOF) {
			return nil, idxError(name, ErrTruncated, "it ends inside the header: %d of the %d bytes of its %d dimensions are there%s", n, len(raw), ndims, where)
		}
		return nil, streamError(name, err)
	}
	dims := make([]int, ndims)
	need := int64(typ.Size())
	for i := range dims {
		d := int64(binary.BigEndian.Uint32(raw[4*i:]))
		dims[i] = int(d)
		if d != 0 && need > maxIDXPayload/d {
			return nil, idxError(name, ErrPayloadSize, "dimensions %s of %s describe more than %d bytes", fmtDims(dims[:i+1]), typ, int64(maxIDXPayload))
		}
		need *= d
	}

	data, err := readPayload(src, need, 64<<20)
	if err != nil {
		if errors.Is(err, io.EOF) {
			return nil, idxError(name, ErrPayloadSize, "dimensions %s of %s need %d payload bytes, but only %d follow the header%s: the file is cut short or its header is wrong", fmtDims(dims), typ, need, len(data), where)
		}
		return nil, streamError(name, err)
	}

	// Read on past the payload: this finds trailing bytes and, for gzip,
	// makes the reader check the stream's CRC and length.
	extra, err := io.Copy(io.Discard, src)
	if extra > 0 {
		return nil, idxError(name, ErrTrailingData, "%d bytes follow the %d-byte payload that dimensions %s of %s describe%s", extra, need, fmtDims(dims), typ, where)
	}
	if err != nil {
		return nil, streamError(name, err)
	}
	return &IDX{Type: typ, Dims: dims, Data: data}, nil
}

// streamError classifies an error met while reading: a gzip stream cut
// short, corrupt compressed data, or an I/O failure.
func streamError(name string, err error) error {
	var corrupt flate.CorruptInputError
	var trailing *gzipTrailingError
	switch {
	case errors.As(err, &trailing):
		return idxError(name, ErrTrailingData, "%d bytes that are not gzip data follow the compressed stream", trailing.n)
	case errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, errGzipHeaderCut):
		return idxError(name, ErrTruncated, "the gzip stream is cut off")
	case errors.Is(err, gzip.ErrChecksum), errors.Is(err, gzip.ErrHeader), errors.As(err, &corrupt):
		return idxError(name, ErrBadGzip, "%v", err)
	}
	return fmt.Errorf("data: %s: read: %w", name, err)
}

// readFull reads len(buf) bytes like io.ReadFull, but returns io.EOF
// whenever the source ends early, so that a clean end of data can be told
// from a gzip stream that was cut off (io.ErrUnexpectedEOF).
func readFull(r io.Reader, buf []byte) (int, error) {
	n := 0
	for n < len(buf) {
		m, err := r.Read(buf[n:])
		n += m
		if err != nil {
			if n == len(buf) && errors.Is(err, io.EOF) {
				return n, nil
			}
			return n, err
		}
	}
	return n, nil
}

// readPayload reads exactly need bytes. It allocates at most step bytes
// before data arrives, then doubles its buffer as it fills, so a header that
// overstates the size costs little more memory than the file holds. On early
// end it returns what was read with io.EOF.
func readPayload(r io.Reader, need, step int64) ([]byte, error) {
	buf := make([]byte, 0, min(need, step))
	for int64(len(buf)) < need {
		if len(buf) == cap(buf) {
			grow := min(need-int64(len(buf)), int64(cap(buf)))
			bigger := make([]byte, len(buf), int64(cap(buf))+grow)
			copy(bigger, buf)
			buf = bigger
		}
		end := min(int64(cap(buf)), need)
		m, err := readFull(r, buf[len(buf):end])
		buf = buf[:len(buf)+m]
		if err != nil {
			return buf, err
		}
	}
	return buf, nil
}

// fmtDims writes dimensions as 60000×28×28.
func fmtDims(dims []int) string {
	var b strings.Builder
	for i, d := range dims {
		if i > 0 {
			b.WriteString("×")
		}
		fmt.Fprint(&b, d)
	}
	return b.String()
}

// isGzip reports whether the buffered data starts with the gzip magic bytes.
func isGzip(br *bufio.Reader) bool {
	head, _ := br.Peek(2)
	return len(head) == 2 && head[0] == 0x1f && head[1] == 0x8b
}

// errGzipHeaderCut reports a gzip member header that the data ends inside.
var errGzipHeaderCut = errors.New("gzip header cut off")

// gzipTrailingError reports n bytes after the last gzip member that do not
// start another member.
type gzipTrailingError struct{ n int64 }

func (e *gzipTrailingError) Error() string {
	return fmt.Sprintf("%d bytes that are not gzip data follow the compressed stream", e.n)
}

// gzipMembers decompresses a gzip file member by member. Unlike gzip.Reader's
// own multistream mode it tells bytes after the last member (an error
// wrapping gzipTrailingError) from a member cut short (io.ErrUnexpectedEOF).
type gzipMembers struct {
	br *bufio.Reader
	zr *gzip.Reader
}

// newGzipMembers starts reading the first member of br.
func newGzipMembers(br *bufio.Reader) (*gzipMembers, error) {
	zr, err := gzip.NewReader(br)
	if err != nil {
		return nil, gzipHeaderError(err)
	}
	zr.Multistream(false)
	return &gzipMembers{br: br, zr: zr}, nil
}

// gzipHeaderError maps the error from reading a member header: data that ends
// inside it is a cut-off stream, anything else is corrupt.
func gzipHeaderError(err error) error {
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return errGzipHeaderCut
	}
	return err
}

// Read returns decompressed bytes. At the end of a member, whose CRC and
// length gzip.Reader has then checked, it goes on with the next member if
// the input continues with one.
func (g *gzipMembers) Read(p []byte) (int, error) {
	for {
		n, err := g.zr.Read(p)
		if err != io.EOF {
			return n, err
		}
		if n > 0 {
			return n, nil
		}
		if _, perr := g.br.Peek(1); perr != nil {
			if perr == io.EOF {
				return 0, io.EOF
			}
			return 0, perr
		}
		if !isGzip(g.br) {
			n, _ := io.Copy(io.Discard, g.br)
			return 0, &gzipTrailingError{n: n}
		}
		if err := g.zr.Reset(g.br); err != nil {
			return 0, gzipHeaderError(err)
		}
		g.zr.Multistream(false)
	}
}
