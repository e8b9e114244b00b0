package op

import (
	"github.com/tartanml/tartan/tile"
)

// Dropout applies training-mode inverted dropout: each element of x is kept
// with probability 1 − rate and scaled by 1/(1 − rate), or set to zero, so
// that the expected value is unchanged. The mask comes from Graph.Random with
// the scalar i64 seed and the stream number (distinct streams give
// independent masks under one seed): element p is kept when its uniform draw
// u ∈ [0, 1) satisfies u ≥ rate. rate must lie in [0, 1); a rate of 0
// returns x. Inference needs no op: dropout is then the identity.
//
// The mask is multiplied in, x · select(keep, 1/(1 − rate), 0), as PyTorch
// and TensorFlow do, so a NaN or infinite element dropped still gives NaN:
// a non-finite value is never hidden.
func Dropout(g *tile.Graph, x *tile.Tensor, rate float64, seed *tile.Tensor, stream uint64) *tile.Tensor {
	const op = "dropout"
	if !check(g, op, in("x", x), in("seed", seed)) || !checkFloat(g, op, in("x", x)) {
		return invalid(g, op)
	}
	if seed.DType() != tile.Int64 || seed.Rank() != 0 {
		return g.Errorf(op, "seed must be a scalar i64, got %s (x %s)", desc(seed), desc(x))
	}
	if !(rate >= 0 && rate < 1) {
		return g.Errorf(op, "rate %g must lie in [0, 1) (x %s)", rate, desc(x))
	}
	if rate == 0 {
		return x
	}
	u := g.Random(seed, x.DType(), x.Shape(), stream)
	keep := g.Elementwise(tile.Ge, u, scalar(g, x, rate))
	return g.Mul(x, g.Select(keep, scalar(g, x, 1/(1-rate)), scalar(g, x, 0)))
}
