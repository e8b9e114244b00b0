package opencl

import (
	"fmt"
	"github.com/tartanml/tartan/backend/opencl/cl"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/tartanml/tartan/backend"
	"github.com/tartanml/tartan/kir"
	"github.com/tartanml/tartan/tile"
)

// Hand-built programs with step loops and views (kir.StepLoop, kir.View),
// checked against kir.Interpret, the IR's executable definition: a running
// sum, and a recurrent cell run forwards and backwards whose loop body is a
// matrix product of the previous state with a weight matrix followed by a
// kernel reading what the product wrote at the same step.

// loopBuilder assembles an f32 program: every buffer that is not a view has
// a slot of its own; a view lies in its parent's.
type loopBuilder struct {
	p *kir.Program
}

func newLoopBuilder(name string) *loopBuilder { return &loopBuilder{p: &kir.Program{Name: name}} }

func (lb *loopBuilder) buf(name string, kind kir.BufKind, shape tile.Shape, view *kir.View) int {
	p := lb.p
	id := len(p.Buffers)
	b := &kir.Buffer{ID: id, Name: name, Kind: kind, DType: tile.Float32, Shape: shape, View: view}
	if view != nil {
		b.Slot = p.Buffers[view.Of].Slot
	} else {
		b.Slot = p.Slots
		p.Slots++
		p.SlotBytes = append(p.SlotBytes, shape.Size()*tile.Float32.Size())
	}
	p.Buffers = append(p.Buffers, b)
	switch kind {
	case kir.Input:
		p.Inputs = append(p.Inputs, kir.Binding{Name: name, Buffer: id})
	case kir.Output:
		p.Outputs = append(p.Outputs, kir.Binding{Name: name, Buffer: id})
	}
	return id
}

func (lb *loopBuilder) view(of int, shape tile.Shape, offset, stride int) int {
	return lb.buf("", kir.Temp, shape, &kir.View{Of: of, Offset: offset, Stride: stride})
}

func (lb *loopBuilder) kernel(name string, out int, shape tile.Shape, red []kir.Loop, agg tile.Agg, body *kir.Expr) *kir.Kernel {
	k := &kir.Kernel{Name: name, Out: out, Shape: shape, Reduce: red, Agg: agg, Body: body, Schedule: kir.Schedule{Strategy: "loops"}}
	lb.p.Kernels = append(lb.p.Kernels, k)
	return k
}

func (lb *loopBuilder) loop(first, steps int, reverse bool) {
	lb.p.Loops = append(lb.p.Loops, kir.StepLoop{First: first, End: len(lb.p.Kernels), Steps: steps, Reverse: reverse})
}

// scanLoopProgram is kir's running sum in f32: s [T+1, n] holds h0 in one
// end row and s[t±1] = s[t] + x[t] for each step, as a loop of one kernel
// over views of the input x and the output s.
func scanLoopProgram(T, n int, reverse bool) *kir.Program {
	f := tile.Float32
	first, next, prev := 0, n, 0
	if reverse {
		first, next, prev = T*n, 0, n
	}
	lb := newLoopBuilder(fmt.Sprintf("scan_reverse_%v", reverse))
	x := lb.buf("x", kir.Input, tile.Shape{T, n}, nil)
	h0 := lb.buf("h0", kir.Input, tile.Shape{n}, nil)
	s := lb.buf("s", kir.Output, tile.Shape{T + 1, n}, nil)
	start := lb.view(s, tile.Shape{n}, first, 0)
	from := lb.view(s, tile.Shape{n}, prev, n)
	to := lb.view(s, tile.Shape{n}, next, n)
	xs := lb.view(x, tile.Shape{n}, 0, n)
	lb.kernel("init", start, tile.Shape{n}, nil, tile.Assign, load(h0, f, kir.Skip, 0, v(0)))
	lb.kernel("step", to, tile.Shape{n}, nil, tile.Assign, fn(tile.Add, f, load(from, f, kir.Skip, 0, v(0)), load(xs, f, kir.Skip, 0, v(0))))
	lb.loop(1, T, reverse)
	return lb.p
}

// rnnKernels are the kernels of one recurrent cell: init before its loop,
// gates and cell in it, final after it.
type rnnKernels struct{ init, gates, cell, final *kir.Kernel }

// rnnSection adds to lb the buffers of a gated recurrent cell over T steps
// of batch B and width U, forwards or backwards, named with suffix sfx:
// inputs x<sfx> [T, B, U], h0<sfx> [B, U] and w<sfx> [U, 2U]; outputs
// h<sfx> [T+1, B, U] (the states, h0 in the end row the loop starts from),
// g<sfx> [T, B, 2U] (each step's product hprev·w: a candidate and a gate
// per unit) and final<sfx> (twice the last state). It returns the cell's
// kernels, which the caller orders.
func rnnSection(lb *loopBuilder, T, B, U int, reverse bool, sfx string) rnnKernels {
	f := tile.Float32
	row := B * U
	x := lb.buf("x"+sfx, kir.Input, tile.Shape{T, B, U}, nil)
	h0 := lb.buf("h0"+sfx, kir.Input, tile.Shape{B, U}, nil)
	w := lb.buf("w"+sfx, kir.Input, tile.Shape{U, 2 * U}, nil)
	h := lb.buf("h"+sfx, kir.Output, tile.Shape{T + 1, B, U}, nil)
	g := lb.buf("g"+sfx, kir.Output, tile.Shape{T, B, 2 * U}, nil)
	fin := lb.buf("final"+sfx, kir.Output, tile.Shape{B, U}, nil)
	first, prev, next, last := 0, 0, row, T*row
	if reverse {
		first, prev, next, last = T*row, row, 0, 0
	}
	hStart := lb.view(h, tile.Shape{B, U}, first, 0)
	hPrev := lb.view(h, tile.Shape{B, U}, prev, row)
	hNext := lb.view(h, tile.Shape{B, U}, next, row)
	hLast := lb.view(h, tile.Shape{B, U}, last, 0)
	gs := lb.view(g, tile.Shape{B, 2 * U}, 0, 2*row)
	xs := lb.view(x, tile.Shape{B, U}, 0, row)
	mk := func(name string, out int, shape tile.Shape, red []kir.Loop, agg tile.Agg, body *kir.Expr) *kir.Kernel {
		k := &kir.Kernel{Name: name + sfx, Out: out, Shape: shape, Reduce: red, Agg: agg, Body: body, Schedule: kir.Schedule{Strategy: "loops"}}
		return k
	}
	var ids rnnKernels
	// g = hprev·w; hnext = tanh(g[:, :U] + x[step]) · sigmoid(g[:, U:]).
	ids.init = mk("init", hStart, tile.Shape{B, U}, nil, tile.Assign, load(h0, f, kir.Skip, 0, v(0), v(1)))
	ids.gates = mk("gates", gs, tile.Shape{B, 2 * U}, []kir.Loop{{Name: "k", Lo: 0, Hi: U - 1}}, tile.Sum,
		fn(tile.Mul, f, load(hPrev, f, kir.Skip, 0, v(0), v(2)), load(w, f, kir.Skip, 0, v(2), v(1))))
	ids.cell = mk("cell", hNext, tile.Shape{B, U}, nil, tile.Assign,
		fn(tile.Mul, f,
			fn(tile.Tanh, f, fn(tile.Add, f, load(gs, f, kir.Skip, 0, v(0), v(1)), load(xs, f, kir.Skip, 0, v(0), v(1)))),
			fn(tile.Sigmoid, f, load(gs, f, kir.Skip, 0, v(0), add(v(1), c(U))))))
	ids.final = mk("final", fin, tile.Shape{B, U}, nil, tile.Assign,
		fn(tile.Mul, f, load(hLast, f, kir.Skip, 0, v(0), v(1)), &kir.Expr{Op: kir.Const, DType: f, Value: 2}))
	return ids
}

// scheduleGEMM marks a sum of a product of two loads as a matrix product,
// with the loop groups kir.GEMMGroups gives for the variables each load
// reads, as the compiler's schedule does for such kernels.
func scheduleGEMM(t *testing.T, k *kir.Kernel) { t.Helper(); scheduleGEMMGroups(t, k, true) }

// scheduleGEMMGroups is scheduleGEMM with the groups as kir.GEMMGroups
// sorts them given runs.
func scheduleGEMMGroups(t *testing.T, k *kir.Kernel, runs bool) {
	t.Helper()
	a, b := k.Body.Args[0], k.Body.Args[1]
	reads := [2]map[int]bool{{}, {}}
	kir.ExprVars(a, reads[0])
	kir.ExprVars(b, reads[1])
	view, why := kir.GEMMGroups(k, a, b, func(f, x int) bool { return reads[f][x] }, runs)
	if view == nil || view.DotProducts(k) {
		t.Fatalf("kernel %s is not a matrix product: %s", k.Name, why)
	}
	k.Schedule = kir.Schedule{Strategy: "gemm", GEMM: view, Parallel: len(k.Shape)}
}

// rnnProgram runs a forward and a backward cell: their first kernels, then
// the forward loop, the backward loop right after it, and their last
// kernels, so that launches outside the loops may merge with each other
// but not with the loops' launches, and the two loops touch.
func rnnProgram(t *testing.T, T, B, U int) *kir.Program {
	lb := newLoopBuilder("rnn")
	fw := rnnSection(lb, T, B, U, false, "_f")
	bw := rnnSection(lb, T, B, U, true, "_r")
	for _, ids := range []rnnKernels{fw, bw} {
		scheduleGEMM(t, ids.gates)
	}
	lb.p.Kernels = []*kir.Kernel{fw.init, bw.init}
	lb.p.Kernels = append(lb.p.Kernels, fw.gates, fw.cell)
	lb.loop(2, T, false)
	lb.p.Kernels = append(lb.p.Kernels, bw.gates, bw.cell)
	lb.loop(4, T, true)
	lb.p.Kernels = append(lb.p.Kernels, fw.final, bw.final)
	if err := lb.p.Validate(); err != nil {
		t.Fatal(err)
	}
	return lb.p
}

// loopInputs fills every input of p with values of magnitude about 1 (the
// weights scaled by 1/√rows so that the states stay in tanh's range).
func loopInputs(p *kir.Program, seed uint64) map[string][]float64 {
	r := rand.New(rand.NewPCG(seed, 7))
	in := map[string][]float64{}
	for _, b := range p.Inputs {
		buf := p.Buffers[b.Buffer]
		scale := 1.0
		if strings.HasPrefix(b.Name, "w") {
			scale = 1 / math.Sqrt(float64(buf.Shape[0]))
		}
		vals := make([]float64, buf.Size())
		for i := range vals {
			vals[i] = float64(float32(r.NormFloat64() * scale))
		}
		in[b.Name] = vals
	}
	return in
}

// runLoopProgram loads p on d, sets its inputs, runs it (twice, or once
// through Profile when profile is set) and returns every output.
func runLoopProgram(t *testing.T, d *Device, p *kir.Program, in map[string][]float64, profile bool) (map[string][]float64, *Executable) {
	t.Helper()
	e, err := d.Load(p)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	for _, b := range p.Inputs {
		data := hostData(tile.Float32, len(in[b.Name]))
		backend.FromFloat64(data, in[b.Name])
		if err := e.SetInput(b.Name, data); err != nil {
			t.Fatal(err)
		}
	}
	if profile {
		times, err := e.Profile()
		if err != nil {
			t.Fatal(err)
		}
		if len(times) != len(e.launches) {
			t.Errorf("Profile gave %d launch times for %d launches", len(times), len(e.launches))
		}
		for _, lt := range times {
			if lt.Seconds < 0 || math.IsNaN(lt.Seconds) {
				t.Errorf("launch %s took %v s", lt.Kernel, lt.Seconds)
			}
		}
	} else {
		for range 2 {
			if err := e.Run(); err != nil {
				t.Fatal(err)
			}
		}
	}
	out := map[string][]float64{}
	for _, b := range p.Outputs {
		got := make([]float32, p.Buffers[b.Buffer].Size())
		if err := e.ReadOutput(b.Name, got); err != nil {
			t.Fatal(err)
		}
		out[b.Name] = backend.ToFloat64(got)
	}
	return out, e
}

// interpretLoopProgram runs p with kir.Interpret and returns its outputs.
func interpretLoopProgram(t *testing.T, p *kir.Program, in map[string][]float64) map[string][]float64 {
	t.Helper()
	bufs := make([][]float64, len(p.Buffers))
	for _, b := range p.Inputs {
		bufs[b.Buffer] = in[b.Name]
	}
	if err := kir.Interpret(p, bufs); err != nil {
		t.Fatal(err)
	}
	out := map[string][]float64{}
	for _, b := range p.Outputs {
		out[b.Name] = bufs[b.Buffer]
	}
	return out
}

// TestStepLoopScan runs the running sum forwards and backwards on every
// device and compares with hand-worked sums (the inputs are small
// integers, so f32 sums are exact) and with kir.Interpret.
func TestStepLoopScan(t *testing.T) {
	const T, n = 5, 3
	for _, d := range openAll(t) {
		for _, reverse := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/reverse=%v", d.Info().ID, reverse), func(t *testing.T) {
				p := scanLoopProgram(T, n, reverse)
				if err := p.Validate(); err != nil {
					t.Fatal(err)
				}
				x := make([]float64, T*n)
				for i := range x {
					x[i] = float64(1 + i*i%7)
				}
				in := map[string][]float64{"x": x, "h0": {10, 20, 30}}
				want := make([]float64, (T+1)*n)
				for j := range n {
					acc := in["h0"][j]
					if reverse {
						want[T*n+j] = acc
						for s := T - 1; s >= 0; s-- {
							acc += x[s*n+j]
							want[s*n+j] = acc
						}
					} else {
						want[j] = acc
						for s := range T {
							acc += x[s*n+j]
							want[(s+1)*n+j] = acc
						}
					}
				}
				ref := interpretLoopProgram(t, p, in)
				got, _ := runLoopProgram(t, d, p, in, false)
				for i := range want {
					if got["s"][i] != want[i] || ref["s"][i] != want[i] {
						t.Fatalf("s = %v, interpreter %v, want %v", got["s"], ref["s"], want)
					}
				}
			})
		}
	}
}

// TestStepLoopRNN runs the forward and backward recurrent cells under every
// template the loop body's matrix product can take (loops, the tiled
// product with and without a split reduction and its combining launch, the
// tensor-core layout emulated, a split parallel reduction) and compares
// every output with kir.Interpret. Each configuration checks that the
// product was rendered as it asked.
func TestStepLoopRNN(t *testing.T) {
	const T, B, U = 5, 6, 40
	// Each configuration lists what its launches of the forward loop (the
	// backward loop's are alike) must show, as Launches describes them:
	// the product alone or chained with the cell that reads it.
	configs := []struct {
		name    string
		opts    []Option
		want    []string
		profile bool
		rtol    float64
	}{
		{"default", nil, []string{"chain k2_gates_f|k3_cell_f", "loop 0 (5 steps)"}, false, 1e-5},
		{"profile", []Option{WithProfiling()}, []string{"chain k2_gates_f|k3_cell_f"}, true, 1e-5},
		{"profile-second-queue", nil, []string{"chain k2_gates_f|k3_cell_f"}, true, 1e-5},
		{"loops", []Option{withTest(testHooks{force: "loops"})}, []string{"chain k2_gates_f|k3_cell_f"}, false, 1e-5},
		{"gemm32", []Option{withTest(testHooks{gemmTile: 32})}, []string{"k2_gates_f: gemm gemm 32x", "k3_cell_f: loops"}, false, 1e-5},
		{"gemm64-split2", []Option{withTest(testHooks{gemmTile: 64, split: 2})},
			[]string{"k2_gates_f: gemm gemm 64x64x16 per-item 4x4 split 2", "chain k2_gates_f_combine|k3_cell_f"}, false, 1e-5},
		{"mma-3xtf32", []Option{withTest(testHooks{emulateMMA: Matmul3xTF32})}, []string{"k2_gates_f: gemm-3xtf32 "}, false, 1e-4},
		{"reduce-split2", []Option{withTest(testHooks{force: "reduce", split: 2})},
			[]string{"k2_gates_f: reduce 32x8 split 2", "chain k2_gates_f_combine|k3_cell_f"}, false, 1e-5},
	}
	if testing.Short() {
		configs = configs[:4]
	}
	p := rnnProgram(t, T, B, U)
	in := loopInputs(p, 1)
	want := interpretLoopProgram(t, p, in)
	for _, cfg := range configs {
		for _, d := range openAll(t, cfg.opts...) {
			t.Run(cfg.name+"/"+d.Info().ID, func(t *testing.T) {
				got, e := runLoopProgram(t, d, p, in, cfg.profile)
				ls := e.Launches()
				all := strings.Join(ls, "\n")
				for _, w := range cfg.want {
					if strings.HasPrefix(w, "chain ") && d.info.Type&cl.DeviceTypeGPU != 0 {
						continue // a GPU runs a loop body's launches apart
					}
					if !strings.Contains(all, w) {
						t.Errorf("no launch shows %q:\n%s", w, all)
					}
				}
				for _, b := range p.Outputs {
					if err := closeTo(got[b.Name], want[b.Name], tile.Float32, cfg.rtol, cfg.rtol/10); err != nil {
						t.Errorf("%s: %v\nlaunches:\n%s", b.Name, err, strings.Join(ls, "\n"))
					}
				}
			})
		}
	}
}

// TestStepLoopRendering renders the recurrent program and checks its
// launches without a device: a kernel touching a view takes the view's
// offset and moves its pointer first; no launch mixes kernels of a loop
// with kernels outside it or of another loop; launches outside the loops
// still merge; on a CPU device the loop body's two point kernels run as
// one chain launch, and on a GPU the body's product is the tiled template.
func TestStepLoopRendering(t *testing.T) {
	p := rnnProgram(t, 5, 6, 40)
	for _, gpu := range []bool{false, true} {
		tr := traits{Name: "dev", GPU: gpu, ComputeUnits: 16, MaxWorkGroup: 1024, LocalMemBytes: 48 << 10}
		r, err := render(p, tr)
		if err != nil {
			t.Fatal(err)
		}
		fnLoop := map[string]int{}
		for i, k := range p.Kernels {
			fnLoop[kernelFn(i, k)] = p.LoopOf(i)
		}
		perLoop := map[int]int{}
		gemms := 0
		for _, l := range r.Launches {
			kind, rest, _ := strings.Cut(l.Strategy, " ")
			names := []string{l.Name}
			if kind == "merged" || kind == "chain" {
				names = strings.FieldsFunc(rest, func(c rune) bool { return c == '+' || c == '|' })
			}
			if strings.HasPrefix(kind, "gemm") && p.LoopOf(l.Kernel) >= 0 {
				gemms++
			}
			loop := p.LoopOf(l.Kernel)
			for _, n := range names {
				lp, ok := fnLoop[strings.TrimSuffix(n, "_combine")]
				if !ok {
					t.Fatalf("gpu=%v: launch %s (%s) runs unknown kernel %q", gpu, l.Name, l.Strategy, n)
				}
				if lp != loop {
					t.Errorf("gpu=%v: launch %s (%s) mixes kernel %s of loop %d with loop %d", gpu, l.Name, l.Strategy, n, lp, loop)
				}
			}
			perLoop[loop]++
		}
		if perLoop[-1] != 2 {
			t.Errorf("gpu=%v: %d launches outside the loops, want 2 (the first kernels merged, the last kernels merged)", gpu, perLoop[-1])
		}
		if !gpu && (perLoop[0] != 1 || perLoop[1] != 1) {
			t.Errorf("gpu=%v: loops have %d and %d launches, want one chain each", gpu, perLoop[0], perLoop[1])
		}
		if gpu && (perLoop[0] < 2 || perLoop[1] < 2 || gemms != 2) {
			t.Errorf("gpu=%v: loops have %d and %d launches, %d tiled matrix products; want a matrix product and the cell in each", gpu, perLoop[0], perLoop[1], gemms)
		}
		// Every view that a kernel touches is an offset argument, and the
		// pointer moves by it in the kernel that receives it (whose code
		// may be another's, with parameters of other names).
		for i, b := range p.Buffers {
			if b.View == nil {
				continue
			}
			passed := false
			for _, l := range r.Launches {
				for j, a := range l.Args {
					if a.View != i {
						continue
					}
					passed = true
					sig := r.Source[strings.Index(r.Source, "void "+l.Fn+"("):]
					params := strings.Split(sig[len("void "+l.Fn+"("):strings.Index(sig, ")")], ", ")
					v := strings.TrimPrefix(params[j], "const int v")
					if v == params[j] || !strings.Contains(r.Source, fmt.Sprintf("\tb%s += v%s;\n", v, v)) {
						t.Errorf("gpu=%v: view b%d is argument %d of %s (code of %s), parameter %q, whose pointer does not move by it", gpu, i, j, l.Name, l.Fn, params[j])
					}
				}
			}
			if !passed {
				t.Errorf("gpu=%v: view b%d is no launch's offset argument", gpu, i)
			}
		}
	}
}

// TestStepLoopWideOffsets renders the running sum over a sequence of 2^31
// elements or more: the views' offsets are then long arguments, while the
// kernels' own index arithmetic, over one row, stays int.
func TestStepLoopWideOffsets(t *testing.T) {
	const T, n = 1 << 29, 4
	p := scanLoopProgram(T, n, true)
	if err := p.Validate(); err != nil {
		t.Fatal(err)
	}
	r, err := render(p, traits{Name: "cpu", ComputeUnits: 2, MaxWorkGroup: 4096})
	if err != nil {
		t.Fatal(err)
	}
	for i, b := range p.Buffers {
		if b.View != nil && !strings.Contains(r.Source, fmt.Sprintf("const long v%d", i)) {
			t.Errorf("view b%d of %d elements' storage has no long offset in:\n%s", i, p.Buffers[b.View.Of].Size(), r.Source)
		}
	}
	if !strings.Contains(r.Source, "const int gid") || strings.Contains(r.Source, "const long gid") {
		t.Errorf("the kernels over one row use 64-bit work-item indices:\n%s", r.Source)
	}
}
