package data

import (
	"fmt"
	"io"
)

// CIFAR-100's python version: the archive cifar-100-python.tar.gz holds
// cifar-100-python/train, test and meta, each a pickled dict. train and
// test map "data" to a uint8 NumPy array of shape (N, 3072), each row a
// 32×32 image as three 1024-byte planes (red, green, blue), and
// "fine_labels" and "coarse_labels" to lists of N class numbers; meta maps
// "fine_label_names" and "coarse_label_names" to the classes' names.
const (
	cifar100Archive  = "cifar-100-python.tar.gz"
	cifar100Fine     = 100
	cifar100Coarse   = 20
	cifar100Train    = 50000
	cifar100Test     = 10000
	maxCIFAR100File  = 160 << 20 // the train pickle is 155,249,918 bytes
	cifar100ImageLen = 3 * cifarPlane
)

var cifar100Files = []string{"train", "test", "meta"}

// cifar100 is Krizhevsky's CIFAR-100, python version, as Keras reads it:
// extracted (as Keras leaves it in cifar-100-python) or as the archive.
var cifar100 = &source{
	title:     "CIFAR-100",
	dirNames:  []string{"cifar-100-python", "cifar-100", "cifar100"},
	cacheDirs: []string{"cifar-100-python", "."},
	fetchDir:  ".",
	layouts: [][][]string{
		{{"train"}, {"test"}, {"meta"}},
		{{cifar100Archive}},
	},
	mirrors: []string{"https://www.cs.toronto.edu/~kriz/"},
	remote: []remoteFile{
		{cifar100Archive, 169001437, "85cd44d02ba6437773c5bbd22e183051d648de2e7d6b014e1ef29b855ba677a7"},
	},
}

// loaderArgs holds the options of CIFAR100 and IMDB; nil fields were not
// given.
type loaderArgs struct {
	labelMode                     *string
	numWords, skipTop, maxLen     *int
	seed                          *int64
	startChar, oovChar, indexFrom *int
	noStart, noOOV                bool
}

// LabelMode chooses CIFAR100's labels, as Keras's label_mode: "fine" (the
// default, 100 classes) or "coarse" (20 superclasses).
func LabelMode(mode string) Option { return func(c *config) { c.args.labelMode = &mode } }

// CIFAR100 loads CIFAR-100 as Keras's cifar100.load_data() does: a
// training set of 50,000 and a test set of 10,000 colour 32×32×3 images,
// labelled with the 100 fine classes or, with LabelMode("coarse"), the 20
// coarse ones, with the classes' names from the meta file. It reads the
// python version of the data set, extracted (train, test and meta) or as
// the cifar-100-python.tar.gz archive; the images are turned
// channels-last. Both label lists are checked, whichever is used.
func CIFAR100(opts ...Option) (train, test *Dataset, err error) {
	c := newConfig(opts)
	mode := "fine"
	if c.args.labelMode != nil {
		mode = *c.args.labelMode
	}
	if mode != "fine" && mode != "coarse" {
		return nil, nil, fmt.Errorf("data: CIFAR-100: label mode %q is not \"fine\" or \"coarse\"", mode)
	}
	src := *cifar100
	src.read = func(files map[string]string) (*Dataset, *Dataset, error) { return readCIFAR100(files, mode) }
	return src.load(opts)
}

// readCIFAR100 reads the data set from the extracted files or the archive
// that files names.
func readCIFAR100(files map[string]string, mode string) (train, test *Dataset, err error) {
	raw := map[string][]byte{}
	where := map[string]string{}
	if archive, ok := files[cifar100Archive]; ok {
		if raw, err = readCIFAR100Archive(archive); err != nil {
			return nil, nil, err
		}
		for _, n := range cifar100Files {
			where[n] = archive + ": " + n
		}
	} else {
		for _, n := range cifar100Files {
			if raw[n], err = readBoundedFile(files[n], maxCIFAR100File, "a CIFAR-100 file"); err != nil {
				return nil, nil, err
			}
			where[n] = files[n]
		}
	}
	fine, coarse, err := decodeCIFAR100Meta(raw["meta"], where["meta"])
	if err != nil {
		return nil, nil, err
	}
	names := fine
	if mode == "coarse" {
		names = coarse
	}
	if train, err = decodeCIFAR100("cifar100/train", raw["train"], where["train"], cifar100Train, mode, names); err != nil {
		return nil, nil, err
	}
	if test, err = decodeCIFAR100("cifar100/test", raw["test"], where["test"], cifar100Test, mode, names); err != nil {
		return nil, nil, err
	}
	return train, test, nil
}

// readBoundedFile reads the regular file at path, of at most limit bytes;
// what names such a file in the error about a larger one.
func readBoundedFile(p string, limit int64, what string) ([]byte, error) {
	f, size, err := openRegular(p)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	tooBig := func(n int64) error {
		return fmt.Errorf("data: %s: %w: it is %d bytes, more than the %d bytes of %s", p, ErrBadContent, n, limit, what)
	}
	if size > limit {
		return nil, tooBig(size)
	}
	b, err := readPayload(f, limit+1, size+1)
	if err == nil {
		return nil, tooBig(int64(len(b)))
	}
	if err != io.EOF {
		return nil, fmt.Errorf("data: %s: read: %w", p, err)
	}
	return b, nil
}

// readCIFAR100Archive reads train, test and meta from the gzipped tar
// archive at archive, wherever they lie in it.
func readCIFAR100Archive(archive string) (map[string][]byte, error) {
	f, _, err := openRegular(archive)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return decodeCIFAR100Archive(f, archive)
}

// decodeCIFAR100Archive reads train, test and meta from a gzipped tar
// archive read from r; archive names it in errors. An entry that declares
// more than a CIFAR-100 file may hold is rejected before it is read.
func decodeCIFAR100Archive(r io.Reader, archive string) (map[string][]byte, error) {
	return decodeTarGz(r, archive, cifar100Files, maxCIFAR100File, func(entry string, size int64) error {
		return fmt.Errorf("data: %s: %s: %w: it is %d bytes, more than the %d bytes of a CIFAR-100 file", archive, entry, ErrBadContent, size, int64(maxCIFAR100File))
	})
}

// pickledDict unpickles b, which must hold a dict; where names it.
func pickledDict(b []byte, where string) (*pyDict, error) {
	v, err := unpickle(b)
	if err != nil {
		return nil, fmt.Errorf("data: %s: %w: %w", where, ErrBadContent, err)
	}
	d, ok := v.(*pyDict)
	if !ok {
		return nil, fmt.Errorf("data: %s: %w: the pickle holds %s, not a dict", where, ErrBadContent, pyKind(v))
	}
	return d, nil
}

// decodeCIFAR100Meta returns the fine and coarse class names of meta.
func decodeCIFAR100Meta(b []byte, where string) (fine, coarse []string, err error) {
	d, err := pickledDict(b, where)
	if err != nil {
		return nil, nil, err
	}
	names := func(key string, want int) ([]string, error) {
		v, ok := d.get(key)
		l, isList := v.(*pyList)
		if !ok || !isList || len(l.items) != want {
			return nil, fmt.Errorf("data: %s: %w: %s is not a list of %d names", where, ErrBadContent, key, want)
		}
		out := make([]string, want)
		for i, x := range l.items {
			if out[i], ok = pyText(x); !ok {
				return nil, fmt.Errorf("data: %s: %w: name %d of %s is %s, not a string", where, ErrBadContent, i, key, pyKind(x))
			}
		}
		return out, nil
	}
	if fine, err = names("fine_label_names", cifar100Fine); err != nil {
		return nil, nil, err
	}
	if coarse, err = names("coarse_label_names", cifar100Coarse); err != nil {
		return nil, nil, err
	}
	return fine, coarse, nil
}

// decodeCIFAR100 turns the pickled batch b (train or test) into a data set
// labelled by mode, checking it holds at most most samples.
func decodeCIFAR100(name string, b []byte, where string, most int, mode string, classNames []string) (*Dataset, error) {
	d, err := pickledDict(b, where)
	if err != nil {
		return nil, err
	}
	v, ok := d.get("data")
	if !ok {
		return nil, fmt.Errorf("data: %s: %w: the dict has no \"data\"", where, ErrBadContent)
	}
	arr, err := numpyArray(v)
	if err != nil {
		return nil, fmt.Errorf("data: %s: %w: \"data\": %w", where, ErrBadContent, err)
	}
	if arr.descr != "|u1" || len(arr.shape) != 2 || arr.shape[1] != cifar100ImageLen || arr.shape[0] < 1 || arr.shape[0] > most {
		return nil, fmt.Errorf("data: %s: %w: \"data\" is a %s array of shape %v; want uint8 (|u1) of shape (N, %d) with 1 ≤ N ≤ %d",
			where, ErrBadContent, arr.descr, arr.shape, cifar100ImageLen, most)
	}
	n := arr.shape[0]
	if len(arr.raw) != n*cifar100ImageLen {
		return nil, fmt.Errorf("data: %s: %w: \"data\" holds %d bytes, but its shape needs %d", where, ErrBadContent, len(arr.raw), n*cifar100ImageLen)
	}
	labels := map[string][]uint8{}
	for _, k := range []struct {
		key     string
		classes int
	}{{"fine_labels", cifar100Fine}, {"coarse_labels", cifar100Coarse}} {
		v, ok := d.get(k.key)
		l, isList := v.(*pyList)
		if !ok || !isList || len(l.items) != n {
			return nil, fmt.Errorf("data: %s: %w: %s is not a list of %d labels, one per image", where, ErrBadContent, k.key, n)
		}
		out := make([]uint8, n)
		for i, x := range l.items {
			c, ok := x.(int64)
			if !ok || c < 0 || c >= int64(k.classes) {
				return nil, fmt.Errorf("data: %s: %w: %s[%d] is %v, but the classes are 0 to %d", where, ErrBadContent, k.key, i, x, k.classes-1)
			}
			out[i] = uint8(c)
		}
		labels[k.key] = out
	}
	ds := &Dataset{
		Name:   name,
		Images: make([]uint8, n*cifar100ImageLen),
		Labels: labels[mode+"_labels"],
		N:      n, H: cifarSide, W: cifarSide, C: 3,
		Classes:    len(classNames),
		ClassNames: classNames,
	}
	for i := 0; i < n; i++ {
		src := arr.raw[i*cifar100ImageLen : (i+1)*cifar100ImageLen]
		img := ds.Images[i*cifar100ImageLen : (i+1)*cifar100ImageLen]
		for c := 0; c < 3; c++ {
			for px, v := range src[c*cifarPlane : (c+1)*cifarPlane] {
				img[3*px+c] = v
			}
		}
	}
	return ds, ds.Validate()
}
