package bench

import (
	"fmt"
	"math"

	"github.com/tartanml/tartan/op"
	"github.com/tartanml/tartan/tile"
)

// transformerDims sizes the transformer entry.
type transformerDims struct {
	length, width, heads, ffn, layers, classes int
}

// buildTransformer builds the transformer's training step: inputs x
// (batch, length, width), already embedded, and labels y (batch); two
// post-norm encoder layers (PyTorch's TransformerEncoderLayer with
// norm_first false: x = LN(x + attention(x)), x = LN(x + FFN(x)), layer
// norm epsilon 1e-5), each with 4-head self-attention (query, key, value
// and output projections with biases, softmax(q·kᵀ/√(width/heads))·v)
// and an FFN of 1024 with exact GELU; then the mean over the sequence, a
// dense layer to 10 logits and sparse categorical cross-entropy. There is
// no dropout. Tiny: length 8, width 16, 2 heads, FFN 32.
func buildTransformer(c Config) (prepared, error) {
	d := transformerDims{length: 128, width: 256, heads: 4, ffn: 1024, layers: 2, classes: 10}
	if c.Tiny {
		d = transformerDims{length: 8, width: 16, heads: 2, ffn: 32, layers: 2, classes: 10}
	}
	b := c.Batch
	t := newTileModel(fmt.Sprintf("transformer_b%d", b), c, true)
	g := t.g
	r := newRand(c.Seed, 1)
	x := t.input("x", tile.Float32, tile.Shape{b, d.length, d.width}, normal(r, b*d.length*d.width))
	_, yi := labels(r, b, d.classes)
	y := t.input("y", tile.Int32, tile.Shape{b}, yi)
	for l := range d.layers {
		p := fmt.Sprintf("layer%d", l)
		x = t.layerNorm(p+"/norm1", g.Add(x, t.selfAttention(p+"/attention", x, d.heads)), 1e-5)
		h := op.GELU(g, t.dense(p+"/ffn1", x, d.ffn), false)
		x = t.layerNorm(p+"/norm2", g.Add(x, t.dense(p+"/ffn2", h, d.width)), 1e-5)
	}
	logits := t.dense("classifier", op.Mean(g, x, []int{1}, false), d.classes)
	return t.done(op.SparseCategoricalCrossentropy(g, y, logits, true))
}

// selfAttention is multi-head self-attention over x (batch, length,
// width): projections to queries, keys and values, per head the softmax of
// the scaled query-key products over the keys, the weighted sum of the
// values, and an output projection. The heads are the width split in
// equal parts; the products are contractions over the head's features
// (scores) and over the keys (the weighted sum), so no transpose is needed.
func (t *tileModel) selfAttention(name string, x *tile.Tensor, heads int) *tile.Tensor {
	g := t.g
	b, n, w := x.Dim(0), x.Dim(1), x.Dim(2)
	if w%heads != 0 {
		return g.Errorf("attention", "width %d is not a multiple of %d heads", w, heads)
	}
	dh := w / heads
	split := func(y *tile.Tensor) *tile.Tensor { return g.Reshape(y, tile.Shape{b, n, heads, dh}) }
	q := g.Mul(split(t.dense(name+"/query", x, w)), g.Scalar(1/math.Sqrt(float64(dh)), tile.Float32))
	k := split(t.dense(name+"/key", x, w))
	v := split(t.dense(name+"/value", x, w))
	ix := tile.Ix
	scores := g.Contract(tile.Sum, tile.CombMul, tile.Shape{b, heads, n, n},
		[]tile.Affine{ix("b"), ix("h"), ix("i"), ix("j")},
		[]tile.Operand{
			{Tensor: q, Index: []tile.Affine{ix("b"), ix("i"), ix("h"), ix("d")}},
			{Tensor: k, Index: []tile.Affine{ix("b"), ix("j"), ix("h"), ix("d")}},
		})
	p := op.Softmax(g, scores, -1)
	o := g.Contract(tile.Sum, tile.CombMul, tile.Shape{b, n, heads, dh},
		[]tile.Affine{ix("b"), ix("i"), ix("h"), ix("d")},
		[]tile.Operand{
			{Tensor: p, Index: []tile.Affine{ix("b"), ix("h"), ix("i"), ix("j")}},
			{Tensor: v, Index: []tile.Affine{ix("b"), ix("j"), ix("h"), ix("d")}},
		})
	return t.dense(name+"/output", g.Reshape(o, tile.Shape{b, n, w}), w)
}
