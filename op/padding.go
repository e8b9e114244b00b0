package op

import (
	"fmt"

	"github.com/tartanml/tartan/tile"
)

// Padding is how a sliding window (a convolution kernel or a pooling window)
// treats the borders of its input, with TensorFlow's and Keras's meaning.
// The zero value means Valid, Keras's default.
type Padding string

const (
	// Valid places windows only where they fit inside the input:
	// out = ⌊(in − (k−1)·dilation − 1) / stride⌋ + 1.
	Valid Padding = "valid"
	// Same pads so that out = ⌈in / stride⌉. The padding needed,
	// max((out−1)·stride + (k−1)·dilation + 1 − in, 0), is split with the
	// smaller half before the data and the rest after it.
	Same Padding = "same"
)

// check reports an error for a Padding other than Valid, Same and the zero
// value.
func (p Padding) check() error {
	switch p {
	case Valid, Same, "":
		return nil
	}
	return fmt.Errorf("unknown padding %q (want %q or %q)", string(p), Valid, Same)
}

// window is the arithmetic of a sliding window along one spatial dimension.
// Output position y reads input positions stride·y + dilation·i − before for
// i in [0, k); positions outside [0, in) are padding.
type window struct {
	in, k, stride, dilation int
	out, before             int
}

// newWindow resolves one spatial dimension. It fails when the arguments are
// not positive or a valid-padded window does not fit in the input.
func newWindow(in, k, stride, dilation int, p Padding) (window, error) {
	w := window{in: in, k: k, stride: stride, dilation: dilation}
	if k < 1 || stride < 1 || dilation < 1 {
		return w, fmt.Errorf("window %d, stride %d and dilation %d must be positive", k, stride, dilation)
	}
	span := (k-1)*dilation + 1
	switch p {
	case Valid, "":
		if in < span {
			return w, fmt.Errorf("input size %d is smaller than the window span %d (size %d, dilation %d) with valid padding", in, span, k, dilation)
		}
		w.out = (in-span)/stride + 1
	case Same:
		if in < 1 {
			return w, fmt.Errorf("input size %d is empty", in)
		}
		w.out = (in + stride - 1) / stride
		total := max((w.out-1)*stride+span-in, 0)
		w.before = total / 2
	default:
		return w, fmt.Errorf("unknown padding %q (want %q or %q)", string(p), Valid, Same)
	}
	return w, nil
}

// expr returns the input index expression stride·y + dilation·i − before.
func (w window) expr(y, i string) tile.Affine {
	return tile.Ix(y).Times(w.stride).Plus(tile.Ix(i).Times(w.dilation)).AddConst(-w.before)
}

// count returns how many of output position y's window cells lie inside the
// input.
func (w window) count(y int) int {
	n := 0
	for i := range w.k {
		if p := w.stride*y + w.dilation*i - w.before; p >= 0 && p < w.in {
			n++
		}
	}
	return n
}

// spatialOption expands a per-dimension option (strides, dilation, window
// size): nil or empty means def for every dimension, one value applies to
// every dimension, otherwise there must be one value per dimension.
func spatialOption(name string, v []int, rank, def int) ([]int, error) {
	out := make([]int, rank)
	switch len(v) {
	case 0:
		for i := range out {
			out[i] = def
		}
	case 1:
		for i := range out {
			out[i] = v[0]
		}
	case rank:
		copy(out, v)
	default:
		return nil, fmt.Errorf("%s %v has %d entries for %d spatial dimensions", name, v, len(v), rank)
	}
	for _, x := range out {
		if x < 1 {
			return nil, fmt.Errorf("%s %v must be positive", name, v)
		}
	}
	return out, nil
}
