package compile

import (
	"strings"
	"testing"

	"github.com/tartanml/tartan/grad"
	"github.com/tartanml/tartan/kir"
	"github.com/tartanml/tartan/op"
	"github.com/tartanml/tartan/tile"
)

// lstmStep builds one training step of an LSTM over T steps (loss, gradients
// and an SGD update) written with two recurrences.
func lstmStep(T int) *tile.Graph {
	const B, F, U = 4, 3, 5
	f32 := tile.Float32
	g := tile.NewGraph("lstm")
	x := g.Input("x", f32, tile.Shape{T, B, F})
	y := g.Input("y", f32, tile.Shape{B, U})
	w := g.Variable("w", f32, tile.Shape{F, 4 * U})
	u := g.Variable("u", f32, tile.Shape{U, 4 * U})
	zero := g.BroadcastTo(g.Scalar(0, f32), tile.Shape{B, U})
	hp, cp := g.Recurrence(zero, T, false), g.Recurrence(zero, T, false)
	sz := map[string]int{"T": T, "B": B, "G": 4 * U}
	z := g.Add(tile.ParseContraction(g, "O[t, b, j : T, B, G] = +(X[t, b, f] * W[f, j])", map[string]*tile.Tensor{"X": x, "W": w}, sz),
		tile.ParseContraction(g, "O[t, b, j : T, B, G] = +(H[t, b, k] * R[k, j])", map[string]*tile.Tensor{"H": hp, "R": u}, sz))
	gate := func(i int) *tile.Tensor { return g.Slice(z, []int{0, 0, i * U}, []int{T, B, (i + 1) * U}, nil) }
	c := g.Add(g.Mul(op.Sigmoid(g, gate(1)), cp), g.Mul(op.Sigmoid(g, gate(0)), g.Tanh(gate(2))))
	h := g.Mul(op.Sigmoid(g, gate(3)), g.Tanh(c))
	g.CloseRecurrence(hp, h)
	g.CloseRecurrence(cp, c)
	last := g.Reshape(g.Slice(h, []int{T - 1, 0, 0}, []int{T, B, U}, nil), tile.Shape{B, U})
	loss := op.MeanSquaredError(g, y, last)
	gs, err := grad.Grad(g, loss, w, u)
	if err != nil {
		panic(err)
	}
	g.Update(w, g.Sub(w, gs[0]))
	g.Update(u, g.Sub(u, gs[1]))
	g.SetOutput("loss", loss)
	return g
}

// TestRecurrenceLoops checks that an LSTM's training step compiles to two
// loops (forward in time, then back) whose kernels do not grow with T.
func TestRecurrenceLoops(t *testing.T) {
	var counts []int
	for _, T := range []int{3, 40} {
		g := lstmStep(T)
		if err := g.Err(); err != nil {
			t.Fatal(err)
		}
		p, err := Compile(g, Target{Backend: "cpu"})
		if err != nil {
			t.Fatal(err)
		}
		if len(p.Loops) != 2 || p.Loops[0].Reverse || !p.Loops[1].Reverse || p.Loops[0].Steps != T {
			t.Fatalf("T=%d: loops %+v, want a forward and a reverse loop of %d steps\n%v", T, p.Loops, T, p)
		}
		for _, l := range p.Loops {
			for _, k := range p.Kernels[l.First:l.End] {
				if len(k.Shape) > 0 && k.Shape[0] == T && T > 3 {
					t.Errorf("T=%d: loop kernel %s still runs over the steps: %v", T, k.Name, k.Shape)
				}
			}
		}
		counts = append(counts, len(p.Kernels))
		if !strings.Contains(p.String(), "+ step·") {
			t.Errorf("T=%d: no moving view in\n%v", T, p)
		}
		var bufs [][]float64 = make([][]float64, len(p.Buffers))
		for _, b := range p.Inputs {
			bufs[b.Buffer] = make([]float64, p.Buffers[b.Buffer].Size())
		}
		if err := kir.InterpretStrict(p, bufs); err != nil {
			t.Fatal(err)
		}
	}
	if counts[0] != counts[1] {
		t.Errorf("kernels: %d for 3 steps, %d for 40", counts[0], counts[1])
	}
}

// TestLoopStateReadOffCycle checks a reader of one recurrence's state
// that is off that state's cycle but feeds another recurrence's cycle, and
// is built before the first cycle's nodes: it runs after the first loop,
// not before it (where it would read steps not yet computed). a doubles
// while it stays below 40; b adds a scaled copy of a at each step.
func TestLoopStateReadOffCycle(t *testing.T) {
	const T = 9
	f32 := tile.Float32
	g := tile.NewGraph("offcycle")
	a0 := g.Input("a0", f32, tile.Shape{2})
	b0 := g.Input("b0", f32, tile.Shape{2})
	a := g.Recurrence(a0, T, false)
	b := g.Recurrence(b0, T, false)
	scaled := g.Mul(a, g.ScalarLike(a, 0.5)) // reads a, off a's cycle, built first
	nb := g.Add(b, scaled)
	na := g.Select(g.Elementwise(tile.Lt, a, g.ScalarLike(a, 40)), g.Add(a, a), a)
	g.CloseRecurrence(b, nb)
	g.CloseRecurrence(a, na)
	g.SetOutput("a", na)
	g.SetOutput("b", nb)
	p, err := Compile(g, Target{Backend: "cpu"})
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Loops) != 2 {
		t.Errorf("%d loops, want 2 (a, then b reading a's steps)\n%v", len(p.Loops), p)
	}
	r := newProgRunner(p, nil)
	got, err := r.run(map[string]*tile.Value{"a0": {DType: f32, Shape: tile.Shape{2}, Data: []float64{1, 3}},
		"b0": {DType: f32, Shape: tile.Shape{2}, Data: []float64{0, 10}}})
	if err != nil {
		t.Fatal(err)
	}
	// Worked by hand: b[t] = b0 + (a[0] + … + a[t]) / 2.
	for j, a := range []float64{1, 3} {
		b := []float64{0, 10}[j]
		for s := range T {
			b += a / 2
			if a < 40 {
				a += a
			}
			if got["a"][2*s+j] != a || got["b"][2*s+j] != b {
				t.Fatalf("step %d, element %d: a = %v, b = %v; want %v, %v", s, j, got["a"][2*s+j], got["b"][2*s+j], a, b)
			}
		}
	}
}
