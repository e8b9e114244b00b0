package opencl

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tartanml/tartan/compile"
	"github.com/tartanml/tartan/tile"
)

// TestShardsBuiltByHelperProcesses builds a program of several shards with
// two helper processes (this test binary, restarted as a builder), checks
// that they built the shards, then runs the program, loaded from the cache
// shard by shard, against the reference executor.
func TestShardsBuiltByHelperProcesses(t *testing.T) {
	if testing.Short() {
		t.Skip("starts helper processes")
	}
	t.Setenv(envBuilders, "2")
	buildHereToo = false
	defer func() { buildHereToo = true }()
	g, cb := buildSuite(t, "shards", func(gc graphCase) bool {
		return slices.Contains([]string{"sgd", "softmax_ce", "pool", "reductions", "unary", "binary"}, gc.name)
	})
	for _, c := range candidates(t) {
		d, r := openRendered(t, c, g)
		progs, err := d.buildProgram("shards", r)
		if err != nil {
			t.Fatalf("%s: %v", c.ID, err)
		}
		if len(progs) != r.Shards {
			t.Errorf("%s: %d programs for %d shards", c.ID, len(progs), r.Shards)
		}
		for _, q := range progs {
			q.Release()
		}
		if n := d.builders.built.Load(); n != int64(r.Shards) {
			t.Errorf("%s: helpers built %d of %d shards", c.ID, n, r.Shards)
		}
		compareRuns(t, d, g, cb, 1e-4)
		if n := d.builders.built.Load(); n != int64(r.Shards) {
			t.Errorf("%s: helpers built %d shards, want the cache to serve the second load", c.ID, n)
		}
		d.Close()
		// Helpers and this process share the shards.
		buildHereToo = true
		d, err = OpenCandidate(c, WithCacheDir(t.TempDir()))
		if err != nil {
			t.Fatal(err)
		}
		compareRuns(t, d, g, cb, 1e-4)
		d.Close()
		buildHereToo = false
	}
}

// TestShardBuildFailureIsReported checks that a program the helpers fail to
// build is built in-process to report the failure with its log.
func TestShardBuildFailureIsReported(t *testing.T) {
	if testing.Short() {
		t.Skip("starts helper processes")
	}
	t.Setenv(envBuilders, "2")
	src := preamble + "\n#if !defined(TT_SHARD) || TT_SHARD == 0\n__kernel void good(__global float* x) { x[0] = 1.0f; }\n#endif\n" +
		"#if !defined(TT_SHARD) || TT_SHARD == 1\n__kernel void k3_broken(__global float* x) {\n\tx[0] = missing_name;\n}\n#endif\n"
	for _, c := range candidates(t) {
		d, err := OpenCandidate(c, WithCacheDir(t.TempDir()))
		if err != nil {
			t.Fatal(err)
		}
		_, err = d.buildProgram("broken-shards", &rendered{Source: src, Shards: 2})
		var be *BuildError
		if !errors.As(err, &be) || !strings.Contains(err.Error(), "missing_name") || !strings.Contains(err.Error(), "shard 1") {
			t.Errorf("%s: got %v, want a build error of shard 1 naming missing_name", c.ID, err)
		}
		d.Close()
	}
}

func TestBuilderNeedsItsDevice(t *testing.T) {
	if _, _, err := builderContext("opencl:99:0"); err == nil {
		t.Error("builderContext of a missing device succeeded")
	}
}

// TestStuckHelperIsKilled gives helpers no time at all: each is killed by
// the watchdog and its shard built in-process, and the program still loads.
func TestStuckHelperIsKilled(t *testing.T) {
	if testing.Short() {
		t.Skip("starts helper processes")
	}
	t.Setenv(envBuilders, "2")
	saved := builderTimeout
	builderTimeout = time.Nanosecond
	defer func() { builderTimeout = saved }()
	g, _ := buildSuite(t, "stuck", func(gc graphCase) bool {
		return slices.Contains([]string{"sgd", "softmax_ce", "pool", "reductions", "unary", "binary"}, gc.name)
	})
	for _, c := range candidates(t) {
		d, r := openRendered(t, c, g)
		progs, err := d.buildProgram("stuck", r)
		if err != nil {
			t.Fatalf("%s: %v", c.ID, err)
		}
		if len(progs) != r.Shards {
			t.Errorf("%s: %d programs for %d shards", c.ID, len(progs), r.Shards)
		}
		for _, q := range progs {
			q.Release()
		}
		if n := d.builders.built.Load(); n != 0 {
			t.Errorf("%s: helpers built %d shards despite the watchdog", c.ID, n)
		}
		d.Close()
	}
}

// TestHelpersThatCannotStart starts helpers that find no OpenCL device:
// the builds waiting for them must go on in-process, and later programs
// must not start helpers again.
func TestHelpersThatCannotStart(t *testing.T) {
	if testing.Short() {
		t.Skip("starts helper processes")
	}
	t.Setenv(envBuilders, "2")
	cs := candidates(t)
	// The helpers' ICD loader finds no driver (this process has loaded its).
	t.Setenv("OCL_ICD_VENDORS", t.TempDir())
	t.Setenv("OCL_ICD_FILENAMES", "")
	g, _ := buildSuite(t, "nohelpers", func(gc graphCase) bool {
		return slices.Contains([]string{"sgd", "softmax_ce", "pool", "reductions", "unary", "binary"}, gc.name)
	})
	for _, c := range cs {
		d, r := openRendered(t, c, g)
		for range 2 {
			progs, err := d.buildProgram("nohelpers", r)
			if err != nil {
				t.Fatalf("%s: %v", c.ID, err)
			}
			if len(progs) != r.Shards {
				t.Errorf("%s: %d programs for %d shards", c.ID, len(progs), r.Shards)
			}
			for _, q := range progs {
				q.Release()
			}
			d.cache = programCache{} // build again rather than load from the disk cache
		}
		d.builders.mu.Lock()
		failed, started := d.builders.failed, len(d.builders.all)
		d.builders.mu.Unlock()
		if n := d.builders.built.Load(); n != 0 || !failed || started != 0 {
			t.Errorf("%s: helpers built %d shards, failed=%v, %d running", c.ID, n, failed, started)
		}
		d.Close()
	}
}

// openRendered opens candidate c with an empty cache and renders g for it
// in several shards.
func openRendered(t *testing.T, c Candidate, g *tile.Graph) (*Device, *rendered) {
	t.Helper()
	d, err := OpenCandidate(c, WithCacheDir(t.TempDir()))
	if err != nil {
		t.Fatal(err)
	}
	p, err := compile.Compile(g, d.Target())
	if err != nil {
		t.Fatal(err)
	}
	r, err := render(p, d.traits(p))
	if err != nil {
		t.Fatal(err)
	}
	if r.Shards < 2 {
		t.Fatalf("%s: %d launches in %d shard; the test needs several", c.ID, len(r.Launches), r.Shards)
	}
	return d, r
}

// TestPrestart checks that helpers are asked for before rendering a
// program the binary cache has no record of, and not once it has been
// built, nor when its shards are then loaded from the cache.
func TestPrestart(t *testing.T) {
	if testing.Short() {
		t.Skip("starts helper processes")
	}
	t.Setenv(envBuilders, "2")
	g, _ := buildSuite(t, "prestart", func(gc graphCase) bool {
		return slices.Contains([]string{"sgd", "softmax_ce", "pool", "reductions", "unary", "binary"}, gc.name)
	})
	spawned := func(d *Device) int {
		d.builders.mu.Lock()
		defer d.builders.mu.Unlock()
		return d.builders.spawned
	}
	for _, c := range candidates(t) {
		dir := t.TempDir()
		open := func() *Device {
			d, err := OpenCandidate(c, WithCacheDir(dir))
			if err != nil {
				t.Fatal(err)
			}
			return d
		}
		d := open()
		p, err := compile.Compile(g, d.Target())
		if err != nil {
			t.Fatal(err)
		}
		if len(p.Kernels) < 24 {
			t.Fatalf("%d kernels; the test needs a program that asks for 2 helpers", len(p.Kernels))
		}
		loaded := d.prestart(p)
		if n := spawned(d); n != 2 {
			t.Errorf("%s: %d helpers started for a program never built, want 2", c.ID, n)
		}
		loaded(false) // a failed load records nothing
		d.Close()
		d = open()
		e, err := d.Load(p)
		if err != nil {
			t.Fatal(err)
		}
		e.Close()
		if spawned(d) == 0 {
			t.Errorf("%s: no helper started for a program not recorded as built", c.ID)
		}
		d.Close()
		d = open()
		d.prestart(p)(true)
		if e, err = d.Load(p); err != nil {
			t.Fatal(err)
		}
		e.Close()
		if n := spawned(d); n != 0 {
			t.Errorf("%s: %d helpers started for a program built and cached before", c.ID, n)
		}
		d.Close()
	}
}
