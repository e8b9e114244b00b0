package onnx

import (
	"github.com/tartanml/tartan/onnx/internal/pb"
	"github.com/tartanml/tartan/tile"
)

// Sequences of tensors: a sequence exists only while converting, as the
// list of its elements, so its length and the positions used to read and
// change it must be known then. A sequence graph input is one tile input per
// element (Options.Sequences gives their shapes) and a sequence output one
// tile output per element (Model.ElementName).

func init() {
	register("Optional", func(c *ctx) {
		if c.has(0) {
			c.ignore("type")
			c.outs = []*value{c.ins[0]}
			return
		}
		a := c.attr("type", pb.AttributeProto_TYPE_PROTO)
		if c.failed() {
			return
		}
		if a == nil || a.GetTp() == nil {
			c.fail("an empty optional needs the type attribute")
			return
		}
		tp, isSeq := a.GetTp(), false
		if st := tp.GetSequenceType(); st != nil {
			tp, isSeq = st.GetElemType(), true
		}
		tt := tp.GetTensorType()
		if tt == nil {
			c.fail("optionals of %v are not supported", a.GetTp())
			return
		}
		dt, ok := DataType(tt.GetElemType()).Tile()
		if !ok {
			c.fail("%s tensors are not supported", DataType(tt.GetElemType()))
			return
		}
		for len(c.outs) < 1 {
			c.outs = append(c.outs, nil)
		}
		c.outs[0] = &value{none: true, isSeq: isSeq, dt: dt}
	})
	register("OptionalHasElement", func(c *ctx) {
		has := c.has(0) && !c.ins[0].none
		v, _ := tile.ValueOf(tile.Bool, tile.Shape{}, []float64{map[bool]float64{false: 0, true: 1}[has]})
		c.setKnown(0, v)
	})
	register("OptionalGetElement", func(c *ctx) {
		if !c.has(0) || c.ins[0].none {
			c.fail("the optional is empty")
			return
		}
		c.outs = []*value{c.ins[0]}
	})
	register("SequenceEmpty", func(c *ctx) {
		dt := c.attrDType("dtype", Float)
		if !c.failed() {
			c.setSeq(0, dt, nil)
		}
	})
	register("SequenceConstruct", func(c *ctx) {
		var elems []*value
		for i := range c.nin() {
			c.in(i) // a tensor each
			if c.failed() {
				return
			}
			if c.ins[i].dt != c.ins[0].dt {
				c.fail("element %d is %s, element 0 %s", i, FromTile(c.ins[i].dt), FromTile(c.ins[0].dt))
				return
			}
			elems = append(elems, c.ins[i])
		}
		if len(elems) == 0 {
			c.fail("no elements")
			return
		}
		c.setSeq(0, elems[0].dt, elems)
	})
	register("SequenceLength", func(c *ctx) {
		s := c.sequence(0)
		if c.failed() {
			return
		}
		v, _ := tile.ValueOf(tile.Int64, tile.Shape{}, []float64{float64(len(s.seq))})
		c.setKnown(0, v)
	})
	register("SequenceAt", func(c *ctx) {
		s := c.sequence(0)
		pos := c.position(1, s, false)
		if c.failed() {
			return
		}
		c.outs = []*value{s.seq[pos]}
	})
	register("SequenceInsert", func(c *ctx) {
		s := c.sequence(0)
		c.in(1)
		if c.failed() {
			return
		}
		x := c.ins[1]
		if x.dt != s.dt {
			c.fail("inserting a %s tensor into a sequence of %s", FromTile(x.dt), FromTile(s.dt))
			return
		}
		pos := len(s.seq)
		if c.has(2) {
			pos = c.position(2, s, true)
		}
		if c.failed() {
			return
		}
		elems := append(append(append([]*value{}, s.seq[:pos]...), x), s.seq[pos:]...)
		c.setSeq(0, s.dt, elems)
	})
	register("SequenceErase", func(c *ctx) {
		s := c.sequence(0)
		pos := len(s.seq) - 1
		if c.has(1) {
			pos = c.position(1, s, false)
		} else if pos < 0 {
			c.fail("erasing from an empty sequence")
		}
		if c.failed() {
			return
		}
		elems := append(append([]*value{}, s.seq[:pos]...), s.seq[pos+1:]...)
		c.setSeq(0, s.dt, elems)
	})
	register("ConcatFromSequence", func(c *ctx) {
		s := c.sequence(0)
		a := c.attrInt("axis", 0)
		newAxis := c.attrInt("new_axis", 0) != 0
		if c.failed() {
			return
		}
		if len(s.seq) == 0 {
			c.fail("the sequence is empty")
			return
		}
		var ts []*tile.Tensor
		for _, e := range s.seq {
			ts = append(ts, c.cv.tensor(c.g, e))
		}
		r := ts[0].Rank()
		if newAxis {
			r++
		}
		ax := c.axis(a, r, "axis")
		if c.failed() {
			return
		}
		if newAxis {
			for i, t := range ts {
				sh := t.Shape()
				ts[i] = c.g.Reshape(t, append(append(sh[:ax:ax].Clone(), 1), sh[ax:]...))
			}
		}
		if len(ts) == 1 {
			c.set(0, ts[0])
			return
		}
		c.set(0, c.g.Concat(ax, ts...))
	})
	register("SplitToSequence", func(c *ctx) {
		x := c.in(0)
		a := c.attrInt("axis", 0)
		keep := c.attrInt("keepdims", 1) != 0
		var split []int64
		scalar := false
		if c.has(1) {
			v := c.known(1)
			split = c.knownInts(1)
			scalar = v != nil && v.Shape.Rank() == 0
		}
		if c.failed() {
			return
		}
		ax := c.axis(a, x.Rank(), "axis")
		if c.failed() {
			return
		}
		d := x.Dim(ax)
		var sizes []int
		switch {
		case split == nil:
			for range d {
				sizes = append(sizes, 1)
			}
		case scalar:
			if split[0] <= 0 {
				c.fail("split %d is not positive", split[0])
				return
			}
			for off := 0; off < d; off += int(split[0]) {
				sizes = append(sizes, min(int(split[0]), d-off))
			}
		default:
			total := 0
			for _, s := range split {
				if s < 0 || s > int64(d) {
					c.fail("split %v does not fit dimension %d", split, d)
					return
				}
				sizes = append(sizes, int(s))
				total += int(s)
			}
			if total != d {
				c.fail("split %v does not add up to dimension %d", split, d)
				return
			}
		}
		if len(sizes) > maxUnroll {
			c.fail("a sequence of %d elements is too long", len(sizes))
			return
		}
		var elems []*value
		off := 0
		for _, n := range sizes {
			start, stop := make([]int, x.Rank()), x.Shape()
			start[ax], stop[ax] = off, off+n
			off += n
			t := c.g.Slice(x, start, stop, nil)
			if split == nil && !keep {
				sh := t.Shape()
				t = c.g.Reshape(t, append(sh[:ax:ax].Clone(), sh[ax+1:]...))
			}
			if !t.Valid() {
				return
			}
			elems = append(elems, &value{t: t, dt: t.DType(), sh: t.Shape()})
		}
		c.setSeq(0, x.DType(), elems)
	})
}

// sequence returns input i, which must be a sequence.
func (c *ctx) sequence(i int) *value {
	if !c.has(i) || !c.ins[i].isSeq || c.ins[i].none {
		c.fail("input %d must be a sequence", i)
		return &value{isSeq: true}
	}
	return c.ins[i]
}

// position reads a known position into sequence s (negative counts from
// the end); with end the position after the last element is allowed.
func (c *ctx) position(i int, s *value, end bool) int {
	v := c.knownInts(i)
	if c.failed() {
		return 0
	}
	if len(v) != 1 {
		c.fail("the position must hold one element")
		return 0
	}
	n := int64(len(s.seq))
	p := v[0]
	if p < 0 {
		p += n
	}
	limit := n
	if end {
		limit++
	}
	if p < 0 || p >= limit {
		c.fail("position %d is out of range for a sequence of %d", v[0], n)
		return 0
	}
	return int(p)
}

// setSeq declares output i as a sequence.
func (c *ctx) setSeq(i int, dt tile.DType, elems []*value) {
	for len(c.outs) <= i {
		c.outs = append(c.outs, nil)
	}
	c.outs[i] = &value{isSeq: true, seq: elems, dt: dt}
}
