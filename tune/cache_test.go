package tune

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/tartanml/tartan/kir"
)

// TestCacheMergesAndRejects checks that two caches storing into one file
// keep each other's entries, that an entry reads back as stored, and that
// a file with a nonsensical tiling or of another version is ignored.
func TestCacheMergesAndRejects(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sub", "tune.json")
	a, b := Open(path), Open(path)
	ta := kir.Tiling{BM: 64, BN: 64, BK: 16, Matrix: "3xtf32"}
	tb := kir.Tiling{BM: 32, BN: 32, BK: 16, Parts: 4}
	if _, ok := a.Lookup("dev", "h1"); ok {
		t.Fatal("an empty cache holds an entry")
	}
	if err := a.Store("dev", "h1", Entry{Tiling: ta, Seconds: 1e-3, Model: 2e-3}); err != nil {
		t.Fatal(err)
	}
	if _, ok := b.Lookup("dev", "h1"); !ok {
		t.Fatal("a second cache does not read the first's entry")
	}
	if err := b.Store("other", "h2", Entry{Tiling: tb, Seconds: 1e-3}); err != nil {
		t.Fatal(err)
	}
	if err := a.Store("dev", "h3", Entry{Tiling: tb, Seconds: 1e-3}); err != nil {
		t.Fatal(err)
	}
	c := Open(path)
	for _, w := range []struct {
		dev, h string
		t      kir.Tiling
	}{{"dev", "h1", ta}, {"other", "h2", tb}, {"dev", "h3", tb}} {
		e, ok := c.Lookup(w.dev, w.h)
		if !ok || !e.Tiling.Same(w.t) {
			t.Errorf("%s %s: got %v %v, want %v", w.dev, w.h, e.Tiling, ok, w.t)
		}
	}
	if _, ok := c.Lookup("other", "h1"); ok {
		t.Error("an entry of one device is found for another")
	}
	for _, bad := range []string{
		`{"Version": 1, "Devices": {"dev": {"h1": {"Tiling": {"BM": 0, "BN": 64, "BK": 16}}}}}`,
		`{"Version": 1, "Devices": {"dev": {"h1": {"Tiling": {"BM": 64, "BN": 64, "BK": 16, "Parts": -2}}}}}`,
		`{"Version": 99, "Devices": {"dev": {"h1": {"Tiling": {"BM": 64, "BN": 64, "BK": 16}}}}}`,
		`{"Version": 1, "Devices": `,
	} {
		if err := os.WriteFile(path, []byte(bad), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, ok := Open(path).Lookup("dev", "h1"); ok {
			t.Errorf("the file %s was used", bad)
		}
	}
	// A store over a damaged file replaces it.
	if err := Open(path).Store("dev", "h4", Entry{Tiling: ta}); err != nil {
		t.Fatal(err)
	}
	if _, ok := Open(path).Lookup("dev", "h4"); !ok {
		t.Error("a store over a damaged file was lost")
	}
}

// TestBeamFromEnv checks the variable's parsing.
func TestBeamFromEnv(t *testing.T) {
	for v, want := range map[string]int{"": 0, "0": 0, "3": 3, " 8 ": 8} {
		t.Setenv(EnvTune, v)
		if n, err := BeamFromEnv(); err != nil || n != want {
			t.Errorf("%q: %d %v, want %d", v, n, err, want)
		}
	}
	for _, v := range []string{"-1", "x", "65"} {
		t.Setenv(EnvTune, v)
		if _, err := BeamFromEnv(); err == nil {
			t.Errorf("%q: no error", v)
		}
	}
}
