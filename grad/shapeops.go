package grad

import (
	"fmt"

	"github.com/tartanml/tartan/tile"
)

// Derivative rules for shape ops. Each moves the cotangent back to where the
// forward op read its elements:
//
//   - Reshape: reshape back to the operand's shape.
//   - Transpose: transpose by the inverse permutation.
//   - Slice: with unit steps, Pad the cotangent with zeros back to the
//     operand's shape; with larger steps, the contraction
//     dX[start + step·i] = +(dY[i]) over every dimension.
//   - Concat: operand k gets the slice of the cotangent it was copied to.
//   - Pad: slice the interior back out; the padding value is a constant.
//   - Broadcast: sum the cotangent over the repeated dimensions (the leading
//     ones the operand lacks and those where it has size 1) with a sum
//     contraction, then reshape to the operand's shape.
//   - Gather: ScatterAdd the cotangent into the data's shape at the same
//     indices, so repeated indices accumulate; positions outside the axis read
//     0 forward and are dropped backward. Indices carry no derivative.
//   - ScatterAdd: Gather the cotangent at the same indices (its adjoint).
//
// Inputs, variables, constants, Iota and Random are leaves: nothing flows
// further.

// shapeRule builds the cotangent of the shape op t's differentiable operands
// from its cotangent dy.
func shapeRule(g *tile.Graph, t *tile.Tensor, dy *tile.Tensor, want []bool) ([]*tile.Tensor, error) {
	args := t.Args()
	out := make([]*tile.Tensor, len(args))
	x := args[0]
	switch op := t.Op().(type) {
	case *tile.ReshapeOp:
		out[0] = g.Reshape(dy, x.Shape())
	case *tile.TransposeOp:
		inv := make([]int, len(op.Perm))
		for i, p := range op.Perm {
			inv[p] = i
		}
		out[0] = g.Transpose(dy, inv)
	case *tile.SliceOp:
		out[0] = unslice(g, op, dy, x.Shape())
	case *tile.ConcatOp:
		offset := 0
		for k, a := range args {
			size := a.Dim(op.Axis)
			if want[k] {
				start := make([]int, t.Rank())
				stop := t.Shape()
				start[op.Axis], stop[op.Axis] = offset, offset+size
				out[k] = g.Slice(dy, start, stop, nil)
			}
			offset += size
		}
	case *tile.PadOp:
		stop := make([]int, x.Rank())
		for d := range stop {
			stop[d] = op.Lo[d] + x.Dim(d)
		}
		out[0] = g.Slice(dy, op.Lo, stop, nil)
	case *tile.BroadcastOp:
		out[0] = unbroadcast(g, dy, x.Shape())
	case *tile.GatherOp:
		out[0] = g.ScatterAdd(dy, args[1], op.Axis, x.Shape())
	case *tile.ScatterAddOp:
		out[0] = g.Gather(dy, args[1], op.Axis)
	default:
		return nil, fmt.Errorf("grad: no derivative rule for %s node %v", t.Op().Kind(), t)
	}
	return out, nil
}

// unslice places the cotangent dy of a slice back into a zero tensor of the
// sliced operand's shape.
func unslice(g *tile.Graph, op *tile.SliceOp, dy *tile.Tensor, shape tile.Shape) *tile.Tensor {
	unit := true
	for _, s := range op.Step {
		unit = unit && s == 1
	}
	if unit {
		hi := make([]int, len(shape))
		for d := range hi {
			hi[d] = shape[d] - op.Start[d] - dy.Dim(d)
		}
		return g.Pad(dy, op.Start, hi, 0)
	}
	out := make([]tile.Affine, len(shape))
	in := make([]tile.Affine, len(shape))
	for d := range shape {
		i := tile.Ix(fmt.Sprintf("i%d", d))
		in[d] = i
		out[d] = i.Times(op.Step[d]).AddConst(op.Start[d])
	}
	return g.Contract(tile.Sum, tile.CombNone, shape, out, []tile.Operand{{Tensor: dy, Index: in}})
}

// unbroadcast sums the cotangent dy of a broadcast over the dimensions the
// broadcast repeated and reshapes the sum to the operand's shape.
func unbroadcast(g *tile.Graph, dy *tile.Tensor, shape tile.Shape) *tile.Tensor {
	full := dy.Shape()
	off := len(full) - len(shape)
	in := make([]tile.Affine, len(full))
	for d := range full {
		in[d] = tile.Ix(fmt.Sprintf("i%d", d))
	}
	var out []tile.Affine
	var kept tile.Shape
	for d, n := range shape {
		if n == full[off+d] {
			out = append(out, in[off+d])
			kept = append(kept, n)
		}
	}
	sum := g.Contract(tile.Sum, tile.CombNone, kept, out, []tile.Operand{{Tensor: dy, Index: in}})
	return g.Reshape(sum, shape)
}
