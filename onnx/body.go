package onnx

import (
	"fmt"

	"github.com/tartanml/tartan/tile"
)

// A loop's or scan's body converted once, for every step at the same time.
//
// The body is first converted on a graph of its own (a bodyScope), where
// the values that change from step to step (the loop-carried state, the
// iteration number, the scan inputs' slices) are inputs of that graph and
// every tensor of an enclosing graph that the body reads becomes an input
// too, standing for the outer tensor. batchBody then copies what the body's
// outputs need into the enclosing graph with a leading axis of steps on
// every node that depends on a per-step input (the others are copied as
// they are, computed once): the state inputs become recurrence states
// (tile.Graph.Recurrence), so the body's nodes appear once whatever the
// number of steps, and compile runs them as a loop.

// bodyScope is a graph a body is converted on, and what its inputs stand
// for.
type bodyScope struct {
	g      *tile.Graph
	parent *bodyScope // nil: the body is read by the converter's own graph
	root   *tile.Graph
	outer  map[*tile.Tensor]*tile.Tensor // tensor of an enclosing graph → input of g
	source map[*tile.Tensor]*tile.Tensor // input of g → tensor of the enclosing graph
	consts map[*value]*tile.Tensor
}

// newScope returns a scope for converting a body read by the graph being
// built now.
func (cv *converter) newScope(name string) *bodyScope {
	root := cv.g
	if cv.body != nil {
		root = cv.body.root
	}
	return &bodyScope{g: tile.NewGraph(name), parent: cv.body, root: root,
		outer: map[*tile.Tensor]*tile.Tensor{}, source: map[*tile.Tensor]*tile.Tensor{}, consts: map[*value]*tile.Tensor{}}
}

// within runs f with s's graph as the graph being built.
func (cv *converter) within(s *bodyScope, f func() error) error {
	g, body := cv.g, cv.body
	cv.g, cv.body = s.g, s
	defer func() { cv.g, cv.body = g, body }()
	return f()
}

// encloses reports whether tensors of g may be read in s (g is s's graph or
// an enclosing one).
func (s *bodyScope) encloses(g *tile.Graph) bool {
	for p := s; p != nil; p = p.parent {
		if p.g == g {
			return true
		}
	}
	return g == s.root
}

// local returns t as a tensor of s's graph: t itself, or the input standing
// for it.
func (s *bodyScope) local(t *tile.Tensor) *tile.Tensor {
	if t.Graph() == s.g {
		return t
	}
	if in, ok := s.outer[t]; ok {
		return in
	}
	src := t
	if s.parent != nil {
		src = s.parent.local(t)
	}
	in := s.g.Input(fmt.Sprintf("outer%d", len(s.outer)), t.DType(), t.Shape())
	s.outer[t] = in
	s.source[in] = src
	return in
}

// constant returns a known value as a constant of s's graph, one per value.
func (s *bodyScope) constant(v *value) *tile.Tensor {
	if t, ok := s.consts[v]; ok {
		return t
	}
	t := s.g.Constant(v.c)
	s.consts[v] = t
	return t
}

// param returns a per-step input of s's graph as a value: what a body's
// input is bound to when the body is converted for every step at once.
func (s *bodyScope) param(name string, like *value) *value {
	t := s.g.Input(name, like.dt, like.sh)
	return &value{t: t, dt: like.dt, sh: like.sh, lt: like.lt}
}

// knownCopy returns v without its tensor when v is known entirely (a known
// tensor, a sequence of known tensors, an empty optional), for use after the
// graph it was converted on is gone.
func knownCopy(v *value) (*value, bool) {
	switch {
	case v == nil:
		return nil, false
	case v.none:
		return &value{none: true, isSeq: v.isSeq, dt: v.dt, lt: v.lt}, true
	case v.isSeq:
		w := &value{isSeq: true, dt: v.dt, lt: v.lt}
		for _, e := range v.seq {
			k, ok := knownCopy(e)
			if !ok {
				return nil, false
			}
			w.seq = append(w.seq, k)
		}
		return w, true
	case v.c == nil:
		return nil, false
	}
	return &value{c: v.c, dt: v.dt, sh: v.sh, lt: v.lt}, true
}

// batcher copies a body's graph into the enclosing graph g, every node that
// depends on a per-step input with a leading axis of steps.
type batcher struct {
	s       *bodyScope
	g       *tile.Graph
	steps   int
	m       map[int]*tile.Tensor // body node → its copy
	batched map[int]bool         // copies that carry the steps axis
	// onCycle marks the body nodes that depend on the state and lead to the
	// next state: compile runs them one step at a time, so they may not
	// read a tensor of the cycle at a position computed from data.
	onCycle []bool
	closes  [][2]*tile.Tensor // recurrences of the body copied, with their next states in the body
	err     error
}

// batchBody copies into the enclosing graph g what the body outputs outs
// (tensors of s.g) need. bind gives the copy of each per-step input (with
// the steps axis when batched says so); the inputs standing for outer
// tensors are those tensors. state lists the per-step inputs that are
// recurrence states, and next the outputs they lead to, for onCycle. It
// returns each output's copy and whether it has the steps axis.
func batchBody(s *bodyScope, g *tile.Graph, steps int, bind map[*tile.Tensor]*tile.Tensor, batched map[*tile.Tensor]bool,
	state, next, outs []*tile.Tensor) ([]*tile.Tensor, []bool, error) {
	b := &batcher{s: s, g: g, steps: steps, m: map[int]*tile.Tensor{}, batched: map[int]bool{}}
	nodes := s.g.Nodes()
	need := needed(s, outs)
	// onCycle: reachable from a state and reaching a next state.
	from := make([]bool, len(nodes))
	for _, t := range state {
		from[t.ID()] = true
	}
	for _, n := range nodes {
		for _, a := range n.Args() {
			from[n.ID()] = from[n.ID()] || from[a.ID()]
		}
	}
	to := make([]bool, len(nodes))
	for _, t := range next {
		to[t.ID()] = true
	}
	for i := len(nodes) - 1; i >= 0; i-- {
		if to[i] {
			for _, a := range nodes[i].Args() {
				to[a.ID()] = true
			}
		}
	}
	b.onCycle = make([]bool, len(nodes))
	for i := range nodes {
		b.onCycle[i] = from[i] && to[i]
	}
	if err := checkBody(s, batched, outs); err != nil {
		return nil, nil, err
	}
	for _, n := range nodes {
		if !need[n.ID()] {
			continue
		}
		var t *tile.Tensor
		isB := false
		if x, ok := bind[n]; ok {
			t, isB = x, batched[n]
		} else if src, ok := s.source[n]; ok {
			t = src
		} else {
			t, isB = b.node(n)
		}
		if b.err != nil {
			return nil, nil, b.err
		}
		if err := g.Err(); err != nil {
			return nil, nil, err
		}
		b.m[n.ID()], b.batched[n.ID()] = t, isB
	}
	for _, c := range b.closes {
		nx := b.m[c[1].ID()]
		if b.batched[c[1].ID()] {
			return nil, nil, fmt.Errorf("a recurrence of the body (%v, an RNN over a sequence, say) reads values that change from step to step", c[1])
		}
		g.CloseRecurrence(c[0], nx)
	}
	res := make([]*tile.Tensor, len(outs))
	isB := make([]bool, len(outs))
	for i, o := range outs {
		res[i], isB[i] = b.m[o.ID()], b.batched[o.ID()]
	}
	return res, isB, g.Err()
}

// needed marks the nodes of s's graph that outs need.
func needed(s *bodyScope, outs []*tile.Tensor) []bool {
	need := make([]bool, len(s.g.Nodes()))
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
	for _, o := range outs {
		mark(o)
	}
	return need
}

// checkBody finds, before anything is built, which nodes of the body that
// outs need get the steps axis (those that depend on the per-step inputs
// batched marks) and whether each can have it.
func checkBody(s *bodyScope, batched map[*tile.Tensor]bool, outs []*tile.Tensor) error {
	nodes := s.g.Nodes()
	need := needed(s, outs)
	flag := make([]bool, len(nodes))
	var closes [][2]*tile.Tensor
	for _, n := range nodes {
		if !need[n.ID()] {
			continue
		}
		if _, ok := n.Op().(*tile.InputOp); ok {
			if _, outer := s.source[n]; !outer {
				flag[n.ID()] = batched[n]
			}
			continue
		}
		anyB := false
		for _, a := range n.Args() {
			anyB = anyB || flag[a.ID()]
		}
		switch op := n.Op().(type) {
		case *tile.VariableOp:
			return fmt.Errorf("internal: body variable %v", n)
		case *tile.RecurrenceOp:
			switch {
			case op.Steps == 1:
				flag[n.ID()] = anyB
			case anyB:
				return fmt.Errorf("a recurrence of the body (%v, an RNN over a sequence, say) starts from a value that changes from step to step", n)
			default:
				closes = append(closes, [2]*tile.Tensor{n, op.Next()})
			}
		case *tile.RandomOp:
			if anyB {
				return fmt.Errorf("random numbers are drawn from a seed that changes from step to step (%v)", n)
			}
		default:
			flag[n.ID()] = anyB
		}
	}
	for _, c := range closes {
		if flag[c[1].ID()] {
			return fmt.Errorf("a recurrence of the body (%v, an RNN over a sequence, say) reads values that change from step to step", c[0])
		}
	}
	return nil
}

func (b *batcher) fail(format string, args ...any) (*tile.Tensor, bool) {
	if b.err == nil {
		b.err = fmt.Errorf(format, args...)
	}
	return nil, false
}

// withSteps returns shape with the steps axis in front.
func (b *batcher) withSteps(s tile.Shape) tile.Shape { return append(tile.Shape{b.steps}, s...) }

// lift returns the copy of body node x with the steps axis, repeating it
// when it has none.
func (b *batcher) lift(x *tile.Tensor) *tile.Tensor {
	t := b.m[x.ID()]
	if b.batched[x.ID()] {
		return t
	}
	return b.g.BroadcastTo(t, b.withSteps(x.Shape()))
}

// node copies body node n, whose arguments are copied.
func (b *batcher) node(n *tile.Tensor) (*tile.Tensor, bool) {
	g := b.g
	ns := n.Args()
	args := make([]*tile.Tensor, len(ns))
	flags := make([]bool, len(ns))
	anyB := false
	for i, a := range ns {
		args[i], flags[i] = b.m[a.ID()], b.batched[a.ID()]
		anyB = anyB || flags[i]
	}
	switch op := n.Op().(type) {
	case *tile.InputOp, *tile.VariableOp:
		return b.fail("internal: body input %v is not bound", n)
	case *tile.ConstantOp:
		return g.Constant(op.Value), false
	case *tile.RecurrenceOp:
		if op.Steps == 1 {
			// One step: the state sequence is the initial state.
			if flags[0] {
				return g.Reshape(args[0], b.withSteps(n.Shape())), true
			}
			return g.Reshape(args[0], n.Shape()), false
		}
		if flags[0] {
			return b.fail("a recurrence of the body (%v, an RNN over a sequence, say) starts from a value that changes from step to step", n)
		}
		s := g.Recurrence(args[0], op.Steps, op.Reverse)
		b.closes = append(b.closes, [2]*tile.Tensor{s, op.Next()})
		return s, false
	}
	if !anyB {
		return b.same(n, args), false
	}
	switch op := n.Op().(type) {
	case *tile.ElementwiseOp:
		// The builder broadcast every operand to n's shape, which an
		// operand without the steps axis still has.
		return g.Elementwise(op.Fn, args...), true
	case *tile.CastOp:
		return g.Cast(args[0], n.DType()), true
	case *tile.StopGradientOp:
		return g.StopGradient(args[0]), true
	case *tile.ContractionOp:
		step := b.freshIndex(op)
		out := append([]tile.Affine{tile.Ix(step)}, op.Out...)
		var operands []tile.Operand
		for i, a := range args {
			ix := op.Access[i]
			if flags[i] {
				ix = append([]tile.Affine{tile.Ix(step)}, ix...)
			}
			operands = append(operands, tile.Operand{Tensor: a, Index: ix})
		}
		return g.Contract(op.Agg, op.Comb, b.withSteps(n.Shape()), out, operands, op.Constraints...), true
	case *tile.ReshapeOp:
		return g.Reshape(args[0], b.withSteps(n.Shape())), true
	case *tile.TransposeOp:
		perm := []int{0}
		for _, p := range op.Perm {
			perm = append(perm, p+1)
		}
		return g.Transpose(args[0], perm), true
	case *tile.SliceOp:
		return g.Slice(args[0], append([]int{0}, op.Start...), append([]int{b.steps}, op.Stop...), append([]int{1}, op.Step...)), true
	case *tile.PadOp:
		return g.Pad(args[0], append([]int{0}, op.Lo...), append([]int{0}, op.Hi...), op.Value), true
	case *tile.ConcatOp:
		xs := make([]*tile.Tensor, len(ns))
		for i, a := range ns {
			xs[i] = b.lift(a)
		}
		return g.Concat(op.Axis+1, xs...), true
	case *tile.BroadcastOp:
		x := ns[0]
		s := x.Shape()
		lead := make(tile.Shape, n.Rank()-len(s))
		for i := range lead {
			lead[i] = 1
		}
		t := g.Reshape(args[0], b.withSteps(append(lead, s...)))
		return g.BroadcastTo(t, b.withSteps(n.Shape())), true
	case *tile.GatherOp:
		return b.gather(n, op.Axis, args, flags)
	case *tile.ScatterAddOp:
		return b.scatter(n, op.Axis, args, flags)
	case *tile.RandomOp:
		return b.fail("random numbers are drawn from a seed that changes from step to step (%v)", n)
	}
	return b.fail("internal: %s nodes cannot be copied for every step", n.Op().Kind())
}

// same copies n as it is, on arguments args.
func (b *batcher) same(n *tile.Tensor, args []*tile.Tensor) *tile.Tensor {
	g := b.g
	switch op := n.Op().(type) {
	case *tile.ElementwiseOp:
		return g.Elementwise(op.Fn, args...)
	case *tile.CastOp:
		return g.Cast(args[0], n.DType())
	case *tile.StopGradientOp:
		return g.StopGradient(args[0])
	case *tile.ContractionOp:
		operands := make([]tile.Operand, len(args))
		for i, a := range args {
			operands[i] = tile.Operand{Tensor: a, Index: op.Access[i]}
		}
		return g.Contract(op.Agg, op.Comb, n.Shape(), op.Out, operands, op.Constraints...)
	case *tile.ReshapeOp:
		return g.Reshape(args[0], n.Shape())
	case *tile.TransposeOp:
		return g.Transpose(args[0], op.Perm)
	case *tile.SliceOp:
		return g.Slice(args[0], op.Start, op.Stop, op.Step)
	case *tile.PadOp:
		return g.Pad(args[0], op.Lo, op.Hi, op.Value)
	case *tile.ConcatOp:
		return g.Concat(op.Axis, args...)
	case *tile.BroadcastOp:
		return g.BroadcastTo(args[0], n.Shape())
	case *tile.GatherOp:
		return g.Gather(args[0], args[1], op.Axis)
	case *tile.ScatterAddOp:
		return g.ScatterAdd(args[0], args[1], op.Axis, n.Shape())
	case *tile.IotaOp:
		return g.Iota(n.DType(), n.Shape(), op.Axis)
	case *tile.RandomOp:
		return g.Random(args[0], n.DType(), n.Shape(), op.Stream)
	}
	b.fail("internal: %s nodes cannot be copied", n.Op().Kind())
	return g.Errorf("onnx", "cannot copy %v", n)
}

// freshIndex returns an index name the contraction does not use.
func (b *batcher) freshIndex(op *tile.ContractionOp) string {
	used := map[string]bool{}
	for _, n := range op.Indices() {
		used[n] = true
	}
	name := "step"
	for i := 0; used[name]; i++ {
		name = fmt.Sprintf("step%d", i)
	}
	return name
}

// gather copies Gather node n with the steps axis.
func (b *batcher) gather(n *tile.Tensor, axis int, args []*tile.Tensor, flags []bool) (*tile.Tensor, bool) {
	g := b.g
	data, idx := n.Args()[0], n.Args()[1]
	switch {
	case !flags[1]:
		// The same positions at every step.
		return g.Gather(args[0], args[1], axis+1), true
	case !flags[0] && !b.onCycle[n.ID()]:
		// Fixed data, positions per step, computed for every step at once.
		if axis == 0 {
			return g.Gather(args[0], args[1], 0), true
		}
		r := data.Rank()
		perm := []int{axis}
		for d := range r {
			if d != axis {
				perm = append(perm, d)
			}
		}
		t := g.Gather(g.Transpose(args[0], perm), args[1], 0) // [steps, idx..., data without axis...]
		k := idx.Rank()
		back := []int{0}
		for d := range axis {
			back = append(back, 1+k+d)
		}
		for d := range k {
			back = append(back, 1+d)
		}
		for d := axis + 1; d < r; d++ {
			back = append(back, k+d)
		}
		return g.Transpose(t, back), true
	}
	// A step reads only its own step of what the loop computes, so the
	// positions select by comparison: O[s, d<a, i, d>a] = Σ_n (I[s, i] ==
	// n) ? D[s, d<a, n, d>a] : 0, one term at most (none reads 0, as a
	// gather outside the axis does).
	dr, ir := data.Rank(), idx.Rank()
	ds := data.Shape()
	// Both on [steps, d<a, i, n, d>a].
	full := b.withSteps(append(append(append(ds[:axis:axis].Clone(), idx.Shape()...), ds[axis]), ds[axis+1:]...))
	eq := b.positions(args[1], idx, ds[axis], axis, dr-axis-1)
	dshape := append(append(append(ds[:axis:axis].Clone(), ones(ir)...), ds[axis]), ds[axis+1:]...)
	if flags[0] {
		dshape = b.withSteps(dshape)
	}
	d := g.BroadcastTo(g.Reshape(args[0], dshape), full)
	return b.sumOver(n, g.Select(eq, d, g.BroadcastTo(g.Scalar(0, n.DType()), full)), full, 1+axis+ir, 1), true
}

// positions returns, for per-step integer positions x (the copy of body
// node idx), x[s, i] == n on a tensor [steps, 1 × before, i, n (of size
// size), 1 × after].
func (b *batcher) positions(x, idx *tile.Tensor, size, before, after int) *tile.Tensor {
	g := b.g
	is := idx.Shape()
	col := g.Reshape(x, b.withSteps(append(is.Clone(), 1)))
	eq := g.Elementwise(tile.Eq, col, g.Iota(idx.DType(), tile.Shape{size}, 0)) // [steps, i, n]
	return g.Reshape(eq, b.withSteps(append(append(append(ones(before), is...), size), ones(after)...)))
}

// sumOver returns x (of shape full) summed over its k axes from axis from
// (the steps axis counted), broadcasting x first when smaller; bool values
// are combined with or.
func (b *batcher) sumOver(n, x *tile.Tensor, full tile.Shape, from, k int) *tile.Tensor {
	g := b.g
	x = g.BroadcastTo(x, full)
	var out, in []tile.Affine
	for d := range full {
		ix := tile.Ix(fmt.Sprintf("x%d", d))
		in = append(in, ix)
		if d < from || d >= from+k {
			out = append(out, ix)
		}
	}
	agg := tile.Sum
	if n.DType() == tile.Bool {
		agg = tile.Max
	}
	return g.Contract(agg, tile.CombNone, b.withSteps(n.Shape()), out, []tile.Operand{{Tensor: x, Index: in}})
}

// scatter copies ScatterAdd node n with the steps axis.
func (b *batcher) scatter(n *tile.Tensor, axis int, args []*tile.Tensor, flags []bool) (*tile.Tensor, bool) {
	g := b.g
	if !flags[1] {
		return g.ScatterAdd(b.lift(n.Args()[0]), args[1], axis+1, b.withSteps(n.Shape())), true
	}
	// Positions per step: O[s, d<a, n, d>a] = Σ_i (I[s, i] == n) ?
	// U[s, d<a, i, d>a] : 0, on [steps, d<a, i, n, d>a].
	idx := n.Args()[1]
	os, is := n.Shape(), idx.Shape()
	full := b.withSteps(append(append(append(os[:axis:axis].Clone(), is...), os[axis]), os[axis+1:]...))
	eq := b.positions(args[1], idx, os[axis], axis, n.Rank()-axis-1)
	ushape := append(append(append(os[:axis:axis].Clone(), is...), 1), os[axis+1:]...)
	if flags[0] {
		ushape = b.withSteps(ushape)
	}
	u := g.BroadcastTo(g.Reshape(args[0], ushape), full)
	return b.sumOver(n, g.Select(eq, u, g.BroadcastTo(g.Scalar(0, n.DType()), full)), full, 1+axis, len(is)), true
}
