package data

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"errors"
	"testing"

	"github.com/tartanml/tartan/internal/fuzzcheck"
)

// cifarPlanar writes the samples of d, a CIFAR-10 data set, back in the
// binary batch layout: a label byte, then the red, green and blue planes.
func cifarPlanar(d *Dataset) []byte {
	out := make([]byte, 0, d.N*cifarRecord)
	for i := 0; i < d.N; i++ {
		out = append(out, d.Labels[i])
		img := d.Images[i*3*cifarPlane : (i+1)*3*cifarPlane]
		for c := 0; c < 3; c++ {
			for px := 0; px < cifarPlane; px++ {
				out = append(out, img[3*px+c])
			}
		}
	}
	return out
}

// FuzzDecodeCIFARBatch decodes arbitrary bytes as a CIFAR-10 batch file. It
// must not panic or allocate beyond the bound; it must accept exactly the
// inputs made of whole records with labels 0 to 9; and what it accepts,
// written back in the planar layout, must be the input.
func FuzzDecodeCIFARBatch(f *testing.F) {
	f.Add(cifarBatch(1, 0))
	f.Add(cifarBatch(2, 9))
	f.Add(cifarBatch(1, 0)[:100])
	f.Add(append(cifarBatch(1, 3), 1))
	bad := cifarBatch(1, 0)
	bad[0] = 10
	f.Add(bad)
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		fuzzcheck.Bounded(t, fuzzcheck.DefaultLimit, func() {
			d, err := decodeCIFAR("fuzz", []string{"batch"}, map[string][]byte{"batch": b}, map[string]string{"batch": "batch"})
			valid := len(b) > 0 && len(b)%cifarRecord == 0
			for r := 0; valid && r < len(b); r += cifarRecord {
				valid = b[r] < 10
			}
			if err != nil {
				if valid || !errors.Is(err, ErrBadContent) {
					t.Fatalf("rejected (valid: %v): %v", valid, err)
				}
				return
			}
			if !valid {
				t.Fatal("accepted an invalid batch")
			}
			if d.N != len(b)/cifarRecord || d.H != 32 || d.W != 32 || d.C != 3 {
				t.Fatalf("shape %v from %d bytes", d.Shape(), len(b))
			}
			if !bytes.Equal(cifarPlanar(d), b) {
				t.Fatal("written back, the batch differs")
			}
		})
	})
}

// FuzzDecodeCIFARArchive reads arbitrary bytes as the gzipped tar archive of
// CIFAR-10's batches. It must not panic or allocate beyond the bound, and
// what it accepts must hold the six batches, each at most a published
// batch's size, which packed again read back the same.
func FuzzDecodeCIFARArchive(f *testing.F) {
	small := map[string][]byte{cifarTestFile: cifarBatch(1, 0)}
	for k, name := range cifarTrainFiles {
		small[name] = cifarBatch(1, k)
	}
	f.Add(cifarTarGz(f, small))
	full := cifarTarGz(f, cifarFiles())
	f.Add(full)
	f.Add(full[:len(full)/2])
	delete(small, cifarTestFile)
	f.Add(cifarTarGz(f, small))
	f.Add([]byte{0x1f, 0x8b})
	f.Fuzz(func(t *testing.T, archive []byte) {
		fuzzcheck.Bounded(t, fuzzcheck.DefaultLimit, func() {
			batches, err := decodeCIFARArchive(bytes.NewReader(archive), "fuzz.tar.gz")
			if err != nil {
				return
			}
			if len(batches) != 6 {
				t.Fatalf("%d batches", len(batches))
			}
			for name, b := range batches {
				if len(b) > maxCIFARBatch {
					t.Fatalf("%s: %d bytes", name, len(b))
				}
			}
			again, err := decodeCIFARArchive(bytes.NewReader(packCIFAR(t, batches)), "packed.tar.gz")
			if err != nil {
				t.Fatalf("packed again, the batches are rejected: %v", err)
			}
			for name, b := range batches {
				if !bytes.Equal(again[name], b) {
					t.Fatalf("packed again, %s differs", name)
				}
			}
		})
	})
}

// packCIFAR packs batches into a gzipped tar archive, fast.
func packCIFAR(t *testing.T, batches map[string][]byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw, err := gzip.NewWriterLevel(&buf, gzip.HuffmanOnly)
	if err != nil {
		t.Fatal(err)
	}
	tw := tar.NewWriter(zw)
	for name, b := range batches {
		if err := tw.WriteHeader(&tar.Header{Name: name, Typeflag: tar.TypeReg, Mode: 0o644, Size: int64(len(b))}); err != nil {
			t.Fatal(err)
		}
		tw.Write(b)
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}
