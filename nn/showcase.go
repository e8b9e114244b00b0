package nn

import (
	"fmt"
	"slices"
)

// FashionCNN returns the showcase model: the Keras Fashion-MNIST CNN that
// reaches about 91% test accuracy in 10 epochs of Adam 1e-3 with batches of
// 64 and sparse categorical cross-entropy.
//
//	Input(28, 28, 1)
//	Conv2D(64, 2, padding same, relu)  → MaxPooling2D(2) → Dropout(0.3)
//	Conv2D(32, 2, padding same, relu)  → MaxPooling2D(2) → Dropout(0.3)
//	Flatten → Dense(256, relu) → Dropout(0.5) → Dense(10, softmax)
//
// Its 412,778 weights are conv2d (320), conv2d_1 (8,224), dense (401,664)
// and dense_1 (2,570).
func FashionCNN() (*Model, error) {
	return Sequential("fashion_cnn", Input(28, 28, 1),
		Conv2D(64, 2, Padding("same"), Activation("relu")),
		MaxPooling2D(2), Dropout(0.3),
		Conv2D(32, 2, Padding("same"), Activation("relu")),
		MaxPooling2D(2), Dropout(0.3),
		Flatten(), Dense(256, Activation("relu")), Dropout(0.5),
		Dense(10, Activation("softmax")))
}

// FashionMLP returns the multilayer perceptron of Keras's basic
// classification tutorial, for 28×28 grey images: Flatten → Dense(128,
// relu) → Dense(10, softmax). It trains much faster than FashionCNN and
// reaches about 88% test accuracy.
func FashionMLP() (*Model, error) {
	return Sequential("fashion_mlp", Input(28, 28, 1),
		Flatten(), Dense(128, Activation("relu")), Dense(10, Activation("softmax")))
}

// FashionViT returns a small vision transformer for 28×28 grey images:
// 4×4 patches (a Conv2D of kernel 4 and stride 4, as Keras's ViT examples
// make them) give 49 tokens of width 128, with a learned PositionEmbedding
// added; four pre-norm encoder blocks follow, each
//
//	x = x + MultiHeadAttention(4 heads, key_dim 32)(LayerNormalization(x), same)
//	x = x + Dense(128)(Dense(256, gelu)(LayerNormalization(x)))
//
// then a final LayerNormalization, GlobalAveragePooling1D over the tokens
// and Dense(10, softmax). Layer normalisations use epsilon 1e-6. It has
// 539,914 weights and trains with Adam at 5e-4 (ShowcaseAdamRate) in
// batches of 64.
func FashionViT() (*Model, error) {
	const width, heads, mlp, blocks = 128, 4, 256, 4
	in := Input(28, 28, 1)
	x := Apply(Conv2D(width, 4, Strides(4)), in)
	x = Apply(Reshape([]int{49, width}), x)
	x = Apply(Add(), x, Apply(PositionEmbedding(49), x))
	for range blocks {
		h := Apply(LayerNormalization(Epsilon(1e-6)), x)
		h = Apply(MultiHeadAttention(heads, width/heads), h, h)
		x = Apply(Add(), x, h)
		h = Apply(LayerNormalization(Epsilon(1e-6)), x)
		h = Apply(Dense(mlp, Activation("gelu")), h)
		h = Apply(Dense(width), h)
		x = Apply(Add(), x, h)
	}
	x = Apply(LayerNormalization(Epsilon(1e-6)), x)
	x = Apply(GlobalAveragePooling1D(), x)
	return Functional("fashion_vit", []*Node{in}, []*Node{Apply(Dense(10, Activation("softmax")), x)})
}

// showcase lists the models ShowcaseModel knows, by command-line name.
var showcase = map[string]func() (*Model, error){
	"fashion-cnn":  FashionCNN,
	"fashion-lstm": FashionLSTM,
	"fashion-mlp":  FashionMLP,
	"fashion-vit":  FashionViT,
}

// ShowcaseAdamRate returns the Adam learning rate a showcase model is
// trained with when none is chosen: Keras's 0.001, except for fashion-vit,
// whose transformer blocks learn better at 0.0005 (in 10 epochs on the
// H200, test accuracy 0.883 against 0.858 at 0.001).
func ShowcaseAdamRate(name string) float64 {
	if name == "fashion-vit" {
		return 5e-4
	}
	return 1e-3
}

// ShowcaseModels returns the names ShowcaseModel accepts.
func ShowcaseModels() []string {
	var names []string
	for n := range showcase {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// ShowcaseModel returns a new model by its command-line name, such as
// "fashion-cnn".
func ShowcaseModel(name string) (*Model, error) {
	f := showcase[name]
	if f == nil {
		return nil, fmt.Errorf("nn: unknown model %q (want one of %v)", name, ShowcaseModels())
	}
	return f()
}

// FashionLSTM returns a recurrent showcase model: each 28×28 image read as
// 28 steps (its rows) of 28 features by an LSTM of 128 units, then
// Dense(10, softmax).
//
//	Input(28, 28, 1) → Reshape(28, 28) → LSTM(128) → Dense(10, softmax)
//
// Its 81,674 weights are lstm (80,384) and dense (1,290).
func FashionLSTM() (*Model, error) {
	return Sequential("fashion_lstm", Input(28, 28, 1),
		Reshape([]int{28, 28}), LSTM(128), Dense(10, Activation("softmax")))
}
