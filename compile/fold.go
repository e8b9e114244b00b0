package compile

import (
	"fmt"

	"github.com/tartanml/tartan/kir"
	"github.com/tartanml/tartan/tile"
)

// Constant folding limits: a node is folded when its result has at most
// foldLimit elements and evaluating it takes at most foldWork body
// evaluations, so that folding stays cheap and constants stay small.
const (
	foldLimit = 4096
	foldWork  = 1 << 16
)

// foldable reports whether n, with simplified arguments args, is a small
// computation on constants only.
func foldable(n *node, args []*node) bool {
	if len(args) == 0 || isLeaf(n) || n.shape.Size() > foldLimit {
		return false
	}
	for _, a := range args {
		if _, ok := a.op.(*tile.ConstantOp); !ok {
			return false
		}
	}
	work := n.shape.Size()
	if c, ok := n.op.(*tile.ContractionOp); ok {
		shapes := make([]tile.Shape, len(args))
		for i, a := range args {
			shapes[i] = a.shape
		}
		rg, err := c.Ranges(n.shape, shapes)
		if err != nil {
			return false
		}
		work = 1
		for _, r := range rg {
			work *= max(r.Hi-r.Lo+1, 1)
			if work > foldWork {
				return false
			}
		}
	}
	return work <= foldWork
}

// fold evaluates n on its constant arguments by compiling the one-node graph
// (without simplification) and interpreting it.
func fold(n *node, args []*node) (*tile.Value, error) {
	g := &graph{name: "fold"}
	m := map[*node]*node{}
	for _, a := range args {
		if _, ok := m[a]; ok {
			continue
		}
		c := &node{id: len(g.nodes), op: a.op, dtype: a.dtype, shape: a.shape, src: a.src}
		g.nodes = append(g.nodes, c)
		m[a] = c
	}
	x := &node{id: len(g.nodes), op: n.op, dtype: n.dtype, shape: n.shape, src: n.src}
	for _, a := range args {
		x.args = append(x.args, m[a])
	}
	g.nodes = append(g.nodes, x)
	g.outputs = []output{{"value", x}}
	p, err := build(g, Target{}, &stats{})
	if err != nil {
		return nil, fmt.Errorf("folding %v: %w", n, err)
	}
	bufs := make([][]float64, len(p.Buffers))
	if err := kir.Interpret(p, bufs); err != nil {
		return nil, fmt.Errorf("folding %v: %w", n, err)
	}
	out := bufs[p.Outputs[0].Buffer]
	return &tile.Value{DType: n.dtype, Shape: n.shape.Clone(), Data: append([]float64(nil), out...)}, nil
}
