package ref

import (
	"fmt"
	"math"

	"github.com/tartanml/tartan/tile"
)

// access is an affine map from the index point to one tensor's elements:
// dimension d reads coef[d]·point + konst[d] and must lie in [0, dims[d]).
type access struct {
	coef   [][]int
	konst  []int
	dims   []int
	stride []int
}

func newAccess(exprs []tile.Affine, shape tile.Shape, pos map[string]int) access {
	a := access{dims: shape, stride: shape.Strides()}
	for _, e := range exprs {
		c := make([]int, len(pos))
		for _, t := range e.Terms {
			c[pos[t.Index]] = t.Coef
		}
		a.coef = append(a.coef, c)
		a.konst = append(a.konst, e.Const)
	}
	return a
}

// offset returns the element offset the access reads at point p, or false if
// the point is out of bounds.
func (a *access) offset(p []int) (int, bool) {
	off := 0
	for d, c := range a.coef {
		x := a.konst[d]
		for i, k := range c {
			x += k * p[i]
		}
		if x < 0 || x >= a.dims[d] {
			return 0, false
		}
		off += x * a.stride[d]
	}
	return off, true
}

// contract evaluates a contraction point by point over the box of its index
// ranges, skipping points outside the index space.
func contract(c *tile.ContractionOp, args []*tile.Value, out *tile.Value) error {
	shapes := make([]tile.Shape, len(args))
	for i, a := range args {
		shapes[i] = a.Shape
	}
	ranges, err := c.Ranges(out.Shape, shapes)
	if err != nil {
		return err
	}
	names := c.Indices()
	pos := map[string]int{}
	lo := make([]int, len(names))
	hi := make([]int, len(names))
	for i, n := range names {
		pos[n] = i
		lo[i], hi[i] = ranges[n].Lo, ranges[n].Hi
		if lo[i] > hi[i] {
			return nil // empty index space: every output element is zero
		}
	}
	outAcc := newAccess(c.Out, out.Shape, pos)
	accs := make([]access, len(args))
	for i, a := range args {
		accs[i] = newAccess(c.Access[i], a.Shape, pos)
	}
	cons := make([]access, len(c.Constraints))
	for i, k := range c.Constraints {
		cons[i] = newAccess([]tile.Affine{k.Expr}, tile.Shape{k.Bound}, pos)
	}
	touched := make([]bool, len(out.Data))
	p := append([]int(nil), lo...)
	vals := make([]float64, len(args))
	for {
		if o, ok := point(p, &outAcc, accs, cons, args, vals); ok {
			v, contributes := combine(c.Comb, vals)
			if contributes {
				if !touched[o] {
					touched[o] = true
					out.Data[o] = v
				} else {
					out.Data[o] = aggregate(c.Agg, out.Data[o], v)
				}
			}
		}
		d := len(p) - 1
		for ; d >= 0; d-- {
			p[d]++
			if p[d] <= hi[d] {
				break
			}
			p[d] = lo[d]
		}
		if d < 0 {
			break
		}
	}
	if c.Agg == tile.AggInvalid {
		return fmt.Errorf("invalid aggregation")
	}
	return nil
}

// point reads the operands at index point p into vals and returns the output
// offset, or false when p is outside the index space.
func point(p []int, out *access, accs, cons []access, args []*tile.Value, vals []float64) (int, bool) {
	for i := range cons {
		if _, ok := cons[i].offset(p); !ok {
			return 0, false
		}
	}
	o, ok := out.offset(p)
	if !ok {
		return 0, false
	}
	for i := range accs {
		off, ok := accs[i].offset(p)
		if !ok {
			return 0, false
		}
		vals[i] = args[i].Data[off]
	}
	return o, true
}

func combine(c tile.Comb, v []float64) (float64, bool) {
	switch c {
	case tile.CombMul:
		return v[0] * v[1], true
	case tile.CombAdd:
		return v[0] + v[1], true
	case tile.CombEq:
		// Two NaNs are equal here (see tile.CombEq).
		return v[2], v[0] == v[1] || math.IsNaN(v[0]) && math.IsNaN(v[1])
	}
	return v[0], true
}

func aggregate(a tile.Agg, acc, v float64) float64 {
	switch a {
	case tile.Sum:
		return acc + v
	case tile.Max:
		return nanMax(acc, v)
	case tile.Min:
		return nanMin(acc, v)
	case tile.Prod:
		return acc * v
	}
	return v // Assign: the last contribution wins
}
