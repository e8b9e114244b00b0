package op

import (
	"github.com/tartanml/tartan/tile"
)

// MatMul returns the matrix product of a and b with NumPy's matmul rules:
// the last two dimensions of each operand are the matrices, (…, M, K) times
// (…, K, N) gives (…, M, N), and the leading (batch) dimensions broadcast
// against each other. A rank-1 a is a row vector (1, K) and a rank-1 b a
// column vector (K, 1); the added dimension is removed from the result. The
// product is one sum contraction; broadcast batch dimensions are read at
// index 0 rather than copied.
func MatMul(g *tile.Graph, a, b *tile.Tensor) *tile.Tensor {
	const op = "matmul"
	if !checkFloat(g, op, in("a", a), in("b", b)) {
		return invalid(g, op)
	}
	if a.Rank() < 1 || b.Rank() < 1 {
		return g.Errorf(op, "operands must have rank >= 1: a %s, b %s", desc(a), desc(b))
	}
	as, bs := a.Shape(), b.Shape()
	vecA, vecB := len(as) == 1, len(bs) == 1
	if vecA {
		as = tile.Shape{1, as[0]}
	}
	if vecB {
		bs = tile.Shape{bs[0], 1}
	}
	ra, rb := len(as), len(bs)
	m, k, k2, n := as[ra-2], as[ra-1], bs[rb-2], bs[rb-1]
	if k != k2 {
		return g.Errorf(op, "inner dimensions differ: a %s, b %s (%d vs %d)", desc(a), desc(b), k, k2)
	}
	batch, ok := tile.BroadcastShapes(as[:ra-2], bs[:rb-2])
	if !ok {
		return g.Errorf(op, "batch dimensions do not broadcast: a %s, b %s", desc(a), desc(b))
	}
	a2, b2 := g.Reshape(a, as), g.Reshape(b, bs)
	bn := names("b", len(batch))
	// batchAccess indexes an operand's batch dimensions, aligned at the end
	// with the output's; a dimension of 1 against a larger one reads index 0.
	batchAccess := func(s tile.Shape) []tile.Affine {
		off := len(batch) - len(s)
		acc := make([]tile.Affine, len(s))
		for d, size := range s {
			if size == 1 && batch[off+d] != 1 {
				acc[d] = tile.Lit(0)
			} else {
				acc[d] = tile.Ix(bn[off+d])
			}
		}
		return acc
	}
	outShape := append(batch.Clone(), m, n)
	out := append(ixs(bn...), tile.Ix("i"), tile.Ix("j"))
	accA := append(batchAccess(as[:ra-2]), tile.Ix("i"), tile.Ix("k"))
	accB := append(batchAccess(bs[:rb-2]), tile.Ix("k"), tile.Ix("j"))
	y := g.Contract(tile.Sum, tile.CombMul, outShape, out, []tile.Operand{{Tensor: a2, Index: accA}, {Tensor: b2, Index: accB}})
	switch {
	case vecA && vecB:
		return g.Reshape(y, batch.Clone())
	case vecA:
		return g.Reshape(y, append(batch.Clone(), n))
	case vecB:
		return g.Reshape(y, append(batch.Clone(), m))
	}
	return y
}

// Dense returns x·kernel + bias applied along x's last axis, as Keras's Dense
// layer computes it (without its activation): x is (…, in), kernel (in, out)
// and bias (out) or nil; the result is (…, out).
func Dense(g *tile.Graph, x, kernel, bias *tile.Tensor) *tile.Tensor {
	const op = "dense"
	args := []arg{in("x", x), in("kernel", kernel)}
	if bias != nil {
		args = append(args, in("bias", bias))
	}
	if !checkFloat(g, op, args...) {
		return invalid(g, op)
	}
	if x.Rank() < 1 || kernel.Rank() != 2 {
		return g.Errorf(op, "want x of rank >= 1 and a rank-2 kernel (in, out), got %s", descAll(args))
	}
	if x.Dim(-1) != kernel.Dim(0) {
		return g.Errorf(op, "x has %d features but kernel expects %d: %s", x.Dim(-1), kernel.Dim(0), descAll(args))
	}
	if bias != nil && (bias.Rank() != 1 || bias.Dim(0) != kernel.Dim(1)) {
		return g.Errorf(op, "bias must be (%d), got %s", kernel.Dim(1), descAll(args))
	}
	lead := names("a", x.Rank()-1)
	outShape := append(x.Shape()[:x.Rank()-1], kernel.Dim(1))
	y := g.Contract(tile.Sum, tile.CombMul, outShape, append(ixs(lead...), tile.Ix("j")), []tile.Operand{
		{Tensor: x, Index: append(ixs(lead...), tile.Ix("k"))},
		{Tensor: kernel, Index: ixs("k", "j")},
	})
	if bias == nil {
		return y
	}
	return g.Add(y, bias)
}

// BiasAdd adds bias, of shape (channels), along x's last (channel) axis.
func BiasAdd(g *tile.Graph, x, bias *tile.Tensor) *tile.Tensor {
	const op = "bias_add"
	if !checkFloat(g, op, in("x", x), in("bias", bias)) {
		return invalid(g, op)
	}
	if x.Rank() < 1 || bias.Rank() != 1 || bias.Dim(0) != x.Dim(-1) {
		return g.Errorf(op, "bias must be a vector as long as x's last axis: x %s, bias %s", desc(x), desc(bias))
	}
	return g.Add(x, bias)
}

// Flatten reshapes x of shape (N, d1, d2, …) to (N, d1·d2·…), keeping the
// row-major (channels-last) order of the trailing dimensions, as Keras's
// Flatten layer does.
func Flatten(g *tile.Graph, x *tile.Tensor) *tile.Tensor {
	const op = "flatten"
	if !check(g, op, in("x", x)) {
		return invalid(g, op)
	}
	if x.Rank() < 1 {
		return g.Errorf(op, "x must have a batch dimension, got %s", desc(x))
	}
	rest := 1
	for _, d := range x.Shape()[1:] {
		rest *= d
	}
	return g.Reshape(x, tile.Shape{x.Dim(0), rest})
}
