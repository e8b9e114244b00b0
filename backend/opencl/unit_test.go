package opencl

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tartanml/tartan/backend"
	"github.com/tartanml/tartan/kir"
	"github.com/tartanml/tartan/tile"
)

func TestHostEncodingRoundTrip(t *testing.T) {
	cases := []struct {
		dt   tile.DType
		data any
	}{
		{tile.Float32, []float32{1.5, -2, float32(math.Inf(1))}},
		{tile.Float64, []float64{1e300, -0.1}},
		{tile.Int32, []int32{math.MinInt32, 7}},
		{tile.Int64, []int64{math.MaxInt64, -3}},
		{tile.Bool, []bool{true, false, true}},
		{tile.Float16, []float32{0.5, -1024}},
		{tile.BFloat16, []float32{0.5, -1024}},
	}
	for _, c := range cases {
		b, err := encode(c.dt, c.data)
		if err != nil {
			t.Fatalf("%v: %v", c.dt, err)
		}
		n := len(b) / storageSize(c.dt)
		back := hostData(c.dt, n)
		if err := decode(c.dt, b, back); err != nil {
			t.Fatal(err)
		}
		if a, z := formatAny(c.data), formatAny(back); a != z {
			t.Errorf("%v: %s came back as %s", c.dt, a, z)
		}
	}
}

func formatAny(v any) string { return fmt.Sprint(v) }

// TestHostEncodingBytes checks the device bytes of host data against
// hand-written little-endian encodings.
func TestHostEncodingBytes(t *testing.T) {
	for _, c := range []struct {
		dt   tile.DType
		data any
		want []byte
	}{
		{tile.Float32, []float32{1.5, -2}, []byte{0, 0, 0xc0, 0x3f, 0, 0, 0, 0xc0}},
		{tile.Int32, []int32{-2, 0x01020304}, []byte{0xfe, 0xff, 0xff, 0xff, 4, 3, 2, 1}},
		{tile.Int64, []int64{258}, []byte{2, 1, 0, 0, 0, 0, 0, 0}},
		{tile.Float64, []float64{1}, []byte{0, 0, 0, 0, 0, 0, 0xf0, 0x3f}},
		{tile.Bool, []bool{true, false}, []byte{1, 0}},
	} {
		b, err := encode(c.dt, c.data)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(b, c.want) {
			t.Errorf("%v %v: bytes % x, want % x", c.dt, c.data, b, c.want)
		}
		if hb := backend.HostBytes(c.data); hb != nil && len(hb) > 0 && &hb[0] == &b[0] {
			t.Errorf("%v: encode returned the host's own memory, which the caller may change before the transfer", c.dt)
		}
	}
}

func TestLiterals(t *testing.T) {
	cases := []struct {
		dt   tile.DType
		v    float64
		want string
	}{
		{tile.Float32, 0.1, "0.1f"},
		{tile.Float32, 2, "2.0f"},
		{tile.Float32, -3.5, "(-3.5f)"},
		{tile.Float32, math.Inf(-1), "(-INFINITY)"},
		{tile.Float32, math.NaN(), "NAN"},
		{tile.Float32, 1e-45, "1e-45f"},
		{tile.Float64, 0.1, "0.1"},
		{tile.Int32, math.MinInt32, "(-2147483647-1)"},
		{tile.Int64, -5, "(-5L)"},
		{tile.Bool, 1, "((uchar)1)"},
	}
	for _, c := range cases {
		if got := literal(c.dt, tile.RoundTo(c.dt, c.v)); got != c.want {
			t.Errorf("literal(%v, %v) = %s, want %s", c.dt, c.v, got, c.want)
		}
	}
}

func TestProgramCacheFiles(t *testing.T) {
	c := programCache{dir: filepath.Join(t.TempDir(), "sub")}
	key := cacheKey("source", "device")
	if key == cacheKey("sourced", "evice") {
		t.Fatal("cache keys collide when parts are regrouped")
	}
	if c.get(key) != nil {
		t.Fatal("empty cache returned a binary")
	}
	bin := []byte("program binary \x00\x01\x02")
	if err := c.put(key, bin); err != nil {
		t.Fatal(err)
	}
	if got := c.get(key); string(got) != string(bin) {
		t.Fatalf("got %q, want %q", got, bin)
	}
	entries, _ := os.ReadDir(c.dir)
	if len(entries) != 1 {
		t.Errorf("%d files in the cache, want 1 (no temporary files)", len(entries))
	}
	// A truncated entry is ignored and removed.
	data, _ := os.ReadFile(c.path(key))
	os.WriteFile(c.path(key), data[:len(data)-3], 0o644)
	if c.get(key) != nil {
		t.Error("a truncated entry was returned")
	}
	if _, err := os.Stat(c.path(key)); !errors.Is(err, os.ErrNotExist) {
		t.Error("a truncated entry was not removed")
	}
	os.WriteFile(c.path(key), []byte("garbage"), 0o644)
	if c.get(key) != nil {
		t.Error("a garbage entry was returned")
	}
	if (programCache{}).get(key) != nil || (programCache{}).put(key, bin) != nil {
		t.Error("the disabled cache must do nothing")
	}
}

// TestBinaryCacheOnDevice builds a program into an empty cache, damages
// every entry (the program's, and on devices that probe for tensor cores,
// the probe's), and checks that the next load still works and rewrites them.
func TestBinaryCacheOnDevice(t *testing.T) {
	for _, cand := range candidates(t) {
		dir := t.TempDir()
		cache := programCache{dir: dir}
		p := cornerProgram()
		entries := 0
		for round := range 3 {
			d, err := OpenCandidate(cand, WithCacheDir(dir))
			if err != nil {
				t.Fatal(err)
			}
			e, err := d.Load(p)
			if err != nil {
				t.Fatalf("round %d: %v", round, err)
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
				t.Errorf("round %d: slidemax %v", round, got)
			}
			e.Close()
			d.Close()
			files, _ := filepath.Glob(filepath.Join(dir, "*.bin"))
			if round == 0 {
				entries = len(files)
			}
			if len(files) == 0 || len(files) != entries {
				t.Fatalf("round %d: %d cache entries, want %d (and at least 1)", round, len(files), entries)
			}
			for _, f := range files {
				key := strings.TrimSuffix(filepath.Base(f), ".bin")
				if round == 1 {
					data, _ := os.ReadFile(f)
					data[len(data)-1] ^= 0xff
					os.WriteFile(f, data, 0o644)
				} else if cache.get(key) == nil {
					t.Errorf("round %d: entry %s is not valid", round, key)
				}
			}
		}
	}
}

func TestBuildErrorNamesTheKernel(t *testing.T) {
	for _, d := range openAll(t) {
		src := preamble + "\n__kernel void good(__global float* x) { x[0] = 1.0f; }\n" +
			"__kernel void k7_broken(__global float* x) {\n\tx[0] = undefined_thing;\n}\n"
		_, err := d.build("broken-program", src)
		var be *BuildError
		if !errors.As(err, &be) {
			t.Fatalf("%s: error %v is not a BuildError", d.Info().ID, err)
		}
		if len(be.Kernels) != 1 || be.Kernels[0] != "k7_broken" {
			t.Errorf("kernels %v, want [k7_broken]; log:\n%s", be.Kernels, be.Log)
		}
		msg := err.Error()
		for _, want := range []string{"broken-program", "k7_broken", "undefined_thing"} {
			if !strings.Contains(msg, want) {
				t.Errorf("message lacks %q:\n%s", want, msg)
			}
		}
		if data, err := os.ReadFile(be.SourceFile); err != nil || string(data) != src {
			t.Errorf("source file %s: %v", be.SourceFile, err)
		} else {
			os.Remove(be.SourceFile)
		}
	}
}

// oneKernel returns a program copying input "x" of shape n into output "y".
func oneKernel(dt tile.DType, n int) *kir.Program {
	p := &kir.Program{Name: "copy", Slots: 2, SlotBytes: []int{n * dt.Size(), n * dt.Size()}}
	p.Buffers = []*kir.Buffer{
		{ID: 0, Name: "x", Kind: kir.Input, DType: dt, Shape: tile.Shape{n}, Slot: 0},
		{ID: 1, Name: "y", Kind: kir.Output, DType: dt, Shape: tile.Shape{n}, Slot: 1},
	}
	p.Inputs = []kir.Binding{{Name: "x", Buffer: 0}}
	p.Outputs = []kir.Binding{{Name: "y", Buffer: 1}}
	p.Kernels = []*kir.Kernel{{Name: "copy", Out: 1, Shape: tile.Shape{n}, Agg: tile.Assign,
		Body: load(0, dt, kir.Skip, 0, v(0))}}
	return p
}

func TestErrorsNameTheCulprit(t *testing.T) {
	for _, d := range openAll(t) {
		// A buffer larger than the device allows.
		huge := int(d.info.MaxMemAllocSize/4) + 1024
		_, err := d.Load(oneKernel(tile.Float32, huge))
		var oom *OutOfMemoryError
		if !errors.As(err, &oom) || !strings.Contains(err.Error(), `"x"`) {
			t.Errorf("%s: oversized buffer: %v", d.Info().ID, err)
		}
		e, err := d.Load(oneKernel(tile.Float32, 5))
		if err != nil {
			t.Fatal(err)
		}
		if err := e.SetInput("nope", []float32{1}); err == nil || !strings.Contains(err.Error(), `"x"`) {
			t.Errorf("unknown input: %v", err)
		}
		if err := e.SetInput("x", []float64{1, 2, 3, 4, 5}); err == nil || !strings.Contains(err.Error(), "f32") {
			t.Errorf("wrong host type: %v", err)
		}
		if err := e.SetInput("x", []float32{1, 2}); err == nil || !strings.Contains(err.Error(), "5 elements") {
			t.Errorf("wrong length: %v", err)
		}
		if err := e.ReadOutput("x", make([]float32, 5)); err == nil {
			t.Error("reading an input as an output succeeded")
		}
		if err := e.ReadVariable("v", make([]float32, 5)); err == nil || !strings.Contains(err.Error(), "none") {
			t.Errorf("unknown variable: %v", err)
		}
		e.Close()
		if err := e.Run(); err == nil || !strings.Contains(err.Error(), "closed") {
			t.Errorf("run after close: %v", err)
		}
		if err := e.Close(); err != nil {
			t.Errorf("second close: %v", err)
		}
	}
	// f64 on a device without double precision.
	_, err := render(oneKernel(tile.Float64, 3), traits{Name: "tiny", FP64: false})
	if err == nil || !strings.Contains(err.Error(), "cl_khr_fp64") || !strings.Contains(err.Error(), `"x"`) {
		t.Errorf("f64 without fp64: %v", err)
	}
	if _, _, err := ParseID("opencl:0"); err == nil {
		t.Error("ParseID accepted opencl:0")
	}
	if p, dv, err := ParseID("opencl:2:13"); err != nil || p != 2 || dv != 13 {
		t.Errorf("ParseID: %d %d %v", p, dv, err)
	}
}

func TestKernelsAtLines(t *testing.T) {
	src := "// helpers\ninline int f(int a) { return a; }\n__kernel void k1_a(__global float* x) {\n x[0] = 1;\n}\n" +
		"__kernel __attribute__((reqd_work_group_size(256, 1, 1)))\nvoid k2_b(__global float* x) {\n x[0] = y;\n}\n"
	logs := map[string][]string{
		"<source>:8:9: error: use of undeclared identifier 'y'":                  {"k2_b"},
		"error: /tmp/kcache/tempfile_x.cl:4:2: expected expression":              {"k1_a"},
		"<kernel>(2): error: identifier \"q\" is undefined\n(8): error: another": {"f", "k2_b"},
		"warning only": nil,
	}
	for log, want := range logs {
		got := kernelsAtLines(src, log)
		if strings.Join(got, ",") != strings.Join(want, ",") {
			t.Errorf("log %q: kernels %v, want %v", log, got, want)
		}
	}
}

// TestRepeatedInputWrites writes an input again and again from one host
// slice that the caller overwrites at once, as Fit does with its batch
// buffers, with and without a run in between: every run must see the data
// of the last write before it, through the staging copy write reuses.
func TestRepeatedInputWrites(t *testing.T) {
	for _, d := range openAll(t) {
		const n = 1000
		e, err := d.Load(oneKernel(tile.Float32, n))
		if err != nil {
			t.Fatal(err)
		}
		host := make([]float32, n)
		fill := func(v float32) {
			for i := range host {
				host[i] = v + float32(i)
			}
		}
		got := make([]float32, n)
		for round := range 6 {
			fill(float32(100 * round))
			if err := e.SetInput("x", host); err != nil {
				t.Fatal(err)
			}
			if round%2 == 1 {
				// A second write before the run replaces the first.
				fill(float32(100*round + 50))
				if err := e.SetInput("x", host); err != nil {
					t.Fatal(err)
				}
			}
			want := host[0]
			fill(-1) // the caller reuses its buffer at once
			if err := e.Run(); err != nil {
				t.Fatal(err)
			}
			if err := e.ReadOutput("y", got); err != nil {
				t.Fatal(err)
			}
			for i, x := range got {
				if x != want+float32(i) {
					t.Fatalf("%s: round %d: y[%d] = %v, want %v", d.Info().ID, round, i, x, want+float32(i))
				}
			}
		}
		if err := e.Close(); err != nil {
			t.Fatal(err)
		}
	}
}
