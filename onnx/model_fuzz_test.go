package onnx

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
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
			if _, err := m.Graph(Options{Shapes: shapes}); err != nil && strings.Contains(err.Error(), "internal error: panic") {
				t.Fatal(err)
			}
		})
	})
}

// FuzzNode converts one-node models built from the fuzzer's bytes: an op
// of the registry, known or unknown inputs of small shapes and dtypes, and
// attributes the ops read, with values the bytes choose. Conversion may
// fail but must not panic.
func FuzzNode(f *testing.F) {
	f.Add([]byte("\x00\x01\x02\x03\x04\x05\x06\x07\x08\x09"))
	f.Add([]byte("reshape\x02\x01\x03\x04\xff\xfe"))
	f.Add([]byte{0x30, 0x02, 0x12, 0x33, 0x44, 0x05, 0x06, 0x70, 0x80, 0x91, 0xa2})
	var ops []string
	for name := range registry {
		ops = append(ops, name)
	}
	for d, reg := range domains {
		for name := range reg {
			ops = append(ops, d+"/"+name)
		}
	}
	sort.Strings(ops)
	intAttrs := []string{"axis", "keepdims", "group", "blocksize", "batch_dims", "upper", "exclusive", "reverse",
		"select_last_index", "noop_with_empty_axes", "transA", "transB", "ceil_mode", "count_include_pad", "hidden_size",
		"largest", "k", "to", "p", "start", "end", "allowzero", "detect_negative", "fmod", "num_scan_inputs", "ignore_index",
		"linear_before_reset", "layout", "storage_order", "periodic", "onesided", "inverse", "align_corners", "time_axis", "batch_axis"}
	intsAttrs := []string{"axes", "perm", "pads", "strides", "dilations", "kernel_shape", "split", "starts", "ends",
		"output_padding", "output_shape", "shape"}
	strAttrs := map[string][]string{"mode": {"constant", "reflect", "edge", "nearest", "linear", "cubic", "DCR", "CRD", "bilinear", "bicubic", "nesterov"},
		"auto_pad": {"NOTSET", "SAME_UPPER", "SAME_LOWER", "VALID"}, "reduction": {"none", "sum", "mean", "add", "mul"},
		"direction": {"forward", "reverse", "bidirectional"}, "coordinate_transformation_mode": {"half_pixel", "align_corners", "asymmetric", "tf_crop_and_resize"},
		"padding_mode": {"zeros", "border", "reflection"}, "equation": {"ij,jk->ik", "ii->i", "...i,...i->...", "bij,bjk", "i,i"}}
	var strNames []string
	for k := range strAttrs {
		strNames = append(strNames, k)
	}
	sort.Strings(strNames)
	f.Fuzz(func(t *testing.T, data []byte) {
		r := &byteReader{data: data}
		fuzzcheck.Bounded(t, fuzzcheck.DefaultLimit, func() {
			op := ops[r.next()%len(ops)]
			domain, name := "", op
			if i := strings.LastIndexByte(op, '/'); i >= 0 {
				domain, name = op[:i], op[i+1:]
			}
			n := &pb.NodeProto{OpType: proto.String(name), Domain: proto.String(domain)}
			g := &pb.GraphProto{}
			nin := r.next() % 5
			for i := range nin {
				in := fmt.Sprintf("in%d", i)
				if r.next()%8 == 0 {
					n.Input = append(n.Input, "")
					continue
				}
				n.Input = append(n.Input, in)
				rank := r.next() % 5
				var dims []int64
				size := 1
				for range rank {
					d := int64(r.next() % 5)
					dims = append(dims, d)
					size *= int(d)
				}
				types := []DataType{Float, Int64, Bool, Int32, Double}
				dt := types[r.next()%len(types)]
				if r.next()%2 == 0 {
					g.Input = append(g.Input, info(in, dt, dims...))
					continue
				}
				tp := &pb.TensorProto{Name: proto.String(in), DataType: proto.Int32(int32(dt)), Dims: dims}
				for range size {
					v := int64(int8(r.next()))
					switch dt {
					case Float:
						tp.FloatData = append(tp.FloatData, float32(v)/4)
					case Double:
						tp.DoubleData = append(tp.DoubleData, float64(v)/4)
					case Int64:
						tp.Int64Data = append(tp.Int64Data, v%8)
					default:
						tp.Int32Data = append(tp.Int32Data, int32(v%8))
					}
				}
				g.Initializer = append(g.Initializer, tp)
			}
			for range r.next() % 4 {
				switch r.next() % 3 {
				case 0:
					n.Attribute = append(n.Attribute, &pb.AttributeProto{Name: proto.String(intAttrs[r.next()%len(intAttrs)]),
						Type: pb.AttributeProto_INT.Enum(), I: proto.Int64(int64(int8(r.next())) % 8)})
				case 1:
					a := &pb.AttributeProto{Name: proto.String(intsAttrs[r.next()%len(intsAttrs)]), Type: pb.AttributeProto_INTS.Enum()}
					for range r.next() % 6 {
						a.Ints = append(a.Ints, int64(int8(r.next()))%6)
					}
					n.Attribute = append(n.Attribute, a)
				case 2:
					k := strNames[r.next()%len(strNames)]
					v := strAttrs[k][r.next()%len(strAttrs[k])]
					n.Attribute = append(n.Attribute, &pb.AttributeProto{Name: proto.String(k), Type: pb.AttributeProto_STRING.Enum(), S: []byte(v)})
				}
			}
			seen := map[string]bool{}
			var attrs []*pb.AttributeProto
			for _, a := range n.Attribute {
				if !seen[a.GetName()] {
					seen[a.GetName()] = true
					attrs = append(attrs, a)
				}
			}
			n.Attribute = attrs
			nout := 1 + r.next()%3
			for i := range nout {
				n.Output = append(n.Output, fmt.Sprintf("out%d", i))
				g.Output = append(g.Output, &pb.ValueInfoProto{Name: proto.String(fmt.Sprintf("out%d", i)),
					Type: &pb.TypeProto{Value: &pb.TypeProto_TensorType{TensorType: &pb.TypeProto_Tensor{}}}})
			}
			g.Node = []*pb.NodeProto{n}
			opset := int64(7 + r.next()%11)
			mp := &pb.ModelProto{IrVersion: proto.Int64(8), Graph: g, OpsetImport: []*pb.OperatorSetIdProto{
				{Version: proto.Int64(opset)}, {Domain: proto.String(trainingDomain), Version: proto.Int64(1)}}}
			m, err := fromProto(mp, "")
			if err != nil {
				return
			}
			if _, err := m.Graph(Options{}); err != nil && strings.Contains(err.Error(), "internal error: panic") {
				t.Fatal(err)
			}
		})
	})
}

// byteReader hands out the fuzzer's bytes one at a time, then zeros.
type byteReader struct {
	data []byte
	pos  int
}

func (r *byteReader) next() int {
	if r.pos >= len(r.data) {
		return 0
	}
	r.pos++
	return int(r.data[r.pos-1])
}
