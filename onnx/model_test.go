package onnx

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/tartanml/tartan/onnx/internal/pb"
	"github.com/tartanml/tartan/ref"
	"github.com/tartanml/tartan/tile"
)

// Helpers that build small models.

func info(name string, dt DataType, dims ...int64) *pb.ValueInfoProto {
	shape := &pb.TensorShapeProto{}
	for _, d := range dims {
		if d < 0 {
			shape.Dim = append(shape.Dim, &pb.TensorShapeProto_Dimension{Value: &pb.TensorShapeProto_Dimension_DimParam{DimParam: "batch"}})
			continue
		}
		shape.Dim = append(shape.Dim, &pb.TensorShapeProto_Dimension{Value: &pb.TensorShapeProto_Dimension_DimValue{DimValue: d}})
	}
	return &pb.ValueInfoProto{Name: proto.String(name), Type: &pb.TypeProto{Value: &pb.TypeProto_TensorType{
		TensorType: &pb.TypeProto_Tensor{ElemType: proto.Int32(int32(dt)), Shape: shape}}}}
}

func node(op string, ins, outs []string, attrs ...*pb.AttributeProto) *pb.NodeProto {
	return &pb.NodeProto{OpType: proto.String(op), Input: ins, Output: outs, Attribute: attrs}
}

func intsAttr(name string, v ...int64) *pb.AttributeProto {
	return &pb.AttributeProto{Name: proto.String(name), Type: pb.AttributeProto_INTS.Enum(), Ints: v}
}

func floatTensor(name string, dims []int64, v ...float32) *pb.TensorProto {
	return &pb.TensorProto{Name: proto.String(name), DataType: proto.Int32(int32(Float)), Dims: dims, FloatData: v}
}

func encode(t *testing.T, opset int64, g *pb.GraphProto) []byte {
	t.Helper()
	m := &pb.ModelProto{IrVersion: proto.Int64(8), Graph: g,
		OpsetImport: []*pb.OperatorSetIdProto{{Domain: proto.String(""), Version: proto.Int64(opset)}}}
	data, err := proto.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// addModel computes y = x + b with b an initializer of three elements.
func addModel() *pb.GraphProto {
	return &pb.GraphProto{
		Name:        proto.String("add"),
		Node:        []*pb.NodeProto{node("Add", []string{"x", "b"}, []string{"y"})},
		Initializer: []*pb.TensorProto{floatTensor("b", []int64{3}, 10, 20, 30)},
		Input:       []*pb.ValueInfoProto{info("x", Float, -1, 3)},
		Output:      []*pb.ValueInfoProto{info("y", Float, -1, 3)},
	}
}

func wantErr(t *testing.T, err error, parts ...string) {
	t.Helper()
	if err == nil {
		t.Fatalf("no error; want one mentioning %q", parts)
	}
	for _, p := range parts {
		if !strings.Contains(err.Error(), p) {
			t.Fatalf("error %q does not mention %q", err, p)
		}
	}
}

func TestReadAndConvert(t *testing.T) {
	m, err := Read(bytes.NewReader(encode(t, 13, addModel())), "")
	if err != nil {
		t.Fatal(err)
	}
	if m.IRVersion != 8 || m.Opsets[""] != 13 {
		t.Errorf("IR version %d, opsets %v", m.IRVersion, m.Opsets)
	}
	if len(m.Inputs) != 1 || m.Inputs[0].Name != "x" || m.Inputs[0].Type != Float ||
		len(m.Inputs[0].Shape) != 2 || m.Inputs[0].Shape[0].Param != "batch" || m.Inputs[0].Shape[1].Value != 3 {
		t.Errorf("inputs %+v", m.Inputs)
	}
	if len(m.Initializers) != 1 || m.Initializers[0].Name != "b" {
		t.Errorf("initializers %+v", m.Initializers)
	}
	_, err = m.Graph(Options{})
	wantErr(t, err, `graph input "x"`, "dimension 0 (batch) is not fixed")
	_, err = m.Graph(Options{Shapes: map[string]tile.Shape{"x": {2, 4}}})
	wantErr(t, err, `graph input "x"`, "fixes dimension 1 at 3")
	two := addModel()
	two.Input = append(two.Input, info("x2", Float, -1, 3))
	two.Node[0].Input[1] = "x2"
	m2, err := Read(bytes.NewReader(encode(t, 13, two)), "")
	if err != nil {
		t.Fatal(err)
	}
	_, err = m2.Graph(Options{Shapes: map[string]tile.Shape{"x": {2, 3}, "x2": {5, 3}}})
	wantErr(t, err, `graph input "x2": dimension 0 (batch) is 5, but 2 for graph input "x"`)

	g, err := m.Graph(Options{Shapes: map[string]tile.Shape{"x": {2, 3}}})
	if err != nil {
		t.Fatal(err)
	}
	x, _ := tile.ValueOf(tile.Float32, tile.Shape{2, 3}, []float64{1, 2, 3, 4, 5, 6})
	out, err := ref.Run(g, map[string]*tile.Value{"x": x}, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := []float64{11, 22, 33, 14, 25, 36}
	if got := out["y"]; got == nil || !got.Shape.Equal(tile.Shape{2, 3}) || !equal(got.Data, want) {
		t.Fatalf("y = %v, want %v", got, want)
	}

	// The initializer as a variable.
	g, err = m.Graph(Options{Shapes: map[string]tile.Shape{"x": {2, 3}}, Variables: []string{"b"}})
	if err != nil {
		t.Fatal(err)
	}
	if v := g.Leaf("b"); v == nil || v.Op().Kind() != "variable" {
		t.Fatalf("b is %v, want a variable", v)
	}
	b, _ := tile.ValueOf(tile.Float32, tile.Shape{3}, []float64{1, 1, 1})
	out, err = ref.Run(g, map[string]*tile.Value{"x": x}, map[string]*tile.Value{"b": b})
	if err != nil {
		t.Fatal(err)
	}
	if got := out["y"].Data; !equal(got, []float64{2, 3, 4, 5, 6, 7}) {
		t.Fatalf("y with b = 1: %v", got)
	}
	_, err = m.Graph(Options{Shapes: map[string]tile.Shape{"x": {2, 3}}, Variables: []string{"w"}})
	wantErr(t, err, "Options.Variables names w")
	g, err = m.Graph(Options{Shapes: map[string]tile.Shape{"x": {2, 3}}, AllVariables: true})
	if err != nil {
		t.Fatal(err)
	}
	if vs := g.Variables(); len(vs) != 1 || vs[0].Op().(*tile.VariableOp).Name != "b" {
		t.Fatalf("variables %v, want b", vs)
	}
	if init := m.Initializer("b"); init == nil || !equal(init.Data, []float64{10, 20, 30}) {
		t.Fatalf("Initializer(b) = %v", init)
	}
}

func equal(a, b []float64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestFolding checks that a shape computation (Shape → Gather → Concat →
// Reshape) is computed when converting, and that Reshape's shape taken from
// a graph input needs that input's value.
func TestFolding(t *testing.T) {
	g := &pb.GraphProto{
		Node: []*pb.NodeProto{
			node("Shape", []string{"x"}, []string{"s"}),
			node("Gather", []string{"s", "zero"}, []string{"n"}),
			node("Concat", []string{"n", "minus1"}, []string{"shape"}, &pb.AttributeProto{Name: proto.String("axis"), Type: pb.AttributeProto_INT.Enum(), I: proto.Int64(0)}),
			node("Reshape", []string{"x", "shape"}, []string{"y"}),
			node("Reshape", []string{"x", "dyn"}, []string{"z"}),
		},
		Initializer: []*pb.TensorProto{
			{Name: proto.String("zero"), DataType: proto.Int32(int32(Int64)), Dims: []int64{1}, Int64Data: []int64{0}},
			{Name: proto.String("minus1"), DataType: proto.Int32(int32(Int64)), Dims: []int64{1}, Int64Data: []int64{-1}},
		},
		Input:  []*pb.ValueInfoProto{info("x", Float, 2, 3, 4), info("dyn", Int64, 2)},
		Output: []*pb.ValueInfoProto{info("y", Float), info("z", Float)},
	}
	m, err := Read(bytes.NewReader(encode(t, 13, g)), "")
	if err != nil {
		t.Fatal(err)
	}
	_, err = m.Graph(Options{})
	var need *ValueNeededError
	if !errors.As(err, &need) || need.Input != 1 || len(need.Inputs) != 1 || need.Inputs[0] != "dyn" {
		t.Fatalf("err = %v, want a ValueNeededError for input dyn", err)
	}
	wantErr(t, err, "node 4 (Reshape)", "dyn")
	dyn, _ := tile.ValueOf(tile.Int64, tile.Shape{2}, []float64{4, 6})
	tg, err := m.Graph(Options{Values: map[string]*tile.Value{"dyn": dyn}})
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range tg.Outputs() {
		want := map[string]tile.Shape{"y": {2, 12}, "z": {4, 6}}[o.Name]
		if !o.Tensor.Shape().Equal(want) {
			t.Errorf("output %s has shape %v, want %v", o.Name, o.Tensor.Shape(), want)
		}
	}
	// Nothing of the shape computation is left in the graph.
	for _, n := range tg.Nodes() {
		switch n.Op().(type) {
		case *tile.InputOp, *tile.ReshapeOp:
		default:
			t.Errorf("node %v is left in the graph", n)
		}
	}
}

func TestHostileModels(t *testing.T) {
	base := func() *pb.GraphProto { return addModel() }
	cases := []struct {
		name  string
		edit  func(g *pb.GraphProto)
		parts []string
	}{
		{"cycle", func(g *pb.GraphProto) {
			g.Node = []*pb.NodeProto{
				node("Relu", []string{"b2"}, []string{"a2"}),
				node("Relu", []string{"a2"}, []string{"b2"}),
				node("Add", []string{"x", "b"}, []string{"y"}),
			}
		}, []string{"node 0 (Relu)", "cycle"}},
		{"unproduced input", func(g *pb.GraphProto) {
			g.Node[0].Input[1] = "nowhere"
			g.Node[0].Name = proto.String("adder")
		}, []string{`node 0 "adder" (Add)`, `input "nowhere" is produced by no node`}},
		{"duplicate output", func(g *pb.GraphProto) {
			g.Node = append(g.Node, node("Relu", []string{"x"}, []string{"y"}))
		}, []string{"node 1 (Relu)", `output "y" is also an output of node 0 (Add)`}},
		{"output shadows an initializer", func(g *pb.GraphProto) {
			g.Node = append(g.Node, node("Relu", []string{"x"}, []string{"b"}))
		}, []string{"node 1 (Relu)", `output "b" is already initializer 0`}},
		{"raw data too short", func(g *pb.GraphProto) {
			g.Initializer[0] = &pb.TensorProto{Name: proto.String("b"), DataType: proto.Int32(int32(Float)), Dims: []int64{3}, RawData: make([]byte, 8)}
		}, []string{`tensor "b"`, "raw_data holds 8 bytes, the dims need 12"}},
		{"dims overflow", func(g *pb.GraphProto) {
			g.Initializer[0] = &pb.TensorProto{Name: proto.String("b"), DataType: proto.Int32(int32(Float)), Dims: []int64{1 << 40, 1 << 40}, RawData: make([]byte, 8)}
		}, []string{`tensor "b"`, "hold more than"}},
		{"negative dim", func(g *pb.GraphProto) {
			g.Initializer[0].Dims = []int64{-3}
		}, []string{`tensor "b"`, "negative"}},
		{"float_data count", func(g *pb.GraphProto) {
			g.Initializer[0].FloatData = g.Initializer[0].FloatData[:2]
		}, []string{`tensor "b"`, "float_data holds 2 elements, the dims need 3"}},
		{"missing graph output", func(g *pb.GraphProto) {
			g.Output[0].Name = proto.String("q")
		}, []string{`graph output 0: "q" is produced by no node`}},
		{"sequence input", func(g *pb.GraphProto) {
			g.Input[0].Type = &pb.TypeProto{Value: &pb.TypeProto_SequenceType{SequenceType: &pb.TypeProto_Sequence{}}}
		}, []string{`graph input 0: "x" is a sequence`}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			g := base()
			c.edit(g)
			_, err := Read(bytes.NewReader(encode(t, 13, g)), "")
			wantErr(t, err, c.parts...)
		})
	}
	t.Run("not protobuf", func(t *testing.T) {
		_, err := Read(strings.NewReader("\xff\xff\xff"), "")
		wantErr(t, err, "decoding the model")
	})
	t.Run("too large", func(t *testing.T) {
		old := readLimit
		readLimit = 16
		defer func() { readLimit = old }()
		_, err := Read(bytes.NewReader(encode(t, 13, base())), "")
		wantErr(t, err, "larger than 16 bytes")
	})
}

func TestUnsupported(t *testing.T) {
	g := addModel()
	g.Node = append(g.Node, node("Frobnicate", []string{"y"}, []string{"z"}))
	g.Node[1].Name = proto.String("frob")
	g.Output[0].Name = proto.String("z")
	m, err := Read(bytes.NewReader(encode(t, 13, g)), "")
	if err != nil {
		t.Fatal(err)
	}
	_, err = m.Graph(Options{Shapes: map[string]tile.Shape{"x": {1, 3}}})
	wantErr(t, err, `node 1 "frob" (Frobnicate)`, "unsupported op Frobnicate (opset 13)")

	g = addModel()
	g.Node = append(g.Node, node("Relu", []string{"y"}, []string{"z"}, intsAttr("bogus", 1)))
	g.Output[0].Name = proto.String("z")
	m, err = Read(bytes.NewReader(encode(t, 13, g)), "")
	if err != nil {
		t.Fatal(err)
	}
	_, err = m.Graph(Options{Shapes: map[string]tile.Shape{"x": {1, 3}}})
	wantErr(t, err, "node 1 (Relu) at opset 13", `attribute "bogus" is not supported`)

	g = addModel()
	g.Node = append(g.Node, node("Pad", []string{"y", "pads"}, []string{"z"}, &pb.AttributeProto{Name: proto.String("mode"), Type: pb.AttributeProto_STRING.Enum(), S: []byte("wrap")}))
	g.Initializer = append(g.Initializer, &pb.TensorProto{Name: proto.String("pads"), DataType: proto.Int32(int32(Int64)), Dims: []int64{4}, Int64Data: []int64{0, 1, 0, 1}})
	g.Output[0].Name = proto.String("z")
	m, err = Read(bytes.NewReader(encode(t, 13, g)), "")
	if err != nil {
		t.Fatal(err)
	}
	_, err = m.Graph(Options{Shapes: map[string]tile.Shape{"x": {1, 3}}})
	wantErr(t, err, "node 1 (Pad) at opset 13", `mode "wrap" is not supported`)

	g = addModel()
	g.Input[0] = info("x", Uint64, 1, 3)
	m, err = Read(bytes.NewReader(encode(t, 13, g)), "")
	if err != nil {
		t.Fatal(err)
	}
	_, err = m.Graph(Options{})
	wantErr(t, err, `graph input "x"`, "uint64 tensors are not supported")
}

// externalModel writes a model whose initializer b lives in the file named
// by location, relative to dir, and returns the model's path.
func externalModel(t *testing.T, dir, location string, offset int) string {
	g := addModel()
	g.Initializer[0] = &pb.TensorProto{Name: proto.String("b"), DataType: proto.Int32(int32(Float)), Dims: []int64{3},
		DataLocation: pb.TensorProto_EXTERNAL.Enum(), ExternalData: []*pb.StringStringEntryProto{
			{Key: proto.String("location"), Value: proto.String(location)},
			{Key: proto.String("offset"), Value: proto.String(strconv.Itoa(offset))},
			{Key: proto.String("length"), Value: proto.String("12")},
		}}
	path := filepath.Join(dir, "model.onnx")
	if err := os.WriteFile(path, encode(t, 13, g), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestExternalData(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "model")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	var raw []byte
	raw = append(raw, 0, 0, 0, 0) // offset 4
	for _, f := range []float32{1.5, -2, 4} {
		raw = binary.LittleEndian.AppendUint32(raw, math.Float32bits(f))
	}
	if err := os.WriteFile(filepath.Join(dir, "weights.bin"), raw, 0o644); err != nil {
		t.Fatal(err)
	}
	m, err := Load(externalModel(t, dir, "weights.bin", 4))
	if err != nil {
		t.Fatal(err)
	}
	if got := m.Initializers[0].Data; !equal(got, []float64{1.5, -2, 4}) {
		t.Fatalf("b = %v", got)
	}
	_, err = Load(externalModel(t, dir, "weights.bin", 8))
	wantErr(t, err, `tensor "b"`, "past the file's end")

	outside := filepath.Join(root, "secret.bin")
	if err := os.WriteFile(outside, raw, 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = Load(externalModel(t, dir, "../secret.bin", 4))
	wantErr(t, err, `external data "../secret.bin"`, "leaves the model's directory")
	_, err = Load(externalModel(t, dir, outside, 4))
	wantErr(t, err, "an absolute location is not allowed")
	if err := os.Symlink(outside, filepath.Join(dir, "link.bin")); err != nil {
		t.Skipf("no symbolic links: %v", err)
	}
	_, err = Load(externalModel(t, dir, "link.bin", 4))
	wantErr(t, err, `external data "link.bin"`, "outside the model's directory")

	// Read without a directory refuses external data.
	data, _ := os.ReadFile(externalModel(t, dir, "weights.bin", 4))
	_, err = Read(bytes.NewReader(data), "")
	wantErr(t, err, "not read from a directory")
}

// TestTileNames checks the tile names of ONNX names that are no tile
// identifiers, and that the converted graph uses them.
func TestTileNames(t *testing.T) {
	g := &pb.GraphProto{
		Node: []*pb.NodeProto{
			node("Add", []string{"0", "_0"}, []string{"sum:1 x"}),
			node("Neg", []string{"sum:1 x"}, []string{"1"}),
		},
		Input:  []*pb.ValueInfoProto{info("0", Float, 2), info("_0", Float, 2)},
		Output: []*pb.ValueInfoProto{info("sum:1 x", Float, 2), info("1", Float, 2)},
	}
	m, err := Read(bytes.NewReader(encode(t, 13, g)), "")
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]string{"0": "_0_2", "_0": "_0", "sum:1 x": "sum:1_x", "1": "_1", "other": "other"} {
		if got := m.TileName(name); got != want {
			t.Errorf("TileName(%q) = %q, want %q", name, got, want)
		}
	}
	tg, err := m.Graph(Options{})
	if err != nil {
		t.Fatal(err)
	}
	a, _ := tile.ValueOf(tile.Float32, tile.Shape{2}, []float64{1, 2})
	b, _ := tile.ValueOf(tile.Float32, tile.Shape{2}, []float64{10, 20})
	out, err := ref.Run(tg, map[string]*tile.Value{"_0_2": a, "_0": b}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := out["_1"]; got == nil || !equal(got.Data, []float64{-11, -22}) {
		t.Fatalf("output _1 = %v, want [-11 -22]", got)
	}
}
