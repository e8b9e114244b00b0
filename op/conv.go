package op

import (
	"github.com/tartanml/tartan/tile"
)

// ConvOptions configures a convolution. Zero values mean Keras's defaults:
// stride 1, valid padding, dilation 1, one group. Strides and Dilation hold
// one value per spatial dimension, or a single value for all of them.
type ConvOptions struct {
	Strides  []int
	Padding  Padding
	Dilation []int
	// Groups splits the input channels and the output channels into that
	// many groups, output group j seeing only input group j. Both channel
	// counts must be multiples of Groups, and the kernel's input-channel
	// dimension is channels/Groups.
	Groups int
}

// Conv1D convolves x (N, W, C) with kernel (k, C/groups, out) and returns
// (N, W', out). Like every convolution here it computes the cross-correlation
// Keras computes and adds no bias (see BiasAdd).
func Conv1D(g *tile.Graph, x, kernel *tile.Tensor, opt ConvOptions) *tile.Tensor {
	return conv(g, "conv1d", 1, x, kernel, opt)
}

// Conv2D convolves x (N, H, W, C) with kernel (kh, kw, C/groups, out) and
// returns (N, H', W', out): output element (n, y, x, o) is the sum over the
// window offsets (i, j) and the input channels c of o's group of
// x[n, sy·y + dy·i − padTop, sx·x + dx·j − padLeft, c] · kernel[i, j, c', o],
// where reads outside x count as zero.
func Conv2D(g *tile.Graph, x, kernel *tile.Tensor, opt ConvOptions) *tile.Tensor {
	return conv(g, "conv2d", 2, x, kernel, opt)
}

// Conv3D convolves x (N, D, H, W, C) with kernel (kd, kh, kw, C/groups, out)
// and returns (N, D', H', W', out).
func Conv3D(g *tile.Graph, x, kernel *tile.Tensor, opt ConvOptions) *tile.Tensor {
	return conv(g, "conv3d", 3, x, kernel, opt)
}

// DepthwiseConv2D convolves every channel of x (N, H, W, C) separately with
// kernel (kh, kw, C, multiplier) and returns (N, H', W', C·multiplier), output
// channel c·multiplier + m coming from input channel c and kernel slice m, as
// Keras's DepthwiseConv2D does. opt.Groups must be left zero.
func DepthwiseConv2D(g *tile.Graph, x, kernel *tile.Tensor, opt ConvOptions) *tile.Tensor {
	const op = "depthwise_conv2d"
	const s = 2
	if !checkFloat(g, op, in("x", x), in("kernel", kernel)) {
		return invalid(g, op)
	}
	if x.Rank() != s+2 || kernel.Rank() != s+2 {
		return g.Errorf(op, "want x (N, H, W, C) and kernel (kh, kw, C, multiplier), got x %s, kernel %s", desc(x), desc(kernel))
	}
	if opt.Groups != 0 {
		return g.Errorf(op, "Groups %d does not apply: a depthwise convolution has one group per channel (x %s)", opt.Groups, desc(x))
	}
	c, mult := x.Dim(-1), kernel.Dim(-1)
	if kernel.Dim(s) != c {
		return g.Errorf(op, "kernel %s expects %d channels but x %s has %d", desc(kernel), kernel.Dim(s), desc(x), c)
	}
	ws, ok := convWindows(g, op, s, x, kernel, opt)
	if !ok {
		return invalid(g, op)
	}
	outShape, out, xAcc, kAcc := sliding(x.Dim(0), ws)
	spatial := outShape.Clone()
	outShape = append(outShape, c, mult)
	out = append(out, tile.Ix("c"), tile.Ix("m"))
	xAcc = append(xAcc, tile.Ix("c"))
	kAcc = append(kAcc, tile.Ix("c"), tile.Ix("m"))
	y := g.Contract(tile.Sum, tile.CombMul, outShape, out, []tile.Operand{{Tensor: x, Index: xAcc}, {Tensor: kernel, Index: kAcc}})
	return g.Reshape(y, append(spatial, c*mult))
}

// conv is the convolution of s spatial dimensions behind Conv1D, Conv2D and
// Conv3D. With one group it is a single contraction
//
//	O[n, y…, o] = +(X[n, stride·y + dilation·k − before…, c] * K[k…, c, o])
//
// and with G groups the channels are split by reshapes, X to (…, G, C/G) and
// K to (…, C/G, G, O/G), so that the contraction keeps plain indices.
func conv(g *tile.Graph, op string, s int, x, kernel *tile.Tensor, opt ConvOptions) *tile.Tensor {
	if !checkFloat(g, op, in("x", x), in("kernel", kernel)) {
		return invalid(g, op)
	}
	if x.Rank() != s+2 || kernel.Rank() != s+2 {
		return g.Errorf(op, "want x of rank %d (N, spatial…, C) and kernel of rank %d (spatial…, C/groups, out), got x %s, kernel %s",
			s+2, s+2, desc(x), desc(kernel))
	}
	groups := opt.Groups
	if groups == 0 {
		groups = 1
	}
	c, o, cg := x.Dim(-1), kernel.Dim(-1), kernel.Dim(s)
	if groups < 0 || c%groups != 0 || o%groups != 0 {
		return g.Errorf(op, "%d groups must divide both the %d input channels of x %s and the %d output channels of kernel %s",
			groups, c, desc(x), o, desc(kernel))
	}
	if cg*groups != c {
		return g.Errorf(op, "kernel %s expects %d input channels per group but x %s has %d channels in %d group(s)",
			desc(kernel), cg, desc(x), c, groups)
	}
	ws, ok := convWindows(g, op, s, x, kernel, opt)
	if !ok {
		return invalid(g, op)
	}
	outShape, out, xAcc, kAcc := sliding(x.Dim(0), ws)
	if groups == 1 {
		outShape = append(outShape, o)
		out = append(out, tile.Ix("co"))
		xAcc = append(xAcc, tile.Ix("ci"))
		kAcc = append(kAcc, tile.Ix("ci"), tile.Ix("co"))
		return g.Contract(tile.Sum, tile.CombMul, outShape, out, []tile.Operand{{Tensor: x, Index: xAcc}, {Tensor: kernel, Index: kAcc}})
	}
	og := o / groups
	xs := append(x.Shape()[:s+1], groups, cg)
	ks := append(kernel.Shape()[:s+1], groups, og)
	final := append(outShape.Clone(), o)
	outShape = append(outShape, groups, og)
	out = append(out, tile.Ix("g"), tile.Ix("co"))
	xAcc = append(xAcc, tile.Ix("g"), tile.Ix("ci"))
	kAcc = append(kAcc, tile.Ix("ci"), tile.Ix("g"), tile.Ix("co"))
	y := g.Contract(tile.Sum, tile.CombMul, outShape, out, []tile.Operand{
		{Tensor: g.Reshape(x, xs), Index: xAcc},
		{Tensor: g.Reshape(kernel, ks), Index: kAcc},
	})
	return g.Reshape(y, final)
}

// convWindows resolves the windows of x's s spatial dimensions for a kernel
// whose leading s dimensions are the window sizes, recording an error for op
// when the options or sizes are unusable.
func convWindows(g *tile.Graph, op string, s int, x, kernel *tile.Tensor, opt ConvOptions) ([]window, bool) {
	if err := opt.Padding.check(); err != nil {
		g.Errorf(op, "%v (x %s, kernel %s)", err, desc(x), desc(kernel))
		return nil, false
	}
	strides, err := spatialOption("strides", opt.Strides, s, 1)
	if err != nil {
		g.Errorf(op, "%v (x %s, kernel %s)", err, desc(x), desc(kernel))
		return nil, false
	}
	dil, err := spatialOption("dilation", opt.Dilation, s, 1)
	if err != nil {
		g.Errorf(op, "%v (x %s, kernel %s)", err, desc(x), desc(kernel))
		return nil, false
	}
	ws := make([]window, s)
	for d := range ws {
		ws[d], err = newWindow(x.Dim(1+d), kernel.Dim(d), strides[d], dil[d], opt.Padding)
		if err != nil {
			g.Errorf(op, "spatial dimension %d: %v (x %s, kernel %s)", d, err, desc(x), desc(kernel))
			return nil, false
		}
	}
	return ws, true
}

// sliding returns the batch and spatial part of a sliding-window
// contraction over n samples: the output shape (n, out…), the output access
// (n, y…), the input access (n, stride·y + dilation·k − before…) and the
// window access (k…). Callers append the channel dimensions.
func sliding(n int, ws []window) (outShape tile.Shape, out, xAcc, kAcc []tile.Affine) {
	outShape = tile.Shape{n}
	out = ixs("n")
	xAcc = ixs("n")
	ys, ks := names("y", len(ws)), names("k", len(ws))
	for d, w := range ws {
		outShape = append(outShape, w.out)
		out = append(out, tile.Ix(ys[d]))
		xAcc = append(xAcc, w.expr(ys[d], ks[d]))
		kAcc = append(kAcc, tile.Ix(ks[d]))
	}
	return outShape, out, xAcc, kAcc
}
