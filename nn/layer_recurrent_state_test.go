package nn

import (
	"math"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/tartanml/tartan/grad"
	"github.com/tartanml/tartan/ref"
	"github.com/tartanml/tartan/tile"
)

// float64Outputs adds m's computation over a float64 input x of per-sample
// shape in (batch n) to a new inference graph, its weights float64
// variables named as the weights, and returns every output.
func float64Outputs(t *testing.T, m *Model, n int, in []int) (*tile.Graph, *tile.Tensor, []*tile.Tensor, []*tile.Tensor) {
	t.Helper()
	g := tile.NewGraph("state")
	x := g.Input("x", tile.Float64, batchShape(n, in))
	c := &callContext{g: g, vars: map[*Weight]*tile.Tensor{}, logits: map[*tile.Tensor]*logits{}}
	var vars []*tile.Tensor
	for _, w := range m.weights {
		c.vars[w] = g.Variable(w.Name(), tile.Float64, w.shape)
		vars = append(vars, c.vars[w])
	}
	outs, err := m.forward(c, []*tile.Tensor{x})
	if err != nil {
		t.Fatal(err)
	}
	return g, x, outs, vars
}

// evalOutputs evaluates outs on the reference executor with input x and
// random weights (seeded by seed), returning the outputs and the weights'
// values by name.
func evalOutputs(t *testing.T, g *tile.Graph, vars, outs []*tile.Tensor, x *tile.Value, seed uint64) ([]*tile.Value, map[string]*tile.Value) {
	t.Helper()
	ev, err := ref.New(g)
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(seed, 3))
	vals := map[string]*tile.Value{}
	for _, v := range vars {
		name := v.Op().(*tile.VariableOp).Name
		vals[name] = randomValue(r, v.Shape(), 0.8)
		if err := ev.SetVar(name, vals[name]); err != nil {
			t.Fatal(err)
		}
	}
	got, err := ev.Eval(map[string]*tile.Value{"x": x}, outs...)
	if err != nil {
		t.Fatal(err)
	}
	return got, vals
}

// handLSTM runs Keras's LSTM (sigmoid gates, tanh, gates i, f, c, o) in
// plain Go over x (n, steps, features) with the given kernel, recurrent
// kernel and bias, skipping the steps where keep is false, reading time
// backwards when backwards. It returns the final h and c, (n, units) each.
func handLSTM(x []float64, n, steps, features, units int, kernel, rec, bias []float64, keep func(b, s int) bool, backwards bool) (hs, cs []float64) {
	sigmoid := func(v float64) float64 { return 1 / (1 + math.Exp(-v)) }
	hs, cs = make([]float64, n*units), make([]float64, n*units)
	g := 4 * units
	for b := 0; b < n; b++ {
		h, c := hs[b*units:(b+1)*units], cs[b*units:(b+1)*units]
		for k := 0; k < steps; k++ {
			s := k
			if backwards {
				s = steps - 1 - k
			}
			if !keep(b, s) {
				continue
			}
			z := slices.Clone(bias)
			for j := 0; j < g; j++ {
				for f := 0; f < features; f++ {
					z[j] += x[(b*steps+s)*features+f] * kernel[f*g+j]
				}
				for u := 0; u < units; u++ {
					z[j] += h[u] * rec[u*g+j]
				}
			}
			for u := 0; u < units; u++ {
				i, fg := sigmoid(z[u]), sigmoid(z[units+u])
				cand, o := math.Tanh(z[2*units+u]), sigmoid(z[3*units+u])
				c[u] = fg*c[u] + i*cand
				h[u] = o * math.Tanh(c[u])
			}
		}
	}
	return hs, cs
}

// firstDiff returns the first index where a and b differ by more than tol,
// 0 when their lengths differ, or -1 when they agree.
func firstDiff(a, b []float64, tol float64) int {
	if len(a) != len(b) {
		return 0
	}
	for i := range a {
		if math.Abs(a[i]-b[i]) > tol {
			return i
		}
	}
	return -1
}

// TestReturnStateMatchesSequence checks the final states of SimpleRNN, LSTM
// and GRU, forwards and backwards, plain and masked: h equals the
// return_sequences output at each sequence's last step read that is not
// masked (position T−1−s of the reversed output for go_backwards), and an
// LSTM's h and c equal a plain-Go run of Keras's formulas.
func TestReturnStateMatchesSequence(t *testing.T) {
	const n, steps, features, units = 2, 5, 3, 3
	// Sample 0 ends with two padded steps; sample 1 has padding at steps 0
	// and 2.
	padded := map[[2]int]bool{{0, 3}: true, {0, 4}: true, {1, 0}: true, {1, 2}: true}
	for _, class := range []string{"SimpleRNN", "LSTM", "GRU"} {
		for _, backwards := range []bool{false, true} {
			for _, masked := range []bool{false, true} {
				name := class
				if backwards {
					name += "_backwards"
				}
				if masked {
					name += "_masked"
				}
				t.Run(name, func(t *testing.T) {
					opts := []LayerOption{ReturnSequences(true), ReturnState(true), GoBackwards(backwards)}
					var l Layer
					switch class {
					case "SimpleRNN":
						l = SimpleRNN(units, opts...)
					case "LSTM":
						l = LSTM(units, opts...)
					case "GRU":
						l = GRU(units, opts...)
					}
					in := Input(steps, features)
					x := in
					if masked {
						x = Apply(Masking(0), in)
					}
					outs := ApplyAll(l, x)
					wantOuts := 2
					if class == "LSTM" {
						wantOuts = 3
					}
					if len(outs) != wantOuts {
						t.Fatalf("ApplyAll gave %d nodes, want %d", len(outs), wantOuts)
					}
					for i, o := range outs[1:] {
						if !slices.Equal(o.Shape(), []int{units}) {
							t.Errorf("state %d has shape %v, want [%d]", i, o.Shape(), units)
						}
					}
					m := must(t)(Functional("m", []*Node{in}, outs))
					g, xt, ys, vars := float64Outputs(t, m, n, []int{steps, features})
					xv := randomValue(rand.New(rand.NewPCG(11, 5)), xt.Shape(), 1)
					keep := func(b, s int) bool { return !masked || !padded[[2]int{b, s}] }
					for b := 0; b < n; b++ {
						for s := 0; s < steps; s++ {
							if !keep(b, s) {
								for f := 0; f < features; f++ {
									xv.Data[(b*steps+s)*features+f] = 0
								}
							}
						}
					}
					got, vals := evalOutputs(t, g, vars, ys, xv, uint64(len(name)))
					seq, h := got[0].Data, got[1].Data
					for b := 0; b < n; b++ {
						// The last step read that counts, and its place in
						// the sequence output.
						last := -1
						for k := 0; k < steps; k++ {
							s := k
							if backwards {
								s = steps - 1 - k
							}
							if keep(b, s) {
								last = s
							}
						}
						pos := last
						if backwards {
							pos = steps - 1 - last
						}
						want := seq[(b*steps+pos)*units : (b*steps+pos+1)*units]
						if i := firstDiff(h[b*units:(b+1)*units], want, 1e-12); i >= 0 {
							t.Errorf("sample %d: h = %v, want the output at position %d (step %d) %v", b, h[b*units:(b+1)*units], pos, last, want)
						}
					}
					if class != "LSTM" {
						return
					}
					lname := l.Name()
					hh, hc := handLSTM(xv.Data, n, steps, features, units,
						vals[lname+"/kernel"].Data, vals[lname+"/recurrent_kernel"].Data, vals[lname+"/bias"].Data, keep, backwards)
					if i := firstDiff(h, hh, 1e-9); i >= 0 {
						t.Errorf("h = %v, the plain computation %v", h, hh)
					}
					if i := firstDiff(got[2].Data, hc, 1e-9); i >= 0 {
						t.Errorf("c = %v, the plain computation %v", got[2].Data, hc)
					}
				})
			}
		}
	}
}

// TestBidirectionalReturnState checks Bidirectional's states, [output,
// forward h, forward c, backward h, backward c]: with merge_mode concat and
// one output per sequence the output is [forward h, backward h], and every
// state equals the plain-Go LSTM of its direction, on a masked sequence.
func TestBidirectionalReturnState(t *testing.T) {
	const n, steps, features, units = 2, 4, 2, 2
	for _, wrapped := range []bool{false, true} {
		in := Input(steps, features)
		var l Layer
		if wrapped {
			l = Bidirectional(LSTM(units), ReturnState(true))
		} else {
			l = Bidirectional(LSTM(units, ReturnState(true)))
		}
		outs := ApplyAll(l, Apply(Masking(0), in))
		if len(outs) != 5 {
			t.Fatalf("ApplyAll gave %d nodes, want 5", len(outs))
		}
		m := must(t)(Functional("m", []*Node{in}, outs))
		g, xt, ys, vars := float64Outputs(t, m, n, []int{steps, features})
		xv := randomValue(rand.New(rand.NewPCG(2, 9)), xt.Shape(), 1)
		// Sample 1's last step is padding.
		xv.Data[(1*steps+3)*features], xv.Data[(1*steps+3)*features+1] = 0, 0
		keep := func(b, s int) bool { return b != 1 || s != 3 }
		got, vals := evalOutputs(t, g, vars, ys, xv, 4)
		out := got[0].Data
		for b := 0; b < n; b++ {
			fh, bh := got[1].Data[b*units:(b+1)*units], got[3].Data[b*units:(b+1)*units]
			if i := firstDiff(out[b*2*units:(b+1)*2*units], append(slices.Clone(fh), bh...), 1e-12); i >= 0 {
				t.Errorf("sample %d: output %v, forward h %v, backward h %v", b, out[b*2*units:(b+1)*2*units], fh, bh)
			}
		}
		for k, dir := range []string{"forward_lstm", "backward_lstm"} {
			p := l.Name() + "/" + dir + "/"
			hh, hc := handLSTM(xv.Data, n, steps, features, units, vals[p+"kernel"].Data, vals[p+"recurrent_kernel"].Data, vals[p+"bias"].Data, keep, k == 1)
			if i := firstDiff(got[1+2*k].Data, hh, 1e-9); i >= 0 {
				t.Errorf("%s h = %v, the plain computation %v", dir, got[1+2*k].Data, hh)
			}
			if i := firstDiff(got[2+2*k].Data, hc, 1e-9); i >= 0 {
				t.Errorf("%s c = %v, the plain computation %v", dir, got[2+2*k].Data, hc)
			}
		}
	}
}

// encoder returns a functional model whose LSTM's final h and c, joined,
// feed a Dense layer: the states of an encoder put to use.
func encoder(t *testing.T, steps, features int) *Model {
	in := Input(steps, features)
	outs := ApplyAll(LSTM(3, ReturnState(true)), in)
	y := Apply(Dense(2), Apply(Concatenate(), outs[1], outs[2]))
	return must(t)(Functional("encoder", []*Node{in}, []*Node{y}))
}

// TestReturnStateGradCheck checks the gradients through the states of an
// encoder against finite differences in float64, with respect to its input
// and every weight.
func TestReturnStateGradCheck(t *testing.T) {
	const n, steps, features = 2, 4, 3
	m := encoder(t, steps, features)
	g, x, ys, vars := float64Outputs(t, m, n, []int{steps, features})
	r := rand.New(rand.NewPCG(5, 6))
	loss := sumAll(g, g.Mul(ys[0], g.Constant(randomValue(r, ys[0].Shape(), 1))))
	vals := map[string]*tile.Value{}
	for _, v := range vars {
		vals[v.Op().(*tile.VariableOp).Name] = randomValue(r, v.Shape(), 0.8)
	}
	worst, where, err := grad.Check(g, loss, append([]*tile.Tensor{x}, vars...),
		map[string]*tile.Value{"x": randomValue(r, x.Shape(), 1)}, vals, grad.WithMaxProbes(0))
	if err != nil {
		t.Fatal(err)
	}
	if worst > 1e-6 {
		t.Errorf("gradient error %g at %s", worst, where)
	}
}

// TestReturnStateTrainStep trains the encoder one SGD step on the reference
// device and compares every weight's change, divided by the learning rate,
// with central finite differences of the mean squared error evaluated in
// float64 at the weights before the step.
func TestReturnStateTrainStep(t *testing.T) {
	const n, steps, features, lr = 3, 4, 2, 0.1
	m := encoder(t, steps, features)
	r := rand.New(rand.NewPCG(8, 1))
	x := make([]float32, n*steps*features)
	for i := range x {
		x[i] = float32(r.Float64()*2 - 1)
	}
	y := []float32{0.5, -1, 1, 0.25, -0.5, 0}
	before := map[string][]float32{}
	for _, w := range m.weights {
		before[w.Name()] = getWeight(t, m, w.Name())
	}
	if err := m.Compile(SGD(lr), MeanSquaredError(), OnDevice(testDevice())); err != nil {
		t.Fatal(err)
	}
	xa, err := NewArray(x, n, steps, features)
	if err != nil {
		t.Fatal(err)
	}
	ya, err := NewArray(y, n, 2)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.TrainOnBatch(xa, ya); err != nil {
		t.Fatal(err)
	}

	// The loss in float64, with the weights before the step.
	g, xt, ys, vars := float64Outputs(t, m, n, []int{steps, features})
	yv := tile.NewValue(tile.Float64, tile.Shape{n, 2})
	for i, v := range y {
		yv.Data[i] = float64(v)
	}
	diff := g.Sub(ys[0], g.Constant(yv))
	loss := g.Mul(sumAll(g, g.Mul(diff, diff)), g.ScalarLike(ys[0], 1.0/(n*2)))
	ev, err := ref.New(g)
	if err != nil {
		t.Fatal(err)
	}
	xv := tile.NewValue(tile.Float64, xt.Shape())
	for i, v := range x {
		xv.Data[i] = float64(v)
	}
	wv := map[string]*tile.Value{}
	for _, v := range vars {
		name := v.Op().(*tile.VariableOp).Name
		wv[name] = tile.NewValue(tile.Float64, v.Shape())
		for i, b := range before[name] {
			wv[name].Data[i] = float64(b)
		}
		if err := ev.SetVar(name, wv[name]); err != nil {
			t.Fatal(err)
		}
	}
	eval := func(name string, v *tile.Value) float64 {
		if err := ev.SetVar(name, v); err != nil {
			t.Fatal(err)
		}
		out, err := ev.Eval(map[string]*tile.Value{"x": xv}, loss)
		if err != nil {
			t.Fatal(err)
		}
		return out[0].Data[0]
	}
	const eps = 1e-5
	for _, w := range m.weights {
		after := getWeight(t, m, w.Name())
		v := wv[w.Name()]
		for i := range v.Data {
			orig := v.Data[i]
			v.Data[i] = orig + eps
			up := eval(w.Name(), v)
			v.Data[i] = orig - eps
			down := eval(w.Name(), v)
			v.Data[i] = orig
			if err := ev.SetVar(w.Name(), v); err != nil {
				t.Fatal(err)
			}
			fd := (up - down) / (2 * eps)
			step := (float64(before[w.Name()][i]) - float64(after[i])) / lr
			if math.Abs(step-fd) > 1e-4+1e-3*math.Abs(fd) {
				t.Errorf("%s[%d]: the step moved it by %g·lr, the finite-difference gradient is %g", w.Name(), i, step, fd)
			}
		}
	}
}

// countRecurrences counts the recurrence nodes of g.
func countRecurrences(g *tile.Graph) int {
	k := 0
	for _, n := range g.Nodes() {
		if _, ok := n.Op().(*tile.RecurrenceOp); ok {
			k++
		}
	}
	return k
}

// TestReturnStateOneRecurrence checks that the states come from the
// recurrence of the output, not from a second one: a model using an LSTM's
// output, h and c (and a Bidirectional's five outputs) has as many
// recurrences in its prediction and training graphs as the model using the
// output alone.
func TestReturnStateOneRecurrence(t *testing.T) {
	const steps, features = 5, 3
	build := func(state bool, bi bool) *Model {
		in := Input(steps, features)
		var l Layer = LSTM(4, ReturnState(state))
		if bi {
			l = Bidirectional(LSTM(4, ReturnState(state)))
		}
		outs := ApplyAll(l, in)
		x := outs[0]
		if len(outs) > 1 {
			x = Apply(Concatenate(), outs...)
		}
		return must(t)(Functional("m", []*Node{in}, []*Node{Apply(Dense(1), x)}))
	}
	for _, bi := range []bool{false, true} {
		var counts [2][2]int
		for k, state := range []bool{false, true} {
			m := build(state, bi)
			if err := m.Compile(SGD(0.1), MeanSquaredError(), OnDevice(testDevice())); err != nil {
				t.Fatal(err)
			}
			for j, kind := range []progKind{predictProg, trainProg} {
				g, err := m.buildGraph(progKey{kind: kind, batch: 2})
				if err != nil {
					t.Fatal(err)
				}
				counts[k][j] = countRecurrences(g)
			}
		}
		wantForward := 1
		if bi {
			wantForward = 2
		}
		if counts[0] != counts[1] || counts[0][0] != wantForward {
			t.Errorf("bidirectional %v: recurrences (predict, train) %v without return_state, %v with it (want equal, %d in prediction)", bi, counts[0], counts[1], wantForward)
		}
	}
}

// TestReturnStateSaveLoad saves functional models using states (a layer
// called twice, a state used without the output, Bidirectional's states)
// and loads them back: the architecture records which output each node
// takes, and summaries, architectures and predictions agree.
func TestReturnStateSaveLoad(t *testing.T) {
	const steps, features = 4, 3
	in := Input(steps, features)
	shared := LSTM(2, ReturnState(true), ReturnSequences(true), Name("enc"))
	a := ApplyAll(shared, in)
	b := ApplyAll(shared, Apply(Dense(features), in))
	bi := ApplyAll(Bidirectional(GRU(2, ReturnState(true)), Name("bi")), in)
	joined := Apply(Concatenate(), a[2], b[1], b[2], bi[1], bi[2])
	m := must(t)(Functional("states", []*Node{in}, []*Node{Apply(Dense(1), joined), Apply(Dense(1), a[0])}))

	arch, err := m.Architecture()
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		`"return_state":true`,
		`{"layer":"concatenate","inbound":["enc:0:2","enc:1:1","enc:1:2","bi:0:1","bi:0:2"]}`,
		`{"layer":"enc","inbound":["dense"]}`,
	} {
		if !strings.Contains(string(arch), want) {
			t.Errorf("architecture %s lacks %s", arch, want)
		}
	}
	if strings.Count(string(arch), `{"layer":"enc",`) != 2 || strings.Count(string(arch), `{"layer":"bi",`) != 1 {
		t.Errorf("architecture %s: want two calls of enc and one of bi", arch)
	}

	path := filepath.Join(t.TempDir(), "model.safetensors")
	if err := m.Save(path); err != nil {
		t.Fatal(err)
	}
	m2, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if m.Summary() != m2.Summary() {
		t.Errorf("summaries differ:\n%s\n%s", m.Summary(), m2.Summary())
	}
	arch2, _ := m2.Architecture()
	if string(arch) != string(arch2) {
		t.Errorf("architectures differ:\n%s\n%s", arch, arch2)
	}
	x := make([]float32, 2*steps*features)
	for i := range x {
		x[i] = float32(i%5) - 2
	}
	xa, err := NewArray(x, 2, steps, features)
	if err != nil {
		t.Fatal(err)
	}
	for _, mm := range []*Model{m, m2} {
		if err := mm.SetDevice(testDevice()); err != nil {
			t.Fatal(err)
		}
	}
	p1, err := m.PredictOnBatchMulti([]*Array{xa})
	if err != nil {
		t.Fatal(err)
	}
	p2, err := m2.PredictOnBatchMulti([]*Array{xa})
	if err != nil {
		t.Fatal(err)
	}
	for i := range p1 {
		if !slices.Equal(p1[i].Data, p2[i].Data) {
			t.Errorf("output %d: predictions differ: %v vs %v", i, p1[i].Data, p2[i].Data)
		}
	}

	// A reference to an output the call does not have.
	bad := strings.Replace(string(arch), `"enc:1:2"`, `"enc:1:3"`, 1)
	if _, err := LoadArchitecture([]byte(bad)); err == nil || !strings.Contains(err.Error(), `takes "enc:1:3", which is not defined before it`) {
		t.Errorf("a reference to output 3 of an LSTM: error %v", err)
	}
}

// TestReturnStateSummary checks the summary of a model using an LSTM's
// states: the LSTM's row lists its three output shapes, and the layers
// after it name the output they take as lstm[0][j], as Keras prints them.
func TestReturnStateSummary(t *testing.T) {
	in := Input(5, 3)
	outs := ApplyAll(LSTM(4, ReturnState(true)), in)
	m := must(t)(Functional("enc", []*Node{in}, []*Node{Apply(Dense(2), Apply(Concatenate(), outs[1], outs[2]))}))
	want := `Model: "enc"
┏━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━┳━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━┳━━━━━━━━━━━━━━━┳━━━━━━━━━━━━━━━━━━━━━━━━┓
┃ Layer (type)                    ┃ Output Shape                      ┃       Param # ┃ Connected to           ┃
┡━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━╇━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━╇━━━━━━━━━━━━━━━╇━━━━━━━━━━━━━━━━━━━━━━━━┩
│ input_layer (InputLayer)        │ (None, 5, 3)                      │             0 │ -                      │
├─────────────────────────────────┼───────────────────────────────────┼───────────────┼────────────────────────┤
│ lstm (LSTM)                     │ [(None, 4), (None, 4), (None, 4)] │           128 │ input_layer[0][0]      │
├─────────────────────────────────┼───────────────────────────────────┼───────────────┼────────────────────────┤
│ concatenate (Concatenate)       │ (None, 8)                         │             0 │ lstm[0][1], lstm[0][2] │
├─────────────────────────────────┼───────────────────────────────────┼───────────────┼────────────────────────┤
│ dense (Dense)                   │ (None, 2)                         │            18 │ concatenate[0][0]      │
└─────────────────────────────────┴───────────────────────────────────┴───────────────┴────────────────────────┘
 Total params: 146 (584.00 B)
 Trainable params: 146 (584.00 B)
 Non-trainable params: 0 (0.00 B)
`
	if got := m.Summary(); got != want {
		t.Errorf("summary:\n%s\nwant:\n%s", got, want)
	}
}

// TestReturnStateErrors checks the messages of misuses: a layer of several
// outputs in a Sequential model, ApplyAll on nil and on bad inputs (every
// node it returns carries the error), ReturnState on a layer without it.
func TestReturnStateErrors(t *testing.T) {
	for _, c := range []struct {
		layer Layer
		want  string
	}{
		{LSTM(2, ReturnState(true)), `nn: Sequential "m": layer lstm (LSTM) gives 3 outputs (return_state); a Sequential model takes layers of one output: use Functional and ApplyAll`},
		{GRU(2, ReturnState(true), Name("g")), `nn: Sequential "m": layer g (GRU) gives 2 outputs (return_state)`},
		{Bidirectional(SimpleRNN(2, ReturnState(true))), `nn: Sequential "m": layer bidirectional (Bidirectional) gives 3 outputs (return_state)`},
		{Dense(2, ReturnState(true)), `(Dense "dense"): option ReturnState does not apply`},
	} {
		_, err := Sequential("m", Input(4, 3), c.layer, Dense(1))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("error %v, want it to contain %q", err, c.want)
		}
	}

	if outs := ApplyAll(nil, Input(4, 3)); len(outs) != 1 || outs[0].Err() == nil || outs[0].Err().Error() != "nn: ApplyAll: nil layer" {
		t.Errorf("ApplyAll(nil): %d nodes, error %v", len(outs), outs[0].Err())
	}
	outs := ApplyAll(LSTM(2, ReturnState(true)), nil)
	if len(outs) != 3 {
		t.Fatalf("ApplyAll of an LSTM with return_state on nil: %d nodes, want 3", len(outs))
	}
	for i, o := range outs {
		if o.Err() == nil || o.Err().Error() != "nn: ApplyAll: input 0 of LSTM is nil" {
			t.Errorf("node %d: error %v", i, o.Err())
		}
	}
	in := Input(12)
	outs = ApplyAll(GRU(2, ReturnState(true)), in)
	if len(outs) != 2 || outs[1].Err() == nil || !strings.Contains(outs[1].Err().Error(), "needs inputs of rank 3 (batch, time, features)") {
		t.Errorf("ApplyAll of a GRU on (None, 12): %d nodes, error %v", len(outs), outs[len(outs)-1].Err())
	}
	if _, err := Functional("m", []*Node{in}, []*Node{outs[1]}); err == nil || !strings.Contains(err.Error(), "needs inputs of rank 3") {
		t.Errorf("Functional over a failed state: error %v", err)
	}

	// Apply gives the first output, the same node ApplyAll's first would be.
	seqIn := Input(4, 3)
	l := LSTM(2, ReturnState(true))
	first := Apply(l, seqIn)
	if first.Err() != nil || !slices.Equal(first.Shape(), []int{2}) || first.index != 0 || len(first.outs) != 3 {
		t.Errorf("Apply on an LSTM with return_state: shape %v, output %d of %d, error %v", first.Shape(), first.index, len(first.outs), first.Err())
	}
	// A layer of one output gives one node.
	if outs := ApplyAll(Dense(2), Input(3)); len(outs) != 1 || outs[0].Err() != nil || outs[0].outs != nil {
		t.Errorf("ApplyAll(Dense): %d nodes, error %v", len(outs), outs[0].Err())
	}
}

// TestArchitectureBeforeReturnState loads an architecture as this package
// wrote it before layers had several outputs (references "name" and
// "name:k", recurrent configs without return_state): it loads, and the
// same model, built anew, writes the same bytes.
func TestArchitectureBeforeReturnState(t *testing.T) {
	const old = `{"format":"tartan.architecture","version":1,"class_name":"Functional","name":"old","layers":[` +
		`{"class_name":"InputLayer","config":{"name":"input_layer","shape":[5,3]}},` +
		`{"class_name":"Dense","config":{"name":"dense","trainable":true,"units":3,"activation":"","use_bias":true,"kernel_initializer":{"name":"glorot_uniform"},"bias_initializer":{"name":"zeros"}}},` +
		`{"class_name":"LSTM","config":{"name":"lstm","trainable":true,"units":2,"activation":"tanh","recurrent_activation":"sigmoid","use_bias":true,"kernel_initializer":{"name":"glorot_uniform"},"recurrent_initializer":{"name":"orthogonal"},"bias_initializer":{"name":"zeros"},"unit_forget_bias":true,"dropout":0,"recurrent_dropout":0,"return_sequences":true,"go_backwards":false}},` +
		`{"class_name":"GRU","config":{"name":"gru","trainable":true,"units":2,"activation":"tanh","recurrent_activation":"sigmoid","use_bias":true,"kernel_initializer":{"name":"glorot_uniform"},"recurrent_initializer":{"name":"orthogonal"},"bias_initializer":{"name":"zeros"},"reset_after":true,"dropout":0,"recurrent_dropout":0,"return_sequences":false,"go_backwards":false}}],` +
		`"nodes":[{"layer":"dense","inbound":["input_layer"]},{"layer":"dense","inbound":["dense"]},{"layer":"lstm","inbound":["dense:1"]},{"layer":"gru","inbound":["lstm"]}],` +
		`"inputs":["input_layer"],"outputs":["gru","lstm"]}`
	m, err := LoadArchitecture([]byte(old))
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := m.Architecture(); string(got) != old {
		t.Errorf("re-encoded:\n%s\nwant:\n%s", got, old)
	}
	in := Input(5, 3)
	d := Dense(3)
	l := Apply(LSTM(2, ReturnSequences(true)), Apply(d, Apply(d, in)))
	fresh := must(t)(Functional("old", []*Node{in}, []*Node{Apply(GRU(2), l), l}))
	if got, _ := fresh.Architecture(); string(got) != old {
		t.Errorf("the model built anew writes:\n%s\nwant:\n%s", got, old)
	}
}
