package compile

import (
	"fmt"
	"math"
	"math/rand/v2"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/tartanml/tartan/kir"
	refexec "github.com/tartanml/tartan/ref"
	"github.com/tartanml/tartan/tile"
)

// testTarget is a CPU-like target used by most tests.
var testTarget = Target{Backend: "cpu", Workers: 4, ComputeUnits: 4, VectorWidth: 8}

// randValue returns a value of the given dtype and shape with deterministic
// pseudo-random contents: floats in [-2, 2), integers in [lo, hi).
func randValue(rng *rand.Rand, dt tile.DType, shape tile.Shape, lo, hi int) *tile.Value {
	v := tile.NewValue(dt, shape)
	for i := range v.Data {
		switch {
		case dt.IsFloat():
			v.Data[i] = tile.RoundTo(dt, rng.Float64()*4-2)
		case dt == tile.Bool:
			v.Data[i] = float64(rng.IntN(2))
		default:
			v.Data[i] = float64(lo + rng.IntN(hi-lo))
		}
	}
	return v
}

// feedsFor draws a value for every input and variable of g. Integer leaves
// get values in [0, intHi).
func feedsFor(g *tile.Graph, seed uint64, intHi int) (feeds, vars map[string]*tile.Value) {
	rng := rand.New(rand.NewPCG(seed, 7))
	feeds, vars = map[string]*tile.Value{}, map[string]*tile.Value{}
	for _, in := range g.Inputs() {
		feeds[in.Op().(*tile.InputOp).Name] = randValue(rng, in.DType(), in.Shape(), 0, intHi)
	}
	for _, v := range g.Variables() {
		vars[v.Op().(*tile.VariableOp).Name] = randValue(rng, v.DType(), v.Shape(), 0, intHi)
	}
	return feeds, vars
}

// near compares with a relative tolerance; NaNs match NaNs.
func near(got, want []float64, tol float64) (int, bool) {
	if len(got) != len(want) {
		return -1, false
	}
	for i := range got {
		a, b := got[i], want[i]
		if math.IsNaN(a) && math.IsNaN(b) || a == b {
			continue
		}
		if math.Abs(a-b) > tol*(1+math.Abs(b)) || math.IsNaN(a) != math.IsNaN(b) {
			return i, false
		}
	}
	return 0, true
}

// runner holds a compiled program's buffers across runs, as a backend would.
type progRunner struct {
	p    *kir.Program
	bufs [][]float64
}

func newProgRunner(p *kir.Program, vars map[string]*tile.Value) *progRunner {
	r := &progRunner{p: p, bufs: make([][]float64, len(p.Buffers))}
	for _, b := range p.Variables {
		if v, ok := vars[b.Name]; ok {
			r.bufs[b.Buffer] = append([]float64(nil), v.Data...)
		}
	}
	return r
}

func (r *progRunner) run(feeds map[string]*tile.Value) (map[string][]float64, error) {
	for _, b := range r.p.Inputs {
		if v, ok := feeds[b.Name]; ok {
			r.bufs[b.Buffer] = append(make([]float64, 0, len(v.Data)), v.Data...)
		}
	}
	if err := kir.InterpretStrict(r.p, r.bufs); err != nil {
		return nil, err
	}
	out := map[string][]float64{}
	for _, b := range r.p.Outputs {
		out[b.Name] = append([]float64(nil), r.bufs[b.Buffer]...)
	}
	for _, b := range r.p.Variables {
		out["var:"+b.Name] = append([]float64(nil), r.bufs[b.Buffer]...)
	}
	return out, nil
}

// checkAgainstRef compiles g, runs it runs times with the interpreter and
// with the reference executor (variables carried over between runs), and
// compares every output and variable. It returns the program.
func checkAgainstRef(t *testing.T, g *tile.Graph, tgt Target, seed uint64, intHi, runs int, tol float64) *kir.Program {
	t.Helper()
	if err := g.Err(); err != nil {
		t.Fatalf("building: %v", err)
	}
	p, err := Compile(g, tgt)
	if err != nil {
		t.Fatalf("compile: %v", err)
	}
	checkSlotPlan(t, p)
	feeds, vars := feedsFor(g, seed, intHi)
	m, err := refexec.New(g)
	if err != nil {
		t.Fatal(err)
	}
	for name, v := range vars {
		if err := m.SetVar(name, v); err != nil {
			t.Fatal(err)
		}
	}
	r := newProgRunner(p, vars)
	for run := range runs {
		got, err := r.run(feeds)
		if err != nil {
			t.Fatalf("run %d: interpret: %v\n%s", run, err, p)
		}
		want, err := m.Run(feeds)
		if err != nil {
			t.Fatalf("run %d: ref: %v", run, err)
		}
		for _, v := range g.Variables() {
			name := v.Op().(*tile.VariableOp).Name
			val, err := m.Var(name)
			if err != nil {
				t.Fatal(err)
			}
			want["var:"+name] = val
		}
		names := make([]string, 0, len(want))
		for n := range want {
			names = append(names, n)
		}
		sort.Strings(names)
		for _, n := range names {
			i, ok := near(got[n], want[n].Data, tol)
			if !ok {
				detail := fmt.Sprintf("lengths %d, %d", len(got[n]), len(want[n].Data))
				if i >= 0 {
					detail = fmt.Sprintf("element %d: got %v, want %v", i, got[n][i], want[n].Data[i])
				}
				t.Fatalf("run %d: %s differs: %s\n%s", run, n, detail, p)
			}
		}
	}
	return p
}

// aff parses an affine expression such as "2*y + i - 1".
func aff(s string) tile.Affine {
	var out tile.Affine
	sign := 1
	term := ""
	flush := func() {
		term = strings.TrimSpace(term)
		if term == "" {
			return
		}
		coef, name := 1, term
		if k := strings.Index(term, "*"); k >= 0 {
			c, err := strconv.Atoi(strings.TrimSpace(term[:k]))
			if err != nil {
				panic("bad term " + term)
			}
			coef, name = c, strings.TrimSpace(term[k+1:])
		}
		if c, err := strconv.Atoi(name); err == nil {
			out = out.AddConst(sign * coef * c)
		} else {
			out = out.Plus(tile.Ix(name).Times(sign * coef))
		}
		term = ""
	}
	for _, r := range s {
		switch r {
		case '+', '-':
			flush()
			sign = 1
			if r == '-' {
				sign = -1
			}
		default:
			term += string(r)
		}
	}
	flush()
	return out
}

// acc parses a comma-separated access list such as "n, 2*y + i, c".
func acc(s string) []tile.Affine {
	if strings.TrimSpace(s) == "" {
		return nil
	}
	var out []tile.Affine
	for _, p := range strings.Split(s, ",") {
		out = append(out, aff(p))
	}
	return out
}

// opd pairs a tensor with its access list.
func opd(t *tile.Tensor, access string) tile.Operand {
	return tile.Operand{Tensor: t, Index: acc(access)}
}

// cons parses constraints written "i < 2".
func cons(cs ...string) []tile.Constraint {
	var out []tile.Constraint
	for _, c := range cs {
		parts := strings.Split(c, "<")
		b, err := strconv.Atoi(strings.TrimSpace(parts[1]))
		if err != nil {
			panic("bad constraint " + c)
		}
		out = append(out, tile.Constraint{Expr: aff(parts[0]), Bound: b})
	}
	return out
}

// contract builds a contraction from textual accesses.
func contract(g *tile.Graph, agg tile.Agg, comb tile.Comb, shape tile.Shape, out string, ops []tile.Operand, cs ...string) *tile.Tensor {
	return g.Contract(agg, comb, shape, acc(out), ops, cons(cs...)...)
}
