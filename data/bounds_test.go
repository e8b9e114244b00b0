package data

import (
	"bytes"
	"compress/gzip"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tartanml/tartan/internal/fuzzcheck"
)

// gzipZeros compresses head followed by n zero bytes as one gzip member. The
// zeros are written a piece at a time, so they are never all in memory; 32
// MiB of them compress to about 32 KiB.
func gzipZeros(t testing.TB, head []byte, n int64) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw, err := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	if err != nil {
		t.Fatal(err)
	}
	zw.Write(head)
	zero := make([]byte, 1<<20)
	for n > 0 {
		k := min(n, int64(len(zero)))
		if _, err := zw.Write(zero[:k]); err != nil {
			t.Fatal(err)
		}
		n -= k
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// countReader counts the bytes read from it.
type countReader struct {
	r *bytes.Reader
	n int64
}

func (c *countReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

// A gzip file of zeros whose header declares a payload far larger than the
// data set must be rejected from its header, before memory is allocated for
// the payload.
func TestIDXBombRejectedBeforeAllocating(t *testing.T) {
	const zeros = 32 << 20
	imagesHead := idxBytes(Uint8, []int{1000000, 28, 28}, nil)
	labelsHead := idxBytes(Uint8, []int{100000000}, nil)
	goodImages, goodLabels := smallIDXSet(6, 28, 28, 0)
	bombImages := gzipZeros(t, imagesHead, zeros)
	bombLabels := gzipZeros(t, labelsHead, zeros)
	if len(bombImages) > 256<<10 || len(bombLabels) > 256<<10 {
		t.Fatalf("the test files are %d and %d bytes; they should be small", len(bombImages), len(bombLabels))
	}
	tests := []struct {
		name           string
		images, labels []byte
		culprit        string
		msg            string
	}{
		{"images declare a million", bombImages, gzipBytes(t, goodLabels), trainImagesIDX,
			"declares 1000000 images (784000000 bytes), but fashion-mnist/train has 60000 samples"},
		{"images and labels declare too many", bombImages, bombLabels, trainImagesIDX,
			"declares 1000000 images"},
		{"labels declare more than the images", gzipBytes(t, goodImages), bombLabels, trainLabelsIDX,
			"holds 100000000 labels, but train-images-idx3-ubyte.gz holds 6 images"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			isolate(t)
			dir, sys := t.TempDir(), t.TempDir()
			writeIDXDataset(t, dir, 6, 4, true)
			writeFile(t, dir, trainImagesIDX, tc.images)
			writeFile(t, dir, trainLabelsIDX, tc.labels)
			var err error
			fuzzcheck.Bounded(t, 16<<20, func() {
				_, _, err = FashionMNIST(Dir(dir), Download(false), withSysRoot(sys))
			})
			path := filepath.Join(dir, tc.culprit)
			if !errors.Is(err, ErrBadContent) || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), tc.msg) {
				t.Fatalf("error %v; want ErrBadContent naming %s and saying %q", err, path, tc.msg)
			}
		})
	}
}

// A small gzip file cannot hold a large payload: deflate expands at most
// 1032 times. The header is rejected before the payload is read.
func TestReadIDXFileBoundedByFileSize(t *testing.T) {
	dir := t.TempDir()
	path := writeFile(t, dir, "bomb-idx1-ubyte.gz", gzipZeros(t, idxBytes(Uint8, []int{1 << 30}, nil), 1<<20))
	var err error
	fuzzcheck.Bounded(t, 4<<20, func() { _, err = ReadIDXFile(path) })
	if !errors.Is(err, ErrPayloadSize) || !strings.Contains(err.Error(), path) ||
		!strings.Contains(err.Error(), "need 1073741824 payload bytes, but a gzip file of") {
		t.Fatalf("error %v; want ErrPayloadSize naming %s and the sizes", err, path)
	}
}

// Data after the payload is reported after reading a bounded amount of it,
// not the whole decompressed tail: here a gigabyte of zeros in 1,024 gzip
// members of 1 MiB each.
func TestIDXTrailingDataStopsEarly(t *testing.T) {
	good := idxBytes(Uint8, []int{3}, []byte{1, 2, 3})
	member := gzipZeros(t, nil, 1<<20)
	var zeros, garbage bytes.Buffer
	zeros.Write(gzipBytes(t, good))
	for range 1024 {
		zeros.Write(member)
	}
	garbage.Write(gzipBytes(t, good))
	garbage.Write(bytes.Repeat([]byte("x"), 4<<20))
	tests := []struct {
		name    string
		in      []byte
		msg     string
		maxRead int64
	}{
		{"a gigabyte of zeros in gzip members", zeros.Bytes(), "more than 1048576 bytes follow the 3-byte payload", 256 << 10},
		{"4 MiB that are not gzip data", garbage.Bytes(), "more than 1048576 bytes that are not gzip data", 2 << 20},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := &countReader{r: bytes.NewReader(tc.in)}
			_, err := ReadIDX(r)
			if !errors.Is(err, ErrTrailingData) || !strings.Contains(err.Error(), tc.msg) {
				t.Fatalf("error %v; want ErrTrailingData saying %q", err, tc.msg)
			}
			if r.n > tc.maxRead {
				t.Fatalf("read %d of the %d bytes before giving up; want at most %d", r.n, len(tc.in), tc.maxRead)
			}
		})
	}
}

// A file cut short or followed by garbage is reported with its name and the
// size it has against the size its header gives it.
func TestIDXFileSizesInErrors(t *testing.T) {
	dir := t.TempDir()
	images, _ := smallIDXSet(4, 28, 28, 0) // 16 + 3136 bytes
	gz := gzipBytes(t, images)
	tests := []struct {
		name string
		file string
		b    []byte
		want error
		msg  string
	}{
		{"uncompressed, cut short", "short-idx3-ubyte", images[:100], ErrPayloadSize,
			"dimensions 4×28×28 of uint8 need 3136 payload bytes, but only 84 follow the header: the file is 100 bytes, where the header makes it 3152"},
		{"uncompressed, with trailing bytes", "long-idx3-ubyte", append(bytes.Clone(images), 1, 2, 3), ErrTrailingData,
			"3 bytes follow the 3136-byte payload that dimensions 4×28×28 of uint8 describe: the file is 3155 bytes, where the header makes it 3152"},
		{"gzip, cut short", "short-idx3-ubyte.gz", gz[:len(gz)/2], ErrTruncated,
			"bytes of decompressed data, where the header's dimensions 4×28×28 of uint8 make 3152"},
		{"gzip, with trailing bytes", "long-idx3-ubyte.gz", gzipBytes(t, append(bytes.Clone(images), 1, 2, 3)), ErrTrailingData,
			"3 bytes follow the 3136-byte payload that dimensions 4×28×28 of uint8 describe (after decompression)"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			path := writeFile(t, dir, tc.file, tc.b)
			_, err := ReadIDXFile(path)
			if !errors.Is(err, tc.want) || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), tc.msg) {
				t.Fatalf("error %v; want %q naming %s and saying %q", err, tc.want, path, tc.msg)
			}
		})
	}
}
