package opencl

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/tartanml/tartan/backend"
	"github.com/tartanml/tartan/backend/opencl/cl"
	"github.com/tartanml/tartan/tile"
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

// truncateKeepingDigest cuts the binary of an entry to n bytes and writes
// the SHA-256 of what is left, as a careless or hostile writer would; the
// recorded size is left as the driver reported it.
func truncateKeepingDigest(entry []byte, n int) []byte {
	out := bytes.Clone(entry[:cacheHeader+n])
	sum := sha256.Sum256(out[cacheHeader:])
	copy(out[len(cacheMagic)+8:], sum[:])
	return out
}

func TestCheckEntry(t *testing.T) {
	bin := []byte("\x7fELF a program binary of some length\x00\x01\x02")
	entry := encodeEntry(bin)
	if got, err := checkEntry(entry); err != nil || !bytes.Equal(got, bin) {
		t.Fatalf("intact entry: %q, %v", got, err)
	}
	sizeToo := truncateKeepingDigest(entry, 10)
	binary.LittleEndian.PutUint64(sizeToo[len(cacheMagic):], 10)
	for name, c := range map[string]struct {
		data []byte
		want string
	}{
		"truncated with a valid digest": {truncateKeepingDigest(entry, 10), "reported a binary of 39 bytes, the entry holds 10"},
		"truncated":                     {entry[:len(entry)-1], "reported a binary of 39 bytes, the entry holds 38"},
		"extended":                      {append(bytes.Clone(entry), 0), "the entry holds 40"},
		"a bit flipped":                 {func() []byte { e := bytes.Clone(entry); e[cacheHeader+3] ^= 4; return e }(), "SHA-256"},
		"size and digest of the cut":    {sizeToo, ""},
		"empty binary":                  {truncateKeepingDigest(entry, 0), "entry holds 0"},
		"header only, cut":              {entry[:cacheHeader-1], "no entry header"},
		"the old format":                {append([]byte("TARTAN-OPENCL-BINARY-1\n"), entry[len(cacheMagic):]...), "no entry header"},
	} {
		got, err := checkEntry(c.data)
		if c.want == "" {
			// Size and digest both rewritten to match: nothing can tell.
			if err != nil || len(got) != 10 {
				t.Errorf("%s: %q, %v", name, got, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: got %q, %v; want an error with %q", name, got, err, c.want)
		}
	}

	// Through the cache: a miss, reported once, and the entry removed.
	warnings := captureWarnings(t)
	c := programCache{dir: t.TempDir()}
	key := cacheKey("source")
	for round := range 2 {
		if err := os.WriteFile(c.path(key), truncateKeepingDigest(entry, 20), 0o644); err != nil {
			t.Fatal(err)
		}
		if got := c.get(key); got != nil {
			t.Fatalf("round %d: a truncated binary with a valid digest was returned", round)
		}
		if _, err := os.Stat(c.path(key)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("round %d: the damaged entry was not removed", round)
		}
	}
	if msg := warnings.String(); strings.Count(msg, "\n") != 1 || !strings.Contains(msg, c.path(key)) || !strings.Contains(msg, "rebuilt") {
		t.Errorf("want one warning naming the entry, got %q", msg)
	}
}

// TestTruncatedBinaryOnDevice caches a program's binaries, truncates each to
// half with a valid digest and loads the program again: the driver must
// never see the cut binaries (PoCL aborts the process on them), and the
// program must be rebuilt, run correctly and be cached again.
func TestTruncatedBinaryOnDevice(t *testing.T) {
	for _, cand := range candidates(t) {
		dir := t.TempDir()
		warnings := captureWarnings(t)
		p := cornerProgram()
		for round := range 3 {
			d, err := OpenCandidate(cand, WithCacheDir(dir))
			if err != nil {
				t.Fatal(err)
			}
			e, err := d.Load(p)
			if err != nil {
				t.Fatalf("%s round %d: %v", cand.ID, round, err)
			}
			if err := e.SetInput("a", []float32{1, 2, 3, 4, 5, 6}); err != nil {
				t.Fatal(err)
			}
			if err := e.Run(); err != nil {
				t.Fatal(err)
			}
			got := make([]float32, 6)
			if err := e.ReadOutput("slidemax", got); err != nil {
				t.Fatal(err)
			}
			if got[5] != 6 || got[0] != 2 {
				t.Errorf("%s round %d: slidemax %v", cand.ID, round, got)
			}
			e.Close()
			d.Close()
			files, _ := filepath.Glob(filepath.Join(dir, "*.bin"))
			if len(files) == 0 {
				t.Fatalf("%s round %d: nothing cached", cand.ID, round)
			}
			for _, f := range files {
				data, err := os.ReadFile(f)
				if err != nil {
					t.Fatal(err)
				}
				if _, err := checkEntry(data); err != nil {
					t.Errorf("%s round %d: entry %s: %v", cand.ID, round, f, err)
				}
				if round == 0 {
					if err := os.WriteFile(f, truncateKeepingDigest(data, (len(data)-cacheHeader)/2), 0o644); err != nil {
						t.Fatal(err)
					}
				}
			}
			if round == 1 {
				for _, f := range files {
					if !strings.Contains(warnings.String(), f) {
						t.Errorf("%s: no warning for %s: %q", cand.ID, f, warnings.String())
					}
				}
			}
		}
	}
}

// fakeDevice is a Device that no OpenCL call has opened, with the given
// memory: enough to reach the memory plan of Load.
func fakeDevice(global, largest uint64) *Device {
	return &Device{cand: Candidate{ID: "opencl:9:9"}, info: cl.DeviceInfo{Name: "fake", GlobalMemSize: global, MaxMemAllocSize: largest,
		MaxComputeUnits: 4, MaxWorkGroupSize: 256, LocalMemSize: 32 << 10}}
}

// doubling returns a graph with input x of n float32 and output y = 2x.
func doubling(n int) *tile.Graph {
	g := tile.NewGraph("double")
	x := g.Input("x", tile.Float32, tile.Shape{n})
	g.SetOutput("y", g.Mul(x, g.Scalar(2, tile.Float32)))
	return g
}

// TestCompileFailureIsNil checks, without a device, that a program refused
// for its memory gives a nil Executable interface, not a nil *Executable in
// a non-nil one, which callers would Close.
func TestCompileFailureIsNil(t *testing.T) {
	var d backend.Device = fakeDevice(1<<20, 1<<20)
	x, err := d.Compile(doubling(1 << 20))
	if x != nil {
		t.Errorf("Compile returned a non-nil Executable %#v with error %v", x, err)
	}
	var oom *OutOfMemoryError
	if !errors.Is(err, backend.ErrOutOfMemory) || !errors.As(err, &oom) {
		t.Fatalf("want an out-of-memory error, got %v", err)
	}
	for _, want := range []string{`program "double"`, "8388608 bytes in all", "slot", "4194304 bytes", `opencl:9:9 "fake" has 1048576 bytes`} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("%q lacks %q", err, want)
		}
	}
	// One slot larger than the largest buffer, though the total fits.
	_, err = fakeDevice(1<<30, 1<<20).Compile(doubling(1 << 19))
	if !errors.As(err, &oom) || !strings.Contains(err.Error(), "largest buffer (1048576 bytes)") || !strings.Contains(err.Error(), `"x"`) {
		t.Errorf("a slot over the largest buffer: %v", err)
	}
}

// TestOutOfDeviceMemory compiles on every device programs needing more
// memory than it has, in one buffer and in several that each fit: each is
// an error naming the slot, its bytes and the device's memory, with no
// Executable.
func TestOutOfDeviceMemory(t *testing.T) {
	for _, d := range openAll(t) {
		global := d.info.GlobalMemSize
		n := int(min(global, d.info.MaxMemAllocSize) / 8) // half the largest buffer, in float32
		g := tile.NewGraph("too_big")
		var sum *tile.Tensor
		for i := 0; uint64(i*n*4) <= global; i++ {
			x := g.Input(string(rune('a'+i)), tile.Float32, tile.Shape{n})
			if sum == nil {
				sum = x
			} else {
				sum = g.Add(sum, x)
			}
		}
		g.SetOutput("y", sum)
		for _, g := range []*tile.Graph{g, doubling(int(global/4) + 1)} {
			x, err := d.Compile(g)
			if x != nil {
				x.Close()
				t.Errorf("%s: %s: Compile returned an Executable with error %v", d.Info().ID, g.Name(), err)
			}
			if !errors.Is(err, backend.ErrOutOfMemory) {
				t.Fatalf("%s: %s: want an out-of-memory error, got %v", d.Info().ID, g.Name(), err)
			}
			for _, want := range []string{"slot", d.Info().ID, strconv.FormatUint(global, 10) + " bytes available"} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("%s: %q lacks %q", d.Info().ID, err, want)
				}
			}
			t.Logf("%s: %v", g.Name(), err)
		}
	}
}
