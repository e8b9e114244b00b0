package data

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// pickler writes Python 2 style pickles (protocol 2, str as
// SHORT_BINSTRING and BINSTRING), as the CIFAR-100 python files are.
type pickler struct{ bytes.Buffer }

func (p *pickler) str(s string) {
	if len(s) < 256 {
		p.WriteByte('U')
		p.WriteByte(byte(len(s)))
	} else {
		p.WriteByte('T')
		binary.Write(&p.Buffer, binary.LittleEndian, uint32(len(s)))
	}
	p.WriteString(s)
}

func (p *pickler) int(v int) {
	switch {
	case v >= 0 && v < 256:
		p.Write([]byte{'K', byte(v)})
	case v >= 0 && v < 65536:
		p.Write([]byte{'M', byte(v), byte(v >> 8)})
	default:
		p.WriteByte('J')
		binary.Write(&p.Buffer, binary.LittleEndian, int32(v))
	}
}

func (p *pickler) global(mod, name string) { p.WriteString("c" + mod + "\n" + name + "\n") }

// ints writes a list of ints, appended in batches as pickle does.
func (p *pickler) ints(v []int) {
	p.WriteByte(']')
	for lo := 0; lo < len(v); lo += 1000 {
		p.WriteByte('(')
		for _, x := range v[lo:min(lo+1000, len(v))] {
			p.int(x)
		}
		p.WriteByte('e')
	}
}

func (p *pickler) strs(v []string) {
	p.WriteString("](")
	for _, s := range v {
		p.str(s)
	}
	p.WriteByte('e')
}

// ndarray writes a NumPy array of descr (such as "u1") and shape holding
// raw, as numpy pickles one; the dtype is memoised as slot 9.
func (p *pickler) ndarray(descr string, shape []int, raw []byte) {
	p.global("numpy.core.multiarray", "_reconstruct")
	p.global("numpy", "ndarray")
	p.WriteString("K\x00\x85")
	p.str("b")
	p.WriteString("\x87R(")
	p.int(1)
	p.WriteByte('(')
	for _, d := range shape {
		p.int(d)
	}
	p.WriteByte('t')
	p.global("numpy", "dtype")
	p.str(descr)
	p.WriteString("K\x00K\x01\x87Rq\x09(K\x03")
	p.str("|")
	p.WriteString("NNNJ\xff\xff\xff\xffJ\xff\xff\xff\xffK\x00tb\x89")
	p.str(string(raw))
	p.WriteString("tb")
}

// cifar100Split pickles a split of n images as the published files do:
// image i's planar pixel k is (i*31 + k*7 + s) % 256, its fine label
// (7i + 3 + s) % 100 and its coarse label (3i + 1 + s) % 20.
func cifar100Split(n, s int) []byte {
	raw := make([]byte, n*3072)
	fine, coarse := make([]int, n), make([]int, n)
	for i := 0; i < n; i++ {
		for k := 0; k < 3072; k++ {
			raw[i*3072+k] = byte((i*31 + k*7 + s) % 256)
		}
		fine[i], coarse[i] = (7*i+3+s)%100, (3*i+1+s)%20
	}
	var p pickler
	p.WriteString("\x80\x02}q\x01(")
	p.str("data")
	p.ndarray("u1", []int{n, 3072}, raw)
	p.str("fine_labels")
	p.ints(fine)
	p.str("batch_label")
	p.str("training batch 1 of 1")
	p.str("coarse_labels")
	p.ints(coarse)
	p.WriteString("u.")
	return p.Bytes()
}

func cifar100Meta() []byte {
	var fine, coarse []string
	for i := 0; i < 100; i++ {
		fine = append(fine, fmt.Sprintf("fine_%d", i))
	}
	for i := 0; i < 20; i++ {
		coarse = append(coarse, fmt.Sprintf("coarse_%d", i))
	}
	var p pickler
	p.WriteString("\x80\x02}q\x01(")
	p.str("fine_label_names")
	p.strs(fine)
	p.str("coarse_label_names")
	p.strs(coarse)
	p.WriteString("u.")
	return p.Bytes()
}

func cifar100Files4() map[string][]byte {
	return map[string][]byte{"train": cifar100Split(4, 0), "test": cifar100Split(2, 100), "meta": cifar100Meta()}
}

// cifar100TarGz packs files under cifar-100-python/, as the archive does.
func cifar100TarGz(t testing.TB, files map[string][]byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	tw.WriteHeader(&tar.Header{Name: "cifar-100-python/", Typeflag: tar.TypeDir, Mode: 0o755})
	for _, name := range []string{"file.txt~", "train", "test", "meta"} {
		b, ok := files[name]
		if !ok {
			if name != "file.txt~" {
				continue
			}
			b = []byte("notes")
		}
		if err := tw.WriteHeader(&tar.Header{Name: "cifar-100-python/" + name, Typeflag: tar.TypeReg, Mode: 0o644, Size: int64(len(b))}); err != nil {
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

// checkCIFAR100 checks the 4 + 2 images of the small files, worked from
// their formula: channels-last pixel (row 0, column 1, blue) of image i is
// planar pixel 2·1024 + 1.
func checkCIFAR100(t *testing.T, train, test *Dataset, mode string) {
	t.Helper()
	if train.N != 4 || test.N != 2 || train.H != 32 || train.W != 32 || train.C != 3 {
		t.Fatalf("shapes %v and %v, want 4 and 2 images of 32×32×3", train.Shape(), test.Shape())
	}
	for _, c := range []struct {
		d *Dataset
		s int
	}{{train, 0}, {test, 100}} {
		for i := 0; i < c.d.N; i++ {
			img := c.d.Images[i*3072 : (i+1)*3072]
			for _, px := range []struct{ ch, k int }{{0, 0}, {2, 1}, {1, 1023}, {2, 1023}} {
				want := byte((i*31 + (px.ch*1024+px.k)*7 + c.s) % 256)
				if got := img[3*px.k+px.ch]; got != want {
					t.Errorf("%s image %d pixel %d channel %d = %d, want %d", c.d.Name, i, px.k, px.ch, got, want)
				}
			}
			want := (7*i + 3 + c.s) % 100
			if mode == "coarse" {
				want = (3*i + 1 + c.s) % 20
			}
			if int(c.d.Labels[i]) != want {
				t.Errorf("%s label %d = %d, want %d", c.d.Name, i, c.d.Labels[i], want)
			}
		}
	}
	classes, name := 100, "fine_42"
	if mode == "coarse" {
		classes, name = 20, "coarse_2"
	}
	if train.Classes != classes || train.ClassName(42%classes) != name {
		t.Errorf("%d classes, class %d named %q; want %d and %q", train.Classes, 42%classes, train.ClassName(42%classes), classes, name)
	}
}

func TestCIFAR100FromFiles(t *testing.T) {
	isolate(t)
	// Extracted as Keras leaves it, in the Keras cache.
	cache := t.TempDir()
	for name, b := range cifar100Files4() {
		writeFile(t, filepath.Join(cache, "cifar-100-python"), name, b)
	}
	for _, mode := range []string{"fine", "coarse"} {
		train, test, err := CIFAR100(CacheDir(cache), Download(false), LabelMode(mode))
		if err != nil {
			t.Fatal(err)
		}
		checkCIFAR100(t, train, test, mode)
	}
	train, test, err := CIFAR100(CacheDir(cache), Download(false))
	if err != nil {
		t.Fatal(err)
	}
	checkCIFAR100(t, train, test, "fine")
}

func TestCIFAR100FromArchive(t *testing.T) {
	isolate(t)
	dir := t.TempDir()
	writeFile(t, dir, cifar100Archive, cifar100TarGz(t, cifar100Files4()))
	t.Setenv("TARTAN_DATA", dir)
	train, test, err := CIFAR100(Download(false), LabelMode("coarse"))
	if err != nil {
		t.Fatal(err)
	}
	checkCIFAR100(t, train, test, "coarse")
}

// TestCIFAR100PythonFixture reads the archive Python's own pickle wrote
// (testdata/keras/gen_keras_formats.py), with the same images and labels.
func TestCIFAR100PythonFixture(t *testing.T) {
	isolate(t)
	train, test, err := CIFAR100(Dir("testdata/keras"))
	if err != nil {
		t.Fatal(err)
	}
	checkCIFAR100(t, train, test, "fine")
}

func TestCIFAR100NotFound(t *testing.T) {
	isolate(t)
	_, _, err := CIFAR100(CacheDir(t.TempDir()), Download(false))
	if !errors.Is(err, ErrNotFound) || !strings.Contains(err.Error(), "https://www.cs.toronto.edu/~kriz/cifar-100-python.tar.gz  (169001437 bytes, SHA-256 85cd44d02ba6437773c5bbd22e183051d648de2e7d6b014e1ef29b855ba677a7)") {
		t.Errorf("error %v", err)
	}
	if _, _, err := CIFAR100(LabelMode("medium")); err == nil || err.Error() != `data: CIFAR-100: label mode "medium" is not "fine" or "coarse"` {
		t.Errorf("bad label mode: %v", err)
	}
}

func TestCIFAR100WrongFiles(t *testing.T) {
	bad := func(change func(f map[string][]byte)) map[string][]byte {
		f := cifar100Files4()
		change(f)
		return f
	}
	badLabel := cifar100Split(4, 0)
	// fine label 0 of image 0 is 3: make it 100.
	i := bytes.Index(badLabel, []byte("fine_labels"))
	j := bytes.Index(badLabel[i:], []byte("(K\x03"))
	badLabel[i+j+2] = 100
	cases := []struct {
		name    string
		files   map[string][]byte
		archive bool
		want    string
	}{
		{"label past the classes", bad(func(f map[string][]byte) { f["train"] = badLabel }), false, "fine_labels[0] is 100, but the classes are 0 to 99"},
		{"cut off", bad(func(f map[string][]byte) { f["test"] = f["test"][:len(f["test"])-300] }), false, "bad pickle: at byte"},
		{"wrong image size", bad(func(f map[string][]byte) {
			var p pickler
			p.WriteString("\x80\x02}(")
			p.str("data")
			p.ndarray("u1", []int{2, 1024}, make([]byte, 2048))
			p.WriteString("u.")
			f["test"] = p.Bytes()
		}), false, `"data" is a |u1 array of shape [2 1024]; want uint8 (|u1) of shape (N, 3072) with 1 ≤ N ≤ 10000`},
		{"not a dict", bad(func(f map[string][]byte) { f["meta"] = []byte("\x80\x02]q\x00.") }), false, "the pickle holds a list, not a dict"},
		{"meta short of names", bad(func(f map[string][]byte) {
			var p pickler
			p.WriteString("\x80\x02}(")
			p.str("fine_label_names")
			p.strs([]string{"a", "b"})
			p.WriteString("u.")
			f["meta"] = p.Bytes()
		}), false, "fine_label_names is not a list of 100 names"},
		{"code in the pickle", bad(func(f map[string][]byte) { f["meta"] = []byte("\x80\x02cos\nsystem\nU\x02ls\x85R.") }), false, "the pickle holds a call of os.system, not a dict"},
		{"archive without meta", bad(func(f map[string][]byte) { delete(f, "meta") }), true, "the archive lacks [meta]"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			isolate(t)
			dir := t.TempDir()
			if c.archive {
				writeFile(t, dir, cifar100Archive, cifar100TarGz(t, c.files))
			} else {
				for name, b := range c.files {
					writeFile(t, dir, name, b)
				}
			}
			_, _, err := CIFAR100(Dir(dir))
			if !errors.Is(err, ErrBadContent) || !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %v, want ErrBadContent with %q", err, c.want)
			}
		})
	}
}

// TestRealCIFAR100 reads the published archive when the Keras cache has
// it. The facts were read with Python's pickle module.
func TestRealCIFAR100(t *testing.T) {
	home, _ := os.UserHomeDir()
	dir := filepath.Join(home, ".keras", "datasets")
	if _, err := os.Stat(filepath.Join(dir, cifar100Archive)); err != nil {
		if _, err := os.Stat(filepath.Join(dir, "cifar-100-python", "train")); err != nil {
			t.Skipf("CIFAR-100 is not in the Keras cache %s", dir)
		}
	}
	train, test, err := CIFAR100(CacheDir(dir), Download(false))
	if err != nil {
		t.Fatal(err)
	}
	if train.N != 50000 || test.N != 10000 || train.ClassName(0) != "apple" || train.ClassName(99) != "worm" {
		t.Errorf("%d and %d images, classes %q…%q", train.N, test.N, train.ClassName(0), train.ClassName(99))
	}
	counts := make([]int, 100)
	for _, l := range train.Labels {
		counts[l]++
	}
	for c, n := range counts {
		if n != 500 {
			t.Errorf("class %d has %d training images, want 500", c, n)
		}
	}
}
