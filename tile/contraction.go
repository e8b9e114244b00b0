package tile

import (
	"fmt"
	"math"
	"strings"
)

// Agg is how a contraction aggregates the contributions to one output element.
type Agg uint8

// The aggregations, written + > < * = in the textual form.
const (
	AggInvalid Agg = iota
	Sum
	Max // a NaN contribution makes the result NaN
	Min // likewise
	Prod
	Assign // exactly one contribution is expected; with several, the last in row-major index order wins
)

var aggSymbols = [...]string{Sum: "+", Max: ">", Min: "<", Prod: "*", Assign: "="}

// String returns the aggregation's symbol.
func (a Agg) String() string {
	if a > AggInvalid && a <= Assign {
		return aggSymbols[a]
	}
	return "?"
}

// Comb is how a contraction combines its operands at one point.
type Comb uint8

// The combinations.
const (
	CombInvalid Comb = iota
	// CombNone takes the single operand's value.
	CombNone
	// CombMul multiplies two operands.
	CombMul
	// CombAdd adds two operands.
	CombAdd
	// CombEq takes the third operand's value where the first two are equal,
	// two NaNs counting as equal (so that A == O ? C finds the points that
	// attain a max or min O, which a NaN makes NaN); points where they
	// differ contribute nothing. Textual form: A == B ? C.
	CombEq
)

// Arity returns the number of operands the combination takes.
func (c Comb) Arity() int {
	switch c {
	case CombNone:
		return 1
	case CombMul, CombAdd:
		return 2
	case CombEq:
		return 3
	}
	return 0
}

// Constraint restricts a contraction's index space to the points where
// 0 ≤ Expr < Bound. The textual form writes it "Expr < Bound".
type Constraint struct {
	Expr  Affine
	Bound int
}

// ContractionOp aggregates, over every point of its index space, the
// combination of its operands read at Access[i] into the output element at
// Out. The index space is every assignment of integers to the indices that
// keeps every access (output included) in bounds and every constraint true;
// other points are skipped. Output elements that receive no contribution are
// zero.
type ContractionOp struct {
	Agg         Agg
	Comb        Comb
	Out         []Affine
	Access      [][]Affine
	Constraints []Constraint
}

// Kind implements Op.
func (*ContractionOp) Kind() string { return "contraction" }

// Indices returns the contraction's index names in order of first appearance,
// output first.
func (c *ContractionOp) Indices() []string {
	lists := [][]Affine{c.Out}
	lists = append(lists, c.Access...)
	for _, k := range c.Constraints {
		lists = append(lists, []Affine{k.Expr})
	}
	return indexNames(lists...)
}

// Range is the inclusive interval [Lo, Hi] an index runs over. Lo > Hi means
// the index space is empty.
type Range struct{ Lo, Hi int }

// Ranges returns, for every index of c, an interval containing every value it
// takes in the index space, derived from the bounds of the accesses (outShape
// for the output, argShapes for the operands) and the constraints. Points of
// the box these intervals span may still fall outside the index space;
// executors check each access. It fails when some index is unbounded.
func (c *ContractionOp) Ranges(outShape Shape, argShapes []Shape) (map[string]Range, error) {
	type bound struct {
		e      Affine
		lo, hi int // lo ≤ e ≤ hi
	}
	var bounds []bound
	addAccess := func(acc []Affine, s Shape) {
		for d, e := range acc {
			bounds = append(bounds, bound{e, 0, s[d] - 1})
		}
	}
	addAccess(c.Out, outShape)
	for i, acc := range c.Access {
		addAccess(acc, argShapes[i])
	}
	for _, k := range c.Constraints {
		bounds = append(bounds, bound{k.Expr, 0, k.Bound - 1})
	}
	const inf = math.MaxInt32
	names := c.Indices()
	lo := map[string]int{}
	hi := map[string]int{}
	for _, n := range names {
		lo[n], hi[n] = -inf, inf
	}
	for changed, iter := true, 0; changed && iter < 64; iter++ {
		changed = false
		for _, b := range bounds {
			for _, t := range b.e.Terms {
				// t.Coef·v ∈ [b.lo - const - max(rest), b.hi - const - min(rest)].
				rmin, rmax, ok := b.e.Const, b.e.Const, true
				for _, u := range b.e.Terms {
					if u.Index == t.Index {
						continue
					}
					if lo[u.Index] == -inf || hi[u.Index] == inf {
						ok = false
						break
					}
					a, z := u.Coef*lo[u.Index], u.Coef*hi[u.Index]
					rmin += min(a, z)
					rmax += max(a, z)
				}
				if !ok {
					continue
				}
				l, h := b.lo-rmax, b.hi-rmin
				var vl, vh int
				if t.Coef > 0 {
					vl, vh = ceilDiv(l, t.Coef), floorDiv(h, t.Coef)
				} else {
					vl, vh = ceilDiv(h, t.Coef), floorDiv(l, t.Coef)
				}
				if vl > lo[t.Index] {
					lo[t.Index], changed = vl, true
				}
				if vh < hi[t.Index] {
					hi[t.Index], changed = vh, true
				}
			}
		}
	}
	out := make(map[string]Range, len(names))
	for _, n := range names {
		if lo[n] == -inf || hi[n] == inf {
			return nil, fmt.Errorf("index %s is unbounded: it must appear in an access or a constraint that bounds it", n)
		}
		out[n] = Range{lo[n], hi[n]}
	}
	return out, nil
}

func floorDiv(a, b int) int {
	q := a / b
	if (a%b != 0) && ((a < 0) != (b < 0)) {
		q--
	}
	return q
}

func ceilDiv(a, b int) int { return -floorDiv(-a, b) }

// Operand is a tensor read through affine index expressions, one per
// dimension.
type Operand struct {
	Tensor *Tensor
	Index  []Affine
}

// Contract builds a contraction with output shape outShape written at out,
// combining the operands with comb and aggregating with agg.
func (g *Graph) Contract(agg Agg, comb Comb, outShape Shape, out []Affine, operands []Operand, constraints ...Constraint) *Tensor {
	args := make([]*Tensor, len(operands))
	for i, o := range operands {
		args[i] = o.Tensor
	}
	if !g.check("contraction", args...) || !g.checkShape("contraction", outShape) {
		return g.invalid()
	}
	c := &ContractionOp{Agg: agg, Comb: comb, Out: cloneAffines(out)}
	for _, k := range constraints {
		c.Constraints = append(c.Constraints, Constraint{Expr: Lit(0).Plus(k.Expr), Bound: k.Bound})
	}
	for _, o := range operands {
		c.Access = append(c.Access, cloneAffines(o.Index))
	}
	text := func() string { return FormatContraction(c, "O", operandNames(len(args)), outShape) }
	if agg == AggInvalid || agg > Assign {
		return g.Errorf("contraction", "invalid aggregation in %s", text())
	}
	if comb.Arity() == 0 || comb.Arity() != len(args) {
		return g.Errorf("contraction", "combination takes %d operands, got %d: %s", comb.Arity(), len(args), text())
	}
	if len(out) != len(outShape) {
		return g.Errorf("contraction", "output has %d index expressions for shape %v: %s", len(out), outShape, text())
	}
	shapes := make([]Shape, len(args))
	for i, a := range args {
		shapes[i] = a.shape
		if len(c.Access[i]) != a.Rank() {
			return g.Errorf("contraction", "operand %s is indexed with %d expressions but has shape %v: %s",
				operandNames(len(args))[i], len(c.Access[i]), a.shape, text())
		}
	}
	for _, n := range c.Indices() {
		if !indexRE.MatchString(n) {
			return g.Errorf("contraction", "index name %q is not an identifier: %s", n, text())
		}
	}
	for _, k := range c.Constraints {
		if len(k.Expr.Terms) == 0 {
			return g.Errorf("contraction", "constraint %v < %d has no index: %s", k.Expr, k.Bound, text())
		}
	}
	dt := args[0].dtype
	vals := args
	if comb == CombEq {
		if args[0].dtype != args[1].dtype {
			return g.Errorf("contraction", "compared operands differ in dtype (%s): %s", describe(args[:2]), text())
		}
		vals, dt = args[2:], args[2].dtype
	}
	for _, v := range vals {
		if v.dtype != dt {
			return g.Errorf("contraction", "operand dtypes differ (%s): %s", describe(args), text())
		}
	}
	if dt == Bool && agg != Assign && agg != Max && agg != Min {
		return g.Errorf("contraction", "cannot aggregate bool operands with %v: %s", agg, text())
	}
	if _, err := c.Ranges(outShape, shapes); err != nil {
		return g.Errorf("contraction", "%v: %s", err, text())
	}
	return g.add(c, dt, outShape, args...)
}

// cloneAffines returns canonical copies of es (merged terms, no zero
// coefficients).
func cloneAffines(es []Affine) []Affine {
	out := make([]Affine, len(es))
	for i, e := range es {
		out[i] = Lit(0).Plus(e)
	}
	return out
}

func operandNames(n int) []string {
	names := make([]string, n)
	for i := range names {
		names[i] = string(rune('A' + i))
	}
	return names
}

// FormatContraction writes c in the textual form with the given output and
// operand names, for example "O[i, j : 3, 4] = +(A[i, k] * B[k, j])".
func FormatContraction(c *ContractionOp, out string, operands []string, outShape Shape) string {
	var b strings.Builder
	b.WriteString(out)
	b.WriteByte('[')
	for i, e := range c.Out {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(e.String())
	}
	if len(c.Out) > 0 {
		b.WriteString(" : ")
	}
	for i, d := range outShape {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprint(&b, d)
	}
	b.WriteString("] = ")
	b.WriteString(c.Agg.String())
	b.WriteByte('(')
	access := func(i int) {
		name := "?"
		if i < len(operands) {
			name = operands[i]
		}
		b.WriteString(name)
		b.WriteByte('[')
		if i < len(c.Access) {
			for j, e := range c.Access[i] {
				if j > 0 {
					b.WriteString(", ")
				}
				b.WriteString(e.String())
			}
		}
		b.WriteByte(']')
	}
	switch c.Comb {
	case CombNone:
		access(0)
	case CombMul, CombAdd:
		access(0)
		if c.Comb == CombMul {
			b.WriteString(" * ")
		} else {
			b.WriteString(" + ")
		}
		access(1)
	case CombEq:
		access(0)
		b.WriteString(" == ")
		access(1)
		b.WriteString(" ? ")
		access(2)
	}
	b.WriteByte(')')
	for _, k := range c.Constraints {
		fmt.Fprintf(&b, ", %v < %d", k.Expr, k.Bound)
	}
	return b.String()
}
