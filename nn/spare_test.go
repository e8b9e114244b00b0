package nn

import (
	"slices"
	"testing"
	"time"
)

func TestBatchBuffersReusedNotShared(t *testing.T) {
	m := &Model{}
	ins, tgts := []int{3, 2}, []int{1}
	a := m.takeBatches(2, 4, ins, tgts)
	for _, b := range a {
		if !b.fits(4, ins, tgts) || len(b.xs[0]) != 12 || len(b.xs[1]) != 8 || len(b.ys[0]) != 4 {
			t.Fatalf("batch sizes %d %d %d", len(b.xs[0]), len(b.xs[1]), len(b.ys[0]))
		}
	}
	m.giveBatches(a...)
	b := m.takeBatches(2, 4, ins, tgts)
	if !slices.Contains(b, a[0]) || !slices.Contains(b, a[1]) {
		t.Error("buffers handed back were not reused")
	}
	// While b is out, another call gets buffers of its own.
	c := m.takeBatches(1, 4, ins, tgts)
	if slices.Contains(b, c[0]) {
		t.Error("a buffer in use was handed out again")
	}
	// Other sizes never reuse these.
	m.giveBatches(c...)
	for _, d := range [][]*batch{m.takeBatches(1, 5, ins, tgts), m.takeBatches(1, 4, ins, nil), m.takeBatches(1, 4, []int{3, 3}, tgts)} {
		if d[0] == c[0] {
			t.Error("a buffer of other sizes was reused")
		}
		m.giveBatches(d...)
	}
	m.giveBatches(b...)
	if len(m.spare) > maxSpareBatches {
		t.Errorf("%d spare batches kept, at most %d", len(m.spare), maxSpareBatches)
	}
	if m.spare[len(m.spare)-1] != b[1] {
		t.Error("the batch handed back last was not kept")
	}
	// Large batches are not kept.
	big := m.takeBatches(1, maxSpareBytes/4+1, []int{1}, nil)
	m.giveBatches(big...)
	if slices.Contains(m.spare, big[0]) {
		t.Errorf("a batch of %d bytes was kept, more than %d", big[0].bytes(), maxSpareBytes)
	}
}

func TestHostMemoryReadingCached(t *testing.T) {
	old := readHostMemory
	t.Cleanup(func() {
		readHostMemory = old
		hostMemory.at = time.Time{}
	})
	calls := 0
	readHostMemory = func() (int64, string, bool) {
		calls++
		return int64(1000 * calls), "test", true
	}
	hostMemory.at = time.Time{}
	for range 10 {
		if got := hostMemoryLimit(); got != 1000 {
			t.Fatalf("limit %d, want the first reading, 1000", got)
		}
	}
	if calls != 1 {
		t.Errorf("%d readings for 10 checks within %v, want 1", calls, hostMemoryFresh)
	}
	hostMemory.at = time.Now().Add(-hostMemoryFresh)
	if got := hostMemoryLimit(); got != 2000 || calls != 2 {
		t.Errorf("a stale reading was not renewed: limit %d after %d readings", got, calls)
	}
}
