package compile

import (
	"fmt"

	"github.com/tartanml/tartan/tile"
)

// verify is pass 1. It rejects a graph with a building error and re-checks
// every invariant the later passes rely on, so that a graph assembled by any
// means (builder, parser, a future importer) either compiles correctly or
// fails with an error naming the node: node order and membership, dtypes and
// shapes, the operand shapes of every op, contraction index ranges, the
// leaves' names, the outputs and the updates.
func verify(g *tile.Graph) error {
	if g == nil {
		return fmt.Errorf("compile: nil graph")
	}
	if err := g.Err(); err != nil {
		return fmt.Errorf("compile: graph %q has a building error: %w", g.Name(), err)
	}
	for i, t := range g.Nodes() {
		if err := verifyNode(g, i, t); err != nil {
			return fmt.Errorf("compile: graph %q: node %v: %w", g.Name(), t, err)
		}
	}
	member := func(t *tile.Tensor) bool {
		return t != nil && t.Valid() && t.Graph() == g && t.ID() < len(g.Nodes()) && g.Nodes()[t.ID()] == t
	}
	for _, t := range g.Inputs() {
		if _, ok := t.Op().(*tile.InputOp); !ok || !member(t) {
			return fmt.Errorf("compile: graph %q: input list holds %v", g.Name(), t)
		}
	}
	for _, t := range g.Variables() {
		if _, ok := t.Op().(*tile.VariableOp); !ok || !member(t) {
			return fmt.Errorf("compile: graph %q: variable list holds %v", g.Name(), t)
		}
	}
	for _, t := range g.Nodes() {
		if r, ok := t.Op().(*tile.RecurrenceOp); ok {
			if n := r.Next(); n == nil {
				return fmt.Errorf("compile: graph %q: recurrence %v is never closed (tile.Graph.CloseRecurrence)", g.Name(), t)
			} else if !member(n) || n == t {
				return fmt.Errorf("compile: graph %q: recurrence %v is closed with %v, not another node of the graph", g.Name(), t, n)
			}
		}
	}
	names := map[string]bool{}
	for _, o := range g.Outputs() {
		if !member(o.Tensor) {
			return fmt.Errorf("compile: graph %q: output %q is not a node of the graph", g.Name(), o.Name)
		}
		if o.Name == "" || names[o.Name] {
			return fmt.Errorf("compile: graph %q: output name %q is empty or repeated", g.Name(), o.Name)
		}
		names[o.Name] = true
	}
	updated := map[*tile.Tensor]bool{}
	for _, u := range g.Updates() {
		if !member(u.Variable) || !member(u.Value) {
			return fmt.Errorf("compile: graph %q: an update names a tensor outside the graph", g.Name())
		}
		vo, ok := u.Variable.Op().(*tile.VariableOp)
		if !ok {
			return fmt.Errorf("compile: graph %q: update target %v is not a variable", g.Name(), u.Variable)
		}
		if updated[u.Variable] {
			return fmt.Errorf("compile: graph %q: variable %q is updated twice", g.Name(), vo.Name)
		}
		updated[u.Variable] = true
		if u.Value.DType() != u.Variable.DType() || !u.Value.Shape().Equal(u.Variable.Shape()) {
			return fmt.Errorf("compile: graph %q: variable %q is %s%v but its new value %v is not",
				g.Name(), vo.Name, u.Variable.DType(), u.Variable.Shape(), u.Value)
		}
	}
	return nil
}

func verifyNode(g *tile.Graph, i int, t *tile.Tensor) error {
	if !t.Valid() || t.Graph() != g || t.ID() != i {
		return fmt.Errorf("is not node %d of the graph", i)
	}
	if !t.DType().Valid() {
		return fmt.Errorf("invalid dtype")
	}
	shape := t.Shape()
	for _, d := range shape {
		if d < 0 {
			return fmt.Errorf("negative dimension")
		}
	}
	args := t.Args()
	for j, a := range args {
		if a == nil || !a.Valid() || a.Graph() != g || a.ID() >= i {
			return fmt.Errorf("argument %d is not an earlier node of the graph", j)
		}
	}
	nargs := func(n int) error {
		if len(args) != n {
			return fmt.Errorf("has %d arguments, want %d", len(args), n)
		}
		return nil
	}
	sameShape := func() error {
		for j, a := range args {
			if !a.Shape().Equal(shape) {
				return fmt.Errorf("argument %d has shape %v, want %v", j, a.Shape(), shape)
			}
		}
		return nil
	}
	switch op := t.Op().(type) {
	case *tile.InputOp:
		if g.Leaf(op.Name) != t {
			return fmt.Errorf("input %q is not registered under its name", op.Name)
		}
		return nargs(0)
	case *tile.VariableOp:
		if g.Leaf(op.Name) != t {
			return fmt.Errorf("variable %q is not registered under its name", op.Name)
		}
		return nargs(0)
	case *tile.ConstantOp:
		v := op.Value
		if v == nil || v.DType != t.DType() || !v.Shape.Equal(shape) || len(v.Data) != shape.Size() {
			return fmt.Errorf("constant value does not match the node's dtype and shape")
		}
		return nargs(0)
	case *tile.ElementwiseOp:
		if err := nargs(op.Fn.Arity()); err != nil {
			return err
		}
		if op.Fn.Arity() == 0 {
			return fmt.Errorf("invalid function")
		}
		if err := sameShape(); err != nil {
			return err
		}
		vals := args
		if op.Fn == tile.Select {
			if args[0].DType() != tile.Bool {
				return fmt.Errorf("select condition is %v, want bool", args[0].DType())
			}
			vals = args[1:]
		}
		for _, a := range vals {
			if a.DType() != vals[0].DType() {
				return fmt.Errorf("operand dtypes differ")
			}
		}
		want := vals[0].DType()
		if op.Fn.IsComparison() {
			want = tile.Bool
		}
		if t.DType() != want {
			return fmt.Errorf("result dtype %v, want %v", t.DType(), want)
		}
	case *tile.CastOp:
		if err := nargs(1); err != nil {
			return err
		}
		return sameShape()
	case *tile.StopGradientOp:
		if err := nargs(1); err != nil {
			return err
		}
		if args[0].DType() != t.DType() {
			return fmt.Errorf("result dtype %v, want %v", t.DType(), args[0].DType())
		}
		return sameShape()
	case *tile.ContractionOp:
		return verifyContraction(op, t, args)
	case *tile.ReshapeOp:
		if err := nargs(1); err != nil {
			return err
		}
		if args[0].Size() != shape.Size() || args[0].DType() != t.DType() {
			return fmt.Errorf("reshape of %s%v to %s%v", args[0].DType(), args[0].Shape(), t.DType(), shape)
		}
	case *tile.TransposeOp:
		if err := nargs(1); err != nil {
			return err
		}
		in := args[0].Shape()
		if len(op.Perm) != len(in) || len(in) != len(shape) {
			return fmt.Errorf("permutation %v for shape %v", op.Perm, in)
		}
		seen := make([]bool, len(in))
		for k, p := range op.Perm {
			if p < 0 || p >= len(in) || seen[p] || in[p] != shape[k] {
				return fmt.Errorf("permutation %v does not map %v to %v", op.Perm, in, shape)
			}
			seen[p] = true
		}
	case *tile.SliceOp:
		if err := nargs(1); err != nil {
			return err
		}
		in := args[0].Shape()
		r := len(in)
		if len(op.Start) != r || len(op.Stop) != r || len(op.Step) != r || len(shape) != r {
			return fmt.Errorf("slice parameters do not match shape %v", in)
		}
		for d := range r {
			if op.Step[d] <= 0 || op.Start[d] < 0 || op.Start[d] > op.Stop[d] || op.Stop[d] > in[d] ||
				shape[d] != (op.Stop[d]-op.Start[d]+op.Step[d]-1)/op.Step[d] {
				return fmt.Errorf("slice dimension %d out of range for %v", d, in)
			}
		}
	case *tile.ConcatOp:
		if len(args) == 0 {
			return fmt.Errorf("concat of nothing")
		}
		r := len(shape)
		if op.Axis < 0 || op.Axis >= r {
			return fmt.Errorf("concat axis %d out of range", op.Axis)
		}
		total := 0
		for j, a := range args {
			s := a.Shape()
			if len(s) != r || a.DType() != t.DType() {
				return fmt.Errorf("operand %d is %s%v", j, a.DType(), s)
			}
			for d := range r {
				if d != op.Axis && s[d] != shape[d] {
					return fmt.Errorf("operand %d has shape %v, incompatible with %v", j, s, shape)
				}
			}
			total += s[op.Axis]
		}
		if total != shape[op.Axis] {
			return fmt.Errorf("operands add up to %d along axis %d, want %d", total, op.Axis, shape[op.Axis])
		}
	case *tile.PadOp:
		if err := nargs(1); err != nil {
			return err
		}
		in := args[0].Shape()
		if len(op.Lo) != len(in) || len(op.Hi) != len(in) || len(shape) != len(in) {
			return fmt.Errorf("padding %v, %v does not match %v", op.Lo, op.Hi, in)
		}
		for d := range in {
			if op.Lo[d] < 0 || op.Hi[d] < 0 || in[d]+op.Lo[d]+op.Hi[d] != shape[d] {
				return fmt.Errorf("padding %v, %v of %v does not give %v", op.Lo, op.Hi, in, shape)
			}
		}
	case *tile.BroadcastOp:
		if err := nargs(1); err != nil {
			return err
		}
		if b, ok := tile.BroadcastShapes(args[0].Shape(), shape); !ok || !b.Equal(shape) || args[0].Rank() > len(shape) {
			return fmt.Errorf("cannot broadcast %v to %v", args[0].Shape(), shape)
		}
	case *tile.GatherOp:
		if err := nargs(2); err != nil {
			return err
		}
		data, ind := args[0].Shape(), args[1].Shape()
		if !args[1].DType().IsInt() || op.Axis < 0 || op.Axis >= len(data) {
			return fmt.Errorf("gather needs integer indices and an axis of the data")
		}
		want := append(append(data[:op.Axis:op.Axis], ind...), data[op.Axis+1:]...)
		if !want.Equal(shape) {
			return fmt.Errorf("gather result shape %v, want %v", shape, want)
		}
	case *tile.ScatterAddOp:
		if err := nargs(2); err != nil {
			return err
		}
		upd, ind := args[0].Shape(), args[1].Shape()
		if !args[1].DType().IsInt() || op.Axis < 0 || op.Axis >= len(shape) || t.DType() == tile.Bool {
			return fmt.Errorf("scatter_add needs integer indices, numeric updates and an axis of the result")
		}
		want := append(append(shape[:op.Axis:op.Axis], ind...), shape[op.Axis+1:]...)
		if !want.Equal(upd) {
			return fmt.Errorf("updates shape %v, want %v", upd, want)
		}
	case *tile.IotaOp:
		if op.Axis < 0 || op.Axis >= len(shape) || t.DType() == tile.Bool {
			return fmt.Errorf("iota axis %d out of range or bool dtype", op.Axis)
		}
		return nargs(0)
	case *tile.RandomOp:
		if err := nargs(1); err != nil {
			return err
		}
		if args[0].DType() != tile.Int64 || args[0].Rank() != 0 || !t.DType().IsFloat() {
			return fmt.Errorf("random needs a scalar i64 seed and a float dtype")
		}
	case *tile.RecurrenceOp:
		if err := nargs(1); err != nil {
			return err
		}
		if len(shape) == 0 || shape[0] != op.Steps || !tile.Shape(shape[1:]).Equal(args[0].Shape()) || args[0].DType() != t.DType() {
			return fmt.Errorf("recurrence of %d steps from %v has shape %v", op.Steps, args[0], shape)
		}
	default:
		return fmt.Errorf("unknown op %T", op)
	}
	return nil
}

func verifyContraction(c *tile.ContractionOp, t *tile.Tensor, args []*tile.Tensor) error {
	if c.Agg == tile.AggInvalid || c.Agg > tile.Assign {
		return fmt.Errorf("invalid aggregation")
	}
	if c.Comb.Arity() == 0 || c.Comb.Arity() != len(args) || len(c.Access) != len(args) {
		return fmt.Errorf("combination %d takes %d operands, got %d", c.Comb, c.Comb.Arity(), len(args))
	}
	if len(c.Out) != t.Rank() {
		return fmt.Errorf("output access has %d expressions for rank %d", len(c.Out), t.Rank())
	}
	shapes := make([]tile.Shape, len(args))
	for i, a := range args {
		shapes[i] = a.Shape()
		if len(c.Access[i]) != a.Rank() {
			return fmt.Errorf("operand %d access has %d expressions for rank %d", i, len(c.Access[i]), a.Rank())
		}
	}
	vals := args
	if c.Comb == tile.CombEq {
		if args[0].DType() != args[1].DType() {
			return fmt.Errorf("compared operands differ in dtype")
		}
		vals = args[2:]
	}
	for _, v := range vals {
		if v.DType() != t.DType() {
			return fmt.Errorf("operand dtype %v differs from the result's %v", v.DType(), t.DType())
		}
	}
	for _, k := range c.Constraints {
		if len(k.Expr.Terms) == 0 {
			return fmt.Errorf("constraint without an index")
		}
	}
	if _, err := c.Ranges(t.Shape(), shapes); err != nil {
		return err
	}
	return nil
}
