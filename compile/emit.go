package compile

import (
	"fmt"
	"sort"

	"github.com/tartanml/tartan/kir"
	"github.com/tartanml/tartan/tile"
)

// kern is a kernel under construction. Until memory planning its loads and
// output name values (node ids, or copy ids beyond the nodes), not buffers.
type kern struct {
	k     *kir.Kernel
	value int
	nodes []*node // the graph nodes it computes, for Source
	order int     // position in the graph's topological order
	copy  bool    // a copy added for an output or update
	reads map[int]bool
}

// emitter builds one kernel's expressions, inlining every node without a
// buffer into the expression that reads it.
type emitter struct {
	f    *fusion
	vars []kir.Range
	// accFor is the contraction whose value at the output point is the
	// accumulator (in an Epilogue), or -1.
	accFor  int
	accUsed bool
	used    map[int]bool // inlined nodes
	err     error
	// facts are intervals that index expressions (keyed by their printed
	// form) are known to lie in, inside the select branch being emitted.
	facts map[string]interval
}

// interval is a possibly half-open integer interval.
type interval struct {
	lo, hi       int
	hasLo, hasHi bool
}

// bounds returns an interval of x's values from the loop ranges and the
// facts in force.
func (em *emitter) bounds(x *kir.Ix) (lo, hi int, ok bool) {
	lo, hi, ok = kir.Bounds(x, em.vars)
	base, k := splitConst(x)
	f, known := em.facts[base]
	if !known {
		return lo, hi, ok
	}
	f.lo, f.hi = f.lo+k, f.hi+k
	if !ok {
		if !f.hasLo || !f.hasHi {
			return 0, 0, false
		}
		return f.lo, f.hi, true
	}
	if f.hasLo {
		lo = max(lo, f.lo)
	}
	if f.hasHi {
		hi = min(hi, f.hi)
	}
	return lo, hi, true
}

// splitConst splits a normalized index into the key of its non-constant
// part and its constant, so that facts about x - 3 apply to x + 1.
func splitConst(x *kir.Ix) (string, int) {
	if x.Op == kir.IxAdd && x.B.Op == kir.IxConst {
		return x.A.String(), x.B.C
	}
	if x.Op == kir.IxConst {
		return "", x.C
	}
	return x.String(), 0
}

// fact returns the key and interval stating lo ≤ x ≤ hi.
func fact(x *kir.Ix, lo, hi int, hasLo, hasHi bool) (string, interval) {
	key, k := splitConst(x)
	return key, interval{lo: lo - k, hi: hi - k, hasLo: hasLo, hasHi: hasHi}
}

// assume runs f with the given facts added, restoring the previous ones.
func (em *emitter) assume(fs map[string]interval, f func()) {
	if len(fs) == 0 {
		f()
		return
	}
	old := em.facts
	em.facts = map[string]interval{}
	for k, v := range old {
		em.facts[k] = v
	}
	for k, v := range fs {
		cur, ok := em.facts[k]
		if !ok {
			em.facts[k] = v
			continue
		}
		if v.hasLo && (!cur.hasLo || v.lo > cur.lo) {
			cur.lo, cur.hasLo = v.lo, true
		}
		if v.hasHi && (!cur.hasHi || v.hi < cur.hi) {
			cur.hi, cur.hasHi = v.hi, true
		}
		em.facts[k] = cur
	}
	f()
	em.facts = old
}

// condFacts returns the facts that hold where every condition holds.
func condFacts(cs []kir.Cond) map[string]interval {
	fs := map[string]interval{}
	for _, c := range cs {
		key, f := fact(c.X, 0, c.Bound-1, true, true)
		if cur, ok := fs[key]; ok {
			f.lo, f.hi = max(f.lo, cur.lo), min(f.hi, cur.hi)
		}
		fs[key] = f
	}
	return fs
}

// selectFacts returns the facts a select condition built by lowerConcat or
// guard establishes for its true and false branches: i64(X) < c and
// i64(X) >= c, possibly joined by And (whose false branch says nothing).
func (em *emitter) selectFacts(cond *kir.Expr, sub []*kir.Ix) (yes, no map[string]interval) {
	yes, no = map[string]interval{}, map[string]interval{}
	var walk func(e *kir.Expr, top bool)
	walk = func(e *kir.Expr, top bool) {
		if e.Op != kir.Apply {
			return
		}
		if e.Fn == tile.And {
			walk(e.Args[0], false)
			walk(e.Args[1], false)
			return
		}
		a, b := e.Args[0], e.Args[1]
		if a.Op != kir.IndexValue || b.Op != kir.Const || (e.Fn != tile.Lt && e.Fn != tile.Ge) {
			return
		}
		x := em.ix(a.Index[0], sub)
		c := int(b.Value)
		add := func(m map[string]interval, lt bool) {
			key, f := fact(x, c, c-1, !lt, lt)
			cur := m[key]
			if lt {
				cur.hi, cur.hasHi = f.hi, true
			} else {
				cur.lo, cur.hasLo = f.lo, true
			}
			m[key] = cur
		}
		add(yes, e.Fn == tile.Lt)
		if top {
			add(no, e.Fn != tile.Lt)
		}
	}
	walk(cond, true)
	return yes, no
}

// emitKernels is pass 4's construction half: one kernel per node that fuse
// stored and that is computed (not a leaf), in topological order.
func emitKernels(f *fusion) ([]*kern, error) {
	var ks []*kern
	for _, m := range f.g.nodes {
		if !f.mat[m.id] || f.nests[m.id] == nil || isLeaf(m) {
			continue
		}
		k, err := f.kernel(m)
		if err != nil {
			return nil, fmt.Errorf("compile: graph %q: node %v: %w", f.g.name, m, err)
		}
		k.order = m.id
		ks = append(ks, k)
	}
	return ks, nil
}

func (f *fusion) kernel(m *node) (*kern, error) {
	ns := f.nests[m.id]
	base := ns
	hosted := f.hosted[m.id]
	if hosted >= 0 {
		base = f.nests[hosted]
	}
	em := &emitter{f: f, vars: base.ranges(), accFor: -1, used: map[int]bool{}}
	body := em.expr(base.body, nil, false)
	where, feasible := em.conds(base.where, nil)
	k := &kir.Kernel{Out: m.id, Shape: m.shape.Clone(), Reduce: append([]kir.Loop(nil), base.reduce...),
		Agg: base.agg, Where: where, Body: body}
	if !feasible {
		k.Reduce, k.Agg, k.Where, k.Body = nil, tile.Assign, nil, constExpr(base.dtype, 0)
	}
	nodes := []*node{m}
	if hosted >= 0 {
		ep := &emitter{f: f, vars: ns.ranges(), accFor: hosted, used: em.used}
		k.Epilogue = ep.guarded(ns, nil, false)
		if ep.err == nil && !ep.accUsed {
			ep.err = fmt.Errorf("fused contraction %v is not read by its epilogue", f.g.nodes[hosted])
		}
		if ep.err != nil {
			return nil, ep.err
		}
		nodes = append(nodes, f.g.nodes[hosted])
	}
	if em.err != nil {
		return nil, em.err
	}
	ids := make([]int, 0, len(em.used))
	for id := range em.used {
		ids = append(ids, id)
	}
	sort.Ints(ids)
	for _, id := range ids {
		nodes = append(nodes, f.g.nodes[id])
	}
	sort.Slice(nodes, func(i, j int) bool { return nodes[i].id < nodes[j].id })
	k.Source = describeSources(nodes)
	return &kern{k: k, value: m.id, nodes: nodes}, nil
}

// guarded returns node ns's value at index sub (nil: the identity), wrapped
// in a select that yields 0 where the node's own Where conditions fail.
func (em *emitter) guarded(ns *nest, sub []*kir.Ix, guarded bool) *kir.Expr {
	conds, feasible := em.conds(ns.where, sub)
	if !feasible {
		return constExpr(ns.dtype, 0)
	}
	var inner *kir.Expr
	em.assume(condFacts(conds), func() { inner = em.expr(ns.body, sub, guarded || len(conds) > 0) })
	if g := em.guard(conds); g != nil {
		return apply(tile.Select, ns.dtype, g, inner, constExpr(ns.dtype, 0))
	}
	return inner
}

// conds substitutes and simplifies conditions, dropping those the loop
// ranges already ensure. feasible is false when one can never hold. Facts
// are not used: a condition a fact implies still makes the expression it
// guards "guarded" (its loads Fill), since kir evaluates both branches of a
// select; only the select itself (guard) can be left out.
func (em *emitter) conds(cs []kir.Cond, sub []*kir.Ix) (out []kir.Cond, feasible bool) {
	for _, c := range cs {
		x := em.ix(c.X, sub)
		lo, hi, ok := kir.Bounds(x, em.vars)
		switch {
		case ok && lo >= 0 && hi < c.Bound:
			continue
		case ok && (hi < 0 || lo >= c.Bound):
			return nil, false
		}
		out = append(out, kir.Cond{X: x, Bound: c.Bound})
	}
	return out, true
}

// guard returns a bool expression true where every condition holds, or nil
// when the loop ranges and the facts in force imply them all.
func (em *emitter) guard(cs []kir.Cond) *kir.Expr {
	var g *kir.Expr
	and := func(e *kir.Expr) {
		if g == nil {
			g = e
		} else {
			g = apply(tile.And, tile.Bool, g, e)
		}
	}
	for _, c := range cs {
		lo, hi, ok := em.bounds(c.X)
		iv := indexValue(tile.Int64, c.X)
		if !ok || lo < 0 {
			and(apply(tile.Ge, tile.Bool, iv, constExpr(tile.Int64, 0)))
		}
		if !ok || hi >= c.Bound {
			and(apply(tile.Lt, tile.Bool, iv, constExpr(tile.Int64, float64(c.Bound))))
		}
	}
	return g
}

// ix substitutes sub (nil: identity) for the variables of x, resolves the
// expressions of loaded indices, and simplifies with the kernel's ranges.
func (em *emitter) ix(x *kir.Ix, sub []*kir.Ix) *kir.Ix {
	var walk func(x *kir.Ix) *kir.Ix
	walk = func(x *kir.Ix) *kir.Ix {
		switch x.Op {
		case kir.IxVar:
			if sub != nil {
				if x.Var >= len(sub) {
					em.fail(fmt.Errorf("index variable %d out of %d", x.Var, len(sub)))
					return kir.IxOfConst(0)
				}
				return sub[x.Var]
			}
			return x
		case kir.IxAdd:
			return kir.IxSum(walk(x.A), walk(x.B))
		case kir.IxMul, kir.IxFloorDiv, kir.IxMod:
			return &kir.Ix{Op: x.Op, A: walk(x.A), C: x.C}
		case kir.IxValue:
			return kir.IxOfValue(em.expr(x.E, sub, true))
		}
		return x
	}
	return kir.Simplify(walk(x), em.vars)
}

func (em *emitter) fail(err error) {
	if em.err == nil {
		em.err = err
	}
}

// expr rewrites a nest expression at index sub into kernel form. In guarded
// mode the result may be evaluated at points where it is not needed (a
// select branch not taken), so every load that might be out of range
// becomes a Fill load.
func (em *emitter) expr(e *kir.Expr, sub []*kir.Ix, guarded bool) *kir.Expr {
	switch e.Op {
	case kir.Load:
		return em.load(e, sub, guarded)
	case kir.Const:
		c := *e
		return &c
	case kir.Acc:
		em.fail(fmt.Errorf("accumulator inside a nest"))
		return constExpr(e.DType, 0)
	}
	out := &kir.Expr{Op: e.Op, DType: e.DType, Fn: e.Fn, Stream: e.Stream, Value: e.Value}
	if e.Op == kir.Apply && e.Fn == tile.Select {
		yes, no := em.selectFacts(e.Args[0], sub)
		out.Args = []*kir.Expr{em.expr(e.Args[0], sub, guarded), nil, nil}
		em.assume(yes, func() { out.Args[1] = em.expr(e.Args[1], sub, guarded) })
		em.assume(no, func() { out.Args[2] = em.expr(e.Args[2], sub, guarded) })
		return out
	}
	for _, a := range e.Args {
		out.Args = append(out.Args, em.expr(a, sub, guarded))
	}
	for _, x := range e.Index {
		out.Index = append(out.Index, em.ix(x, sub))
	}
	return out
}

func (em *emitter) inRange(idx []*kir.Ix, shape tile.Shape) bool {
	for d, x := range idx {
		if lo, hi, ok := kir.Bounds(x, em.vars); !ok || lo < 0 || hi >= shape[d] {
			return false
		}
	}
	return true
}

func isIdentity(idx []*kir.Ix) bool {
	for d, x := range idx {
		if x.Op != kir.IxVar || x.Var != d {
			return false
		}
	}
	return true
}

func (em *emitter) load(e *kir.Expr, sub []*kir.Ix, guarded bool) *kir.Expr {
	m := em.f.g.nodes[e.Buf]
	idx := make([]*kir.Ix, len(e.Index))
	for d, x := range e.Index {
		idx[d] = em.ix(x, sub)
	}
	if m.id == em.accFor {
		if !isIdentity(idx) || len(idx) != len(em.vars) {
			em.fail(fmt.Errorf("fused contraction %v is read away from the output point", m))
		}
		em.accUsed = true
		return &kir.Expr{Op: kir.Acc, DType: m.dtype}
	}
	if em.f.mat[m.id] {
		out := &kir.Expr{Op: kir.Load, DType: m.dtype, Buf: m.id, Index: idx}
		switch {
		case e.OOB == kir.Fill:
			out.OOB, out.Value = kir.Fill, e.Value
		case guarded && !em.inRange(idx, m.shape):
			out.OOB = kir.Fill
		}
		return out
	}
	ns := em.f.nests[m.id]
	if ns == nil || len(ns.reduce) > 0 {
		em.fail(fmt.Errorf("node %v has no buffer and cannot be inlined", m))
		return constExpr(e.DType, 0)
	}
	em.used[m.id] = true
	var rangeConds []kir.Cond
	if e.OOB == kir.Fill {
		for d, x := range idx {
			if lo, hi, ok := kir.Bounds(x, em.vars); !ok || lo < 0 || hi >= m.shape[d] {
				rangeConds = append(rangeConds, kir.Cond{X: x, Bound: m.shape[d]})
			}
		}
	}
	var v *kir.Expr
	em.assume(condFacts(rangeConds), func() { v = em.guarded(ns, idx, guarded || len(rangeConds) > 0) })
	if g := em.guard(rangeConds); g != nil {
		v = apply(tile.Select, m.dtype, g, v, constExpr(m.dtype, e.Value))
	}
	return v
}
