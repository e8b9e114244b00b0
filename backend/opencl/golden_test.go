package opencl

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tartanml/tartan/kir"
	"github.com/tartanml/tartan/tile"
)

var updateGolden = flag.Bool("update", false, "rewrite the rendered-source golden files under testdata/render")

// productProgram is a matrix product [6, 40]·[40, 40] scheduled as one,
// with an elementwise kernel after it, and no loops or views.
func productProgram(t *testing.T) *kir.Program {
	f := tile.Float32
	lb := newLoopBuilder("product")
	a := lb.buf("a", kir.Input, tile.Shape{6, 40}, nil)
	w := lb.buf("w", kir.Input, tile.Shape{40, 40}, nil)
	g := lb.buf("", kir.Temp, tile.Shape{6, 40}, nil)
	y := lb.buf("y", kir.Output, tile.Shape{6, 40}, nil)
	k := lb.kernel("gates", g, tile.Shape{6, 40}, []kir.Loop{{Name: "k", Lo: 0, Hi: 39}}, tile.Sum,
		fn(tile.Mul, f, load(a, f, kir.Skip, 0, v(0), v(2)), load(w, f, kir.Skip, 0, v(2), v(1))))
	scheduleGEMM(t, k)
	lb.kernel("cell", y, tile.Shape{6, 40}, nil, tile.Assign, fn(tile.Tanh, f, load(g, f, kir.Skip, 0, v(0), v(1))))
	if err := lb.p.Validate(); err != nil {
		t.Fatal(err)
	}
	return lb.p
}

// convProgram is a padded 1-D convolution [2, 10, 4] ⊛ [3, 4, 8] → [2, 10,
// 8] scheduled as a matrix product whose A operand (the input, read at
// x + k - 1) is separable: slot and reduction parts with a guard.
func convProgram(t *testing.T) *kir.Program {
	f := tile.Float32
	lb := newLoopBuilder("conv")
	in := lb.buf("in", kir.Input, tile.Shape{2, 10, 4}, nil)
	w := lb.buf("w", kir.Input, tile.Shape{3, 4, 8}, nil)
	y := lb.buf("y", kir.Output, tile.Shape{2, 10, 8}, nil)
	k := lb.kernel("conv", y, tile.Shape{2, 10, 8}, []kir.Loop{{Name: "k", Lo: 0, Hi: 2}, {Name: "c", Lo: 0, Hi: 3}}, tile.Sum,
		fn(tile.Mul, f, load(in, f, kir.Skip, 0, v(0), add(add(v(1), v(3)), c(-1)), v(4)), load(w, f, kir.Skip, 0, v(3), v(4), v(2))))
	scheduleGEMM(t, k)
	if why := k.Schedule.GEMM.Complete(lb.p, k); why != "" {
		t.Fatal(why)
	}
	if err := lb.p.Validate(); err != nil {
		t.Fatal(err)
	}
	return lb.p
}

// TestRenderGolden compares the OpenCL C rendered for programs without
// loops or views, and their launches, with the files under testdata/render
// byte for byte: rendering is deterministic, and a change to it (which
// also changes every cached binary's key) shows here. go test -run
// TestRenderGolden -update rewrites the files after an intended change.
func TestRenderGolden(t *testing.T) {
	gpu := traits{Name: "gpu", GPU: true, ComputeUnits: 132, MaxWorkGroup: 1024, LocalMemBytes: 48 << 10, FP64: true}
	cpu := traits{Name: "cpu", ComputeUnits: 2, MaxWorkGroup: 4096, LocalMemBytes: 256 << 10, FP64: true}
	split := cpu
	split.Force, split.Split = "reduce", 2
	for _, c := range []struct {
		name string
		p    *kir.Program
		tr   traits
	}{
		{"corners_cpu", cornerProgram(), cpu},
		{"corners_reduce_split", cornerProgram(), split},
		{"product_gpu", productProgram(t), gpu},
		{"product_cpu", productProgram(t), cpu},
		{"conv_gpu", convProgram(t), gpu},
	} {
		r, err := render(c.p, c.tr)
		if err != nil {
			t.Fatal(err)
		}
		var b strings.Builder
		b.WriteString(r.Source)
		for _, l := range r.Launches {
			fmt.Fprintf(&b, "// launch %s: kernel %d, %s, %d work-items, local %d, args", l.Fn, l.Kernel, l.Strategy, l.Global, l.Local)
			for _, a := range l.Args {
				fmt.Fprintf(&b, " %s", argName(a))
			}
			b.WriteString("\n")
		}
		path := filepath.Join("testdata", "render", c.name+".cl")
		if *updateGolden {
			if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		want, err := os.ReadFile(path)
		if err != nil {
			t.Fatalf("%s: %v (go test -run TestRenderGolden -update writes it)", c.name, err)
		}
		if got := b.String(); got != string(want) {
			gl, wl := strings.Split(got, "\n"), strings.Split(string(want), "\n")
			i := 0
			for i < len(gl) && i < len(wl) && gl[i] == wl[i] {
				i++
			}
			g, w := "(end)", "(end)"
			if i < len(gl) {
				g = gl[i]
			}
			if i < len(wl) {
				w = wl[i]
			}
			t.Errorf("%s: rendered source differs from %s at line %d:\n got: %s\nwant: %s", c.name, path, i+1, g, w)
		}
	}
}
