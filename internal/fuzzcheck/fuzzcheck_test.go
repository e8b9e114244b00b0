package fuzzcheck

import "testing"

// recorder is a testing.TB that records a failure instead of stopping.
type recorder struct {
	testing.TB
	failed bool
}

func (r *recorder) Helper() {}
func (r *recorder) Fatalf(string, ...any) {
	r.failed = true
}

var sink []byte

func TestBounded(t *testing.T) {
	r := &recorder{TB: t}
	Bounded(r, 1<<20, func() { sink = make([]byte, 8<<20) })
	if !r.failed {
		t.Fatal("an 8 MiB allocation passed a 1 MiB bound")
	}
	r = &recorder{TB: t}
	Bounded(r, 1<<20, func() { sink = make([]byte, 1<<10) })
	if r.failed {
		t.Fatal("a 1 KiB allocation failed a 1 MiB bound")
	}
}
