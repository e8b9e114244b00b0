package compile

import (
	"testing"

	"github.com/tartanml/tartan/kir"
	"github.com/tartanml/tartan/tile"
)

// TestExtractAndHash checks kir.Extract and kir.Hash on compiled
// programs: every kernel that reads only the program's inputs, constants
// and variables, run alone from the extracted program on the same values,
// computes bit for bit the output the whole program computes; two
// convolutions of one shape over different buffers hash alike, one of
// another shape or epilogue does not, and neither names nor a tiling
// change a hash.
func TestExtractAndHash(t *testing.T) {
	g := tile.NewGraph("extract")
	conv := func(x, w *tile.Tensor, c int) *tile.Tensor {
		return tile.ParseContraction(g, "O[n, y, x, f : 2, 6, 7, F] = +(X[n, y + i - 1, x + j - 1, c] * W[i, j, c, f])",
			map[string]*tile.Tensor{"X": x, "W": w}, map[string]int{"F": c})
	}
	x1, w1 := g.Input("x1", f32, s(2, 6, 7, 16)), g.Input("w1", f32, s(3, 3, 16, 16))
	x2, w2 := g.Input("x2", f32, s(2, 6, 7, 16)), g.Input("w2", f32, s(3, 3, 16, 16))
	x3, w3 := g.Input("x3", f32, s(2, 6, 7, 16)), g.Input("w3", f32, s(3, 3, 16, 8))
	g.SetOutput("c1", conv(x1, w1, 16))
	g.SetOutput("c2", conv(x2, w2, 16))
	g.SetOutput("c3", conv(x3, w3, 8))
	g.SetOutput("c4", g.Tanh(conv(x2, w1, 16)))
	a, b := g.Input("a", f32, s(37, 45)), g.Input("b", f32, s(45, 33))
	g.SetOutput("band", tile.ParseContraction(g, "O[i, j : 37, 33] = +(A[i, k] * B[k, j]), i + k < 50", map[string]*tile.Tensor{"A": a, "B": b}, nil))
	cv := tile.NewValue(f32, s(45))
	for i := range cv.Data {
		cv.Data[i] = float64(i%7) - 3
	}
	g.SetOutput("scaled", g.Mul(a, g.Constant(cv)))
	if err := g.Err(); err != nil {
		t.Fatal(err)
	}
	feeds, vars := feedsFor(g, 7, 5)
	for _, tgt := range []Target{testTarget, {Backend: "opencl", ComputeUnits: 132, MaxWorkGroup: 1024, SplitK: true, SplitGroups: true}} {
		p, err := Compile(g, tgt)
		if err != nil {
			t.Fatal(err)
		}
		r := newProgRunner(p, vars)
		whole, err := r.run(feeds)
		if err != nil {
			t.Fatal(err)
		}
		outName := map[int]string{}
		for _, o := range p.Outputs {
			outName[o.Buffer] = o.Name
		}
		inName := map[int]string{}
		for _, in := range p.Inputs {
			inName[in.Buffer] = in.Name
		}
		hashOf := map[string]string{}
		checked := 0
		for i, k := range p.Kernels {
			name, ok := outName[k.Out]
			if !ok {
				continue
			}
			ids := k.Buffers()
			alone := true
			for _, id := range ids[1:] {
				if kind := p.Buffers[id].Kind; kind == kir.Temp || kind == kir.Output {
					alone = false
				}
			}
			if !alone {
				continue
			}
			q, err := kir.Extract(p, i)
			if err != nil {
				t.Fatal(err)
			}
			if err := q.Validate(); err != nil {
				t.Fatalf("%s %s: extracted program: %v\n%s", tgt.Backend, k.Name, err, q)
			}
			bufs := make([][]float64, len(q.Buffers))
			for j, id := range ids[1:] {
				if q.Buffers[j+1].Kind == kir.Input {
					bufs[j+1] = append([]float64(nil), feeds[inName[id]].Data...)
				}
			}
			if err := kir.InterpretStrict(q, bufs); err != nil {
				t.Fatalf("%s %s: %v", tgt.Backend, k.Name, err)
			}
			want := whole[name]
			for e := range want {
				if bufs[0][e] != want[e] {
					t.Fatalf("%s %s (%s) alone: element %d is %v, the whole program's %v", tgt.Backend, k.Name, name, e, bufs[0][e], want[e])
				}
			}
			h, err := kir.Hash(p, i)
			if err != nil {
				t.Fatal(err)
			}
			hashOf[name] = h
			// Neither the name nor a tiling changes the hash.
			k2 := *k
			k2.Name, k2.Source = "renamed", "elsewhere"
			k2.Schedule.Tiling = &kir.Tiling{BM: 64, BN: 64, BK: 16}
			p2 := *p
			p2.Kernels = append([]*kir.Kernel(nil), p.Kernels...)
			p2.Kernels[i] = &k2
			if h2, _ := kir.Hash(&p2, i); h2 != h {
				t.Errorf("%s %s: renaming and tiling changed the hash", tgt.Backend, k.Name)
			}
			checked++
		}
		for _, n := range []string{"c1", "c2", "c3", "c4", "band"} {
			if hashOf[n] == "" {
				t.Fatalf("%s: output %s was not checked alone", tgt.Backend, n)
			}
		}
		if hashOf["c1"] != hashOf["c2"] {
			t.Errorf("%s: two convolutions of one shape hash differently", tgt.Backend)
		}
		for _, n := range []string{"c3", "c4", "band"} {
			if hashOf[n] == hashOf["c1"] {
				t.Errorf("%s: %s hashes like c1", tgt.Backend, n)
			}
		}
		if checked < 6 {
			t.Errorf("%s: %d kernels checked alone, want 6", tgt.Backend, checked)
		}
	}
}
