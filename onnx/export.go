package onnx

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"strconv"
	"strings"

	"google.golang.org/protobuf/proto"

	"github.com/tartanml/tartan/nn"
	"github.com/tartanml/tartan/onnx/internal/pb"
)

// ExportOpset is the ONNX operator set Export writes, and ExportIRVersion
// the IR version of the file (ONNX 1.12's).
const (
	ExportOpset     = 17
	ExportIRVersion = 8
)

// maxExportBytes bounds the weights of an exported model: protocol buffers
// cannot exceed 2 GiB, and Export does not write external data.
const maxExportBytes = 2<<30 - 64<<20

// ExportOption configures Export.
type ExportOption interface {
	applyExport(*exportSettings)
}

type exportSettings struct {
	batch int // 0: a symbolic batch dimension
}

type exportOptionFunc func(*exportSettings)

func (f exportOptionFunc) applyExport(s *exportSettings) { f(s) }

// FixedBatch makes the batch dimension of the exported inputs and outputs n
// instead of the symbolic "N".
func FixedBatch(n int) ExportOption {
	return exportOptionFunc(func(s *exportSettings) { s.batch = n })
}

// Export writes m as an ONNX model (IR version 8, opset 17) to w, its
// weights as initializers.
//
// The exported model keeps the nn model's data layout: inputs and outputs
// are channels-last, (N, H, W, C) for images and (N, steps, C) for
// sequences, with the batch first (the symbolic dimension "N" unless
// FixedBatch is given), and every input is float32, embedding indices too
// (whole numbers, truncated as nn truncates them). Inside, convolutions,
// pooling and batch normalisation run channels-first as ONNX defines them,
// with Transpose nodes where the layout changes; consecutive such layers
// share one layout, so a chain of convolutions needs a Transpose only at
// each end. Inputs are named after the model's input layers and outputs
// after the layers that produce them.
//
// These layer kinds of package nn export, in their inference form:
// Dense (Gemm, or MatMul and Add beyond rank 2), Conv1D, Conv2D and
// DepthwiseConv2D (Conv with explicit pads for "same", dilations, groups),
// Conv1DTranspose and Conv2DTranspose (ConvTranspose, nn's output length
// as pads and output_padding), SeparableConv2D (a depthwise Conv, then a
// 1×1 one), MaxPooling1D/2D and AveragePooling1D/2D (MaxPool, AveragePool
// without the padding in the count), GlobalAveragePooling1D/2D and
// GlobalMaxPooling1D/2D, BatchNormalization (with the moving statistics),
// LayerNormalization (LayerNormalization over the last axis, its formula
// over another), Dropout (omitted), Activation, ReLU and Softmax (relu6 as
// Clip, gelu through Erf, silu as x·sigmoid(x)), Flatten, Reshape, Add,
// Concatenate, Embedding (Gather, with indices outside the table giving
// zero vectors as in nn), ZeroPadding1D/2D (Pad), Cropping1D/2D (Slice),
// UpSampling1D/2D (Resize: nearest rounding down, or linear with
// half-pixel centres for bilinear), Rescaling (Mul, Add), RandomFlip,
// RandomContrast and RandomTranslation (omitted: identities outside
// training), RandomCrop (its centred crop: Slice, then a linear Resize
// where the crop's size differs from the target's), MultiHeadAttention
// (MatMul, Add, Reshape and Transpose for the projections and heads, Where
// for its attention and causal masks, Softmax) and PositionEmbedding (its
// table's first rows, a Slice, expanded to the input's shape).
//
// SimpleRNN, LSTM and GRU export as ONNX's RNN, LSTM and GRU, and
// Bidirectional around one of them as one node of direction
// "bidirectional" whose two outputs are merged as merge_mode says. The
// nodes run time-major (layout 0) between Transposes; Keras's gate order
// (LSTM i, f, c, o) becomes ONNX's (i, o, f, c), a GRU with reset_after sets
// linear_before_reset and puts its recurrent bias in Rb, go_backwards reads
// in reverse and, with return_sequences, returns the sequence in the order
// read, as Keras does, and return_state adds the final states as further
// outputs of the call. The activations tanh, sigmoid, relu, softplus,
// linear (Affine), elu and leaky_relu map to ONNX's recurrent activations;
// another is an error naming the layer. A step mask (from Masking, or
// Embedding with mask_zero, passed on as in nn) exports exactly whatever
// steps it hides: Masking becomes the comparison that finds the masked
// steps, and a recurrent layer that receives a mask moves each sequence's
// unmasked steps to its front (TopK, GatherElements), runs on them with
// sequence_lens their count and reads its outputs back at the original
// steps (CumSum, GatherElements), a masked step repeating the output before
// it as in nn (Bidirectional's sequences are zero there, as in nn).
//
// Other layers, Lambda and custom layers among them (they compute with Go
// code), do not export: Export gives an error naming the layer and its
// class.
func Export(m *nn.Model, w io.Writer, opts ...ExportOption) error {
	if m == nil {
		return fmt.Errorf("onnx: export: nil model")
	}
	arch, err := m.Architecture()
	if err != nil {
		return fmt.Errorf("onnx: export of model %q: %w", m.Name(), err)
	}
	var s exportSettings
	for _, o := range opts {
		if o == nil {
			return fmt.Errorf("onnx: export: nil option")
		}
		o.applyExport(&s)
	}
	if s.batch < 0 {
		return fmt.Errorf("onnx: export: batch size %d is negative", s.batch)
	}
	model, err := exportArchitecture(arch, m.GetWeight, s)
	if err != nil {
		return err
	}
	if got, want := model.outShape, m.OutputShape(); !equalInts(got, want) {
		return fmt.Errorf("onnx: export of model %q: the exported output has per-sample shape %v, the model's is %v", m.Name(), got, want)
	}
	b, err := proto.Marshal(model.proto)
	if err != nil {
		return fmt.Errorf("onnx: export of model %q: encoding: %w", m.Name(), err)
	}
	if _, err := w.Write(b); err != nil {
		return fmt.Errorf("onnx: export of model %q: %w", m.Name(), err)
	}
	return nil
}

// ExportFile writes m as an ONNX model to the file at path (see Export).
func ExportFile(m *nn.Model, path string, opts ...ExportOption) error {
	var buf bytes.Buffer
	if err := Export(m, &buf, opts...); err != nil {
		return err
	}
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		return fmt.Errorf("onnx: export: %w", err)
	}
	return nil
}

func equalInts(a, b []int) bool {
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

// The architecture JSON of package nn, as far as export reads it.
type expArch struct {
	ClassName string `json:"class_name"`
	Name      string `json:"name"`
	Layers    []struct {
		ClassName string          `json:"class_name"`
		Config    json.RawMessage `json:"config"`
	} `json:"layers"`
	Nodes []struct {
		Layer   string   `json:"layer"`
		Inbound []string `json:"inbound"`
	} `json:"nodes"`
	Inputs  []string `json:"inputs"`
	Outputs []string `json:"outputs"`
}

// expLayer is one layer of the architecture.
type expLayer struct {
	name, class string
	config      json.RawMessage
}

func (l *expLayer) String() string { return fmt.Sprintf("%q (%s)", l.name, l.class) }

// expValue is a tensor of the graph being built: its per-sample shape in
// the nn (channels-last) layout and its names in the layouts it exists in
// so far.
type expValue struct {
	shape  []int
	native string // channels-last
	cf     string // channels-first; for rank 2 the same as native
	// mask, when not "", names the value's step mask as nn keeps it: a
	// float32 tensor of the value's shape without its last axis (batch
	// first), 1 at the steps that count and 0 at the masked ones.
	mask string
}

// rank is the full rank, with the batch dimension.
func (v *expValue) rank() int { return len(v.shape) + 1 }

// exportedModel is what exportArchitecture built.
type exportedModel struct {
	proto    *pb.ModelProto
	outShape []int // the first output's per-sample shape
}

// exporter builds one ONNX graph.
type exporter struct {
	settings exportSettings
	weight   func(name string) (*nn.Array, error)
	g        *pb.GraphProto
	used     map[string]bool
	bytes    int64
	// weights maps a layer's weight ("dense/kernel") to its initializer,
	// so that a layer called several times stores its weights once.
	weights map[string]string
}

// exportArchitecture builds the ONNX model of an nn architecture whose
// weights weight returns by name.
func exportArchitecture(js []byte, weight func(string) (*nn.Array, error), s exportSettings) (*exportedModel, error) {
	var a expArch
	if err := json.Unmarshal(js, &a); err != nil {
		return nil, fmt.Errorf("onnx: export: reading the model's architecture: %w", err)
	}
	e := &exporter{settings: s, weight: weight, g: &pb.GraphProto{Name: proto.String(a.Name)}, used: map[string]bool{}, weights: map[string]string{}}
	layers := map[string]*expLayer{}
	var order []*expLayer
	for _, l := range a.Layers {
		var c struct {
			Name string `json:"name"`
		}
		if err := json.Unmarshal(l.Config, &c); err != nil {
			return nil, fmt.Errorf("onnx: export: layer of class %s: %w", l.ClassName, err)
		}
		el := &expLayer{name: c.Name, class: l.ClassName, config: l.Config}
		layers[c.Name] = el
		order = append(order, el)
	}
	values := map[string]*expValue{}
	type call struct {
		layer *expLayer
		in    []string
		name  string // the layer's name
		k     int    // the call's number, from 0
	}
	var calls []call
	var inputs, outputs []string
	switch a.ClassName {
	case "Sequential":
		if len(order) < 2 || order[0].class != "InputLayer" {
			return nil, fmt.Errorf("onnx: export of %q: a Sequential model starts with an InputLayer", a.Name)
		}
		inputs = []string{order[0].name}
		prev := order[0].name
		for _, l := range order[1:] {
			calls = append(calls, call{l, []string{prev}, l.name, 0})
			prev = l.name
		}
		outputs = []string{prev}
	case "Functional":
		inputs, outputs = a.Inputs, a.Outputs
		count := map[string]int{}
		for _, n := range a.Nodes {
			l := layers[n.Layer]
			if l == nil {
				return nil, fmt.Errorf("onnx: export of %q: node of unknown layer %q", a.Name, n.Layer)
			}
			k := count[n.Layer]
			count[n.Layer]++
			calls = append(calls, call{l, n.Inbound, n.Layer, k})
		}
	default:
		return nil, fmt.Errorf("onnx: export of %q: unknown model class %q", a.Name, a.ClassName)
	}
	for _, name := range inputs {
		l := layers[name]
		if l == nil || l.class != "InputLayer" {
			return nil, fmt.Errorf("onnx: export of %q: input %q is not an InputLayer", a.Name, name)
		}
		var c struct {
			Shape []int `json:"shape"`
		}
		if err := json.Unmarshal(l.config, &c); err != nil {
			return nil, fmt.Errorf("onnx: export: layer %s: %w", l, err)
		}
		e.used[name] = true
		v := &expValue{shape: c.Shape, native: name}
		if v.rank() <= 2 {
			v.cf = name
		}
		values[name] = v
		e.g.Input = append(e.g.Input, e.valueInfo(name, c.Shape))
	}
	for _, c := range calls {
		var in []*expValue
		for _, r := range c.in {
			v := values[r]
			if v == nil {
				return nil, fmt.Errorf("onnx: export: layer %s takes %q, which is not computed before it", c.layer, r)
			}
			in = append(in, v)
		}
		ref := outputRef(c.name, c.k, 0)
		var outs []*expValue
		var err error
		switch {
		case isRecurrent(c.layer.class):
			outs, err = e.recurrent(c.layer, in, ref)
		default:
			var out *expValue
			out, err = e.layer(c.layer, in, ref)
			outs = []*expValue{out}
			if err == nil {
				out = passMask(c.layer, in, out)
				outs[0] = out
			}
		}
		if err != nil {
			return nil, err
		}
		for j, out := range outs {
			values[outputRef(c.name, c.k, j)] = out
		}
	}
	graphInput := map[string]bool{}
	for _, n := range inputs {
		graphInput[n] = true
	}
	taken := map[string]bool{}
	var outShape []int
	for i, ref := range outputs {
		v := values[ref]
		if v == nil {
			return nil, fmt.Errorf("onnx: export of %q: output %q is not a node", a.Name, ref)
		}
		if i == 0 {
			outShape = v.shape
		}
		name := e.get(v, false)
		if taken[name] || graphInput[name] {
			name = e.node("Identity", []string{name}, ref)
		}
		taken[name] = true
		e.g.Output = append(e.g.Output, e.valueInfo(name, v.shape))
	}
	if e.bytes > maxExportBytes {
		return nil, fmt.Errorf("onnx: export of %q: %d bytes of weights exceed what one ONNX file holds (2 GiB)", a.Name, e.bytes)
	}
	m := &pb.ModelProto{
		IrVersion:       proto.Int64(ExportIRVersion),
		OpsetImport:     []*pb.OperatorSetIdProto{{Domain: proto.String(""), Version: proto.Int64(ExportOpset)}},
		ProducerName:    proto.String("tartan"),
		ProducerVersion: proto.String("1"),
		DocString:       proto.String("Exported from Tartan's nn model " + strconv.Quote(a.Name) + "; inputs and outputs are channels-last, batch first."),
		Graph:           e.g,
	}
	return &exportedModel{proto: m, outShape: outShape}, nil
}

// valueInfo describes a float32 graph input or output of per-sample shape
// s.
func (e *exporter) valueInfo(name string, s []int) *pb.ValueInfoProto {
	var dims []*pb.TensorShapeProto_Dimension
	if e.settings.batch > 0 {
		dims = append(dims, &pb.TensorShapeProto_Dimension{Value: &pb.TensorShapeProto_Dimension_DimValue{DimValue: int64(e.settings.batch)}})
	} else {
		dims = append(dims, &pb.TensorShapeProto_Dimension{Value: &pb.TensorShapeProto_Dimension_DimParam{DimParam: "N"}})
	}
	for _, d := range s {
		dims = append(dims, &pb.TensorShapeProto_Dimension{Value: &pb.TensorShapeProto_Dimension_DimValue{DimValue: int64(d)}})
	}
	return &pb.ValueInfoProto{
		Name: proto.String(name),
		Type: &pb.TypeProto{Value: &pb.TypeProto_TensorType{TensorType: &pb.TypeProto_Tensor{
			ElemType: proto.Int32(int32(pb.TensorProto_FLOAT)),
			Shape:    &pb.TensorShapeProto{Dim: dims},
		}}},
	}
}

// fresh returns base, or base with a numeric suffix when base is taken,
// and marks it taken.
func (e *exporter) fresh(base string) string {
	name := base
	for i := 1; e.used[name]; i++ {
		name = base + "_" + strconv.Itoa(i)
	}
	e.used[name] = true
	return name
}

// node adds a node computing op of inputs into a fresh value named after
// out, which it returns.
func (e *exporter) node(op string, inputs []string, out string, attrs ...*pb.AttributeProto) string {
	name := e.fresh(out)
	e.g.Node = append(e.g.Node, &pb.NodeProto{
		Input: inputs, Output: []string{name}, Name: proto.String(name), OpType: proto.String(op), Attribute: attrs,
	})
	return name
}

func attrInt(name string, v int64) *pb.AttributeProto {
	return &pb.AttributeProto{Name: proto.String(name), Type: pb.AttributeProto_INT.Enum(), I: proto.Int64(v)}
}

func attrInts(name string, v []int) *pb.AttributeProto {
	vs := make([]int64, len(v))
	for i, x := range v {
		vs[i] = int64(x)
	}
	return &pb.AttributeProto{Name: proto.String(name), Type: pb.AttributeProto_INTS.Enum(), Ints: vs}
}

func attrFloat(name string, v float64) *pb.AttributeProto {
	return &pb.AttributeProto{Name: proto.String(name), Type: pb.AttributeProto_FLOAT.Enum(), F: proto.Float32(float32(v))}
}

// initF32 adds a float32 initializer and returns its name.
func (e *exporter) initF32(base string, dims []int, data []float32) string {
	name := e.fresh(base)
	t := &pb.TensorProto{Name: proto.String(name), DataType: proto.Int32(int32(pb.TensorProto_FLOAT)), Dims: int64s(dims)}
	raw := make([]byte, 4*len(data))
	for i, x := range data {
		b := math.Float32bits(x)
		raw[4*i], raw[4*i+1], raw[4*i+2], raw[4*i+3] = byte(b), byte(b>>8), byte(b>>16), byte(b>>24)
	}
	t.RawData = raw
	e.bytes += int64(len(raw))
	e.g.Initializer = append(e.g.Initializer, t)
	return name
}

// initWeight adds the initializer of a layer's weight once, however many
// times the layer is called; name is "layer/weight" and the data the same
// on every call.
func (e *exporter) initWeight(name string, dims []int, data []float32) string {
	if n, ok := e.weights[name]; ok {
		return n
	}
	n := e.initF32(name, dims, data)
	e.weights[name] = n
	return n
}

// initI64 adds an int64 initializer and returns its name.
func (e *exporter) initI64(base string, dims []int, data []int64) string {
	name := e.fresh(base)
	e.g.Initializer = append(e.g.Initializer, &pb.TensorProto{
		Name: proto.String(name), DataType: proto.Int32(int32(pb.TensorProto_INT64)), Dims: int64s(dims), Int64Data: data,
	})
	return name
}

// scalar adds a float32 scalar initializer.
func (e *exporter) scalar(base string, v float64) string {
	return e.initF32(base, nil, []float32{float32(v)})
}

// toCF and fromCF are the permutations between the channels-last and
// channels-first layouts of a tensor of full rank r.
func toCF(r int) []int {
	p := []int{0, r - 1}
	for i := 1; i < r-1; i++ {
		p = append(p, i)
	}
	return p
}

func fromCF(r int) []int {
	p := []int{0}
	for i := 2; i < r; i++ {
		p = append(p, i)
	}
	return append(p, 1)
}

// get returns the name of v in the channels-first (cf) or channels-last
// layout, adding a Transpose the first time a layout is asked for.
func (e *exporter) get(v *expValue, cf bool) string {
	if v.rank() <= 2 {
		if v.native == "" {
			v.native = v.cf
		}
		return v.native
	}
	if cf {
		if v.cf == "" {
			v.cf = e.node("Transpose", []string{v.native}, v.native+"/nchw", attrInts("perm", toCF(v.rank())))
		}
		return v.cf
	}
	if v.native == "" {
		base := strings.TrimSuffix(v.cf, "/nchw")
		v.native = e.node("Transpose", []string{v.cf}, base+"/nhwc", attrInts("perm", fromCF(v.rank())))
	}
	return v.native
}

// layoutOf returns whether v is channels-first at present (and not
// channels-last).
func layoutOf(v *expValue) bool { return v.native == "" && v.cf != "" }

// withName returns a value of shape s named name in layout cf.
func withName(s []int, name string, cf bool) *expValue {
	v := &expValue{shape: s}
	if cf {
		v.cf = name
	} else {
		v.native = name
	}
	if len(s)+1 <= 2 {
		v.native, v.cf = name, name
	}
	return v
}

// axisIn maps axis a (of the full channels-last tensor of rank r, negative
// counting from the end) to its index in layout cf.
func axisIn(a, r int, cf bool) int {
	if a < 0 {
		a += r
	}
	if !cf || r <= 2 {
		return a
	}
	for i, p := range toCF(r) {
		if p == a {
			return i
		}
	}
	return a
}

// weightOf reads the layer's weight short ("kernel", "bias", …) and checks
// its shape.
func (e *exporter) weightOf(l *expLayer, short string, shape ...int) ([]float32, error) {
	a, err := e.weight(l.name + "/" + short)
	if err != nil {
		return nil, fmt.Errorf("onnx: export: layer %s: %w", l, err)
	}
	if !equalInts(a.Shape, shape) || len(a.Data) != product(shape) {
		return nil, fmt.Errorf("onnx: export: layer %s: weight %s is %v, want %v", l, short, a.Shape, shape)
	}
	return a.Data, nil
}

func product(s []int) int {
	n := 1
	for _, d := range s {
		n *= d
	}
	return n
}

// permute returns data of the given shape with its axes reordered: axis i
// of the result is axis perm[i] of data.
func permute(data []float32, shape, perm []int) ([]float32, []int) {
	r := len(shape)
	outShape := make([]int, r)
	for i, p := range perm {
		outShape[i] = shape[p]
	}
	stride := make([]int, r)
	s := 1
	for i := r - 1; i >= 0; i-- {
		stride[i] = s
		s *= shape[i]
	}
	out := make([]float32, len(data))
	idx := make([]int, r)
	for o := range out {
		off := 0
		for i, p := range perm {
			off += idx[i] * stride[p]
		}
		out[o] = data[off]
		for i := r - 1; i >= 0; i-- {
			idx[i]++
			if idx[i] < outShape[i] {
				break
			}
			idx[i] = 0
		}
	}
	return out, outShape
}

// windowPads returns the output length and the padding before and after
// of a window along one dimension, with the arithmetic of nn's "valid" and
// "same" (TensorFlow's: the smaller half before).
func windowPads(in, k, stride, dilation int, padding string) (out, before, after int, err error) {
	span := (k-1)*dilation + 1
	if padding == "same" {
		out = (in + stride - 1) / stride
		total := max((out-1)*stride+span-in, 0)
		return out, total / 2, total - total/2, nil
	}
	if in < span {
		return 0, 0, 0, fmt.Errorf("a window spanning %d does not fit an input of %d", span, in)
	}
	return (in-span)/stride + 1, 0, 0, nil
}

// layer exports one layer call of inputs in, whose output is named ref.
func (e *exporter) layer(l *expLayer, in []*expValue, ref string) (*expValue, error) {
	unsupported := func(why string, args ...any) error {
		return fmt.Errorf("onnx: export: layer %s cannot be exported: %s", l, fmt.Sprintf(why, args...))
	}
	one := func() (*expValue, error) {
		if len(in) != 1 {
			return nil, unsupported("it takes %d inputs, want 1", len(in))
		}
		return in[0], nil
	}
	dec := func(v any) error {
		if err := json.Unmarshal(l.config, v); err != nil {
			return fmt.Errorf("onnx: export: layer %s: config: %w", l, err)
		}
		return nil
	}
	switch l.class {
	case "Dense":
		var c struct {
			Units      int    `json:"units"`
			Activation string `json:"activation"`
			UseBias    bool   `json:"use_bias"`
		}
		x, err := one()
		if err == nil {
			err = dec(&c)
		}
		if err != nil {
			return nil, err
		}
		if len(x.shape) < 1 {
			return nil, unsupported("its input has no feature axis")
		}
		fin := x.shape[len(x.shape)-1]
		k, err := e.weightOf(l, "kernel", fin, c.Units)
		if err != nil {
			return nil, err
		}
		ins := []string{e.get(x, false), e.initWeight(l.name+"/kernel", []int{fin, c.Units}, k)}
		var bias string
		if c.UseBias {
			b, err := e.weightOf(l, "bias", c.Units)
			if err != nil {
				return nil, err
			}
			bias = e.initWeight(l.name+"/bias", []int{c.Units}, b)
		}
		shape := append(append([]int{}, x.shape[:len(x.shape)-1]...), c.Units)
		out := preActivation(ref, "dense", c.Activation)
		var y string
		switch {
		case x.rank() == 2 && bias != "":
			y = e.node("Gemm", append(ins, bias), out)
		case x.rank() == 2:
			y = e.node("Gemm", ins, out)
		case bias != "":
			y = e.node("Add", []string{e.node("MatMul", ins, ref+"/matmul"), bias}, out)
		default:
			y = e.node("MatMul", ins, out)
		}
		return e.activation(l, c.Activation, withName(shape, y, false), ref)
	case "Conv1D", "Conv2D", "DepthwiseConv2D":
		return e.conv(l, in, ref)
	case "MaxPooling1D", "AveragePooling1D", "MaxPooling2D", "AveragePooling2D":
		return e.pool(l, in, ref)
	case "GlobalAveragePooling1D", "GlobalMaxPooling1D", "GlobalAveragePooling2D", "GlobalMaxPooling2D":
		return e.globalPool(l, in, ref)
	case "ZeroPadding1D", "ZeroPadding2D", "Cropping1D", "Cropping2D":
		return e.padCrop(l, in, ref)
	case "UpSampling1D", "UpSampling2D":
		return e.upSampling(l, in, ref)
	case "Rescaling":
		return e.rescaling(l, in, ref)
	case "Conv1DTranspose", "Conv2DTranspose":
		return e.convTranspose(l, in, ref)
	case "SeparableConv2D":
		return e.separable(l, in, ref)
	case "RandomFlip", "RandomContrast", "RandomTranslation":
		// Identities outside training, as in nn's Predict.
		return one()
	case "RandomCrop":
		return e.randomCrop(l, in, ref)
	case "BatchNormalization":
		var c struct {
			Epsilon float64 `json:"epsilon"`
			Center  bool    `json:"center"`
			Scale   bool    `json:"scale"`
		}
		x, err := one()
		if err == nil {
			err = dec(&c)
		}
		if err != nil {
			return nil, err
		}
		if len(x.shape) < 1 {
			return nil, unsupported("its input has no channel axis")
		}
		ch := x.shape[len(x.shape)-1]
		ins := []string{e.get(x, true)}
		for _, w := range []struct {
			short string
			on    bool
			def   float32
		}{{"gamma", c.Scale, 1}, {"beta", c.Center, 0}, {"moving_mean", true, 0}, {"moving_variance", true, 1}} {
			var v []float32
			if w.on {
				if v, err = e.weightOf(l, w.short, ch); err != nil {
					return nil, err
				}
			} else {
				v = make([]float32, ch)
				for i := range v {
					v[i] = w.def
				}
			}
			ins = append(ins, e.initWeight(l.name+"/"+w.short, []int{ch}, v))
		}
		y := e.node("BatchNormalization", ins, ref, attrFloat("epsilon", c.Epsilon))
		return withName(x.shape, y, true), nil
	case "LayerNormalization":
		return e.layerNorm(l, in, ref)
	case "Dropout":
		return one()
	case "Activation":
		var c struct {
			Activation string `json:"activation"`
		}
		x, err := one()
		if err == nil {
			err = dec(&c)
		}
		if err != nil {
			return nil, err
		}
		return e.activation(l, c.Activation, x, ref)
	case "ReLU":
		var c struct {
			MaxValue      *float64 `json:"max_value"`
			NegativeSlope float64  `json:"negative_slope"`
		}
		x, err := one()
		if err == nil {
			err = dec(&c)
		}
		if err != nil {
			return nil, err
		}
		cf := layoutOf(x)
		xn := e.get(x, cf)
		var y string
		switch {
		case c.NegativeSlope == 0 && c.MaxValue != nil:
			y = e.node("Clip", []string{xn, e.scalar(l.name+"/min", 0), e.scalar(l.name+"/max", *c.MaxValue)}, ref)
		case c.NegativeSlope == 0:
			y = e.node("Relu", []string{xn}, ref)
		default:
			out := ref
			if c.MaxValue != nil {
				out = ref + "/leaky"
			}
			y = e.node("LeakyRelu", []string{xn}, out, attrFloat("alpha", c.NegativeSlope))
			if c.MaxValue != nil {
				y = e.node("Min", []string{y, e.scalar(l.name+"/max", *c.MaxValue)}, ref)
			}
		}
		return withName(x.shape, y, cf), nil
	case "Softmax":
		var c struct {
			Axis int `json:"axis"`
		}
		x, err := one()
		if err == nil {
			err = dec(&c)
		}
		if err != nil {
			return nil, err
		}
		return e.softmax("Softmax", x, c.Axis, ref), nil
	case "Flatten":
		x, err := one()
		if err != nil {
			return nil, err
		}
		y := e.node("Flatten", []string{e.get(x, false)}, ref, attrInt("axis", 1))
		return withName([]int{product(x.shape)}, y, false), nil
	case "Reshape":
		var c struct {
			TargetShape []int `json:"target_shape"`
		}
		x, err := one()
		if err == nil {
			err = dec(&c)
		}
		if err != nil {
			return nil, err
		}
		target, err := resolveReshape(product(x.shape), c.TargetShape)
		if err != nil {
			return nil, unsupported("%v", err)
		}
		// 0 copies the batch dimension from the input; -1 infers it where a
		// target dimension is 0 (which 0 would also copy).
		batch := int64(0)
		for _, d := range target {
			if d == 0 {
				batch = -1
			}
		}
		shape := append([]int64{batch}, int64s(target)...)
		s := e.initI64(l.name+"/shape", []int{len(shape)}, shape)
		y := e.node("Reshape", []string{e.get(x, false), s}, ref)
		return withName(target, y, false), nil
	case "Add":
		if len(in) < 2 {
			return nil, unsupported("it takes %d inputs, want at least 2", len(in))
		}
		cf := commonLayout(in)
		y := e.get(in[0], cf)
		for i, x := range in[1:] {
			if !equalInts(x.shape, in[0].shape) {
				return nil, unsupported("inputs of shapes %v and %v differ", in[0].shape, x.shape)
			}
			out := ref
			if i < len(in)-2 {
				out = ref + "/partial"
			}
			y = e.node("Add", []string{y, e.get(x, cf)}, out)
		}
		return withName(in[0].shape, y, cf), nil
	case "Concatenate":
		var c struct {
			Axis int `json:"axis"`
		}
		if err := dec(&c); err != nil {
			return nil, err
		}
		if len(in) < 2 {
			return nil, unsupported("it takes %d inputs, want at least 2", len(in))
		}
		r := in[0].rank()
		a := c.Axis
		if a < 0 {
			a += r
		}
		if a < 1 || a >= r {
			return nil, unsupported("axis %d is out of range for inputs of rank %d", c.Axis, r)
		}
		cf := commonLayout(in)
		shape := append([]int{}, in[0].shape...)
		var names []string
		for i, x := range in {
			if x.rank() != r {
				return nil, unsupported("inputs of ranks %d and %d differ", r, x.rank())
			}
			if i > 0 {
				shape[a-1] += x.shape[a-1]
			}
			names = append(names, e.get(x, cf))
		}
		y := e.node("Concat", names, ref, attrInt("axis", int64(axisIn(a, r, cf))))
		return withName(shape, y, cf), nil
	case "Embedding":
		return e.embedding(l, in, ref)
	case "Masking":
		return e.masking(l, in, ref)
	case "MultiHeadAttention":
		return e.attention(l, in, ref)
	case "PositionEmbedding":
		return e.positionEmbedding(l, in, ref)
	}
	if l.class == "Lambda" {
		return nil, unsupported("a Lambda layer computes with a Go function, which has no ONNX mapping")
	}
	return nil, unsupported("class %s has no ONNX mapping (Export maps the layer kinds of package nn listed in its documentation; a custom layer's Go code cannot be exported)", l.class)
}

// commonLayout picks the layout for an elementwise op of several inputs:
// channels-first when every input already has it, channels-last otherwise.
func commonLayout(in []*expValue) bool {
	for _, x := range in {
		if x.rank() <= 2 || x.cf == "" {
			return false
		}
	}
	return true
}

// resolveReshape fills in a target shape's -1 for n elements per sample.
func resolveReshape(n int, target []int) ([]int, error) {
	out := append([]int{}, target...)
	known, at := 1, -1
	for i, d := range out {
		if d == -1 {
			at = i
		} else {
			known *= d
		}
	}
	if at >= 0 {
		if known == 0 || n%known != 0 {
			return nil, fmt.Errorf("cannot reshape %d elements per sample to %v", n, target)
		}
		out[at] = n / known
	}
	if product(out) != n {
		return nil, fmt.Errorf("cannot reshape %d elements per sample to %v", n, target)
	}
	return out, nil
}

// conv exports Conv1D, Conv2D and DepthwiseConv2D.
func (e *exporter) conv(l *expLayer, in []*expValue, ref string) (*expValue, error) {
	var c struct {
		Filters         int    `json:"filters"`
		DepthMultiplier int    `json:"depth_multiplier"`
		KernelSize      []int  `json:"kernel_size"`
		Strides         []int  `json:"strides"`
		Padding         string `json:"padding"`
		DilationRate    []int  `json:"dilation_rate"`
		Groups          int    `json:"groups"`
		Activation      string `json:"activation"`
		UseBias         bool   `json:"use_bias"`
	}
	if err := json.Unmarshal(l.config, &c); err != nil {
		return nil, fmt.Errorf("onnx: export: layer %s: config: %w", l, err)
	}
	if len(in) != 1 {
		return nil, fmt.Errorf("onnx: export: layer %s cannot be exported: it takes %d inputs, want 1", l, len(in))
	}
	x := in[0]
	rank := len(c.KernelSize)
	if len(x.shape) != rank+1 || len(c.Strides) != rank || len(c.DilationRate) != rank {
		return nil, fmt.Errorf("onnx: export: layer %s cannot be exported: input %v, kernel %v, strides %v and dilation %v disagree in rank",
			l, x.shape, c.KernelSize, c.Strides, c.DilationRate)
	}
	cin := x.shape[rank]
	shape := make([]int, rank+1)
	pads := make([]int, 2*rank)
	for d := range rank {
		var err error
		shape[d], pads[d], pads[d+rank], err = windowPads(x.shape[d], c.KernelSize[d], c.Strides[d], c.DilationRate[d], c.Padding)
		if err != nil {
			return nil, fmt.Errorf("onnx: export: layer %s cannot be exported: spatial dimension %d: %v", l, d+1, err)
		}
	}
	var w []float32
	var wshape []int
	var group, cout int
	kshape := append([]int{}, c.KernelSize...)
	if l.class == "DepthwiseConv2D" {
		// (kh, kw, C, M) → (C·M, 1, kh, kw): output channel c·M + m.
		cout, group = cin*c.DepthMultiplier, cin
		k, err := e.weightOf(l, "kernel", append(kshape, cin, c.DepthMultiplier)...)
		if err != nil {
			return nil, err
		}
		w, _ = permute(k, append(append([]int{}, kshape...), cout), []int{2, 0, 1})
		wshape = append([]int{cout, 1}, kshape...)
	} else {
		group, cout = max(c.Groups, 1), c.Filters
		if cin%group != 0 {
			return nil, fmt.Errorf("onnx: export: layer %s cannot be exported: groups %d do not divide %d channels", l, group, cin)
		}
		// (k…, C/G, O) → (O, C/G, k…).
		k, err := e.weightOf(l, "kernel", append(kshape, cin/group, cout)...)
		if err != nil {
			return nil, err
		}
		perm := []int{rank + 1, rank}
		for d := range rank {
			perm = append(perm, d)
		}
		w, wshape = permute(k, append(kshape, cin/group, cout), perm)
	}
	shape[rank] = cout
	ins := []string{e.get(x, true), e.initWeight(l.name+"/kernel", wshape, w)}
	if c.UseBias {
		b, err := e.weightOf(l, "bias", cout)
		if err != nil {
			return nil, err
		}
		ins = append(ins, e.initWeight(l.name+"/bias", []int{cout}, b))
	}
	y := e.node("Conv", ins, preActivation(ref, "conv", c.Activation), attrInts("kernel_shape", c.KernelSize), attrInts("strides", c.Strides),
		attrInts("dilations", c.DilationRate), attrInts("pads", pads), attrInt("group", int64(group)))
	return e.activation(l, c.Activation, withName(shape, y, true), ref)
}

// layerNorm exports LayerNormalization: ONNX's operator over the last
// axis, its formula over another.
func (e *exporter) layerNorm(l *expLayer, in []*expValue, ref string) (*expValue, error) {
	var c struct {
		Axis    int     `json:"axis"`
		Epsilon float64 `json:"epsilon"`
		Center  bool    `json:"center"`
		Scale   bool    `json:"scale"`
	}
	if err := json.Unmarshal(l.config, &c); err != nil {
		return nil, fmt.Errorf("onnx: export: layer %s: config: %w", l, err)
	}
	if len(in) != 1 {
		return nil, fmt.Errorf("onnx: export: layer %s cannot be exported: it takes %d inputs, want 1", l, len(in))
	}
	x := in[0]
	r := x.rank()
	a := c.Axis
	if a < 0 {
		a += r
	}
	if a < 1 || a >= r {
		return nil, fmt.Errorf("onnx: export: layer %s cannot be exported: axis %d is out of range for inputs of rank %d", l, c.Axis, r)
	}
	n := x.shape[a-1]
	// Parameters of shape (n, 1, …, 1) broadcast along axis a.
	pshape := []int{n}
	for range r - 1 - a {
		pshape = append(pshape, 1)
	}
	param := func(short string, on bool, def float32) (string, error) {
		if !on {
			if def == 0 {
				return "", nil
			}
			v := make([]float32, n)
			for i := range v {
				v[i] = def
			}
			return e.initWeight(l.name+"/"+short, pshape, v), nil
		}
		v, err := e.weightOf(l, short, n)
		if err != nil {
			return "", err
		}
		return e.initWeight(l.name+"/"+short, pshape, v), nil
	}
	gamma, err := param("gamma", c.Scale, 1)
	if err != nil {
		return nil, err
	}
	beta, err := param("beta", c.Center, 0)
	if err != nil {
		return nil, err
	}
	xn := e.get(x, false)
	if a == r-1 {
		ins := []string{xn, gamma}
		if beta != "" {
			ins = append(ins, beta)
		}
		y := e.node("LayerNormalization", ins, ref, attrInt("axis", -1), attrFloat("epsilon", c.Epsilon))
		return withName(x.shape, y, false), nil
	}
	axes := attrInts("axes", []int{a})
	mean := e.node("ReduceMean", []string{xn}, ref+"/mean", axes, attrInt("keepdims", 1))
	d := e.node("Sub", []string{xn, mean}, ref+"/centered")
	sq := e.node("Mul", []string{d, d}, ref+"/squared")
	vr := e.node("ReduceMean", []string{sq}, ref+"/variance", axes, attrInt("keepdims", 1))
	sd := e.node("Sqrt", []string{e.node("Add", []string{vr, e.scalar(l.name+"/epsilon", c.Epsilon)}, ref+"/variance_eps")}, ref+"/std")
	y := e.node("Div", []string{d, sd}, ref+"/normalized")
	if c.Scale {
		y = e.node("Mul", []string{gamma, y}, ref+"/scaled")
	}
	if beta != "" {
		y = e.node("Add", []string{y, beta}, ref)
	}
	return withName(x.shape, y, false), nil
}

// embedding exports Embedding as a Gather of the table, with indices
// truncated from float32 and those outside the table giving zero vectors.
func (e *exporter) embedding(l *expLayer, in []*expValue, ref string) (*expValue, error) {
	var c struct {
		InputDim  int  `json:"input_dim"`
		OutputDim int  `json:"output_dim"`
		MaskZero  bool `json:"mask_zero"`
	}
	if err := json.Unmarshal(l.config, &c); err != nil {
		return nil, fmt.Errorf("onnx: export: layer %s: config: %w", l, err)
	}
	if len(in) != 1 {
		return nil, fmt.Errorf("onnx: export: layer %s cannot be exported: it takes %d inputs, want 1", l, len(in))
	}
	x := in[0]
	table, err := e.weightOf(l, "embeddings", c.InputDim, c.OutputDim)
	if err != nil {
		return nil, err
	}
	tname := e.initWeight(l.name+"/embeddings", []int{c.InputDim, c.OutputDim}, table)
	idx := e.node("Cast", []string{e.get(x, false)}, ref+"/indices", attrInt("to", int64(pb.TensorProto_INT64)))
	zero := e.initI64(l.name+"/zero", nil, []int64{0})
	size := e.initI64(l.name+"/input_dim", nil, []int64{int64(c.InputDim)})
	valid := e.node("And", []string{
		e.node("GreaterOrEqual", []string{idx, zero}, ref+"/nonnegative"),
		e.node("Less", []string{idx, size}, ref+"/below_input_dim"),
	}, ref+"/valid")
	safe := e.node("Where", []string{valid, idx, zero}, ref+"/safe_indices")
	rows := e.node("Gather", []string{tname, safe}, ref+"/rows", attrInt("axis", 0))
	mask := e.node("Cast", []string{valid}, ref+"/mask", attrInt("to", int64(pb.TensorProto_FLOAT)))
	last := e.initI64(l.name+"/last_axis", []int{1}, []int64{-1})
	mask = e.node("Unsqueeze", []string{mask, last}, ref+"/mask_column")
	y := e.node("Mul", []string{rows, mask}, ref)
	out := withName(append(append([]int{}, x.shape...), c.OutputDim), y, false)
	if c.MaskZero {
		// Steps whose truncated index is 0 are masked, as in nn.
		isZero := e.node("Equal", []string{idx, zero}, ref+"/index_zero")
		out.mask = e.node("Cast", []string{e.node("Not", []string{isZero}, ref+"/index_nonzero")}, ref+"/step_mask",
			attrInt("to", int64(pb.TensorProto_FLOAT)))
	}
	return out, nil
}

// softmax adds Softmax or LogSoftmax along axis (of the channels-last
// tensor) in whichever layout x has.
func (e *exporter) softmax(op string, x *expValue, axis int, ref string) *expValue {
	cf := layoutOf(x)
	y := e.node(op, []string{e.get(x, cf)}, ref, attrInt("axis", int64(axisIn(axis, x.rank(), cf))))
	return withName(x.shape, y, cf)
}

// preActivation names the value of a layer's main op: the layer's output
// name when no activation follows, ref/kind otherwise.
func preActivation(ref, kind, activation string) string {
	if activation == "" || activation == "linear" {
		return ref
	}
	return ref + "/" + kind
}

// activation applies the named activation of layer l to x, in x's layout.
func (e *exporter) activation(l *expLayer, name string, x *expValue, ref string) (*expValue, error) {
	cf := layoutOf(x)
	xn := e.get(x, cf)
	unary := func(op string, attrs ...*pb.AttributeProto) (*expValue, error) {
		return withName(x.shape, e.node(op, []string{xn}, ref, attrs...), cf), nil
	}
	switch name {
	case "", "linear":
		return x, nil
	case "relu":
		return unary("Relu")
	case "relu6":
		y := e.node("Clip", []string{xn, e.scalar(l.name+"/zero", 0), e.scalar(l.name+"/six", 6)}, ref)
		return withName(x.shape, y, cf), nil
	case "sigmoid":
		return unary("Sigmoid")
	case "tanh":
		return unary("Tanh")
	case "softmax":
		return e.softmax("Softmax", x, -1, ref), nil
	case "log_softmax":
		return e.softmax("LogSoftmax", x, -1, ref), nil
	case "elu":
		return unary("Elu", attrFloat("alpha", 1))
	case "gelu":
		// x·(1 + erf(x/√2))/2, in nn's order of operations.
		t := e.node("Erf", []string{e.node("Mul", []string{xn, e.scalar(l.name+"/rsqrt2", 1/math.Sqrt2)}, ref+"/scaled")}, ref+"/erf")
		half := e.node("Mul", []string{xn, e.scalar(l.name+"/half", 0.5)}, ref+"/half")
		y := e.node("Mul", []string{half, e.node("Add", []string{t, e.scalar(l.name+"/one", 1)}, ref+"/erf_plus_one")}, ref)
		return withName(x.shape, y, cf), nil
	case "softplus":
		return unary("Softplus")
	case "leaky_relu":
		return unary("LeakyRelu", attrFloat("alpha", 0.2))
	case "silu", "swish":
		s := e.node("Sigmoid", []string{xn}, ref+"/sigmoid")
		return withName(x.shape, e.node("Mul", []string{xn, s}, ref), cf), nil
	}
	return nil, fmt.Errorf("onnx: export: layer %s cannot be exported: activation %q has no ONNX mapping", l, name)
}
