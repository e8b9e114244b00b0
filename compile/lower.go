package compile

import (
	"fmt"

	"github.com/tartanml/tartan/kir"
	"github.com/tartanml/tartan/tile"
)

// nest is a node lowered to loop-nest form: the kir kernel that would compute
// the node alone. Loop variables 0…rank-1 are the node's output coordinates
// and the Reduce loops follow. Loads in body and in Where conditions refer to
// nodes, not buffers: Buf is the id of the node read, at the given index, and
// fuse.go decides whether that becomes a real load or the node's own nest
// inlined at that index.
//
// Every nest keeps one invariant that inlining relies on: wherever all of its
// Where conditions hold (and its output coordinates are in range), every
// non-Fill load in body is in range.
type nest struct {
	shape  tile.Shape
	dtype  tile.DType
	reduce []kir.Loop
	agg    tile.Agg
	where  []kir.Cond
	body   *kir.Expr
}

// ranges returns the loop variable ranges of the nest.
func (n *nest) ranges() []kir.Range {
	k := kir.Kernel{Shape: n.shape, Reduce: n.reduce}
	return k.VarRanges()
}

// lower is pass 3: it returns the nest of every node that is computed (nil
// for inputs, variables and constants, which are buffers or inline values).
func lower(g *graph) ([]*nest, error) {
	nests := make([]*nest, len(g.nodes))
	for _, n := range g.nodes {
		ns, err := lowerNode(n)
		if err != nil {
			return nil, fmt.Errorf("compile: graph %q: lowering node %v: %w", g.name, n, err)
		}
		nests[n.id] = ns
	}
	return nests, nil
}

// ref reads node n at idx.
func ref(n *node, idx []*kir.Ix) *kir.Expr {
	return &kir.Expr{Op: kir.Load, DType: n.dtype, Buf: n.id, Index: idx}
}

// fillRef reads node n at idx, yielding v out of range.
func fillRef(n *node, idx []*kir.Ix, v float64) *kir.Expr {
	return &kir.Expr{Op: kir.Load, DType: n.dtype, Buf: n.id, Index: idx, OOB: kir.Fill, Value: v}
}

func constExpr(dt tile.DType, v float64) *kir.Expr {
	return &kir.Expr{Op: kir.Const, DType: dt, Value: tile.RoundTo(dt, v)}
}

func apply(fn tile.Fn, dt tile.DType, args ...*kir.Expr) *kir.Expr {
	return &kir.Expr{Op: kir.Apply, Fn: fn, DType: dt, Args: args}
}

func indexValue(dt tile.DType, x *kir.Ix) *kir.Expr {
	return &kir.Expr{Op: kir.IndexValue, DType: dt, Index: []*kir.Ix{x}}
}

// identityIndex returns the index x0, x1, … of a rank-r node.
func identityIndex(r int) []*kir.Ix {
	idx := make([]*kir.Ix, r)
	for d := range idx {
		idx[d] = kir.IxOfVar(d)
	}
	return idx
}

// flatIndex returns the row-major position of idx in shape, simplified.
func flatIndex(idx []*kir.Ix, shape tile.Shape, vars []kir.Range) *kir.Ix {
	st := shape.Strides()
	var x *kir.Ix = kir.IxOfConst(0)
	for d, i := range idx {
		x = kir.IxSum(x, kir.IxTimes(i, st[d]))
	}
	return kir.Simplify(x, vars)
}

// inlineConst reports whether a constant is one repeated value, which is then
// written into expressions rather than stored.
func inlineConst(n *node) (float64, bool) {
	if _, ok := n.op.(*tile.ConstantOp); !ok {
		return 0, false
	}
	return constValue(n)
}

func lowerNode(n *node) (*nest, error) {
	r := len(n.shape)
	ns := &nest{shape: n.shape, dtype: n.dtype, agg: tile.Assign}
	vars := ns.ranges()
	id := identityIndex(r)
	simp := func(x *kir.Ix) *kir.Ix { return kir.Simplify(x, vars) }
	if n.shape.Size() == 0 && !isLeaf(n) {
		// No points to compute: keep index arithmetic over empty shapes
		// (a modulo by a zero dimension) out of the program.
		ns.body = constExpr(n.dtype, 0)
		return ns, nil
	}
	switch op := n.op.(type) {
	case *tile.InputOp, *tile.VariableOp, *tile.RecurrenceOp:
		// A recurrence's state has a buffer that the loop fills (loops.go).
		return nil, nil
	case *tile.ConstantOp:
		if v, ok := inlineConst(n); ok {
			ns.body = constExpr(n.dtype, v)
			return ns, nil
		}
		return nil, nil
	case *tile.ElementwiseOp:
		args := make([]*kir.Expr, len(n.args))
		for i, a := range n.args {
			args[i] = ref(a, id)
		}
		ns.body = apply(op.Fn, n.dtype, args...)
	case *tile.CastOp:
		ns.body = &kir.Expr{Op: kir.Cast, DType: n.dtype, Args: []*kir.Expr{ref(n.args[0], id)}}
	case *tile.ReshapeOp:
		in := n.args[0].shape
		flat := flatIndex(id, n.shape, vars)
		st := in.Strides()
		idx := make([]*kir.Ix, len(in))
		for d := range in {
			x := flat
			if st[d] > 1 {
				x = kir.IxFloorDivBy(x, st[d])
			}
			if d > 0 {
				x = kir.IxModBy(x, in[d])
			}
			idx[d] = simp(x)
		}
		ns.body = ref(n.args[0], idx)
	case *tile.TransposeOp:
		idx := make([]*kir.Ix, r)
		for i, p := range op.Perm {
			idx[p] = kir.IxOfVar(i)
		}
		ns.body = ref(n.args[0], idx)
	case *tile.SliceOp:
		idx := make([]*kir.Ix, r)
		for d := range idx {
			idx[d] = simp(kir.IxSum(kir.IxTimes(kir.IxOfVar(d), op.Step[d]), kir.IxOfConst(op.Start[d])))
		}
		ns.body = ref(n.args[0], idx)
	case *tile.BroadcastOp:
		in := n.args[0].shape
		off := r - len(in)
		idx := make([]*kir.Ix, len(in))
		for d := range in {
			if in[d] == 1 {
				idx[d] = kir.IxOfConst(0)
			} else {
				idx[d] = kir.IxOfVar(off + d)
			}
		}
		ns.body = ref(n.args[0], idx)
	case *tile.PadOp:
		idx := make([]*kir.Ix, r)
		for d := range idx {
			idx[d] = simp(kir.IxSum(kir.IxOfVar(d), kir.IxOfConst(-op.Lo[d])))
		}
		ns.body = fillRef(n.args[0], idx, op.Value)
	case *tile.ConcatOp:
		ns.body = lowerConcat(n, op.Axis, vars)
	case *tile.GatherOp:
		ind := n.args[1]
		ri := len(ind.shape)
		k := ref(ind, id[op.Axis:op.Axis+ri])
		idx := append(append(append([]*kir.Ix(nil), id[:op.Axis]...), kir.IxOfValue(k)), id[op.Axis+ri:]...)
		ns.body = fillRef(n.args[0], idx, 0)
	case *tile.ScatterAddOp:
		lowerScatter(n, op.Axis, ns)
	case *tile.IotaOp:
		ns.body = indexValue(n.dtype, kir.IxOfVar(op.Axis))
	case *tile.RandomOp:
		ns.body = &kir.Expr{Op: kir.Random, DType: n.dtype, Stream: op.Stream,
			Args:  []*kir.Expr{ref(n.args[0], nil)},
			Index: []*kir.Ix{flatIndex(id, n.shape, vars)}}
	case *tile.ContractionOp:
		return lowerContraction(n, op)
	default:
		return nil, fmt.Errorf("unknown op %T", op)
	}
	return ns, nil
}

// lowerConcat selects, along the axis, the operand whose part the point lies
// in. Every operand load is a Fill load, so the branches not taken never read
// out of range.
func lowerConcat(n *node, axis int, vars []kir.Range) *kir.Expr {
	r := len(n.shape)
	starts := make([]int, len(n.args))
	pos := 0
	for i, a := range n.args {
		starts[i] = pos
		pos += a.shape[axis]
	}
	part := func(i int) *kir.Expr {
		idx := identityIndex(r)
		idx[axis] = kir.Simplify(kir.IxSum(kir.IxOfVar(axis), kir.IxOfConst(-starts[i])), vars)
		return fillRef(n.args[i], idx, 0)
	}
	// The non-empty parts, chosen by a balanced tree of comparisons: an
	// element reads one part after log₂(parts) tests, and the expression
	// nests that deep, not as deep as there are parts.
	var parts []int
	for i, a := range n.args {
		if a.shape[axis] > 0 {
			parts = append(parts, i)
		}
	}
	if len(parts) == 0 {
		return part(len(n.args) - 1)
	}
	var tree func(ps []int) *kir.Expr
	tree = func(ps []int) *kir.Expr {
		if len(ps) == 1 {
			return part(ps[0])
		}
		mid := len(ps) / 2
		cond := apply(tile.Lt, tile.Bool, indexValue(tile.Int64, kir.IxOfVar(axis)), constExpr(tile.Int64, float64(starts[ps[mid]])))
		return apply(tile.Select, n.dtype, cond, tree(ps[:mid]), tree(ps[mid:]))
	}
	return tree(parts)
}

// lowerScatter sums, over every position j of the indices, the update slice
// at j where indices[j] equals the output coordinate along the axis.
func lowerScatter(n *node, axis int, ns *nest) {
	upd, ind := n.args[0], n.args[1]
	r := len(n.shape)
	ri := len(ind.shape)
	for d, s := range ind.shape {
		if s == 0 {
			ns.body = constExpr(n.dtype, 0)
			return
		}
		ns.reduce = append(ns.reduce, kir.Loop{Name: fmt.Sprintf("j%d", d), Lo: 0, Hi: s - 1})
	}
	j := make([]*kir.Ix, ri)
	for d := range j {
		j[d] = kir.IxOfVar(r + d)
	}
	id := identityIndex(r)
	uidx := append(append(append([]*kir.Ix(nil), id[:axis]...), j...), id[axis+1:]...)
	eq := apply(tile.Eq, tile.Bool, ref(ind, j), indexValue(ind.dtype, kir.IxOfVar(axis)))
	ns.body = apply(tile.Select, n.dtype, eq, ref(upd, uidx), constExpr(n.dtype, 0))
	if ri > 0 {
		ns.agg = tile.Sum
	}
}
