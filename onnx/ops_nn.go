package onnx

import (
	"fmt"
	"sort"
	"strings"

	"github.com/tartanml/tartan/op"
	"github.com/tartanml/tartan/tile"
)

// Neural-network ops: matrix products, convolutions, pooling and
// normalisations, in ONNX's channels-first layout (N, C, spatial…).

func init() {
	register("MatMul", func(c *ctx) { c.set(0, op.MatMul(c.g, c.in(0), c.in(1))) })
	register("Gemm", opGemm)
	register("Conv", opConv)
	register("ConvTranspose", opConvTranspose)
	register("MaxPool", func(c *ctx) { opPool(c, "max") })
	register("AveragePool", func(c *ctx) { opPool(c, "avg") })
	register("LpPool", func(c *ctx) { opPool(c, "lp") })
	register("MaxUnpool", opMaxUnpool)
	register("GlobalAveragePool", func(c *ctx) { opGlobalPool(c, "avg") })
	register("GlobalMaxPool", func(c *ctx) { opGlobalPool(c, "max") })
	register("GlobalLpPool", func(c *ctx) { opGlobalPool(c, "lp") })
	register("BatchNormalization", opBatchNorm)
	register("InstanceNormalization", opInstanceNorm)
	register("LayerNormalization", opLayerNorm)
	register("LRN", opLRN)
	register("MeanVarianceNormalization", opMVN)
	register("LpNormalization", opLpNorm)
	register("Einsum", opEinsum)
}

func opGemm(c *ctx) {
	a, b := c.in(0), c.in(1)
	alpha, beta := c.attrFloat("alpha", 1), c.attrFloat("beta", 1)
	ta, tb := c.attrInt("transA", 0) != 0, c.attrInt("transB", 0) != 0
	if c.opset < 7 {
		c.ignore("broadcast")
	}
	if c.failed() {
		return
	}
	if a.Rank() != 2 || b.Rank() != 2 {
		c.fail("A %v and B %v must be matrices", a.Shape(), b.Shape())
		return
	}
	g := c.g
	if ta {
		a = g.Transpose(a, []int{1, 0})
	}
	if tb {
		b = g.Transpose(b, []int{1, 0})
	}
	y := op.MatMul(g, a, b)
	if alpha != 1 {
		y = g.Mul(y, g.ScalarLike(y, alpha))
	}
	if c.has(2) {
		cc := c.in(2)
		if beta != 1 {
			cc = g.Mul(cc, g.ScalarLike(cc, beta))
		}
		y = g.Add(y, cc)
	}
	c.set(0, g.BroadcastTo(y, y.Shape()))
}

// window is the geometry of a sliding window over the spatial dimensions.
type window struct {
	kernel, strides, dilations, padBegin, out []int
}

// windowOf reads kernel_shape (or takes kernel), strides, dilations, pads
// and auto_pad for spatial input sizes in.
func (c *ctx) windowOf(in, kernel []int, ceil bool) window {
	n := len(in)
	w := window{kernel: kernel}
	if ks := c.attrInts("kernel_shape"); ks != nil {
		w.kernel = toInts(ks)
	}
	if len(w.kernel) != n {
		c.fail("kernel_shape %v does not fit %d spatial dimensions", w.kernel, n)
		return w
	}
	w.strides = fill(toInts(c.attrInts("strides")), n, 1)
	w.dilations = fill(toInts(c.attrInts("dilations")), n, 1)
	pads := fill(toInts(c.attrInts("pads")), 2*n, 0)
	autoPad := c.attrString("auto_pad", "NOTSET")
	if c.failed() {
		return w
	}
	if len(w.strides) != n || len(w.dilations) != n || len(pads) != 2*n {
		c.fail("strides %v, dilations %v or pads %v do not fit %d spatial dimensions", w.strides, w.dilations, pads, n)
		return w
	}
	for i := range n {
		if w.kernel[i] < 1 || w.strides[i] < 1 || w.dilations[i] < 1 || pads[i] < 0 || pads[n+i] < 0 {
			c.fail("kernel %v, strides %v, dilations %v and pads %v must be positive", w.kernel, w.strides, w.dilations, pads)
			return w
		}
	}
	w.padBegin = make([]int, n)
	w.out = make([]int, n)
	for i := range n {
		ek := (w.kernel[i]-1)*w.dilations[i] + 1
		s := w.strides[i]
		switch autoPad {
		case "NOTSET":
			w.padBegin[i] = pads[i]
			span := in[i] + pads[i] + pads[n+i] - ek
			if span < 0 {
				c.fail("the window %v (dilated %d) is larger than the padded input %v", w.kernel, ek, in)
				return w
			}
			if ceil {
				w.out[i] = (span+s-1)/s + 1
				if (w.out[i]-1)*s >= in[i]+pads[i] {
					w.out[i]--
				}
			} else {
				w.out[i] = span/s + 1
			}
		case "SAME_UPPER", "SAME_LOWER":
			w.out[i] = (in[i] + s - 1) / s
			total := max((w.out[i]-1)*s+ek-in[i], 0)
			if autoPad == "SAME_UPPER" {
				w.padBegin[i] = total / 2
			} else {
				w.padBegin[i] = (total + 1) / 2
			}
		case "VALID":
			if in[i] < ek {
				c.fail("the window %v is larger than the input %v", w.kernel, in)
				return w
			}
			w.out[i] = (in[i]-ek)/s + 1
		default:
			c.fail("auto_pad %q is not supported", autoPad)
			return w
		}
	}
	return w
}

func toInts(v []int64) []int {
	if v == nil {
		return nil
	}
	r := make([]int, len(v))
	for i, x := range v {
		r[i] = int(clampInt(x, -MaxElements, MaxElements))
	}
	return r
}

// fill returns v, or n copies of def when v is nil.
func fill(v []int, n, def int) []int {
	if v != nil {
		return v
	}
	r := make([]int, n)
	for i := range r {
		r[i] = def
	}
	return r
}

// windowAccess returns the access of input spatial dimension i at output
// index y_i and window index k_i, and the constraints bounding the k_i.
func (w window) access() (out, in []tile.Affine, cons []tile.Constraint) {
	for i := range w.kernel {
		y, k := tile.Ix(fmt.Sprintf("y%d", i)), tile.Ix(fmt.Sprintf("k%d", i))
		out = append(out, y)
		in = append(in, y.Times(w.strides[i]).Plus(k.Times(w.dilations[i])).AddConst(-w.padBegin[i]))
		cons = append(cons, tile.Constraint{Expr: k, Bound: w.kernel[i]})
	}
	return
}

// conv convolves x (N, C, spatial…) with w (M, C, kernel…), one group.
func conv(g *tile.Graph, x, wt *tile.Tensor, win window) *tile.Tensor {
	n, m := tile.Ix("n"), tile.Ix("m")
	ch := tile.Ix("c")
	out, in, _ := win.access()
	var wAcc []tile.Affine
	wAcc = append(wAcc, m, ch)
	for i := range win.kernel {
		wAcc = append(wAcc, tile.Ix(fmt.Sprintf("k%d", i)))
	}
	shape := append(tile.Shape{x.Dim(0), wt.Dim(0)}, win.out...)
	return g.Contract(tile.Sum, tile.CombMul, shape, append([]tile.Affine{n, m}, out...),
		[]tile.Operand{{Tensor: x, Index: append([]tile.Affine{n, ch}, in...)}, {Tensor: wt, Index: wAcc}})
}

// groupedConv convolves x (N, C, spatial…) with wt (M, C/groups,
// kernel…) in groups: one contraction over (N, groups, M/groups,
// spatial…), in which group g reads input channels g·C/groups + c and
// weights g·M/groups + m, reshaped to (N, M, spatial…). A depthwise
// convolution (groups = C) is the case C/groups = 1; no group is sliced
// out and concatenated, so a layer of a thousand channels stays one kernel.
func groupedConv(c *ctx, x, wt *tile.Tensor, win window, groups int) *tile.Tensor {
	g := c.g
	if groups == 1 {
		return conv(g, x, wt, win)
	}
	ch, m := x.Dim(1), wt.Dim(0)
	if groups < 1 || ch%groups != 0 || m%groups != 0 || wt.Dim(1) != ch/groups {
		return c.fail("group %d does not fit input %v and weights %v", groups, x.Shape(), wt.Shape())
	}
	cg, mg := ch/groups, m/groups
	n, gi, mo, ci := tile.Ix("n"), tile.Ix("g"), tile.Ix("m"), tile.Ix("c")
	out, in, _ := win.access()
	wAcc := []tile.Affine{gi.Times(mg).Plus(mo), ci}
	for i := range win.kernel {
		wAcc = append(wAcc, tile.Ix(fmt.Sprintf("k%d", i)))
	}
	xAcc := append([]tile.Affine{n, gi.Times(cg).Plus(ci)}, in...)
	if mg == 1 {
		// One output channel per group (a depthwise convolution): the
		// group is the output channel, and with no reshape after it the
		// bias and activation that follow fuse into the contraction.
		wAcc[0] = gi
		shape := append(tile.Shape{x.Dim(0), m}, win.out...)
		return g.Contract(tile.Sum, tile.CombMul, shape, append([]tile.Affine{n, gi}, out...),
			[]tile.Operand{{Tensor: x, Index: xAcc}, {Tensor: wt, Index: wAcc}})
	}
	shape := append(tile.Shape{x.Dim(0), groups, mg}, win.out...)
	y := g.Contract(tile.Sum, tile.CombMul, shape, append([]tile.Affine{n, gi, mo}, out...),
		[]tile.Operand{{Tensor: x, Index: xAcc}, {Tensor: wt, Index: wAcc}})
	return g.Reshape(y, append(tile.Shape{x.Dim(0), m}, win.out...))
}

// addChannelBias adds b (M) along axis 1 of y.
func addChannelBias(g *tile.Graph, y, b *tile.Tensor) *tile.Tensor {
	return g.Add(y, g.Reshape(b, append(tile.Shape{1, b.Size()}, ones(y.Rank()-2)...)))
}

// convolve convolves x with wt as the node's attributes (group,
// kernel_shape, strides, pads, dilations, auto_pad) say.
func convolve(c *ctx, x, wt *tile.Tensor) *tile.Tensor {
	groups := int(c.attrInt("group", 1))
	if c.failed() {
		return nil
	}
	if x.Rank() < 3 || wt.Rank() != x.Rank() {
		return c.fail("input %v and weights %v must be (N, C, spatial…) and (M, C/group, kernel…)", x.Shape(), wt.Shape())
	}
	win := c.windowOf(x.Shape()[2:], wt.Shape()[2:], false)
	if c.failed() {
		return nil
	}
	if !tile.Shape(win.kernel).Equal(wt.Shape()[2:]) {
		return c.fail("kernel_shape %v differs from the weights %v", win.kernel, wt.Shape())
	}
	return groupedConv(c, x, wt, win, groups)
}

func opConv(c *ctx) {
	x, wt := c.in(0), c.in(1)
	if c.failed() {
		return
	}
	y := convolve(c, x, wt)
	if c.failed() {
		return
	}
	if c.has(2) {
		y = addChannelBias(c.g, y, c.in(2))
	}
	c.set(0, y)
}

func opConvTranspose(c *ctx) {
	x, wt := c.in(0), c.in(1)
	groups := int(c.attrInt("group", 1))
	outPad := toInts(c.attrInts("output_padding"))
	outShape := toInts(c.attrInts("output_shape"))
	autoPad := c.attrString("auto_pad", "NOTSET")
	if c.failed() {
		return
	}
	r := x.Rank()
	if r < 3 || wt.Rank() != r || groups < 1 || x.Dim(1)%groups != 0 || wt.Dim(0) != x.Dim(1) {
		c.fail("input %v and weights %v (C, M/group, kernel…) do not fit group %d", x.Shape(), wt.Shape(), groups)
		return
	}
	n := r - 2
	kernel := wt.Shape()[2:]
	if ks := toInts(c.attrInts("kernel_shape")); ks != nil && !tile.Shape(ks).Equal(kernel) {
		c.fail("kernel_shape %v differs from the weights %v", ks, wt.Shape())
		return
	}
	strides := fill(toInts(c.attrInts("strides")), n, 1)
	dil := fill(toInts(c.attrInts("dilations")), n, 1)
	pads := fill(toInts(c.attrInts("pads")), 2*n, 0)
	outPad = fill(outPad, n, 0)
	if len(strides) != n || len(dil) != n || len(pads) != 2*n || len(outPad) != n || (outShape != nil && len(outShape) != n && len(outShape) != r) {
		c.fail("strides %v, dilations %v, pads %v, output_padding %v or output_shape %v do not fit %d spatial dimensions", strides, dil, pads, outPad, outShape, n)
		return
	}
	if len(outShape) == r {
		outShape = outShape[2:]
	}
	in := x.Shape()[2:]
	pb, pe := make([]int, n), make([]int, n)
	for i := range n {
		ek := (kernel[i]-1)*dil[i] + 1
		if strides[i] < 1 || dil[i] < 1 || kernel[i] < 1 {
			c.fail("strides %v, dilations %v and kernel %v must be positive", strides, dil, kernel)
			return
		}
		full := strides[i]*(in[i]-1) + outPad[i] + ek
		switch {
		case outShape != nil || autoPad == "SAME_UPPER" || autoPad == "SAME_LOWER":
			want := in[i] * strides[i]
			if outShape != nil {
				want = outShape[i]
			}
			total := full - want
			half := total / 2
			if total < 0 && total%2 != 0 {
				half-- // floor division
			}
			if autoPad == "SAME_UPPER" {
				pb[i], pe[i] = half, total-half
			} else {
				pb[i], pe[i] = total-half, half
			}
		case autoPad == "NOTSET":
			pb[i], pe[i] = pads[i], pads[n+i]
		case autoPad == "VALID":
		default:
			c.fail("auto_pad %q is not supported", autoPad)
			return
		}
	}
	g := c.g
	// Spread the input by the strides (zeros between elements), then
	// convolve with the flipped kernel, its channel axes swapped per group.
	y := x
	for i := range n {
		s := strides[i]
		if s == 1 {
			continue
		}
		a := 2 + i
		sh := y.Shape()
		wide := append(append(sh[:a+1:a+1].Clone(), 1), sh[a+1:]...)
		y = g.Reshape(y, wide)
		lo, hi := make([]int, len(wide)), make([]int, len(wide))
		hi[a+1] = s - 1
		y = g.Pad(y, lo, hi, 0)
		merged := sh.Clone()
		merged[a] = sh[a] * s
		y = g.Reshape(y, merged)
		start, stop := make([]int, len(merged)), merged.Clone()
		stop[a] = (sh[a]-1)*s + 1
		y = g.Slice(y, start, stop, nil)
	}
	cg, mg := wt.Dim(0)/groups, wt.Dim(1)
	w := g.Reshape(wt, append(tile.Shape{groups, cg, mg}, wt.Shape()[2:]...))
	perm := []int{0, 2, 1}
	for i := range n {
		perm = append(perm, 3+i)
	}
	w = g.Reshape(g.Transpose(w, perm), append(tile.Shape{groups * mg, cg}, wt.Shape()[2:]...))
	for i := range n {
		k := kernel[i]
		idx := make([]int, k)
		for j := range idx {
			idx[j] = k - 1 - j
		}
		w = gatherIndex(g, w, 2+i, idx)
	}
	win := window{kernel: kernel, strides: ones(n), dilations: dil, padBegin: make([]int, n), out: make([]int, n)}
	for i := range n {
		ek := (kernel[i]-1)*dil[i] + 1
		win.padBegin[i] = ek - 1 - pb[i]
		win.out[i] = strides[i]*(in[i]-1) + outPad[i] + ek - pb[i] - pe[i]
		if win.out[i] < 0 {
			c.fail("pads %v leave no output", pads)
			return
		}
	}
	out := groupedConv(c, y, w, win, groups)
	if c.has(2) {
		out = addChannelBias(g, out, c.in(2))
	}
	c.set(0, out)
}

func opPool(c *ctx, kind string) {
	x := c.in(0)
	ceil := c.attrInt("ceil_mode", 0) != 0
	countPad := kind == "avg" && c.attrInt("count_include_pad", 0) != 0
	p := 2.0
	if kind == "lp" {
		p = float64(c.attrInt("p", 2))
	}
	storage := int64(0)
	if kind == "max" {
		storage = c.attrInt("storage_order", 0)
	}
	if c.failed() {
		return
	}
	if x.Rank() < 3 || (!x.DType().IsFloat() && kind != "max") {
		c.fail("input %s%v must be floating-point (N, C, spatial…)", c.typ(0), x.Shape())
		return
	}
	in := x.Shape()[2:]
	win := c.windowOf(in, nil, ceil)
	if c.failed() {
		return
	}
	g := c.g
	out, acc, cons := win.access()
	n, ch := tile.Ix("n"), tile.Ix("c")
	shape := append(tile.Shape{x.Dim(0), x.Dim(1)}, win.out...)
	oIdx := append([]tile.Affine{n, ch}, out...)
	xIdx := append([]tile.Affine{n, ch}, acc...)
	switch kind {
	case "max":
		y := g.Contract(tile.Max, tile.CombNone, shape, oIdx, []tile.Operand{{Tensor: x, Index: xIdx}}, cons...)
		c.set(0, y)
		if c.wantsOut(1) {
			c.set(1, maxPoolIndices(c, x, y, shape, oIdx, xIdx, cons, storage))
		}
	case "lp":
		a := g.Elementwise(tile.Pow, g.Elementwise(tile.Abs, x), g.ScalarLike(x, p))
		s := g.Contract(tile.Sum, tile.CombNone, shape, oIdx, []tile.Operand{{Tensor: a, Index: xIdx}}, cons...)
		c.set(0, g.Elementwise(tile.Pow, s, g.ScalarLike(s, 1/p)))
	case "avg":
		s := g.Contract(tile.Sum, tile.CombNone, shape, oIdx, []tile.Operand{{Tensor: x, Index: xIdx}}, cons...)
		// The divisor: the window's cells inside the input, or inside the
		// padded input with count_include_pad.
		one := tile.Shape{1, 1}
		ref := g.BroadcastTo(g.ScalarLike(x, 1), append(one.Clone(), in...))
		refIdx := acc
		if countPad {
			pads := fill(toInts(c.attrInts("pads")), 2*len(in), 0)
			padded := make(tile.Shape, len(in))
			refIdx = nil
			for i := range in {
				padded[i] = in[i] + pads[i] + pads[len(in)+i]
				if c.attrString("auto_pad", "NOTSET") != "NOTSET" {
					padded[i] = max(in[i], (win.out[i]-1)*win.strides[i]+(win.kernel[i]-1)*win.dilations[i]+1)
				}
				refIdx = append(refIdx, acc[i].AddConst(win.padBegin[i]))
			}
			ref = g.BroadcastTo(g.ScalarLike(x, 1), append(one.Clone(), padded...))
		}
		cnt := g.Contract(tile.Sum, tile.CombNone, append(one.Clone(), win.out...),
			append([]tile.Affine{tile.Lit(0), tile.Lit(0)}, out...),
			[]tile.Operand{{Tensor: ref, Index: append([]tile.Affine{tile.Lit(0), tile.Lit(0)}, refIdx...)}}, cons...)
		c.set(0, g.Div(s, cnt))
	}
}

// maxPoolIndices returns, for every maximum y of a max pooling of x, the
// flat position in x of the first element of its window that attains it:
// row-major, or with storage_order 1 column-major over the spatial axes.
func maxPoolIndices(c *ctx, x, y *tile.Tensor, shape tile.Shape, oIdx, xIdx []tile.Affine, cons []tile.Constraint, storage int64) *tile.Tensor {
	g := c.g
	s := x.Shape()
	pos := linearIndex(g, g.Iota(tile.Int64, s, 0), s, 0) // every element's row-major offset
	first := g.Contract(tile.Min, tile.CombEq, shape, oIdx, []tile.Operand{
		{Tensor: x, Index: xIdx}, {Tensor: y, Index: oIdx}, {Tensor: pos, Index: xIdx}}, cons...)
	switch storage {
	case 0:
		return first
	case 1:
	default:
		return c.fail("storage_order %d is not supported", storage)
	}
	// Rewrite the spatial part column-major.
	strides := s.Strides()
	rest := first
	var spatial []*tile.Tensor
	for d := range s {
		k := g.Scalar(float64(strides[d]), tile.Int64)
		q := g.Div(rest, k)
		rest = g.Sub(rest, g.Mul(q, k))
		spatial = append(spatial, q)
	}
	out := g.Add(g.Mul(spatial[0], g.Scalar(float64(strides[0]), tile.Int64)), g.Mul(spatial[1], g.Scalar(float64(strides[1]), tile.Int64)))
	mult := 1
	for d := 2; d < len(s); d++ {
		out = g.Add(out, g.Mul(spatial[d], g.Scalar(float64(mult), tile.Int64)))
		mult *= s[d]
	}
	return out
}

func opMaxUnpool(c *ctx) {
	x := c.in(0)
	idx := c.indexInput(1)
	if c.failed() {
		return
	}
	r := x.Rank()
	if r < 3 || !idx.Shape().Equal(x.Shape()) {
		c.fail("X %v must be (N, C, spatial…) and I of its shape, not %v", x.Shape(), idx.Shape())
		return
	}
	n := r - 2
	kernel := toInts(c.attrInts("kernel_shape"))
	strides := fill(toInts(c.attrInts("strides")), n, 1)
	pads := fill(toInts(c.attrInts("pads")), 2*n, 0)
	if c.failed() {
		return
	}
	if len(kernel) != n || len(strides) != n || len(pads) != 2*n {
		c.fail("kernel_shape %v, strides %v or pads %v do not fit %d spatial dimensions", kernel, strides, pads, n)
		return
	}
	out := tile.Shape{x.Dim(0), x.Dim(1)}
	for i := range n {
		out = append(out, (x.Dim(2+i)-1)*strides[i]-pads[i]-pads[n+i]+kernel[i])
	}
	if _, err := elementCount(int64s(out)); err != nil {
		c.fail("output shape: %v", err)
		return
	}
	g := c.g
	flat := g.ScatterAdd(g.Reshape(x, tile.Shape{x.Size()}), g.Reshape(idx, tile.Shape{x.Size()}), 0, tile.Shape{out.Size()})
	y := g.Reshape(flat, out)
	if c.has(2) {
		// The indices address the default output; a larger output_shape
		// extends it at the end of each axis.
		os := c.knownInts(2)
		if c.failed() {
			return
		}
		want := c.knownShape(os, "output_shape")
		if c.failed() {
			return
		}
		if len(want) != r {
			c.fail("output_shape %v does not fit rank %d", os, r)
			return
		}
		lo, hi := make([]int, r), make([]int, r)
		for i := range r {
			hi[i] = want[i] - out[i]
			if hi[i] < 0 || (i < 2 && hi[i] != 0) {
				c.fail("output_shape %v is smaller than the unpooled shape %v", want, out)
				return
			}
		}
		y = g.Pad(y, lo, hi, 0)
	}
	c.set(0, y)
}

func opGlobalPool(c *ctx, kind string) {
	x := c.in(0)
	p := 2.0
	if kind == "lp" {
		p = float64(c.attrInt("p", 2))
	}
	if c.failed() {
		return
	}
	if x.Rank() < 3 {
		c.fail("input %v must be (N, C, spatial…)", x.Shape())
		return
	}
	var axes []int
	count := 1
	for i := 2; i < x.Rank(); i++ {
		axes = append(axes, i)
		count *= x.Dim(i)
	}
	g := c.g
	switch kind {
	case "max":
		c.set(0, reduce(g, x, axes, true, tile.Max))
	case "avg":
		c.set(0, g.Div(reduce(g, x, axes, true, tile.Sum), g.ScalarLike(x, float64(count))))
	case "lp":
		a := g.Elementwise(tile.Pow, g.Elementwise(tile.Abs, x), g.ScalarLike(x, p))
		s := reduce(g, a, axes, true, tile.Sum)
		c.set(0, g.Elementwise(tile.Pow, s, g.ScalarLike(s, 1/p)))
	}
}

// channel reshapes a per-channel vector (C) to broadcast along axis 1 of a
// tensor of rank r.
func channel(g *tile.Graph, v *tile.Tensor, r int) *tile.Tensor {
	return g.Reshape(v, append(tile.Shape{1, v.Size()}, ones(r-2)...))
}

func opBatchNorm(c *ctx) {
	x, scale, b, mean, vr := c.in(0), c.in(1), c.in(2), c.in(3), c.in(4)
	eps := c.attrFloat("epsilon", 1e-5)
	momentum := c.attrFloat("momentum", 0.9)
	training := false
	if c.opset < 9 {
		if c.attrInt("spatial", 1) != 1 {
			c.fail("spatial=0 is not supported")
			return
		}
		c.ignore("is_test", "consumed_inputs")
	}
	if c.opset >= 14 {
		training = c.attrInt("training_mode", 0) != 0
	}
	if c.failed() {
		return
	}
	if x.Rank() < 2 {
		c.fail("input %v has rank below 2", x.Shape())
		return
	}
	g := c.g
	r := x.Rank()
	if !training {
		if c.nout() > 1 && c.opset >= 9 {
			c.fail("outputs beyond Y need training_mode=1")
			return
		}
		inv := g.Div(channel(g, scale, r), g.Sqrt(g.Add(channel(g, vr, r), g.ScalarLike(vr, eps))))
		y := g.Add(g.Mul(g.Sub(x, channel(g, mean, r)), inv), channel(g, b, r))
		c.set(0, y)
		return
	}
	var axes []int
	count := 1
	for i := range r {
		if i != 1 {
			axes = append(axes, i)
			count *= x.Dim(i)
		}
	}
	bm := g.Div(reduce(g, x, axes, false, tile.Sum), g.ScalarLike(x, float64(count)))
	d := g.Sub(x, channel(g, bm, r))
	bv := g.Div(reduce(g, g.Mul(d, d), axes, false, tile.Sum), g.ScalarLike(x, float64(count)))
	y := g.Add(g.Mul(g.Div(d, g.Sqrt(g.Add(channel(g, bv, r), g.ScalarLike(x, eps)))), channel(g, scale, r)), channel(g, b, r))
	c.set(0, y)
	mom := g.ScalarLike(mean, momentum)
	rest := g.ScalarLike(mean, 1-momentum)
	if c.wantsOut(1) {
		c.set(1, g.Add(g.Mul(mean, mom), g.Mul(bm, rest)))
	}
	if c.wantsOut(2) {
		c.set(2, g.Add(g.Mul(vr, mom), g.Mul(bv, rest)))
	}
}

func opInstanceNorm(c *ctx) {
	x, scale, b := c.in(0), c.in(1), c.in(2)
	eps := c.attrFloat("epsilon", 1e-5)
	if c.opset < 6 {
		c.ignore("consumed_inputs")
	}
	if c.failed() {
		return
	}
	r := x.Rank()
	if r < 3 {
		c.fail("input %v must be (N, C, spatial…)", x.Shape())
		return
	}
	g := c.g
	var axes []int
	count := 1
	for i := 2; i < r; i++ {
		axes = append(axes, i)
		count *= x.Dim(i)
	}
	m := g.Div(reduce(g, x, axes, true, tile.Sum), g.ScalarLike(x, float64(count)))
	d := g.Sub(x, m)
	v := g.Div(reduce(g, g.Mul(d, d), axes, true, tile.Sum), g.ScalarLike(x, float64(count)))
	y := g.Div(d, g.Sqrt(g.Add(v, g.ScalarLike(v, eps))))
	c.set(0, g.Add(g.Mul(y, channel(g, scale, r)), channel(g, b, r)))
}

func opLayerNorm(c *ctx) {
	x, scale := c.in(0), c.in(1)
	a := c.attrInt("axis", -1)
	eps := c.attrFloat("epsilon", 1e-5)
	stash := c.attrInt("stash_type", 1)
	if c.failed() {
		return
	}
	if stash != 1 {
		c.fail("stash_type %d is not supported", stash)
		return
	}
	ax := c.axis(a, x.Rank(), "axis")
	if c.failed() {
		return
	}
	g := c.g
	dt := x.DType()
	xf := g.Cast(x, tile.Float32)
	var axes []int
	count := 1
	for i := ax; i < x.Rank(); i++ {
		axes = append(axes, i)
		count *= x.Dim(i)
	}
	m := g.Div(reduce(g, xf, axes, true, tile.Sum), g.ScalarLike(xf, float64(count)))
	d := g.Sub(xf, m)
	v := g.Div(reduce(g, g.Mul(d, d), axes, true, tile.Sum), g.ScalarLike(xf, float64(count)))
	inv := g.Elementwise(tile.Rsqrt, g.Add(v, g.ScalarLike(v, eps)))
	y := g.Cast(g.Mul(d, inv), dt)
	y = g.Mul(y, scale)
	if c.has(2) {
		y = g.Add(y, c.in(2))
	}
	c.set(0, g.BroadcastTo(y, x.Shape()))
	if c.wantsOut(1) {
		c.set(1, m)
	}
	if c.wantsOut(2) {
		c.set(2, inv)
	}
}

func opLRN(c *ctx) {
	x := c.in(0)
	alpha, beta, bias := c.attrFloat("alpha", 1e-4), c.attrFloat("beta", 0.75), c.attrFloat("bias", 1)
	size := int(c.attrInt("size", 0))
	if c.failed() {
		return
	}
	if x.Rank() < 3 || size < 1 {
		c.fail("input %v must be (N, C, spatial…) and size %d positive", x.Shape(), size)
		return
	}
	g := c.g
	sq := g.Mul(x, x)
	var out, acc []tile.Affine
	for i := range x.Rank() {
		ix := tile.Ix(fmt.Sprintf("i%d", i))
		out = append(out, ix)
		if i == 1 {
			acc = append(acc, ix.Plus(tile.Ix("k")).AddConst(-(size-1)/2))
		} else {
			acc = append(acc, ix)
		}
	}
	s := g.Contract(tile.Sum, tile.CombNone, x.Shape(), out, []tile.Operand{{Tensor: sq, Index: acc}},
		tile.Constraint{Expr: tile.Ix("k"), Bound: size})
	den := g.Add(g.ScalarLike(x, bias), g.Mul(s, g.ScalarLike(x, alpha/float64(size))))
	c.set(0, g.Div(x, g.Elementwise(tile.Pow, den, g.ScalarLike(x, beta))))
}

func opMVN(c *ctx) {
	x := c.in(0)
	as := c.attrInts("axes")
	if c.failed() {
		return
	}
	if as == nil {
		as = []int64{0, 2, 3}
	}
	axes := c.axes(as, x.Rank(), "axis")
	if c.failed() {
		return
	}
	g := c.g
	count := 1
	for _, a := range axes {
		count *= x.Dim(a)
	}
	n := g.ScalarLike(x, float64(count))
	m := g.Div(reduce(g, x, axes, true, tile.Sum), n)
	ex2 := g.Div(reduce(g, g.Mul(x, x), axes, true, tile.Sum), n)
	std := g.Sqrt(g.Sub(ex2, g.Mul(m, m)))
	c.set(0, g.Div(g.Sub(x, m), g.Add(std, g.ScalarLike(x, 1e-9))))
}

func opLpNorm(c *ctx) {
	x := c.in(0)
	a := c.attrInt("axis", -1)
	p := c.attrInt("p", 2)
	if c.failed() {
		return
	}
	ax := c.axis(a, x.Rank(), "axis")
	if c.failed() {
		return
	}
	g := c.g
	var norm *tile.Tensor
	switch p {
	case 1:
		norm = reduce(g, g.Elementwise(tile.Abs, x), []int{ax}, true, tile.Sum)
	case 2:
		norm = g.Sqrt(reduce(g, g.Mul(x, x), []int{ax}, true, tile.Sum))
	default:
		c.fail("p=%d is not supported (1 or 2)", p)
		return
	}
	c.set(0, g.Div(x, norm))
}

// opEinsum builds one sum contraction of one or two operands.
func opEinsum(c *ctx) {
	eq := strings.ReplaceAll(c.attrString("equation", ""), " ", "")
	if c.failed() {
		return
	}
	var xs []*tile.Tensor
	for i := range c.nin() {
		xs = append(xs, c.in(i))
	}
	if c.failed() {
		return
	}
	if len(xs) < 1 || len(xs) > 2 {
		c.fail("%d operands are not supported (one or two)", len(xs))
		return
	}
	lhs, rhs, explicit := strings.Cut(eq, "->")
	terms := strings.Split(lhs, ",")
	if len(terms) != len(xs) {
		c.fail("equation %q names %d operands, the node has %d", eq, len(terms), len(xs))
		return
	}
	size := map[string]int{}
	count := map[string]int{}
	ellipsis := 0
	var accs [][]tile.Affine
	var ell []string
	labels := func(term string, rank int) ([]string, bool) {
		var names []string
		head, tail, has := strings.Cut(term, "...")
		for _, r := range head {
			names = append(names, string(r))
		}
		if has {
			n := rank - len(head) - len(tail)
			if n < 0 {
				return nil, false
			}
			for i := range n {
				names = append(names, fmt.Sprintf("_e%d", n-1-i))
			}
			ellipsis = max(ellipsis, n)
			for _, r := range tail {
				names = append(names, string(r))
			}
		}
		return names, len(names) == rank
	}
	for k, term := range terms {
		names, ok := labels(term, xs[k].Rank())
		if !ok {
			c.fail("term %q does not fit operand %d of shape %v", term, k, xs[k].Shape())
			return
		}
		var acc []tile.Affine
		for d, nm := range names {
			if r := nm[0]; !(r == '_' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z') {
				c.fail("equation %q: %q is not a letter", eq, nm)
				return
			}
			dim := xs[k].Dim(d)
			if old, ok := size[nm]; ok && old != dim {
				if old != 1 && dim != 1 || nm[0] != '_' {
					c.fail("equation %q: %q is %d and %d", eq, nm, old, dim)
					return
				}
			}
			if dim == 1 && nm[0] == '_' {
				acc = append(acc, tile.Lit(0)) // a broadcast dimension
				if _, ok := size[nm]; !ok {
					size[nm] = 1
				}
			} else {
				acc = append(acc, tile.Ix(nm))
				size[nm] = dim
			}
			if !strings.HasPrefix(nm, "_") {
				count[nm]++
			}
		}
		accs = append(accs, acc)
	}
	for i := ellipsis - 1; i >= 0; i-- {
		ell = append(ell, fmt.Sprintf("_e%d", i))
	}
	var outNames []string
	if explicit {
		head, tail, has := strings.Cut(rhs, "...")
		for _, r := range head {
			outNames = append(outNames, string(r))
		}
		if has {
			outNames = append(outNames, ell...)
		}
		for _, r := range tail {
			outNames = append(outNames, string(r))
		}
	} else {
		outNames = append(outNames, ell...)
		var single []string
		for nm, n := range count {
			if n == 1 {
				single = append(single, nm)
			}
		}
		sort.Strings(single)
		outNames = append(outNames, single...)
	}
	var shape tile.Shape
	var out []tile.Affine
	for _, nm := range outNames {
		d, ok := size[nm]
		if !ok {
			c.fail("equation %q: output label %q is on no operand", eq, nm)
			return
		}
		shape = append(shape, d)
		out = append(out, tile.Ix(nm))
	}
	if shape == nil {
		shape = tile.Shape{}
	}
	var ops []tile.Operand
	for k, x := range xs {
		ops = append(ops, tile.Operand{Tensor: x, Index: accs[k]})
	}
	comb := tile.CombNone
	if len(xs) == 2 {
		comb = tile.CombMul
	}
	c.set(0, c.g.Contract(tile.Sum, comb, shape, out, ops))
}
