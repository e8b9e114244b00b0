package onnx

import (
	"fmt"

	"github.com/tartanml/tartan/onnx/internal/pb"
	"github.com/tartanml/tartan/tile"
)

// attr returns the named attribute if it is present with the given type,
// recording an error when it has another type.
func (c *ctx) attr(name string, typ pb.AttributeProto_AttributeType) *pb.AttributeProto {
	c.used[name] = true
	a := c.attrs[name]
	if a == nil {
		return nil
	}
	if a.GetType() != typ {
		// Old files may leave the type out; accept the field that is set.
		if a.GetType() != pb.AttributeProto_UNDEFINED {
			c.fail("attribute %q is %s, %s expected", name, a.GetType(), typ)
			return nil
		}
	}
	return a
}

// hasAttr reports whether the named attribute is present.
func (c *ctx) hasAttr(name string) bool {
	_, ok := c.attrs[name]
	return ok
}

// ignore marks attributes that do not change what an inference graph
// computes (such as a random seed for an op that is the identity here).
func (c *ctx) ignore(names ...string) {
	for _, n := range names {
		c.used[n] = true
	}
}

func (c *ctx) attrInt(name string, def int64) int64 {
	if a := c.attr(name, pb.AttributeProto_INT); a != nil {
		return a.GetI()
	}
	return def
}

func (c *ctx) attrFloat(name string, def float64) float64 {
	if a := c.attr(name, pb.AttributeProto_FLOAT); a != nil {
		return float64(a.GetF())
	}
	return def
}

func (c *ctx) attrString(name, def string) string {
	if a := c.attr(name, pb.AttributeProto_STRING); a != nil {
		return string(a.GetS())
	}
	return def
}

// attrInts returns the named list of ints, nil when absent.
func (c *ctx) attrInts(name string) []int64 {
	if a := c.attr(name, pb.AttributeProto_INTS); a != nil {
		return append([]int64{}, a.GetInts()...)
	}
	return nil
}

// attrFloats returns the named list of floats, nil when absent.
func (c *ctx) attrFloats(name string) []float64 {
	if a := c.attr(name, pb.AttributeProto_FLOATS); a != nil {
		r := make([]float64, 0, len(a.GetFloats()))
		for _, f := range a.GetFloats() {
			r = append(r, float64(f))
		}
		return r
	}
	return nil
}

// attrTensor returns the named tensor attribute decoded as a tile value.
func (c *ctx) attrTensor(name string) *tile.Value {
	v, _ := c.attrTensorType(name)
	return v
}

// attrTensorType returns the named tensor attribute decoded as a tile value
// and its ONNX type.
func (c *ctx) attrTensorType(name string) (*tile.Value, DataType) {
	a := c.attr(name, pb.AttributeProto_TENSOR)
	if a == nil || a.GetT() == nil {
		return nil, Undefined
	}
	v, err := c.decodeAttrTensor(name, a)
	if err != nil {
		c.fail("%v", err)
		return nil, Undefined
	}
	return v, DataType(a.GetT().GetDataType())
}

func (c *ctx) decodeAttrTensor(name string, a *pb.AttributeProto) (*tile.Value, error) {
	t, err := decodeTensor(a.GetT(), "")
	if err != nil {
		return nil, fmt.Errorf("attribute %q: %v", name, err)
	}
	v, err := t.Value()
	if err != nil {
		return nil, fmt.Errorf("attribute %q: %v", name, err)
	}
	return v, nil
}

// attrType returns the named attribute as an element type and the tile
// dtype that holds it (int32 for 8- and 16-bit integers: the op must then
// declare its output's type with setType).
func (c *ctx) attrType(name string, def DataType) (DataType, tile.DType) {
	d := DataType(c.attrInt(name, int64(def)))
	dt, ok := d.Storage()
	if !ok {
		c.fail("attribute %s=%s: %s tensors are not supported", name, d, d)
		return Undefined, tile.Invalid
	}
	return d, dt
}

// attrDType returns the named attribute as an element type that tile holds.
func (c *ctx) attrDType(name string, def DataType) tile.DType {
	d := DataType(c.attrInt(name, int64(def)))
	dt, ok := d.Tile()
	if !ok {
		c.fail("attribute %s=%s: %s tensors are not supported", name, d, d)
		return tile.Invalid
	}
	return dt
}
