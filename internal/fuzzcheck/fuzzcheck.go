// Package fuzzcheck holds the checks every fuzz target of Tartan applies to
// one input: a bound on what parsing it may allocate.
//
// A parser that trusts a length or count in its input can be made to
// allocate gigabytes by a file of a few bytes; Go's fuzzer then dies of the
// machine's memory instead of reporting the input. Wrapping the call in
// Bounded turns that into an ordinary test failure that keeps the input.
package fuzzcheck

import (
	"runtime"
	"testing"
)

// DefaultLimit is the allocation bound for one fuzz input: 256 MiB.
const DefaultLimit = 256 << 20

// Bounded runs f and fails t when f allocated more than limit bytes in all
// (the growth of runtime.MemStats.TotalAlloc over the call). Fuzz inputs run
// one at a time in each worker process, so the growth is f's own.
func Bounded(t testing.TB, limit uint64, f func()) {
	t.Helper()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	if got := after.TotalAlloc - before.TotalAlloc; got > limit {
		t.Fatalf("one input allocated %d bytes, over the bound of %d", got, limit)
	}
}
