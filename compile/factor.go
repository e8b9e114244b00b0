package compile

import (
	"github.com/tartanml/tartan/tile"
)

// Factoring constant multipliers out of sums (part of pass 2, simplify).
//
// Differentiation turns a normalisation's statistics into sums such as
//
//	Σ_{n,h,w} −(dy·γ[c]·x̂) / σ[c]     and     Σ_{n,h,w} −(dy·γ[c]) / σ[c]
//
// beside Σ dy·x̂ and Σ dy: four passes over the gradient where two hold
// everything, since γ[c] and σ[c] do not change along the sum. The rewrite
// takes the factors that depend only on the output point out of the sum:
//
//	Σ_i (a_i · c) → (Σ_i a_i) · c,    Σ_i (a_i / c) → (Σ_i a_i) / c,    Σ_i −a_i → −Σ_i a_i
//
// after which the remaining sums are the same nodes as their neighbours and
// common-subexpression elimination merges them; the factors become an
// elementwise epilogue on the (small) output.
//
// It applies to a sum contraction of one operand with no constraints whose
// accesses are distinct plain indices (every point of the operand is
// summed once) and which sums over some index of more than one value,
// whose operand is a tree of multiplications, divisions and
// negations of floating-point values; a factor is constant along the sum
// when it is a broadcast whose source varies only along output indices.
// Unlike simplify's identities this one reassociates floating-point
// arithmetic (each term is no longer rounded after its multiplication by
// the factor), as splitting a sum does; results agree to rounding.
func (s *simplifier) factorSum(n *node, args []*node) *node {
	op, ok := n.op.(*tile.ContractionOp)
	if !ok || op.Agg != tile.Sum || op.Comb != tile.CombNone || len(args) != 1 || len(op.Constraints) > 0 || !n.dtype.IsFloat() {
		return nil
	}
	a := args[0]
	if e, ok := a.op.(*tile.ElementwiseOp); !ok || (e.Fn != tile.Mul && e.Fn != tile.Div && e.Fn != tile.Neg) {
		return nil
	}
	outIdx := map[string]int{} // output index → output dimension
	for d, x := range op.Out {
		name, ok := x.IsIndex()
		if !ok {
			return nil
		}
		if _, dup := outIdx[name]; dup {
			return nil
		}
		outIdx[name] = d
	}
	access := make([]string, len(op.Access[0]))
	seen := map[string]bool{}
	reduces := false
	for d, x := range op.Access[0] {
		name, ok := x.IsIndex()
		if !ok || seen[name] {
			return nil
		}
		seen[name], access[d] = true, name
		_, isOut := outIdx[name]
		reduces = reduces || !isOut && a.shape[d] > 1
	}
	if !reduces {
		// A copy or a reshaping sum: nothing to take the factors out of.
		return nil
	}
	var fs []factor
	neg := false
	var flatten func(x *node, den bool)
	flatten = func(x *node, den bool) {
		if e, ok := x.op.(*tile.ElementwiseOp); ok && x.dtype == n.dtype {
			switch e.Fn {
			case tile.Mul:
				flatten(x.args[0], den)
				flatten(x.args[1], den)
				return
			case tile.Div:
				flatten(x.args[0], den)
				flatten(x.args[1], !den)
				return
			case tile.Neg:
				neg = !neg
				flatten(x.args[0], den)
				return
			}
		}
		fs = append(fs, factor{x, den, constantAlong(x, access, outIdx)})
	}
	flatten(a, false)
	var kept, out []factor
	for _, f := range fs {
		if f.constant {
			out = append(out, f)
		} else {
			kept = append(kept, f)
		}
	}
	if len(out) == 0 && !neg || len(kept) == 0 || kept[0].den {
		return nil
	}
	// The sum of what varies, rebuilt in its original order.
	body := kept[0].n
	for _, f := range kept[1:] {
		body = s.elementwise(a, fnOf(f.den), body, f.n)
	}
	if body == a {
		return nil
	}
	sum := s.intern(&node{op: op, dtype: n.dtype, shape: n.shape, src: n.src}, []*node{body})
	r := sum
	for _, f := range out {
		r = s.elementwise(n, fnOf(f.den), r, s.onOutput(n, op, access, f.n))
	}
	if neg {
		r = s.elementwise(n, tile.Neg, r)
	}
	s.st.identities++
	return r
}

// factor is one multiplicand (or divisor, den) of a sum's operand.
type factor struct {
	n        *node
	den      bool
	constant bool // constant along the sum: a broadcast of output indices
}

func fnOf(den bool) tile.Fn {
	if den {
		return tile.Div
	}
	return tile.Mul
}

// constantAlong reports whether x, a tensor of the sum's operand shape read
// at the plain indices access, is a broadcast whose source varies only
// along dimensions read by output indices.
func constantAlong(x *node, access []string, outIdx map[string]int) bool {
	if _, ok := x.op.(*tile.BroadcastOp); !ok {
		return false
	}
	src := x.args[0].shape
	off := len(x.shape) - len(src)
	for j, e := range src {
		if e == 1 {
			continue
		}
		if _, ok := outIdx[access[off+j]]; !ok {
			return false
		}
	}
	return true
}

// onOutput returns the broadcast factor x of the sum n (contraction op with
// operand indices access) as a tensor of n's shape: its source read at the
// output point.
func (s *simplifier) onOutput(n *node, op *tile.ContractionOp, access []string, x *node) *node {
	src := x.args[0]
	off := len(x.shape) - len(src.shape)
	idx := make([]tile.Affine, len(src.shape))
	for j, e := range src.shape {
		if e == 1 {
			idx[j] = tile.Lit(0)
		} else {
			idx[j] = tile.Ix(access[off+j])
		}
	}
	c := &tile.ContractionOp{Agg: tile.Sum, Comb: tile.CombNone, Out: op.Out, Access: [][]tile.Affine{idx}}
	return s.intern(&node{op: c, dtype: src.dtype, shape: n.shape, src: n.src}, []*node{src})
}

// elementwise interns fn(args) with the dtype and shape of n and the
// sources of n.
func (s *simplifier) elementwise(n *node, fn tile.Fn, args ...*node) *node {
	return s.intern(&node{op: &tile.ElementwiseOp{Fn: fn}, dtype: n.dtype, shape: n.shape, src: n.src}, args)
}
