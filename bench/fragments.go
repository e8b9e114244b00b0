package bench

import (
	"fmt"

	"github.com/tartanml/tartan/op"
	"github.com/tartanml/tartan/tile"
)

// fragmentEntries lists the kernel fragments, in the suite's order. Each
// binds its inputs once and, but for the embedding, minimises the mean of
// its squared output.
func fragmentEntries() []Entry {
	return []Entry{
		{Name: "mbblock", Fragment: true, Batch: 64, params: 4_672,
			About: "depthwise 3x3 then 1x1 conv, 16x16x64 -> 64, no bias", build: buildMBBlock},
		{Name: "stemblock", Fragment: true, Batch: 64, params: 2_976,
			About: "conv 3x3 (3->32) -> batch norm -> relu -> max-pool 3x3/2 same -> 1x1 conv (64) -> global average pool, 32x32x3",
			build: buildStemBlock},
		{Name: "attention", Fragment: true, Batch: 16, params: 16_768,
			About: "layer norm -> one-head self-attention (q, k, v, out projections) + residual, length 64, width 64",
			build: buildAttention},
		{Name: "lstm", Fragment: true, Batch: 32, params: 98_816,
			About: "LSTM cell written in tile as a recurrence over 16 steps, input 64, 128 units", build: buildLSTM},
		{Name: "depthwise", Fragment: true, Batch: 128, params: 864,
			About: "one depthwise 3x3 layer (same, no bias) on 32x32x96", build: buildDepthwise},
		{Name: "embedding", Fragment: true, Batch: 32, params: 2_050_570,
			About: "Embedding(8000, 256) over 128 tokens -> mean -> dense 10, cross-entropy", build: buildEmbedding},
		{Name: "bnrelu6", Fragment: true, Batch: 128, params: 192,
			About: "batch norm (training statistics) + ReLU6 on 32x32x96", build: buildBNReLU6},
	}
}

// image declares a fragment's input of normal values, (batch, hw, hw, c).
func (t *tileModel) image(c Config, hw, ch int) *tile.Tensor {
	r := newRand(c.Seed, 1)
	n := c.Batch * hw * hw * ch
	return t.input("x", tile.Float32, tile.Shape{c.Batch, hw, hw, ch}, normal(r, n))
}

// buildMBBlock: x (64, 16, 16, 64) → depthwise 3×3 same → 1×1 convolution
// to 64 channels. Tiny: 4×4×8 → 8.
func buildMBBlock(c Config) (prepared, error) {
	hw, ch := tiny(c, 16, 4), tiny(c, 64, 8)
	t := newTileModel(fmt.Sprintf("mbblock_b%d", c.Batch), c, false)
	g := t.g
	x := t.image(c, hw, ch)
	same := op.ConvOptions{Padding: op.Same}
	y := op.DepthwiseConv2D(g, x, t.kernel("depthwise/kernel", 3, 3, ch, 1), same)
	y = op.Conv2D(g, y, t.kernel("pointwise/kernel", 1, 1, ch, ch), op.ConvOptions{})
	return t.done(meanSquare(g, y))
}

// buildStemBlock: x (64, 32, 32, 3) → conv 3×3 same to 32 channels (no
// bias) → batch norm → ReLU → max-pool 3×3 stride 2 same → 1×1 conv to 64
// (no bias) → global average pool. Tiny: 8×8 input, 4 and 8 channels.
func buildStemBlock(c Config) (prepared, error) {
	hw, c1, c2 := tiny(c, 32, 8), tiny(c, 32, 4), tiny(c, 64, 8)
	t := newTileModel(fmt.Sprintf("stemblock_b%d", c.Batch), c, false)
	g := t.g
	x := t.image(c, hw, 3)
	y := op.Conv2D(g, x, t.kernel("conv/kernel", 3, 3, 3, c1), op.ConvOptions{Padding: op.Same})
	y = op.ReLU(g, t.batchNorm("bn", y))
	y = op.MaxPool2D(g, y, op.PoolOptions{Size: []int{3}, Strides: []int{2}, Padding: op.Same})
	y = op.Conv2D(g, y, t.kernel("conv1x1/kernel", 1, 1, c1, c2), op.ConvOptions{})
	return t.done(meanSquare(g, op.GlobalAvgPool2D(g, y)))
}

// buildAttention: x (16, 64, 64) → layer norm (epsilon 1e-5) → one-head
// self-attention with biased projections → plus x. Tiny: length 8, width
// 8.
func buildAttention(c Config) (prepared, error) {
	n, w := tiny(c, 64, 8), tiny(c, 64, 8)
	t := newTileModel(fmt.Sprintf("attention_b%d", c.Batch), c, false)
	g := t.g
	r := newRand(c.Seed, 1)
	x := t.input("x", tile.Float32, tile.Shape{c.Batch, n, w}, normal(r, c.Batch*n*w))
	y := g.Add(x, t.selfAttention("attention", t.layerNorm("norm", x, 1e-5), 1))
	return t.done(meanSquare(g, y))
}

// buildLSTM: x (32, 16, 64); an LSTM cell with input kernel W (64, 512),
// recurrent kernel U (128, 512) and bias b (512), gates in the order input,
// forget, cell, output: z = x_t·W + h·U + b, c = σ(z_f)·c + σ(z_i)·tanh(z_c),
// h = σ(z_o)·tanh(c), from h = c = 0; the loss is the mean of the last h².
// The states are tile recurrences, so the step compiles to a loop whose
// kernels do not grow with the steps. Tiny: 4 steps, input 8, 8 units.
func buildLSTM(c Config) (prepared, error) {
	steps, in, units := tiny(c, 16, 4), tiny(c, 64, 8), tiny(c, 128, 8)
	b := c.Batch
	t := newTileModel(fmt.Sprintf("lstm_b%d", b), c, false)
	g := t.g
	r := newRand(c.Seed, 1)
	x := t.input("x", tile.Float32, tile.Shape{b, steps, in}, normal(r, b*steps*in))
	w := t.kernel("lstm/kernel", in, 4*units)
	u := t.kernel("lstm/recurrent_kernel", units, 4*units)
	bias := t.weight("lstm/bias", tile.Shape{4 * units}, nil)
	// Time-major, with the states as recurrences: the cell is built once and
	// the compiled loop runs it step after step.
	xs := g.Transpose(x, []int{1, 0, 2})
	xw := op.Dense(g, xs, w, bias)
	zero := g.BroadcastTo(g.Scalar(0, tile.Float32), tile.Shape{b, units})
	hp, cp := g.Recurrence(zero, steps, false), g.Recurrence(zero, steps, false)
	z := g.Add(xw, op.MatMul(g, hp, u))
	gate := func(k int) *tile.Tensor {
		return g.Slice(z, []int{0, 0, k * units}, []int{steps, b, (k + 1) * units}, nil)
	}
	i, f := op.Sigmoid(g, gate(0)), op.Sigmoid(g, gate(1))
	cc, o := g.Tanh(gate(2)), op.Sigmoid(g, gate(3))
	cell := g.Add(g.Mul(f, cp), g.Mul(i, cc))
	hs := g.Mul(o, g.Tanh(cell))
	g.CloseRecurrence(hp, hs)
	g.CloseRecurrence(cp, cell)
	h := g.Reshape(g.Slice(hs, []int{steps - 1, 0, 0}, []int{steps, b, units}, nil), tile.Shape{b, units})
	return t.done(meanSquare(g, h))
}

// buildDepthwise: x (128, 32, 32, 96) → depthwise 3×3 same, no bias; only
// the kernel's gradient is needed. Tiny: 8×8×8.
func buildDepthwise(c Config) (prepared, error) {
	hw, ch := tiny(c, 32, 8), tiny(c, 96, 8)
	t := newTileModel(fmt.Sprintf("depthwise_b%d", c.Batch), c, false)
	g := t.g
	x := t.image(c, hw, ch)
	y := op.DepthwiseConv2D(g, x, t.kernel("depthwise/kernel", 3, 3, ch, 1), op.ConvOptions{Padding: op.Same})
	return t.done(meanSquare(g, y))
}

// buildEmbedding: tokens (32, 128) below 8000 → Embedding(8000, 256) → mean
// over the tokens → dense to 10 logits → sparse categorical cross-entropy.
// The table starts uniform in ±0.05, as Keras's. Tiny: 50 × 8 table, 8
// tokens.
func buildEmbedding(c Config) (prepared, error) {
	vocab, width, n := tiny(c, 8000, 50), tiny(c, 256, 8), tiny(c, 128, 8)
	b := c.Batch
	t := newTileModel(fmt.Sprintf("embedding_b%d", b), c, false)
	g := t.g
	r := newRand(c.Seed, 1)
	tokens := make([]int32, b*n)
	for i := range tokens {
		tokens[i] = int32(r.IntN(vocab))
	}
	_, yi := labels(r, b, 10)
	idx := t.input("tokens", tile.Int32, tile.Shape{b, n}, tokens)
	y := t.input("y", tile.Int32, tile.Shape{b}, yi)
	init := make([]float32, vocab*width)
	for i := range init {
		init[i] = float32(0.1*t.r.Float64() - 0.05)
	}
	table := t.weight("embedding/embeddings", tile.Shape{vocab, width}, init)
	e := op.Mean(g, g.Gather(table, idx, 0), []int{1}, false)
	logits := t.dense("classifier", e, 10)
	return t.done(op.SparseCategoricalCrossentropy(g, y, logits, true))
}

// buildBNReLU6: x (128, 32, 32, 96) → batch norm with the batch's
// statistics (moving statistics updated) → min(max(x, 0), 6). Tiny: 8×8×8.
func buildBNReLU6(c Config) (prepared, error) {
	hw, ch := tiny(c, 32, 8), tiny(c, 96, 8)
	t := newTileModel(fmt.Sprintf("bnrelu6_b%d", c.Batch), c, false)
	g := t.g
	x := t.image(c, hw, ch)
	y := g.Minimum(op.ReLU(g, t.batchNorm("bn", x)), g.Scalar(6, tile.Float32))
	return t.done(meanSquare(g, y))
}
