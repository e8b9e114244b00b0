// Package grad is Tartan's reverse-mode automatic differentiation over tile
// graphs. Gradients are ordinary nodes added to the same graph as the function
// they differentiate, so one program can compute a loss, its gradients and the
// optimizer update that uses them.
//
// VJP, and Grad which calls it with a cotangent of one, work in four phases:
//
//  1. Find the path. A forward pass in creation order marks the nodes that
//     depend differentiably on some x (through floating-point values and the
//     argument positions that carry a derivative: not a Select condition, not
//     Gather indices, not the operands an equality only compares). A backward
//     pass from the ys keeps the marked nodes that the ys depend on. Only nodes
//     on this path are visited, and a node on it with no derivative rule is
//     reported before anything is added to the graph.
//  2. Walk the path nodes in reverse creation order. Creation order is
//     topological, so when a node is reached every consumer has already
//     contributed to its cotangent.
//  3. Apply the node's rule: build, from the node's cotangent, the cotangent of
//     every argument on the path. The rules live next to the node kinds they
//     serve: contraction.go, elementwise.go (with Cast) and shapeops.go.
//  4. Accumulate: contributions to one tensor from several consumers are added
//     with elementwise Add.
//
// A gradient always has the dtype and shape of the tensor it differentiates; a
// tensor the ys do not depend on gets a zero tensor.
//
// Where a derivative does not exist a fixed convention applies, documented
// with each rule: a max or min contraction sends each output element's
// cotangent to the first point attaining the extremum, in the lexicographic
// order of its reduction indices (row-major window order for a pool, as in
// TensorFlow and PyTorch), and nothing to the other tied inputs, a NaN
// extremum's to its first NaN; Maximum and Minimum send it to the first
// operand on ties and to the NaN operand of a NaN; Abs has derivative 0 at 0;
// Pow's derivative in the exponent is 0 where the base is not positive; Sign,
// Floor and Ceil have derivative 0. Product contractions
// divide by their operands, so operands containing zeros give non-finite
// derivatives; Assign contractions are differentiated as sums, exact when each
// output element is written once. Max and min contractions over a combination
// of operands, and product contractions over a sum, have no rule: Grad and VJP
// report them as errors before adding anything to the graph.
//
// Check compares the gradients against central finite differences computed
// with the reference executor, and is meant for the tests of any op built on
// tile.
//
// The entry points are Grad, VJP and Check.
package grad

import (
	"errors"
	"fmt"

	"github.com/tartanml/tartan/tile"
)

// Grad returns d(y)/d(x) for each x in xs, where y is a scalar floating-point
// tensor of g. Each gradient has its x's dtype and shape; a gradient that y does
// not depend on is a zero tensor. The gradient nodes are added to g.
func Grad(g *tile.Graph, y *tile.Tensor, xs ...*tile.Tensor) ([]*tile.Tensor, error) {
	if err := checkGraph(g); err != nil {
		return nil, err
	}
	if err := checkTensor(g, "y", y); err != nil {
		return nil, err
	}
	if !y.DType().IsFloat() || y.Rank() != 0 {
		return nil, fmt.Errorf("grad: y must be a floating-point scalar, got %s%v (%v)", y.DType(), y.Shape(), y)
	}
	ys := []*tile.Tensor{y}
	p, err := plan(g, ys, xs)
	if err != nil {
		return nil, err
	}
	return p.run(ys, []*tile.Tensor{g.ScalarLike(y, 1)}, xs)
}

// VJP returns the vector-Jacobian products Σ_k cotangents[k] · d(ys[k])/d(x)
// for each x in xs. cotangents[k] must have the dtype and shape of ys[k], and
// every y and x must be a floating-point tensor of g. The result for each x has
// x's dtype and shape; one that no y depends on is a zero tensor. The gradient
// nodes are added to g.
func VJP(g *tile.Graph, ys, cotangents []*tile.Tensor, xs ...*tile.Tensor) ([]*tile.Tensor, error) {
	if err := checkGraph(g); err != nil {
		return nil, err
	}
	if len(ys) != len(cotangents) {
		return nil, fmt.Errorf("grad: %d outputs but %d cotangents", len(ys), len(cotangents))
	}
	for k, y := range ys {
		if err := checkTensor(g, fmt.Sprintf("output %d", k), y); err != nil {
			return nil, err
		}
		if !y.DType().IsFloat() {
			return nil, fmt.Errorf("grad: output %d (%v) is not floating-point", k, y)
		}
		c := cotangents[k]
		if err := checkTensor(g, fmt.Sprintf("cotangent %d", k), c); err != nil {
			return nil, err
		}
		if c.DType() != y.DType() || !c.Shape().Equal(y.Shape()) {
			return nil, fmt.Errorf("grad: cotangent %d is %s%v but output %d is %s%v", k, c.DType(), c.Shape(), k, y.DType(), y.Shape())
		}
	}
	p, err := plan(g, ys, xs)
	if err != nil {
		return nil, err
	}
	return p.run(ys, cotangents, xs)
}

// path is the result of the first phase: the nodes of the graph as they were
// before differentiation and which of them lie on the path.
type path struct {
	g      *tile.Graph
	nodes  []*tile.Tensor
	onPath []bool
}

// plan validates xs, finds the path from xs to ys and checks that every node
// on it has a derivative rule. It adds nothing to the graph.
func plan(g *tile.Graph, ys, xs []*tile.Tensor) (*path, error) {
	for i, x := range xs {
		if err := checkTensor(g, fmt.Sprintf("x %d", i), x); err != nil {
			return nil, err
		}
		if !x.DType().IsFloat() {
			return nil, fmt.Errorf("grad: x %d (%v) is not floating-point, so it has no gradient", i, x)
		}
	}
	p := &path{g: g, nodes: append([]*tile.Tensor(nil), g.Nodes()...)}
	p.onPath = findPath(p.nodes, ys, xs)
	for _, t := range p.nodes {
		if p.onPath[t.ID()] {
			if err := supported(t, p.onPath); err != nil {
				return nil, err
			}
		}
	}
	return p, nil
}

// run walks the path in reverse creation order from the cotangents of ys,
// applying each node's rule and accumulating, and returns the cotangents of
// xs (zero tensors for those off the path).
func (p *path) run(ys, cotangents, xs []*tile.Tensor) ([]*tile.Tensor, error) {
	g, nodes, onPath := p.g, p.nodes, p.onPath
	w := &walk{g: g, adj: map[int]*tile.Tensor{}}
	for k, y := range ys {
		if onPath[y.ID()] {
			if err := w.accumulate(y, cotangents[k]); err != nil {
				return nil, err
			}
		}
	}
	// The open adjoint recurrences, by the id of the state they carry back.
	adjoint := map[int]*tile.Tensor{}
	nextOf := map[int][]*tile.Tensor{}
	for _, s := range g.Recurrences() {
		if n := s.Op().(*tile.RecurrenceOp).Next(); onPath[s.ID()] && onPath[n.ID()] && s.ID() < len(nodes) {
			nextOf[n.ID()] = append(nextOf[n.ID()], s)
		}
	}
	for id := len(nodes) - 1; id >= 0; id-- {
		t := nodes[id]
		for _, s := range nextOf[id] {
			q := openAdjoint(g, s)
			adjoint[s.ID()] = q
			if err := w.accumulate(t, q); err != nil {
				return nil, err
			}
		}
		dy := w.adj[id]
		if q := adjoint[id]; q != nil {
			d := dy
			if d == nil {
				d = zeros(g, t)
			}
			g.CloseRecurrence(q, d)
		}
		if !onPath[id] || dy == nil {
			continue
		}
		want := make([]bool, len(t.Args()))
		needed := false
		for _, k := range diffArgs(t) {
			if onPath[t.Args()[k].ID()] {
				want[k], needed = true, true
			}
		}
		if !needed {
			continue
		}
		grads, err := rule(g, t, dy, want)
		if err != nil {
			return nil, err
		}
		for k, gk := range grads {
			if gk != nil && want[k] {
				if err := w.accumulate(t.Args()[k], gk); err != nil {
					return nil, err
				}
			}
		}
		if err := g.Err(); err != nil {
			return nil, fmt.Errorf("grad: differentiating %v: %w", t, err)
		}
	}

	out := make([]*tile.Tensor, len(xs))
	for i, x := range xs {
		if d := w.adj[x.ID()]; d != nil {
			out[i] = d
		} else {
			out[i] = zeros(g, x)
		}
	}
	if err := g.Err(); err != nil {
		return nil, fmt.Errorf("grad: building gradients: %w", err)
	}
	return out, nil
}

// checkGraph rejects a nil graph and one that already has a building error.
func checkGraph(g *tile.Graph) error {
	if g == nil {
		return errors.New("grad: nil graph")
	}
	if err := g.Err(); err != nil {
		return fmt.Errorf("grad: graph %q has a building error: %w", g.Name(), err)
	}
	return nil
}

// checkTensor rejects nil and invalid tensors and those of another graph.
func checkTensor(g *tile.Graph, what string, t *tile.Tensor) error {
	switch {
	case t == nil:
		return fmt.Errorf("grad: %s is nil", what)
	case !t.Valid():
		return fmt.Errorf("grad: %s is an invalid tensor", what)
	case t.Graph() != g:
		return fmt.Errorf("grad: %s (%v) belongs to graph %q, not %q", what, t, t.Graph().Name(), g.Name())
	}
	return nil
}

// findPath returns, indexed by node ID, whether a node lies on a
// differentiable path from some x to some y: it is an x or reads one through a
// derivative-carrying argument (see diffArgs), and some y is, or depends on it,
// the same way.
func findPath(nodes []*tile.Tensor, ys, xs []*tile.Tensor) []bool {
	// A recurrence's state depends on its next states, built after it, so
	// both passes repeat until nothing changes when the graph has any.
	next := func(t *tile.Tensor) *tile.Tensor {
		if r, ok := t.Op().(*tile.RecurrenceOp); ok && r.Next() != nil && r.Next().ID() < len(nodes) {
			return r.Next()
		}
		return nil
	}
	dep := make([]bool, len(nodes))
	for _, x := range xs {
		dep[x.ID()] = true
	}
	for changed := true; changed; {
		changed = false
		for _, t := range nodes {
			if dep[t.ID()] || !t.DType().IsFloat() {
				continue
			}
			if n := next(t); n != nil && dep[n.ID()] {
				dep[t.ID()], changed = true, true
				continue
			}
			for _, k := range diffArgs(t) {
				if dep[t.Args()[k].ID()] {
					dep[t.ID()], changed = true, true
					break
				}
			}
		}
	}
	on := make([]bool, len(nodes))
	for _, y := range ys {
		on[y.ID()] = dep[y.ID()]
	}
	for changed := true; changed; {
		changed = false
		for id := len(nodes) - 1; id >= 0; id-- {
			if !on[id] {
				continue
			}
			t := nodes[id]
			for _, k := range diffArgs(t) {
				if a := t.Args()[k]; dep[a.ID()] && !on[a.ID()] {
					on[a.ID()], changed = true, true
				}
			}
			if n := next(t); n != nil && dep[n.ID()] && !on[n.ID()] {
				on[n.ID()], changed = true, true
			}
		}
	}
	return on
}

// diffArgs returns the argument positions of t through which a derivative
// flows. Positions whose derivative is zero everywhere it exists (Floor, Ceil,
// Sign, comparisons, Select conditions, indices, compared operands of an
// equality contraction, casts from or to non-floating types) are left out, so
// the walk never visits what they feed. Node kinds grad does not know report
// every floating-point argument, so that supported rejects them instead of
// silently returning a zero gradient.
func diffArgs(t *tile.Tensor) []int {
	switch op := t.Op().(type) {
	case *tile.InputOp, *tile.VariableOp, *tile.ConstantOp, *tile.IotaOp, *tile.RandomOp, *tile.StopGradientOp:
		return nil
	case *tile.ContractionOp:
		return contractionDiffArgs(op)
	case *tile.ElementwiseOp:
		return elementwiseDiffArgs(op.Fn)
	case *tile.CastOp:
		if t.DType().IsFloat() && t.Args()[0].DType().IsFloat() {
			return []int{0}
		}
		return nil
	case *tile.ReshapeOp, *tile.TransposeOp, *tile.SliceOp, *tile.PadOp, *tile.BroadcastOp,
		*tile.GatherOp, *tile.ScatterAddOp, *tile.RecurrenceOp:
		return []int{0}
	case *tile.ConcatOp:
		all := make([]int, len(t.Args()))
		for i := range all {
			all[i] = i
		}
		return all
	}
	var float []int
	for i, a := range t.Args() {
		if a.DType().IsFloat() {
			float = append(float, i)
		}
	}
	return float
}

// supported reports an error for a path node whose derivative grad cannot
// build, before any gradient node is added to the graph.
func supported(t *tile.Tensor, onPath []bool) error {
	needed := false
	for _, k := range diffArgs(t) {
		needed = needed || onPath[t.Args()[k].ID()]
	}
	if !needed {
		return nil
	}
	switch op := t.Op().(type) {
	case *tile.ContractionOp:
		return contractionSupported(t, op)
	case *tile.ElementwiseOp, *tile.CastOp, *tile.ReshapeOp, *tile.TransposeOp, *tile.SliceOp,
		*tile.ConcatOp, *tile.PadOp, *tile.BroadcastOp, *tile.GatherOp, *tile.ScatterAddOp, *tile.RecurrenceOp:
		return nil
	}
	return fmt.Errorf("grad: no derivative rule for %s node %v", t.Op().Kind(), t)
}

// rule builds the cotangents of t's arguments from t's cotangent dy. want[k]
// says whether argument k needs one; a nil entry of the result means a zero
// contribution.
func rule(g *tile.Graph, t *tile.Tensor, dy *tile.Tensor, want []bool) ([]*tile.Tensor, error) {
	switch op := t.Op().(type) {
	case *tile.ContractionOp:
		return contractionRule(g, t, op, dy, want)
	case *tile.ElementwiseOp:
		return elementwiseRule(g, t, op.Fn, dy, want), nil
	case *tile.CastOp:
		return []*tile.Tensor{g.Cast(dy, t.Args()[0].DType())}, nil
	case *tile.RecurrenceOp:
		return []*tile.Tensor{recurrenceRule(g, t, dy)}, nil
	default:
		return shapeRule(g, t, dy, want)
	}
}

// walk holds the cotangents accumulated so far, by node ID.
type walk struct {
	g   *tile.Graph
	adj map[int]*tile.Tensor
}

// accumulate adds the contribution c to the cotangent of t. c must have t's
// dtype and shape; a mismatch is a defect of a rule and is reported as an
// error naming both.
func (w *walk) accumulate(t, c *tile.Tensor) error {
	if !c.Valid() {
		return fmt.Errorf("grad: building the cotangent of %v: %w", t, w.g.Err())
	}
	if c.DType() != t.DType() || !c.Shape().Equal(t.Shape()) {
		return fmt.Errorf("grad: internal error: cotangent %v does not match %v", c, t)
	}
	if prev := w.adj[t.ID()]; prev != nil {
		c = w.g.Add(prev, c)
	}
	w.adj[t.ID()] = c
	return nil
}

// zeros returns a zero tensor of t's dtype and shape, a broadcast scalar.
func zeros(g *tile.Graph, t *tile.Tensor) *tile.Tensor {
	return g.BroadcastTo(g.ScalarLike(t, 0), t.Shape())
}
