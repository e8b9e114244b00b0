package cpu

import (
	"errors"
	"runtime"
	"strings"
	"testing"

	"github.com/tartanml/tartan/backend"
	"github.com/tartanml/tartan/tile"
)

// doubling returns a graph "double" with input x of the given shape and
// output y = 2x.
func doubling(shape ...int) *tile.Graph {
	g := tile.NewGraph("double")
	x := g.Input("x", tile.Float32, tile.Shape(shape))
	g.SetOutput("y", g.Mul(x, g.Scalar(2, tile.Float32)))
	return g
}

func wantOOM(t *testing.T, err error, wants ...string) {
	t.Helper()
	var oom *backend.OutOfMemoryError
	if !errors.Is(err, backend.ErrOutOfMemory) || !errors.As(err, &oom) {
		t.Fatalf("want an out-of-memory error, got %v", err)
	}
	for _, w := range wants {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("%q lacks %q", err, w)
		}
	}
}

// TestMemoryLimit loads programs of 8 MiB under caps set by
// TARTAN_MEMORY_LIMIT and by the MemoryLimit option.
func TestMemoryLimit(t *testing.T) {
	t.Setenv(backend.EnvMemoryLimit, "1MiB")
	d := New(Cache(false))
	defer d.Close()
	_, err := d.Compile(doubling(1024, 1024))
	wantOOM(t, err, `program "double"`, "needs 8388", " bytes in all", "slot", `"x"`, "4194304 bytes", "1048576 bytes available", "TARTAN_MEMORY_LIMIT=1MiB")

	// The cap holds for the device's executables together.
	t.Setenv(backend.EnvMemoryLimit, "12M")
	x1, err := d.Compile(doubling(1024, 1024))
	if err != nil {
		t.Fatal(err)
	}
	_, err = d.Compile(doubling(1024, 1024))
	wantOOM(t, err, "TARTAN_MEMORY_LIMIT=12M", "held by the device's other executables")
	x1.Close()
	x1.Close() // closing twice releases once
	x2, err := d.Compile(doubling(1024, 1024))
	if err != nil {
		t.Fatalf("after closing the first executable: %v", err)
	}
	if err := x2.SetInput("x", make([]float32, 1<<20)); err != nil {
		t.Fatal(err)
	}
	if err := x2.Run(); err != nil {
		t.Fatal(err)
	}
	x2.Close()

	for _, bad := range []string{"lots", "-1", "12 parsecs"} {
		t.Setenv(backend.EnvMemoryLimit, bad)
		if _, err := d.Compile(doubling(4)); err == nil || !strings.Contains(err.Error(), "TARTAN_MEMORY_LIMIT") {
			t.Errorf("TARTAN_MEMORY_LIMIT=%q: want an error naming the variable, got %v", bad, err)
		}
	}

	// The option wins over the variable.
	t.Setenv(backend.EnvMemoryLimit, "1G")
	small := New(Cache(false), MemoryLimit(4096))
	defer small.Close()
	_, err = small.Compile(doubling(1024))
	wantOOM(t, err, "cpu.MemoryLimit(4096)")
	if x, err := small.Compile(doubling(100)); err != nil {
		t.Errorf("a program of 800 bytes under a cap of 4096: %v", err)
	} else {
		x.Close()
	}
}

// TestProgramTooBigForTheMachine loads programs larger than any machine
// and ones whose sizes overflow: each is an error, not a fatal allocation.
func TestProgramTooBigForTheMachine(t *testing.T) {
	t.Setenv(backend.EnvMemoryLimit, "")
	d := New(Cache(false))
	defer d.Close()
	if _, _, known := backend.HostMemoryAvailable(); known {
		_, err := d.Compile(doubling(1 << 40))
		wantOOM(t, err, `program "double"`, "4398046511104 bytes", "the machine has")
		t.Log(err)
	} else {
		t.Logf("the available memory is unknown on %s: only the overflowing programs are checked", runtime.GOOS)
	}
	for _, shape := range [][]int{{1 << 31, 1 << 31}, {1 << 62}} {
		if x, err := d.Compile(doubling(shape...)); err == nil {
			x.Close()
			t.Errorf("shape %v: loaded", shape)
		} else {
			t.Logf("shape %v: %v", shape, err)
		}
	}
}
