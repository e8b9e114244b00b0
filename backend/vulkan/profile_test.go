package vulkan

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/tartanml/tartan/backend"
	"github.com/tartanml/tartan/backend/reference"
	"github.com/tartanml/tartan/compile"
	"github.com/tartanml/tartan/kir"
	"github.com/tartanml/tartan/op"
	"github.com/tartanml/tartan/tile"
)

// checkTimes checks one entry per kernel of p, in order, each with a
// finite, non-negative time, and some time in all.
func checkTimes(t *testing.T, p *kir.Program, ts []backend.KernelTime) {
	t.Helper()
	if len(ts) != len(p.Kernels) {
		t.Fatalf("%d entries for %d kernels: %+v", len(ts), len(p.Kernels), ts)
	}
	total := 0.0
	for i, lt := range ts {
		total += lt.Seconds
		k := p.Kernels[i]
		if lt.Kernel != k.Name || lt.Source != k.Source || lt.How == "" {
			t.Errorf("entry %d = %+v, want kernel %s (%s)", i, lt, k.Name, k.Source)
		}
		if math.IsNaN(lt.Seconds) || math.IsInf(lt.Seconds, 0) || lt.Seconds < 0 || lt.Seconds > 60 {
			t.Errorf("entry %d (%s): %v seconds", i, lt.Kernel, lt.Seconds)
		}
	}
	if !(total > 0) {
		t.Errorf("no device time in all: %+v", ts)
	}
}

// TestProfile profiles a product, an epilogue and a column sum, with
// mapped storage and through staging buffers: one entry per kernel, and
// the outputs of Profile, and of Run before and after it, equal the
// reference backend's, with new inputs between runs.
func TestProfile(t *testing.T) {
	for _, staging := range []bool{false, true} {
		var opts []Option
		if staging {
			opts = append(opts, WithStaging())
		}
		d := openTest(t, opts...)
		g := tile.NewGraph("profiled")
		a := g.Input("a", tile.Float32, tile.Shape{67, 131})
		w := g.Input("w", tile.Float32, tile.Shape{131, 45})
		h := op.ReLU(g, g.Add(op.MatMul(g, a, w), g.ScalarLike(a, 0.25)))
		g.SetOutput("o", tile.ParseContraction(g, "S[n : N] = +(H[m, n])", map[string]*tile.Tensor{"H": h}, map[string]int{"N": 45}))
		if err := g.Err(); err != nil {
			t.Fatal(err)
		}
		p, err := compile.Compile(g, d.Target())
		if err != nil {
			t.Fatal(err)
		}
		if len(p.Kernels) < 2 {
			t.Fatalf("want several kernels:\n%v", p)
		}
		e, err := d.Load(p)
		if err != nil {
			t.Fatal(err)
		}
		r := rand.New(rand.NewPCG(3, 4))
		inputs := func() map[string][]float32 {
			in := map[string][]float32{"a": make([]float32, 67*131), "w": make([]float32, 131*45)}
			for _, v := range in {
				for i := range v {
					v[i] = float32(r.NormFloat64())
				}
			}
			return in
		}
		step := func(in map[string][]float32, profile bool) []float32 {
			t.Helper()
			for name, v := range in {
				if err := e.SetInput(name, v); err != nil {
					t.Fatal(err)
				}
			}
			if profile {
				ts, err := e.Profile()
				if err != nil {
					t.Fatal(err)
				}
				checkTimes(t, p, ts)
			} else if err := e.Run(); err != nil {
				t.Fatal(err)
			}
			o := make([]float32, 45)
			if err := e.ReadOutput("o", o); err != nil {
				t.Fatal(err)
			}
			want := run(t, reference.New(), g, in)
			for i := range want {
				if diff := math.Abs(float64(o[i] - want[i])); diff > 1e-4*(1+math.Abs(float64(want[i]))) {
					t.Fatalf("staging %v, profile %v: o[%d] = %v, want %v", staging, profile, i, o[i], want[i])
				}
			}
			return o
		}
		in := inputs()
		prof := step(in, true)
		again := step(in, false)
		for i := range prof {
			if math.Float32bits(prof[i]) != math.Float32bits(again[i]) {
				t.Fatalf("o[%d] = %v from Profile, %v from Run", i, prof[i], again[i])
			}
		}
		step(inputs(), false)
		step(inputs(), true) // recorded once, resubmitted
		step(inputs(), false)
		if err := e.Close(); err != nil {
			t.Fatal(err)
		}
		if _, err := e.Profile(); err == nil {
			t.Error("Profile after Close: no error")
		}
	}
}

// TestProfileLoop profiles a step loop: one entry for the kernel before it
// and one for the loop's kernel (its steps summed), and the outputs of
// kir.Interpret, after a Run and before another.
func TestProfileLoop(t *testing.T) {
	d := openTest(t)
	const T, n = 6, 37
	p := scanProgram(T, n, false)
	e, err := d.load(p, testEmitter(t))
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	x, h0 := make([]float64, T*n), make([]float64, n)
	for i := range x {
		x[i] = float64(i%11) - 3
	}
	for i := range h0 {
		h0[i] = float64(i)
	}
	want := make([][]float64, len(p.Buffers))
	want[p.Inputs[0].Buffer], want[p.Inputs[1].Buffer] = x, h0
	if err := kir.Interpret(p, want); err != nil {
		t.Fatal(err)
	}
	f32 := func(v []float64) []float32 {
		out := make([]float32, len(v))
		for i, x := range v {
			out[i] = float32(x)
		}
		return out
	}
	if err := e.SetInput("x", f32(x)); err != nil {
		t.Fatal(err)
	}
	if err := e.SetInput("h0", f32(h0)); err != nil {
		t.Fatal(err)
	}
	for i, profile := range []bool{false, true, false, true} {
		if profile {
			ts, err := e.Profile()
			if err != nil {
				t.Fatal(err)
			}
			checkTimes(t, p, ts)
		} else if err := e.Run(); err != nil {
			t.Fatal(err)
		}
		s := make([]float32, (T+1)*n)
		if err := e.ReadOutput("s", s); err != nil {
			t.Fatal(err)
		}
		for j, w := range want[p.Outputs[0].Buffer] {
			if float64(s[j]) != w {
				t.Fatalf("call %d (profile %v): s[%d] = %v, want %v", i, profile, j, s[j], w)
			}
		}
	}
	if e.Dispatches() != 1+T || len(e.order) != 1+T {
		t.Errorf("%d dispatches, %d timed, want %d", e.Dispatches(), len(e.order), 1+T)
	}
	// A device whose queue writes no timestamps: an error naming it.
	pd := d.vk.PhysicalDevice()
	qf, bits, all := &pd.QueueFamilies[d.vk.QueueFamily], pd.QueueFamilies[d.vk.QueueFamily].TimestampValidBits, pd.Limits.TimestampComputeAndGraphics
	qf.TimestampValidBits, pd.Limits.TimestampComputeAndGraphics = 0, 0
	_, err = e.Profile()
	qf.TimestampValidBits, pd.Limits.TimestampComputeAndGraphics = bits, all
	if err == nil || !strings.Contains(err.Error(), pd.Name) || !strings.Contains(err.Error(), "timestamps") {
		t.Errorf("Profile without timestamps: %v", err)
	}
}
