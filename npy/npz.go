package npy

import (
	"archive/zip"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"sort"
	"strings"
)

// DefaultMaxBytes is the default bound on the decompressed size of one NPZ
// member: 4 GiB.
const DefaultMaxBytes = 4 << 30

// NPZ is an open .npz archive. Its members are read on demand, by name.
type NPZ struct {
	// MaxBytes bounds the size of one member once decompressed (header and
	// data); a member declaring more is refused before it is decompressed.
	// OpenNPZ and NewNPZ set it to DefaultMaxBytes.
	MaxBytes int64

	zr    *zip.Reader
	f     *os.File
	name  string // the file's path, for messages
	names []string
	files map[string]*zip.File
}

// OpenNPZ opens the .npz file at path. Close releases it.
func OpenNPZ(path string) (*NPZ, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("npy: %w", err)
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("npy: %w", err)
	}
	if !st.Mode().IsRegular() {
		f.Close()
		return nil, fmt.Errorf("npy: %s is not a regular file", path)
	}
	z, err := newNPZ(f, st.Size(), path)
	if err != nil {
		f.Close()
		return nil, err
	}
	z.f = f
	return z, nil
}

// NewNPZ reads an .npz archive of the given size from r.
func NewNPZ(r io.ReaderAt, size int64) (*NPZ, error) {
	return newNPZ(r, size, "npz archive")
}

func newNPZ(r io.ReaderAt, size int64, name string) (*NPZ, error) {
	zr, err := zip.NewReader(r, size)
	if err != nil {
		return nil, fmt.Errorf("npy: %s: not a valid .npz (zip) archive: %w", name, err)
	}
	z := &NPZ{MaxBytes: DefaultMaxBytes, zr: zr, name: name, files: map[string]*zip.File{}}
	for _, f := range zr.File {
		key := strings.TrimSuffix(f.Name, ".npy")
		if _, dup := z.files[key]; dup {
			return nil, fmt.Errorf("npy: %s: two members are named %q", name, f.Name)
		}
		z.files[key] = f
		z.names = append(z.names, key)
	}
	return z, nil
}

// Names returns the arrays' names in archive order, without the ".npy"
// each member's file name ends with (as numpy.load(...).files lists them).
func (z *NPZ) Names() []string { return slices.Clone(z.names) }

// Read reads the array called name (with or without ".npy").
func (z *NPZ) Read(name string) (*Array, error) {
	f := z.files[strings.TrimSuffix(name, ".npy")]
	if f == nil {
		return nil, fmt.Errorf("npy: %s has no array %q (it holds %s)", z.name, name, strings.Join(z.names, ", "))
	}
	a, err := z.readMember(f)
	if err != nil {
		return nil, fmt.Errorf("npy: %s, member %s: %w", z.name, f.Name, err)
	}
	return a, nil
}

func (z *NPZ) readMember(f *zip.File) (*Array, error) {
	if f.Method != zip.Store && f.Method != zip.Deflate {
		return nil, fmt.Errorf("%w: compression method %d is not stored (0) or deflated (8)", ErrFormat, f.Method)
	}
	size := f.UncompressedSize64
	limit := z.MaxBytes
	if limit <= 0 {
		limit = DefaultMaxBytes
	}
	if size > uint64(limit) {
		return nil, fmt.Errorf("%w: it expands to %d bytes, more than the %d accepted", ErrFormat, size, limit)
	}
	// Deflate cannot expand data more than about 1032 times; a member that
	// claims more is damaged or hostile.
	if f.Method == zip.Deflate && size > 2048 && size/1100 > f.CompressedSize64 {
		return nil, fmt.Errorf("%w: %d compressed bytes cannot expand to the %d declared", ErrFormat, f.CompressedSize64, size)
	}
	rc, err := f.Open()
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrFormat, err)
	}
	defer rc.Close()
	// Never read past the declared size, whatever the stream holds.
	r := io.LimitReader(rc, int64(size))
	h, err := readHeader(r)
	if err != nil {
		return nil, err
	}
	if int64(size) != h.size+h.dataBytes {
		return nil, formatErr("the member holds %d bytes but its %d-byte header describes %d bytes of data (shape %v of %v)",
			size, h.size, h.dataBytes, h.shape, h.dtype)
	}
	a, err := readData(r, h, h.dataBytes)
	if err != nil {
		return nil, err
	}
	// Reading to the end lets the zip reader verify the CRC-32.
	var one [1]byte
	if n, err := rc.Read(one[:]); n != 0 || (err != io.EOF && err != nil) {
		if err == nil || errors.Is(err, zip.ErrChecksum) || errors.Is(err, zip.ErrFormat) {
			return nil, formatErr("the member's contents do not match the archive's checksum or size (%v)", err)
		}
		return nil, err
	}
	return a, nil
}

// Close releases the file OpenNPZ opened; it does nothing for NewNPZ's.
func (z *NPZ) Close() error {
	if z.f == nil {
		return nil
	}
	err := z.f.Close()
	z.f = nil
	return err
}

// ReadNPZFile reads every array of the .npz file at path, by name.
func ReadNPZFile(path string) (map[string]*Array, error) {
	z, err := OpenNPZ(path)
	if err != nil {
		return nil, err
	}
	defer z.Close()
	out := map[string]*Array{}
	for _, n := range z.names {
		a, err := z.Read(n)
		if err != nil {
			return nil, err
		}
		out[n] = a
	}
	return out, nil
}

// NPZWriter writes an .npz archive, one array at a time.
type NPZWriter struct {
	zw       *zip.Writer
	compress bool
	seen     map[string]bool
	err      error
}

// NewNPZWriter returns a writer of an .npz archive to w, whose members are
// deflated (as numpy.savez_compressed writes them) when compress is true and
// stored (as numpy.savez) otherwise. Close finishes the archive.
func NewNPZWriter(w io.Writer, compress bool) *NPZWriter {
	return &NPZWriter{zw: zip.NewWriter(w), compress: compress, seen: map[string]bool{}}
}

// Add writes a as the member name + ".npy".
func (z *NPZWriter) Add(name string, a *Array) error {
	if z.err != nil {
		return z.err
	}
	if name == "" || strings.ContainsAny(name, "/\\") || strings.HasSuffix(name, ".npy") {
		return fmt.Errorf("npy: array name %q must be non-empty, without '/' or '\\', and without the .npy suffix", name)
	}
	if z.seen[name] {
		return fmt.Errorf("npy: array %q is already in the archive", name)
	}
	if err := a.Check(); err != nil {
		return fmt.Errorf("npy: array %q: %w", name, err)
	}
	var buf bytes.Buffer
	if err := Write(&buf, a); err != nil {
		return fmt.Errorf("npy: array %q: %w", name, err)
	}
	method := zip.Store
	if z.compress {
		method = zip.Deflate
	}
	w, err := z.zw.CreateHeader(&zip.FileHeader{Name: name + ".npy", Method: method})
	if err == nil {
		_, err = w.Write(buf.Bytes())
	}
	if err != nil {
		z.err = fmt.Errorf("npy: writing array %q: %w", name, err)
		return z.err
	}
	z.seen[name] = true
	return nil
}

// Close finishes the archive; it does not close the underlying writer.
func (z *NPZWriter) Close() error {
	if z.err != nil {
		return z.err
	}
	if err := z.zw.Close(); err != nil {
		return fmt.Errorf("npy: finishing the archive: %w", err)
	}
	return nil
}

// WriteNPZFile writes the arrays to an .npz file at path, in the order of
// their names, deflated when compress is true.
func WriteNPZFile(path string, arrays map[string]*Array, compress bool) error {
	names := make([]string, 0, len(arrays))
	for n := range arrays {
		names = append(names, n)
	}
	sort.Strings(names)
	var buf bytes.Buffer
	zw := NewNPZWriter(&buf, compress)
	for _, n := range names {
		if err := zw.Add(n, arrays[n]); err != nil {
			return err
		}
	}
	if err := zw.Close(); err != nil {
		return err
	}
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		return fmt.Errorf("npy: %w", err)
	}
	return nil
}
