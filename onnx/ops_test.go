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
