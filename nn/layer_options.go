package nn

import (
	"fmt"
	"strings"
)

// layerExt holds the settings of the options below, which serve the
// resizing, transposed and separable convolution layers.
type layerExt struct {
	outputPadding []int
	interpolation string
	depthwiseInit Initializer
	pointwiseInit Initializer
	valueRange    []float64
	// The options of MultiHeadAttention (layer_attention.go).
	valueDim    int
	attnDropout float64
	causal      bool
}

// OutputPadding lengthens a Conv1DTranspose's or Conv2DTranspose's output:
// one value for every spatial dimension or one per dimension, each in
// [0, stride). Without it the output is input·stride long with "same"
// padding, and input·stride + max(kernel − stride, 0) with "valid".
func OutputPadding(p ...int) LayerOption {
	return layerOption{"output_padding", func(s *layerSettings) { s.ext.outputPadding = append([]int(nil), p...) }}
}

// Interpolation sets how UpSampling2D fills its output: "nearest" (the
// default) or "bilinear".
func Interpolation(name string) LayerOption {
	return layerOption{"interpolation", func(s *layerSettings) { s.ext.interpolation = strings.ToLower(name) }}
}

// DepthwiseInitializer sets how SeparableConv2D's depthwise kernel is
// initialised (glorot-uniform by default).
func DepthwiseInitializer(i Initializer) LayerOption {
	return layerOption{"depthwise_initializer", func(s *layerSettings) { s.ext.depthwiseInit = i }}
}

// PointwiseInitializer sets how SeparableConv2D's pointwise kernel is
// initialised (glorot-uniform by default).
func PointwiseInitializer(i Initializer) LayerOption {
	return layerOption{"pointwise_initializer", func(s *layerSettings) { s.ext.pointwiseInit = i }}
}

// sides expands a padding or cropping argument of 1, 2 or 4 values (every
// side; height and width; top, bottom, left and right) to
// [[top, bottom], [left, right]], none negative.
func sides(what string, v []int, def int) ([][]int, error) {
	var t, b, l, r int
	switch len(v) {
	case 0:
		t, b, l, r = def, def, def, def
	case 1:
		t, b, l, r = v[0], v[0], v[0], v[0]
	case 2:
		t, b, l, r = v[0], v[0], v[1], v[1]
	case 4:
		t, b, l, r = v[0], v[1], v[2], v[3]
	default:
		return nil, fmt.Errorf("%s %v must have 1, 2 or 4 values (every side; height and width; top, bottom, left and right)", what, v)
	}
	if t < 0 || b < 0 || l < 0 || r < 0 {
		return nil, fmt.Errorf("%s %v must not be negative", what, v)
	}
	return [][]int{{t, b}, {l, r}}, nil
}

// ValueRange sets the range RandomContrast clips its output to, [0, 255]
// by default, as in Keras.
func ValueRange(lo, hi float64) LayerOption {
	return layerOption{"value_range", func(s *layerSettings) { s.ext.valueRange = []float64{lo, hi} }}
}

// checkSides checks a padding or cropping read from architecture JSON:
// [[top, bottom], [left, right]], none negative.
func checkSides(what string, v [][]int) error {
	if len(v) != 2 || len(v[0]) != 2 || len(v[1]) != 2 {
		return fmt.Errorf("%s %v must be [[top, bottom], [left, right]]", what, v)
	}
	for _, p := range v {
		if p[0] < 0 || p[1] < 0 {
			return fmt.Errorf("%s %v must not be negative", what, v)
		}
	}
	return nil
}
