package kir

// Guard lowering: affine conditions become clipped loop bounds.
//
// A kernel's point conditions, its Where conditions and the in-range
// conditions of its Skip loads, are often affine in the loop variables: a
// padded window's 0 ≤ x + k − 1 < 32, a strided one's 0 ≤ 2·y + k − 1 < 32.
// Such a condition is a pair of linear inequalities, and for the innermost
// loop variable it reads, given the values of the loops outside, it holds on
// one interval of that variable. A loop nest that runs each loop only over
// the intersection of those intervals visits exactly the points where the
// conditions hold and needs no per-point check for them.

// AffineCond is the condition 0 ≤ Σ Coef[v]·v + Konst < Bound on variables
// numbered as Coef is indexed.
type AffineCond struct {
	Coef  []int
	Konst int
	Bound int
}

// Holds reports whether c holds at the variable values vals.
func (c *AffineCond) Holds(vals []int) bool {
	x := c.Konst
	for v, k := range c.Coef {
		x += k * vals[v]
	}
	return x >= 0 && x < c.Bound
}

// ClipBound is one bound of a clipped loop: the number N/Div rounded up
// (a lower bound) or down (an upper bound), N = Σ Coef[u]·u + Konst over
// the outer variables, Div > 0.
type ClipBound struct {
	Coef  []int
	Konst int
	Div   int
}

// Num returns N at the variable values vals.
func (b *ClipBound) Num(vals []int) int {
	n := b.Konst
	for u, k := range b.Coef {
		if k != 0 {
			n += k * vals[u]
		}
	}
	return n
}

// Clip is the clipped range of loop variable Var: at given values of the
// outer variables it runs over [max(Range.Lo, ⌈Lo[i]⌉), min(Range.Hi,
// ⌊Hi[j]⌋)], which is exactly where the Absorbed conditions hold.
type Clip struct {
	Var      int
	Range    Range
	Lo, Hi   []ClipBound
	Absorbed []int // indices into the conditions given to ClipLoop
}

// At returns the clipped range at the variable values vals (only the outer
// variables are read); lo > hi when it is empty.
func (c *Clip) At(vals []int) (lo, hi int) {
	lo, hi = c.Range.Lo, c.Range.Hi
	for i := range c.Lo {
		lo = max(lo, -floorDiv(-c.Lo[i].Num(vals), c.Lo[i].Div))
	}
	for i := range c.Hi {
		hi = min(hi, floorDiv(c.Hi[i].Num(vals), c.Hi[i].Div))
	}
	return lo, hi
}

// ClipLoop derives the clipped range of variable v, whose own range is r,
// from the conditions that read v and otherwise only variables for which
// outer is true. Those conditions are absorbed: the clipped range is
// exactly where they hold, so a loop over it needs no check for them. For
// a condition 0 ≤ a·v + S + k < B with a > 0 (S the outer part),
// v ≥ ⌈(−S − k)/a⌉ and v ≤ ⌊(B − 1 − S − k)/a⌋; with a < 0 the roles swap.
// Conditions that do not read v, or read a variable that is not outer,
// are left: they belong to another loop, or need a per-point check.
func ClipLoop(conds []AffineCond, v int, r Range, outer func(u int) bool) *Clip {
	c := &Clip{Var: v, Range: r}
next:
	for i := range conds {
		cd := &conds[i]
		if v >= len(cd.Coef) || cd.Coef[v] == 0 {
			continue
		}
		for u, k := range cd.Coef {
			if k != 0 && u != v && !outer(u) {
				continue next
			}
		}
		a := cd.Coef[v]
		// With N = S + k: 0 ≤ a·v + N ≤ B − 1.
		neg := make([]int, len(cd.Coef)) // −N's coefficients
		pos := make([]int, len(cd.Coef)) // N's
		for u, k := range cd.Coef {
			if u != v {
				neg[u], pos[u] = -k, k
			}
		}
		if a > 0 {
			// a·v ≥ −N and a·v ≤ B − 1 − N.
			c.Lo = append(c.Lo, ClipBound{neg, -cd.Konst, a})
			c.Hi = append(c.Hi, ClipBound{append([]int(nil), neg...), cd.Bound - 1 - cd.Konst, a})
		} else {
			// −a·v ≤ N and −a·v ≥ N − (B − 1).
			c.Hi = append(c.Hi, ClipBound{pos, cd.Konst, -a})
			c.Lo = append(c.Lo, ClipBound{append([]int(nil), pos...), cd.Konst - (cd.Bound - 1), -a})
		}
		c.Absorbed = append(c.Absorbed, i)
	}
	return c
}

// GuardSource says where a guard of a kernel comes from: Where condition
// Where (≥ 0), or dimension Dim of the Skip load Load.
type GuardSource struct {
	Where int
	Load  *Expr
	Dim   int
}

// Guards returns the affine point conditions of kernel k of program p and
// where each comes from: the Where conditions that are affine once
// simplified, then, for every Skip load of the Body, each dimension whose
// index is affine and not provably in range (Bounds), as 0 ≤ index <
// extent. A Skip load skips the point where it leaves its buffer, so its
// in-range conditions are point conditions like the Where ones. Other
// conditions (modular, or reading loaded values) are not listed.
func Guards(p *Program, k *Kernel) ([]AffineCond, []GuardSource) {
	vars := k.VarRanges()
	nv := len(vars)
	var conds []AffineCond
	var srcs []GuardSource
	for i, c := range k.Where {
		if coef, konst, ok := LinearForm(Simplify(c.X, vars), nv); ok {
			conds = append(conds, AffineCond{coef, konst, c.Bound})
			srcs = append(srcs, GuardSource{Where: i, Dim: -1})
		}
	}
	seen := map[*Expr]bool{}
	var walk func(e *Expr)
	var walkIx func(x *Ix)
	walkIx = func(x *Ix) {
		if x == nil {
			return
		}
		walkIx(x.A)
		walkIx(x.B)
		if x.E != nil {
			walk(x.E)
		}
	}
	walk = func(e *Expr) {
		if e == nil || seen[e] {
			return
		}
		seen[e] = true
		for _, a := range e.Args {
			walk(a)
		}
		for _, x := range e.Index {
			walkIx(x)
		}
		if e.Op != Load || e.OOB != Skip {
			return
		}
		shape := p.Buffers[e.Buf].Shape
		for d, x := range e.Index {
			s := Simplify(x, vars)
			if lo, hi, ok := Bounds(s, vars); ok && lo >= 0 && hi < shape[d] {
				continue
			}
			if coef, konst, ok := LinearForm(s, nv); ok {
				conds = append(conds, AffineCond{coef, konst, shape[d]})
				srcs = append(srcs, GuardSource{Where: -1, Load: e, Dim: d})
			}
		}
	}
	walk(k.Body)
	return conds, srcs
}

// ClipKernelLoop is ClipLoop on the guards of kernel k (see Guards) for its
// loop variable v, the variables for which outer is true being fixed
// outside the loop. Clip.Absorbed indexes the returned guards.
func ClipKernelLoop(p *Program, k *Kernel, v int, outer func(u int) bool) (*Clip, []AffineCond, []GuardSource) {
	conds, srcs := Guards(p, k)
	return ClipLoop(conds, v, k.VarRanges()[v], outer), conds, srcs
}
