package npy

import (
	"archive/zip"
	"bytes"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/tartanml/tartan/tile"
)

// zipOf builds a zip archive with one member of the given contents.
func zipOf(t *testing.T, name string, method uint16, contents []byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	w, err := zw.CreateHeader(&zip.FileHeader{Name: name, Method: method})
	if err != nil {
		t.Fatal(err)
	}
	w.Write(contents)
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func readNPZBytes(b []byte, name string, maxBytes int64) (*Array, error) {
	z, err := NewNPZ(bytes.NewReader(b), int64(len(b)))
	if err != nil {
		return nil, err
	}
	if maxBytes > 0 {
		z.MaxBytes = maxBytes
	}
	return z.Read(name)
}

// TestZipBomb checks that a deflated member is refused before it is
// decompressed when it expands beyond MaxBytes, and that a member whose
// header describes more data than the archive declares is refused.
func TestZipBomb(t *testing.T) {
	a, _ := Zeros(Float32, []int{1024, 1024}) // 4 MiB of zeros
	var npyFile bytes.Buffer
	Write(&npyFile, a)
	bomb := zipOf(t, "x.npy", zip.Deflate, npyFile.Bytes())
	if len(bomb) > 64<<10 {
		t.Fatalf("4 MiB of zeros deflated to %d bytes", len(bomb))
	}
	if _, err := readNPZBytes(bomb, "x", 1<<20); err == nil || !strings.Contains(err.Error(), "more than the 1048576 accepted") {
		t.Errorf("4 MiB member under a 1 MiB bound: %v", err)
	}
	if got, err := readNPZBytes(bomb, "x", 0); err != nil || got.Len() != 1<<20 {
		t.Errorf("4 MiB member under the default bound: %v", err)
	}
	// A header claiming 1 GiB inside a member of a few hundred bytes.
	small := npyBytes(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (268435456,), }\n", make([]byte, 64))
	z := zipOf(t, "y.npy", zip.Deflate, small)
	if _, err := readNPZBytes(z, "y", 0); err == nil || !strings.Contains(err.Error(), "describes 1073741824 bytes of data") {
		t.Errorf("lying header: %v", err)
	}
	// A member whose central directory claims far more than deflate can
	// produce from its compressed bytes.
	b := zipOf(t, "w.npy", zip.Deflate, npyFile.Bytes()[:200])
	patchSizes(t, b, 1<<30)
	if _, err := readNPZBytes(b, "w", 2<<30); err == nil || !errors.Is(err, ErrFormat) || !strings.Contains(err.Error(), "cannot expand") {
		t.Errorf("impossible expansion: %v", err)
	}
}

// patchSizes rewrites the uncompressed size of the only member in a zip's
// central directory.
func patchSizes(t *testing.T, b []byte, size uint32) {
	t.Helper()
	i := bytes.Index(b, []byte("PK\x01\x02"))
	if i < 0 {
		t.Fatal("no central directory")
	}
	le := func(off int, v uint32) {
		b[off], b[off+1], b[off+2], b[off+3] = byte(v), byte(v>>8), byte(v>>16), byte(v>>24)
	}
	le(i+24, size)
}

// TestHostileNPZ covers archives that are not archives, damaged members and
// repeated names.
func TestHostileNPZ(t *testing.T) {
	if _, err := NewNPZ(bytes.NewReader([]byte("not a zip")), 9); err == nil || !strings.Contains(err.Error(), "not a valid .npz") {
		t.Errorf("not a zip: %v", err)
	}
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for range 2 {
		w, _ := zw.Create("a.npy")
		w.Write([]byte("x"))
	}
	zw.Close()
	if _, err := NewNPZ(bytes.NewReader(buf.Bytes()), int64(buf.Len())); err == nil || !strings.Contains(err.Error(), "two members") {
		t.Errorf("repeated names: %v", err)
	}
	// A stored member whose bytes were damaged after the CRC was taken.
	a, _ := New([]int{4}, []float32{1, 2, 3, 4})
	var f bytes.Buffer
	Write(&f, a)
	z := zipOf(t, "a.npy", zip.Store, f.Bytes())
	i := bytes.Index(z, []byte{0, 0, 0x80, 0x3f}) // the float 1
	z[i+3] = 0x40
	if _, err := readNPZBytes(z, "a", 0); err == nil || !strings.Contains(err.Error(), "checksum") {
		t.Errorf("damaged member: %v", err)
	}
	// A member that is not .npy.
	z = zipOf(t, "b.npy", zip.Store, []byte("hello"))
	if _, err := readNPZBytes(z, "b", 0); err == nil || !errors.Is(err, ErrFormat) || !strings.Contains(err.Error(), "member b.npy") {
		t.Errorf("not an npy member: %v", err)
	}
	// Writer refusals.
	nw := NewNPZWriter(new(bytes.Buffer), false)
	if err := nw.Add("a/b", a); err == nil {
		t.Errorf("name with a slash accepted")
	}
	if err := nw.Add("a", a); err != nil {
		t.Fatal(err)
	}
	if err := nw.Add("a", a); err == nil || !strings.Contains(err.Error(), "already") {
		t.Errorf("repeated name: %v", err)
	}
	if err := nw.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestValueConversions converts to and from tile.Value.
func TestValueConversions(t *testing.T) {
	u8, _ := New([]int{3}, []uint8{0, 7, 255})
	v, err := u8.ToValue()
	if err != nil || v.DType != tile.Int32 || !slices.Equal(v.Data, []float64{0, 7, 255}) {
		t.Errorf("uint8 to Value: %v %v", v, err)
	}
	u64, _ := New([]int{1}, []uint64{1<<53 + 1})
	if _, err := u64.ToValue(); err == nil || !strings.Contains(err.Error(), "beyond 2^53") {
		t.Errorf("uint64 beyond 2^53: %v", err)
	}
	h, _ := New([]int{2}, []Half{HalfFrom(0.5), HalfFrom(-3)})
	v, err = h.ToValue()
	if err != nil || v.DType != tile.Float16 || !slices.Equal(v.Data, []float64{0.5, -3}) {
		t.Errorf("float16 to Value: %v %v", v, err)
	}
	back, err := FromValue(v)
	if err != nil || !slices.Equal(back.Halfs(), h.Halfs()) {
		t.Errorf("Value to float16: %v %v", back, err)
	}
	iv, _ := tile.ValueOf(tile.Int64, tile.Shape{2, 1}, []float64{-5, 1 << 40})
	a, err := FromValue(iv)
	if err != nil || a.DType != Int64 || !slices.Equal(a.Int64s(), []int64{-5, 1 << 40}) || !slices.Equal(a.Shape, []int{2, 1}) {
		t.Errorf("Int64 Value: %v %v", a, err)
	}
	bad := &tile.Value{DType: tile.Int32, Shape: tile.Shape{1}, Data: []float64{1.5}}
	if _, err := FromValue(bad); err == nil || !strings.Contains(err.Error(), "not a 32-bit integer") {
		t.Errorf("fractional Int32: %v", err)
	}
	bf := &tile.Value{DType: tile.BFloat16, Shape: tile.Shape{1}, Data: []float64{1}}
	if _, err := FromValue(bf); err == nil || !strings.Contains(err.Error(), "no NumPy type") {
		t.Errorf("bf16: %v", err)
	}
	sc, _ := New([]int{}, []bool{true})
	v, err = sc.ToValue()
	if err != nil || v.DType != tile.Bool || len(v.Shape) != 0 || v.Data[0] != 1 {
		t.Errorf("0-d bool: %v %v", v, err)
	}
}
