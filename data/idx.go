package data

import (
	"bufio"
	"compress/flate"
	"compress/gzip"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
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
	// dimensions say, or those dimensions describe an impossible size, or
	// more than a gzip file of its size can decompress to. An uncompressed
	// file cut inside its payload reports this error, since the two cannot
	// be told apart.
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

// idxChunk is the first buffer the payload of a compressed file or a stream
// is read into; the buffer then doubles as bytes arrive, so memory follows
// what the input holds, not what its header claims.
const idxChunk = 256 << 10

// maxTrailing is how many bytes after the payload are counted before reading
// stops: an error says "more than" this many rather than decompressing an
// unbounded tail.
const maxTrailing = 1 << 20

// maxDeflateRatio bounds how much deflate can expand its input: a run of at
// most 258 bytes per 2 bits. A gzip file of S bytes decompresses to at most
// maxDeflateRatio×S bytes.
const maxDeflateRatio = 1032

// ReadIDX reads one IDX file from r. Gzip-compressed input is recognised by
// its magic bytes and decompressed. It reads r to the end of the payload the
// header describes and checks that nothing follows; memory grows only as
// payload bytes arrive, however large the header says the payload is.
func ReadIDX(r io.Reader) (*IDX, error) {
	return readIDX(r, "IDX stream", -1)
}

// ReadIDXFile reads the IDX file at path, compressed with gzip or not. Its
// errors name path. The path must be a regular file or a link to one; others
// (a directory, a named pipe, a device, a dangling link) are reported with
// ErrUnusable before they are opened. The file's size is checked against the
// header before the payload is read: an uncompressed file must be exactly as
// long as its header says, and a compressed one must be long enough to hold
// that much data.
func ReadIDXFile(path string) (*IDX, error) {
	f, size, err := openRegular(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return readIDX(f, path, size)
}

// idxError formats an error about the IDX file name, wrapping kind.
func idxError(name string, kind error, format string, args ...any) error {
	return fmt.Errorf("data: %s: %w: %s", name, kind, fmt.Sprintf(format, args...))
}

// readIDX parses one IDX file from r; name identifies it in errors, and size
// is r's length in bytes, or -1 when unknown.
func readIDX(r io.Reader, name string, size int64) (*IDX, error) {
	x, err := openIDX(r, name, size)
	if err != nil {
		return nil, err
	}
	data, err := x.payload()
	if err != nil {
		return nil, err
	}
	return &IDX{Type: x.typ, Dims: x.dims, Data: data}, nil
}

// idxFile is an IDX file whose header has been read: what the header
// declares, and the source of the bytes that follow it.
type idxFile struct {
	name       string
	size       int64 // bytes in the file as stored, or -1 when unknown
	compressed bool
	src        *countingReader // the file's bytes after any decompression

	typ       DType
	dims      []int
	need      int64 // payload bytes the dimensions describe
	headerLen int64 // 4 + 4×len(dims)
}

// countingReader counts the bytes read through it.
type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

// where says, for messages about sizes, that they count decompressed bytes.
func (x *idxFile) where() string {
	if x.compressed {
		return " (after decompression)"
	}
	return ""
}

// openIDX reads the header of an IDX file from r and checks it; size is r's
// length in bytes, or -1 when unknown. The payload is left unread.
func openIDX(r io.Reader, name string, size int64) (*idxFile, error) {
	if size == 0 {
		// Files of some virtual file systems report 0 but hold data.
		size = -1
	}
	br := bufio.NewReaderSize(r, 1<<16)
	x := &idxFile{name: name, size: size, src: &countingReader{r: br}}
	if head, _ := br.Peek(2); len(head) == 1 && head[0] == 0x1f {
		return nil, idxError(name, ErrTruncated, "it holds the single byte 1f, the start of a gzip header: the gzip stream is cut off")
	}
	if isGzip(br) {
		g, err := newGzipMembers(br)
		if err != nil {
			return nil, x.streamError(err)
		}
		x.src.r, x.compressed = g, true
	}
	where := x.where()

	var magic [4]byte
	n, err := readFull(x.src, magic[:])
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, x.streamError(err)
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
	n, err = readFull(x.src, raw)
	if err != nil {
		if errors.Is(err, io.EOF) {
			return nil, idxError(name, ErrTruncated, "it ends inside the header: %d of the %d bytes of its %d dimensions are there%s", n, len(raw), ndims, where)
		}
		return nil, x.streamError(err)
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
	x.typ, x.dims, x.need, x.headerLen = typ, dims, need, int64(4+4*ndims)
	return x, nil
}

// describe names what the header declares, as "dimensions 60000×28×28 of
// uint8".
func (x *idxFile) describe() string {
	return fmt.Sprintf("dimensions %s of %s", fmtDims(x.dims), x.typ)
}

// payload reads the payload the header describes and checks that nothing
// follows it. Before reading it checks the declared size against the file's
// size when that is known, and it allocates only as bytes arrive.
func (x *idxFile) payload() ([]byte, error) {
	step := int64(idxChunk)
	if x.size >= 0 {
		want := x.headerLen + x.need
		switch {
		case x.compressed && x.need > maxDeflateRatio*x.size:
			return nil, idxError(x.name, ErrPayloadSize, "%s need %d payload bytes, but a gzip file of %d bytes decompresses to at most %d: the file is cut short or its header is wrong",
				x.describe(), x.need, x.size, maxDeflateRatio*x.size)
		case !x.compressed && x.size < want:
			return nil, idxError(x.name, ErrPayloadSize, "%s need %d payload bytes, but only %d follow the header: the file is %d bytes, where the header makes it %d; the file is cut short or its header is wrong",
				x.describe(), x.need, x.size-x.headerLen, x.size, want)
		case !x.compressed && x.size > want:
			return nil, idxError(x.name, ErrTrailingData, "%d bytes follow the %d-byte payload that %s describe: the file is %d bytes, where the header makes it %d",
				x.size-want, x.need, x.describe(), x.size, want)
		case !x.compressed:
			// The bytes are on disk: read them into one buffer.
			step = x.need
		}
	}

	data, err := readPayload(x.src, x.need, step)
	if err != nil {
		if errors.Is(err, io.EOF) {
			return nil, idxError(x.name, ErrPayloadSize, "%s need %d payload bytes, but only %d follow the header%s: the file is cut short or its header is wrong",
				x.describe(), x.need, len(data), x.where())
		}
		return nil, x.streamError(err)
	}

	// Read on past the payload, but not far: this finds trailing bytes and,
	// for gzip, makes the reader check the stream's CRC and length.
	extra, err := io.CopyN(io.Discard, x.src, maxTrailing+1)
	switch {
	case extra > maxTrailing:
		return nil, idxError(x.name, ErrTrailingData, "more than %d bytes follow the %d-byte payload that %s describe%s", int64(maxTrailing), x.need, x.describe(), x.where())
	case extra > 0:
		return nil, idxError(x.name, ErrTrailingData, "%d bytes follow the %d-byte payload that %s describe%s", extra, x.need, x.describe(), x.where())
	case err != nil && !errors.Is(err, io.EOF):
		return nil, x.streamError(err)
	}
	return data, nil
}

// streamError classifies an error met while reading: a gzip stream cut
// short, corrupt compressed data, or an I/O failure.
func (x *idxFile) streamError(err error) error {
	var corrupt flate.CorruptInputError
	var trailing *gzipTrailingError
	switch {
	case errors.As(err, &trailing):
		return idxError(x.name, ErrTrailingData, "%s", trailing)
	case errors.Is(err, errGzipHeaderCut) && x.src.n == 0:
		return idxError(x.name, ErrTruncated, "the gzip stream is cut off inside its header")
	case errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, errGzipHeaderCut):
		msg := fmt.Sprintf("the gzip stream is cut off after %d bytes of decompressed data", x.src.n)
		if x.dims != nil {
			msg += fmt.Sprintf(", where the header's %s make %d", x.describe(), x.headerLen+x.need)
		}
		return idxError(x.name, ErrTruncated, "%s", msg)
	case errors.Is(err, gzip.ErrChecksum), errors.Is(err, gzip.ErrHeader), errors.As(err, &corrupt):
		return idxError(x.name, ErrBadGzip, "%v", err)
	}
	return fmt.Errorf("data: %s: read: %w", x.name, err)
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
// overstates the size costs little more memory than the input holds. On
// early end it returns what was read with io.EOF.
func readPayload(r io.Reader, need, step int64) ([]byte, error) {
	buf := make([]byte, 0, min(need, max(step, 1)))
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
// start another member. Counting stops after maxTrailing: n is then
// maxTrailing+1.
type gzipTrailingError struct{ n int64 }

func (e *gzipTrailingError) Error() string {
	if e.n > maxTrailing {
		return fmt.Sprintf("more than %d bytes that are not gzip data follow the compressed stream", int64(maxTrailing))
	}
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
			n, _ := io.CopyN(io.Discard, g.br, maxTrailing+1)
			return 0, &gzipTrailingError{n: n}
		}
		if err := g.zr.Reset(g.br); err != nil {
			return 0, gzipHeaderError(err)
		}
		g.zr.Multistream(false)
	}
}
