package data

import (
	"bytes"
	"compress/gzip"
	"errors"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"sync"
	"testing"

	"github.com/tartanml/tartan/internal/fuzzcheck"
)

// idxKinds are the errors every failure of ReadIDX on in-memory input wraps
// one of.
var idxKinds = []error{ErrTruncated, ErrBadMagic, ErrPayloadSize, ErrTrailingData, ErrBadGzip}

// idxKind returns the sentinel err wraps, or nil.
func idxKind(err error) error {
	for _, k := range idxKinds {
		if errors.Is(err, k) {
			return k
		}
	}
	return nil
}

// realIDXHeads returns, for each file of the installed Fashion-MNIST, its
// first compressed bytes and a small valid IDX file made of its first
// decompressed bytes with the sample count set to what they hold. It returns
// nothing when the data set is not installed.
func realIDXHeads(t testing.TB) (compressed, raw [][]byte) {
	for _, name := range []string{trainImagesIDX, trainLabelsIDX, testImagesIDX, testLabelsIDX} {
		f, err := os.Open(filepath.Join(debianFashion, name))
		if err != nil {
			continue
		}
		head := make([]byte, 2048)
		n, _ := io.ReadFull(f, head)
		compressed = append(compressed, head[:n])
		if _, err := f.Seek(0, io.SeekStart); err != nil {
			t.Fatal(err)
		}
		zr, err := gzip.NewReader(f)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		plain := make([]byte, 16+3*784)
		n, _ = io.ReadFull(zr, plain)
		f.Close()
		plain = plain[:n]
		if len(plain) < 8 {
			continue
		}
		// Keep the header's type and dimensions but set the count to 3
		// samples (images) or 100 (labels), and cut the payload to match.
		switch plain[3] {
		case 3:
			plain[4], plain[5], plain[6], plain[7] = 0, 0, 0, 3
			raw = append(raw, plain[:min(len(plain), 16+3*784)])
		case 1:
			plain[4], plain[5], plain[6], plain[7] = 0, 0, 0, 100
			raw = append(raw, plain[:min(len(plain), 8+100)])
		}
	}
	return compressed, raw
}

// generatedIDX returns small IDX files, valid and damaged, of each kind.
func generatedIDX(t testing.TB) [][]byte {
	u8 := idxBytes(Uint8, []int{2, 2, 3}, []byte{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 255})
	i16 := idxBytes(Int16, []int{3}, []byte{0, 1, 0xff, 0xfe, 0x7f, 0xff})
	f64 := idxBytes(Float64, []int{1, 1}, []byte{0x3f, 0xf0, 0, 0, 0, 0, 0, 0})
	images, labels := smallIDXSet(2, 28, 28, 0)
	return [][]byte{
		u8, i16, f64, images, labels,
		idxBytes(Uint8, []int{0, 28, 28}, nil),
		idxBytes(Int32, []int{1 << 20, 1 << 20}, nil),
		u8[:10], u8[:len(u8)-1], append(bytes.Clone(u8), 9),
		{}, {0}, {0, 0, 8}, {0, 0, 8, 0}, {0x1f},
	}
}

// FuzzReadIDX feeds arbitrary bytes, plain or gzip-compressed, to the IDX
// reader. It must not panic or allocate beyond the bound; every failure must
// be one of the documented kinds; a reader told the input's size must agree
// with one that is not; and what it accepts must survive writing it back as
// an IDX file (byte for byte, when the input was not compressed).
func FuzzReadIDX(f *testing.F) {
	for _, b := range generatedIDX(f) {
		f.Add(b)
		f.Add(gzipBytes(f, b))
	}
	u8 := idxBytes(Uint8, []int{2, 3}, []byte{1, 2, 3, 4, 5, 6})
	f.Add(append(gzipBytes(f, u8[:5]), gzipBytes(f, u8[5:])...))
	gz := gzipBytes(f, u8)
	f.Add(gz[:len(gz)-4])
	f.Add(append(bytes.Clone(gz), 'x'))
	compressed, raw := realIDXHeads(f)
	for _, b := range compressed {
		f.Add(b)
	}
	for _, b := range raw {
		f.Add(b)
		f.Add(gzipBytes(f, b))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		fuzzcheck.Bounded(t, fuzzcheck.DefaultLimit, func() {
			x, err := ReadIDX(bytes.NewReader(in))
			sized, serr := readIDX(bytes.NewReader(in), "IDX file", int64(len(in)))
			if err != nil {
				if idxKind(err) == nil {
					t.Fatalf("error of no documented kind: %v", err)
				}
				if serr == nil {
					t.Fatalf("accepted when its size is known, but not otherwise: %v", err)
				}
				if !isGzipBytes(in) && idxKind(err) != idxKind(serr) {
					t.Fatalf("errors of different kinds with and without the size: %v / %v", err, serr)
				}
				return
			}
			if serr != nil {
				t.Fatalf("rejected when its size (%d) is known: %v", len(in), serr)
			}
			if !reflect.DeepEqual(x, sized) {
				t.Fatal("different results with and without the size")
			}
			checkIDXRoundTrip(t, x, in)
		})
	})
}

// FuzzReadIDXGzip compresses arbitrary bytes, in one or two gzip members,
// and checks that the reader treats the compressed file exactly as it
// treats the plain one: the same result, or an error of the same kind.
func FuzzReadIDXGzip(f *testing.F) {
	for i, b := range generatedIDX(f) {
		f.Add(b, uint16(i*3), int8(i%10))
	}
	_, raw := realIDXHeads(f)
	for i, b := range raw {
		f.Add(b, uint16(i*500), int8(-1))
	}
	f.Fuzz(func(t *testing.T, plain []byte, split uint16, level int8) {
		if len(plain) > 0 && plain[0] == 0x1f {
			// The plain reader takes such input for (part of) a gzip
			// stream, so the two readers see different files.
			return
		}
		lvl := int(uint8(level))%11 - 1 // -1 (default) to 9
		k := int(split) % (len(plain) + 1)
		var gz bytes.Buffer
		gz.Write(gzipReused(t, plain[:k], lvl))
		gz.Write(gzipReused(t, plain[k:], lvl))
		fuzzcheck.Bounded(t, fuzzcheck.DefaultLimit, func() {
			x, err := ReadIDX(bytes.NewReader(plain))
			y, gerr := readIDX(bytes.NewReader(gz.Bytes()), "IDX file", int64(gz.Len()))
			switch {
			case err == nil && gerr == nil:
				if !reflect.DeepEqual(x, y) {
					t.Fatal("different results for the plain and the compressed file")
				}
				checkIDXRoundTrip(t, x, plain)
			case (err == nil) != (gerr == nil):
				t.Fatalf("plain: %v; compressed: %v", err, gerr)
			case idxKind(err) != idxKind(gerr) || idxKind(err) == nil:
				t.Fatalf("errors of different kinds: plain: %v; compressed: %v", err, gerr)
			}
		})
	})
}

// gzipWriters holds a gzip writer per compression level, -1 to 9, for
// gzipReused: a new writer costs far more than the small inputs it
// compresses.
var gzipWriters struct {
	sync.Mutex
	w [11]*gzip.Writer
}

// gzipReused compresses b as one gzip member at level (-1 to 9).
func gzipReused(t *testing.T, b []byte, level int) []byte {
	t.Helper()
	gzipWriters.Lock()
	defer gzipWriters.Unlock()
	var buf bytes.Buffer
	zw := gzipWriters.w[level+1]
	if zw == nil {
		var err error
		if zw, err = gzip.NewWriterLevel(&buf, level); err != nil {
			t.Fatal(err)
		}
		gzipWriters.w[level+1] = zw
	} else {
		zw.Reset(&buf)
	}
	if _, err := zw.Write(b); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// isGzipBytes reports whether b starts with the gzip magic bytes.
func isGzipBytes(b []byte) bool { return len(b) >= 2 && b[0] == 0x1f && b[1] == 0x8b }

// checkIDXRoundTrip checks what ReadIDX returned for in: the payload's
// length fits the dimensions, writing it as an IDX file and reading that
// back gives it again, and when in was not compressed the written file is
// in itself.
func checkIDXRoundTrip(t *testing.T, x *IDX, in []byte) {
	t.Helper()
	n := x.Type.Size()
	for _, d := range x.Dims {
		n *= d
	}
	if n != len(x.Data) || len(x.Dims) == 0 || len(x.Dims) > 255 {
		t.Fatalf("%v of %v with %d payload bytes", x.Dims, x.Type, len(x.Data))
	}
	out := idxBytes(x.Type, x.Dims, x.Data)
	if !isGzipBytes(in) && !bytes.Equal(out, in) {
		t.Fatalf("written back as %d bytes that differ from the %d read", len(out), len(in))
	}
	again, err := ReadIDX(bytes.NewReader(gzipReused(t, out, gzip.BestSpeed)))
	if err != nil {
		t.Fatalf("written back and compressed, it is rejected: %v", err)
	}
	if !reflect.DeepEqual(again, x) {
		t.Fatal("written back and compressed, it reads differently")
	}
}
