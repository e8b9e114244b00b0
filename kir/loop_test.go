package kir

import (
	"strings"
	"testing"

	"github.com/tartanml/tartan/tile"
)

// scanProgram builds, by hand, the program of a running sum over the rows of
// x [T, n] from h0 [n]: s [T+1, n] holds h0 in one end row and
// s[t±1] = s[t] + x[t] for each step, as a loop of one kernel over views.
func scanProgram(T, n int, reverse bool) *Program {
	f64 := tile.Float64
	first, next, prev := 0, n, 0 // where h0 goes; the views' offsets
	if reverse {
		first, next, prev = T*n, 0, n
	}
	bufs := []*Buffer{
		{Name: "x", Kind: Input, DType: f64, Shape: tile.Shape{T, n}},
		{Name: "h0", Kind: Input, DType: f64, Shape: tile.Shape{n}, Slot: 1},
		{Name: "s", Kind: Output, DType: f64, Shape: tile.Shape{T + 1, n}, Slot: 2},
		{Kind: Temp, DType: f64, Shape: tile.Shape{n}, Slot: 2, View: &View{Of: 2, Offset: first}},
		{Kind: Temp, DType: f64, Shape: tile.Shape{n}, Slot: 2, View: &View{Of: 2, Offset: prev, Stride: n}},
		{Kind: Temp, DType: f64, Shape: tile.Shape{n}, Slot: 2, View: &View{Of: 2, Offset: next, Stride: n}},
		{Kind: Temp, DType: f64, Shape: tile.Shape{n}, View: &View{Of: 0, Stride: n}},
	}
	p := program(bufs,
		&Kernel{Name: "init", Out: 3, Shape: tile.Shape{n}, Agg: tile.Assign, Body: load(1, f64, v(0))},
		&Kernel{Name: "step", Out: 5, Shape: tile.Shape{n}, Agg: tile.Assign, Body: fn(tile.Add, f64, load(4, f64, v(0)), load(6, f64, v(0)))})
	p.Loops = []StepLoop{{First: 1, End: 2, Steps: T, Reverse: reverse}}
	return p
}

func TestStepLoop(t *testing.T) {
	const T, n = 4, 3
	for _, reverse := range []bool{false, true} {
		p := scanProgram(T, n, reverse)
		x := make([]float64, T*n)
		for i := range x {
			x[i] = float64(1 + i*i%7)
		}
		h0 := []float64{10, 20, 30}
		bufs := make([][]float64, len(p.Buffers))
		bufs[0], bufs[1] = x, h0
		if err := InterpretStrict(p, bufs); err != nil {
			t.Fatal(err)
		}
		// Hand-worked: the running sums, from the end that starts.
		want := make([]float64, (T+1)*n)
		for j := range n {
			acc := h0[j]
			if reverse {
				want[T*n+j] = acc
				for s := T - 1; s >= 0; s-- {
					acc += x[s*n+j]
					want[s*n+j] = acc
				}
			} else {
				want[j] = acc
				for s := 0; s < T; s++ {
					acc += x[s*n+j]
					want[(s+1)*n+j] = acc
				}
			}
		}
		for i := range want {
			if bufs[2][i] != want[i] {
				t.Fatalf("reverse %v: s = %v, want %v", reverse, bufs[2], want)
			}
		}
		if s := p.String(); !strings.Contains(s, "loop 4 steps") || !strings.Contains(s, "view of b2 at 3 + step·3") && !reverse {
			t.Errorf("printed program does not show the loop and views:\n%s", s)
		}
	}
}

func TestStepLoopValidate(t *testing.T) {
	for _, c := range []struct {
		name string
		edit func(p *Program)
		want string
	}{
		{"view out of range", func(p *Program) { p.Buffers[5].View.Offset = 5 }, "out of range"},
		{"view of a view", func(p *Program) { p.Buffers[5].View.Of = 4 }, "not a view"},
		{"moving view outside loops", func(p *Program) { p.Loops = nil }, "outside every loop"},
		{"empty loop", func(p *Program) { p.Loops[0].End = 1 }, "empty"},
		{"loop past the end", func(p *Program) { p.Loops[0].End = 3 }, "out of range"},
	} {
		p := scanProgram(4, 3, false)
		c.edit(p)
		err := p.Validate()
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: Validate = %v, want an error containing %q", c.name, err, c.want)
		}
	}
}
