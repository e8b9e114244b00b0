package compile

import (
	"bytes"
	"crypto/sha256"
	"encoding/gob"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tartanml/tartan/kir"
)

// captureWarnings redirects the damaged-entry warnings for the test and
// forgets which entries were reported.
func captureWarnings(t *testing.T) *bytes.Buffer {
	t.Helper()
	var buf bytes.Buffer
	warnMu.Lock()
	old, oldWarned := warnOut, warned
	warnOut, warned = &buf, map[string]bool{}
	warnMu.Unlock()
	t.Cleanup(func() {
		warnMu.Lock()
		warnOut, warned = old, oldWarned
		warnMu.Unlock()
	})
	return &buf
}

// cachedEntry compiles smallGraph(2) into a fresh cache and returns the
// entry's path and contents and the program.
func cachedEntry(t *testing.T) (path string, data []byte, p *kir.Program) {
	t.Helper()
	dir := t.TempDir()
	t.Setenv("XDG_CACHE_HOME", dir)
	t.Setenv("TARTAN_CACHE", "")
	p, hit, err := CompileCached(smallGraph(2), testTarget, "cpu test")
	if err != nil || hit {
		t.Fatalf("first compile: hit %v, err %v", hit, err)
	}
	files := cacheFiles(t, dir)
	if len(files) != 1 {
		t.Fatalf("want one cache entry, found %v", files)
	}
	data, err = os.ReadFile(files[0])
	if err != nil {
		t.Fatal(err)
	}
	return files[0], data, p
}

// TestCacheEntryBitFlips flips every bit of a real entry: each flipped entry
// must be rejected by decodeEntry, and a sample of them, written to the
// cache, must be reported once, rebuilt, and give the original program.
func TestCacheEntryBitFlips(t *testing.T) {
	path, data, orig := cachedEntry(t)
	key := strings.TrimSuffix(filepath.Base(path), ".gob")
	want := orig.String()
	if p, err := decodeEntry(data, key); err != nil || p.String() != want {
		t.Fatalf("the intact entry: %v", err)
	}
	for bit := range 8 * len(data) {
		flipped := bytes.Clone(data)
		flipped[bit/8] ^= 1 << (bit % 8)
		if p, err := decodeEntry(flipped, key); err == nil && p.String() != want {
			t.Fatalf("flipping bit %d of %d gives a different program:\n%s", bit, 8*len(data), p)
		}
	}

	warnings := captureWarnings(t)
	rng := rand.New(rand.NewPCG(9, 1))
	bits := []int{0, 8*len(entryMagic) + 3, 8*(headerLen-sha256.Size) + 1, 8 * (headerLen - 1)}
	for range 400 {
		bits = append(bits, 8*headerLen+rng.IntN(8*(len(data)-headerLen)))
	}
	for _, bit := range bits {
		flipped := bytes.Clone(data)
		flipped[bit/8] ^= 1 << (bit % 8)
		for round := range 2 {
			if err := os.WriteFile(path, flipped, 0o644); err != nil {
				t.Fatal(err)
			}
			warnings.Reset()
			p, hit, err := CompileCached(smallGraph(2), testTarget, "cpu test")
			if err != nil {
				t.Fatalf("bit %d: %v", bit, err)
			}
			if hit || p.String() != want {
				t.Fatalf("bit %d: hit %v, program equal to the original: %v", bit, hit, p.String() == want)
			}
			msg := warnings.String()
			if round == 0 && (strings.Count(msg, "\n") != 1 || !strings.Contains(msg, path) || !strings.Contains(msg, "rebuilt")) {
				t.Fatalf("bit %d: want one warning naming %s and saying it is rebuilt, got %q", bit, path, msg)
			}
			if round == 1 && msg != "" {
				t.Fatalf("bit %d: the same entry was reported twice: %q", bit, msg)
			}
			if got, err := os.ReadFile(path); err != nil || !bytes.Equal(got, data) {
				t.Fatalf("bit %d: the entry was not rewritten (%v)", bit, err)
			}
		}
		warnMu.Lock()
		warned = map[string]bool{}
		warnMu.Unlock()
	}
	if _, hit, err := CompileCached(smallGraph(2), testTarget, "cpu test"); err != nil || !hit {
		t.Fatalf("after the rebuilds: hit %v, err %v", hit, err)
	}
}

// TestCacheEntryOfAnotherGraph stores, under the key of smallGraph, an
// intact entry (valid checksum and key) whose program has a renamed
// variable, as a damaged but decodable entry would: it must be rejected for
// not being the graph's program, not used.
func TestCacheEntryOfAnotherGraph(t *testing.T) {
	path, data, orig := cachedEntry(t)
	key := strings.TrimSuffix(filepath.Base(path), ".gob")
	warnings := captureWarnings(t)
	for name, damage := range map[string]func(p *kir.Program){
		"variable renamed": func(p *kir.Program) {
			p.Variables[0].Name = "v"
			p.Buffers[p.Variables[0].Buffer].Name = "v"
		},
		"output renamed": func(p *kir.Program) {
			p.Outputs[0].Name = "z"
			p.Buffers[p.Outputs[0].Buffer].Name = "z"
		},
		"input reshaped":  func(p *kir.Program) { p.Buffers[p.Inputs[0].Buffer].Shape[0] = 2 },
		"program renamed": func(p *kir.Program) { p.Name = "other" },
	} {
		var e cacheEntry
		if err := gob.NewDecoder(bytes.NewReader(data[headerLen:])).Decode(&e); err != nil {
			t.Fatal(err)
		}
		damage(e.Program)
		forged, err := encodeEntry(key, e.Program)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, forged, 0o644); err != nil {
			t.Fatal(err)
		}
		warnings.Reset()
		warnMu.Lock()
		warned = map[string]bool{}
		warnMu.Unlock()
		p, hit, err := CompileCached(smallGraph(2), testTarget, "cpu test")
		if err != nil || hit || p.String() != orig.String() {
			t.Errorf("%s: hit %v, err %v, program equal to the original: %v", name, hit, err, p != nil && p.String() == orig.String())
		}
		if !strings.Contains(warnings.String(), path) {
			t.Errorf("%s: no warning: %q", name, warnings.String())
		}
		t.Logf("%s: %s", name, strings.TrimSpace(warnings.String()))
	}
}
