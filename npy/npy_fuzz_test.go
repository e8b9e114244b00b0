package npy

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tartanml/tartan/internal/fuzzcheck"
)

// addGoldenSeeds adds the golden files whose names end with ext.
func addGoldenSeeds(f *testing.F, ext string) {
	paths, err := filepath.Glob(filepath.Join("testdata", "*"+ext))
	if err != nil || len(paths) == 0 {
		f.Fatalf("no golden %s files (%v)", ext, err)
	}
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
}

// checkRead checks what a successful read returned: a well-formed array
// that writes and reads back to the same bytes.
func checkRead(t *testing.T, a *Array) {
	if err := a.Check(); err != nil {
		t.Fatalf("read an ill-formed array: %v", err)
	}
	var buf bytes.Buffer
	if err := Write(&buf, a); err != nil {
		t.Fatalf("writing what was read: %v", err)
	}
	b, err := ReadBytes(buf.Bytes())
	if err != nil {
		t.Fatalf("reading back what was written: %v", err)
	}
	var again bytes.Buffer
	Write(&again, b)
	if !bytes.Equal(buf.Bytes(), again.Bytes()) {
		t.Fatalf("an array changed on a round trip")
	}
}

func FuzzReadNPY(f *testing.F) {
	addGoldenSeeds(f, ".npy")
	f.Fuzz(func(t *testing.T, data []byte) {
		fuzzcheck.Bounded(t, fuzzcheck.DefaultLimit, func() {
			a, err := ReadBytes(data)
			if err != nil {
				return
			}
			checkRead(t, a)
			if _, err := Read(bytes.NewReader(data)); err != nil {
				t.Fatalf("ReadBytes accepted what Read refuses: %v", err)
			}
		})
	})
}

func FuzzReadNPZ(f *testing.F) {
	addGoldenSeeds(f, ".npz")
	// Small archives, whose every byte the fuzzer can reach.
	for _, compress := range []bool{false, true} {
		var buf bytes.Buffer
		w := NewNPZWriter(&buf, compress)
		a, _ := New([]int{2}, []float32{1, -2})
		b, _ := New([]int{}, []bool{true})
		w.Add("a", a)
		w.Add("b", b)
		if err := w.Close(); err != nil {
			f.Fatal(err)
		}
		f.Add(buf.Bytes())
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		fuzzcheck.Bounded(t, fuzzcheck.DefaultLimit, func() {
			z, err := NewNPZ(bytes.NewReader(data), int64(len(data)))
			if err != nil {
				return
			}
			z.MaxBytes = 64 << 20
			for _, n := range z.Names() {
				a, err := z.Read(n)
				if err != nil {
					if !strings.Contains(err.Error(), n) {
						t.Fatalf("error %q does not name member %q", err, n)
					}
					continue
				}
				checkRead(t, a)
			}
		})
	})
}
