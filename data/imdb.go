package data

import (
	"archive/zip"
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"regexp"
	"strconv"
	"strings"

	"github.com/tartanml/tartan/npy"
)

// Sequences is a labelled set of integer sequences of varying lengths, such
// as reviews given as word indices. X[i] is sample i and Labels[i] its
// class, in 0..Classes-1.
type Sequences struct {
	Name    string
	X       [][]int32
	Labels  []uint8
	Classes int
}

// Len returns the number of samples.
func (s *Sequences) Len() int { return len(s.X) }

// IMDB's file: a NumPy .npz archive of x_train and x_test, object arrays of
// Python lists of word ranks (1 is the most frequent word), and y_train and
// y_test, integer arrays of 0 (negative) or 1 (positive).
const (
	imdbFile      = "imdb.npz"
	maxIMDBMember = 256 << 20 // each array; x_train's pickle is far smaller
	imdbSamples   = 25000
	imdbMaxRank   = 1 << 24
)

var imdb = &source{
	title:     "IMDB",
	dirNames:  []string{"imdb"},
	cacheDirs: []string{"."},
	fetchDir:  ".",
	layouts:   [][][]string{{{imdbFile}}},
	mirrors:   []string{"https://storage.googleapis.com/tensorflow/tf-keras-datasets/"},
	remote:    []remoteFile{{imdbFile, 17464789, "69664113be75683a8fe16e3ed0ab59fda8886cb3cd7ada244f7d9544e4676b9f"}},
}

// NumWords keeps IMDB's num_words most frequent words, as Keras's
// num_words: a word whose index (after IndexFrom) is num_words or more
// becomes OOVChar (or is dropped with NoOOVChar). Not given or 0 keeps all.
func NumWords(n int) Option { return func(c *config) { c.args.numWords = &n } }

// SkipTop turns IMDB's words of index below n into OOVChar too (Keras's
// skip_top; 0 by default). As in Keras, the index compared is the one after
// IndexFrom, so the start character counts among them.
func SkipTop(n int) Option { return func(c *config) { c.args.skipTop = &n } }

// MaxLen drops the IMDB reviews of maxlen or more indices (counting the
// start character), as Keras's maxlen does, from both splits. Not given or
// 0 keeps all.
func MaxLen(n int) Option { return func(c *config) { c.args.maxLen = &n } }

// Seed sets the seed of the shuffle of IMDB's reviews (113 by default, as
// in Keras); the order is NumPy's RandomState(seed).shuffle, the training
// set shuffled first and the test set with the generator's next numbers.
func Seed(s int64) Option { return func(c *config) { c.args.seed = &s } }

// StartChar sets the index that starts every IMDB review (1 by default).
func StartChar(ch int) Option {
	return func(c *config) { c.args.startChar, c.args.noStart = &ch, false }
}

// NoStartChar starts IMDB's reviews with no extra index (Keras's
// start_char=None).
func NoStartChar() Option { return func(c *config) { c.args.noStart = true } }

// OOVChar sets the index that replaces the words NumWords and SkipTop
// leave out (2 by default).
func OOVChar(ch int) Option { return func(c *config) { c.args.oovChar, c.args.noOOV = &ch, false } }

// NoOOVChar drops the words NumWords and SkipTop leave out instead of
// replacing them (Keras's oov_char=None).
func NoOOVChar() Option { return func(c *config) { c.args.noOOV = true } }

// IndexFrom shifts every word rank by n (3 by default), leaving 0 for
// padding, 1 for the start and 2 for out-of-vocabulary words.
func IndexFrom(n int) Option { return func(c *config) { c.args.indexFrom = &n } }

// imdbArgs are IMDB's options with Keras's defaults.
type imdbArgs struct {
	numWords, skipTop, maxLen int
	seed                      int64
	start, oov                int // −1 for none
	indexFrom                 int
}

func newIMDBArgs(a loaderArgs) (imdbArgs, error) {
	r := imdbArgs{seed: 113, start: 1, oov: 2, indexFrom: 3}
	if a.numWords != nil {
		r.numWords = *a.numWords
	}
	if a.skipTop != nil {
		r.skipTop = *a.skipTop
	}
	if a.maxLen != nil {
		r.maxLen = *a.maxLen
	}
	if a.seed != nil {
		r.seed = *a.seed
	}
	if a.startChar != nil {
		r.start = *a.startChar
	}
	if a.oovChar != nil {
		r.oov = *a.oovChar
	}
	if a.indexFrom != nil {
		r.indexFrom = *a.indexFrom
	}
	if a.noStart {
		r.start = -1
	}
	if a.noOOV {
		r.oov = -1
	}
	checks := []struct {
		name string
		v    int
	}{{"num_words", r.numWords}, {"skip_top", r.skipTop}, {"maxlen", r.maxLen}, {"index_from", r.indexFrom}}
	if r.start != -1 {
		checks = append(checks, struct {
			name string
			v    int
		}{"start_char", r.start})
	}
	if r.oov != -1 {
		checks = append(checks, struct {
			name string
			v    int
		}{"oov_char", r.oov})
	}
	for _, c := range checks {
		if c.v < 0 || c.v > imdbMaxRank {
			return r, fmt.Errorf("data: IMDB: %s %d must lie in [0, %d]", c.name, c.v, imdbMaxRank)
		}
	}
	if r.seed < 0 || r.seed > math.MaxUint32 {
		return r, fmt.Errorf("data: IMDB: seed %d must lie in [0, %d]", r.seed, uint32(math.MaxUint32))
	}
	return r, nil
}

// IMDB loads Keras's IMDB movie-review sentiment data set as
// imdb.load_data() does: 25,000 training and 25,000 test reviews, each a
// sequence of word indices, labelled 0 (negative) or 1 (positive). The
// reviews of each split are shuffled (Seed, 113 by default), each starts
// with StartChar (1) and has its word ranks shifted by IndexFrom (3); then
// MaxLen drops the long reviews, and the indices outside [SkipTop,
// NumWords) become OOVChar (2). It reads imdb.npz from the Keras cache or
// where Dir or TARTAN_DATA say, downloading it when it is absent.
func IMDB(opts ...Option) (train, test *Sequences, err error) {
	args, err := newIMDBArgs(newConfig(opts).args)
	if err != nil {
		return nil, nil, err
	}
	src := *imdb
	src.read = func(files map[string]string) (*Dataset, *Dataset, error) {
		// The loader's machinery returns image data sets; the sequences
		// travel out through train and test instead.
		train, test, err = readIMDB(files[imdbFile], args)
		return nil, nil, err
	}
	if _, _, err := src.load(opts); err != nil {
		return nil, nil, err
	}
	return train, test, nil
}

// readIMDB reads and prepares the two splits from the .npz file at p.
func readIMDB(p string, a imdbArgs) (train, test *Sequences, err error) {
	if err := checkFile(p); err != nil {
		return nil, nil, err
	}
	zr, err := zip.OpenReader(p)
	if err != nil {
		if errors.Is(err, zip.ErrFormat) {
			return nil, nil, fmt.Errorf("data: %s: %w: not a .npz (zip) archive: %v", p, ErrBadContent, err)
		}
		return nil, nil, fmt.Errorf("data: %s: read: %w", p, err)
	}
	defer zr.Close()
	members := map[string][]byte{}
	for _, f := range zr.File {
		name := strings.TrimSuffix(f.Name, ".npy")
		switch name {
		case "x_train", "y_train", "x_test", "y_test":
		default:
			continue
		}
		if members[name] != nil {
			return nil, nil, fmt.Errorf("data: %s: %w: the archive holds %s twice", p, ErrBadContent, f.Name)
		}
		if f.UncompressedSize64 > maxIMDBMember {
			return nil, nil, fmt.Errorf("data: %s: %s: %w: it is %d bytes, more than the %d bytes an IMDB array may have", p, f.Name, ErrBadContent, f.UncompressedSize64, maxIMDBMember)
		}
		rc, err := f.Open()
		if err != nil {
			return nil, nil, fmt.Errorf("data: %s: %s: %w: %v", p, f.Name, ErrBadContent, err)
		}
		size := int64(f.UncompressedSize64)
		b, err := readPayload(rc, size+1, min(size+1, idxChunk))
		rc.Close()
		switch {
		case err == nil:
			err = fmt.Errorf("it holds more than the %d bytes it declares", size)
		case (err == io.EOF || err == io.ErrUnexpectedEOF) && int64(len(b)) == size:
			err = nil
		case err == io.EOF || err == io.ErrUnexpectedEOF:
			err = fmt.Errorf("it holds %d bytes but declares %d", len(b), size)
		}
		if err != nil {
			return nil, nil, fmt.Errorf("data: %s: %s: %w: %v", p, f.Name, ErrBadContent, err)
		}
		members[name] = b
	}
	var missing []string
	for _, n := range []string{"x_train", "y_train", "x_test", "y_test"} {
		if members[n] == nil {
			missing = append(missing, n+".npy")
		}
	}
	if missing != nil {
		return nil, nil, fmt.Errorf("data: %s: %w: the archive lacks %s", p, ErrBadContent, strings.Join(missing, ", "))
	}
	var x [2][][]int32
	var y [2][]uint8
	for k, split := range []string{"train", "test"} {
		if x[k], err = decodeIMDBSequences(members["x_"+split], p+": x_"+split+".npy"); err != nil {
			return nil, nil, err
		}
		if y[k], err = decodeIMDBLabels(members["y_"+split], p+": y_"+split+".npy", len(x[k])); err != nil {
			return nil, nil, err
		}
	}
	prepareIMDB(&x, &y, a)
	if a.maxLen > 0 && (len(x[0]) == 0 || len(x[1]) == 0) {
		return nil, nil, fmt.Errorf("data: IMDB: no review is shorter than maxlen %d in the %s set; raise MaxLen", a.maxLen, map[bool]string{true: "training", false: "test"}[len(x[0]) == 0])
	}
	return &Sequences{Name: "imdb/train", X: x[0], Labels: y[0], Classes: 2},
		&Sequences{Name: "imdb/test", X: x[1], Labels: y[1], Classes: 2}, nil
}

// prepareIMDB applies Keras's load_data steps to both splits in place.
func prepareIMDB(x *[2][][]int32, y *[2][]uint8, a imdbArgs) {
	rng := newMT19937(uint32(a.seed))
	for k := range x {
		perm := rng.permutation(len(x[k]))
		xs, ys := make([][]int32, len(perm)), make([]uint8, len(perm))
		for i, j := range perm {
			xs[i], ys[i] = x[k][j], y[k][j]
		}
		x[k], y[k] = xs, ys
	}
	for k := range x {
		for i, s := range x[k] {
			out := make([]int32, 0, len(s)+1)
			if a.start >= 0 {
				out = append(out, int32(a.start))
			}
			for _, w := range s {
				out = append(out, w+int32(a.indexFrom))
			}
			x[k][i] = out
		}
		if a.maxLen > 0 {
			var xs [][]int32
			var ys []uint8
			for i, s := range x[k] {
				if len(s) < a.maxLen {
					xs, ys = append(xs, s), append(ys, y[k][i])
				}
			}
			x[k], y[k] = xs, ys
		}
	}
	numWords := int32(a.numWords)
	if numWords == 0 {
		// Keras takes the largest index of either split; as the test
		// below is w < num_words, that largest index itself becomes OOV.
		for k := range x {
			for _, s := range x[k] {
				for _, w := range s {
					numWords = max(numWords, w)
				}
			}
		}
	}
	for k := range x {
		for i, s := range x[k] {
			out := s[:0]
			for _, w := range s {
				switch {
				case int(w) >= a.skipTop && w < numWords:
					out = append(out, w)
				case a.oov >= 0:
					out = append(out, int32(a.oov))
				}
			}
			x[k][i] = out
		}
	}
}

var npyHeaderShape = regexp.MustCompile(`'shape':\s*\((\d+),?\)`)
var npyHeaderDescr = regexp.MustCompile(`'descr':\s*'([^']*)'`)

// npyObjectPayload checks that b is a .npy file of a one-dimensional object
// array and returns its length and the pickle that follows the header.
func npyObjectPayload(b []byte) (int, []byte, error) {
	if len(b) < 10 || !bytes.Equal(b[:6], []byte("\x93NUMPY")) {
		return 0, nil, errors.New("not a .npy file")
	}
	var hlen, start int
	switch b[6] {
	case 1:
		hlen, start = int(b[8])|int(b[9])<<8, 10
	case 2, 3:
		if len(b) < 12 {
			return 0, nil, errors.New("cut off in the header")
		}
		hlen, start = int(b[8])|int(b[9])<<8|int(b[10])<<16|int(b[11])<<24, 12
	default:
		return 0, nil, fmt.Errorf(".npy format version %d is not supported", b[6])
	}
	if hlen < 0 || hlen > len(b)-start {
		return 0, nil, errors.New("cut off in the header")
	}
	h := string(b[start : start+hlen])
	d := npyHeaderDescr.FindStringSubmatch(h)
	s := npyHeaderShape.FindStringSubmatch(h)
	if d == nil || d[1] != "|O" || s == nil {
		return 0, nil, fmt.Errorf("want a one-dimensional object array (|O), got header %s", strings.TrimSpace(h))
	}
	n, err := strconv.Atoi(s[1])
	if err != nil || n > imdbSamples {
		return 0, nil, fmt.Errorf("%s reviews, more than the %d of a split", s[1], imdbSamples)
	}
	return n, b[start+hlen:], nil
}

// decodeIMDBSequences decodes a split's x array; where names it.
func decodeIMDBSequences(b []byte, where string) ([][]int32, error) {
	n, pk, err := npyObjectPayload(b)
	if err != nil {
		return nil, fmt.Errorf("data: %s: %w: %v", where, ErrBadContent, err)
	}
	v, err := unpickle(pk)
	if err != nil {
		return nil, fmt.Errorf("data: %s: %w: %w", where, ErrBadContent, err)
	}
	arr, err := numpyArray(v)
	if err != nil {
		return nil, fmt.Errorf("data: %s: %w: %w", where, ErrBadContent, err)
	}
	if arr.descr != "|O" || len(arr.shape) != 1 || arr.shape[0] != n || n == 0 {
		return nil, fmt.Errorf("data: %s: %w: the pickled array is %s of shape %v; want a non-empty object array of shape (%d,)", where, ErrBadContent, arr.descr, arr.shape, n)
	}
	out := make([][]int32, n)
	for i, o := range arr.objects {
		l, ok := o.(*pyList)
		if !ok {
			return nil, fmt.Errorf("data: %s: %w: review %d is %s, not a list", where, ErrBadContent, i, pyKind(o))
		}
		s := make([]int32, len(l.items))
		for j, w := range l.items {
			r, ok := w.(int64)
			if !ok || r < 0 || r > imdbMaxRank {
				return nil, fmt.Errorf("data: %s: %w: word %d of review %d is %v; want a rank in [0, %d]", where, ErrBadContent, j, i, w, imdbMaxRank)
			}
			s[j] = int32(r)
		}
		out[i] = s
	}
	return out, nil
}

// decodeIMDBLabels decodes a split's y array of n labels.
func decodeIMDBLabels(b []byte, where string, n int) ([]uint8, error) {
	a, err := npy.ReadBytes(b)
	if err != nil {
		return nil, fmt.Errorf("data: %s: %w: %v", where, ErrBadContent, err)
	}
	if len(a.Shape) != 1 || a.Shape[0] != n {
		return nil, fmt.Errorf("data: %s: %w: labels of shape %v for %d reviews", where, ErrBadContent, a.Shape, n)
	}
	v := a.AsFloat64()
	out := make([]uint8, n)
	for i, x := range v {
		if x != 0 && x != 1 {
			return nil, fmt.Errorf("data: %s: %w: label %d is %v; want 0 or 1", where, ErrBadContent, i, x)
		}
		out[i] = uint8(x)
	}
	return out, nil
}

// mt19937 is the Mersenne Twister as NumPy's RandomState uses it, for
// Keras's shuffle of IMDB.
type mt19937 struct {
	mt  [624]uint32
	idx int
}

func newMT19937(seed uint32) *mt19937 {
	r := &mt19937{idx: 624}
	r.mt[0] = seed
	for i := 1; i < 624; i++ {
		r.mt[i] = 1812433253*(r.mt[i-1]^(r.mt[i-1]>>30)) + uint32(i)
	}
	return r
}

func (r *mt19937) uint32() uint32 {
	if r.idx >= 624 {
		for i := 0; i < 624; i++ {
			y := r.mt[i]&0x80000000 | r.mt[(i+1)%624]&0x7fffffff
			v := r.mt[(i+397)%624] ^ y>>1
			if y&1 != 0 {
				v ^= 0x9908b0df
			}
			r.mt[i] = v
		}
		r.idx = 0
	}
	y := r.mt[r.idx]
	r.idx++
	y ^= y >> 11
	y ^= y << 7 & 0x9d2c5680
	y ^= y << 15 & 0xefc60000
	y ^= y >> 18
	return y
}

// interval returns a uniform integer in [0, hi] by masked rejection, as
// NumPy's legacy random_interval does for hi < 2³².
func (r *mt19937) interval(hi uint32) uint32 {
	if hi == 0 {
		return 0
	}
	mask := hi
	for s := uint(1); s <= 16; s <<= 1 {
		mask |= mask >> s
	}
	for {
		if v := r.uint32() & mask; v <= hi {
			return v
		}
	}
}

// permutation returns RandomState.shuffle(arange(n)).
func (r *mt19937) permutation(n int) []int {
	p := make([]int, n)
	for i := range p {
		p[i] = i
	}
	for i := n - 1; i > 0; i-- {
		j := int(r.interval(uint32(i)))
		p[i], p[j] = p[j], p[i]
	}
	return p
}
