package onnx

import (
	"github.com/tartanml/tartan/tile"
)

// Indexing ops: gathers, scatters, one-hot encodings, triangular masks,
// cumulative sums.

func init() {
	register("Gather", opGather)
	register("GatherElements", opGatherElements)
	register("GatherND", opGatherND)
	register("ScatterElements", opScatterElements)
	register("Scatter", opScatterElements)
	register("ScatterND", opScatterND)
	register("OneHot", opOneHot)
	register("Trilu", opTrilu)
	register("CumSum", opCumSum)
	register("EyeLike", opEyeLike)
}

// wrap adds d to the negative elements of integer positions idx, as ONNX's
// indices count from the end when negative. d may be a tensor of idx's shape.
func wrap(g *tile.Graph, idx, d *tile.Tensor) *tile.Tensor {
	return g.Select(g.Elementwise(tile.Lt, idx, g.ScalarLike(idx, 0)), g.Add(idx, d), idx)
}

// indexInts checks that input i holds integer positions.
func (c *ctx) indexInput(i int) *tile.Tensor {
	t := c.in(i)
	if c.failed() {
		return t
	}
	if !t.DType().IsInt() {
		return c.fail("input %d holds %s positions; int32 or int64 expected", i, FromTile(t.DType()))
	}
	return c.g.Cast(t, tile.Int64)
}

func opGather(c *ctx) {
	x := c.in(0)
	idx := c.indexInput(1)
	a := c.attrInt("axis", 0)
	if c.failed() {
		return
	}
	ax := c.axis(a, x.Rank(), "axis")
	if c.failed() {
		return
	}
	idx = wrap(c.g, idx, c.g.ScalarLike(idx, float64(x.Dim(ax))))
	c.set(0, c.g.Gather(x, idx, ax))
}

// linearIndex returns, for every element of idx (positions along axis of
// a tensor of shape s, idx having s's rank), the row-major offset in s of
// the element it selects: the element's own coordinates except along axis.
func linearIndex(g *tile.Graph, idx *tile.Tensor, s tile.Shape, axis int) *tile.Tensor {
	is := idx.Shape()
	strides := s.Strides()
	var lin *tile.Tensor
	for d := range is {
		var coord *tile.Tensor
		if d == axis {
			coord = wrap(g, idx, g.ScalarLike(idx, float64(s[d])))
		} else {
			coord = g.Iota(tile.Int64, is, d)
		}
		term := g.Mul(coord, g.Scalar(float64(strides[d]), tile.Int64))
		if lin == nil {
			lin = term
		} else {
			lin = g.Add(lin, term)
		}
	}
	if lin == nil {
		return g.Scalar(0, tile.Int64)
	}
	return lin
}

func opGatherElements(c *ctx) {
	x := c.in(0)
	idx := c.indexInput(1)
	a := c.attrInt("axis", 0)
	if c.failed() {
		return
	}
	ax := c.axis(a, x.Rank(), "axis")
	if c.failed() {
		return
	}
	if idx.Rank() != x.Rank() {
		c.fail("indices %v and data %v differ in rank", idx.Shape(), x.Shape())
		return
	}
	lin := linearIndex(c.g, idx, x.Shape(), ax)
	flat := c.g.Reshape(x, tile.Shape{x.Size()})
	c.set(0, c.g.Gather(flat, lin, 0))
}

// ndIndex turns GatherND/ScatterND indices (…, k) over data of shape s
// with b batch dimensions into offsets into data reshaped to
// (prod(s[:b+k]), s[b+k:]…), of shape indices.shape[:-1].
func ndIndex(c *ctx, idx *tile.Tensor, s tile.Shape, b int) (*tile.Tensor, tile.Shape) {
	g := c.g
	is := idx.Shape()
	if len(is) == 0 || len(is) <= b || len(s) < b {
		c.fail("indices %v do not fit data %v with %d batch dimensions", is, s, b)
		return nil, nil
	}
	k := is[len(is)-1]
	if b+k > len(s) {
		c.fail("indices %v index %d dimensions of data %v after %d batch dimensions", is, k, s, b)
		return nil, nil
	}
	for i := range b {
		if is[i] != s[i] {
			c.fail("batch dimensions of indices %v and data %v differ", is, s)
			return nil, nil
		}
	}
	head := s[:b+k]
	strides := head.Strides()
	outShape := is[:len(is)-1].Clone()
	var lin *tile.Tensor
	for i := 0; i < b; i++ {
		term := g.Mul(g.Iota(tile.Int64, outShape, i), g.Scalar(float64(strides[i]), tile.Int64))
		if lin == nil {
			lin = term
		} else {
			lin = g.Add(lin, term)
		}
	}
	for j := range k {
		start := make([]int, len(is))
		stop := is.Clone()
		start[len(is)-1], stop[len(is)-1] = j, j+1
		col := g.Reshape(g.Slice(idx, start, stop, nil), outShape)
		col = wrap(g, col, g.ScalarLike(col, float64(s[b+j])))
		term := g.Mul(col, g.Scalar(float64(strides[b+j]), tile.Int64))
		if lin == nil {
			lin = term
		} else {
			lin = g.Add(lin, term)
		}
	}
	if lin == nil {
		lin = g.BroadcastTo(g.Scalar(0, tile.Int64), outShape)
	}
	flat := append(tile.Shape{head.Size()}, s[b+k:]...)
	return lin, flat
}

func opGatherND(c *ctx) {
	x := c.in(0)
	idx := c.indexInput(1)
	b := int(c.attrInt("batch_dims", 0))
	if c.failed() {
		return
	}
	lin, flat := ndIndex(c, idx, x.Shape(), b)
	if c.failed() {
		return
	}
	c.set(0, c.g.Gather(c.g.Reshape(x, flat), lin, 0))
}

// scatterFlat writes updates (shaped like lin plus flat[1:]) into data
// reshaped to flat at the rows lin, replacing (none) or adding (add).
func scatterFlat(c *ctx, x, upd, lin *tile.Tensor, flat tile.Shape, reduction string) *tile.Tensor {
	g := c.g
	xf := g.Reshape(x, flat)
	sum := g.ScatterAdd(upd, lin, 0, flat)
	switch reduction {
	case "add":
		return g.Reshape(g.Add(xf, sum), x.Shape())
	case "none":
		hits := g.ScatterAdd(g.BroadcastTo(g.Scalar(1, tile.Float32), upd.Shape()), lin, 0, flat)
		hit := g.Elementwise(tile.Gt, hits, g.ScalarLike(hits, 0))
		return g.Reshape(g.Select(hit, sum, xf), x.Shape())
	}
	return c.fail("reduction %q is not supported", reduction)
}

func opScatterElements(c *ctx) {
	x := c.in(0)
	idx := c.indexInput(1)
	upd := c.in(2)
	a := c.attrInt("axis", 0)
	reduction := "none"
	if c.op == "ScatterElements" && c.opset >= 16 {
		reduction = c.attrString("reduction", "none")
	}
	if c.failed() {
		return
	}
	ax := c.axis(a, x.Rank(), "axis")
	if c.failed() {
		return
	}
	if !idx.Shape().Equal(upd.Shape()) || idx.Rank() != x.Rank() {
		c.fail("indices %v and updates %v must have one shape of data %v's rank", idx.Shape(), upd.Shape(), x.Shape())
		return
	}
	lin := linearIndex(c.g, idx, x.Shape(), ax)
	c.set(0, scatterFlat(c, x, upd, lin, tile.Shape{x.Size()}, reduction))
}

func opScatterND(c *ctx) {
	x := c.in(0)
	idx := c.indexInput(1)
	upd := c.in(2)
	reduction := "none"
	if c.opset >= 16 {
		reduction = c.attrString("reduction", "none")
	}
	if c.failed() {
		return
	}
	lin, flat := ndIndex(c, idx, x.Shape(), 0)
	if c.failed() {
		return
	}
	want := append(lin.Shape(), flat[1:]...)
	if !upd.Shape().Equal(want) {
		c.fail("updates %v, expected %v", upd.Shape(), want)
		return
	}
	c.set(0, scatterFlat(c, x, upd, lin, flat, reduction))
}

func opOneHot(c *ctx) {
	idx := c.in(0)
	dv := c.known(1)
	vals := c.in(2)
	a := c.attrInt("axis", -1)
	if c.failed() {
		return
	}
	if len(dv.Data) != 1 || vals.Size() != 2 {
		c.fail("depth must hold one element and values two")
		return
	}
	depth := int(toInt(dv.Data[0]))
	if depth < 1 || depth > MaxElements {
		c.fail("depth %d is out of range", depth)
		return
	}
	g := c.g
	r := idx.Rank() + 1
	ax := c.axis(a, r, "axis")
	if c.failed() {
		return
	}
	s := idx.Shape()
	out := append(append(s[:ax:ax].Clone(), depth), s[ax:]...)
	ks := append(append(s[:ax:ax].Clone(), 1), s[ax:]...)
	pos := idx
	if !pos.DType().IsFloat() {
		pos = g.Cast(pos, tile.Int64)
	} else {
		pos = g.Cast(g.Elementwise(tile.Floor, pos), tile.Int64)
	}
	pos = g.Reshape(wrap(g, pos, g.ScalarLike(pos, float64(depth))), ks)
	hot := g.Elementwise(tile.Eq, g.Iota(tile.Int64, out, ax), pos)
	off := g.Reshape(g.Slice(g.Reshape(vals, tile.Shape{2}), []int{0}, []int{1}, nil), tile.Shape{})
	on := g.Reshape(g.Slice(g.Reshape(vals, tile.Shape{2}), []int{1}, []int{2}, nil), tile.Shape{})
	c.set(0, g.BroadcastTo(g.Select(hot, on, off), out))
}

func opTrilu(c *ctx) {
	x := c.in(0)
	upper := c.attrInt("upper", 1) != 0
	k := int64(0)
	if c.has(1) {
		if v := c.knownInts(1); len(v) == 1 {
			k = v[0]
		} else if !c.failed() {
			c.fail("k must hold one element")
		}
	}
	if c.failed() {
		return
	}
	r := x.Rank()
	if r < 2 {
		c.fail("input %v has rank below 2", x.Shape())
		return
	}
	g := c.g
	s := x.Shape()
	k = clampInt(k, -MaxElements, MaxElements)
	diff := g.Sub(g.Iota(tile.Int64, s, r-1), g.Iota(tile.Int64, s, r-2)) // j - i
	var keep *tile.Tensor
	if upper {
		keep = g.Elementwise(tile.Ge, diff, g.Scalar(float64(k), tile.Int64))
	} else {
		keep = g.Elementwise(tile.Le, diff, g.Scalar(float64(k), tile.Int64))
	}
	c.set(0, g.Select(keep, x, g.BroadcastTo(g.ScalarLike(x, 0), s)))
}

func opCumSum(c *ctx) {
	x := c.in(0)
	av := c.knownInts(1)
	exclusive := c.attrInt("exclusive", 0) != 0
	reverse := c.attrInt("reverse", 0) != 0
	if c.failed() {
		return
	}
	if len(av) != 1 {
		c.fail("axis must hold one element")
		return
	}
	ax := c.axis(av[0], x.Rank(), "axis")
	if c.failed() {
		return
	}
	s := x.Shape()
	var out, acc []tile.Affine
	for i := range s {
		ix := tile.Ix("i" + string(rune('a'+i)))
		out = append(out, ix)
		if i == ax {
			acc = append(acc, tile.Ix("j"))
		} else {
			acc = append(acc, ix)
		}
	}
	i, j := out[ax], tile.Ix("j")
	expr := i.Minus(j) // j ≤ i
	if reverse {
		expr = j.Minus(i)
	}
	if exclusive {
		expr = expr.AddConst(-1)
	}
	y := c.g.Contract(tile.Sum, tile.CombNone, s, out, []tile.Operand{{Tensor: x, Index: acc}},
		tile.Constraint{Expr: expr, Bound: max(s[ax], 1)})
	c.set(0, y)
}

func opEyeLike(c *ctx) {
	x := c.in(0)
	k := c.attrInt("k", 0)
	dt := x.DType()
	if c.hasAttr("dtype") {
		dt = c.attrDType("dtype", Float)
	} else {
		c.used["dtype"] = true
	}
	if c.failed() {
		return
	}
	if x.Rank() != 2 {
		c.fail("input %v is not 2-D", x.Shape())
		return
	}
	g := c.g
	s := x.Shape()
	k = clampInt(k, -MaxElements, MaxElements)
	diff := g.Sub(g.Iota(tile.Int64, s, 1), g.Iota(tile.Int64, s, 0))
	c.set(0, g.Cast(g.Elementwise(tile.Eq, diff, g.Scalar(float64(k), tile.Int64)), dt))
}

func init() {
	register("Compress", opCompress)
	register("NonZero", opNonZero)
	register("ReverseSequence", opReverseSequence)
	register("TopK", opTopK)
}

// opCompress keeps the slices along axis (of the flattened input when no
// axis is given) where the known condition holds.
func opCompress(c *ctx) {
	x := c.in(0)
	cond := c.known(1)
	if c.failed() {
		return
	}
	if cond.DType != tile.Bool || cond.Shape.Rank() != 1 {
		c.fail("condition %s%v must be a bool vector", cond.DType, cond.Shape)
		return
	}
	g := c.g
	ax := 0
	if c.hasAttr("axis") {
		ax = c.axis(c.attrInt("axis", 0), x.Rank(), "axis")
	} else {
		c.used["axis"] = true
		x = g.Reshape(x, tile.Shape{x.Size()})
	}
	if c.failed() {
		return
	}
	if len(cond.Data) > x.Dim(ax) {
		c.fail("condition of %d elements is longer than axis %d of %v", len(cond.Data), ax, x.Shape())
		return
	}
	var keep []int
	for i, v := range cond.Data {
		if v != 0 {
			keep = append(keep, i)
		}
	}
	c.set(0, gatherIndex(g, x, ax, keep))
}

// opNonZero lists the coordinates of the nonzero elements of a known
// tensor (the output's shape depends on the values), in row-major order.
func opNonZero(c *ctx) {
	v := c.known(0)
	if c.failed() {
		return
	}
	r := v.Shape.Rank()
	strides := v.Shape.Strides()
	var nz []int
	for i, x := range v.Data {
		if x != 0 {
			nz = append(nz, i)
		}
	}
	data := make([]float64, r*len(nz))
	for k, i := range nz {
		for d := range r {
			data[d*len(nz)+k] = float64(i / strides[d] % v.Shape[d])
		}
	}
	if r == 0 {
		r = 1
		data = make([]float64, len(nz))
	}
	out, err := tile.ValueOf(tile.Int64, tile.Shape{r, len(nz)}, data)
	if err != nil {
		c.fail("%v", err)
		return
	}
	c.setKnown(0, out)
}

func opReverseSequence(c *ctx) {
	x := c.in(0)
	lens := c.indexInput(1)
	ba, ta := c.attrInt("batch_axis", 1), c.attrInt("time_axis", 0)
	if c.failed() {
		return
	}
	if x.Rank() < 2 || (ba != 0 && ba != 1) || (ta != 0 && ta != 1) || ba == ta {
		c.fail("batch_axis %d and time_axis %d must be 0 and 1 of a tensor of rank 2 or more, not %v", ba, ta, x.Shape())
		return
	}
	if !lens.Shape().Equal(tile.Shape{x.Dim(int(ba))}) {
		c.fail("sequence_lens %v do not fit batch %d", lens.Shape(), x.Dim(int(ba)))
		return
	}
	g := c.g
	s := x.Shape()
	ls := ones(x.Rank())
	ls[ba] = s[ba]
	n := g.BroadcastTo(g.Reshape(lens, ls), s)
	t := g.Iota(tile.Int64, s, int(ta))
	idx := g.Select(g.Elementwise(tile.Lt, t, n), g.Sub(g.Sub(n, g.ScalarLike(n, 1)), t), t)
	lin := linearIndex(g, idx, s, int(ta))
	c.set(0, g.Gather(g.Reshape(x, tile.Shape{x.Size()}), lin, 0))
}

// opTopK ranks every element of a row against the others (an element is
// beaten by larger ones and by equal ones before it) and picks the first k
// ranks, sorted.
func opTopK(c *ctx) {
	x := c.in(0)
	var k int64
	if c.opset < 10 {
		k = c.attrInt("k", 0)
	} else if kv := c.knownInts(1); len(kv) == 1 {
		k = kv[0]
	} else if !c.failed() {
		c.fail("K must hold one element")
	}
	a := c.attrInt("axis", -1)
	largest := true
	if c.opset >= 11 {
		largest = c.attrInt("largest", 1) != 0
		c.ignore("sorted") // the output is sorted either way, which sorted=0 allows
	}
	if c.failed() {
		return
	}
	ax := c.axis(a, x.Rank(), "axis")
	if c.failed() {
		return
	}
	n := x.Dim(ax)
	if k < 0 || k > int64(n) {
		c.fail("k %d is out of range for axis %d of %v", k, ax, x.Shape())
		return
	}
	if n > 4096 {
		c.fail("TopK along an axis of %d elements is not supported (4096 at most)", n)
		return
	}
	g := c.g
	r := x.Rank()
	perm := make([]int, 0, r)
	for i := range r {
		if i != ax {
			perm = append(perm, i)
		}
	}
	perm = append(perm, ax)
	xt := g.Transpose(x, perm) // (…, n)
	lead := xt.Shape()[:r-1]
	col := g.Reshape(xt, append(lead.Clone(), n, 1)) // element i
	row := g.Reshape(xt, append(lead.Clone(), 1, n)) // element j
	cmp := tile.Gt
	if !largest {
		cmp = tile.Lt
	}
	before := g.Elementwise(tile.Lt, g.Iota(tile.Int64, tile.Shape{n, n}, 1), g.Iota(tile.Int64, tile.Shape{n, n}, 0))
	beats := g.Elementwise(tile.Or, g.Elementwise(cmp, row, col), g.Elementwise(tile.And, g.Elementwise(tile.Eq, row, col), before))
	rank := reduce(g, g.Cast(beats, tile.Int64), []int{r}, false, tile.Sum) // (…, n)
	hit := g.Elementwise(tile.Eq, g.Reshape(rank, append(lead.Clone(), n, 1)), g.Iota(tile.Int64, tile.Shape{1, int(k)}, 1))
	wide := append(lead.Clone(), n, int(k))
	vals := reduce(g, g.Select(hit, g.BroadcastTo(col, wide), g.BroadcastTo(g.ScalarLike(x, 0), wide)), []int{r - 1}, false, tile.Sum)
	pos := g.BroadcastTo(g.Iota(tile.Int64, tile.Shape{n, 1}, 0), wide)
	idx := reduce(g, g.Select(hit, pos, g.BroadcastTo(g.Scalar(0, tile.Int64), wide)), []int{r - 1}, false, tile.Sum)
	inv := make([]int, r)
	for i, p := range perm {
		inv[p] = i
	}
	c.set(0, g.Transpose(vals, inv))
	c.set(1, g.Transpose(idx, inv))
}
