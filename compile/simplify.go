package compile

import (
	"fmt"
	"hash/fnv"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/tartanml/tartan/tile"
)

// simplify is pass 2. It rebuilds the graph bottom-up, keeping only what the
// outputs and updates need (inputs and variables are always kept, since a
// program binds them by name), and at every node:
//
//   - applies algebraic identities: x+0, 0+x, x-0, x·1, 1·x, x/1,
//     neg(neg x), select(c, x, x), a cast to the operand's dtype, a reshape to
//     the operand's shape, reshape∘reshape, transpose∘transpose (composed,
//     dropped when the identity), broadcast to the same shape,
//     broadcast∘broadcast, a full slice, a pad of nothing, a concat of one
//     operand;
//   - folds a node whose arguments are all constants and whose result is
//     small (at most foldLimit elements) into a constant, by compiling and
//     interpreting it (fold.go);
//   - takes the factors that are constant along a sum out of it
//     (factor.go), so that sums differing only by such factors merge;
//   - merges it with an identical earlier node (same op, parameters,
//     arguments, dtype and shape; constants with the same contents), which
//     removes the duplicates that differentiation produces.
//
// Identities hold exactly, except that x+0 turns a -0 into +0; factoring
// reassociates a sum's rounding.
func simplify(g *graph, st *stats) (*graph, error) {
	s := &simplifier{out: &graph{name: g.name}, byKey: map[string][]*node{}, st: st}
	live := liveNodes(g)
	m := make([]*node, len(g.nodes))
	for _, n := range g.nodes {
		if !live[n.id] {
			continue
		}
		args := make([]*node, len(n.args))
		for i, a := range n.args {
			args[i] = m[a.id]
		}
		r, err := s.rewrite(n, args)
		if err != nil {
			return nil, err
		}
		m[n.id] = r
	}
	for _, n := range g.nodes {
		if n.next != nil && m[n.id] != nil {
			m[n.id].next = m[n.next.id]
		}
	}
	out := s.out
	for _, n := range g.inputs {
		out.inputs = append(out.inputs, m[n.id])
	}
	for _, n := range g.vars {
		out.vars = append(out.vars, m[n.id])
	}
	for _, o := range g.outputs {
		out.outputs = append(out.outputs, output{o.name, m[o.n.id]})
	}
	for _, u := range g.updates {
		out.updates = append(out.updates, update{m[u.v.id], m[u.x.id]})
	}
	return prune(out), nil
}

// liveNodes marks the nodes that outputs and updates need, and every leaf
// input and variable.
func liveNodes(g *graph) []bool {
	live := make([]bool, len(g.nodes))
	var mark func(n *node)
	mark = func(n *node) {
		if live[n.id] {
			return
		}
		live[n.id] = true
		for _, a := range n.args {
			mark(a)
		}
		if n.next != nil {
			mark(n.next)
		}
	}
	for _, n := range g.inputs {
		mark(n)
	}
	for _, n := range g.vars {
		mark(n)
	}
	for _, o := range g.outputs {
		mark(o.n)
	}
	for _, u := range g.updates {
		mark(u.x)
	}
	return live
}

// prune drops the nodes that rewriting left unused and renumbers the rest.
func prune(g *graph) *graph {
	live := liveNodes(g)
	var nodes []*node
	for _, n := range g.nodes {
		if live[n.id] {
			n.id = len(nodes)
			nodes = append(nodes, n)
		}
	}
	g.nodes = nodes
	return g
}

type simplifier struct {
	out   *graph
	byKey map[string][]*node
	st    *stats
}

// rewrite returns the simplified node for n, whose arguments are already
// simplified.
func (s *simplifier) rewrite(n *node, args []*node) (*node, error) {
	if _, ok := n.op.(*tile.RecurrenceOp); ok {
		// Each recurrence is its own loop: never merged, folded or rewritten.
		c := &node{op: n.op, args: args, dtype: n.dtype, shape: n.shape, src: n.src}
		c.args, c.id = args, len(s.out.nodes)
		s.out.nodes = append(s.out.nodes, c)
		return c, nil
	}
	if r := identity(n, args); r != nil {
		s.st.identities++
		return r, nil
	}
	if r := s.combine(n, args); r != nil {
		s.st.identities++
		return s.rewrite(r, r.args)
	}
	if foldable(n, args) {
		v, err := fold(n, args)
		if err != nil {
			return nil, err
		}
		s.st.folded++
		c := &node{op: &tile.ConstantOp{Value: v}, dtype: n.dtype, shape: n.shape, src: n.src}
		return s.intern(c, nil), nil
	}
	if r := s.factorSum(n, args); r != nil {
		return r, nil
	}
	c := &node{op: n.op, args: args, dtype: n.dtype, shape: n.shape, src: n.src}
	return s.intern(c, args), nil
}

// intern adds n to the output graph unless an identical node exists.
func (s *simplifier) intern(n *node, args []*node) *node {
	key := nodeKey(n, args)
	for _, e := range s.byKey[key] {
		if sameContents(e, n) {
			e.src = append(e.src, n.src...)
			s.st.merged++
			return e
		}
	}
	n.args = args
	n.id = len(s.out.nodes)
	s.out.nodes = append(s.out.nodes, n)
	s.byKey[key] = append(s.byKey[key], n)
	return n
}

// sameContents compares what nodeKey summarises by a hash: constant data.
func sameContents(a, b *node) bool {
	ca, ok := a.op.(*tile.ConstantOp)
	if !ok {
		return true
	}
	cb := b.op.(*tile.ConstantOp)
	return slices.EqualFunc(ca.Value.Data, cb.Value.Data, func(x, y float64) bool {
		return math.Float64bits(x) == math.Float64bits(y)
	})
}

// nodeKey identifies a node by its op, parameters, arguments, dtype and
// shape. Leaves are keyed by name, so distinct inputs never merge.
func nodeKey(n *node, args []*node) string {
	var b strings.Builder
	b.WriteString(kindOf(n.op))
	b.WriteByte(' ')
	b.WriteString(n.dtype.String())
	b.WriteString(n.shape.String())
	b.WriteByte(' ')
	b.WriteString(opParams(n.op))
	for _, a := range args {
		b.WriteString(" %")
		b.WriteString(strconv.Itoa(a.id))
	}
	return b.String()
}

// opParams formats an op's parameters canonically. Constants are summarised
// by a hash of their bits (sameContents compares them fully).
func opParams(op tile.Op) string {
	switch op := op.(type) {
	case *tile.InputOp:
		return "input:" + op.Name
	case *tile.VariableOp:
		return "variable:" + op.Name
	case *tile.ConstantOp:
		h := fnv.New64a()
		var buf [8]byte
		for _, x := range op.Value.Data {
			bits := math.Float64bits(x)
			for i := range buf {
				buf[i] = byte(bits >> (8 * i))
			}
			h.Write(buf[:])
		}
		return fmt.Sprintf("const:%x", h.Sum64())
	case *tile.ElementwiseOp:
		return op.Fn.String()
	case *tile.ContractionOp:
		names := make([]string, len(op.Access))
		for i := range names {
			names[i] = "A" + strconv.Itoa(i)
		}
		return tile.FormatContraction(op, "O", names, nil)
	case *tile.TransposeOp:
		return fmt.Sprint(op.Perm)
	case *tile.SliceOp:
		return fmt.Sprint(op.Start, op.Stop, op.Step)
	case *tile.ConcatOp:
		return strconv.Itoa(op.Axis)
	case *tile.PadOp:
		return fmt.Sprint(op.Lo, op.Hi, math.Float64bits(op.Value))
	case *tile.GatherOp:
		return strconv.Itoa(op.Axis)
	case *tile.ScatterAddOp:
		return strconv.Itoa(op.Axis)
	case *tile.IotaOp:
		return strconv.Itoa(op.Axis)
	case *tile.RandomOp:
		return strconv.FormatUint(op.Stream, 10)
	}
	return ""
}

// constValue reports whether every element of n is the constant c, looking
// through broadcasts and reshapes.
func constValue(n *node) (float64, bool) {
	switch op := n.op.(type) {
	case *tile.ConstantOp:
		d := op.Value.Data
		if len(d) == 0 {
			return 0, false
		}
		for _, x := range d[1:] {
			if math.Float64bits(x) != math.Float64bits(d[0]) {
				return 0, false
			}
		}
		return d[0], true
	case *tile.BroadcastOp, *tile.ReshapeOp, *tile.StopGradientOp:
		return constValue(n.args[0])
	}
	return 0, false
}

func isConst(n *node, c float64) bool {
	v, ok := constValue(n)
	return ok && v == c
}

// identity returns the node n reduces to by an algebraic identity, or nil.
func identity(n *node, args []*node) *node {
	same := func(a *node) *node {
		if a.dtype == n.dtype && a.shape.Equal(n.shape) {
			return a
		}
		return nil
	}
	switch op := n.op.(type) {
	case *tile.ElementwiseOp:
		switch op.Fn {
		case tile.Add:
			if isConst(args[1], 0) {
				return same(args[0])
			}
			if isConst(args[0], 0) {
				return same(args[1])
			}
		case tile.Sub:
			if isConst(args[1], 0) {
				return same(args[0])
			}
		case tile.Mul:
			if isConst(args[1], 1) {
				return same(args[0])
			}
			if isConst(args[0], 1) {
				return same(args[1])
			}
		case tile.Div:
			if isConst(args[1], 1) {
				return same(args[0])
			}
		case tile.Neg:
			if e, ok := args[0].op.(*tile.ElementwiseOp); ok && e.Fn == tile.Neg {
				return same(args[0].args[0])
			}
		case tile.Select:
			if args[1] == args[2] {
				return same(args[1])
			}
		}
	case *tile.CastOp, *tile.ReshapeOp, *tile.BroadcastOp, *tile.StopGradientOp:
		return same(args[0])
	case *tile.ConcatOp:
		if len(args) == 1 {
			return same(args[0])
		}
	case *tile.TransposeOp:
		for i, p := range op.Perm {
			if p != i {
				return nil
			}
		}
		return same(args[0])
	case *tile.SliceOp:
		for d, x := range args[0].shape {
			if op.Start[d] != 0 || op.Stop[d] != x || op.Step[d] != 1 {
				return nil
			}
		}
		return same(args[0])
	case *tile.PadOp:
		for d := range op.Lo {
			if op.Lo[d] != 0 || op.Hi[d] != 0 {
				return nil
			}
		}
		return same(args[0])
	}
	return nil
}

// combine merges a node with an argument of the same kind: reshape∘reshape,
// transpose∘transpose and broadcast∘broadcast. It returns the merged node
// (not yet interned), or nil.
func (s *simplifier) combine(n *node, args []*node) *node {
	if len(args) != 1 || kindOf(args[0].op) != kindOf(n.op) {
		return nil
	}
	inner := args[0]
	switch op := n.op.(type) {
	case *tile.ReshapeOp, *tile.BroadcastOp:
		return &node{op: op, args: inner.args, dtype: n.dtype, shape: n.shape, src: n.src}
	case *tile.TransposeOp:
		p1 := inner.op.(*tile.TransposeOp).Perm
		perm := make([]int, len(op.Perm))
		for i, p := range op.Perm {
			perm[i] = p1[p]
		}
		return &node{op: &tile.TransposeOp{Perm: perm}, args: inner.args, dtype: n.dtype, shape: n.shape, src: n.src}
	}
	return nil
}
