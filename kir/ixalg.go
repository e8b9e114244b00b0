package kir

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/tartanml/tartan/tile"
)

// Range is the inclusive integer interval [Lo, Hi]; Lo > Hi is empty.
type Range struct{ Lo, Hi int }

// VarRanges returns the range of every loop variable of k, output loops
// first: output loop d runs over [0, Shape[d]-1] and each reduction loop over
// its own range.
func (k *Kernel) VarRanges() []Range {
	r := make([]Range, 0, k.NumVars())
	for _, d := range k.Shape {
		r = append(r, Range{0, d - 1})
	}
	for _, l := range k.Reduce {
		r = append(r, Range{l.Lo, l.Hi})
	}
	return r
}

// Index expression constructors. They build the node as asked, without
// simplification; Simplify brings a tree to normal form.

// IxOfVar returns loop variable v.
func IxOfVar(v int) *Ix { return &Ix{Op: IxVar, Var: v} }

// IxOfConst returns the constant c.
func IxOfConst(c int) *Ix { return &Ix{Op: IxConst, C: c} }

// IxSum returns a + b.
func IxSum(a, b *Ix) *Ix { return &Ix{Op: IxAdd, A: a, B: b} }

// IxTimes returns a · c.
func IxTimes(a *Ix, c int) *Ix { return &Ix{Op: IxMul, A: a, C: c} }

// IxFloorDivBy returns ⌊a / c⌋; c must be positive.
func IxFloorDivBy(a *Ix, c int) *Ix { return &Ix{Op: IxFloorDiv, A: a, C: c} }

// IxModBy returns a mod c (in [0, c)); c must be positive.
func IxModBy(a *Ix, c int) *Ix { return &Ix{Op: IxMod, A: a, C: c} }

// IxOfValue returns the integer value of the expression e.
func IxOfValue(e *Expr) *Ix { return &Ix{Op: IxValue, E: e} }

// Simplify returns x in normal form, using the loop variable ranges vars
// (indexed by variable number; variables beyond len(vars) are unbounded) to
// remove floor divisions and modulos that cannot change their argument.
//
// The normal form is what package compile emits for every index:
//
//   - a left-nested chain of IxAdd over terms, then one trailing IxConst
//     when the constant is not zero (a lone IxConst when there are no terms);
//   - each term is an atom, or IxMul(atom, C) with C ≠ 0, 1;
//   - atoms are IxVar (ascending variable numbers first), then IxFloorDiv,
//     IxMod and IxValue nodes, each at most once; the argument of a
//     FloorDiv or Mod atom is itself in normal form, its divisor is at least
//     2, and it cannot be simplified away given the ranges;
//   - no pair k·(X mod c) + k·c·⌊X/c⌋ remains (it is k·X).
//
// So an index that is affine in the loop variables is exactly
// c₀·v₀ + c₁·v₁ + … + k in this shape, which LinearForm reads back.
func Simplify(x *Ix, vars []Range) *Ix {
	return toLin(x, vars).recombine(vars).ix()
}

// Divisible states that X is a multiple of C (C ≥ 2) at every point where
// an expression simplified with it is used, as a Where condition
// 0 ≤ X mod C < 1 guarantees for the kernel's body and other conditions.
type Divisible struct {
	X *Ix
	C int
}

// SimplifyAssuming is Simplify that also uses divisibility facts: where X is
// a multiple of C, k·⌊X/C⌋ is (k/C)·X whenever C divides k. It must not be
// applied to the condition that establishes a fact.
func SimplifyAssuming(x *Ix, vars []Range, facts []Divisible) *Ix {
	l := toLin(x, vars).recombine(vars)
	if len(facts) == 0 {
		return l.ix()
	}
	// ⌊X/C⌋ normalizes to q + ⌊r/C⌋ with X = C·q + r; r is then a
	// multiple of C as well, so ⌊r/C⌋ = r/C.
	keys := map[string]lin{}
	for _, f := range facts {
		if f.C < 2 {
			continue
		}
		for _, t := range toLin(IxFloorDivBy(f.X, f.C), vars).terms {
			if t.a.op == IxFloorDiv && t.a.c == f.C {
				keys[t.a.key] = t.a.arg
			}
		}
	}
	var out lin
	out.c = l.c
	for _, t := range l.terms {
		if arg, ok := keys[t.a.key]; ok && t.a.op == IxFloorDiv && t.k%t.a.c == 0 {
			out = out.add(arg.scale(t.k / t.a.c))
			continue
		}
		out = out.add(lin{terms: []lterm{t}})
	}
	return out.recombine(vars).ix()
}

// Bounds returns an interval containing every value x takes when each loop
// variable v stays within vars[v]. ok is false when x is unbounded, such as
// when it depends on a loaded value (IxValue) or on a variable without a
// range.
func Bounds(x *Ix, vars []Range) (lo, hi int, ok bool) {
	return toLin(x, vars).bounds(vars)
}

// LinearForm reports whether x is affine in the loop variables and, if so,
// returns the coefficient of each of the nvars variables and the constant.
// It reads x as written; call Simplify or Offset first to expose affine
// structure hidden in floor divisions and modulos.
func LinearForm(x *Ix, nvars int) (coef []int, konst int, ok bool) {
	coef = make([]int, nvars)
	var walk func(x *Ix, k int) bool
	walk = func(x *Ix, k int) bool {
		if x == nil {
			return false
		}
		switch x.Op {
		case IxConst:
			konst += k * x.C
			return true
		case IxVar:
			if x.Var < 0 || x.Var >= nvars {
				return false
			}
			coef[x.Var] += k
			return true
		case IxAdd:
			return walk(x.A, k) && walk(x.B, k)
		case IxMul:
			return walk(x.A, k*x.C)
		}
		return false
	}
	if !walk(x, 1) {
		return nil, 0, false
	}
	return coef, konst, true
}

// Offset returns the row-major element offset Σ index[d]·stride[d] of a load
// from a buffer of the given shape, simplified with the variable ranges and
// with floor-division/modulo pairs recombined (k·(X mod c) + k·c·⌊X/c⌋ = k·X).
// A load through a reshape of a dense buffer therefore usually comes back
// affine: a [N, 7, 7, 32] buffer read as [N, 1568] at (n, f) has offset
// 1568·n + f.
func Offset(index []*Ix, shape tile.Shape, vars []Range) *Ix {
	strides := shape.Strides()
	var l lin
	for d, x := range index {
		if d < len(strides) {
			l = l.add(toLin(x, vars).scale(strides[d]))
		}
	}
	return l.recombine(vars).ix()
}

// SubstituteIx returns x with every loop variable v replaced by vals[v]
// (variables with a nil or missing entry are kept), simplified with vars.
// IxValue atoms are kept as they are: their expressions are not rewritten.
func SubstituteIx(x *Ix, vals []*Ix, vars []Range) *Ix {
	var sub func(x *Ix) *Ix
	sub = func(x *Ix) *Ix {
		if x == nil {
			return nil
		}
		switch x.Op {
		case IxVar:
			if x.Var < len(vals) && vals[x.Var] != nil {
				return vals[x.Var]
			}
			return x
		case IxAdd:
			return IxSum(sub(x.A), sub(x.B))
		case IxMul, IxFloorDiv, IxMod:
			return &Ix{Op: x.Op, A: sub(x.A), C: x.C}
		}
		return x
	}
	return Simplify(sub(x), vars)
}

// EvalIx evaluates x with the loop variables at vars; value returns the
// integer value of an IxValue's expression. Floor division and modulo by a
// non-positive constant evaluate to 0.
func EvalIx(x *Ix, vars []int, value func(*Expr) int) int {
	switch x.Op {
	case IxConst:
		return x.C
	case IxVar:
		return vars[x.Var]
	case IxAdd:
		return EvalIx(x.A, vars, value) + EvalIx(x.B, vars, value)
	case IxMul:
		return EvalIx(x.A, vars, value) * x.C
	case IxFloorDiv:
		if x.C <= 0 {
			return 0
		}
		return floorDiv(EvalIx(x.A, vars, value), x.C)
	case IxMod:
		if x.C <= 0 {
			return 0
		}
		return floorMod(EvalIx(x.A, vars, value), x.C)
	case IxValue:
		return value(x.E)
	}
	return 0
}

func floorDiv(a, b int) int {
	q := a / b
	if a%b != 0 && (a < 0) != (b < 0) {
		q--
	}
	return q
}

func floorMod(a, b int) int { return a - b*floorDiv(a, b) }

// atom is an indivisible index term: a variable, a floor division or modulo
// of a normalized argument by a constant of at least 2, or a loaded value.
type atom struct {
	op  IxOp
	v   int
	arg lin
	c   int
	e   *Expr
	key string
}

type lterm struct {
	a *atom
	k int
}

// lin is an index expression in normal form: Σ k·atom + c, terms sorted by
// atom key with no zero coefficients.
type lin struct {
	terms []lterm
	c     int
}

func varAtom(v int) *atom {
	return &atom{op: IxVar, v: v, key: "a" + fmt.Sprintf("%08d", v)}
}

func divAtom(op IxOp, arg lin, c int) *atom {
	p := "d("
	if op == IxMod {
		p = "m("
	}
	return &atom{op: op, arg: arg, c: c, key: p + arg.key() + ")" + strconv.Itoa(c)}
}

func valueAtom(e *Expr) *atom {
	return &atom{op: IxValue, e: e, key: fmt.Sprintf("x%p", e)}
}

func (l lin) key() string {
	var b strings.Builder
	for _, t := range l.terms {
		b.WriteString(strconv.Itoa(t.k))
		b.WriteByte('*')
		b.WriteString(t.a.key)
		b.WriteByte('+')
	}
	b.WriteString(strconv.Itoa(l.c))
	return b.String()
}

func atomLin(a *atom) lin { return lin{terms: []lterm{{a, 1}}} }

// add returns l + m, merging terms.
func (l lin) add(m lin) lin {
	out := lin{c: l.c + m.c, terms: make([]lterm, 0, len(l.terms)+len(m.terms))}
	i, j := 0, 0
	for i < len(l.terms) || j < len(m.terms) {
		switch {
		case j == len(m.terms) || (i < len(l.terms) && l.terms[i].a.key < m.terms[j].a.key):
			out.terms = append(out.terms, l.terms[i])
			i++
		case i == len(l.terms) || m.terms[j].a.key < l.terms[i].a.key:
			out.terms = append(out.terms, m.terms[j])
			j++
		default:
			if k := l.terms[i].k + m.terms[j].k; k != 0 {
				out.terms = append(out.terms, lterm{l.terms[i].a, k})
			}
			i++
			j++
		}
	}
	return out
}

func (l lin) scale(k int) lin {
	if k == 0 {
		return lin{}
	}
	out := lin{c: l.c * k, terms: make([]lterm, len(l.terms))}
	for i, t := range l.terms {
		out.terms[i] = lterm{t.a, t.k * k}
	}
	return out
}

func toLin(x *Ix, vars []Range) lin {
	if x == nil {
		return lin{}
	}
	switch x.Op {
	case IxConst:
		return lin{c: x.C}
	case IxVar:
		return atomLin(varAtom(x.Var))
	case IxAdd:
		return toLin(x.A, vars).add(toLin(x.B, vars))
	case IxMul:
		return toLin(x.A, vars).scale(x.C)
	case IxFloorDiv:
		return toLin(x.A, vars).div(x.C, vars)
	case IxMod:
		return toLin(x.A, vars).mod(x.C, vars)
	case IxValue:
		return atomLin(valueAtom(x.E))
	}
	return lin{}
}

func (a *atom) bounds(vars []Range) (lo, hi int, ok bool) {
	switch a.op {
	case IxVar:
		if a.v >= 0 && a.v < len(vars) {
			return vars[a.v].Lo, vars[a.v].Hi, true
		}
	case IxFloorDiv:
		if l, h, ok := a.arg.bounds(vars); ok {
			return floorDiv(l, a.c), floorDiv(h, a.c), true
		}
	case IxMod:
		return 0, a.c - 1, true
	}
	return 0, 0, false
}

func (l lin) bounds(vars []Range) (lo, hi int, ok bool) {
	lo, hi = l.c, l.c
	for _, t := range l.terms {
		al, ah, ok := t.a.bounds(vars)
		if !ok {
			return 0, 0, false
		}
		x, y := t.k*al, t.k*ah
		lo += min(x, y)
		hi += max(x, y)
	}
	return lo, hi, true
}

// div returns ⌊l / c⌋ in normal form.
func (l lin) div(c int, vars []Range) lin {
	if c <= 0 {
		// Not a valid index; keep the node so that validation reports it.
		return atomLin(&atom{op: IxFloorDiv, arg: l, c: c, key: "d(" + l.key() + ")" + strconv.Itoa(c)})
	}
	if c == 1 {
		return l
	}
	var q, r lin
	for _, t := range l.terms {
		if t.k%c == 0 {
			q.terms = append(q.terms, lterm{t.a, t.k / c})
		} else {
			r.terms = append(r.terms, t)
		}
	}
	q.c, r.c = floorDiv(l.c, c), floorMod(l.c, c)
	if len(r.terms) == 0 {
		return q
	}
	if lo, hi, ok := r.bounds(vars); ok && floorDiv(lo, c) == floorDiv(hi, c) {
		q.c += floorDiv(lo, c)
		return q
	}
	// ⌊(⌊X/a⌋ + r)/c⌋ = ⌊(X + r·a)/(a·c)⌋.
	if len(r.terms) == 1 && r.terms[0].k == 1 && r.terms[0].a.op == IxFloorDiv {
		a := r.terms[0].a
		inner := a.arg.add(lin{c: r.c * a.c})
		return q.add(inner.div(a.c*c, vars))
	}
	// ⌊(g·X + R)/(g·m)⌋ = ⌊X/m⌋ when 0 ≤ R < g: the flat index of a
	// reshape read back along a coarser axis.
	if big, g, ok := r.factor(c, vars); ok {
		return q.add(big.div(c/g, vars))
	}
	return q.add(atomLin(divAtom(IxFloorDiv, r, c)))
}

// mod returns l mod c in normal form.
func (l lin) mod(c int, vars []Range) lin {
	if c <= 0 {
		return atomLin(&atom{op: IxMod, arg: l, c: c, key: "m(" + l.key() + ")" + strconv.Itoa(c)})
	}
	if c == 1 {
		return lin{}
	}
	var r lin
	for _, t := range l.terms {
		if k := floorMod(t.k, c); k != 0 {
			r.terms = append(r.terms, lterm{t.a, k})
		}
	}
	r.c = floorMod(l.c, c)
	if len(r.terms) == 0 {
		return r
	}
	if lo, hi, ok := r.bounds(vars); ok && floorDiv(lo, c) == floorDiv(hi, c) {
		r.c -= c * floorDiv(lo, c)
		return r
	}
	// (g·X + R) mod (g·m) = g·(X mod m) + R when 0 ≤ R < g.
	if big, g, ok := r.factor(c, vars); ok {
		rest := r.add(big.scale(-g))
		return big.mod(c/g, vars).scale(g).add(rest)
	}
	// (Y mod m) mod c = Y mod c when c divides m.
	if len(r.terms) == 1 && r.terms[0].k == 1 && r.c == 0 && r.terms[0].a.op == IxMod && r.terms[0].a.c%c == 0 {
		return r.terms[0].a.arg.mod(c, vars)
	}
	return atomLin(divAtom(IxMod, r, c))
}

// factor looks for a divisor g of c (1 < g < c) such that l = g·X + R with
// every term of R of a coefficient not divisible by g and 0 ≤ R < g over the
// ranges, the largest such g among the common divisors of c and a term's
// coefficient; it returns X and g.
func (l lin) factor(c int, vars []Range) (x lin, g int, ok bool) {
	best := 0
	for _, t := range l.terms {
		g := gcd(t.k, c)
		if g < 2 || g >= c || g <= best {
			continue
		}
		var big, small lin
		small.c = l.c
		for _, t := range l.terms {
			if t.k%g == 0 {
				big.terms = append(big.terms, lterm{t.a, t.k / g})
			} else {
				small.terms = append(small.terms, t)
			}
		}
		if len(small.terms) == 0 {
			continue
		}
		if lo, hi, ok := small.bounds(vars); ok && lo >= 0 && hi < g {
			x, best = big, g
		}
	}
	return x, best, best > 0
}

func gcd(a, b int) int {
	if a < 0 {
		a = -a
	}
	for b != 0 {
		a, b = b, a%b
	}
	return a
}

func (l lin) coef(key string) int {
	i := sort.Search(len(l.terms), func(i int) bool { return l.terms[i].a.key >= key })
	if i < len(l.terms) && l.terms[i].a.key == key {
		return l.terms[i].k
	}
	return 0
}

// recombine rewrites k·(X mod c) + k·c·⌊X/c⌋ as k·X wherever both terms are
// present, repeatedly.
func (l lin) recombine(vars []Range) lin {
	for changed := true; changed; {
		changed = false
		for _, t := range l.terms {
			if t.a.op != IxMod {
				continue
			}
			x := t.a.arg
			p := x.div(t.a.c, vars)
			if len(p.terms) == 0 {
				continue
			}
			want := t.k * t.a.c
			match := true
			for _, pt := range p.terms {
				if l.coef(pt.a.key) != want*pt.k {
					match = false
					break
				}
			}
			if !match {
				continue
			}
			l = l.add(atomLin(t.a).scale(-t.k)).add(p.scale(-want)).add(x.scale(t.k))
			changed = true
			break
		}
	}
	return l
}

func (a *atom) ix() *Ix {
	switch a.op {
	case IxVar:
		return IxOfVar(a.v)
	case IxFloorDiv, IxMod:
		return &Ix{Op: a.op, A: a.arg.ix(), C: a.c}
	}
	return IxOfValue(a.e)
}

func (l lin) ix() *Ix {
	var out *Ix
	for _, t := range l.terms {
		x := t.a.ix()
		if t.k != 1 {
			x = IxTimes(x, t.k)
		}
		if out == nil {
			out = x
		} else {
			out = IxSum(out, x)
		}
	}
	switch {
	case out == nil:
		return IxOfConst(l.c)
	case l.c != 0:
		return IxSum(out, IxOfConst(l.c))
	}
	return out
}
