package op

import (
	"fmt"

	"github.com/tartanml/tartan/tile"
)

// ConvTransposeOptions configures a transposed convolution. Zero values mean
// Keras's defaults: stride 1, valid padding, dilation 1, and no output
// padding (nil OutputPadding), which makes the output length the one of
// TransposedLength with no output padding. Strides, Dilation and
// OutputPadding hold one value per spatial dimension, or a single value for
// all of them.
type ConvTransposeOptions struct {
	Strides  []int
	Padding  Padding
	Dilation []int
	// OutputPadding, when not nil, lengthens the output: each value must lie
	// in [0, stride) for its dimension.
	OutputPadding []int
}

// TransposedLength returns the output length of a transposed convolution
// along one dimension, with Keras's arithmetic: for an input of length in, a
// window of k with the given stride and dilation (span (k−1)·dilation + 1),
//
//	valid, no output padding:   in·stride + max(span − stride, 0)
//	same, no output padding:    in·stride
//	valid, output padding p:    (in − 1)·stride + span + p
//	same, output padding p:     (in − 1)·stride + span − 2·⌊span/2⌋ + p
//
// outputPadding < 0 means none. It also returns how many of the full
// output's leading positions are cut off (the padding before), which is
// TensorFlow's: 0 for valid, and for same half (rounded down) of
// max((in − 1)·stride + span − out, 0), so that the transposed convolution
// is the adjoint of Conv2D with the same arguments.
func TransposedLength(in, k, stride, dilation int, p Padding, outputPadding int) (out, before int, err error) {
	if in < 1 || k < 1 || stride < 1 || dilation < 1 {
		return 0, 0, fmt.Errorf("input size %d, window %d, stride %d and dilation %d must be positive", in, k, stride, dilation)
	}
	if outputPadding >= stride {
		return 0, 0, fmt.Errorf("output padding %d must be smaller than the stride %d", outputPadding, stride)
	}
	span := (k-1)*dilation + 1
	switch p {
	case Valid, "":
		if outputPadding < 0 {
			out = in*stride + max(span-stride, 0)
		} else {
			out = (in-1)*stride + span + outputPadding
		}
	case Same:
		if outputPadding < 0 {
			out = in * stride
		} else {
			out = (in-1)*stride + span - 2*(span/2) + outputPadding
		}
		before = max((in-1)*stride+span-out, 0) / 2
	default:
		return 0, 0, fmt.Errorf("unknown padding %q (want %q or %q)", string(p), Valid, Same)
	}
	if out < 1 {
		return 0, 0, fmt.Errorf("the output would be %d long", out)
	}
	return out, before, nil
}

// Conv2DTranspose returns the transposed convolution (the gradient of
// Conv2D with respect to its input, sometimes called deconvolution) of x
// (N, H, W, C) with kernel (kh, kw, out, C), Keras's Conv2DTranspose kernel
// layout, as (N, H', W', out) with H' and W' from TransposedLength. Every
// input element scatters its window:
//
//	O[n, sy·y + dy·i − padTop, sx·x + dx·j − padLeft, o] += X[n, y, x, c] · K[i, j, o, c]
//
// contributions falling outside the output are dropped. No bias is added
// (see BiasAdd).
func Conv2DTranspose(g *tile.Graph, x, kernel *tile.Tensor, opt ConvTransposeOptions) *tile.Tensor {
	return convTranspose(g, "conv2d_transpose", 2, x, kernel, opt)
}

// Conv1DTranspose is Conv2DTranspose over one spatial dimension: x (N, W, C)
// and kernel (k, out, C) give (N, W', out).
func Conv1DTranspose(g *tile.Graph, x, kernel *tile.Tensor, opt ConvTransposeOptions) *tile.Tensor {
	return convTranspose(g, "conv1d_transpose", 1, x, kernel, opt)
}

// convTranspose is the transposed convolution of s spatial dimensions, one
// contraction whose output access is compound:
//
//	O[n, stride·y + dilation·k − before…, co] = +(X[n, y…, ci] * K[k…, co, ci])
func convTranspose(g *tile.Graph, op string, s int, x, kernel *tile.Tensor, opt ConvTransposeOptions) *tile.Tensor {
	if !checkFloat(g, op, in("x", x), in("kernel", kernel)) {
		return invalid(g, op)
	}
	if x.Rank() != s+2 || kernel.Rank() != s+2 {
		return g.Errorf(op, "want x of rank %d (N, spatial…, C) and kernel of rank %d (spatial…, out, C), got x %s, kernel %s",
			s+2, s+2, desc(x), desc(kernel))
	}
	c, o := x.Dim(-1), kernel.Dim(s)
	if kernel.Dim(s+1) != c {
		return g.Errorf(op, "kernel %s expects %d input channels but x %s has %d", desc(kernel), kernel.Dim(s+1), desc(x), c)
	}
	if err := opt.Padding.check(); err != nil {
		return g.Errorf(op, "%v (x %s, kernel %s)", err, desc(x), desc(kernel))
	}
	strides, err := spatialOption("strides", opt.Strides, s, 1)
	if err != nil {
		return g.Errorf(op, "%v (x %s, kernel %s)", err, desc(x), desc(kernel))
	}
	dil, err := spatialOption("dilation", opt.Dilation, s, 1)
	if err != nil {
		return g.Errorf(op, "%v (x %s, kernel %s)", err, desc(x), desc(kernel))
	}
	outPad := make([]int, s)
	for d := range outPad {
		outPad[d] = -1
	}
	switch len(opt.OutputPadding) {
	case 0:
	case 1, s:
		for d := range outPad {
			outPad[d] = opt.OutputPadding[min(d, len(opt.OutputPadding)-1)]
			if outPad[d] < 0 {
				return g.Errorf(op, "output padding %v must not be negative (x %s, kernel %s)", opt.OutputPadding, desc(x), desc(kernel))
			}
		}
	default:
		return g.Errorf(op, "output padding %v has %d entries for %d spatial dimensions (x %s, kernel %s)",
			opt.OutputPadding, len(opt.OutputPadding), s, desc(x), desc(kernel))
	}
	outShape := tile.Shape{x.Dim(0)}
	out := ixs("n")
	xAcc := ixs("n")
	var kAcc []tile.Affine
	ys, ks := names("y", s), names("k", s)
	for d := range s {
		n, before, err := TransposedLength(x.Dim(1+d), kernel.Dim(d), strides[d], dil[d], opt.Padding, outPad[d])
		if err != nil {
			return g.Errorf(op, "spatial dimension %d: %v (x %s, kernel %s)", d, err, desc(x), desc(kernel))
		}
		outShape = append(outShape, n)
		out = append(out, tile.Ix(ys[d]).Times(strides[d]).Plus(tile.Ix(ks[d]).Times(dil[d])).AddConst(-before))
		xAcc = append(xAcc, tile.Ix(ys[d]))
		kAcc = append(kAcc, tile.Ix(ks[d]))
	}
	outShape = append(outShape, o)
	out = append(out, tile.Ix("co"))
	xAcc = append(xAcc, tile.Ix("ci"))
	kAcc = append(kAcc, tile.Ix("co"), tile.Ix("ci"))
	return g.Contract(tile.Sum, tile.CombMul, outShape, out, []tile.Operand{{Tensor: x, Index: xAcc}, {Tensor: kernel, Index: kAcc}})
}
