package opencl

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/tartanml/tartan/compile"
)

// TestShardGuards checks that every launch's kernel is enclosed in exactly
// one guard, that of its own shard, and that the shards are used.
func TestShardGuards(t *testing.T) {
	g, _ := buildSuite(t, "guards", func(gc graphCase) bool {
		return slices.Contains([]string{"matmul", "conv_same", "sgd", "softmax_ce", "pool", "reductions"}, gc.name)
	})
	tg := compile.Target{Backend: "opencl", ComputeUnits: 132, MaxWorkGroup: 1024, LocalMemBytes: 48 << 10}
	p, err := compile.Compile(g, tg)
	if err != nil {
		t.Fatal(err)
	}
	r, err := render(p, traits{Name: "gpu", GPU: true, ComputeUnits: 132, MaxWorkGroup: 1024, LocalMemBytes: 48 << 10})
	if err != nil {
		t.Fatal(err)
	}
	if r.Shards < 2 {
		t.Fatalf("%d launches in %d shard", len(r.Launches), r.Shards)
	}
	shard := map[string]int{}
	used := make([]bool, r.Shards)
	for _, l := range r.Launches {
		shard[l.Fn] = l.Shard
		used[l.Shard] = true
	}
	for s, u := range used {
		if !u {
			t.Errorf("shard %d of %d holds no kernel", s, r.Shards)
		}
	}
	guarded := map[string]int{}
	for _, part := range strings.Split(r.Source, "#if !defined(TT_SHARD) || TT_SHARD == ")[1:] {
		var s int
		fmt.Sscanf(part, "%d", &s)
		name := kernelName(part)
		guarded[name]++
		if want, ok := shard[name]; !ok || want != s {
			t.Errorf("guard %d encloses %q (launch shard %d, known %v)", s, name, want, ok)
		}
	}
	for fn := range shard {
		if guarded[fn] != 1 {
			t.Errorf("%s is enclosed in %d guards", fn, guarded[fn])
		}
	}
	if n := strings.Count(r.Source, "__kernel "); n != len(r.Launches) {
		t.Errorf("%d __kernel functions for %d launches", n, len(r.Launches))
	}
}
