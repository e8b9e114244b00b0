package opencl

import (
	"fmt"
	"strings"

	"github.com/tartanml/tartan/kir"
)

// sepOperand is a matrix-product operand that is a kir.AffineLoad: its
// offset and guards split into a part of the batch and row (or column)
// variables, fixed for a work-item's staged slot over the whole reduction,
// and a part of the reduction variables, shared by the slots that read the
// same reduction index. The kernel computes the first part once, before
// the reduction loop, and the second once per panel, instead of decoding
// every loop variable of every element it stages (the im2col view of a
// convolution).
type sepOperand struct {
	*kir.AffineLoad
	vars  []kir.Range
	names []string
	outer [][]int // the batch and row (or column) groups
	red   []int
}

// affine is c·vars + konst.
type affine struct {
	coef  []int
	konst int
}

// separable returns the operand e of kernel k as a sepOperand when it is
// an affine load reading no loop outside its groups, and not already one
// linear formula of the matrix indices.
func (r *renderer) separable(k *kir.Kernel, e *kir.Expr, conds []kir.Cond, batch, rows, red []int) *sepOperand {
	if _, _, ok := linearOperand(r.p, k, e, conds, [][]int{batch, rows, red}); ok {
		return nil
	}
	a, ok := kir.AffineLoadOf(r.p, k, e, conds)
	if !ok {
		return nil
	}
	in := map[int]bool{}
	for _, g := range [][]int{batch, rows, red} {
		for _, v := range g {
			in[v] = true
		}
	}
	forms := [][]int{a.Coef}
	for _, g := range a.Guards {
		forms = append(forms, g.Coef)
	}
	for _, coef := range forms {
		for v, c := range coef {
			if c != 0 && !in[v] {
				return nil
			}
		}
	}
	return &sepOperand{AffineLoad: a, vars: k.VarRanges(), names: varNames(k), outer: [][]int{batch, rows}, red: red}
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
	for j := range s.Guards {
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
	w.line("%s_o = %s;", name, affine{s.Coef, s.Konst}.sum(all, names, withConst))
	for j, g := range s.Guards {
		w.line("%s_g%d = %s;", name, j, affine{g.Coef, g.Konst}.sum(all, names, withConst))
	}
	w.close("}")
}

// value renders the operand at the slot outer and the reduction parts red.
func (s *sepOperand) value(outer, red string, zero string) string {
	v := fmt.Sprintf("%s[%s_o + %s_o]", bufName(s.Buf), outer, red)
	if len(s.Guards) == 0 {
		return v
	}
	var cs []string
	for j, g := range s.Guards {
		x := fmt.Sprintf("%s_g%d + %s_g%d", outer, j, red, j)
		cs = append(cs, fmt.Sprintf("%s >= 0 && %s < %d", x, x, g.Bound))
	}
	return fmt.Sprintf("((%s) ? %s : %s)", strings.Join(cs, " && "), v, zero)
}
