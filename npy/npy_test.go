package npy

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// textArray is one line of make.py's text form.
type textArray struct {
	name, dtype string
	shape       []int
	vals        []string
}

func parseText(t *testing.T, s string) []textArray {
	t.Helper()
	var out []textArray
	sc := bufio.NewScanner(strings.NewReader(s))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 3 {
			t.Fatalf("bad text line %q", sc.Text())
		}
		ta := textArray{name: f[0], dtype: f[1], shape: []int{}, vals: f[3:]}
		if f[2] != "-" {
			for _, d := range strings.Split(f[2], "x") {
				n, err := strconv.Atoi(d)
				if err != nil {
					t.Fatalf("bad shape in %q", sc.Text())
				}
				ta.shape = append(ta.shape, n)
			}
		}
		out = append(out, ta)
	}
	return out
}

// matchText reports how a differs from the values of want, or "".
func matchText(a *Array, want textArray) string {
	if err := a.Check(); err != nil {
		return err.Error()
	}
	if a.DType.String() != want.dtype {
		return fmt.Sprintf("dtype %v, want %s", a.DType, want.dtype)
	}
	if !slices.Equal(a.Shape, want.shape) {
		return fmt.Sprintf("shape %v, want %v", a.Shape, want.shape)
	}
	if a.Len() != len(want.vals) {
		return fmt.Sprintf("%d elements, want %d", a.Len(), len(want.vals))
	}
	for i, s := range want.vals {
		var got string
		switch v := a.Data.(type) {
		case []bool:
			got = "0"
			if v[i] {
				got = "1"
			}
		case []int8, []int16, []int32, []int64, []uint8, []uint16, []uint32, []uint64:
			got = fmt.Sprint(slicesIndex(v, i))
		default:
			w, err := strconv.ParseFloat(s, 64)
			if err != nil {
				return fmt.Sprintf("bad expected value %q", s)
			}
			x := a.AsFloat64()[i]
			if x == w && math.Signbit(x) == math.Signbit(w) || math.IsNaN(x) && math.IsNaN(w) {
				continue
			}
			return fmt.Sprintf("element %d is %v, want %v (%s)", i, x, w, s)
		}
		if got != s {
			return fmt.Sprintf("element %d is %s, want %s", i, got, s)
		}
	}
	return ""
}

func slicesIndex(v any, i int) any {
	switch x := v.(type) {
	case []int8:
		return x[i]
	case []int16:
		return x[i]
	case []int32:
		return x[i]
	case []int64:
		return x[i]
	case []uint8:
		return x[i]
	case []uint16:
		return x[i]
	case []uint32:
		return x[i]
	case []uint64:
		return x[i]
	}
	return nil
}

// readNamed reads "file.npy" or "file.npz:member" under dir.
func readNamed(dir, name string) (*Array, error) {
	file, member, ok := strings.Cut(name, ":")
	if !ok {
		return ReadFile(filepath.Join(dir, file))
	}
	z, err := OpenNPZ(filepath.Join(dir, file))
	if err != nil {
		return nil, err
	}
	defer z.Close()
	return z.Read(member)
}

// TestGolden reads every file make.py wrote (each dtype in both byte
// orders, C and Fortran order, versions 1.0 to 3.0, 0-d and empty arrays,
// stored and deflated archives) and compares it with the values make.py
// wrote as text.
func TestGolden(t *testing.T) {
	txt, err := os.ReadFile("testdata/expected.txt")
	if err != nil {
		t.Fatal(err)
	}
	want := parseText(t, string(txt))
	if len(want) < 40 {
		t.Fatalf("expected.txt has only %d arrays", len(want))
	}
	for _, w := range want {
		a, err := readNamed("testdata", w.name)
		if err != nil {
			t.Errorf("%s: %v", w.name, err)
			continue
		}
		if d := matchText(a, w); d != "" {
			t.Errorf("%s: %s", w.name, d)
		}
	}
}

// TestGoldenNames checks the member names of an archive numpy wrote.
func TestGoldenNames(t *testing.T) {
	for _, f := range []string{"stored.npz", "deflated.npz"} {
		z, err := OpenNPZ(filepath.Join("testdata", f))
		if err != nil {
			t.Fatal(err)
		}
		if got, want := z.Names(), []string{"weights", "labels", "mask", "zeros"}; !slices.Equal(got, want) {
			t.Errorf("%s: names %v, want %v", f, got, want)
		}
		if _, err := z.Read("labels.npy"); err != nil {
			t.Errorf("%s: reading by member name: %v", f, err)
		}
		if _, err := z.Read("nothing"); err == nil || !strings.Contains(err.Error(), `no array "nothing"`) {
			t.Errorf("%s: reading a missing array: %v", f, err)
		}
		z.Close()
	}
}

// TestHalfRounding compares HalfFrom with numpy's float32 to float16
// conversion, and Half.Float32 with the way back.
func TestHalfRounding(t *testing.T) {
	all, err := ReadNPZFile("testdata/halfround.npz")
	if err != nil {
		t.Fatal(err)
	}
	f32, f16 := all["f32"].Float32s(), all["f16"].Halfs()
	if len(f32) == 0 || len(f32) != len(f16) {
		t.Fatalf("halfround.npz holds %d and %d values", len(f32), len(f16))
	}
	for i, x := range f32 {
		got, want := HalfFrom(x), f16[i]
		if got != want && !(math.IsNaN(float64(x)) && math.IsNaN(float64(got.Float32()))) {
			t.Errorf("HalfFrom(%g) = %#04x (%g), numpy gives %#04x (%g)", x, uint16(got), got.Float32(), uint16(want), want.Float32())
		}
	}
	// Every half value survives the way to float32 and back.
	for b := range 1 << 16 {
		h := Half(b)
		f := h.Float32()
		if math.IsNaN(float64(f)) {
			if !math.IsNaN(float64(HalfFrom(f).Float32())) {
				t.Fatalf("NaN %#04x does not stay NaN", b)
			}
			continue
		}
		if HalfFrom(f) != h {
			t.Fatalf("%#04x → %g → %#04x", b, f, uint16(HalfFrom(f)))
		}
	}
}

// roundTripArrays are written by Go and read back by numpy and by Go.
func roundTripArrays(t *testing.T) map[string]*Array {
	t.Helper()
	mk := func(shape []int, data any) *Array {
		a, err := New(shape, data)
		if err != nil {
			t.Fatal(err)
		}
		return a
	}
	return map[string]*Array{
		"bool":    mk([]int{2, 2}, []bool{true, false, false, true}),
		"int8":    mk([]int{3}, []int8{-128, 0, 127}),
		"int16":   mk([]int{1, 3}, []int16{-32768, 5, 32767}),
		"int32":   mk([]int{3, 1}, []int32{math.MinInt32, -7, math.MaxInt32}),
		"int64":   mk([]int{2}, []int64{math.MinInt64, math.MaxInt64}),
		"uint8":   mk([]int{2}, []uint8{0, 255}),
		"uint16":  mk([]int{2}, []uint16{1, 65535}),
		"uint32":  mk([]int{2}, []uint32{1, math.MaxUint32}),
		"uint64":  mk([]int{2}, []uint64{1, math.MaxUint64}),
		"float16": mk([]int{2, 2}, []Half{HalfFrom(1.5), HalfFrom(-0.0), HalfFrom(65504), HalfFrom(float32(math.Inf(1)))}),
		"float32": mk([]int{2, 3}, []float32{1, -2.5, float32(math.NaN()), float32(math.Inf(-1)), 1e-40, math.MaxFloat32}),
		"float64": mk([]int{2, 1, 2}, []float64{math.Pi, -0.0, math.SmallestNonzeroFloat64, math.MaxFloat64}),
		"scalar":  mk([]int{}, []float32{7}),
		"empty":   mk([]int{4, 0, 2}, []float64{}),
	}
}

// writeRoundTrip writes the round-trip arrays into dir in every form:
// .npy of each format version and both kinds of archive.
func writeRoundTrip(t *testing.T, dir string, arrays map[string]*Array) map[string]*Array {
	t.Helper()
	files := map[string]*Array{}
	for name, a := range arrays {
		for v := 1; v <= 3; v++ {
			var buf bytes.Buffer
			if err := WriteVersion(&buf, a, v); err != nil {
				t.Fatal(err)
			}
			fn := fmt.Sprintf("%s_v%d.npy", name, v)
			if err := os.WriteFile(filepath.Join(dir, fn), buf.Bytes(), 0o644); err != nil {
				t.Fatal(err)
			}
			files[fn] = a
		}
	}
	for _, compress := range []bool{false, true} {
		fn := "stored.npz"
		if compress {
			fn = "deflated.npz"
		}
		if err := WriteNPZFile(filepath.Join(dir, fn), arrays, compress); err != nil {
			t.Fatal(err)
		}
		for name, a := range arrays {
			files[fn+":"+name] = a
		}
	}
	return files
}

// toText formats a as make.py does.
func toText(name string, a *Array) textArray {
	ta := textArray{name: name, dtype: a.DType.String(), shape: a.Shape}
	for i, x := range a.AsFloat64() {
		switch v := a.Data.(type) {
		case []bool, []Half, []float32, []float64:
			if _, ok := v.([]bool); ok {
				ta.vals = append(ta.vals, strconv.Itoa(int(x)))
			} else {
				ta.vals = append(ta.vals, strconv.FormatFloat(x, 'x', -1, 64))
			}
		default:
			ta.vals = append(ta.vals, fmt.Sprint(slicesIndex(v, i)))
		}
	}
	return ta
}

// TestRoundTripGo reads back what Write and the NPZ writer wrote.
func TestRoundTripGo(t *testing.T) {
	dir := t.TempDir()
	for name, a := range writeRoundTrip(t, dir, roundTripArrays(t)) {
		got, err := readNamed(dir, name)
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if d := matchText(got, toText(name, a)); d != "" {
			t.Errorf("%s: %s", name, d)
		}
	}
}

// python returns /usr/bin/python3 when it has numpy, or skips.
func python(t *testing.T) string {
	t.Helper()
	const py = "/usr/bin/python3"
	if err := exec.Command(py, "-c", "import numpy").Run(); err != nil {
		t.Skipf("%s with numpy is not available (%v)", py, err)
	}
	return py
}

// TestRoundTripNumPy has numpy read the files Go wrote (every dtype, every
// format version, both archive kinds) and compares what it read.
func TestRoundTripNumPy(t *testing.T) {
	py := python(t)
	dir := t.TempDir()
	files := writeRoundTrip(t, dir, roundTripArrays(t))
	out, err := exec.Command(py, "testdata/make.py", "dump", dir).CombinedOutput()
	if err != nil {
		t.Fatalf("make.py dump: %v\n%s", err, out)
	}
	got := parseText(t, string(out))
	if len(got) != len(files) {
		t.Errorf("numpy read %d arrays, Go wrote %d", len(got), len(files))
	}
	for _, g := range got {
		a := files[g.name]
		if a == nil {
			t.Errorf("numpy read %s, which Go did not write", g.name)
			continue
		}
		if d := matchText(a, g); d != "" {
			t.Errorf("%s as numpy read it: %s", g.name, d)
		}
	}
}

// TestHeaderLayout checks the exact bytes of a written header, as numpy
// writes it.
func TestHeaderLayout(t *testing.T) {
	a, _ := New([]int{3}, []float32{1, 2, 3})
	var buf bytes.Buffer
	if err := Write(&buf, a); err != nil {
		t.Fatal(err)
	}
	b := buf.Bytes()
	dict := "{'descr': '<f4', 'fortran_order': False, 'shape': (3,), }"
	want := "\x93NUMPY\x01\x00\x76\x00" + dict + strings.Repeat(" ", 128-10-len(dict)-1) + "\n"
	if got := string(b[:128]); got != want {
		t.Errorf("header\n%q\nwant\n%q", got, want)
	}
	if len(b) != 128+12 {
		t.Errorf("file of %d bytes, want 140", len(b))
	}
}

// TestFortranToC checks the reordering against a hand-worked case.
func TestFortranToC(t *testing.T) {
	// A 2×3 array [[1 2 3] [4 5 6]] in column-major order is 1 4 2 5 3 6.
	got := fortranToC([]byte{1, 4, 2, 5, 3, 6}, []int{2, 3}, 1)
	if !bytes.Equal(got, []byte{1, 2, 3, 4, 5, 6}) {
		t.Errorf("2×3: %v", got)
	}
	// 2×2×2: element (i,j,k) at Fortran offset i + 2j + 4k.
	src := make([]byte, 8)
	for i := range 2 {
		for j := range 2 {
			for k := range 2 {
				src[i+2*j+4*k] = byte(100*i + 10*j + k)
			}
		}
	}
	want := []byte{0, 1, 10, 11, 100, 101, 110, 111}
	if got := fortranToC(src, []int{2, 2, 2}, 1); !bytes.Equal(got, want) {
		t.Errorf("2×2×2: %v, want %v", got, want)
	}
}

// npyBytes builds a .npy file of version major with the given header text
// and data, padding nothing.
func npyBytes(major int, dict string, data []byte) []byte {
	b := []byte(magic)
	b = append(b, byte(major), 0)
	if major == 1 {
		b = append(b, byte(len(dict)), byte(len(dict)>>8))
	} else {
		b = append(b, byte(len(dict)), byte(len(dict)>>8), byte(len(dict)>>16), byte(len(dict)>>24))
	}
	return append(append(b, dict...), data...)
}

// TestHostileNPY feeds malformed files to ReadBytes and Read and checks the
// errors.
func TestHostileNPY(t *testing.T) {
	dict := func(descr, fortran, shape string) string {
		return fmt.Sprintf("{'descr': '%s', 'fortran_order': %s, 'shape': %s, }\n", descr, fortran, shape)
	}
	huge := []byte(magic + "\x02\x00\xff\xff\xff\x7f")
	cases := []struct {
		name string
		file []byte
		want string
	}{
		{"empty", nil, "first 8 bytes"},
		{"magic", []byte("\x93NUMPZ\x01\x00\x00\x00"), "does not start with"},
		{"version", npyBytes(1, "", nil)[:6:6], "first 8 bytes"},
		{"version 4", []byte(magic + "\x04\x00\x00\x00"), "format version 4.0"},
		{"version 1.1", []byte(magic + "\x01\x01\x00\x00"), "format version 1.1"},
		{"header length", huge, "longer than"},
		{"short header", npyBytes(1, dict("<f4", "False", "(2,)"), nil)[:30], "ends within its"},
		{"short data", npyBytes(1, dict("<f4", "False", "(2,)"), []byte{1, 2, 3, 4, 5}), "needs 8 bytes of data, the file holds 5"},
		{"trailing data", npyBytes(1, dict("|u1", "False", "(2,)"), []byte{1, 2, 3}), "1 more after them"},
		{"overflow", npyBytes(1, dict("<f8", "False", "(4294967296, 4294967296)"), nil), "more elements than an int counts"},
		{"byte overflow", npyBytes(1, dict("<f8", "False", "(2305843009213693952,)"), nil), "more bytes than an int counts"},
		{"negative", npyBytes(1, dict("<f4", "False", "(-1, 2)"), nil), "not a non-negative int"},
		{"int too big", npyBytes(1, dict("<f4", "False", "(99999999999999999999,)"), nil), "integer"},
		{"structured", npyBytes(1, "{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (1,), }", make([]byte, 4)), "structured"},
		{"object", npyBytes(1, dict("|O", "False", "(1,)"), make([]byte, 8)), "not supported"},
		{"order", npyBytes(1, dict("=f4", "False", "(1,)"), make([]byte, 4)), "byte order"},
		{"pipe", npyBytes(1, dict("|f4", "False", "(1,)"), make([]byte, 4)), "only for one-byte types"},
		{"fortran", npyBytes(1, dict("<f4", "1", "(1,)"), make([]byte, 4)), "fortran_order is not True or False"},
		{"shape list", npyBytes(1, dict("<f4", "False", "[1]"), make([]byte, 4)), "shape is not a tuple"},
		{"missing key", npyBytes(1, "{'descr': '<f4', 'shape': (1,)}", make([]byte, 4)), "exactly the keys"},
		{"repeated key", npyBytes(1, "{'descr': '<f4', 'descr': '<f4', 'shape': (1,)}", make([]byte, 4)), "twice"},
		{"not a dict", npyBytes(1, "(1, 2)", nil), "not a dictionary"},
		{"junk", npyBytes(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (1,), } x", nil), "unexpected text"},
		{"unterminated", npyBytes(1, "{'descr': '<f4", nil), "unterminated string"},
		{"deep", npyBytes(1, strings.Repeat("(", 100), nil), "nested too deeply"},
		{"utf8", npyBytes(3, "{'descr': '<f4\xff', 'fortran_order': False, 'shape': (1,), }", nil), "not valid UTF-8"},
	}
	for _, c := range cases {
		_, err := ReadBytes(c.file)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: ReadBytes error %v, want one containing %q", c.name, err, c.want)
		} else if !errors.Is(err, ErrFormat) {
			t.Errorf("%s: error %v does not wrap ErrFormat", c.name, err)
		}
		if _, err := Read(bytes.NewReader(c.file)); err == nil && c.name != "trailing data" {
			t.Errorf("%s: Read accepted it", c.name)
		}
	}
	// A header claiming a gigabyte with a few bytes behind it costs only
	// those bytes.
	f := npyBytes(1, dict("<f4", "False", "(268435456,)"), make([]byte, 100))
	if _, err := Read(bytes.NewReader(f)); err == nil || !strings.Contains(err.Error(), "the file holds 100") {
		t.Errorf("huge claimed array: %v", err)
	}
	// Python 2's long integers and a header without the trailing comma.
	a, err := ReadBytes(npyBytes(1, "{'descr':'<i2','fortran_order':True,'shape':(2L,1L)}", []byte{1, 0, 2, 0}))
	if err != nil || !slices.Equal(a.Shape, []int{2, 1}) || !slices.Equal(a.Int16s(), []int16{1, 2}) {
		t.Errorf("Python 2 header: %v %v", a, err)
	}
}

// TestReadFileErrors names the file in its errors.
func TestReadFileErrors(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "bad.npy")
	os.WriteFile(p, []byte("nonsense"), 0o644)
	if _, err := ReadFile(p); err == nil || !strings.Contains(err.Error(), p) {
		t.Errorf("ReadFile of a bad file: %v", err)
	}
	if _, err := ReadFile(filepath.Join(dir, "absent.npy")); err == nil || !errors.Is(err, os.ErrNotExist) {
		t.Errorf("ReadFile of an absent file: %v", err)
	}
	if _, err := ReadFile(dir); err == nil || !strings.Contains(err.Error(), "not a regular file") {
		t.Errorf("ReadFile of a directory: %v", err)
	}
}

// TestSequentialRead reads two arrays written one after another.
func TestSequentialRead(t *testing.T) {
	var buf bytes.Buffer
	a, _ := New([]int{2}, []int32{1, 2})
	b, _ := New([]int{}, []float64{3})
	Write(&buf, a)
	Write(&buf, b)
	x, err1 := Read(&buf)
	y, err2 := Read(&buf)
	if err1 != nil || err2 != nil || !slices.Equal(x.Int32s(), []int32{1, 2}) || !slices.Equal(y.Float64s(), []float64{3}) {
		t.Errorf("read %v %v, %v %v", x, err1, y, err2)
	}
}

// TestNewAndCheck checks New's and Check's refusals.
func TestNewAndCheck(t *testing.T) {
	if _, err := New([]int{2}, []int{1, 2}); err == nil || !strings.Contains(err.Error(), "[]int is not a slice") {
		t.Errorf("New([]int): %v", err)
	}
	if _, err := New([]int{3}, []float32{1, 2}); err == nil || !strings.Contains(err.Error(), "needs 3 elements, holds 2") {
		t.Errorf("New short: %v", err)
	}
	if _, err := New([]int{-1}, []float32{}); err == nil || !strings.Contains(err.Error(), "negative") {
		t.Errorf("New negative: %v", err)
	}
	bad := &Array{DType: Float64, Shape: []int{1}, Data: []float32{1}}
	if err := Write(new(bytes.Buffer), bad); err == nil || !strings.Contains(err.Error(), "holds data of type []float32") {
		t.Errorf("Write mismatched: %v", err)
	}
	z, err := Zeros(Int16, []int{2, 3})
	if err != nil || len(z.Int16s()) != 6 || z.Float32s() != nil {
		t.Errorf("Zeros: %v %v", z, err)
	}
	if _, err := Zeros(Float64, []int{1 << 62, 4}); err == nil {
		t.Errorf("Zeros overflow accepted")
	}
}

// TestWriteV2 writes a header too long for version 1.0, which Write puts
// in version 2.0.
func TestWriteV2(t *testing.T) {
	shape := make([]int, 10000)
	for i := range shape {
		shape[i] = 1
	}
	a, err := New(shape, []float32{5})
	if err != nil {
		t.Fatal(err)
	}
	// 10000 dimensions of 1 make a header of about 30000 bytes: version 1.
	var buf bytes.Buffer
	if err := Write(&buf, a); err != nil {
		t.Fatal(err)
	}
	if buf.Bytes()[6] != 1 {
		t.Errorf("a 30 kB header was written as version %d", buf.Bytes()[6])
	}
	long := make([]int, 30000)
	for i := range long {
		long[i] = 1
	}
	a, _ = New(long, []float32{5})
	buf.Reset()
	if err := Write(&buf, a); err != nil {
		t.Fatal(err)
	}
	if buf.Bytes()[6] != 2 {
		t.Errorf("a 90 kB header was written as version %d", buf.Bytes()[6])
	}
	if err := WriteVersion(new(bytes.Buffer), a, 1); err == nil || !strings.Contains(err.Error(), "does not fit format 1.0") {
		t.Errorf("WriteVersion 1 of a long header: %v", err)
	}
	back, err := ReadBytes(buf.Bytes())
	if err != nil || len(back.Shape) != 30000 || back.Float32s()[0] != 5 {
		t.Errorf("reading the version 2.0 file: %v", err)
	}
}
