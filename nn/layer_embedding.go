package nn

import (
	"fmt"

	"github.com/tartanml/tartan/tile"
)

// embeddingLayer is Keras's Embedding: integer indices to dense vectors.
type embeddingLayer struct {
	layerBase
	cfg  embeddingConfig
	init Initializer
	e    *Weight
}

type embeddingConfig struct {
	layerCommon
	InputDim              int      `json:"input_dim"`
	OutputDim             int      `json:"output_dim"`
	EmbeddingsInitializer initSpec `json:"embeddings_initializer"`
	MaskZero              bool     `json:"mask_zero,omitempty"`
}

// Embedding returns a layer mapping each index in [0, inputDim) to a
// learned vector of outputDim values: samples of shape (steps) become
// (steps, outputDim). Indices arrive as float32 sample values holding whole
// numbers and are truncated to integers; an index outside the table gives a
// zero vector. The table "embeddings" is (inputDim, outputDim), drawn from
// RandomUniform(-0.05, 0.05) unless KernelInitializer says otherwise.
// With MaskZero(true), the steps whose index is 0 are masked for the layers
// after it (a recurrent layer carries its state over them), as in Keras.
func Embedding(inputDim, outputDim int, opts ...LayerOption) Layer {
	s, err := newSettings("Embedding", []string{"kernel_initializer", "mask_zero"}, opts)
	return newEmbedding(embeddingConfig{layerCommon: common(s), InputDim: inputDim, OutputDim: outputDim,
		EmbeddingsInitializer: initOr(s.kernelInit, RandomUniform(-0.05, 0.05)), MaskZero: s.rnn.maskZero}, err)
}

func newEmbedding(cfg embeddingConfig, err error) Layer {
	l := &embeddingLayer{layerBase: newBase("Embedding", cfg.Name, cfg.Trainable, err), cfg: cfg}
	init, ierr := initializerFromSpec(cfg.EmbeddingsInitializer)
	l.init = init
	l.err = firstErr(l.err,
		check(cfg.InputDim >= 1 && cfg.OutputDim >= 1, "nn: Embedding: input_dim %d and output_dim %d must be positive", cfg.InputDim, cfg.OutputDim),
		wrapErr("nn: Embedding: embeddings_initializer: ", ierr))
	return l
}

func (l *embeddingLayer) build(in []tile.Shape) (tile.Shape, error) {
	s, err := oneInput(l, in)
	if err != nil {
		return nil, err
	}
	if len(s) < 1 {
		return nil, fmt.Errorf("needs inputs of rank 2 or more (batch, steps…)")
	}
	l.e = l.addWeight("embeddings", tile.Shape{l.cfg.InputDim, l.cfg.OutputDim}, l.init, true)
	return append(s, l.cfg.OutputDim), nil
}

func (l *embeddingLayer) call(c *callContext, in []*tile.Tensor) *tile.Tensor {
	idx := c.g.Cast(in[0], tile.Int32)
	y := c.g.Gather(c.v(l.e), idx, 0)
	if l.cfg.MaskZero && y.Valid() {
		c.setMask(y, c.g.Cast(c.g.Elementwise(tile.Ne, idx, c.g.ScalarLike(idx, 0)), tile.Float32))
	}
	return y
}

func (l *embeddingLayer) config() any {
	cfg := l.cfg
	cfg.Name = l.name
	return cfg
}
