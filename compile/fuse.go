package compile

import (
	"github.com/tartanml/tartan/kir"
	"github.com/tartanml/tartan/tile"
)

// cheapCost is the largest inlined-expression cost (see exprCost) at which a
// node with several consumers is recomputed in each of them rather than
// stored: a few arithmetic operations cost less than a round trip through
// memory.
const cheapCost = 3

// fusion holds pass 4's decisions: which nodes get a buffer and which
// contractions become the loop nest of an elementwise consumer that turns
// their result into an Epilogue.
type fusion struct {
	g         *graph
	nests     []*nest
	consumers [][]*node // distinct consumer nodes, in order
	uses      []int     // argument positions reading the node, over all consumers
	// mat: the node's value is stored in a buffer (leaves that are not
	// inline constants, and every node computed by a kernel of its own).
	mat []bool
	// hosted[r] is the contraction whose loop nest root r's kernel uses,
	// with r's expression as Epilogue (-1: none); root[c] is the reverse.
	hosted, root []int
	cost         []int
	special      []bool // outputs and update values
	onCycle      []bool // nodes on a recurrence's cycle (cycleNodes)
	// chain: the node lies inside an epilogue chain, between a hosted
	// contraction and its root, and is inlined into the root however many
	// times the chain reads it.
	chain []bool
}

// fuse is pass 4's decision half (emit.go builds the kernels). Its rules:
//
//   - Inputs, variables, stored constants, outputs, update values and every
//     node with reduction loops (contractions, scatter_add) get a buffer.
//   - A contraction whose only consumer is elementwise (or a cast) of the
//     same shape is fused with it: following elementwise nodes read once,
//     or read several times by nodes that all rejoin in one (a diamond,
//     see chainNext), up to one that is stored anyway or read otherwise
//     (the root), the root's kernel runs the contraction's loops and
//     computes the root from the accumulated value (bias add or batch norm
//     and relu after a conv are one kernel). A root hosts at most one
//     contraction, and a node belongs to one chain.
//   - Every other node (elementwise, cast, shape ops, gather, iota, random,
//     contractions without reduction loops) is inlined into its consumers'
//     expressions when it is read once (one argument of one consumer), or
//     when its inlined expression costs at most cheapCost (recomputed at each
//     use); otherwise it is stored. A node of at least smallChainCost that a
//     consumer broadcasts to 8 or more times its size is stored, so that it
//     is computed once per element of its own (except on a recurrence's
//     cycle, whose kernels read only their own step). Counting every use keeps inlined
//     expressions small: y = y·y repeated does not double them each time.
//   - The operands of a scatter_add are stored, and a scatter_add hosts no
//     epilogue, so that its kernel has the indexed form of kir.ScatterView.
//   - A node read by a matrix-product-shaped contraction (sum of a product
//     of two operands) is inlined only if it is a pure view, that is a plain
//     load of a stored buffer through index arithmetic (transpose, reshape,
//     slice, broadcast), so the contraction keeps the form a gemm schedule
//     needs; otherwise it is stored.
func fuse(g *graph, nests []*nest) *fusion {
	n := len(g.nodes)
	f := &fusion{g: g, nests: nests, consumers: make([][]*node, n), uses: make([]int, n), mat: make([]bool, n),
		hosted: make([]int, n), root: make([]int, n), cost: make([]int, n), special: make([]bool, n), chain: make([]bool, n)}
	for i := range f.hosted {
		f.hosted[i], f.root[i] = -1, -1
	}
	for _, c := range g.nodes {
		for i, a := range c.args {
			f.uses[a.id]++
			dup := false
			for _, b := range c.args[:i] {
				dup = dup || b == a
			}
			if !dup {
				f.consumers[a.id] = append(f.consumers[a.id], c)
			}
		}
	}
	for _, o := range g.outputs {
		f.special[o.n.id] = true
	}
	for _, u := range g.updates {
		f.special[u.x.id] = true
	}
	f.protectCycles()
	forced := make([]bool, n)
	for _, x := range g.nodes {
		ns := nests[x.id]
		switch {
		case ns == nil:
			f.mat[x.id], forced[x.id] = true, true
		case isLeaf(x):
			// An inline constant: never stored; outputs of it get a copy kernel.
		case f.special[x.id] || len(ns.reduce) > 0:
			f.mat[x.id], forced[x.id] = true, true
		}
		if _, ok := x.op.(*tile.ScatterAddOp); ok {
			// Stored operands let the schedule run the scatter as a loop
			// over its indices (kir.ScatterView) instead of a dense sum.
			for _, a := range x.args {
				if nests[a.id] != nil && !isLeaf(a) {
					f.mat[a.id], forced[a.id] = true, true
				}
			}
		}
	}
	// Epilogue roots.
	for _, c := range g.nodes {
		ns := nests[c.id]
		if ns == nil || len(ns.reduce) == 0 || f.special[c.id] || len(f.consumers[c.id]) != 1 {
			continue
		}
		if _, ok := c.op.(*tile.ScatterAddOp); ok {
			continue // a scatter's kernel has no epilogue (kir.ScatterView)
		}
		r := f.consumers[c.id][0]
		if !elementwiseLike(r) || !r.shape.Equal(c.shape) {
			continue
		}
		var inner []*node // the chain's nodes before the root
		for !forced[r.id] && !f.chain[r.id] {
			next, side := f.chainNext(r, forced)
			if next == nil {
				break
			}
			inner = append(append(inner, r), side...)
			r = next
		}
		if f.hosted[r.id] >= 0 || f.chain[r.id] {
			continue // another contraction's chain got there first
		}
		forced[r.id], f.mat[r.id] = true, true
		f.hosted[r.id], f.root[c.id] = c.id, r.id
		f.mat[c.id] = false
		for _, x := range inner {
			f.chain[x.id] = true
		}
	}
	// Inlining decisions, producers first.
	for _, x := range g.nodes {
		ns := nests[x.id]
		if ns == nil || forced[x.id] {
			continue
		}
		f.cost[x.id] = f.exprCost(ns.body)
		if isLeaf(x) {
			continue
		}
		gemmUse := false
		for _, c := range f.consumers[x.id] {
			gemmUse = gemmUse || gemmShaped(nests[c.id])
		}
		switch {
		case f.chain[x.id]:
			// Inside an epilogue chain: computed from the accumulator.
		case gemmUse && !f.pureView(x):
			f.mat[x.id] = true
		case f.cost[x.id] >= smallChainCost && !f.onCycle[x.id] && f.broadcastInto(x):
			f.mat[x.id] = true
		case f.uses[x.id] <= 1:
		case f.cost[x.id] <= cheapCost:
		default:
			f.mat[x.id] = true
		}
	}
	return f
}

// chainNext returns the node an epilogue chain continues to from r, and
// the side nodes it passes on the way, or nil where the chain ends. A node
// read once continues to its consumer. A node read several times continues
// to the join j of a diamond: a consumer j such that each other consumer
// is read once, by j (select(x ≤ 0, 0, x) after a bias or a batch norm: x
// feeds both the comparison and the select). The join and the side nodes
// are elementwise, of r's shape, in no other chain and not on a
// recurrence's cycle; side nodes are not stored for a reason of their own
// (outputs), while the join may be, and the chain then ends there.
func (f *fusion) chainNext(r *node, forced []bool) (*node, []*node) {
	cs := f.consumers[r.id]
	if f.uses[r.id] == 1 {
		if !elementwiseLike(cs[0]) || !cs[0].shape.Equal(r.shape) {
			return nil, nil
		}
		return cs[0], nil
	}
	if f.onCycle[r.id] {
		return nil, nil
	}
	ok := func(x *node) bool {
		return elementwiseLike(x) && x.shape.Equal(r.shape) && !f.chain[x.id] && !f.onCycle[x.id]
	}
	for _, j := range cs {
		if !ok(j) {
			continue
		}
		var side []*node
		joined := true
		for _, a := range cs {
			if a == j {
				continue
			}
			if !ok(a) || forced[a.id] || f.uses[a.id] != 1 || f.consumers[a.id][0] != j {
				joined = false
				break
			}
			side = append(side, a)
		}
		if joined {
			return j, side
		}
	}
	return nil, nil
}

// smallChainCost is the inlined-expression cost from which a node that a
// much larger consumer reads through a broadcast is stored (see
// broadcastInto).
const smallChainCost = 2

// broadcastInto reports whether some consumer of x broadcasts it to at
// least 8 times as many points (a broadcast, or a contraction without
// reduction loops): inlined there, x's expression would be computed once
// per point of the consumer instead of once per element of x (a
// normalisation's per-channel factors, recomputed for every pixel).
func (f *fusion) broadcastInto(x *node) bool {
	for _, c := range f.consumers[x.id] {
		if c.shape.Size() < 8*max(x.shape.Size(), 1) {
			continue
		}
		switch c.op.(type) {
		case *tile.BroadcastOp:
			return true
		case *tile.ContractionOp:
			// Without reduction loops, a contraction with more points than
			// its operand reads each element several times (gradients
			// write broadcasts so).
			if ns := f.nests[c.id]; ns != nil && len(ns.reduce) == 0 {
				return true
			}
		}
	}
	return false
}

func elementwiseLike(n *node) bool {
	switch n.op.(type) {
	case *tile.ElementwiseOp, *tile.CastOp:
		return true
	}
	return false
}

// gemmShaped reports whether a nest sums a product of two operand loads.
func gemmShaped(ns *nest) bool {
	if ns == nil || len(ns.reduce) == 0 || ns.agg != tile.Sum {
		return false
	}
	b := ns.body
	return b.Op == kir.Apply && b.Fn == tile.Mul && b.Args[0].Op == kir.Load && b.Args[1].Op == kir.Load
}

// pureView reports whether node x, inlined, is a plain in-range load of a
// stored buffer with affine-or-reshape index arithmetic.
func (f *fusion) pureView(x *node) bool {
	ns := f.nests[x.id]
	if ns == nil || len(ns.reduce) > 0 || len(ns.where) > 0 {
		return false
	}
	b := ns.body
	if b.Op != kir.Load || b.OOB != kir.Skip {
		return false
	}
	for _, i := range b.Index {
		if hasValue(i) {
			return false
		}
	}
	a := f.g.nodes[b.Buf]
	return f.mat[a.id] || f.pureView(a)
}

func hasValue(x *kir.Ix) bool {
	if x == nil {
		return false
	}
	return x.Op == kir.IxValue || hasValue(x.A) || hasValue(x.B)
}

// exprCost is the work of evaluating e once with its inlined arguments:
// transcendental functions 4, random numbers 8, other arithmetic, casts and
// selects 1, loads and index values 0.
func (f *fusion) exprCost(e *kir.Expr) int {
	c := 0
	switch e.Op {
	case kir.Load:
		if a := f.g.nodes[e.Buf]; !f.mat[a.id] && f.root[a.id] < 0 {
			c += f.cost[a.id]
		}
	case kir.Apply:
		switch e.Fn {
		case tile.Exp, tile.Log, tile.Log1p, tile.Sqrt, tile.Rsqrt, tile.Tanh, tile.Sigmoid, tile.Erf, tile.Pow:
			c += 4
		default:
			c++
		}
	case kir.Cast:
		c++
	case kir.Random:
		c += 8
	}
	for _, a := range e.Args {
		c += f.exprCost(a)
	}
	for _, x := range e.Index {
		c += f.ixCost(x)
	}
	return c
}

func (f *fusion) ixCost(x *kir.Ix) int {
	if x == nil {
		return 0
	}
	if x.Op == kir.IxValue {
		return f.exprCost(x.E)
	}
	return f.ixCost(x.A) + f.ixCost(x.B)
}

// protectCycles stores the next states of every recurrence, and every value
// off a recurrence's cycle that a node on it reads (looking through
// broadcasts), so that a loop-body kernel reads those values from buffers at
// its own step instead of inlining index arithmetic over the steps, which the
// loop's kernels no longer have (loops.go).
func (f *fusion) protectCycles() {
	g := f.g
	onCycle := cycleNodes(g)
	f.onCycle = onCycle
	var protect func(a *node)
	protect = func(a *node) {
		switch {
		case onCycle[a.id] || isLeaf(a):
		case a.op.Kind() == "broadcast":
			protect(a.args[0])
		default:
			f.special[a.id] = true
		}
	}
	for _, x := range g.nodes {
		if x.next != nil {
			f.special[x.next.id] = true
		}
		if onCycle[x.id] {
			for _, a := range x.args {
				protect(a)
			}
		}
	}
}

// cycleNodes marks the nodes on a recurrence's cycle: reachable from a state
// and reaching next states, following arguments and, from next states to
// their states, the delay of one step.
func cycleNodes(g *graph) []bool {
	n := len(g.nodes)
	fwd, bwd := make([][]int, n), make([][]int, n)
	var starts []*node
	for _, x := range g.nodes {
		for _, a := range x.args {
			fwd[a.id] = append(fwd[a.id], x.id)
			bwd[x.id] = append(bwd[x.id], a.id)
		}
		if x.next != nil {
			fwd[x.next.id] = append(fwd[x.next.id], x.id)
			bwd[x.id] = append(bwd[x.id], x.next.id)
			starts = append(starts, x)
		}
	}
	reach := func(from int, next [][]int) []bool {
		seen := make([]bool, n)
		seen[from] = true
		stack := []int{from}
		for len(stack) > 0 {
			i := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			for _, j := range next[i] {
				if !seen[j] {
					seen[j] = true
					stack = append(stack, j)
				}
			}
		}
		return seen
	}
	on := make([]bool, n)
	for _, s := range starts {
		a, b := reach(s.id, fwd), reach(s.next.id, bwd)
		for i := range on {
			on[i] = on[i] || a[i] && b[i]
		}
	}
	return on
}
