package compile

import (
	"fmt"
	"slices"

	"github.com/tartanml/tartan/tile"
)

// Sub-pixel split of strided sums (pass 2b, after simplify).
//
// The input gradient of a convolution or pooling of stride a writes
// dI[…, a·y + k + c, …] += seed[…, y, …]·W[k, …]. Lowered as it is, each
// output point x loops over every k and keeps those with (x - k - c) mod a = 0:
// a of every a² taps of a 2-D stride-2 gradient do work and the rest are
// skipped by a guard, a fourfold waste that no executor can schedule away.
//
// The split writes x = a·u + p and computes each phase p as its own sum: k
// keeps only the residue r with r ≡ p - c (mod a), k = a·j + r, and y = u - j +
// (p - c - r)/a. Every phase is a plain contraction over its own output
// P_p[…, u, …] with affine accesses only, and the result interleaves the
// phases: concatenated along a new axis after u and reshaped, so that x = a·u
// + p in row-major order.
//
// A dimension splits when its access is a·y + s·k + c with a ≥ 2, s = ±1,
// k ranging over more than a values (overlapping windows: narrower ones
// reach each point from one tap at most, and lose nothing to the guard), y
// the wider-ranging index (the one lowering would divide by a), y and k in
// no other output dimension, and the output extent a multiple of a; at most
// 16 phases in all. Only sums split: for them the order in which
// terms reach a point does not matter beyond floating-point reassociation.
func subpixel(g *graph) *graph {
	var nodes []*node
	changed := false
	for _, n := range g.nodes {
		parts := splitPlan(n)
		if parts == nil {
			n.id = len(nodes)
			nodes = append(nodes, n)
			continue
		}
		changed = true
		nodes = parts.emit(n, nodes)
	}
	if !changed {
		return g
	}
	g.nodes = nodes
	return g
}

// splitDim is one output dimension to split.
type splitDim struct {
	d    int    // output dimension
	a    int    // stride
	y, k string // the strided index and the tap index
	s    int    // the tap's coefficient, ±1
	c    int    // the access's constant
}

type splitPlanT struct {
	c    *tile.ContractionOp
	dims []splitDim
	used map[string]bool
}

// splitPlan returns how to split n, or nil when it does not split.
func splitPlan(n *node) *splitPlanT {
	c, ok := n.op.(*tile.ContractionOp)
	if !ok || c.Agg != tile.Sum || n.dtype == tile.Bool {
		return nil
	}
	argShapes := make([]tile.Shape, len(n.args))
	for i, a := range n.args {
		argShapes[i] = a.shape
	}
	ranges, err := c.Ranges(n.shape, argShapes)
	if err != nil {
		return nil
	}
	// outUses counts the output dimensions each index appears in.
	outUses := map[string]int{}
	for _, e := range c.Out {
		for _, t := range e.Terms {
			outUses[t.Index]++
		}
	}
	width := func(i string) int { return ranges[i].Hi - ranges[i].Lo }
	p := &splitPlanT{c: c, used: map[string]bool{}}
	for _, i := range c.Indices() {
		p.used[i] = true
	}
	phases := 1
	for d, e := range c.Out {
		if len(e.Terms) == 0 || len(e.Terms) > 2 {
			continue
		}
		sd := splitDim{d: d, c: e.Const}
		for _, t := range e.Terms {
			switch {
			case t.Coef >= 2 && sd.y == "":
				sd.y, sd.a = t.Index, t.Coef
			case (t.Coef == 1 || t.Coef == -1) && sd.k == "":
				sd.k, sd.s = t.Index, t.Coef
			default:
				sd.a = 0
			}
		}
		if sd.a < 2 || sd.y == "" || outUses[sd.y] != 1 || (sd.k != "" && outUses[sd.k] != 1) {
			continue
		}
		// Windows no wider than the stride (2×2 pooling of stride 2, 1×1
		// convolutions) reach each point from at most one tap: nothing to
		// gain. Taps over a wider range than y are solved for instead of y.
		if sd.k == "" || width(sd.k)+1 <= sd.a || width(sd.k) > width(sd.y) {
			continue
		}
		if n.shape[d]%sd.a != 0 || phases*sd.a > 16 {
			continue
		}
		phases *= sd.a
		p.dims = append(p.dims, sd)
	}
	if len(p.dims) == 0 {
		return nil
	}
	return p
}

// fresh returns an index name not used by the contraction.
func (p *splitPlanT) fresh(base string) string {
	for i := 0; ; i++ {
		name := fmt.Sprintf("%s%d", base, i)
		if !p.used[name] {
			p.used[name] = true
			return name
		}
	}
}

// substitute replaces indices in e by expressions.
func substitute(e tile.Affine, m map[string]tile.Affine) tile.Affine {
	out := tile.Lit(e.Const)
	for _, t := range e.Terms {
		if r, ok := m[t.Index]; ok {
			out = out.Plus(r.Times(t.Coef))
		} else {
			out = out.Plus(tile.Affine{Terms: []tile.Term{t}})
		}
	}
	return out
}

func mod(a, m int) int { return ((a % m) + m) % m }

// emit appends the phases of n, their interleaving and a node standing for
// n to nodes, and turns n into that last node (so that its users and n's
// place as an output or update follow).
func (p *splitPlanT) emit(n *node, nodes []*node) []*node {
	add := func(x *node) *node {
		x.id = len(nodes)
		x.src = n.src
		nodes = append(nodes, x)
		return x
	}
	partShape := slices.Clone(n.shape)
	for _, sd := range p.dims {
		partShape[sd.d] /= sd.a
	}
	// Names of the new indices, per split dimension.
	us, js := make([]string, len(p.dims)), make([]string, len(p.dims))
	for i := range p.dims {
		us[i] = p.fresh("u")
		js[i] = p.fresh("j")
	}
	// phase builds the part of phase ph (one residue per split dimension).
	phase := func(ph []int) *node {
		m := map[string]tile.Affine{}
		out := slices.Clone(p.c.Out)
		for i, sd := range p.dims {
			pp := ph[i]
			u := tile.Ix(us[i])
			out[sd.d] = u
			r := mod(sd.s*(pp-sd.c), sd.a)
			q := (pp - sd.c - sd.s*r) / sd.a
			j := tile.Ix(js[i])
			m[sd.k] = j.Times(sd.a).AddConst(r)
			m[sd.y] = u.Minus(j.Times(sd.s)).AddConst(q)
		}
		c := &tile.ContractionOp{Agg: p.c.Agg, Comb: p.c.Comb, Out: out}
		for _, acc := range p.c.Access {
			na := make([]tile.Affine, len(acc))
			for d, e := range acc {
				na[d] = substitute(e, m)
			}
			c.Access = append(c.Access, na)
		}
		for _, k := range p.c.Constraints {
			c.Constraints = append(c.Constraints, tile.Constraint{Expr: substitute(k.Expr, m), Bound: k.Bound})
		}
		return add(&node{op: c, args: n.args, dtype: n.dtype, shape: slices.Clone(partShape)})
	}
	// Each part gets a unit axis after every split dimension, so that the
	// phases concatenate there; the shape of a part then is partShape with
	// those axes inserted.
	unitShape := func(s tile.Shape) tile.Shape {
		var out tile.Shape
		k := 0
		for d, e := range s {
			out = append(out, e)
			if k < len(p.dims) && p.dims[k].d == d {
				out = append(out, 1)
				k++
			}
		}
		return out
	}
	// axisOf returns the position of the unit axis of split dimension i.
	axisOf := func(i int) int { return p.dims[i].d + i + 1 }
	// build interleaves the phases of split dimensions from i on, with the
	// phases of dimensions before i fixed in ph.
	var build func(i int, ph []int) *node
	build = func(i int, ph []int) *node {
		if i == len(p.dims) {
			part := phase(ph)
			shape := unitShape(partShape)
			return add(&node{op: &tile.ReshapeOp{}, args: []*node{part}, dtype: n.dtype, shape: shape})
		}
		var xs []*node
		for r := range p.dims[i].a {
			xs = append(xs, build(i+1, append(slices.Clone(ph), r)))
		}
		// The result has phases along the unit axes of dimensions ≥ i:
		// shape with extent a at those, 1 before.
		shape := slices.Clone(xs[0].shape)
		shape[axisOf(i)] = p.dims[i].a
		return add(&node{op: &tile.ConcatOp{Axis: axisOf(i)}, args: xs, dtype: n.dtype, shape: shape})
	}
	all := build(0, nil)
	// n becomes the reshape of the interleaved phases to its own shape.
	n.op, n.args = &tile.ReshapeOp{}, []*node{all}
	n.id = len(nodes)
	return append(nodes, n)
}
