package onnx

import (
	"bytes"
	"math"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/tartanml/tartan/onnx/internal/pb"
	"github.com/tartanml/tartan/ref"
	"github.com/tartanml/tartan/tile"
)

// runOne converts a model of one node with float inputs x0, x1, … and
// runs it on the reference executor.
func runOne(t *testing.T, opset int64, n *pb.NodeProto, inputs ...*tile.Value) []*tile.Value {
	t.Helper()
	g := &pb.GraphProto{Node: []*pb.NodeProto{n}}
	feeds := map[string]*tile.Value{}
	for i, v := range inputs {
		name := n.Input[i]
		g.Input = append(g.Input, info(name, FromTile(v.DType), int64s(v.Shape)...))
		feeds[name] = v
	}
	for _, o := range n.Output {
		g.Output = append(g.Output, &pb.ValueInfoProto{Name: proto.String(o),
			Type: &pb.TypeProto{Value: &pb.TypeProto_TensorType{TensorType: &pb.TypeProto_Tensor{}}}})
	}
	m, err := Read(bytes.NewReader(encode(t, opset, g)), "")
	if err != nil {
		t.Fatal(err)
	}
	tg, err := m.Graph(Options{})
	if err != nil {
		t.Fatal(err)
	}
	res, err := ref.Run(tg, feeds, nil)
	if err != nil {
		t.Fatal(err)
	}
	var outs []*tile.Value
	for _, o := range n.Output {
		outs = append(outs, res[o])
	}
	return outs
}

func TestDet(t *testing.T) {
	// A zero first pivot (rows swapped: the sign flips), a singular matrix,
	// and a 3 × 3 one, worked by hand: −6, 0 and
	// 0·(4·9 − 5·7) − 1·(3·9 − 5·6) + 2·(3·7 − 4·6) = −3.
	two, _ := tile.ValueOf(tile.Float32, tile.Shape{2, 2, 2}, []float64{0, 2, 3, 4, 1, 2, 2, 4})
	out := runOne(t, 11, node("Det", []string{"x"}, []string{"d"}), two)[0]
	if !out.Shape.Equal(tile.Shape{2}) || math.Abs(out.Data[0]+6) > 1e-6 || math.Abs(out.Data[1]) > 1e-6 {
		t.Errorf("det = %v%v, want [-6 0]", out.Shape, out.Data)
	}
	three, _ := tile.ValueOf(tile.Float64, tile.Shape{3, 3}, []float64{0, 1, 2, 3, 4, 5, 6, 7, 9})
	out = runOne(t, 11, node("Det", []string{"x"}, []string{"d"}), three)[0]
	if !out.Shape.Equal(tile.Shape{}) || math.Abs(out.Data[0]+3) > 1e-12 {
		t.Errorf("det = %v%v, want -3", out.Shape, out.Data)
	}
}

// TestNarrowIntegers checks that 8- and 16-bit integers, held in int32,
// wrap around as their types do: 200 + 100 = 44 in uint8, 100 · 2 = −56 in
// int8, and float 300.7 cast to uint8 is 300 mod 256 = 44.
func TestNarrowIntegers(t *testing.T) {
	cases := []struct {
		op         string
		typ        DataType
		x, y, want []float64
		attrs      []*pb.AttributeProto
	}{
		{"Add", Uint8, []float64{200, 3}, []float64{100, 4}, []float64{44, 7}, nil},
		{"Mul", Int8, []float64{100, -3}, []float64{2, 5}, []float64{-56, -15}, nil},
		{"Sub", Uint16, []float64{1, 7}, []float64{2, 5}, []float64{65535, 2}, nil},
	}
	for _, tc := range cases {
		g := &pb.GraphProto{
			Node:   []*pb.NodeProto{node(tc.op, []string{"x", "y"}, []string{"z"}, tc.attrs...)},
			Input:  []*pb.ValueInfoProto{info("x", tc.typ, 2), info("y", tc.typ, 2)},
			Output: []*pb.ValueInfoProto{info("z", tc.typ, 2)},
		}
		m, err := Read(bytes.NewReader(encode(t, 14, g)), "")
		if err != nil {
			t.Fatal(err)
		}
		tg, err := m.Graph(Options{})
		if err != nil {
			t.Fatal(err)
		}
		x, _ := tile.ValueOf(tile.Int32, tile.Shape{2}, tc.x)
		y, _ := tile.ValueOf(tile.Int32, tile.Shape{2}, tc.y)
		out, err := ref.Run(tg, map[string]*tile.Value{"x": x, "y": y}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if got := out["z"]; got.DType != tile.Int32 || !equal(got.Data, tc.want) {
			t.Errorf("%s %s: %v %v = %v%v, want i32%v", tc.op, tc.typ, tc.x, tc.y, got.DType, got.Data, tc.want)
		}
	}
	to := &pb.AttributeProto{Name: proto.String("to"), Type: pb.AttributeProto_INT.Enum(), I: proto.Int64(int64(Uint8))}
	x, _ := tile.ValueOf(tile.Float32, tile.Shape{3}, []float64{300.7, -1, 12.9})
	out := runOne(t, 13, node("Cast", []string{"x"}, []string{"z"}, to), x)[0]
	if !equal(out.Data, []float64{44, 255, 12}) {
		t.Errorf("Cast to uint8 of [300.7 -1 12.9] = %v, want [44 255 12]", out.Data)
	}
}

// TestUint32Products checks that uint32 products, which int64 arithmetic
// in float64 could not keep exact, are refused rather than approximated.
func TestUint32Products(t *testing.T) {
	g := &pb.GraphProto{
		Node:   []*pb.NodeProto{node("Mul", []string{"x", "y"}, []string{"z"})},
		Input:  []*pb.ValueInfoProto{info("x", Uint32, 2), info("y", Uint32, 2)},
		Output: []*pb.ValueInfoProto{info("z", Uint32, 2)},
	}
	m, err := Read(bytes.NewReader(encode(t, 14, g)), "")
	if err != nil {
		t.Fatal(err)
	}
	_, err = m.Graph(Options{})
	wantErr(t, err, "node 0 (Mul) at opset 14", "uint32 results are supported only for ops whose int64 results stay exact (not Mul)")
}

// TestGroupedConv checks Conv with group 2 and a depthwise group (one
// input channel a group, two outputs each) against direct loops, and that
// the graph does not grow with the number of groups (each group was once a
// sliced convolution, all of them concatenated: a select chain a thousand
// deep for MobileNetV2, more than an OpenCL compiler's bracket nesting).
func TestGroupedConv(t *testing.T) {
	const n, h, w, k = 2, 5, 4, 3
	for _, c := range []struct{ ch, m, groups int }{{4, 6, 2}, {6, 12, 6}, {64, 64, 64}} {
		cg, mg := c.ch/c.groups, c.m/c.groups
		x := tile.NewValue(tile.Float32, tile.Shape{n, c.ch, h, w})
		for i := range x.Data {
			x.Data[i] = float64(float32(math.Sin(float64(i) * 0.37)))
		}
		wt := tile.NewValue(tile.Float32, tile.Shape{c.m, cg, k, k})
		for i := range wt.Data {
			wt.Data[i] = float64(float32(math.Cos(float64(i) * 0.11)))
		}
		nd := node("Conv", []string{"x", "w"}, []string{"y"}, intsAttr("pads", 1, 1, 1, 1))
		nd.Attribute = append(nd.Attribute, &pb.AttributeProto{Name: proto.String("group"), Type: pb.AttributeProto_INT.Enum(), I: proto.Int64(int64(c.groups))})
		y := runOne(t, 13, nd, x, wt)[0]
		if !y.Shape.Equal(tile.Shape{n, c.m, h, w}) {
			t.Fatalf("groups %d: shape %v", c.groups, y.Shape)
		}
		for b := range n {
			for m := range c.m {
				gi := m / mg
				for i := range h {
					for j := range w {
						want := 0.0
						for ci := range cg {
							for a := range k {
								for e := range k {
									yi, xj := i+a-1, j+e-1
									if yi < 0 || yi >= h || xj < 0 || xj >= w {
										continue
									}
									want += x.Data[((b*c.ch+gi*cg+ci)*h+yi)*w+xj] * wt.Data[((m*cg+ci)*k+a)*k+e]
								}
							}
						}
						got := y.Data[((b*c.m+m)*h+i)*w+j]
						if math.Abs(got-want) > 1e-5*(1+math.Abs(want)) {
							t.Fatalf("groups %d: y[%d,%d,%d,%d] = %g, want %g", c.groups, b, m, i, j, got, want)
						}
					}
				}
			}
		}
		// The converted graph: inputs, one contraction, a reshape.
		g := &pb.GraphProto{Node: []*pb.NodeProto{nd},
			Input:  []*pb.ValueInfoProto{info("x", Float, int64s(x.Shape)...), info("w", Float, int64s(wt.Shape)...)},
			Output: []*pb.ValueInfoProto{info("y", Float)}}
		m, err := Read(bytes.NewReader(encode(t, 13, g)), "")
		if err != nil {
			t.Fatal(err)
		}
		tg, err := m.Graph(Options{})
		if err != nil {
			t.Fatal(err)
		}
		if nodes := len(tg.Nodes()); nodes > 6 {
			t.Errorf("groups %d: %d graph nodes", c.groups, nodes)
		}
	}
}
