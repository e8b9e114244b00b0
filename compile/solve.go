package compile

import (
	"fmt"
	"math"
	"slices"

	"github.com/tartanml/tartan/kir"
	"github.com/tartanml/tartan/tile"
)

// lowerContraction turns a contraction into a nest whose output loops are the
// output dimensions themselves.
//
// An output access that is a plain index (O[i, j]) makes that index the
// output loop. A compound one (dI[n, y + i - 1, …] from a convolution
// gradient, dI[2*y + i] from a max-pool gradient) is solved for one of its
// indices v with coefficient a: a·v + rest = x_d gives v = x_d - rest for
// a = 1, rest - x_d for a = -1, and ⌊(x_d - rest)/a⌋ with the condition
// (x_d - rest) mod a = 0 otherwise (signs flipped for negative a). The index
// solved for is the one with the widest range, so that the reduction loops
// left over are the short ones (i rather than y above); for an assign
// aggregation it is the last in index order instead, which keeps "the last
// contribution in row-major index order wins". An output dimension left with
// no free index becomes an equality condition, and one that is not linear in
// its free indices (after substituting earlier solutions) too, with all its
// indices left as reduction loops.
//
// The indices not solved for become the reduction loops, in their order of
// first appearance, over the ranges tile.ContractionOp.Ranges derives. Every
// operand access and constraint that the loop ranges do not already keep in
// bounds becomes a Where condition, so the operand loads are in range
// whenever the conditions hold. CombEq under a sum selects the third operand
// or zero; under other aggregations the equality is a Where condition, since
// unequal points must contribute nothing at all. Its equality counts two
// NaNs as equal, unless an operand cannot be NaN (an integer, or a constant
// without NaN), where plain == says the same.
func lowerContraction(n *node, c *tile.ContractionOp) (*nest, error) {
	ns := &nest{shape: n.shape, dtype: n.dtype, agg: tile.Assign}
	argShapes := make([]tile.Shape, len(n.args))
	for i, a := range n.args {
		argShapes[i] = a.shape
	}
	ranges, err := c.Ranges(n.shape, argShapes)
	if err != nil {
		return nil, err
	}
	names := c.Indices()
	for _, nm := range names {
		if ranges[nm].Lo > ranges[nm].Hi {
			ns.body = constExpr(n.dtype, 0)
			return ns, nil
		}
	}
	for _, d := range n.shape {
		if d == 0 {
			ns.body = constExpr(n.dtype, 0)
			return ns, nil
		}
	}
	s := newSolver(n.shape, names, ranges, c.Agg)
	s.solve(c.Out)
	vars := s.kernelRanges()
	ns.reduce = s.loops()
	// conds collects the Where conditions, in kernel variables.
	var conds []kir.Cond
	addCond := func(x *kir.Ix, bound int) bool {
		lo, hi, ok := kir.Bounds(x, vars)
		if ok && lo >= 0 && hi < bound {
			return true
		}
		if ok && (hi < 0 || lo >= bound) {
			return false
		}
		key := fmt.Sprintf("%v<%d", x, bound)
		for _, c := range conds {
			if fmt.Sprintf("%v<%d", c.X, c.Bound) == key {
				return true
			}
		}
		conds = append(conds, kir.Cond{X: x, Bound: bound})
		return true
	}
	// Where the division conditions hold the divisions are exact, so
	// a·⌊N/a⌋ = N in every other expression: max-pool gradients read
	// I[x1] rather than I[i + 2·⌊(x1 - i)/2⌋].
	var facts []kir.Divisible
	for _, d := range s.divs {
		facts = append(facts, kir.Divisible{X: s.final(d.num, vars), C: d.c})
	}
	exact := func(x *kir.Ix) *kir.Ix { return kir.SimplifyAssuming(s.final(x, vars), vars, facts) }
	feasible := true
	for _, c := range s.mods {
		feasible = addCond(s.final(c.X, vars), c.Bound) && feasible
	}
	for _, c := range s.conds {
		feasible = addCond(exact(c.X), c.Bound) && feasible
	}
	for _, k := range c.Constraints {
		feasible = addCond(exact(s.affine(k.Expr)), k.Bound) && feasible
	}
	loads := make([]*kir.Expr, len(n.args))
	for i, a := range n.args {
		idx := make([]*kir.Ix, len(c.Access[i]))
		for d, e := range c.Access[i] {
			idx[d] = exact(s.affine(e))
			feasible = addCond(idx[d], a.shape[d]) && feasible
		}
		loads[i] = ref(a, idx)
	}
	if !feasible {
		// Some condition never holds: no point contributes.
		ns.reduce = nil
		ns.body = constExpr(n.dtype, 0)
		return ns, nil
	}
	if len(ns.reduce) > 0 {
		ns.agg = c.Agg
	}
	switch c.Comb {
	case tile.CombNone:
		ns.body = loads[0]
	case tile.CombMul:
		ns.body = apply(tile.Mul, n.dtype, loads[0], loads[1])
	case tile.CombAdd:
		ns.body = apply(tile.Add, n.dtype, loads[0], loads[1])
	case tile.CombEq:
		// Two NaNs compare equal (see tile.CombEq); when either operand
		// cannot be NaN, that is plain equality.
		plain := !mayBeNaN(n.args[0]) || !mayBeNaN(n.args[1])
		// Under a sum, or with a single point per output element, an
		// unequal point contributing zero is the same as not contributing.
		if c.Agg == tile.Sum || len(ns.reduce) == 0 {
			ns.body = apply(tile.Select, n.dtype, sameValue(loads[0], loads[1], plain), loads[2], constExpr(n.dtype, 0))
		} else {
			// Loads inside a condition must never fault: make them Fill.
			a, b := *loads[0], *loads[1]
			a.OOB, b.OOB = kir.Fill, kir.Fill
			ne := differentValue(&a, &b, plain)
			conds = append(conds, kir.Cond{X: kir.IxOfValue(ne), Bound: 1})
			ns.body = loads[2]
		}
	default:
		return nil, fmt.Errorf("invalid combination %d", c.Comb)
	}
	ns.where = conds
	return ns, nil
}

// mayBeNaN reports whether node n can hold a NaN: it is of a floating-point
// dtype and not a constant free of NaN.
func mayBeNaN(n *node) bool {
	if !n.dtype.IsFloat() {
		return false
	}
	c, ok := n.op.(*tile.ConstantOp)
	return !ok || slices.ContainsFunc(c.Value.Data, math.IsNaN)
}

// sameValue is CombEq's equality of a and b: a == b, or both NaN, which is
// a == b alone when plain.
func sameValue(a, b *kir.Expr, plain bool) *kir.Expr {
	eq := apply(tile.Eq, tile.Bool, a, b)
	if plain {
		return eq
	}
	return apply(tile.Or, tile.Bool, eq,
		apply(tile.And, tile.Bool, apply(tile.Ne, tile.Bool, a, a), apply(tile.Ne, tile.Bool, b, b)))
}

// differentValue is the negation of sameValue: a ≠ b and not both NaN.
func differentValue(a, b *kir.Expr, plain bool) *kir.Expr {
	ne := apply(tile.Ne, tile.Bool, a, b)
	if plain {
		return ne
	}
	return apply(tile.And, tile.Bool, ne,
		apply(tile.Or, tile.Bool, apply(tile.Eq, tile.Bool, a, a), apply(tile.Eq, tile.Bool, b, b)))
}

type division struct {
	num *kir.Ix
	c   int
}

// solver assigns contraction indices to kernel loop variables. While
// solving, index i is the placeholder variable rank+i; at the end the
// unsolved ones become reduction loops and the solved ones their solutions.
type solver struct {
	shape  tile.Shape
	names  []string
	pos    map[string]int
	ranges map[string]tile.Range
	agg    tile.Agg
	def    []*kir.Ix // solution of index i in output and placeholder variables
	conds  []kir.Cond
	// divs are the exact divisions made: num is a multiple of c wherever
	// the condition in mods holds.
	divs []division
	mods []kir.Cond
	// after solving:
	free   []int     // unsolved indices, in order: reduction loop k is names[free[k]]
	finals []*kir.Ix // placeholder substitution into kernel variables
}

func newSolver(shape tile.Shape, names []string, ranges map[string]tile.Range, agg tile.Agg) *solver {
	s := &solver{shape: shape, names: names, pos: map[string]int{}, ranges: ranges, agg: agg, def: make([]*kir.Ix, len(names))}
	for i, nm := range names {
		s.pos[nm] = i
	}
	return s
}

func (s *solver) placeholder(i int) *kir.Ix { return kir.IxOfVar(len(s.shape) + i) }

// outVars returns the ranges of the output variables only: placeholders are
// left unbounded while solving, so no simplification assumes a range that a
// solved index might not keep.
func (s *solver) outVars() []kir.Range {
	r := make([]kir.Range, len(s.shape))
	for d, n := range s.shape {
		r[d] = kir.Range{Lo: 0, Hi: n - 1}
	}
	return r
}

// affine converts a tile expression to placeholder variables.
func (s *solver) affine(e tile.Affine) *kir.Ix {
	x := kir.IxOfConst(e.Const)
	for _, t := range e.Terms {
		x = kir.IxSum(x, kir.IxTimes(s.placeholder(s.pos[t.Index]), t.Coef))
	}
	return x
}

// resolve substitutes the current solutions into x until only output
// variables and unsolved placeholders remain.
func (s *solver) resolve(x *kir.Ix) *kir.Ix {
	sub := make([]*kir.Ix, len(s.shape)+len(s.names))
	for i, d := range s.def {
		sub[len(s.shape)+i] = d
	}
	vars := s.outVars()
	for range len(s.names) + 1 {
		y := kir.SubstituteIx(x, sub, vars)
		if y.String() == x.String() {
			return y
		}
		x = y
	}
	return x
}

func (s *solver) solve(out []tile.Affine) {
	r := len(s.shape)
	done := make([]bool, r)
	for d, e := range out {
		if nm, ok := e.IsIndex(); ok && s.def[s.pos[nm]] == nil {
			s.def[s.pos[nm]] = kir.IxOfVar(d)
			done[d] = true
		}
	}
	vars := s.outVars()
	for d, e := range out {
		if done[d] {
			continue
		}
		E := s.resolve(s.affine(e))
		xd := kir.IxOfVar(d)
		coef, _, linear := kir.LinearForm(E, r+len(s.names))
		if linear && s.solvePair(E, xd, coef) {
			continue
		}
		best := -1
		if linear {
			for i := range s.names {
				a := coef[r+i]
				if a == 0 || s.def[i] != nil {
					continue
				}
				if best < 0 || s.better(i, a, best, coef[r+best]) {
					best = i
				}
			}
		}
		if best < 0 {
			// Equality condition: E - x_d = 0.
			diff := kir.Simplify(kir.IxSum(E, kir.IxTimes(xd, -1)), vars)
			s.conds = append(s.conds, kir.Cond{X: diff, Bound: 1})
			continue
		}
		a := coef[r+best]
		rest := kir.IxSum(E, kir.IxTimes(s.placeholder(best), -a))
		var num *kir.Ix
		if a > 0 {
			num = kir.Simplify(kir.IxSum(xd, kir.IxTimes(rest, -1)), vars)
		} else {
			num = kir.Simplify(kir.IxSum(rest, kir.IxTimes(xd, -1)), vars)
			a = -a
		}
		if a == 1 {
			s.def[best] = num
			continue
		}
		s.def[best] = kir.Simplify(kir.IxFloorDivBy(num, a), vars)
		s.mods = append(s.mods, kir.Cond{X: kir.Simplify(kir.IxModBy(num, a), vars), Bound: 1})
		s.divs = append(s.divs, division{num, a})
	}
	// Unsolved indices become reduction loops in order of appearance (an
	// index with a single value becomes that constant); the solved ones are
	// resolved into output and reduction variables.
	s.finals = make([]*kir.Ix, r+len(s.names))
	for i, nm := range s.names {
		switch rg := s.ranges[nm]; {
		case s.def[i] != nil:
		case rg.Lo == rg.Hi:
			s.finals[r+i] = kir.IxOfConst(rg.Lo)
		default:
			s.finals[r+i] = kir.IxOfVar(r + len(s.free))
			s.free = append(s.free, i)
		}
	}
	for i := range s.names {
		if s.def[i] != nil {
			s.finals[r+i] = s.resolveFinal(s.def[i])
		}
	}
}

// solvePair solves a·v + u + rest = x_d for both v and u when u (coefficient
// 1) ranges over exactly a consecutive values [lo, lo+a-1]: then
// v = ⌊(x_d - rest - lo)/a⌋ and u = (x_d - rest - lo) mod a + lo, with no
// condition and no loop left (a stride-2 pooling window of 2 read back by
// its gradient). Every point of the index space has u in its range, so
// nothing is lost.
func (s *solver) solvePair(E, xd *kir.Ix, coef []int) bool {
	if s.agg == tile.Assign {
		return false
	}
	r := len(s.shape)
	for vi := range s.names {
		a := coef[r+vi]
		if a < 2 || s.def[vi] != nil {
			continue
		}
		for ui, nm := range s.names {
			rg := s.ranges[nm]
			if ui == vi || coef[r+ui] != 1 || s.def[ui] != nil || rg.Hi-rg.Lo+1 != a {
				continue
			}
			rest := kir.IxSum(E, kir.IxSum(kir.IxTimes(s.placeholder(vi), -a), kir.IxTimes(s.placeholder(ui), -1)))
			num := kir.Simplify(kir.IxSum(kir.IxSum(xd, kir.IxTimes(rest, -1)), kir.IxOfConst(-rg.Lo)), s.outVars())
			s.def[vi] = kir.Simplify(kir.IxFloorDivBy(num, a), s.outVars())
			s.def[ui] = kir.Simplify(kir.IxSum(kir.IxModBy(num, a), kir.IxOfConst(rg.Lo)), s.outVars())
			return true
		}
	}
	return false
}

// resolveFinal expresses a solution in kernel variables, substituting the
// solutions of indices solved later (a solution only names indices that were
// unsolved when it was made, so this terminates).
func (s *solver) resolveFinal(x *kir.Ix) *kir.Ix {
	r := len(s.shape)
	x = s.resolve(x)
	sub := make([]*kir.Ix, r+len(s.names))
	for i := range s.names {
		if s.def[i] == nil {
			sub[r+i] = s.finals[r+i]
		}
	}
	// Unbounded ranges: the kernel's ranges are applied by final.
	return kir.SubstituteIx(x, sub, nil)
}

// better reports whether index i (coefficient a) is a better choice to solve
// for than index j (coefficient b).
func (s *solver) better(i, a, j, b int) bool {
	if s.agg == tile.Assign {
		return i > j
	}
	ei := s.ranges[s.names[i]].Hi - s.ranges[s.names[i]].Lo
	ej := s.ranges[s.names[j]].Hi - s.ranges[s.names[j]].Lo
	if ei != ej {
		return ei > ej
	}
	ui, uj := a == 1 || a == -1, b == 1 || b == -1
	if ui != uj {
		return ui
	}
	return i > j
}

// kernelRanges returns the ranges of the kernel's loop variables.
// (Indices with a single value are constants, not loops.)
func (s *solver) kernelRanges() []kir.Range {
	v := s.outVars()
	for _, i := range s.free {
		rg := s.ranges[s.names[i]]
		v = append(v, kir.Range{Lo: rg.Lo, Hi: rg.Hi})
	}
	return v
}

// loops returns the reduction loops.
func (s *solver) loops() []kir.Loop {
	var ls []kir.Loop
	for _, i := range s.free {
		rg := s.ranges[s.names[i]]
		ls = append(ls, kir.Loop{Name: s.names[i], Lo: rg.Lo, Hi: rg.Hi})
	}
	return ls
}

// final rewrites an expression in placeholder variables (and output
// variables) into kernel variables, simplified with the kernel's ranges.
func (s *solver) final(x *kir.Ix, vars []kir.Range) *kir.Ix {
	return kir.SubstituteIx(x, s.finals, vars)
}
