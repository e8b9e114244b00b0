package compile

import (
	"fmt"
	"strings"

	"github.com/tartanml/tartan/tile"
)

// node is the compiler's copy of a tile node. It reuses tile's op values,
// which are immutable, and can be rewritten freely by the passes. Nodes of a
// graph are kept in topological order and their id is their position.
type node struct {
	id    int
	op    tile.Op
	args  []*node
	dtype tile.DType
	shape tile.Shape
	// src lists the IDs of the tile nodes this node stands for (several
	// after common-subexpression elimination).
	src []int
	// next is a recurrence state's next states (see tile.RecurrenceOp), a
	// later node.
	next *node
}

// graph is the compiler's working copy of a tile graph.
type graph struct {
	name    string
	nodes   []*node
	inputs  []*node
	vars    []*node
	outputs []output
	updates []update
}

type output struct {
	name string
	n    *node
}

type update struct {
	v, x *node
}

// importGraph copies a verified tile graph.
func importGraph(g *tile.Graph) *graph {
	out := &graph{name: g.Name()}
	m := make([]*node, len(g.Nodes()))
	for i, t := range g.Nodes() {
		n := &node{id: i, op: t.Op(), dtype: t.DType(), shape: t.Shape(), src: []int{t.ID()}}
		for _, a := range t.Args() {
			n.args = append(n.args, m[a.ID()])
		}
		m[i] = n
		out.nodes = append(out.nodes, n)
	}
	for _, t := range g.Recurrences() {
		m[t.ID()].next = m[t.Op().(*tile.RecurrenceOp).Next().ID()]
	}
	for _, t := range g.Inputs() {
		out.inputs = append(out.inputs, m[t.ID()])
	}
	for _, t := range g.Variables() {
		out.vars = append(out.vars, m[t.ID()])
	}
	for _, o := range g.Outputs() {
		out.outputs = append(out.outputs, output{o.Name, m[o.Tensor.ID()]})
	}
	for _, u := range g.Updates() {
		out.updates = append(out.updates, update{m[u.Variable.ID()], m[u.Value.ID()]})
	}
	return out
}

func (n *node) String() string {
	return fmt.Sprintf("%%%d %s %s%s", n.src[0], kindOf(n.op), n.dtype, n.shape)
}

// kindOf returns the op's textual name.
func kindOf(op tile.Op) string {
	if op == nil {
		return "?"
	}
	return op.Kind()
}

// leafName returns the name of an input or variable node, or "".
func leafName(n *node) string {
	switch op := n.op.(type) {
	case *tile.InputOp:
		return op.Name
	case *tile.VariableOp:
		return op.Name
	}
	return ""
}

func isLeaf(n *node) bool {
	switch n.op.(type) {
	case *tile.InputOp, *tile.VariableOp, *tile.ConstantOp:
		return true
	}
	return false
}

// describeSources formats the tile nodes a set of compiler nodes stand for,
// such as "%3 contraction + %4 add".
func describeSources(ns []*node) string {
	parts := make([]string, 0, len(ns))
	for _, n := range ns {
		parts = append(parts, fmt.Sprintf("%%%d %s", n.src[0], kindOf(n.op)))
	}
	return strings.Join(parts, " + ")
}
