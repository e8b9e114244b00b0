// Package ref is Tartan's reference executor: it runs any tile graph on the
// host, one node at a time, plainly and in float64, and is the oracle every
// backend is checked against. It is written to be obviously correct, not fast.
//
// Values of Float32 (and narrower) dtypes are rounded to float32 after every
// node, so results match what a float32 backend computes up to the order of
// accumulation; contractions accumulate in float64.
//
// The entry point is Run, or a Machine that keeps variable state between runs.
package ref

import (
	"fmt"
	"math"
	"sort"

	"github.com/tartanml/tartan/tile"
)

// Machine runs a graph repeatedly, keeping its variables between runs.
type Machine struct {
	g    *tile.Graph
	vars map[string]*tile.Value
}

// New returns a Machine for g with every variable set to zero.
func New(g *tile.Graph) (*Machine, error) {
	if g == nil {
		return nil, fmt.Errorf("ref: nil graph")
	}
	if err := g.Err(); err != nil {
		return nil, fmt.Errorf("ref: graph %q has a building error: %w", g.Name(), err)
	}
	m := &Machine{g: g, vars: map[string]*tile.Value{}}
	for _, v := range g.Variables() {
		m.vars[v.Op().(*tile.VariableOp).Name] = tile.NewValue(v.DType(), v.Shape())
	}
	return m, nil
}

// SetVar sets the named variable to a copy of val, which must match its dtype
// and shape.
func (m *Machine) SetVar(name string, val *tile.Value) error {
	t := m.g.Leaf(name)
	if t == nil || t.Op().Kind() != "variable" {
		return fmt.Errorf("ref: graph %q has no variable %q", m.g.Name(), name)
	}
	if err := checkValue("variable "+name, t, val); err != nil {
		return err
	}
	c := val.Clone()
	for i, x := range c.Data {
		c.Data[i] = tile.RoundTo(c.DType, x)
	}
	m.vars[name] = c
	return nil
}

// Var returns a copy of the named variable's current value.
func (m *Machine) Var(name string) (*tile.Value, error) {
	v, ok := m.vars[name]
	if !ok {
		return nil, fmt.Errorf("ref: graph %q has no variable %q", m.g.Name(), name)
	}
	return v.Clone(), nil
}

// Run evaluates the graph's outputs and updates with the given inputs, then
// applies the updates to the variables. Every input must be fed.
func (m *Machine) Run(feeds map[string]*tile.Value) (map[string]*tile.Value, error) {
	vals, err := m.eval(feeds, nil)
	if err != nil {
		return nil, err
	}
	out := map[string]*tile.Value{}
	for _, o := range m.g.Outputs() {
		out[o.Name] = vals[o.Tensor.ID()].Clone()
	}
	for _, u := range m.g.Updates() {
		m.vars[u.Variable.Op().(*tile.VariableOp).Name] = vals[u.Value.ID()].Clone()
	}
	return out, nil
}

// Eval evaluates the given tensors of the graph with the given inputs, without
// applying updates.
func (m *Machine) Eval(feeds map[string]*tile.Value, ts ...*tile.Tensor) ([]*tile.Value, error) {
	for i, t := range ts {
		if t == nil || !t.Valid() || t.Graph() != m.g {
			return nil, fmt.Errorf("ref: tensor %d to evaluate is not a valid node of graph %q", i, m.g.Name())
		}
	}
	vals, err := m.eval(feeds, ts)
	if err != nil {
		return nil, err
	}
	out := make([]*tile.Value, len(ts))
	for i, t := range ts {
		out[i] = vals[t.ID()].Clone()
	}
	return out, nil
}

// Run evaluates g's outputs once with the given inputs and variable values
// (variables not given are zero) and returns the outputs.
func Run(g *tile.Graph, feeds, vars map[string]*tile.Value) (map[string]*tile.Value, error) {
	m, err := New(g)
	if err != nil {
		return nil, err
	}
	for _, name := range sortedNames(vars) {
		if err := m.SetVar(name, vars[name]); err != nil {
			return nil, err
		}
	}
	return m.Run(feeds)
}

func sortedNames(m map[string]*tile.Value) []string {
	names := make([]string, 0, len(m))
	for n := range m {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

func checkValue(what string, t *tile.Tensor, v *tile.Value) error {
	if v == nil {
		return fmt.Errorf("ref: %s: nil value", what)
	}
	if v.DType != t.DType() || !v.Shape.Equal(t.Shape()) || len(v.Data) != t.Size() {
		return fmt.Errorf("ref: %s is %s%v but the value given is %s%v with %d elements",
			what, t.DType(), t.Shape(), v.DType, v.Shape, len(v.Data))
	}
	return nil
}

// eval computes every node needed by targets (by the outputs and updates when
// targets is nil) and returns the values indexed by node ID.
func (m *Machine) eval(feeds map[string]*tile.Value, targets []*tile.Tensor) ([]*tile.Value, error) {
	nodes := m.g.Nodes()
	need := make([]bool, len(nodes))
	var mark func(t *tile.Tensor)
	mark = func(t *tile.Tensor) {
		if need[t.ID()] {
			return
		}
		need[t.ID()] = true
		for _, a := range t.Args() {
			mark(a)
		}
		if r, ok := t.Op().(*tile.RecurrenceOp); ok && r.Next() != nil {
			mark(r.Next())
		}
	}
	if targets == nil {
		for _, o := range m.g.Outputs() {
			mark(o.Tensor)
		}
		for _, u := range m.g.Updates() {
			mark(u.Value)
		}
	}
	for _, t := range targets {
		mark(t)
	}
	for _, in := range m.g.Inputs() {
		name := in.Op().(*tile.InputOp).Name
		v, ok := feeds[name]
		if !ok {
			if need[in.ID()] {
				return nil, fmt.Errorf("ref: graph %q: input %q is not fed", m.g.Name(), name)
			}
			continue
		}
		if err := checkValue("input "+name, in, v); err != nil {
			return nil, err
		}
	}
	for name := range feeds {
		if t := m.g.Leaf(name); t == nil || t.Op().Kind() != "input" {
			return nil, fmt.Errorf("ref: graph %q has no input %q", m.g.Name(), name)
		}
	}
	vals := make([]*tile.Value, len(nodes))
	if err := m.evalRange(vals, need, feeds, 0, len(nodes)); err != nil {
		return nil, err
	}
	return vals, nil
}

// evalRange evaluates the needed nodes lo..hi-1 in order. A recurrence's
// nodes, from its state to its next states, are evaluated Steps times, each
// time with the state sequence rebuilt from the next states of the pass
// before (zeros at first): after pass k the first k steps of every node
// between them are final, since each step reads only the steps before it.
func (m *Machine) evalRange(vals []*tile.Value, need []bool, feeds map[string]*tile.Value, lo, hi int) error {
	nodes := m.g.Nodes()
	for i := lo; i < hi; i++ {
		t := nodes[i]
		if !need[i] {
			continue
		}
		if r, ok := t.Op().(*tile.RecurrenceOp); ok {
			if r.Next() == nil {
				return fmt.Errorf("ref: node %v: the recurrence is never closed", t)
			}
			j := r.Next().ID()
			if j < i {
				// A shift of values computed before: nothing to repeat.
				vals[i] = shiftState(t, r, vals[t.Args()[0].ID()], vals[j])
				continue
			}
			if j >= hi {
				return fmt.Errorf("ref: node %v: its steps overlap another recurrence's without nesting in it", t)
			}
			init := vals[t.Args()[0].ID()]
			for pass := 0; pass < r.Steps; pass++ {
				vals[i] = shiftState(t, r, init, vals[j])
				if err := m.evalRange(vals, need, feeds, i+1, j+1); err != nil {
					return err
				}
			}
			i = j
			continue
		}
		args := make([]*tile.Value, len(t.Args()))
		for j, a := range t.Args() {
			args[j] = vals[a.ID()]
		}
		v, err := m.node(t, args, feeds)
		if err != nil {
			return fmt.Errorf("ref: node %v: %w", t, err)
		}
		for k, x := range v.Data {
			v.Data[k] = tile.RoundTo(t.DType(), x)
		}
		vals[i] = v
	}
	return nil
}

// shiftState builds a recurrence's state sequence from its initial state and
// its next states (nil: not computed yet, taken as zeros).
func shiftState(t *tile.Tensor, r *tile.RecurrenceOp, init, next *tile.Value) *tile.Value {
	out := tile.NewValue(t.DType(), t.Shape())
	step := len(init.Data)
	first, from := 0, 0 // the step init fills; the shift of next
	if r.Reverse {
		first = r.Steps - 1
	}
	copy(out.Data[first*step:], init.Data)
	if next != nil {
		for s := 0; s < r.Steps; s++ {
			if s == first {
				continue
			}
			from = s - 1
			if r.Reverse {
				from = s + 1
			}
			copy(out.Data[s*step:(s+1)*step], next.Data[from*step:(from+1)*step])
		}
	}
	return out
}

func (m *Machine) node(t *tile.Tensor, args []*tile.Value, feeds map[string]*tile.Value) (*tile.Value, error) {
	out := tile.NewValue(t.DType(), t.Shape())
	switch op := t.Op().(type) {
	case *tile.InputOp:
		copy(out.Data, feeds[op.Name].Data)
	case *tile.VariableOp:
		copy(out.Data, m.vars[op.Name].Data)
	case *tile.ConstantOp:
		copy(out.Data, op.Value.Data)
	case *tile.ElementwiseOp:
		elementwise(op.Fn, args, out)
	case *tile.CastOp:
		copy(out.Data, args[0].Data)
	case *tile.ContractionOp:
		return out, contract(op, args, out)
	case *tile.ReshapeOp, *tile.StopGradientOp:
		copy(out.Data, args[0].Data)
	case *tile.TransposeOp:
		forEach(out.Shape, func(pos int, idx []int) {
			src := make([]int, len(idx))
			for i, p := range op.Perm {
				src[p] = idx[i]
			}
			out.Data[pos] = at(args[0], src)
		})
	case *tile.SliceOp:
		forEach(out.Shape, func(pos int, idx []int) {
			src := make([]int, len(idx))
			for d := range idx {
				src[d] = op.Start[d] + idx[d]*op.Step[d]
			}
			out.Data[pos] = at(args[0], src)
		})
	case *tile.ConcatOp:
		forEach(out.Shape, func(pos int, idx []int) {
			src := append([]int(nil), idx...)
			for _, a := range args {
				if src[op.Axis] < a.Shape[op.Axis] {
					out.Data[pos] = at(a, src)
					return
				}
				src[op.Axis] -= a.Shape[op.Axis]
			}
		})
	case *tile.PadOp:
		forEach(out.Shape, func(pos int, idx []int) {
			src := make([]int, len(idx))
			for d := range idx {
				src[d] = idx[d] - op.Lo[d]
				if src[d] < 0 || src[d] >= args[0].Shape[d] {
					out.Data[pos] = op.Value
					return
				}
			}
			out.Data[pos] = at(args[0], src)
		})
	case *tile.BroadcastOp:
		in := args[0]
		off := len(out.Shape) - len(in.Shape)
		forEach(out.Shape, func(pos int, idx []int) {
			src := make([]int, len(in.Shape))
			for d := range src {
				if in.Shape[d] != 1 {
					src[d] = idx[off+d]
				}
			}
			out.Data[pos] = at(in, src)
		})
	case *tile.GatherOp:
		data, ind := args[0], args[1]
		r := len(ind.Shape)
		forEach(out.Shape, func(pos int, idx []int) {
			k := int(at(ind, idx[op.Axis:op.Axis+r]))
			if k < 0 || k >= data.Shape[op.Axis] {
				return
			}
			src := append(append(append([]int(nil), idx[:op.Axis]...), k), idx[op.Axis+r:]...)
			out.Data[pos] = at(data, src)
		})
	case *tile.ScatterAddOp:
		upd, ind := args[0], args[1]
		r := len(ind.Shape)
		forEach(upd.Shape, func(pos int, idx []int) {
			k := int(at(ind, idx[op.Axis:op.Axis+r]))
			if k < 0 || k >= out.Shape[op.Axis] {
				return
			}
			dst := append(append(append([]int(nil), idx[:op.Axis]...), k), idx[op.Axis+r:]...)
			out.Data[offset(out.Shape, dst)] += upd.Data[pos]
		})
	case *tile.IotaOp:
		forEach(out.Shape, func(pos int, idx []int) { out.Data[pos] = float64(idx[op.Axis]) })
	case *tile.RandomOp:
		seed := uint64(int64(args[0].Data[0]))
		for p := range out.Data {
			out.Data[p] = tile.UniformAt(seed, op.Stream, p)
		}
	default:
		return nil, fmt.Errorf("unknown op %T", op)
	}
	return out, nil
}

// forEach calls f with every row-major position of shape and its coordinates.
// The coordinate slice is reused between calls.
func forEach(shape tile.Shape, f func(pos int, idx []int)) {
	n := shape.Size()
	idx := make([]int, len(shape))
	for pos := range n {
		f(pos, idx)
		for d := len(shape) - 1; d >= 0; d-- {
			idx[d]++
			if idx[d] < shape[d] {
				break
			}
			idx[d] = 0
		}
	}
}

func offset(shape tile.Shape, idx []int) int {
	off := 0
	for d, i := range idx {
		off = off*shape[d] + i
	}
	return off
}

func at(v *tile.Value, idx []int) float64 { return v.Data[offset(v.Shape, idx)] }

func elementwise(f tile.Fn, args []*tile.Value, out *tile.Value) {
	isInt := args[len(args)-1].DType.IsInt()
	for i := range out.Data {
		var a, b float64
		a = args[0].Data[i]
		if len(args) > 1 {
			b = args[1].Data[i]
		}
		var r float64
		switch f {
		case tile.Neg:
			r = -a
		case tile.Abs:
			r = math.Abs(a)
		case tile.Sign:
			switch {
			case a > 0:
				r = 1
			case a < 0:
				r = -1
			case math.IsNaN(a):
				r = a
			}
		case tile.Exp:
			r = math.Exp(a)
		case tile.Log:
			r = math.Log(a)
		case tile.Log1p:
			r = math.Log1p(a)
		case tile.Sqrt:
			r = math.Sqrt(a)
		case tile.Rsqrt:
			r = 1 / math.Sqrt(a)
		case tile.Tanh:
			r = math.Tanh(a)
		case tile.Sigmoid:
			r = 1 / (1 + math.Exp(-a))
		case tile.Erf:
			r = math.Erf(a)
		case tile.Floor:
			r = math.Floor(a)
		case tile.Ceil:
			r = math.Ceil(a)
		case tile.Recip:
			r = 1 / a
		case tile.Not:
			r = b2f(a == 0)
		case tile.Add:
			r = a + b
		case tile.Sub:
			r = a - b
		case tile.Mul:
			r = a * b
		case tile.Div:
			switch {
			case !isInt:
				r = a / b
			case b == 0:
				r = 0
			default:
				r = math.Trunc(a / b)
			}
		case tile.Pow:
			r = math.Pow(a, b)
		case tile.Maximum:
			r = nanMax(a, b)
		case tile.Minimum:
			r = nanMin(a, b)
		case tile.Eq:
			r = b2f(a == b)
		case tile.Ne:
			r = b2f(a != b)
		case tile.Lt:
			r = b2f(a < b)
		case tile.Le:
			r = b2f(a <= b)
		case tile.Gt:
			r = b2f(a > b)
		case tile.Ge:
			r = b2f(a >= b)
		case tile.And:
			r = b2f(a != 0 && b != 0)
		case tile.Or:
			r = b2f(a != 0 || b != 0)
		case tile.Select:
			if a != 0 {
				r = b
			} else {
				r = args[2].Data[i]
			}
		}
		out.Data[i] = r
	}
}

// nanMax and nanMin propagate NaN, as IEEE maximum and minimum do.
func nanMax(a, b float64) float64 {
	if math.IsNaN(a) || math.IsNaN(b) {
		return math.NaN()
	}
	return math.Max(a, b)
}

func nanMin(a, b float64) float64 {
	if math.IsNaN(a) || math.IsNaN(b) {
		return math.NaN()
	}
	return math.Min(a, b)
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
