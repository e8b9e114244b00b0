// Package op is Tartan's op library: the layers and losses of deep learning
// written in the tile language, as contractions, elementwise functions and
// shape ops, so that the gradient rules, the compiler and every backend see
// nothing but tile nodes.
//
// Layouts are channels-last, as in Keras: images are NHWC, sequences NWC,
// convolution kernels (spatial…, in/groups, out), depthwise kernels
// (spatial…, in, multiplier) and dense kernels (in, out).
//
// The ops, by file:
//
//   - linalg.go: MatMul (2-D and batched, NumPy broadcasting of the batch
//     dimensions), Dense, BiasAdd, Flatten.
//   - conv.go: Conv1D, Conv2D, Conv3D (strides, "valid"/"same" padding,
//     dilation, groups) and DepthwiseConv2D.
//   - pool.go: MaxPool1D/2D, AvgPool1D/2D, GlobalAvgPool2D, GlobalMaxPool2D.
//   - padding.go: the TensorFlow/Keras window arithmetic shared by
//     convolution and pooling.
//   - activation.go: ReLU, LeakyReLU, ELU, GELU, Sigmoid, Tanh, Softplus.
//   - softmax.go: Softmax and LogSoftmax, both numerically stable.
//   - loss.go: SparseCategoricalCrossentropy, CategoricalCrossentropy,
//     BinaryCrossentropy, MeanSquaredError, MeanAbsoluteError.
//   - norm.go: BatchNorm and LayerNorm.
//   - reduce.go: Sum, Mean, Max, Min, ArgMax, ArgMin.
//   - dropout.go: Dropout (training-mode, inverted).
//   - convtranspose.go: Conv1DTranspose and Conv2DTranspose (Keras's output
//     lengths, TensorFlow's padding; see TransposedLength).
//   - upsample.go: UpSample2D (nearest and half-pixel bilinear) and
//     ResizeBilinear.
//
// Every function takes the graph first and returns a *tile.Tensor. Argument
// errors (wrong ranks, mismatched channels, non-float inputs, integer labels
// of the wrong type, bad options) are recorded on the graph through
// Graph.Errorf, naming the op and the shapes involved, and the function
// returns an invalid tensor; nothing panics on bad input, and once an error
// is recorded every later call returns an invalid tensor, so a chain of calls
// needs one check of Graph.Err at its end.
//
// Padding is never materialised: a contraction's out-of-range reads are
// skipped, so "same" padding is the index expression stride·y + dilation·i −
// padBefore, and max pooling ignores padded cells by construction.
package op

import (
	"fmt"
	"strings"

	"github.com/tartanml/tartan/tile"
)

// arg is a named argument, for validation and error messages.
type arg struct {
	name string
	t    *tile.Tensor
}

// in pairs an argument with its name.
func in(name string, t *tile.Tensor) arg { return arg{name, t} }

// check reports whether every argument is a valid tensor of g and no error is
// recorded on g yet. When it returns false an error is recorded (unless g is
// nil), so the caller returns invalid(g, op).
func check(g *tile.Graph, op string, args ...arg) bool {
	if g == nil || g.Err() != nil {
		return false
	}
	for _, a := range args {
		switch {
		case a.t == nil:
			g.Errorf(op, "%s is nil", a.name)
			return false
		case !a.t.Valid():
			g.Errorf(op, "%s is an invalid tensor", a.name)
			return false
		case a.t.Graph() != g:
			g.Errorf(op, "%s %s belongs to another graph", a.name, desc(a.t))
			return false
		}
	}
	return true
}

// checkFloat is check plus a floating-point dtype for every argument, and one
// dtype shared by all of them.
func checkFloat(g *tile.Graph, op string, args ...arg) bool {
	if !check(g, op, args...) {
		return false
	}
	for _, a := range args {
		if !a.t.DType().IsFloat() {
			g.Errorf(op, "%s must be floating-point, got %s", a.name, desc(a.t))
			return false
		}
		if a.t.DType() != args[0].t.DType() {
			g.Errorf(op, "dtypes differ: %s", descAll(args))
			return false
		}
	}
	return true
}

// invalid returns the invalid tensor that follows an error. It records a
// generic error for op only if none is recorded yet, which the check helpers
// make impossible in practice.
func invalid(g *tile.Graph, op string) *tile.Tensor {
	if g == nil {
		return nil
	}
	return g.Errorf(op, "invalid arguments")
}

// desc formats a tensor as "f32[2, 3]".
func desc(t *tile.Tensor) string {
	if !t.Valid() {
		return "<invalid>"
	}
	return t.DType().String() + t.Shape().String()
}

// descOrNil is desc for a tensor that may be nil.
func descOrNil(t *tile.Tensor) string {
	if t == nil {
		return "<nil>"
	}
	return desc(t)
}

// descAll formats named arguments as "x f32[2, 3], kernel f32[3, 3, 3, 4]".
func descAll(args []arg) string {
	parts := make([]string, len(args))
	for i, a := range args {
		parts[i] = a.name + " " + desc(a.t)
	}
	return strings.Join(parts, ", ")
}

// scalar returns a scalar constant of x's dtype.
func scalar(g *tile.Graph, x *tile.Tensor, v float64) *tile.Tensor { return g.ScalarLike(x, v) }

// names returns n index names prefix0, prefix1, ….
func names(prefix string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("%s%d", prefix, i)
	}
	return out
}

// ixs returns the index expressions of the given names.
func ixs(ns ...string) []tile.Affine {
	out := make([]tile.Affine, len(ns))
	for i, n := range ns {
		out[i] = tile.Ix(n)
	}
	return out
}

// normAxis resolves a possibly negative axis against rank, reporting false
// when it is out of range.
func normAxis(axis, rank int) (int, bool) {
	if axis < 0 {
		axis += rank
	}
	return axis, axis >= 0 && axis < rank
}
