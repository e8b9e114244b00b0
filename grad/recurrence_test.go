package grad

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/tartanml/tartan/ref"
	"github.com/tartanml/tartan/tile"
)

// rnnLayer builds h[t] = tanh(x[t]·W + h[t∓1]·U) over x [T, B, F] with a
// recurrence, and returns the sequence of states h [T, B, U].
func rnnLayer(g *tile.Graph, x, h0, w, u *tile.Tensor, reverse bool) *tile.Tensor {
	T, B, U := x.Dim(0), x.Dim(1), u.Dim(0)
	prev := g.Recurrence(h0, T, reverse)
	xw := tile.ParseContraction(g, "O[t, b, j : T, B, U] = +(X[t, b, f] * W[f, j])",
		map[string]*tile.Tensor{"X": x, "W": w}, map[string]int{"T": T, "B": B, "U": U})
	hu := tile.ParseContraction(g, "O[t, b, j : T, B, U] = +(H[t, b, k] * R[k, j])",
		map[string]*tile.Tensor{"H": prev, "R": u}, map[string]int{"T": T, "B": B, "U": U})
	h := g.Tanh(g.Add(xw, hu))
	g.CloseRecurrence(prev, h)
	return h
}

// rnnUnrolled computes the same states one step after another with slices.
func rnnUnrolled(g *tile.Graph, x, h0, w, u *tile.Tensor, reverse bool) *tile.Tensor {
	T, B, F, U := x.Dim(0), x.Dim(1), x.Dim(2), u.Dim(0)
	steps := make([]*tile.Tensor, T)
	h := h0
	for i := 0; i < T; i++ {
		t := i
		if reverse {
			t = T - 1 - i
		}
		xt := g.Reshape(g.Slice(x, []int{t, 0, 0}, []int{t + 1, B, F}, nil), tile.Shape{B, F})
		xw := tile.ParseContraction(g, "O[b, j : B, U] = +(X[b, f] * W[f, j])",
			map[string]*tile.Tensor{"X": xt, "W": w}, map[string]int{"B": B, "U": U})
		hu := tile.ParseContraction(g, "O[b, j : B, U] = +(H[b, k] * R[k, j])",
			map[string]*tile.Tensor{"H": h, "R": u}, map[string]int{"B": B, "U": U})
		h = g.Tanh(g.Add(xw, hu))
		steps[t] = g.Reshape(h, tile.Shape{1, B, U})
	}
	return g.Concat(0, steps...)
}

func randValue(r *rand.Rand, shape tile.Shape, scale float64) *tile.Value {
	v := tile.NewValue(tile.Float64, shape)
	for i := range v.Data {
		v.Data[i] = scale * (2*r.Float64() - 1)
	}
	return v
}

// TestRecurrence checks a two-layer RNN written with recurrences (the second
// layer reversed) against the same network unrolled step by step, and its
// gradients against finite differences.
func TestRecurrence(t *testing.T) {
	const T, B, F, U = 4, 2, 3, 3
	g := tile.NewGraph("rnn")
	x := g.Input("x", tile.Float64, tile.Shape{T, B, F})
	h0 := g.Input("h0", tile.Float64, tile.Shape{B, U})
	w1 := g.Variable("w1", tile.Float64, tile.Shape{F, U})
	u1 := g.Variable("u1", tile.Float64, tile.Shape{U, U})
	w2 := g.Variable("w2", tile.Float64, tile.Shape{U, U})
	u2 := g.Variable("u2", tile.Float64, tile.Shape{U, U})
	h1 := rnnLayer(g, x, h0, w1, u1, false)
	h2 := rnnLayer(g, h1, h0, w2, u2, true)
	e1 := rnnUnrolled(g, x, h0, w1, u1, false)
	e2 := rnnUnrolled(g, e1, h0, w2, u2, true)
	sq := g.Mul(h2, h2)
	loss := tile.ParseContraction(g, "L[] = +(S[t, b, j])", map[string]*tile.Tensor{"S": g.Add(sq, h1)}, nil)
	if err := g.Err(); err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(3, 4))
	feeds := map[string]*tile.Value{"x": randValue(r, tile.Shape{T, B, F}, 1), "h0": randValue(r, tile.Shape{B, U}, 0.5)}
	vars := map[string]*tile.Value{}
	for _, v := range []*tile.Tensor{w1, u1, w2, u2} {
		vars[v.Op().(*tile.VariableOp).Name] = randValue(r, v.Shape(), 0.8)
	}
	m, err := ref.New(g)
	if err != nil {
		t.Fatal(err)
	}
	for name, v := range vars {
		if err := m.SetVar(name, v); err != nil {
			t.Fatal(err)
		}
	}
	got, err := m.Eval(feeds, h1, h2, e1, e2)
	if err != nil {
		t.Fatal(err)
	}
	for k, name := range []string{"h1", "h2"} {
		for i := range got[k].Data {
			if d := math.Abs(got[k].Data[i] - got[k+2].Data[i]); d > 1e-12 {
				t.Fatalf("%s[%d] = %g with a recurrence, %g unrolled", name, i, got[k].Data[i], got[k+2].Data[i])
			}
		}
	}
	worst, where, err := Check(g, loss, []*tile.Tensor{x, h0, w1, u1, w2, u2}, feeds, vars, WithMaxProbes(0))
	if err != nil {
		t.Fatal(err)
	}
	if worst > 1e-6 {
		t.Errorf("gradient error %g at %s", worst, where)
	}
}
