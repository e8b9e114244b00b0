package data

import (
	"testing"

	"github.com/tartanml/tartan/internal/fuzzcheck"
)

// FuzzUnpickle decodes arbitrary bytes as a pickle, then as a CIFAR-100
// split and as an IMDB review array. It must not panic or allocate beyond
// the bound, and what decodeCIFAR100 accepts must be a valid data set with
// as many labels as images.
func FuzzUnpickle(f *testing.F) {
	f.Add(cifar100Split(1, 0))
	f.Add(cifar100Meta())
	f.Add(npyObjectArray([][]int{{1, 2, 3}, {4}})[128:])
	f.Add([]byte("\x80\x02}q\x01(U\x01aq\x02h\x02h\x01u."))
	f.Add([]byte("\x80\x03]q\x00(K\x01J\xff\xff\xff\xff\x8a\x09\x00\x00\x00\x00\x00\x00\x00\x00\x80e."))
	f.Fuzz(func(t *testing.T, b []byte) {
		fuzzcheck.Bounded(t, fuzzcheck.DefaultLimit, func() {
			v, err := unpickle(b)
			if err != nil {
				return
			}
			_ = pyKind(v)
			if a, err := numpyArray(v); err == nil && a.descr == "|u1" && len(a.raw) > len(b) {
				t.Fatalf("array data of %d bytes from a pickle of %d", len(a.raw), len(b))
			}
			if d, err := decodeCIFAR100("fuzz", b, "fuzz", cifar100Train, "fine", make([]string, 100)); err == nil {
				if d.N != len(d.Labels) || len(d.Images) != d.N*3072 || d.Validate() != nil {
					t.Fatalf("accepted an inconsistent data set: %d images, %d labels, %d bytes", d.N, len(d.Labels), len(d.Images))
				}
			}
			_, _ = decodeIMDBSequences(append(npyObjectArray(nil)[:128:128], b...), "fuzz")
		})
	})
}
