package grad

import (
	"fmt"

	"github.com/tartanml/tartan/tile"
)

// Derivative rules for contractions.
//
// A contraction O[out] = agg_p comb(A[a(p)], B[b(p)], …) runs over an index
// space P: the integer points p where every access (the output's included) is
// in bounds and every constraint holds. The derivative of every rule here is
// built from contractions over exactly the same P. It writes to the operand's
// access a(p) (possibly compound, such as 2*y + i - 1) with the operand's shape,
// reads the output's cotangent dO at out(p), and keeps every other access of
// the original either as an operand or, when the rule does not read that
// tensor, as constraints 0 ≤ e < dim, one per dimension. Keeping them matters:
// for O[i] = +(A[i] + B[j]) the derivative dA[i] = +(dO[i]) must still run j
// over B's extent.
//
// The rules, per aggregation:
//
//   - Sum and Assign: with CombMul, dA[a] += dO[out] · B[b] (and symmetrically
//     for B); with CombAdd and CombNone, dA[a] += dO[out]; with CombEq
//     (A == B ? C) only C has a derivative, dC[c] += (A[a] == B[b]) ? dO[out].
//     Assign is treated as a sum, which is exact when each output element
//     receives one contribution, as Assign intends.
//   - Max and Min (CombNone only): each output element's cotangent goes to
//     the first point of P that attains the extremum, in the lexicographic
//     order of the contraction's reduction indices, and to no other. Ties are
//     common (flat image regions, activations clipped at zero), and this is
//     what TensorFlow and PyTorch do: for a max pool I[n, s·y + i − p,
//     s·x + j − p, c] the reduction indices are (i, j), so the first maximum
//     in row-major window order wins. With Pos numbering the reduction
//     indices' box from 1, two contractions do it:
//     F[out] = <(I[a] == O[out] ? Pos[r]) finds the first position attaining
//     O, and dI[a] += (Pos[r] == F[out]) ? dO[out] (see extremeRule). A NaN
//     makes the extremum NaN, and its cotangent goes to the first NaN.
//     Max and Min over a combination of several operands have no rule and are
//     reported as errors.
//   - Prod (CombNone, CombMul, CombEq): dA = (1/A) ⊙ S with S[a] += dO[out]·O[out]
//     over P, that is dO·O/A. Operands containing zeros give infinite or NaN
//     derivatives; Prod over CombAdd has no rule and is reported as an error.
//
// An operand used more than once (A * A) gets one contribution per position,
// which the walk adds up.

// contractionDiffArgs returns the operand positions that carry a derivative:
// all of them, except the two compared operands of CombEq.
func contractionDiffArgs(op *tile.ContractionOp) []int {
	switch op.Comb {
	case tile.CombNone:
		return []int{0}
	case tile.CombMul, tile.CombAdd:
		return []int{0, 1}
	case tile.CombEq:
		return []int{2}
	}
	return nil
}

// contractionSupported reports an error for the aggregation and combination
// pairs that have no derivative rule.
func contractionSupported(t *tile.Tensor, op *tile.ContractionOp) error {
	switch op.Agg {
	case tile.Sum, tile.Assign:
		return nil
	case tile.Max, tile.Min:
		if op.Comb == tile.CombNone {
			_, _, _, err := positionBox(t, op)
			return err
		}
		return fmt.Errorf("grad: contraction %v (%s): %v aggregation is differentiable only over a single operand; compute the combination in a separate node first",
			t, formatContraction(t, op), op.Agg)
	case tile.Prod:
		if op.Comb != tile.CombAdd {
			return nil
		}
		return fmt.Errorf("grad: contraction %v (%s): product aggregation of a sum of operands is not differentiable here; compute the sum in a separate node first",
			t, formatContraction(t, op))
	}
	return fmt.Errorf("grad: contraction %v has invalid aggregation %v", t, op.Agg)
}

// formatContraction writes op in the textual form, naming operands A, B, C.
func formatContraction(t *tile.Tensor, op *tile.ContractionOp) string {
	names := []string{"A", "B", "C"}[:len(t.Args())]
	return tile.FormatContraction(op, "O", names, t.Shape())
}

// contractionRule builds the cotangents of the contraction t's operands from
// its cotangent dy.
func contractionRule(g *tile.Graph, t *tile.Tensor, op *tile.ContractionOp, dy *tile.Tensor, want []bool) ([]*tile.Tensor, error) {
	if err := contractionSupported(t, op); err != nil {
		return nil, err
	}
	args := t.Args()
	out := make([]*tile.Tensor, len(args))
	for k := range args {
		if !want[k] {
			continue
		}
		switch op.Agg {
		case tile.Sum, tile.Assign:
			out[k] = spread(g, op, args, k, dy, op.Comb == tile.CombMul)
		case tile.Max, tile.Min:
			d, err := extremeRule(g, t, op, dy)
			if err != nil {
				return nil, err
			}
			out[k] = d
		case tile.Prod:
			if s := spread(g, op, args, k, g.Mul(dy, t), false); s != nil {
				out[k] = g.Mul(s, g.Elementwise(tile.Recip, args[k]))
			}
		}
	}
	return out, nil
}

// spread builds the contraction that sends seed, read at the output access,
// back to operand k over the original index space:
//
//	D[a_k] = +(seed[out] · other[a_other])   when mulOther (CombMul),
//	D[a_k] = +(seed[out])                     otherwise,
//	D[a_2] = +(A[a_0] == B[a_1] ? seed[out])  for CombEq.
//
// Accesses that are not operands of D are kept as constraints. It returns nil
// when the index space is empty because a constant access lies out of range,
// in which case the derivative is zero.
func spread(g *tile.Graph, op *tile.ContractionOp, args []*tile.Tensor, k int, seed *tile.Tensor, mulOther bool) *tile.Tensor {
	shape := args[k].Shape()
	if op.Comb == tile.CombEq {
		return g.Contract(tile.Sum, tile.CombEq, shape, op.Access[k], []tile.Operand{
			{Tensor: args[0], Index: op.Access[0]},
			{Tensor: args[1], Index: op.Access[1]},
			{Tensor: seed, Index: op.Out},
		}, op.Constraints...)
	}
	operands := []tile.Operand{{Tensor: seed, Index: op.Out}}
	constraints := append([]tile.Constraint(nil), op.Constraints...)
	for j, a := range args {
		if j == k {
			continue
		}
		if mulOther {
			operands = append(operands, tile.Operand{Tensor: a, Index: op.Access[j]})
			continue
		}
		cs, ok := accessConstraints(op.Access[j], a.Shape())
		if !ok {
			return nil
		}
		constraints = append(constraints, cs...)
	}
	comb := tile.CombNone
	if len(operands) == 2 {
		comb = tile.CombMul
	}
	return g.Contract(tile.Sum, comb, shape, op.Access[k], operands, constraints...)
}

// accessConstraints turns the bounds of an access into constraints
// 0 ≤ e < dim. Constant expressions become no constraint when in range; when
// one is out of range the index space is empty and ok is false.
func accessConstraints(access []tile.Affine, shape tile.Shape) (cs []tile.Constraint, ok bool) {
	for d, e := range access {
		if len(e.Terms) == 0 {
			if e.Const < 0 || e.Const >= shape[d] {
				return nil, false
			}
			continue
		}
		cs = append(cs, tile.Constraint{Expr: e, Bound: shape[d]})
	}
	return cs, true
}
