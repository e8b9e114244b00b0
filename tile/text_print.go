package tile

import (
	"fmt"
	"strconv"
	"strings"
)

// Print writes g in the textual form that Parse reads: a graph line, one line
// per node in creation order, then the outputs and the updates. Inputs and
// variables go by their names and every other node by t<ID> (with trailing
// underscores added should a leaf already own that name). Parse(Print(g))
// rebuilds g node for node, so Print(Parse(Print(g))) == Print(g) for every
// graph built without error. A recorded building error is written as a
// comment after the graph line.
func Print(g *Graph) string {
	if g == nil {
		return ""
	}
	var b strings.Builder
	fmt.Fprintf(&b, "graph %s\n", quoteName(g.Name()))
	if err := g.Err(); err != nil {
		fmt.Fprintf(&b, "# error: %s\n", strings.ReplaceAll(err.Error(), "\n", " "))
	}
	names := nodeNames(g)
	ref := func(t *Tensor) string {
		if t.Valid() && t.graph == g && t.id < len(names) {
			return quoteName(names[t.id])
		}
		return `"<invalid>"`
	}
	for _, t := range g.nodes {
		printNode(&b, t, ref)
	}
	for _, o := range g.outputs {
		fmt.Fprintf(&b, "output %s = %s\n", quoteName(o.Name), ref(o.Tensor))
	}
	for _, u := range g.updates {
		fmt.Fprintf(&b, "update %s = %s\n", ref(u.Variable), ref(u.Value))
	}
	for _, r := range g.closes {
		fmt.Fprintf(&b, "close %s = %s\n", ref(r), ref(r.op.(*RecurrenceOp).next))
	}
	return b.String()
}

// nodeNames returns the name Print gives each node.
func nodeNames(g *Graph) []string {
	names := make([]string, len(g.nodes))
	for i, t := range g.nodes {
		switch op := t.op.(type) {
		case *InputOp:
			names[i] = op.Name
		case *VariableOp:
			names[i] = op.Name
		default:
			n := "t" + strconv.Itoa(i)
			for g.leaves[n] != nil {
				n += "_"
			}
			names[i] = n
		}
	}
	return names
}

// printNode writes the statement that defines t.
func printNode(b *strings.Builder, t *Tensor, ref func(*Tensor) string) {
	name := ref(t)
	args := make([]string, len(t.args))
	for i, a := range t.args {
		args[i] = ref(a)
	}
	typ := t.dtype.String() + t.shape.String()
	call := func(extra ...string) {
		fmt.Fprintf(b, "%s = %s(%s)\n", name, t.op.Kind(), strings.Join(append(args, extra...), ", "))
	}
	switch op := t.op.(type) {
	case *InputOp:
		fmt.Fprintf(b, "input %s: %s\n", name, typ)
	case *VariableOp:
		fmt.Fprintf(b, "variable %s: %s\n", name, typ)
	case *ConstantOp:
		fmt.Fprintf(b, "%s = constant %s %s\n", name, typ, formatData(op.Value))
	case *ContractionOp:
		b.WriteString(FormatContraction(canonContraction(op), name, args, t.shape))
		b.WriteByte('\n')
	case *CastOp:
		call(t.dtype.String())
	case *StopGradientOp:
		call()
	case *ReshapeOp, *BroadcastOp:
		call(t.shape.String())
	case *TransposeOp:
		call(intList(op.Perm))
	case *SliceOp:
		call(intList(op.Start), intList(op.Stop), intList(op.Step))
	case *ConcatOp:
		fmt.Fprintf(b, "%s = concat(%d, %s)\n", name, op.Axis, strings.Join(args, ", "))
	case *PadOp:
		call(intList(op.Lo), intList(op.Hi), formatNumber(t.dtype, op.Value))
	case *GatherOp:
		call(strconv.Itoa(op.Axis))
	case *ScatterAddOp:
		call(strconv.Itoa(op.Axis), t.shape.String())
	case *IotaOp:
		call(typ, strconv.Itoa(op.Axis))
	case *RandomOp:
		call(typ, strconv.FormatUint(op.Stream, 10))
	case *RecurrenceOp:
		dir := "forward"
		if op.Reverse {
			dir = "reverse"
		}
		call(strconv.Itoa(op.Steps), dir)
	default:
		// ElementwiseOp, whose Kind is its function's name, and op types
		// from outside the package, which Parse will reject by name.
		call()
	}
}

// formatData writes a constant's elements: a scalar as one number, anything
// else as a row-major list.
func formatData(v *Value) string {
	if len(v.Shape) == 0 && len(v.Data) == 1 {
		return formatNumber(v.DType, v.Data[0])
	}
	parts := make([]string, len(v.Data))
	for i, x := range v.Data {
		parts[i] = formatNumber(v.DType, x)
	}
	return "[" + strings.Join(parts, ", ") + "]"
}

func intList(xs []int) string { return Shape(xs).String() }

// canonContraction returns c with every index expression in canonical form
// (one term per index, no zero coefficients), which is how Parse reads it.
func canonContraction(c *ContractionOp) *ContractionOp {
	canon := func(es []Affine) []Affine {
		out := make([]Affine, len(es))
		for i, e := range es {
			out[i] = Lit(0).Plus(e)
		}
		return out
	}
	d := *c
	d.Out = canon(c.Out)
	d.Access = make([][]Affine, len(c.Access))
	for i, acc := range c.Access {
		d.Access[i] = canon(acc)
	}
	d.Constraints = make([]Constraint, len(c.Constraints))
	for i, k := range c.Constraints {
		d.Constraints[i] = Constraint{Expr: Lit(0).Plus(k.Expr), Bound: k.Bound}
	}
	return &d
}
