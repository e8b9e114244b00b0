package onnx

import (
	"github.com/tartanml/tartan/op"
	"github.com/tartanml/tartan/tile"
)

// Linear algebra beyond products: Det, by Gaussian elimination with partial
// pivoting unrolled over the static matrix size, in float64.

func init() { register("Det", opDet) }

// maxDet bounds the matrix size Det unrolls for.
const maxDet = 64

func opDet(c *ctx) {
	x := c.in(0)
	if c.failed() {
		return
	}
	r := x.Rank()
	if r < 2 || x.Dim(-1) != x.Dim(-2) || !x.DType().IsFloat() {
		c.fail("input %s%v must be floating-point square matrices (…, n, n)", FromTile(x.DType()), x.Shape())
		return
	}
	n := x.Dim(-1)
	if n > maxDet {
		c.fail("matrices of %d rows are not supported (%d at most)", n, maxDet)
		return
	}
	g := c.g
	lead := x.Shape()[:r-2]
	b := lead.Size()
	a := g.Reshape(g.Cast(x, tile.Float64), tile.Shape{b, n, n})
	det := g.BroadcastTo(g.Scalar(1, tile.Float64), tile.Shape{b})
	zero := g.Scalar(0, tile.Float64)
	rowIdx := g.Iota(tile.Int64, tile.Shape{b, n}, 1)
	batchBase := g.Mul(g.Iota(tile.Int64, tile.Shape{b, n}, 0), g.Scalar(float64(n), tile.Int64))
	for k := range n {
		// Column k below the diagonal; rows above it cannot be pivots.
		col := g.Reshape(g.Slice(a, []int{0, 0, k}, []int{b, n, k + 1}, nil), tile.Shape{b, n})
		below := g.Elementwise(tile.Ge, rowIdx, g.Scalar(float64(k), tile.Int64))
		mag := g.Select(below, g.Elementwise(tile.Abs, col), g.BroadcastTo(g.Scalar(-1, tile.Float64), tile.Shape{b, n}))
		p := g.Reshape(op.ArgMax(g, mag, 1), tile.Shape{b, 1}) // (b, 1)
		kk := g.Scalar(float64(k), tile.Int64)
		// Swap rows k and p of every matrix.
		isK := g.Elementwise(tile.Eq, rowIdx, kk)
		isP := g.Elementwise(tile.Eq, rowIdx, p)
		src := g.Select(isK, g.BroadcastTo(p, tile.Shape{b, n}), g.Select(isP, g.BroadcastTo(kk, tile.Shape{b, n}), rowIdx))
		rows := g.Gather(g.Reshape(a, tile.Shape{b * n, n}), g.Add(batchBase, src), 0) // (b, n, n)
		a = rows
		swapped := g.Elementwise(tile.Ne, g.Reshape(p, tile.Shape{b}), kk)
		det = g.Select(swapped, g.Neg(det), det)
		pivotRow := g.Slice(a, []int{0, k, 0}, []int{b, k + 1, n}, nil) // (b, 1, n)
		pivot := g.Reshape(g.Slice(pivotRow, []int{0, 0, k}, []int{b, 1, k + 1}, nil), tile.Shape{b})
		det = g.Mul(det, pivot)
		if k == n-1 {
			break
		}
		colK := g.Reshape(g.Slice(a, []int{0, 0, k}, []int{b, n, k + 1}, nil), tile.Shape{b, n})
		after := g.Elementwise(tile.Gt, rowIdx, kk)
		pv := g.Reshape(pivot, tile.Shape{b, 1})
		nonzero := g.Elementwise(tile.Ne, pv, zero)
		factor := g.Select(g.Elementwise(tile.And, after, nonzero), g.Div(colK, g.Select(nonzero, pv, g.ScalarLike(pv, 1))), g.BroadcastTo(zero, tile.Shape{b, n}))
		a = g.Sub(a, g.Mul(g.Reshape(factor, tile.Shape{b, n, 1}), pivotRow))
	}
	c.set(0, g.Cast(g.Reshape(det, lead), x.DType()))
}
