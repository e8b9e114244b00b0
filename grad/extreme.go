package grad

import (
	"fmt"
	"math"

	"github.com/tartanml/tartan/tile"
)

// extremeRule builds the cotangent of the single operand I of a max or min
// contraction O[out] = >(I[a]) (or <(I[a])) over the index space P: each
// output element's cotangent goes to the first point of P that attains
// O[out], and every other point, tied or not, gets nothing.
//
// The points that contribute to one output element differ only in their
// ordering indices r1…rk (see orderIndices), which run over the box of their
// ranges [lo_d, hi_d]. A position tensor numbers the box's points in
// lexicographic order of (r1, …, rk), from 1:
//
//	Pos[r1 − lo1, …, rk − lok] = 1 + row-major offset of (r1 − lo1, …, rk − lok).
//
// Two contractions over P, each keeping the original constraints, follow:
//
//	F[out] = <(I[a] == O[out] ? Pos[r − lo])       (first position attaining O)
//	dI[a]  = +(Pos[r − lo] == F[out] ? dO[out])
//
// The outputs are read only at O's access and I is written only at its own,
// so both accesses stay in bounds as in the original, and box points outside
// P (a window hanging over the padding) never enter the min. A NaN makes its
// extremum NaN, and CombEq's equality counts two NaNs as equal, so a NaN
// extremum's cotangent goes to the first NaN of its window. (PyTorch's
// max-pooling kernels route it to a NaN too, the last one of the window
// rather than the first; NumPy's argmax picks the first, as op.ArgMax and
// this rule do.) An output element with no point at all gets F = 0, which
// no position equals: it sends back nothing. Positions are exact (see
// positions).
//
// With no ordering index every output element has at most one point, and the
// single contraction dI[a] = +(I[a] == O[out] ? dO[out]) is exact, a NaN
// included. extremeRule
// returns nil, a zero derivative, when the index space is empty.
func extremeRule(g *tile.Graph, t *tile.Tensor, op *tile.ContractionOp, dy *tile.Tensor) (*tile.Tensor, error) {
	x := t.Args()[0]
	acc := op.Access[0]
	box, at, empty, err := positionBox(t, op)
	switch {
	case err != nil:
		return nil, err
	case empty:
		return nil, nil
	case len(box) == 0:
		return g.Contract(tile.Sum, tile.CombEq, x.Shape(), acc, []tile.Operand{
			{Tensor: x, Index: acc},
			{Tensor: t, Index: op.Out},
			{Tensor: dy, Index: op.Out},
		}, op.Constraints...), nil
	}
	pos := positions(g, box, x.DType())
	first := g.Contract(tile.Min, tile.CombEq, t.Shape(), op.Out, []tile.Operand{
		{Tensor: x, Index: acc},
		{Tensor: t, Index: op.Out},
		{Tensor: pos, Index: at},
	}, op.Constraints...)
	return g.Contract(tile.Sum, tile.CombEq, x.Shape(), acc, []tile.Operand{
		{Tensor: pos, Index: at},
		{Tensor: first, Index: op.Out},
		{Tensor: dy, Index: op.Out},
	}, op.Constraints...), nil
}

// positionBox returns the shape of extremeRule's position tensor, one
// dimension per ordering index of the max or min contraction t, and the
// expressions r − lo that read it. empty reports an index space with no
// point. It fails when the box holds too many points to number in i32, so
// that the planning phase reports it before anything is added to the graph.
func positionBox(t *tile.Tensor, op *tile.ContractionOp) (box tile.Shape, at []tile.Affine, empty bool, err error) {
	order := orderIndices(op)
	if len(order) == 0 {
		return nil, nil, false, nil
	}
	shapes := make([]tile.Shape, len(t.Args()))
	for i, a := range t.Args() {
		shapes[i] = a.Shape()
	}
	ranges, err := op.Ranges(t.Shape(), shapes)
	if err != nil {
		return nil, nil, false, fmt.Errorf("grad: contraction %v (%s): %v", t, formatContraction(t, op), err)
	}
	points := 1
	for _, name := range order {
		r := ranges[name]
		if r.Lo > r.Hi {
			return nil, nil, true, nil
		}
		n := r.Hi - r.Lo + 1
		if points > (math.MaxInt32-1)/n {
			return nil, nil, false, fmt.Errorf("grad: contraction %v (%s): reduction indices %v span more than 2^31 - 2 points, too many to number in i32",
				t, formatContraction(t, op), order)
		}
		points *= n
		box = append(box, n)
		at = append(at, tile.Ix(name).AddConst(-r.Lo))
	}
	return box, at, false, nil
}

// constantPositions is the largest box whose positions extremeRule stores
// as a constant; larger ones are computed from Iota nodes.
const constantPositions = 1 << 12

// positions returns the position tensor Pos of shape box: 1 plus each
// element's row-major offset. Its dtype is dt, the differentiated operand's,
// when dt holds every position exactly, which keeps the two contractions in
// one dtype; otherwise it is i32. Small boxes, such as pooling windows, are
// constants; larger ones are Σ_d Iota_d · stride_d + 1.
func positions(g *tile.Graph, box tile.Shape, dt tile.DType) *tile.Tensor {
	n := box.Size()
	if n+1 > exactInts(dt) {
		dt = tile.Int32
	}
	if n <= constantPositions {
		v := tile.NewValue(dt, box)
		for i := range v.Data {
			v.Data[i] = float64(i + 1)
		}
		return g.Constant(v)
	}
	pos := g.Scalar(1, dt)
	stride := n
	for d, size := range box {
		stride /= size
		pos = g.Add(pos, g.Mul(g.Iota(dt, box, d), g.Scalar(float64(stride), dt)))
	}
	return pos
}

// exactInts returns the bound up to which floating-point dtype dt represents
// every non-negative integer, or 0 for other dtypes.
func exactInts(dt tile.DType) int {
	switch dt {
	case tile.Float64:
		return 1 << 53
	case tile.Float32:
		return 1 << 24
	case tile.Float16:
		return 1 << 11
	case tile.BFloat16:
		return 1 << 8
	}
	return 0
}

// orderIndices returns the indices of op that its output access does not
// determine, in op.Indices() order: the reduction indices, which tell apart
// the points contributing to one output element. An index is determined when
// some output expression has it as its only term besides indices already
// determined, since the output element's coordinate then fixes its value. For
// O[n, y, x, c] = >(I[n, 2·y + i, 2·x + j, c]) they are i and j; for an
// output access such as O[i + j] neither i nor j is determined, and both
// order the points.
func orderIndices(op *tile.ContractionOp) []string {
	known := map[string]bool{}
	for changed := true; changed; {
		changed = false
		for _, e := range op.Out {
			free := ""
			n := 0
			for _, term := range e.Terms {
				if !known[term.Index] {
					free = term.Index
					n++
				}
			}
			if n == 1 {
				known[free], changed = true, true
			}
		}
	}
	var order []string
	for _, name := range op.Indices() {
		if !known[name] {
			order = append(order, name)
		}
	}
	return order
}
