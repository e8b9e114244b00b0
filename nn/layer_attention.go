package nn

import (
	"fmt"
	"math"

	"github.com/tartanml/tartan/op"
	"github.com/tartanml/tartan/tile"
)

// ValueDim sets the size of each attention head's value projection in
// MultiHeadAttention; it is the key size by default.
func ValueDim(n int) LayerOption {
	return layerOption{"value_dim", func(s *layerSettings) { s.ext.valueDim = n }}
}

// AttentionDropout sets the rate, in [0, 1), at which MultiHeadAttention
// drops attention probabilities in training (Keras's dropout argument); it
// is 0 by default. Inference never drops.
func AttentionDropout(rate float64) LayerOption {
	return layerOption{"attention_dropout", func(s *layerSettings) { s.ext.attnDropout = rate }}
}

// UseCausalMask(true) lets each query position of MultiHeadAttention attend
// only to key positions at or before it (Keras's use_causal_mask call
// argument): query i sees keys 0 … i.
func UseCausalMask(on bool) LayerOption {
	return layerOption{"use_causal_mask", func(s *layerSettings) { s.ext.causal = on }}
}

// maskedScore is what a masked attention score becomes before the softmax,
// as in Keras: a large negative number, whose exponential is 0.
const maskedScore = -1e9

// attentionLayer is Keras's MultiHeadAttention.
type attentionLayer struct {
	layerBase
	cfg              attentionConfig
	kernelInit, bias Initializer
	// The query, key, value and output projections' kernels and biases.
	qk, qb, kk, kb, vk, vb, ok, ob *Weight
}

type attentionConfig struct {
	layerCommon
	NumHeads          int      `json:"num_heads"`
	KeyDim            int      `json:"key_dim"`
	ValueDim          int      `json:"value_dim"`
	Dropout           float64  `json:"dropout"`
	UseBias           bool     `json:"use_bias"`
	OutputShape       *int     `json:"output_shape"` // nil: the query's feature size
	UseCausalMask     bool     `json:"use_causal_mask"`
	KernelInitializer initSpec `json:"kernel_initializer"`
	BiasInitializer   initSpec `json:"bias_initializer"`
}

// MultiHeadAttention returns Keras's multi-head attention layer of numHeads
// heads, each projecting queries and keys to keyDim values. Apply it to
// (query, value), (query, value, key) or (query, value, key,
// attention_mask), the positional order of Keras's call; the key is the
// value when not given, so self-attention is Apply(mha, x, x). Per sample,
// the query is (T, query features), value and key are (S, their features)
// and the mask (T, S).
//
// Every head h projects the query, key and value: Q = query·Wq[:, h] + bq[h],
// K = key·Wk[:, h] + bk[h], V = value·Wv[:, h] + bv[h]; it scales Q by
// 1/√keyDim, takes the scores Q·Kᵀ (T, S), sets the masked ones to −1e9,
// turns each query's row into probabilities with a softmax over the keys,
// drops some in training (AttentionDropout) and averages V with them. The
// output, (T, query features) or (T, n) with OutputShape(n), projects the
// heads' results back: Σₕ head_h·Wo[h] + bo.
//
// A mask element above 0.5 lets that query position attend to that key
// position, as Keras's boolean mask does; UseCausalMask(true) also hides
// every key after the query's position. A query whose keys are all masked
// attends to all of them equally. A mask holds 1 ("attend") and 0
// ("masked"): computed in the model from its input, or an Input(T, S) of a
// functional model of several inputs (which builds, saves and prints its
// summary, but Fit, Evaluate and Predict run models of one input only).
//
// The weights follow Keras's names and layouts: query/kernel (query
// features, heads, keyDim) and query/bias (heads, keyDim), key/kernel and
// key/bias likewise, value/kernel (value features, heads, valueDim) and
// value/bias (heads, valueDim), attention_output/kernel (heads, valueDim,
// output features) and attention_output/bias (output features). Kernels are
// glorot-uniform with Keras's fans and biases zeros unless
// KernelInitializer and BiasInitializer say otherwise; UseBias(false) drops
// the biases. ValueDim sets the value size (keyDim by default).
func MultiHeadAttention(numHeads, keyDim int, opts ...LayerOption) Layer {
	s, err := newSettings("MultiHeadAttention", []string{"value_dim", "attention_dropout", "use_bias", "output_shape",
		"use_causal_mask", "kernel_initializer", "bias_initializer"}, opts)
	cfg := attentionConfig{layerCommon: common(s), NumHeads: numHeads, KeyDim: keyDim, ValueDim: keyDim,
		Dropout: s.ext.attnDropout, UseBias: s.useBias, UseCausalMask: s.ext.causal,
		KernelInitializer: initOr(s.kernelInit, GlorotUniform()), BiasInitializer: initOr(s.biasInit, Zeros())}
	if s.has("value_dim") {
		cfg.ValueDim = s.ext.valueDim
	}
	for _, o := range opts {
		if d, ok := o.(outputShapeOption); ok && err == nil {
			if len(d) != 1 {
				err = fmt.Errorf("nn: MultiHeadAttention: output shape %v must be one size, the output's features", []int(d))
				break
			}
			n := d[0]
			cfg.OutputShape = &n
		}
	}
	return newAttention(cfg, err)
}

func newAttention(cfg attentionConfig, err error) Layer {
	const class = "MultiHeadAttention"
	l := &attentionLayer{layerBase: newBase(class, cfg.Name, cfg.Trainable, err), cfg: cfg}
	l.err = firstErr(l.err,
		check(cfg.NumHeads >= 1, "nn: %s: num_heads %d must be positive", class, cfg.NumHeads),
		check(cfg.KeyDim >= 1, "nn: %s: key_dim %d must be positive", class, cfg.KeyDim),
		check(cfg.ValueDim >= 1, "nn: %s: value_dim %d must be positive", class, cfg.ValueDim),
		check(cfg.Dropout >= 0 && cfg.Dropout < 1, "nn: %s: dropout %g must lie in [0, 1)", class, cfg.Dropout),
		check(cfg.OutputShape == nil || *cfg.OutputShape >= 1, "nn: %s: output_shape %v must be positive", class, derefInt(cfg.OutputShape)))
	l.kernelInit, l.bias, l.err = resolveInits(l.err, class, cfg.KernelInitializer, cfg.BiasInitializer)
	return l
}

// derefInt returns *p, or 0 for nil.
func derefInt(p *int) int {
	if p == nil {
		return 0
	}
	return *p
}

func (l *attentionLayer) build(in []tile.Shape) (tile.Shape, error) {
	if len(in) < 2 || len(in) > 4 {
		return nil, fmt.Errorf("takes (query, value), (query, value, key) or (query, value, key, attention_mask), got %d inputs", len(in))
	}
	query, value := in[0], in[1]
	key := value
	if len(in) > 2 {
		key = in[2]
	}
	for _, x := range []struct {
		name string
		s    tile.Shape
	}{{"query", query}, {"value", value}, {"key", key}} {
		if len(x.s) != 2 {
			return nil, fmt.Errorf("the %s must be (batch, steps, features), got %s", x.name, fmtShape(x.s))
		}
	}
	if key[0] != value[0] {
		return nil, fmt.Errorf("the key %s and the value %s must have as many steps", fmtShape(key), fmtShape(value))
	}
	t, s := query[0], value[0]
	if len(in) == 4 {
		if m := in[3]; len(m) != 2 || m[0] != t || m[1] != s {
			return nil, fmt.Errorf("the attention mask must be (batch, query steps, key steps) = %s, got %s", fmtShape(tile.Shape{t, s}), fmtShape(m))
		}
	}
	h, k, v := l.cfg.NumHeads, l.cfg.KeyDim, l.cfg.ValueDim
	out := query[1]
	if l.cfg.OutputShape != nil {
		out = *l.cfg.OutputShape
	}
	proj := func(name string, features, size int) (*Weight, *Weight) {
		kernel := l.addWeight(name+"/kernel", tile.Shape{features, h, size}, l.kernelInit, true)
		var bias *Weight
		if l.cfg.UseBias {
			bias = l.addWeight(name+"/bias", tile.Shape{h, size}, l.bias, true)
		}
		return kernel, bias
	}
	l.qk, l.qb = proj("query", query[1], k)
	l.kk, l.kb = proj("key", key[1], k)
	l.vk, l.vb = proj("value", value[1], v)
	l.ok = l.addWeight("attention_output/kernel", tile.Shape{h, v, out}, l.kernelInit, true)
	if l.cfg.UseBias {
		l.ob = l.addWeight("attention_output/bias", tile.Shape{out}, l.bias, true)
	}
	return tile.Shape{t, out}, nil
}

func (l *attentionLayer) call(c *callContext, in []*tile.Tensor) *tile.Tensor {
	g := c.g
	query, value := in[0], in[1]
	key := value
	if len(in) > 2 {
		key = in[2]
	}
	var mask *tile.Tensor
	if len(in) == 4 {
		mask = in[3]
	}
	var bq, bk, bv, bo *tile.Tensor
	if l.cfg.UseBias {
		bq, bk, bv, bo = c.v(l.qb), c.v(l.kb), c.v(l.vb), c.v(l.ob)
	}
	q := projectHeads(g, query, c.v(l.qk), bq)
	k := projectHeads(g, key, c.v(l.kk), bk)
	v := projectHeads(g, value, c.v(l.vk), bv)
	y := attend(g, q, k, v, mask, attendOptions{causal: l.cfg.UseCausalMask, dropout: l.cfg.Dropout, training: c.training,
		seed: c.seed, stream: l.stream})
	// (B, T, H, V)·(H, V, O) → (B, T, O)
	sizes := map[string]int{"B": y.Dim(0), "T": y.Dim(1), "O": c.v(l.ok).Dim(2)}
	out := tile.ParseContraction(g, "O[b, t, o : B, T, O] = +(C[b, t, h, v] * W[h, v, o])",
		map[string]*tile.Tensor{"C": y, "W": c.v(l.ok)}, sizes)
	if bo != nil {
		out = g.Add(out, bo)
	}
	return out
}

// projectHeads projects x (B, S, D) with kernel (D, H, K) and bias (H, K)
// or nil to (B, S, H, K).
func projectHeads(g *tile.Graph, x, kernel, bias *tile.Tensor) *tile.Tensor {
	sizes := map[string]int{"B": x.Dim(0), "S": x.Dim(1), "H": kernel.Dim(1), "K": kernel.Dim(2)}
	y := tile.ParseContraction(g, "P[b, s, h, k : B, S, H, K] = +(X[b, s, d] * W[d, h, k])",
		map[string]*tile.Tensor{"X": x, "W": kernel}, sizes)
	if bias != nil {
		y = g.Add(y, bias)
	}
	return y
}

// attendOptions are the settings of attend beyond its tensors.
type attendOptions struct {
	causal   bool
	dropout  float64
	training bool
	seed     *tile.Tensor // the step's dropout key; nil in inference
	stream   uint64
}

// attend is scaled dot-product attention over projected heads: q (B, T, H,
// K), k (B, S, H, K), v (B, S, H, V) and mask (B, T, S) or nil give (B, T,
// H, V).
func attend(g *tile.Graph, q, k, v, mask *tile.Tensor, o attendOptions) *tile.Tensor {
	b, t, h, s := q.Dim(0), q.Dim(1), q.Dim(2), k.Dim(1)
	q = g.Mul(q, g.ScalarLike(q, 1/math.Sqrt(float64(q.Dim(3)))))
	sizes := map[string]int{"B": b, "T": t, "H": h, "S": s, "V": v.Dim(3)}
	scores := tile.ParseContraction(g, "A[b, h, t, s : B, H, T, S] = +(Q[b, t, h, k] * K[b, s, h, k])",
		map[string]*tile.Tensor{"Q": q, "K": k}, sizes)
	var keep *tile.Tensor // Bool, broadcastable to (B, H, T, S)
	if mask != nil {
		keep = g.Elementwise(tile.Gt, g.Reshape(mask, tile.Shape{b, 1, t, s}), g.ScalarLike(mask, 0.5))
	}
	if o.causal {
		rows := g.Iota(tile.Int32, tile.Shape{1, 1, t, s}, 2)
		cols := g.Iota(tile.Int32, tile.Shape{1, 1, t, s}, 3)
		causal := g.Elementwise(tile.Ge, rows, cols)
		if keep == nil {
			keep = causal
		} else {
			keep = g.Elementwise(tile.And, keep, causal)
		}
	}
	if keep != nil {
		full := scores.Shape()
		scores = g.Select(g.BroadcastTo(keep, full), scores, g.BroadcastTo(g.ScalarLike(scores, maskedScore), full))
	}
	p := op.Softmax(g, scores, -1)
	if o.training && o.seed != nil && o.dropout > 0 {
		p = op.Dropout(g, p, o.dropout, o.seed, o.stream)
	}
	return tile.ParseContraction(g, "C[b, t, h, v : B, T, H, V] = +(P[b, h, t, s] * X[b, s, h, v])",
		map[string]*tile.Tensor{"P": p, "X": v}, sizes)
}

func (l *attentionLayer) config() any {
	cfg := l.cfg
	cfg.Name = l.name
	return cfg
}

// positionEmbeddingLayer is keras_hub's PositionEmbedding: a learned vector
// per sequence position.
type positionEmbeddingLayer struct {
	layerBase
	cfg  positionEmbeddingConfig
	init Initializer
	e    *Weight
}

type positionEmbeddingConfig struct {
	layerCommon
	SequenceLength int      `json:"sequence_length"`
	Initializer    initSpec `json:"initializer"`
}

// PositionEmbedding returns Keras Hub's learned position embedding for
// sequences of up to sequenceLength steps. On samples of shape (steps,
// features) it returns, for every sample, the first steps rows of its table
// "embeddings" (sequenceLength, features): its output depends on the
// input's shape alone, and a model adds it to the input, as in
//
//	x = nn.Apply(nn.Add(), x, nn.Apply(nn.PositionEmbedding(49), x))
//
// The table is glorot-uniform unless KernelInitializer says otherwise.
func PositionEmbedding(sequenceLength int, opts ...LayerOption) Layer {
	s, err := newSettings("PositionEmbedding", []string{"kernel_initializer"}, opts)
	return newPositionEmbedding(positionEmbeddingConfig{layerCommon: common(s), SequenceLength: sequenceLength,
		Initializer: initOr(s.kernelInit, GlorotUniform())}, err)
}

func newPositionEmbedding(cfg positionEmbeddingConfig, err error) Layer {
	const class = "PositionEmbedding"
	l := &positionEmbeddingLayer{layerBase: newBase(class, cfg.Name, cfg.Trainable, err), cfg: cfg}
	init, ierr := initializerFromSpec(cfg.Initializer)
	l.init = init
	l.err = firstErr(l.err,
		check(cfg.SequenceLength >= 1, "nn: %s: sequence_length %d must be positive", class, cfg.SequenceLength),
		wrapErr("nn: "+class+": initializer: ", ierr))
	return l
}

func (l *positionEmbeddingLayer) build(in []tile.Shape) (tile.Shape, error) {
	s, err := oneInput(l, in)
	if err != nil {
		return nil, err
	}
	if len(s) != 2 {
		return nil, fmt.Errorf("needs inputs of shape (batch, steps, features), got %s", fmtShape(s))
	}
	if s[0] > l.cfg.SequenceLength {
		return nil, fmt.Errorf("the input has %d steps, more than the sequence length %d", s[0], l.cfg.SequenceLength)
	}
	l.e = l.addWeight("embeddings", tile.Shape{l.cfg.SequenceLength, s[1]}, l.init, true)
	return s, nil
}

func (l *positionEmbeddingLayer) call(c *callContext, in []*tile.Tensor) *tile.Tensor {
	g := c.g
	e := c.v(l.e)
	steps := in[0].Dim(1)
	if steps < e.Dim(0) {
		e = g.Slice(e, []int{0, 0}, []int{steps, e.Dim(1)}, nil)
	}
	return g.BroadcastTo(g.Reshape(e, tile.Shape{1, steps, e.Dim(1)}), in[0].Shape())
}

func (l *positionEmbeddingLayer) config() any {
	cfg := l.cfg
	cfg.Name = l.name
	return cfg
}
