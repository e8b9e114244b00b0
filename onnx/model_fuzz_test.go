package onnx

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/tartanml/tartan/internal/fuzzcheck"
	"github.com/tartanml/tartan/onnx/internal/pb"
	"github.com/tartanml/tartan/tile"
)

// FuzzRead feeds arbitrary bytes to Read and converts what it accepts:
// neither may panic, and one input's allocations stay bounded.
func FuzzRead(f *testing.F) {
	enc := func(opset int64, g *pb.GraphProto) []byte {
		m := &pb.ModelProto{IrVersion: proto.Int64(8), Graph: g,
			OpsetImport: []*pb.OperatorSetIdProto{{Version: proto.Int64(opset)}}}
		data, _ := proto.Marshal(m)
		return data
	}
	f.Add(enc(13, addModel()))
	f.Add(enc(13, &pb.GraphProto{
		Node: []*pb.NodeProto{
			node("Shape", []string{"x"}, []string{"s"}),
			node("ConstantOfShape", []string{"s"}, []string{"c"}),
			node("Reshape", []string{"c", "s"}, []string{"y"}),
		},
		Input:  []*pb.ValueInfoProto{info("x", Float, 2, 3)},
		Output: []*pb.ValueInfoProto{info("y", Float, 2, 3)},
	}))
	f.Add([]byte{})
	{
		dir := nodeTestDir
		if d := os.Getenv(nodeTestEnv); d != "" {
			dir = d
		}
		for _, name := range []string{"test_add", "test_conv_with_strides_padding", "test_reshape_negative_dim",
			"test_slice_neg_steps", "test_softmax_axis_1", "test_gather_0", "test_maxpool_2d_pads",
			"test_resize_upsample_scales_linear", "test_sce_mean_weight_expanded", "test_range_float_type_positive_delta_expanded"} {
			if data, err := os.ReadFile(filepath.Join(dir, name, "model.onnx")); err == nil {
				f.Add(data)
			}
		}
	}
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, data []byte) {
		fuzzcheck.Bounded(t, fuzzcheck.DefaultLimit, func() {
			m, err := Read(bytes.NewReader(data), dir)
			if err != nil {
				return
			}
			shapes := map[string]tile.Shape{}
			for _, in := range m.Inputs {
				var s tile.Shape
				for _, d := range in.Shape {
					s = append(s, int(min(max(d.Value, 1), 64)))
				}
				shapes[in.Name] = s
			}
			m.Graph(Options{Shapes: shapes})
		})
	})
}
