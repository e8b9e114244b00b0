package data

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"os"
	"path/filepath"
	"testing"
)

// idxBytes builds an IDX file by hand: magic 00 00 type ndims, the
// dimensions big-endian, then payload as given.
func idxBytes(typ DType, dims []int, payload []byte) []byte {
	b := []byte{0, 0, byte(typ), byte(len(dims))}
	for _, d := range dims {
		b = binary.BigEndian.AppendUint32(b, uint32(d))
	}
	return append(b, payload...)
}

// gzipBytes compresses b as one gzip member.
func gzipBytes(t testing.TB, b []byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	if _, err := zw.Write(b); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// writeFile writes b to dir/name, creating dir, and returns the path.
func writeFile(t testing.TB, dir, name string, b []byte) string {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// pixel is the value of pixel k of image i in the small test sets, chosen so
// that neighbouring pixels and images differ.
func pixel(i, k int) uint8 { return uint8((i*31 + k*7) % 256) }

// smallIDXSet returns the image and label files of a small MNIST-style split
// of n h×w images: image i has pixels pixel(i, k) and label (i+first)%10.
func smallIDXSet(n, h, w, first int) (images, labels []byte) {
	px := make([]byte, n*h*w)
	lb := make([]byte, n)
	for i := 0; i < n; i++ {
		for k := 0; k < h*w; k++ {
			px[i*h*w+k] = pixel(i, k)
		}
		lb[i] = uint8((i + first) % 10)
	}
	return idxBytes(Uint8, []int{n, h, w}, px), idxBytes(Uint8, []int{n}, lb)
}

// writeIDXDataset writes a small MNIST-style data set into dir: nTrain
// training and nTest test images of 28×28, gzipped or not. Training labels
// start at 0, test labels at 3.
func writeIDXDataset(t testing.TB, dir string, nTrain, nTest int, compressed bool) {
	t.Helper()
	ti, tl := smallIDXSet(nTrain, 28, 28, 0)
	si, sl := smallIDXSet(nTest, 28, 28, 3)
	files := map[string][]byte{trainImagesIDX: ti, trainLabelsIDX: tl, testImagesIDX: si, testLabelsIDX: sl}
	for name, b := range files {
		if compressed {
			writeFile(t, dir, name, gzipBytes(t, b))
		} else {
			writeFile(t, dir, name[:len(name)-len(".gz")], b)
		}
	}
}

// withBaseURL makes a loader download from base instead of the real mirrors.
func withBaseURL(base string) Option { return func(c *config) { c.baseURL = base } }

// withSysRoot makes a loader look for system packages under root.
func withSysRoot(root string) Option { return func(c *config) { c.sysRoot = root } }

// isolate clears the environment the loaders read, so that a test sees only
// the folders it sets up: TARTAN_DATA is unset, and KERAS_HOME and HOME
// point at an empty temporary folder.
func isolate(t *testing.T) {
	t.Helper()
	home := t.TempDir()
	t.Setenv("TARTAN_DATA", "")
	t.Setenv("KERAS_HOME", "")
	t.Setenv("HOME", home)
}
