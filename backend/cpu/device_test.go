package cpu

import (
	"math"
	"runtime"
	"strings"
	"testing"

	"github.com/tartanml/tartan/compile"
	"github.com/tartanml/tartan/tile"
)

func TestInfo(t *testing.T) {
	d := New(Workers(3), Cache(false))
	defer d.Close()
	info := d.Info()
	if info.ID != "cpu" || info.Backend != "cpu" {
		t.Errorf("id %q backend %q, want cpu", info.ID, info.Backend)
	}
	if info.Name == "" || info.ComputeUnits != 3 {
		t.Errorf("name %q, compute units %d (want a name and 3)", info.Name, info.ComputeUnits)
	}
	if runtime.GOOS == "linux" && info.Memory <= 0 {
		t.Errorf("memory %d bytes, want the host's", info.Memory)
	}
	if New().Info().ComputeUnits != runtime.GOMAXPROCS(0) {
		t.Errorf("default compute units differ from GOMAXPROCS")
	}
}

// TestRunAllocatesNothing checks that a training step, once loaded, runs
// without allocating.
func TestRunAllocatesNothing(t *testing.T) {
	d := New(Cache(false))
	defer d.Close()
	x, _ := newShowcase(t, d, 4)
	defer x.Close()
	if err := x.Run(); err != nil {
		t.Fatal(err)
	}
	if n := testing.AllocsPerRun(5, func() {
		if err := x.Run(); err != nil {
			t.Fatal(err)
		}
	}); n != 0 {
		t.Errorf("Run allocates %v times per step, want 0", n)
	}
}

// TestWorkersDoNotChangeResults runs the training step with 1, 2 and 5
// workers: tasks are cut the same way whatever the number of workers, so
// every output and weight must agree to the bit.
func TestWorkersDoNotChangeResults(t *testing.T) {
	var first map[string][]float32
	for _, w := range []int{1, 2, 5} {
		d := New(Workers(w), Cache(false))
		x, _ := newShowcase(t, d, 8)
		for range 2 {
			if err := x.Run(); err != nil {
				t.Fatal(err)
			}
		}
		got := map[string][]float32{}
		loss := make([]float32, 1)
		if err := x.ReadOutput("loss", loss); err != nil {
			t.Fatal(err)
		}
		got["loss"] = loss
		for _, sp := range showcaseParams {
			v := make([]float32, sp.shape.Size())
			if err := x.ReadVariable(sp.name, v); err != nil {
				t.Fatal(err)
			}
			got[sp.name] = v
		}
		x.Close()
		d.Close()
		if first == nil {
			first = got
			if l := loss[0]; math.IsNaN(float64(l)) || l <= 0 {
				t.Fatalf("loss %v after two steps", l)
			}
			continue
		}
		for name, v := range got {
			for i := range v {
				if math.Float32bits(v[i]) != math.Float32bits(first[name][i]) {
					t.Errorf("%d workers: %s[%d] = %v, with 1 worker %v", w, name, i, v[i], first[name][i])
					break
				}
			}
		}
	}
}

func TestErrors(t *testing.T) {
	d := New(Cache(false))
	defer d.Close()
	if _, err := d.Compile(nil); err == nil {
		t.Error("Compile(nil) succeeded")
	}
	if _, err := d.Load(nil); err == nil {
		t.Error("Load(nil) succeeded")
	}
	bad := tile.NewGraph("bad")
	bad.Reshape(bad.Input("x", tile.Float32, tile.Shape{2, 3}), tile.Shape{4})
	if _, err := d.Compile(bad); err == nil || !strings.Contains(err.Error(), "reshape") {
		t.Errorf("compiling a graph with a building error: %v, want an error naming reshape", err)
	}
	g := tile.NewGraph("ok")
	x := g.Input("x", tile.Float32, tile.Shape{2, 3})
	v := g.Variable("v", tile.Int32, tile.Shape{3})
	g.SetOutput("y", g.Add(x, x))
	g.Update(v, g.Add(v, g.Scalar(1, tile.Int32)))
	p, err := compile.Compile(g, d.Target())
	if err != nil {
		t.Fatal(err)
	}
	ex, err := d.Load(p)
	if err != nil {
		t.Fatal(err)
	}
	y := make([]float32, 6)
	checks := []struct {
		what string
		err  error
		want string
	}{
		{"run without inputs", ex.Run(), `input "x" is not set`},
		{"read before run", ex.ReadOutput("y", y), "before any run"},
		{"unknown input", ex.SetInput("nope", y), `no input "nope"`},
		{"wrong type", ex.SetInput("x", []float64{1, 2, 3, 4, 5, 6}), "[]float64"},
		{"wrong length", ex.SetInput("x", []float32{1}), "has 6 elements"},
		{"unknown output", ex.ReadOutput("nope", y), `no output "nope"`},
		{"unknown variable", ex.ReadVariable("nope", y), `no variable "nope"`},
		{"variable type", ex.WriteVariable("v", []float32{1, 2, 3}), "i32"},
	}
	for _, c := range checks {
		if c.err == nil || !strings.Contains(c.err.Error(), c.want) {
			t.Errorf("%s: error %v, want one containing %q", c.what, c.err, c.want)
		}
	}
	if err := ex.SetInput("x", []float32{1, 2, 3, 4, 5, 6}); err != nil {
		t.Fatal(err)
	}
	if err := ex.WriteVariable("v", []int32{7, 8, 9}); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if err := ex.Run(); err != nil {
			t.Fatal(err)
		}
	}
	vs := make([]int32, 3)
	if err := ex.ReadVariable("v", vs); err != nil || vs[0] != 9 || vs[2] != 11 {
		t.Errorf("variable after two steps: %v (%v), want [9 10 11]", vs, err)
	}
	if err := ex.ReadOutput("y", y); err != nil || y[5] != 12 {
		t.Errorf("output: %v (%v), want doubled inputs", y, err)
	}
	ex.Close()
	if err := ex.Run(); err == nil || !strings.Contains(err.Error(), "closed") {
		t.Errorf("run after close: %v", err)
	}
}
