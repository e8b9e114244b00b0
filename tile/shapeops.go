package tile

// ReshapeOp reinterprets its operand's row-major elements with a new shape of
// the same size.
type ReshapeOp struct{}

// TransposeOp permutes dimensions: output dimension i is operand dimension
// Perm[i].
type TransposeOp struct{ Perm []int }

// SliceOp takes, along every dimension d, the elements Start[d],
// Start[d]+Step[d], … below Stop[d]. Steps are positive; 0 ≤ Start ≤ Stop ≤
// the dimension.
type SliceOp struct{ Start, Stop, Step []int }

// ConcatOp joins its operands along Axis; they agree in every other dimension.
type ConcatOp struct{ Axis int }

// PadOp surrounds its operand with Lo[d] elements before and Hi[d] after along
// every dimension d, all equal to Value. Lo and Hi are not negative.
type PadOp struct {
	Lo, Hi []int
	Value  float64
}

// BroadcastOp repeats its operand NumPy-style: dimensions are aligned at the
// end, and operand dimensions of size 1 (or missing) are repeated.
type BroadcastOp struct{}

// GatherOp picks slices of its first operand (data) along Axis at the integer
// positions in its second operand (indices). The output shape is
// data[:Axis] + indices + data[Axis+1:]. A position outside the axis reads 0.
type GatherOp struct{ Axis int }

// ScatterAddOp is Gather's adjoint: it adds the slices of its first operand
// (updates, shaped like a Gather result) into a zero tensor of the node's shape
// at the positions of its second operand (indices) along Axis. Positions
// outside the axis are dropped.
type ScatterAddOp struct{ Axis int }

// IotaOp fills the node's shape with each element's coordinate along Axis.
type IotaOp struct{ Axis int }

// Kind implements Op.
func (*ReshapeOp) Kind() string { return "reshape" }

// Kind implements Op.
func (*TransposeOp) Kind() string { return "transpose" }

// Kind implements Op.
func (*SliceOp) Kind() string { return "slice" }

// Kind implements Op.
func (*ConcatOp) Kind() string { return "concat" }

// Kind implements Op.
func (*PadOp) Kind() string { return "pad" }

// Kind implements Op.
func (*BroadcastOp) Kind() string { return "broadcast" }

// Kind implements Op.
func (*GatherOp) Kind() string { return "gather" }

// Kind implements Op.
func (*ScatterAddOp) Kind() string { return "scatter_add" }

// Kind implements Op.
func (*IotaOp) Kind() string { return "iota" }

// Reshape returns x with a new shape of the same number of elements. One
// dimension may be -1, meaning whatever makes the sizes agree. Reshaping to
// x's own shape returns x.
func (g *Graph) Reshape(x *Tensor, shape Shape) *Tensor {
	if !g.check("reshape", x) {
		return g.invalid()
	}
	s := shape.Clone()
	infer := -1
	known := 1
	for i, d := range s {
		switch {
		case d == -1 && infer < 0:
			infer = i
		case d < 0:
			return g.Errorf("reshape", "bad target shape %v for %s", shape, describe([]*Tensor{x}))
		default:
			var ok bool
			if known, ok = mulInt(known, d); !ok {
				return g.Errorf("reshape", "target shape %v has more elements than an int holds (for %s)", shape, describe([]*Tensor{x}))
			}
		}
	}
	if infer >= 0 {
		if known == 0 || x.Size()%known != 0 {
			return g.Errorf("reshape", "cannot infer -1 in %v from %s", shape, describe([]*Tensor{x}))
		}
		s[infer] = x.Size() / known
	}
	if s.Size() != x.Size() {
		return g.Errorf("reshape", "cannot reshape %s (%d elements) to %v (%d elements)", describe([]*Tensor{x}), x.Size(), s, s.Size())
	}
	if s.Equal(x.shape) {
		return x
	}
	return g.add(&ReshapeOp{}, x.dtype, s, x)
}

// Transpose permutes x's dimensions: output dimension i is x's dimension
// perm[i]. The identity permutation returns x.
func (g *Graph) Transpose(x *Tensor, perm []int) *Tensor {
	if !g.check("transpose", x) {
		return g.invalid()
	}
	if len(perm) != x.Rank() {
		return g.Errorf("transpose", "permutation %v has %d entries for %s", perm, len(perm), describe([]*Tensor{x}))
	}
	seen := make([]bool, len(perm))
	shape := make(Shape, len(perm))
	identity := true
	for i, p := range perm {
		if p < 0 || p >= len(perm) || seen[p] {
			return g.Errorf("transpose", "%v is not a permutation of %d dimensions", perm, len(perm))
		}
		seen[p] = true
		shape[i] = x.shape[p]
		identity = identity && p == i
	}
	if identity {
		return x
	}
	return g.add(&TransposeOp{Perm: append([]int(nil), perm...)}, x.dtype, shape, x)
}

// Slice returns the elements start[d], start[d]+step[d], … below stop[d] of x
// along every dimension d. A nil step means steps of 1.
func (g *Graph) Slice(x *Tensor, start, stop, step []int) *Tensor {
	if !g.check("slice", x) {
		return g.invalid()
	}
	r := x.Rank()
	if step == nil {
		step = make([]int, r)
		for i := range step {
			step[i] = 1
		}
	}
	if len(start) != r || len(stop) != r || len(step) != r {
		return g.Errorf("slice", "start %v, stop %v, step %v do not match %s", start, stop, step, describe([]*Tensor{x}))
	}
	shape := make(Shape, r)
	for d := range r {
		if step[d] <= 0 || start[d] < 0 || start[d] > stop[d] || stop[d] > x.shape[d] {
			return g.Errorf("slice", "dimension %d: start %d, stop %d, step %d out of range for %s", d, start[d], stop[d], step[d], describe([]*Tensor{x}))
		}
		shape[d] = (stop[d] - start[d] + step[d] - 1) / step[d]
	}
	op := &SliceOp{Start: append([]int(nil), start...), Stop: append([]int(nil), stop...), Step: append([]int(nil), step...)}
	return g.add(op, x.dtype, shape, x)
}

// Concat joins xs along axis (negative counts from the end).
func (g *Graph) Concat(axis int, xs ...*Tensor) *Tensor {
	if !g.check("concat", xs...) {
		return g.invalid()
	}
	if len(xs) == 0 {
		return g.Errorf("concat", "no operands")
	}
	r := xs[0].Rank()
	if axis < 0 {
		axis += r
	}
	if axis < 0 || axis >= r {
		return g.Errorf("concat", "axis out of range for %s", describe(xs))
	}
	shape := xs[0].shape.Clone()
	for _, x := range xs[1:] {
		if x.Rank() != r || x.dtype != xs[0].dtype {
			return g.Errorf("concat", "operands disagree in rank or dtype: %s", describe(xs))
		}
		for d := range r {
			if d != axis && x.shape[d] != shape[d] {
				return g.Errorf("concat", "operands disagree outside axis %d: %s", axis, describe(xs))
			}
		}
		var ok bool
		if shape[axis], ok = addInt(shape[axis], x.shape[axis]); !ok {
			return g.Errorf("concat", "the sizes along axis %d overflow: %s", axis, describe(xs))
		}
	}
	if len(xs) == 1 {
		return xs[0]
	}
	return g.add(&ConcatOp{Axis: axis}, xs[0].dtype, shape, xs...)
}

// Pad surrounds x with lo[d] elements before and hi[d] after along each
// dimension d, all equal to value.
func (g *Graph) Pad(x *Tensor, lo, hi []int, value float64) *Tensor {
	if !g.check("pad", x) {
		return g.invalid()
	}
	if len(lo) != x.Rank() || len(hi) != x.Rank() {
		return g.Errorf("pad", "lo %v and hi %v do not match %s", lo, hi, describe([]*Tensor{x}))
	}
	shape := x.shape.Clone()
	for d := range shape {
		if lo[d] < 0 || hi[d] < 0 {
			return g.Errorf("pad", "negative padding lo %v, hi %v", lo, hi)
		}
		n, ok := addInt(shape[d], lo[d])
		if ok {
			n, ok = addInt(n, hi[d])
		}
		if !ok {
			return g.Errorf("pad", "padding lo %v, hi %v of %s overflows", lo, hi, describe([]*Tensor{x}))
		}
		shape[d] = n
	}
	op := &PadOp{Lo: append([]int(nil), lo...), Hi: append([]int(nil), hi...), Value: RoundTo(x.dtype, value)}
	return g.add(op, x.dtype, shape, x)
}

// BroadcastTo repeats x NumPy-style to shape. It returns x when x already has
// that shape.
func (g *Graph) BroadcastTo(x *Tensor, shape Shape) *Tensor {
	if !g.check("broadcast", x) || !g.checkShape("broadcast", shape) {
		return g.invalid()
	}
	if x.shape.Equal(shape) {
		return x
	}
	if b, ok := BroadcastShapes(x.shape, shape); !ok || !b.Equal(shape) {
		return g.Errorf("broadcast", "cannot broadcast %s to %v", describe([]*Tensor{x}), shape)
	}
	return g.add(&BroadcastOp{}, x.dtype, shape, x)
}

// Gather picks slices of data along axis at the positions in indices, which
// must have an integer dtype. The result has shape
// data[:axis] + indices + data[axis+1:].
func (g *Graph) Gather(data, indices *Tensor, axis int) *Tensor {
	if !g.check("gather", data, indices) {
		return g.invalid()
	}
	if axis < 0 {
		axis += data.Rank()
	}
	if axis < 0 || axis >= data.Rank() {
		return g.Errorf("gather", "axis out of range for data %s", describe([]*Tensor{data}))
	}
	if !indices.dtype.IsInt() {
		return g.Errorf("gather", "indices must be i32 or i64, got %s", describe([]*Tensor{indices}))
	}
	shape := append(append(data.shape[:axis:axis], indices.shape...), data.shape[axis+1:]...)
	return g.add(&GatherOp{Axis: axis}, data.dtype, shape, data, indices)
}

// ScatterAdd adds the slices of updates into a zero tensor of shape at the
// positions in indices along axis. updates must have the shape a Gather from
// that tensor with these indices would have.
func (g *Graph) ScatterAdd(updates, indices *Tensor, axis int, shape Shape) *Tensor {
	if !g.check("scatter_add", updates, indices) || !g.checkShape("scatter_add", shape) {
		return g.invalid()
	}
	if axis < 0 {
		axis += len(shape)
	}
	if axis < 0 || axis >= len(shape) {
		return g.Errorf("scatter_add", "axis out of range for shape %v", shape)
	}
	if !indices.dtype.IsInt() {
		return g.Errorf("scatter_add", "indices must be i32 or i64, got %s", describe([]*Tensor{indices}))
	}
	want := append(append(shape[:axis:axis], indices.shape...), shape[axis+1:]...)
	if !want.Equal(updates.shape) {
		return g.Errorf("scatter_add", "updates %s do not fit indices %s into shape %v along axis %d (want %v)",
			describe([]*Tensor{updates}), describe([]*Tensor{indices}), shape, axis, want)
	}
	if updates.dtype == Bool {
		return g.Errorf("scatter_add", "cannot add bool updates")
	}
	return g.add(&ScatterAddOp{Axis: axis}, updates.dtype, shape, updates, indices)
}

// Iota returns a tensor of shape whose elements are their coordinate along
// axis.
func (g *Graph) Iota(dt DType, shape Shape, axis int) *Tensor {
	if !g.check("iota") || !g.checkStorage("iota", dt, shape) {
		return g.invalid()
	}
	if axis < 0 {
		axis += len(shape)
	}
	if axis < 0 || axis >= len(shape) || !dt.Valid() || dt == Bool {
		return g.Errorf("iota", "bad axis %d or dtype %v for shape %v", axis, dt, shape)
	}
	return g.add(&IotaOp{Axis: axis}, dt, shape)
}

// OneHot returns indices encoded as one-hot vectors of length depth along a
// new last axis, with dtype dt. Positions outside [0, depth) encode as all
// zeros.
func (g *Graph) OneHot(indices *Tensor, depth int, dt DType) *Tensor {
	if !g.check("one_hot", indices) {
		return g.invalid()
	}
	if !indices.dtype.IsInt() || depth <= 0 {
		return g.Errorf("one_hot", "needs integer indices and a positive depth, got %s and depth %d", describe([]*Tensor{indices}), depth)
	}
	shape := append(indices.shape.Clone(), depth)
	expanded := g.Reshape(indices, append(indices.shape.Clone(), 1))
	iota := g.Iota(indices.dtype, shape, -1)
	return g.Cast(g.Elementwise(Eq, expanded, iota), dt)
}
