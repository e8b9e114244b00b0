package kir

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/tartanml/tartan/tile"
)

// The printed form of a kernel is a pseudo-loop nest in the spirit of
// Halide's schedule printout: the output loops, annotated with the schedule
// (parallel, vector, tile), the reduction loops, the Where conditions, the
// accumulation and the final store. Output loop d is written x<d>; reduction
// loops keep their names (made unique). Loads are written b<id>[i, j], with
// "; fill v" for a Fill load; index expressions use "div" and "mod" for floor
// division and floor modulo and int(e) for a loaded index.

// String returns the kernel as a readable pseudo-loop nest with its schedule.
func (k *Kernel) String() string {
	var b strings.Builder
	k.write(&b, nil)
	return b.String()
}

// String returns the whole program: its buffers and slots, its bindings and
// every kernel in order.
func (p *Program) String() string {
	var b strings.Builder
	peak := 0
	for _, n := range p.SlotBytes {
		peak += n
	}
	fmt.Fprintf(&b, "program %q: %d buffers, %d kernels, %d slots, %d bytes\n", p.Name, len(p.Buffers), len(p.Kernels), p.Slots, peak)
	for _, buf := range p.Buffers {
		fmt.Fprintf(&b, "  b%d %s", buf.ID, buf.Kind)
		if buf.Name != "" {
			fmt.Fprintf(&b, " %q", buf.Name)
		}
		fmt.Fprintf(&b, " %s%s slot %d", buf.DType, buf.Shape, buf.Slot)
		if v := buf.View; v != nil {
			fmt.Fprintf(&b, " view of b%d at %d", v.Of, v.Offset)
			if v.Stride != 0 {
				fmt.Fprintf(&b, " + step·%d", v.Stride)
			}
		}
		if buf.Kind == Constant {
			b.WriteString(" = ")
			writeValues(&b, buf.Init, 8)
		}
		b.WriteByte('\n')
	}
	bind := func(what string, bs []Binding) {
		if len(bs) == 0 {
			return
		}
		fmt.Fprintf(&b, "  %s:", what)
		for _, x := range bs {
			fmt.Fprintf(&b, " %s=b%d", x.Name, x.Buffer)
		}
		b.WriteByte('\n')
	}
	bind("inputs", p.Inputs)
	bind("outputs", p.Outputs)
	bind("variables", p.Variables)
	for i, k := range p.Kernels {
		for _, l := range p.Loops {
			if l.First == i {
				dir := "forward"
				if l.Reverse {
					dir = "reverse"
				}
				fmt.Fprintf(&b, "  loop %d steps %s, kernels %d to %d:\n", l.Steps, dir, l.First, l.End-1)
			}
		}
		k.write(&b, p)
	}
	return b.String()
}

func writeValues(b *strings.Builder, v []float64, limit int) {
	b.WriteByte('[')
	for i, x := range v {
		if i == limit {
			fmt.Fprintf(b, ", … %d more", len(v)-limit)
			break
		}
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(formatFloat(x))
	}
	b.WriteByte(']')
}

func formatFloat(x float64) string { return strconv.FormatFloat(x, 'g', -1, 64) }

// varNames returns the printed name of every loop variable of k.
func (k *Kernel) varNames() []string {
	names := make([]string, 0, k.NumVars())
	used := map[string]bool{}
	for d := range k.Shape {
		n := "x" + strconv.Itoa(d)
		names = append(names, n)
		used[n] = true
	}
	for i, l := range k.Reduce {
		n := l.Name
		if n == "" {
			n = "r" + strconv.Itoa(i)
		}
		for base, j := n, 1; used[n]; j++ {
			n = base + "_" + strconv.Itoa(j)
		}
		used[n] = true
		names = append(names, n)
	}
	return names
}

func (k *Kernel) write(b *strings.Builder, p *Program) {
	names := k.varNames()
	pr := printer{names: names}
	out := fmt.Sprintf("b%d", k.Out)
	fmt.Fprintf(b, "kernel %s -> %s", k.Name, out)
	if p != nil && k.Out >= 0 && k.Out < len(p.Buffers) {
		buf := p.Buffers[k.Out]
		fmt.Fprintf(b, " %s%s", buf.DType, buf.Shape)
	} else {
		fmt.Fprintf(b, " %s", k.Shape)
	}
	if k.Source != "" {
		fmt.Fprintf(b, "  (%s)", k.Source)
	}
	b.WriteByte('\n')
	b.WriteString("  schedule: ")
	b.WriteString(k.Schedule.describe(names))
	b.WriteByte('\n')
	s := &k.Schedule
	indent := "  "
	for d, n := range k.Shape {
		fmt.Fprintf(b, "%sfor %s in [0, %d)", indent, names[d], n)
		if d < s.Parallel {
			b.WriteString(" parallel")
		}
		if d < len(s.Tile) && s.Tile[d] > 0 {
			fmt.Fprintf(b, " tile %d", s.Tile[d])
		}
		if d < len(s.Local) && s.Local[d] > 0 {
			fmt.Fprintf(b, " local %d", s.Local[d])
		}
		if d == len(k.Shape)-1 && s.Vector > 1 {
			fmt.Fprintf(b, " vector %d", s.Vector)
		}
		b.WriteString(":\n")
		indent += "  "
	}
	store := fmt.Sprintf("%s%s[%s] = ", indent, out, strings.Join(names[:len(k.Shape)], ", "))
	if len(k.Reduce) == 0 && k.Epilogue == nil {
		if len(k.Where) > 0 {
			fmt.Fprintf(b, "%sacc = 0\n", indent)
			fmt.Fprintf(b, "%sif %s:\n", indent, pr.conds(k.Where))
			fmt.Fprintf(b, "%s  acc = %s\n", indent, pr.expr(k.Body))
			fmt.Fprintf(b, "%s%s[%s] = acc\n", indent, out, strings.Join(names[:len(k.Shape)], ", "))
			return
		}
		b.WriteString(store + pr.expr(k.Body) + "\n")
		return
	}
	fmt.Fprintf(b, "%sacc = 0\n", indent)
	inner := indent
	for i, l := range k.Reduce {
		fmt.Fprintf(b, "%sfor %s in [%d, %d]", inner, names[len(k.Shape)+i], l.Lo, l.Hi)
		if i == len(k.Reduce)-1 && s.Unroll > 1 {
			fmt.Fprintf(b, " unroll %d", s.Unroll)
		}
		b.WriteString(":\n")
		inner += "  "
	}
	if len(k.Where) > 0 {
		fmt.Fprintf(b, "%sif %s:\n", inner, pr.conds(k.Where))
		inner += "  "
	}
	v := pr.expr(k.Body)
	switch k.Agg {
	case tile.Sum:
		fmt.Fprintf(b, "%sacc += %s\n", inner, v)
	case tile.Prod:
		fmt.Fprintf(b, "%sacc *= %s\n", inner, v)
	case tile.Max:
		fmt.Fprintf(b, "%sacc = max(acc, %s)\n", inner, v)
	case tile.Min:
		fmt.Fprintf(b, "%sacc = min(acc, %s)\n", inner, v)
	default:
		fmt.Fprintf(b, "%sacc = %s\n", inner, v)
	}
	if k.Epilogue != nil {
		b.WriteString(store + pr.expr(k.Epilogue) + "\n")
	} else {
		b.WriteString(store + "acc\n")
	}
}

// describe formats the schedule on one line.
func (s *Schedule) describe(names []string) string {
	var parts []string
	st := s.Strategy
	if st == "" {
		st = "loops"
	}
	parts = append(parts, st)
	if s.GEMM != nil {
		g := s.GEMM
		list := func(vs []int) string {
			ns := make([]string, len(vs))
			for i, v := range vs {
				if v >= 0 && v < len(names) {
					ns[i] = names[v]
				} else {
					ns[i] = "?" + strconv.Itoa(v)
				}
			}
			return "[" + strings.Join(ns, " ") + "]"
		}
		parts = append(parts, "batch="+list(g.Batch), "m="+list(g.M), "n="+list(g.N), "k="+list(g.K))
		// The operands' conditions by their index in the kernel's Where, and
		// the operands read with a range check.
		for i, cs := range [][]int{g.CondA, g.CondB} {
			if len(cs) > 0 {
				parts = append(parts, fmt.Sprintf("where-%c=%v", "ab"[i], cs))
			}
		}
		var guards []string
		if g.GuardA {
			guards = append(guards, "a")
		}
		if g.GuardB {
			guards = append(guards, "b")
		}
		if len(guards) > 0 {
			parts = append(parts, "guard="+strings.Join(guards, ","))
		}
	}
	if t := s.Tiling; t != nil {
		parts = append(parts, "tiling="+t.String()+" ("+t.From+")")
	}
	if c := s.Scatter; c != nil {
		parts = append(parts, fmt.Sprintf("updates=b%d indices=b%d axis=%d", c.Updates, c.Indices, c.Axis))
	}
	parts = append(parts, fmt.Sprintf("parallel=%d", s.Parallel))
	workers := "all"
	if s.Workers > 0 {
		workers = strconv.Itoa(s.Workers)
	}
	parts = append(parts, "workers="+workers)
	if len(s.Tile) > 0 {
		parts = append(parts, fmt.Sprintf("tile=%v", s.Tile))
	}
	parts = append(parts, fmt.Sprintf("vector=%d", s.Vector), fmt.Sprintf("unroll=%d", s.Unroll))
	if len(s.Local) > 0 {
		parts = append(parts, fmt.Sprintf("local=%v", s.Local))
	}
	return strings.Join(parts, " ")
}

type printer struct{ names []string }

func (p printer) conds(cs []Cond) string {
	parts := make([]string, len(cs))
	for i, c := range cs {
		parts[i] = fmt.Sprintf("0 <= %s < %d", p.ix(c.X), c.Bound)
	}
	return strings.Join(parts, " && ")
}

func (p printer) ix(x *Ix) string {
	if x == nil {
		return "<nil>"
	}
	switch x.Op {
	case IxConst:
		return strconv.Itoa(x.C)
	case IxVar:
		if x.Var >= 0 && x.Var < len(p.names) {
			return p.names[x.Var]
		}
		return "v" + strconv.Itoa(x.Var)
	case IxAdd:
		b := p.ix(x.B)
		if strings.HasPrefix(b, "-") {
			return p.ix(x.A) + " - " + b[1:]
		}
		return p.ix(x.A) + " + " + b
	case IxMul:
		a := p.ix(x.A)
		if x.A != nil && (x.A.Op == IxAdd || x.A.Op == IxFloorDiv || x.A.Op == IxMod) {
			a = "(" + a + ")"
		}
		switch x.C {
		case 1:
			return a
		case -1:
			return "-" + a
		}
		return strconv.Itoa(x.C) + "*" + a
	case IxFloorDiv, IxMod:
		a := p.ix(x.A)
		if x.A == nil || x.A.Op == IxAdd || x.A.Op == IxMul {
			a = "(" + a + ")"
		}
		op := " div "
		if x.Op == IxMod {
			op = " mod "
		}
		return a + op + strconv.Itoa(x.C)
	case IxValue:
		return "int(" + p.expr(x.E) + ")"
	}
	return "?"
}

var infix = map[tile.Fn]string{
	tile.Add: "+", tile.Sub: "-", tile.Mul: "*", tile.Div: "/",
	tile.Eq: "==", tile.Ne: "!=", tile.Lt: "<", tile.Le: "<=", tile.Gt: ">", tile.Ge: ">=",
	tile.And: "&&", tile.Or: "||",
}

func (p printer) expr(e *Expr) string {
	if e == nil {
		return "<nil>"
	}
	switch e.Op {
	case Load:
		idx := make([]string, len(e.Index))
		for i, x := range e.Index {
			idx[i] = p.ix(x)
		}
		s := fmt.Sprintf("b%d[%s", e.Buf, strings.Join(idx, ", "))
		if e.OOB == Fill {
			s += "; fill " + formatFloat(e.Value)
		}
		return s + "]"
	case Const:
		s := formatFloat(e.Value)
		if !e.DType.IsFloat() {
			s = e.DType.String() + "(" + s + ")"
		}
		return s
	case Apply:
		args := make([]string, len(e.Args))
		for i, a := range e.Args {
			args[i] = p.expr(a)
		}
		if op, ok := infix[e.Fn]; ok && len(args) == 2 {
			return "(" + args[0] + " " + op + " " + args[1] + ")"
		}
		if e.Fn == tile.Neg && len(args) == 1 {
			return "-" + args[0]
		}
		return e.Fn.String() + "(" + strings.Join(args, ", ") + ")"
	case Cast:
		if len(e.Args) == 1 {
			return e.DType.String() + "(" + p.expr(e.Args[0]) + ")"
		}
	case IndexValue:
		if len(e.Index) == 1 {
			return e.DType.String() + "(" + p.ix(e.Index[0]) + ")"
		}
	case Random:
		if len(e.Args) == 1 && len(e.Index) == 1 {
			return fmt.Sprintf("random(%s, stream %d, %s)", p.expr(e.Args[0]), e.Stream, p.ix(e.Index[0]))
		}
	case Acc:
		return "acc"
	}
	return "?"
}

// String formats x with loop variables written v0, v1, ….
func (x *Ix) String() string { return printer{}.ix(x) }

// String formats e with loop variables written v0, v1, ….
func (e *Expr) String() string { return printer{}.expr(e) }
