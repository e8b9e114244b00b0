package data

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// cifarValue is the byte a test batch stores for record r, channel c
// (0 red, 1 green, 2 blue), pixel p = 32*y + x of its plane.
func cifarValue(r, c, p int) uint8 { return uint8(c*80 + p + 3*r) }

// cifarBatch builds a batch file of n records in CIFAR-10's binary layout:
// a label byte, then the red, green and blue 32×32 planes. Record r has
// label (first+r)%10.
func cifarBatch(n, first int) []byte {
	var b []byte
	for r := 0; r < n; r++ {
		b = append(b, uint8((first+r)%10))
		for c := 0; c < 3; c++ {
			for p := 0; p < 1024; p++ {
				b = append(b, cifarValue(r, c, p))
			}
		}
	}
	return b
}

// cifarFiles returns six small batches: data_batch_k holds k records whose
// labels start at k, and test_batch holds 4 starting at 0.
func cifarFiles() map[string][]byte {
	files := map[string][]byte{cifarTestFile: cifarBatch(4, 0)}
	for k, name := range cifarTrainFiles {
		files[name] = cifarBatch(k+1, k+1)
	}
	return files
}

// cifarTarGz packs files into a gzipped tar archive under a
// cifar-10-batches-bin folder, as the published archive does.
func cifarTarGz(t testing.TB, files map[string][]byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	tw.WriteHeader(&tar.Header{Name: "cifar-10-batches-bin/", Typeflag: tar.TypeDir, Mode: 0o755})
	for _, name := range append(append([]string{"readme.html"}, cifarTrainFiles...), cifarTestFile) {
		b, ok := files[name]
		if !ok {
			if name != "readme.html" {
				continue
			}
			b = []byte("<html></html>")
		}
		if err := tw.WriteHeader(&tar.Header{Name: "cifar-10-batches-bin/" + name, Typeflag: tar.TypeReg, Mode: 0o644, Size: int64(len(b))}); err != nil {
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

// checkCIFAR checks the sets read from cifarFiles: 1+2+3+4+5 training
// records in batch order and 4 test records, channels-last.
func checkCIFAR(t *testing.T, train, test *Dataset) {
	t.Helper()
	if train.Len() != 15 || test.Len() != 4 || train.H != 32 || train.W != 32 || train.C != 3 || train.Classes != 10 {
		t.Fatalf("train %v, test %v", train.Shape(), test.Shape())
	}
	// Training sample i is record r of batch k, in order.
	i := 0
	for k := 1; k <= 5; k++ {
		for r := 0; r < k; r++ {
			if train.Labels[i] != uint8((k+r)%10) {
				t.Fatalf("train label %d = %d, want %d", i, train.Labels[i], (k+r)%10)
			}
			for _, yxc := range [][3]int{{0, 0, 0}, {0, 1, 2}, {5, 7, 1}, {31, 31, 2}} {
				y, x, c := yxc[0], yxc[1], yxc[2]
				got := train.Images[((i*32+y)*32+x)*3+c]
				if want := cifarValue(r, c, 32*y+x); got != want {
					t.Fatalf("train sample %d (y %d, x %d, channel %d) = %d, want %d", i, y, x, c, got, want)
				}
			}
			i++
		}
	}
	// Worked by hand: test sample 0, row 0, column 1, blue is 2*80 + 1 = 161;
	// test sample 3's first red value is 0 + 0 + 3*3 = 9.
	if test.Images[1*3+2] != 161 || test.Images[3*3072] != 9 || test.Labels[3] != 3 {
		t.Fatalf("test pixels %d, %d, label %d; want 161, 9, 3", test.Images[5], test.Images[3*3072], test.Labels[3])
	}
	if train.ClassName(0) != "airplane" || train.ClassName(9) != "truck" {
		t.Errorf("class names %q", train.ClassNames)
	}
}

func TestCIFAR10FromFiles(t *testing.T) {
	isolate(t)
	dir := t.TempDir()
	for name, b := range cifarFiles() {
		writeFile(t, filepath.Join(dir, "cifar-10-batches-bin"), name, b)
	}
	train, test, err := CIFAR10(Dir(dir))
	if err != nil {
		t.Fatal(err)
	}
	checkCIFAR(t, train, test)
}

func TestCIFAR10FromArchive(t *testing.T) {
	isolate(t)
	dir := t.TempDir()
	writeFile(t, dir, cifarArchive, cifarTarGz(t, cifarFiles()))
	t.Setenv("TARTAN_DATA", dir)
	train, test, err := CIFAR10(Download(false))
	if err != nil {
		t.Fatal(err)
	}
	checkCIFAR(t, train, test)
}

func TestCIFAR10Download(t *testing.T) {
	isolate(t)
	archive := cifarTarGz(t, cifarFiles())
	srv, _ := serve(t, map[string][]byte{cifarArchive: archive}, nil)
	src := *cifar10
	sum := sha256.Sum256(archive)
	src.remote = []remoteFile{{cifarArchive, int64(len(archive)), hex.EncodeToString(sum[:])}}
	cache := t.TempDir()
	train, test, err := src.load([]Option{CacheDir(cache), withBaseURL(srv.URL)})
	if err != nil {
		t.Fatal(err)
	}
	checkCIFAR(t, train, test)
	if got, err := os.ReadFile(filepath.Join(cache, cifarArchive)); err != nil || !bytes.Equal(got, archive) {
		t.Fatalf("archive in the cache: %d bytes, %v", len(got), err)
	}
}

func TestCIFAR10WrongFiles(t *testing.T) {
	tests := []struct {
		name    string
		change  func(files map[string][]byte)
		archive bool
		culprit string
		want    error
		msg     string
	}{
		{"partial record", func(f map[string][]byte) { f["data_batch_3.bin"] = f["data_batch_3.bin"][:3073*2+100] }, false,
			"data_batch_3.bin", ErrBadContent, "6246 bytes are not a whole, non-zero number of 3073-byte"},
		{"empty batch", func(f map[string][]byte) { f[cifarTestFile] = nil }, false,
			cifarTestFile, ErrBadContent, "its 0 bytes"},
		{"label 10", func(f map[string][]byte) { f["data_batch_2.bin"][3073] = 10 }, false,
			"data_batch_2.bin", ErrBadContent, "record 1 has label 10"},
		{"archive lacks a batch", func(f map[string][]byte) { delete(f, "data_batch_4.bin") }, true,
			cifarArchive, ErrBadContent, "lacks [data_batch_4.bin]"},
		{"bad record in archive", func(f map[string][]byte) { f[cifarTestFile][0] = 200 }, true,
			cifarArchive + ": " + cifarTestFile, ErrBadContent, "record 0 has label 200"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			isolate(t)
			dir := t.TempDir()
			files := cifarFiles()
			tc.change(files)
			if tc.archive {
				writeFile(t, dir, cifarArchive, cifarTarGz(t, files))
			} else {
				for name, b := range files {
					writeFile(t, dir, name, b)
				}
			}
			_, _, err := CIFAR10(Dir(dir))
			if !errors.Is(err, tc.want) {
				t.Fatalf("error %v, want one wrapping %q", err, tc.want)
			}
			if !strings.Contains(err.Error(), filepath.Join(dir, tc.culprit)) || !strings.Contains(err.Error(), tc.msg) {
				t.Fatalf("error %q should name %s and say %q", err, filepath.Join(dir, tc.culprit), tc.msg)
			}
		})
	}
}

func TestCIFAR10DamagedArchive(t *testing.T) {
	good := cifarTarGz(t, cifarFiles())
	badCRC := bytes.Clone(good)
	badCRC[len(badCRC)-8] ^= 1
	// Its first deflate block claims the reserved block type 3.
	badDeflate := bytes.Clone(good)
	badDeflate[10] = 0xff
	tests := []struct {
		name string
		b    []byte
		want error
	}{
		{"cut off", good[:len(good)/2], ErrTruncated},
		{"bad checksum", badCRC, ErrBadGzip},
		{"corrupt compressed data", badDeflate, ErrBadGzip},
		{"not gzip", []byte("this is not an archive at all"), ErrBadGzip},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			isolate(t)
			dir := t.TempDir()
			p := writeFile(t, dir, cifarArchive, tc.b)
			_, _, err := CIFAR10(Dir(dir))
			if !errors.Is(err, tc.want) || !strings.Contains(err.Error(), p) {
				t.Fatalf("error %v, want one wrapping %q and naming %s", err, tc.want, p)
			}
		})
	}
}
