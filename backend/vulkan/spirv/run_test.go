package spirv

import (
	"encoding/binary"
	"fmt"
	"math"
	"sync"
	"testing"

	"github.com/tartanml/tartan/backend"
	"github.com/tartanml/tartan/backend/conformance"
	"github.com/tartanml/tartan/kir"
	"github.com/tartanml/tartan/tile"
)

// runProgram runs p's kernels, emitted for t, on the SPIR-V interpreter as
// the Vulkan runtime dispatches them: one storage area per slot, each
// kernel's push constants set to its buffers' bases at the current step.
// inputs holds the Input buffers' elements by buffer id; Variable buffers
// start at 0. It returns every buffer's elements as float64s.
func runProgram(p *kir.Program, t Target, inputs map[int][]float64) ([][]float64, error) {
	slot := make([][]byte, p.Slots)
	for _, b := range p.Buffers {
		if b.View == nil {
			n := b.Size() * StorageBytes(b.DType)
			if len(slot[b.Slot]) < n {
				slot[b.Slot] = make([]byte, n)
			}
		}
	}
	base := make([]int, len(p.Buffers)) // each buffer's base at the current step
	place := func(s int) {
		for i, b := range p.Buffers {
			base[i] = b.Base(s)
		}
	}
	place(0)
	for i, b := range p.Buffers {
		data := inputs[i]
		if b.Kind == kir.Constant {
			data = b.Init
		}
		for j, x := range data {
			putElem(slot[b.Slot], b.DType, base[i]+j, x)
		}
	}
	kernels := make([]*spvModule, len(p.Kernels))
	emitted := make([]*Kernel, len(p.Kernels))
	for i := range p.Kernels {
		k, err := Emit(p, i, t)
		if err != nil {
			return nil, err
		}
		if kernels[i], err = parseModule(k.Words); err != nil {
			return nil, err
		}
		emitted[i] = k
	}
	run := func(i int) error {
		k, m := emitted[i], kernels[i]
		newInv := func() *invocation {
			in := &invocation{m: m, push: make([]uint32, len(k.Bindings)), bufs: make([][]byte, len(k.Bindings))}
			for j, id := range k.Bindings {
				in.push[j] = uint32(base[id])
				in.bufs[j] = slot[p.Buffers[id].Slot]
			}
			return in
		}
		fail := func(in *invocation, err error) error {
			return fmt.Errorf("kernel %d (%s), work-group %v, invocation %v: %w", i, p.Kernels[i].Name, in.wg, in.lid, err)
		}
		n := k.LocalSize[0] * k.LocalSize[1] * k.LocalSize[2]
		seq := newInv()
		for gz := range k.Groups[2] {
			for gy := range k.Groups[1] {
				for gx := range k.Groups[0] {
					wg := [3]uint32{uint32(gx), uint32(gy), uint32(gz)}
					if !m.barrier {
						for l := range n {
							seq.wg, seq.lid = wg, [3]uint32{uint32(l % k.LocalSize[0]), uint32(l / k.LocalSize[0] % k.LocalSize[1]), uint32(l / k.LocalSize[0] / k.LocalSize[1])}
							if err := seq.run(); err != nil {
								return fail(seq, err)
							}
						}
						continue
					}
					// A work-group with barriers runs as goroutines, one per
					// invocation, sharing its Workgroup arrays.
					shared := map[uint32][]val{}
					for id, t := range m.valueType {
						if pt := m.types[t]; pt.op == opTypePointer && pt.n == scWorkgroup {
							shared[id] = make([]val, m.types[pt.elem].n)
						}
					}
					b := newBarrier(n)
					errs := make(chan error, n)
					for l := range n {
						in := newInv()
						in.wg, in.lid, in.shared, in.barrier = wg, [3]uint32{uint32(l), 0, 0}, shared, b.wait
						go func() {
							err := in.run()
							b.leave()
							if err != nil {
								err = fail(in, err)
							}
							errs <- err
						}()
					}
					var first error
					for range n {
						if err := <-errs; err != nil && first == nil {
							first = err
						}
					}
					if first != nil {
						return first
					}
				}
			}
		}
		return nil
	}
	for i := 0; i < len(p.Kernels); i++ {
		l := p.LoopOf(i)
		if l < 0 {
			if err := run(i); err != nil {
				return nil, err
			}
			continue
		}
		lp := p.Loops[l]
		for it := range lp.Steps {
			place(lp.Step(it))
			for j := lp.First; j < lp.End; j++ {
				if err := run(j); err != nil {
					return nil, err
				}
			}
		}
		place(0)
		i = lp.End - 1
	}
	out := make([][]float64, len(p.Buffers))
	for i, b := range p.Buffers {
		out[i] = make([]float64, b.Size())
		for j := range out[i] {
			out[i][j] = getElem(slot[b.Slot], b.DType, base[i]+j)
		}
	}
	return out, nil
}

func putElem(s []byte, dt tile.DType, i int, x float64) {
	switch dt {
	case tile.Float64:
		binary.LittleEndian.PutUint64(s[8*i:], math.Float64bits(x))
	case tile.Int64:
		binary.LittleEndian.PutUint64(s[8*i:], uint64(int64(x)))
	case tile.Int32, tile.Bool:
		binary.LittleEndian.PutUint32(s[4*i:], uint32(int32(tile.RoundTo(dt, x))))
	default:
		binary.LittleEndian.PutUint32(s[4*i:], math.Float32bits(float32(x)))
	}
}

func getElem(s []byte, dt tile.DType, i int) float64 {
	switch dt {
	case tile.Float64:
		return math.Float64frombits(binary.LittleEndian.Uint64(s[8*i:]))
	case tile.Int64:
		return float64(int64(binary.LittleEndian.Uint64(s[8*i:])))
	case tile.Int32, tile.Bool:
		return float64(int32(binary.LittleEndian.Uint32(s[4*i:])))
	}
	return float64(math.Float32frombits(binary.LittleEndian.Uint32(s[4*i:])))
}

// closeTo compares got with want by the conformance suite's criterion:
// integers and booleans equal, floats within 1e-4 relative to the larger
// of the value and a thousandth of the tensor's peak, plus 1e-6; NaN must
// meet NaN.
func closeTo(dt tile.DType, got, want []float64) error {
	peak := 0.0
	for _, w := range want {
		if !math.IsInf(w, 0) && !math.IsNaN(w) {
			peak = max(peak, math.Abs(w))
		}
	}
	for i, w := range want {
		g := got[i]
		switch {
		case math.IsNaN(w) || math.IsNaN(g):
			if math.IsNaN(w) != math.IsNaN(g) {
				return fmt.Errorf("element %d: got %v, want %v", i, g, w)
			}
		case !dt.IsFloat() && math.Abs(w) >= 1<<63:
			// A conversion out of range saturates; kir.Interpret keeps
			// the float64 value.
			if math.Abs(g) < 1<<62 || (g < 0) != (w < 0) {
				return fmt.Errorf("element %d: got %v, want %v (saturated)", i, g, w)
			}
		case !dt.IsFloat() || math.IsInf(w, 0):
			if g != w {
				return fmt.Errorf("element %d: got %v, want %v", i, g, w)
			}
		case math.Abs(g-w) > 1e-4*max(math.Abs(w), 1e-3*peak)+1e-6:
			return fmt.Errorf("element %d: got %v, want %v", i, g, w)
		}
	}
	return nil
}

// checkProgram runs p on the interpreter and with kir.Interpret and
// compares every output and variable.
func checkProgram(t *testing.T, p *kir.Program, tg Target, inputs map[int][]float64) {
	t.Helper()
	got, err := runProgram(p, tg, inputs)
	if err != nil {
		t.Fatal(err)
	}
	want := make([][]float64, len(p.Buffers))
	for id, x := range inputs {
		want[id] = append([]float64(nil), x...)
	}
	if err := kir.Interpret(p, want); err != nil {
		t.Fatal(err)
	}
	for _, b := range append(append([]kir.Binding(nil), p.Outputs...), p.Variables...) {
		buf := p.Buffers[b.Buffer]
		if err := closeTo(buf.DType, got[b.Buffer], want[b.Buffer]); err != nil {
			t.Errorf("%s (%s%v): %v\ngot  %v\nwant %v", b.Name, buf.DType, buf.Shape, err, got[b.Buffer], want[b.Buffer])
		}
	}
}

// TestInterpretedCorners runs the corner kernels through the SPIR-V
// interpreter and compares them with kir.Interpret.
func TestInterpretedCorners(t *testing.T) {
	p, named := cornerProgram()
	inputs := map[int][]float64{}
	for _, b := range p.Inputs {
		inputs[b.Buffer] = named[b.Name]
	}
	checkProgram(t, p, full, inputs)
}

// TestInterpretedConformance runs every conformance case's program through
// the SPIR-V interpreter and compares it with kir.Interpret.
func TestInterpretedConformance(t *testing.T) {
	if testing.Short() {
		t.Skip("interprets every conformance program")
	}
	for _, c := range conformance.Cases() {
		t.Run(c.Name, func(t *testing.T) {
			b, err := conformance.Prepare(c, conformance.Seed(c))
			if err != nil {
				t.Fatal(err)
			}
			p := compileCase(t, b)
			inputs := map[int][]float64{}
			for _, in := range p.Inputs {
				inputs[in.Buffer] = backend.ToFloat64(b.Inputs()[in.Name])
			}
			checkProgram(t, p, full, inputs)
		})
	}
}

// TestInterpretedMinimalTarget runs kernels on a device without 64-bit
// types and with few work-groups per row: a Philox draw from a negative
// int32 seed, a scatter, and a grid of several rows.
func TestInterpretedMinimalTarget(t *testing.T) {
	f32, i32 := tile.Float32, tile.Int32
	p := scatterProgram()
	pb := &progBuilder{p: p}
	seed := pb.buf("seed", kir.Input, i32)
	x := pb.buf("x", kir.Input, f32, 300)
	o := pb.buf("random", kir.Output, f32, 300)
	pb.kernel("random", o, tile.Shape{300}, nil, tile.Assign, nil,
		ap(tile.Add, f32, ld(x, f32, kir.Skip, 0, iv(0)), &kir.Expr{Op: kir.Random, DType: f32, Stream: 3,
			Args: []*kir.Expr{ld(seed, i32, kir.Skip, 0)}, Index: []*kir.Ix{iv(0)}}), nil)
	o = pb.buf("truncs", kir.Output, i32, 300)
	pb.kernel("truncs", o, tile.Shape{300}, nil, tile.Assign, nil,
		cast(i32, ap(tile.Mul, f32, ld(x, f32, kir.Skip, 0, iv(0)), cst(f32, -1e4))), nil)
	xs := make([]float64, 300)
	for i := range xs {
		xs[i] = float64(i%17)/3 - 2.5
	}
	xs[7] = math.NaN()
	inputs := map[int][]float64{0: {3, -1, 4, 0}, 1: {1, 2, 3, 4, 5, 6, 7, 8}, seed: {-123456}, x: xs}
	minimal := Target{MaxWorkGroupSize: 32, MaxGroupCount: [3]int{4, 65535, 65535}}
	k, err := Emit(p, 1, minimal)
	if err != nil || k.Groups != [3]int{4, 3, 1} {
		t.Fatalf("300 points on 4 groups of 32 a row: %+v, %v", k, err)
	}
	checkProgram(t, p, minimal, inputs)
}

// barrier is a reusable barrier for the n invocations of a work-group; an
// invocation that returns while others wait at it (a barrier outside
// uniform control flow) breaks it, failing every wait.
type barrier struct {
	mu                    sync.Mutex
	cond                  *sync.Cond
	n, waiting, gen, gone int
	broken                bool
}

func newBarrier(n int) *barrier {
	b := &barrier{n: n}
	b.cond = sync.NewCond(&b.mu)
	return b
}

func (b *barrier) wait() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.gone > 0 || b.broken {
		b.broken = true
		b.cond.Broadcast()
		return fmt.Errorf("barrier reached after %d invocations returned", b.gone)
	}
	if b.waiting++; b.waiting == b.n {
		b.waiting, b.gen = 0, b.gen+1
		b.cond.Broadcast()
		return nil
	}
	for g := b.gen; g == b.gen && !b.broken; {
		b.cond.Wait()
	}
	if b.broken {
		return fmt.Errorf("the work-group left a barrier in non-uniform control flow")
	}
	return nil
}

func (b *barrier) leave() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.gone++; b.waiting > 0 {
		b.broken = true
		b.cond.Broadcast()
	}
}
