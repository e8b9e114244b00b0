package opencl

import (
	"encoding/json"
	"reflect"
	"slices"
	"testing"

	"github.com/tartanml/tartan/compile"
)

// TestRenderCache checks that a program rendered once is loaded from the
// cache as the renderer wrote it and runs as the reference does; that an
// entry which does not fit the program is removed and the program
// rendered again; and that another program or traits miss.
func TestRenderCache(t *testing.T) {
	g, cb := buildSuite(t, "rendercache", func(gc graphCase) bool {
		return slices.Contains([]string{"sgd", "softmax_ce", "pool", "reductions"}, gc.name)
	})
	for _, c := range candidates(t) {
		dir := t.TempDir()
		d, err := OpenCandidate(c, WithCacheDir(dir))
		if err != nil {
			t.Fatal(err)
		}
		p, err := compile.Compile(g, d.Target())
		if err != nil {
			t.Fatal(err)
		}
		tr := d.traits(p)
		want, err := render(p, tr)
		if err != nil {
			t.Fatal(err)
		}
		key := d.renderKey(p, tr)
		if key == "" {
			t.Fatalf("%s: no cache key", c.ID)
		}
		if d.cache.get(key) != nil {
			t.Fatalf("%s: an entry before any rendering", c.ID)
		}
		if _, err := d.renderCached(p, tr); err != nil {
			t.Fatal(err)
		}
		if d.cache.get(key) == nil {
			t.Fatalf("%s: rendering stored nothing", c.ID)
		}
		got, err := d.renderCached(p, tr)
		if err != nil {
			t.Fatal(err)
		}
		if got.Source != want.Source || got.Shards != want.Shards || !slices.Equal(got.Scratch, want.Scratch) || len(got.Launches) != len(want.Launches) {
			t.Fatalf("%s: the cached rendering differs from the renderer's", c.ID)
		}
		for i, lp := range want.Launches {
			lp.params, lp.body, lp.span = "", "", [2]int{}
			if !reflect.DeepEqual(got.Launches[i], lp) {
				t.Fatalf("%s: launch %d: cached %+v, rendered %+v", c.ID, i, got.Launches[i], lp)
			}
		}
		compareRuns(t, d, g, cb, 1e-4)
		// Other traits, or another program, are other entries.
		tr2 := tr
		tr2.NoMerge = !tr.NoMerge
		q, err := compile.Compile(g, d.Target())
		if err != nil {
			t.Fatal(err)
		}
		q.Kernels[0].Name += "_renamed"
		if k2, k3 := d.renderKey(p, tr2), d.renderKey(q, tr); k2 == key || k3 == key || k2 == "" || k3 == "" {
			t.Errorf("%s: keys do not tell traits or programs apart", c.ID)
		}
		// An entry whose launches compute kernels the program lacks is
		// removed, and the program rendered again.
		bad := *want
		bad.Launches = slices.Clone(want.Launches)
		bad.Launches[0].Kernel = len(p.Kernels)
		data, err := json.Marshal(&bad)
		if err != nil {
			t.Fatal(err)
		}
		if err := d.cache.put(key, data); err != nil {
			t.Fatal(err)
		}
		got, err = d.renderCached(p, tr)
		if err != nil || got.Launches[0].Kernel != want.Launches[0].Kernel {
			t.Fatalf("%s: a damaged entry was used (%v)", c.ID, err)
		}
		if data := d.cache.get(key); data == nil {
			t.Errorf("%s: the program was not stored again after a damaged entry", c.ID)
		}
		d.Close()
	}
}
