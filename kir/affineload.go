package kir

import "slices"

// AffineLoad is a load, 0 wherever it or one of its conditions fails, whose
// element offset and conditions are all affine in the kernel's loop
// variables: the offset is Σ Coef[v]·v + Konst, and the load reads where
// every guard holds. A matrix-product operand of this form (the im2col view
// of a padded or strided convolution) can be staged from its affine forms
// split by loop group: the part over a tile row's loops, fixed over the
// whole reduction, and the part over the reduction loops, shared by the
// rows at the same reduction index.
type AffineLoad struct {
	Buf    int
	Coef   []int
	Konst  int
	Guards []AffineCond
}

// AffineLoadOf returns e with the conditions conds as an AffineLoad, or
// false when e is not a load that is 0 out of range (a Skip load, a Fill
// load of 0, or one the loop ranges keep in range) with affine indices, or
// a condition is not affine. Guards are only the conditions, and the
// in-range conditions of the indices, that the loop ranges do not prove,
// each affine form once.
func AffineLoadOf(p *Program, k *Kernel, e *Expr, conds []Cond) (*AffineLoad, bool) {
	if e == nil || e.Op != Load || e.Buf < 0 || e.Buf >= len(p.Buffers) {
		return nil, false
	}
	b := p.Buffers[e.Buf]
	if len(e.Index) != len(b.Shape) {
		return nil, false
	}
	vars := k.VarRanges()
	a := &AffineLoad{Buf: e.Buf}
	guard := func(x *Ix, bound int) bool {
		if lo, hi, ok := Bounds(x, vars); ok && lo >= 0 && hi < bound {
			return true
		}
		coef, konst, ok := LinearForm(Simplify(x, vars), len(vars))
		if !ok {
			return false
		}
		// The same form twice (a padded window's in-range condition is
		// also a Where condition) keeps the tighter bound.
		for i, g := range a.Guards {
			if g.Konst == konst && slices.Equal(g.Coef, coef) {
				a.Guards[i].Bound = min(g.Bound, bound)
				return true
			}
		}
		a.Guards = append(a.Guards, AffineCond{Coef: coef, Konst: konst, Bound: bound})
		return true
	}
	for d, x := range e.Index {
		if !guard(x, b.Shape[d]) {
			return nil, false
		}
	}
	if len(a.Guards) > 0 && e.OOB == Fill && e.Value != 0 {
		return nil, false
	}
	for _, c := range conds {
		if !guard(c.X, c.Bound) {
			return nil, false
		}
	}
	coef, konst, ok := LinearForm(Simplify(Offset(e.Index, b.Shape, vars), vars), len(vars))
	if !ok {
		return nil, false
	}
	a.Coef, a.Konst = coef, konst
	return a, true
}
