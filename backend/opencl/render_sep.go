package opencl

import (
	"fmt"
	"strings"

	"github.com/tartanml/tartan/kir"
)

// sepOperand is a matrix-product operand that is one load, 0 outside its
// buffer, whose indices and conditions are all affine in the loop
// variables. Each affine form then splits into a part of the batch and
// row (or column) variables, fixed for a work-item's staged slot over the
// whole reduction, and a part of the reduction variables, shared by the
// slots that read the same reduction index. The kernel computes the first
// part once, before the reduction loop, and the second once per panel,
// instead of decoding every loop variable of every element it stages (the
// im2col view of a convolution).
type sepOperand struct {
	buf    int
	vars   []kir.Range
	names  []string
	off    affine
	guards []sepGuard
	outer  [][]int // the batch and row (or column) groups
	red    []int
}

// affine is c·vars + konst.
type affine struct {
	coef  []int
	konst int
}

// sepGuard requires 0 ≤ x < bound.
type sepGuard struct {
	x     affine
	bound int
}

// separate returns e as a sepOperand, or nil when it is not one: e must
// be a load that is 0 outside its buffer (a Skip load, a Fill load of 0,
// or one the loop ranges keep in range), with affine indices, and every
// condition of the operand affine.
func separate(p *kir.Program, k *kir.Kernel, e *kir.Expr, conds []kir.Cond, batch, rows, red []int) *sepOperand {
	if e.Op != kir.Load || e.Buf < 0 || e.Buf >= len(p.Buffers) {
		return nil
	}
	b := p.Buffers[e.Buf]
	if len(e.Index) != len(b.Shape) {
		return nil
	}
	vars := k.VarRanges()
	nv := len(vars)
	inGroup := make([]bool, nv)
	for _, g := range [][]int{batch, rows, red} {
		for _, v := range g {
			inGroup[v] = true
		}
	}
	form := func(x *kir.Ix) (affine, bool) {
		coef, konst, ok := kir.LinearForm(kir.Simplify(x, vars), nv)
		if !ok {
			return affine{}, false
		}
		for v, c := range coef {
			if c != 0 && !inGroup[v] {
				return affine{}, false
			}
		}
		return affine{coef, konst}, true
	}
	s := &sepOperand{buf: e.Buf, vars: vars, names: varNames(k), outer: [][]int{batch, rows}, red: red}
	guarded := false
	for d, x := range e.Index {
		if lo, hi, ok := kir.Bounds(x, vars); ok && lo >= 0 && hi < b.Shape[d] {
			continue
		}
		a, ok := form(x)
		if !ok {
			return nil
		}
		s.guards = append(s.guards, sepGuard{a, b.Shape[d]})
		guarded = true
	}
	if guarded && e.OOB == kir.Fill && e.Value != 0 {
		return nil
	}
	for _, c := range conds {
		if lo, hi, ok := kir.Bounds(c.X, vars); ok && lo >= 0 && hi < c.Bound {
			continue
		}
		a, ok := form(c.X)
		if !ok {
			return nil
		}
		s.guards = append(s.guards, sepGuard{a, c.Bound})
	}
	off, ok := form(kir.Offset(e.Index, b.Shape, vars))
	if !ok {
		return nil
	}
	s.off = off
	return s
}

// separable returns the operand e of kernel k as a sepOperand when it is
// one and is not already one linear formula of the matrix indices.
func (r *renderer) separable(k *kir.Kernel, e *kir.Expr, conds []kir.Cond, batch, rows, red []int) *sepOperand {
	if _, _, ok := linearOperand(r.p, k, e, conds, [][]int{batch, rows, red}); ok {
		return nil
	}
	return separate(r.p, k, e, conds, batch, rows, red)
}

// sum renders the part of a over the variables vs (plus konst when
// withConst), with the loop variables named by names.
func (a affine) sum(vs []int, names []string, withConst bool) string {
	var b strings.Builder
	term := func(c int, v string) {
		switch {
		case b.Len() == 0 && c < 0:
			b.WriteString("-")
		case b.Len() == 0:
		case c < 0:
			b.WriteString(" - ")
		default:
			b.WriteString(" + ")
		}
		switch {
		case v == "":
			fmt.Fprint(&b, max(c, -c))
		case c == 1 || c == -1:
			b.WriteString(v)
		default:
			fmt.Fprintf(&b, "%s * %d", v, max(c, -c))
		}
	}
	for _, v := range vs {
		if c := a.coef[v]; c != 0 {
			term(c, names[v])
		}
	}
	if withConst && a.konst != 0 || b.Len() == 0 {
		term(a.konst, "")
	}
	return b.String()
}

// prepare writes the declarations of the outer parts of slot name:
// name_o, the offset's, and name_g0…, the guards', decoded from batch
// index bt and matrix index i (C expressions).
func (s *sepOperand) prepare(w *writer, name, bt, i string) {
	s.parts(w, name, [][2]string{{"s_bt", bt}, {"s_i", i}}, s.outer, true)
}

// reduction writes the declarations of the reduction parts, name_o and
// name_g0…, at reduction index kk (a C expression).
func (s *sepOperand) reduction(w *writer, name, kk string) {
	s.parts(w, name, [][2]string{{"s_kk", kk}}, [][]int{s.red}, false)
}

func (s *sepOperand) parts(w *writer, name string, idx [][2]string, groups [][]int, withConst bool) {
	names := s.names
	decl := []string{name + "_o"}
	for j := range s.guards {
		decl = append(decl, fmt.Sprintf("%s_g%d", name, j))
	}
	w.line("int %s;", strings.Join(decl, ", "))
	w.open("{")
	var all []int
	for j, g := range groups {
		w.line("const int %s = %s;", idx[j][0], idx[j][1])
		decodeVars(w, "int", idx[j][0], g, s.vars, names, false)
		all = append(all, g...)
	}
	w.line("%s_o = %s;", name, s.off.sum(all, names, withConst))
	for j, g := range s.guards {
		w.line("%s_g%d = %s;", name, j, g.x.sum(all, names, withConst))
	}
	w.close("}")
}

// value renders the operand at the slot outer and the reduction parts red.
func (s *sepOperand) value(outer, red string, zero string) string {
	v := fmt.Sprintf("%s[%s_o + %s_o]", bufName(s.buf), outer, red)
	if len(s.guards) == 0 {
		return v
	}
	var cs []string
	for j, g := range s.guards {
		x := fmt.Sprintf("%s_g%d + %s_g%d", outer, j, red, j)
		cs = append(cs, fmt.Sprintf("%s >= 0 && %s < %d", x, x, g.bound))
	}
	return fmt.Sprintf("((%s) ? %s : %s)", strings.Join(cs, " && "), v, zero)
}
