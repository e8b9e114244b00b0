package tile

import (
	"sort"
	"strconv"
	"strings"
)

// Term is Coef times the index variable named Index.
type Term struct {
	Index string
	Coef  int
}

// Affine is an integer affine expression over index variables:
// the sum of its Terms plus Const. The canonical form, which every
// constructor and operator here returns, has no zero coefficients and at most
// one term per index, in order of first appearance.
type Affine struct {
	Terms []Term
	Const int
}

// Ix returns the expression consisting of the index variable name alone.
func Ix(name string) Affine { return Affine{Terms: []Term{{name, 1}}} }

// Lit returns the constant expression k.
func Lit(k int) Affine { return Affine{Const: k} }

// Plus returns a + b.
func (a Affine) Plus(b Affine) Affine {
	out := Affine{Const: a.Const + b.Const}
	out.Terms = append(out.Terms, a.Terms...)
	for _, t := range b.Terms {
		out.Terms = addTerm(out.Terms, t)
	}
	return out.canon()
}

// Minus returns a - b.
func (a Affine) Minus(b Affine) Affine { return a.Plus(b.Times(-1)) }

// Times returns k·a.
func (a Affine) Times(k int) Affine {
	out := Affine{Const: a.Const * k}
	for _, t := range a.Terms {
		out.Terms = append(out.Terms, Term{t.Index, t.Coef * k})
	}
	return out.canon()
}

// AddConst returns a + k.
func (a Affine) AddConst(k int) Affine {
	return Affine{Terms: append([]Term(nil), a.Terms...), Const: a.Const + k}
}

// Coef returns the coefficient of the named index, 0 if absent.
func (a Affine) Coef(index string) int {
	for _, t := range a.Terms {
		if t.Index == index {
			return t.Coef
		}
	}
	return 0
}

// IsIndex reports whether a is a single index with coefficient 1 and no
// constant, and returns that index.
func (a Affine) IsIndex() (string, bool) {
	if len(a.Terms) == 1 && a.Terms[0].Coef == 1 && a.Const == 0 {
		return a.Terms[0].Index, true
	}
	return "", false
}

// Equal reports whether a and b denote the same expression.
func (a Affine) Equal(b Affine) bool {
	if a.Const != b.Const || len(a.Terms) != len(b.Terms) {
		return false
	}
	for _, t := range a.Terms {
		if b.Coef(t.Index) != t.Coef {
			return false
		}
	}
	return true
}

func addTerm(ts []Term, t Term) []Term {
	for i := range ts {
		if ts[i].Index == t.Index {
			ts[i].Coef += t.Coef
			return ts
		}
	}
	return append(ts, t)
}

func (a Affine) canon() Affine {
	out := a.Terms[:0:0]
	for _, t := range a.Terms {
		if t.Coef != 0 {
			out = append(out, t)
		}
	}
	a.Terms = out
	return a
}

// String formats a as the textual form writes it, such as "2*y + i - 1".
func (a Affine) String() string {
	var b strings.Builder
	for i, t := range a.Terms {
		c := t.Coef
		switch {
		case i == 0 && c < 0:
			b.WriteString("-")
			c = -c
		case i > 0 && c < 0:
			b.WriteString(" - ")
			c = -c
		case i > 0:
			b.WriteString(" + ")
		}
		if c != 1 {
			b.WriteString(strconv.Itoa(c))
			b.WriteString("*")
		}
		b.WriteString(t.Index)
	}
	switch {
	case len(a.Terms) == 0:
		b.WriteString(strconv.Itoa(a.Const))
	case a.Const > 0:
		b.WriteString(" + " + strconv.Itoa(a.Const))
	case a.Const < 0:
		b.WriteString(" - " + strconv.Itoa(-a.Const))
	}
	return b.String()
}

// indexNames returns the distinct index names of the expressions in order of
// first appearance.
func indexNames(exprs ...[]Affine) []string {
	seen := map[string]bool{}
	var names []string
	for _, list := range exprs {
		for _, e := range list {
			for _, t := range e.Terms {
				if !seen[t.Index] {
					seen[t.Index] = true
					names = append(names, t.Index)
				}
			}
		}
	}
	return names
}

// sortedKeys returns the keys of m in sorted order.
func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
