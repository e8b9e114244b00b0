package data

import (
	"archive/zip"
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/tartanml/tartan/npy"
)

// TestMT19937MatchesNumPy compares the shuffle with NumPy's: from
// RandomState(113), shuffle(arange(10)) then shuffle(arange(7)); from
// RandomState(5), shuffle(arange(1000)), whose first 8 and last 3 entries
// are given (values printed by NumPy 1.24).
func TestMT19937MatchesNumPy(t *testing.T) {
	r := newMT19937(113)
	if got, want := r.permutation(10), []int{9, 3, 6, 1, 0, 7, 4, 8, 2, 5}; !reflect.DeepEqual(got, want) {
		t.Errorf("seed 113, 10: %v, want %v", got, want)
	}
	if got, want := r.permutation(7), []int{5, 1, 0, 3, 6, 4, 2}; !reflect.DeepEqual(got, want) {
		t.Errorf("seed 113 then 7: %v, want %v", got, want)
	}
	p := newMT19937(5).permutation(1000)
	if got, want := append(p[:8:8], p[997:]...), []int{544, 515, 193, 11, 279, 653, 643, 763, 701, 206, 867}; !reflect.DeepEqual(got, want) {
		t.Errorf("seed 5, 1000: %v, want %v", got, want)
	}
}

// TestIMDBMatchesKeras loads the small imdb.npz that NumPy wrote
// (testdata/keras) under several arguments and compares with what Keras's
// steps give in Python.
func TestIMDBMatchesKeras(t *testing.T) {
	raw, err := os.ReadFile("testdata/keras/imdb_expected.json")
	if err != nil {
		t.Fatal(err)
	}
	var gold struct {
		Cases []struct {
			Name string
			Args map[string]*int
			Want struct {
				XTrain [][]int32 `json:"x_train"`
				YTrain []uint8   `json:"y_train"`
				XTest  [][]int32 `json:"x_test"`
				YTest  []uint8   `json:"y_test"`
			}
		}
	}
	if err := json.Unmarshal(raw, &gold); err != nil {
		t.Fatal(err)
	}
	if len(gold.Cases) != 5 {
		t.Fatalf("%d cases, want 5", len(gold.Cases))
	}
	for _, c := range gold.Cases {
		t.Run(c.Name, func(t *testing.T) {
			isolate(t)
			opts := []Option{Dir("testdata/keras")}
			for k, v := range c.Args {
				switch {
				case k == "start_char" && v == nil:
					opts = append(opts, NoStartChar())
				case k == "oov_char" && v == nil:
					opts = append(opts, NoOOVChar())
				case k == "start_char":
					opts = append(opts, StartChar(*v))
				case k == "oov_char":
					opts = append(opts, OOVChar(*v))
				case k == "num_words":
					opts = append(opts, NumWords(*v))
				case k == "skip_top":
					opts = append(opts, SkipTop(*v))
				case k == "maxlen":
					opts = append(opts, MaxLen(*v))
				case k == "index_from":
					opts = append(opts, IndexFrom(*v))
				case k == "seed":
					opts = append(opts, Seed(int64(*v)))
				default:
					t.Fatalf("argument %s", k)
				}
			}
			train, test, err := IMDB(opts...)
			if err != nil {
				t.Fatal(err)
			}
			norm := func(x [][]int32) [][]int32 {
				for i := range x {
					if x[i] == nil {
						x[i] = []int32{}
					}
				}
				return x
			}
			if !reflect.DeepEqual(norm(train.X), norm(c.Want.XTrain)) || !reflect.DeepEqual(train.Labels, c.Want.YTrain) {
				t.Errorf("train %v %v\nwant %v %v", train.X, train.Labels, c.Want.XTrain, c.Want.YTrain)
			}
			if !reflect.DeepEqual(norm(test.X), norm(c.Want.XTest)) || !reflect.DeepEqual(test.Labels, c.Want.YTest) {
				t.Errorf("test %v %v\nwant %v %v", test.X, test.Labels, c.Want.XTest, c.Want.YTest)
			}
			if train.Classes != 2 || train.Len() != len(c.Want.XTrain) || train.Name != "imdb/train" {
				t.Errorf("train: %d classes, %d samples, name %q", train.Classes, train.Len(), train.Name)
			}
		})
	}
}

// npyObjectArray writes a .npy file of a one-dimensional object array of
// lists of ints, as np.save does (protocol 3), without NumPy.
func npyObjectArray(seqs [][]int) []byte {
	var p pickler
	p.WriteString("\x80\x03")
	p.global("numpy.core.multiarray", "_reconstruct")
	p.global("numpy", "ndarray")
	p.WriteString("K\x00\x85C\x01b\x87R(K\x01")
	p.int(len(seqs))
	p.WriteString("\x85")
	p.global("numpy", "dtype")
	p.WriteString("X\x02\x00\x00\x00O8K\x00K\x01\x87R(K\x03X\x01\x00\x00\x00|NNNJ\xff\xff\xff\xffJ\xff\xff\xff\xffK?tb\x89](")
	for _, s := range seqs {
		p.ints(s)
	}
	p.WriteString("etb.")
	h := "{'descr': '|O', 'fortran_order': False, 'shape': (" + strconv.Itoa(len(seqs)) + ",), }"
	for (10+len(h)+1)%64 != 0 {
		h += " "
	}
	h += "\n"
	out := append([]byte("\x93NUMPY\x01\x00"), byte(len(h)), byte(len(h)>>8))
	return append(append(out, h...), p.Bytes()...)
}

// imdbNPZ writes an imdb.npz of the given reviews and labels; members not
// in skip.
func imdbNPZ(t *testing.T, xtr, xte [][]int, ytr, yte []int64, skip string) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	add := func(name string, b []byte) {
		if name == skip {
			return
		}
		w, err := zw.Create(name)
		if err != nil {
			t.Fatal(err)
		}
		w.Write(b)
	}
	labels := func(v []int64) []byte {
		a, err := npy.New([]int{len(v)}, v)
		if err != nil {
			t.Fatal(err)
		}
		var b bytes.Buffer
		if err := npy.Write(&b, a); err != nil {
			t.Fatal(err)
		}
		return b.Bytes()
	}
	add("x_train.npy", npyObjectArray(xtr))
	add("y_train.npy", labels(ytr))
	add("x_test.npy", npyObjectArray(xte))
	add("y_test.npy", labels(yte))
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// TestIMDBSynthetic reads an imdb.npz written here, from the Keras cache,
// worked by hand: each review gains the start 1 and its ranks 3
// (index_from), and 300 + 3, past NumWords(100), becomes the OOV 2; the
// order is the shuffle's, checked against TestMT19937MatchesNumPy's
// generator.
func TestIMDBSynthetic(t *testing.T) {
	isolate(t)
	cache := t.TempDir()
	writeFile(t, cache, imdbFile, imdbNPZ(t, [][]int{{1, 2, 300}, {5}}, [][]int{{7, 7}}, []int64{0, 1}, []int64{1}, ""))
	train, test, err := IMDB(CacheDir(cache), Download(false), NumWords(100))
	if err != nil {
		t.Fatal(err)
	}
	r := newMT19937(113)
	perm := r.permutation(2)
	x := [][]int32{{1, 4, 5, 2}, {1, 8}} // 300 + 3 is past num_words 100: OOV 2
	y := []uint8{0, 1}
	wantX, wantY := [][]int32{x[perm[0]], x[perm[1]]}, []uint8{y[perm[0]], y[perm[1]]}
	if !reflect.DeepEqual(train.X, wantX) || !reflect.DeepEqual(train.Labels, wantY) {
		t.Errorf("train %v %v, want %v %v", train.X, train.Labels, wantX, wantY)
	}
	if !reflect.DeepEqual(test.X, [][]int32{{1, 10, 10}}) || !reflect.DeepEqual(test.Labels, []uint8{1}) {
		t.Errorf("test %v %v", test.X, test.Labels)
	}
}

func TestIMDBErrors(t *testing.T) {
	isolate(t)
	good := func() ([][]int, [][]int, []int64, []int64) {
		return [][]int{{1, 2}, {3}}, [][]int{{4}}, []int64{0, 1}, []int64{1}
	}
	cases := []struct {
		name string
		file func() []byte
		opts []Option
		want string
		is   error
	}{
		{"missing member", func() []byte { a, b, c, d := good(); return imdbNPZ(t, a, b, c, d, "y_test.npy") }, nil,
			"the archive lacks y_test.npy", ErrBadContent},
		{"label 2", func() []byte { a, b, c, _ := good(); return imdbNPZ(t, a, b, c, []int64{2}, "") }, nil,
			"y_test.npy: data does not fit the data set: label 0 is 2; want 0 or 1", ErrBadContent},
		{"label count", func() []byte { a, b, _, d := good(); return imdbNPZ(t, a, b, []int64{1}, d, "") }, nil,
			"labels of shape [1] for 2 reviews", ErrBadContent},
		{"negative rank", func() []byte { _, b, c, d := good(); return imdbNPZ(t, [][]int{{1}, {-1}}, b, c, d, "") }, nil,
			"word 0 of review 1 is -1; want a rank in [0, 16777216]", ErrBadContent},
		{"not a zip", func() []byte { return []byte("PK but not really") }, nil, "not a .npz (zip) archive", ErrBadContent},
		{"maxlen keeps nothing", func() []byte { a, b, c, d := good(); return imdbNPZ(t, a, b, c, d, "") }, []Option{MaxLen(2)},
			"data: IMDB: no review is shorter than maxlen 2 in the training set; raise MaxLen", nil},
		{"negative num_words", nil, []Option{NumWords(-1)}, "data: IMDB: num_words -1 must lie in [0, 16777216]", nil},
		{"bad seed", nil, []Option{Seed(-3)}, "data: IMDB: seed -3 must lie in [0, 4294967295]", nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			if c.file != nil {
				writeFile(t, dir, imdbFile, c.file())
			}
			_, _, err := IMDB(append([]Option{Dir(dir)}, c.opts...)...)
			if err == nil || !strings.Contains(err.Error(), c.want) || c.is != nil && !errors.Is(err, c.is) {
				t.Errorf("error %v, want %q", err, c.want)
			}
		})
	}
	_, _, err := IMDB(CacheDir(t.TempDir()), Download(false))
	if !errors.Is(err, ErrNotFound) || !strings.Contains(err.Error(), "https://storage.googleapis.com/tensorflow/tf-keras-datasets/imdb.npz  (17464789 bytes, SHA-256 69664113be75683a8fe16e3ed0ab59fda8886cb3cd7ada244f7d9544e4676b9f)") {
		t.Errorf("not found: %v", err)
	}
}

// TestRealIMDB reads the published imdb.npz when the Keras cache has it.
func TestRealIMDB(t *testing.T) {
	home, _ := os.UserHomeDir()
	dir := filepath.Join(home, ".keras", "datasets")
	if _, err := os.Stat(filepath.Join(dir, imdbFile)); err != nil {
		t.Skipf("imdb.npz is not in the Keras cache %s", dir)
	}
	train, test, err := IMDB(CacheDir(dir), Download(false), NumWords(10000))
	if err != nil {
		t.Fatal(err)
	}
	if train.Len() != 25000 || test.Len() != 25000 {
		t.Errorf("%d and %d reviews, want 25000 each", train.Len(), test.Len())
	}
	for _, s := range train.X {
		if s[0] != 1 {
			t.Fatalf("a review starts with %d, not the start index 1", s[0])
		}
		for _, w := range s {
			if w >= 10000 {
				t.Fatalf("index %d survives NumWords(10000)", w)
			}
		}
	}
}
