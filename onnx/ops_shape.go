package onnx

import (
	"math"

	"github.com/tartanml/tartan/tile"
)

// Shape ops: constants, shapes, reshaping, transposition, joining and
// splitting, slicing, padding, repetition.

func init() {
	register("Constant", opConstant)
	register("Shape", opShape)
	register("Size", func(c *ctx) {
		v, _ := tile.ValueOf(tile.Int64, tile.Shape{}, []float64{float64(c.shape(0).Size())})
		if !c.failed() {
			c.setKnown(0, v)
		}
	})
	register("Reshape", opReshape)
	register("Flatten", opFlatten)
	register("Transpose", opTranspose)
	register("Squeeze", opSqueeze)
	register("Unsqueeze", opUnsqueeze)
	register("Concat", opConcat)
	register("Split", opSplit)
	register("Slice", opSlice)
	register("Expand", opExpand)
	register("Tile", opTile)
	register("ConstantOfShape", opConstantOfShape)
	register("Range", opRange)
	register("Pad", opPad)
	register("DepthToSpace", opDepthToSpace)
	register("SpaceToDepth", opSpaceToDepth)
	register("Dropout", opDropout)
}

// axis normalises an axis of a tensor of rank r (negative counts from the
// end), recording an error when it is out of range.
func (c *ctx) axis(a int64, r int, what string) int {
	if a < -int64(r) || a >= int64(r) {
		c.fail("%s %d is out of range for rank %d", what, a, r)
		return 0
	}
	if a < 0 {
		a += int64(r)
	}
	return int(a)
}

// axes normalises a list of axes, refusing repeats.
func (c *ctx) axes(as []int64, r int, what string) []int {
	seen := map[int]bool{}
	var out []int
	for _, a := range as {
		k := c.axis(a, r, what)
		if c.failed() {
			return nil
		}
		if seen[k] {
			c.fail("%s %d is given twice", what, a)
			return nil
		}
		seen[k] = true
		out = append(out, k)
	}
	return out
}

// axesFrom returns the axes of an op that took them as an attribute before
// opset since and as input in from then on; nil with ok false when absent.
func (c *ctx) axesFrom(since int64, input int) (axes []int64, ok bool) {
	if c.opset < since {
		if !c.hasAttr("axes") {
			c.used["axes"] = true
			return nil, false
		}
		return c.attrInts("axes"), true
	}
	if !c.has(input) {
		return nil, false
	}
	return c.knownInts(input), true
}

// knownShape checks a shape computed from known values.
func (c *ctx) knownShape(dims []int64, what string) tile.Shape {
	if _, err := elementCount(dims); err != nil {
		c.fail("%s: %v", what, err)
		return nil
	}
	s := make(tile.Shape, len(dims))
	for i, d := range dims {
		s[i] = int(d)
	}
	return s
}

func opConstant(c *ctx) {
	var v *tile.Value
	var err error
	switch {
	case c.hasAttr("value"):
		var d DataType
		v, d = c.attrTensorType("value")
		c.setType(0, d)
	case c.hasAttr("value_float"):
		v, err = tile.ValueOf(tile.Float32, tile.Shape{}, []float64{c.attrFloat("value_float", 0)})
	case c.hasAttr("value_floats"):
		f := c.attrFloats("value_floats")
		v, err = tile.ValueOf(tile.Float32, tile.Shape{len(f)}, f)
	case c.hasAttr("value_int"):
		v, err = tile.ValueOf(tile.Int64, tile.Shape{}, []float64{float64(c.attrInt("value_int", 0))})
	case c.hasAttr("value_ints"):
		is := c.attrInts("value_ints")
		f := make([]float64, len(is))
		for i, x := range is {
			f[i] = float64(x)
		}
		v, err = tile.ValueOf(tile.Int64, tile.Shape{len(f)}, f)
	case c.hasAttr("sparse_value"):
		c.used["sparse_value"] = true
		c.fail("sparse constants are not supported")
		return
	case c.hasAttr("value_string") || c.hasAttr("value_strings"):
		c.ignore("value_string", "value_strings")
		c.fail("string constants are not supported")
		return
	default:
		c.fail("no value attribute")
		return
	}
	if err != nil {
		c.fail("%v", err)
		return
	}
	if v != nil && !c.failed() {
		c.setKnown(0, v)
	}
}

func opShape(c *ctx) {
	s := c.shape(0)
	start, end := int64(0), int64(len(s))
	if c.opset >= 15 {
		start = c.attrInt("start", 0)
		end = c.attrInt("end", int64(len(s)))
	}
	if c.failed() {
		return
	}
	r := int64(len(s))
	clamp := func(x int64) int64 {
		if x < 0 {
			x += r
		}
		return min(max(x, 0), r)
	}
	start, end = clamp(start), clamp(end)
	var d []float64
	for i := start; i < end; i++ {
		d = append(d, float64(s[i]))
	}
	v, _ := tile.ValueOf(tile.Int64, tile.Shape{len(d)}, d)
	c.setKnown(0, v)
}

func opReshape(c *ctx) {
	var dims []int64
	if c.opset < 5 {
		dims = c.attrInts("shape")
		c.ignore("consumed_inputs")
	} else {
		dims = c.knownInts(1)
	}
	allowZero := c.opset >= 14 && c.attrInt("allowzero", 0) != 0
	x := c.in(0)
	if c.failed() {
		return
	}
	in := x.Shape()
	out := make([]int64, len(dims))
	infer := -1
	known := int64(1)
	for i, d := range dims {
		switch {
		case d == 0 && !allowZero:
			if i >= len(in) {
				c.fail("shape %v copies dimension %d of the input %v, which has none", dims, i, in)
				return
			}
			out[i] = int64(in[i])
		case d == -1:
			if infer >= 0 {
				c.fail("shape %v has more than one -1", dims)
				return
			}
			infer = i
			continue
		case d < 0:
			c.fail("shape %v has a negative dimension", dims)
			return
		default:
			out[i] = d
		}
		if out[i] != 0 && known > MaxElements/out[i] {
			c.fail("shape %v is too large", dims)
			return
		}
		known *= out[i]
	}
	if infer >= 0 {
		if known == 0 || int64(x.Size())%known != 0 {
			c.fail("cannot reshape %v to %v", in, dims)
			return
		}
		out[infer] = int64(x.Size()) / known
	}
	shape := c.knownShape(out, "shape")
	if c.failed() {
		return
	}
	if shape.Size() != x.Size() {
		c.fail("cannot reshape %v (%d elements) to %v", in, x.Size(), shape)
		return
	}
	c.set(0, c.g.Reshape(x, shape))
}

func opFlatten(c *ctx) {
	x := c.in(0)
	a := c.attrInt("axis", 1)
	if c.failed() {
		return
	}
	r := x.Rank()
	if a < -int64(r) || a > int64(r) {
		c.fail("axis %d is out of range for rank %d", a, r)
		return
	}
	if a < 0 {
		a += int64(r)
	}
	s := x.Shape()
	outer := 1
	for _, d := range s[:a] {
		outer *= d
	}
	inner := 1
	for _, d := range s[a:] {
		inner *= d
	}
	c.set(0, c.g.Reshape(x, tile.Shape{outer, inner}))
}

func opTranspose(c *ctx) {
	x := c.in(0)
	perm := c.attrInts("perm")
	if c.failed() {
		return
	}
	r := x.Rank()
	p := make([]int, r)
	if perm == nil {
		for i := range p {
			p[i] = r - 1 - i
		}
	} else {
		if len(perm) != r {
			c.fail("perm %v does not fit rank %d", perm, r)
			return
		}
		ax := c.axes(perm, r, "perm entry")
		if c.failed() {
			return
		}
		copy(p, ax)
	}
	c.set(0, c.g.Transpose(x, p))
}

func opSqueeze(c *ctx) {
	x := c.in(0)
	as, given := c.axesFrom(13, 1)
	if c.failed() {
		return
	}
	s := x.Shape()
	drop := map[int]bool{}
	if given {
		for _, a := range c.axes(as, len(s), "axis") {
			if s[a] != 1 {
				c.fail("axis %d of %v is not 1", a, s)
				return
			}
			drop[a] = true
		}
	} else {
		for i, d := range s {
			if d == 1 {
				drop[i] = true
			}
		}
	}
	if c.failed() {
		return
	}
	var out tile.Shape
	for i, d := range s {
		if !drop[i] {
			out = append(out, d)
		}
	}
	c.set(0, c.g.Reshape(x, append(tile.Shape{}, out...)))
}

func opUnsqueeze(c *ctx) {
	x := c.in(0)
	as, given := c.axesFrom(13, 1)
	if c.failed() {
		return
	}
	if !given {
		c.fail("no axes")
		return
	}
	s := x.Shape()
	r := len(s) + len(as)
	ins := map[int]bool{}
	for _, a := range c.axes(as, r, "axis") {
		ins[a] = true
	}
	if c.failed() {
		return
	}
	out := make(tile.Shape, 0, r)
	k := 0
	for i := range r {
		if ins[i] {
			out = append(out, 1)
		} else {
			out = append(out, s[k])
			k++
		}
	}
	c.set(0, c.g.Reshape(x, out))
}

func opConcat(c *ctx) {
	a := c.attrInt("axis", math.MinInt64)
	if a == math.MinInt64 {
		if c.opset >= 4 {
			c.fail("no axis")
			return
		}
		a = 1
	}
	var xs []*tile.Tensor
	for i := range c.nin() {
		if c.has(i) {
			xs = append(xs, c.in(i))
		}
	}
	if c.failed() || len(xs) == 0 {
		c.fail("no inputs")
		return
	}
	ax := c.axis(a, xs[0].Rank(), "axis")
	if c.failed() {
		return
	}
	// Empty inputs add nothing.
	var keep []*tile.Tensor
	for _, x := range xs {
		if x.Size() > 0 || x.Dim(ax) > 0 {
			keep = append(keep, x)
		}
	}
	if len(keep) == 0 {
		keep = xs[:1]
	}
	if len(keep) == 1 {
		c.set(0, keep[0])
		return
	}
	c.set(0, c.g.Concat(ax, keep...))
}

func opSplit(c *ctx) {
	x := c.in(0)
	a := c.attrInt("axis", 0)
	var split []int64
	if c.opset < 13 {
		split = c.attrInts("split")
		if c.opset < 2 && c.has(1) {
			split = c.knownInts(1)
		}
	} else if c.has(1) {
		split = c.knownInts(1)
	}
	if c.failed() {
		return
	}
	ax := c.axis(a, x.Rank(), "axis")
	if c.failed() {
		return
	}
	n := c.nout()
	d := x.Dim(ax)
	if split == nil {
		if n == 0 || d%n != 0 {
			c.fail("dimension %d of %v does not split into %d equal parts", ax, x.Shape(), n)
			return
		}
		for range n {
			split = append(split, int64(d/n))
		}
	}
	if len(split) != n {
		c.fail("split %v gives %d parts for %d outputs", split, len(split), n)
		return
	}
	sum := int64(0)
	for _, s := range split {
		if s < 0 {
			c.fail("split %v has a negative part", split)
			return
		}
		sum += s
	}
	if sum != int64(d) {
		c.fail("split %v does not add up to dimension %d of %v", split, ax, x.Shape())
		return
	}
	r := x.Rank()
	off := 0
	for i, s := range split {
		start, stop := make([]int, r), x.Shape()
		start[ax], stop[ax] = off, off+int(s)
		off += int(s)
		c.set(i, c.g.Slice(x, start, stop, nil))
	}
}

// clampInt bounds x to [lo, hi].
func clampInt(x, lo, hi int64) int64 { return min(max(x, lo), hi) }

func opSlice(c *ctx) {
	x := c.in(0)
	var starts, ends, axes, steps []int64
	if c.opset < 10 {
		starts, ends, axes = c.attrInts("starts"), c.attrInts("ends"), c.attrInts("axes")
	} else {
		starts, ends = c.knownInts(1), c.knownInts(2)
		if c.has(3) {
			axes = c.knownInts(3)
		}
		if c.has(4) {
			steps = c.knownInts(4)
		}
	}
	if c.failed() {
		return
	}
	r := x.Rank()
	if axes == nil {
		for i := range starts {
			axes = append(axes, int64(i))
		}
	}
	if steps == nil {
		for range starts {
			steps = append(steps, 1)
		}
	}
	if len(starts) != len(ends) || len(axes) != len(starts) || len(steps) != len(starts) {
		c.fail("starts %v, ends %v, axes %v and steps %v differ in length", starts, ends, axes, steps)
		return
	}
	ax := c.axes(axes, r, "axis")
	if c.failed() {
		return
	}
	s := x.Shape()
	start, stop, step := make([]int, r), x.Shape(), make([]int, r)
	for i := range step {
		step[i] = 1
	}
	type rev struct{ axis, start, step, n int }
	var revs []rev
	for i, a := range ax {
		d := int64(s[a])
		st, en, sp := starts[i], ends[i], steps[i]
		if sp == 0 {
			c.fail("step 0 on axis %d", a)
			return
		}
		if st < 0 {
			st += d
		}
		if en < 0 && en > math.MinInt64/2 {
			en += d
		}
		if sp > 0 {
			st, en = clampInt(st, 0, d), clampInt(en, 0, d)
			if en < st {
				en = st
			}
			start[a], stop[a], step[a] = int(st), int(en), int(min(sp, max(d, 1)))
			continue
		}
		st, en = clampInt(st, 0, d-1), clampInt(en, -1, d-1)
		n := int64(0)
		if st > en {
			n = (st - en + (-sp) - 1) / (-sp)
		}
		revs = append(revs, rev{a, int(st), int(sp), int(n)})
	}
	y := c.g.Slice(x, start, stop, step)
	for _, rv := range revs {
		if rv.n > maxIndexList {
			c.fail("a reversed slice of %d elements is too large", rv.n)
			return
		}
		idx := make([]float64, rv.n)
		for k := range idx {
			idx[k] = float64(rv.start + k*rv.step)
		}
		iv, _ := tile.ValueOf(tile.Int64, tile.Shape{rv.n}, idx)
		y = c.g.Gather(y, c.g.Constant(iv), rv.axis)
	}
	c.set(0, y)
}

func opExpand(c *ctx) {
	x := c.in(0)
	dims := c.knownInts(1)
	if c.failed() {
		return
	}
	shape := c.knownShape(dims, "shape")
	if c.failed() {
		return
	}
	out, ok := tile.BroadcastShapes(x.Shape(), shape)
	if !ok {
		c.fail("%v does not broadcast with shape %v", x.Shape(), shape)
		return
	}
	c.set(0, c.g.BroadcastTo(x, out))
}

func opTile(c *ctx) {
	x := c.in(0)
	reps := c.knownInts(1)
	if c.failed() {
		return
	}
	s := x.Shape()
	if len(reps) != len(s) {
		c.fail("repeats %v do not fit rank %d", reps, len(s))
		return
	}
	var mid, wide, out []int64
	for i, r := range reps {
		if r < 0 {
			c.fail("repeats %v has a negative count", reps)
			return
		}
		mid = append(mid, 1, int64(s[i]))
		wide = append(wide, r, int64(s[i]))
		out = append(out, r*int64(s[i]))
	}
	ws := c.knownShape(wide, "repeated shape")
	if c.failed() {
		return
	}
	y := c.g.BroadcastTo(c.g.Reshape(x, c.knownShape(mid, "shape")), ws)
	c.set(0, c.g.Reshape(y, c.knownShape(out, "shape")))
}

func opConstantOfShape(c *ctx) {
	dims := c.knownInts(0)
	v, d := c.attrTensorType("value")
	c.setType(0, d)
	if c.failed() {
		return
	}
	shape := c.knownShape(dims, "shape")
	if c.failed() {
		return
	}
	dt, x := tile.Float32, 0.0
	if v != nil {
		if len(v.Data) != 1 {
			c.fail("value holds %d elements, not one", len(v.Data))
			return
		}
		dt, x = v.DType, v.Data[0]
	}
	c.set(0, c.g.BroadcastTo(c.g.Scalar(x, dt), shape))
}

func opRange(c *ctx) {
	s, l, d := c.known(0), c.known(1), c.known(2)
	if c.failed() {
		return
	}
	if len(s.Data) != 1 || len(l.Data) != 1 || len(d.Data) != 1 {
		c.fail("start, limit and delta must be scalars")
		return
	}
	start, limit, delta := s.Data[0], l.Data[0], d.Data[0]
	if delta == 0 {
		c.fail("delta is 0")
		return
	}
	n := math.Ceil((limit - start) / delta)
	if !(n >= 0) {
		n = 0
	}
	if n > foldLimit {
		c.fail("a range of %g elements is too long", n)
		return
	}
	data := make([]float64, int(n))
	for i := range data {
		data[i] = start + float64(i)*delta
	}
	v, err := tile.ValueOf(s.DType, tile.Shape{len(data)}, data)
	if err != nil {
		c.fail("%v", err)
		return
	}
	c.setKnown(0, v)
}

// maxIndexList bounds the lists of positions built here for a gather.
const maxIndexList = 1 << 24

// gatherIndex reads x along axis at the given positions.
func gatherIndex(g *tile.Graph, x *tile.Tensor, axis int, idx []int) *tile.Tensor {
	d := make([]float64, len(idx))
	for i, k := range idx {
		d[i] = float64(k)
	}
	v, _ := tile.ValueOf(tile.Int64, tile.Shape{len(d)}, d)
	return g.Gather(x, g.Constant(v), axis)
}

func opPad(c *ctx) {
	x := c.in(0)
	var pads []int64
	value := 0.0
	mode := c.attrString("mode", "constant")
	if c.opset < 11 {
		if c.opset < 2 {
			pads = c.attrInts("paddings")
		} else {
			pads = c.attrInts("pads")
		}
		value = c.attrFloat("value", 0)
	} else {
		pads = c.knownInts(1)
		if c.has(2) {
			v := c.known(2)
			if v != nil {
				if len(v.Data) != 1 {
					c.fail("constant_value holds %d elements, not one", len(v.Data))
					return
				}
				value = v.Data[0]
			}
		}
		if c.has(3) {
			c.fail("the axes input is not supported")
			return
		}
	}
	if c.failed() {
		return
	}
	r := x.Rank()
	if len(pads) != 2*r {
		c.fail("pads %v do not fit rank %d", pads, r)
		return
	}
	s := x.Shape()
	// Crop negative pads first.
	start, stop := make([]int, r), x.Shape()
	lo, hi := make([]int, r), make([]int, r)
	for i := range r {
		if pads[i] < -int64(s[i]) || pads[r+i] < -int64(s[i]) || pads[i] > MaxElements || pads[r+i] > MaxElements {
			c.fail("pads %v do not fit shape %v", pads, s)
			return
		}
		if pads[i] < 0 {
			start[i] = int(-pads[i])
		} else {
			lo[i] = int(pads[i])
		}
		if pads[r+i] < 0 {
			stop[i] = s[i] + int(pads[r+i])
		} else {
			hi[i] = int(pads[r+i])
		}
		if stop[i] < start[i] {
			c.fail("pads %v crop more than shape %v holds", pads, s)
			return
		}
	}
	y := c.g.Slice(x, start, stop, nil)
	switch mode {
	case "constant":
		c.set(0, c.g.Pad(y, lo, hi, value))
		return
	case "edge", "reflect":
	default:
		c.fail("mode %q is not supported", mode)
		return
	}
	for a := range r {
		if lo[a] == 0 && hi[a] == 0 {
			continue
		}
		d := y.Dim(a)
		if d == 0 || (mode == "reflect" && d == 1 && lo[a]+hi[a] > 0) {
			c.fail("%s padding of an axis of %d elements", mode, d)
			return
		}
		if int64(d)+int64(lo[a])+int64(hi[a]) > maxIndexList {
			c.fail("%s padding to %d elements along axis %d is too large", mode, int64(d)+int64(lo[a])+int64(hi[a]), a)
			return
		}
		idx := make([]int, 0, d+lo[a]+hi[a])
		for i := -lo[a]; i < d+hi[a]; i++ {
			k := i
			if mode == "edge" {
				k = min(max(i, 0), d-1)
			} else {
				period := 2 * (d - 1)
				k = ((i % period) + period) % period
				if k >= d {
					k = period - k
				}
			}
			idx = append(idx, k)
		}
		y = gatherIndex(c.g, y, a, idx)
	}
	c.set(0, y)
}

func opDepthToSpace(c *ctx) {
	x := c.in(0)
	b := int(c.attrInt("blocksize", 0))
	mode := "DCR"
	if c.opset >= 11 {
		mode = c.attrString("mode", "DCR")
	}
	if c.failed() {
		return
	}
	if x.Rank() != 4 || b <= 0 || x.Dim(1)%(b*b) != 0 {
		c.fail("blocksize %d does not fit input %v (N, C, H, W)", b, x.Shape())
		return
	}
	n, ch, h, w := x.Dim(0), x.Dim(1), x.Dim(2), x.Dim(3)
	co := ch / (b * b)
	var y *tile.Tensor
	switch mode {
	case "DCR":
		y = c.g.Reshape(x, tile.Shape{n, b, b, co, h, w})
		y = c.g.Transpose(y, []int{0, 3, 4, 1, 5, 2})
	case "CRD":
		y = c.g.Reshape(x, tile.Shape{n, co, b, b, h, w})
		y = c.g.Transpose(y, []int{0, 1, 4, 2, 5, 3})
	default:
		c.fail("mode %q is not supported", mode)
		return
	}
	c.set(0, c.g.Reshape(y, tile.Shape{n, co, h * b, w * b}))
}

func opSpaceToDepth(c *ctx) {
	x := c.in(0)
	b := int(c.attrInt("blocksize", 0))
	if c.failed() {
		return
	}
	if x.Rank() != 4 || b <= 0 || x.Dim(2)%b != 0 || x.Dim(3)%b != 0 {
		c.fail("blocksize %d does not fit input %v (N, C, H, W)", b, x.Shape())
		return
	}
	n, ch, h, w := x.Dim(0), x.Dim(1), x.Dim(2), x.Dim(3)
	y := c.g.Reshape(x, tile.Shape{n, ch, h / b, b, w / b, b})
	y = c.g.Transpose(y, []int{0, 3, 5, 1, 2, 4})
	c.set(0, c.g.Reshape(y, tile.Shape{n, ch * b * b, h / b, w / b}))
}

// opDropout is the identity at inference (and in training with ratio 0);
// its optional mask is all true.
func opDropout(c *ctx) {
	x := c.in(0)
	c.ignore("seed")
	training := false
	ratio := 0.5
	if c.opset < 7 {
		training = c.attrInt("is_test", 0) == 0
		ratio = c.attrFloat("ratio", 0.5)
		c.ignore("consumed_inputs")
	} else if c.opset < 12 {
		ratio = c.attrFloat("ratio", 0.5)
	} else {
		if c.has(1) {
			if v := c.known(1); v != nil && len(v.Data) == 1 {
				ratio = v.Data[0]
			}
		}
		if c.has(2) {
			if v := c.known(2); v != nil && len(v.Data) == 1 {
				training = v.Data[0] != 0
			}
		}
	}
	if c.failed() {
		return
	}
	if training && ratio != 0 {
		c.fail("training-mode dropout (ratio %g) draws random numbers and is not supported", ratio)
		return
	}
	c.set(0, x)
	if c.wantsOut(1) {
		c.set(1, c.g.BroadcastTo(c.g.Scalar(1, tile.Bool), x.Shape()))
	}
}
