package nn

import (
	"bytes"
	"testing"

	"github.com/tartanml/tartan/internal/fuzzcheck"
)

// FuzzLayerArchitecture decodes inputs as architecture JSON seeded with
// models of the padding, resizing, transposed and separable convolution,
// 1-D pooling, augmentation and attention layers. Decoding never panics, an
// accepted architecture survives a round trip unchanged, and a small
// accepted model builds its prediction graph without error.
func FuzzLayerArchitecture(f *testing.F) {
	add := func(m *Model, err error) {
		if err != nil {
			f.Fatal(err)
		}
		js, err := m.Architecture()
		if err != nil {
			f.Fatal(err)
		}
		f.Add(js)
	}
	add(Sequential("a", Input(6, 6, 2), Rescaling(0.5, 1), ZeroPadding2D([]int{1, 2, 0, 1}), Cropping2D([]int{1}),
		UpSampling2D([]int{2, 1}, Interpolation("bilinear")), RandomFlip("horizontal"), RandomContrast(0.3), RandomCrop(3, 4)))
	add(Sequential("b", Input(5, 5, 3), Conv2DTranspose(2, 3, Strides(2), Padding("same"), OutputPadding(1)),
		SeparableConv2D(4, 3, DepthMultiplier(2), Strides(2)), UpSampling2D(nil)))
	add(Sequential("c", Input(9, 2), MaxPooling1D(2, Padding("same")), AveragePooling1D(3, Strides(1)), GlobalMaxPooling1D()))
	add(Sequential("e", Input(6, 2), Conv1DTranspose(3, 3, Strides(2), OutputPadding(1)), Conv1DTranspose(2, 2, Padding("same"))))
	add(Sequential("f", Input(6, 2), ZeroPadding1D([]int{1, 2}), Cropping1D(nil), UpSampling1D(3)))
	add(Sequential("d", Input(9, 2), GlobalAveragePooling1D()))
	add(Sequential("g", Input(7, 5, 2), RandomTranslation(0.2, 0.3, FillMode("wrap"), Interpolation("nearest"))))
	in := Input(5, 4)
	x := Apply(Add(), in, Apply(PositionEmbedding(6), in))
	add(Functional("t", []*Node{in}, []*Node{Apply(MultiHeadAttention(2, 3, ValueDim(2), OutputShape(3), UseCausalMask(true), AttentionDropout(0.2)), x, x)}))
	f.Fuzz(func(t *testing.T, js []byte) {
		fuzzcheck.Bounded(t, fuzzcheck.DefaultLimit, func() {
			m := roundTripArchitecture(t, js)
			if m == nil {
				return
			}
			for _, l := range m.layers {
				if l.base().outShape.Size() > 1<<14 {
					return
				}
				for _, w := range l.Weights() {
					if w.Size() > 1<<14 {
						return
					}
				}
			}
			if _, err := m.buildGraph(progKey{kind: predictProg, batch: 2}); err != nil {
				t.Fatalf("an accepted model does not build its prediction graph: %v\n%s", err, js)
			}
		})
	})
}

// roundTripArchitecture decodes js and, when it is an architecture, checks
// that the model encodes, that the encoding decodes, and that it encodes to
// the same bytes again. It returns the decoded model, or nil when js does
// not decode.
func roundTripArchitecture(t *testing.T, js []byte) *Model {
	t.Helper()
	m, err := decodeArchitecture(js)
	if err != nil {
		return nil
	}
	a1, err := m.Architecture()
	if err != nil {
		t.Fatalf("a decoded architecture does not encode: %v", err)
	}
	m2, err := decodeArchitecture(a1)
	if err != nil {
		t.Fatalf("an encoded architecture does not decode: %v\n%s", err, a1)
	}
	if a2, _ := m2.Architecture(); !bytes.Equal(a1, a2) {
		t.Fatalf("the architecture changed on a round trip:\n%s\n%s", a1, a2)
	}
	return m
}
