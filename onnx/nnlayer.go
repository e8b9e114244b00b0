package onnx

import (
	"encoding/binary"
	"fmt"
	"io"
	"math"

	"google.golang.org/protobuf/proto"

	"github.com/tartanml/tartan/onnx/internal/pb"

	"github.com/tartanml/tartan/nn"
	"github.com/tartanml/tartan/tile"
)

// nnLayer is an ONNX model as an nn layer definition (see NNLayer).
type nnLayer struct {
	m        *Model
	in, out  ValueInfo
	inType   tile.DType
	params   []*Tensor // the float32 initializers, which become weights
	names    []string  // their weight names
	weights  []*nn.Weight
	outShape tile.Shape // per sample
}

// NNLayer returns the model as the definition of an nn layer, for
// nn.Custom: it computes the model's one graph output from its one graph
// input, whose leading dimension is the batch, with every float32
// initializer of rank 1 or more a trainable weight of the layer, so that nn's Fit fine-tunes
// the model with any optimizer on any device. The weights are named as
// WeightName says; NNModel gives them the initializers' values (nn.Custom
// alone starts them at zero). Inputs of another element type than float32
// (token ids, say) are converted from nn's float32; an output of another
// type is converted to float32. Models of several inputs or outputs, or of
// sequences, are refused.
func (m *Model) NNLayer() (nn.LayerDef, error) {
	if len(m.Inputs) != 1 || len(m.Outputs) != 1 {
		return nil, fmt.Errorf("onnx: NNLayer: the model has %d inputs and %d outputs; an nn layer of it needs one of each", len(m.Inputs), len(m.Outputs))
	}
	l := &nnLayer{m: m, in: m.Inputs[0], out: m.Outputs[0]}
	if l.in.Sequence || l.out.Sequence {
		return nil, fmt.Errorf("onnx: NNLayer: sequence inputs and outputs cannot be an nn layer")
	}
	dt, ok := l.in.Type.Storage()
	if !ok {
		return nil, fmt.Errorf("onnx: NNLayer: input %q: %s tensors are not supported", l.in.Name, l.in.Type)
	}
	l.inType = dt
	l.params, l.names = m.weightInitializers()
	return l, nil
}

// weightInitializers returns the initializers NNLayer makes weights of,
// with their weight names.
func (m *Model) weightInitializers() (params []*Tensor, names []string) {
	seen := map[string]bool{}
	for _, t := range m.Initializers {
		if t.Type != Float || len(t.Dims) == 0 {
			continue // scalars and other types stay constants
		}
		name := WeightName(t.Name)
		for base, k := name, 1; seen[name]; k++ {
			name = fmt.Sprintf("%s_%d", base, k)
		}
		seen[name] = true
		params = append(params, t)
		names = append(names, name)
	}
	return params, names
}

// WriteFineTuned writes the model to w as ONNX, its float32 initializers
// replaced by the current values of the weights NNLayer made of them in
// the layer called layer of model ("onnx" for NNModel's): a model
// fine-tuned with Fit goes back to ONNX, its nodes, opsets and metadata as
// they were read. Initializers read from external data are written inline.
func (m *Model) WriteFineTuned(w io.Writer, model *nn.Model, layer string) error {
	if m.src == nil {
		return fmt.Errorf("onnx: WriteFineTuned: the model was not read from a file")
	}
	if model == nil {
		return fmt.Errorf("onnx: WriteFineTuned: nil nn model")
	}
	params, names := m.weightInitializers()
	byName := map[string]string{}
	for i, t := range params {
		byName[t.Name] = names[i]
	}
	out := proto.Clone(m.src).(*pb.ModelProto)
	for _, tp := range out.GetGraph().GetInitializer() {
		wname, ok := byName[tp.GetName()]
		if !ok {
			continue
		}
		a, err := model.GetWeight(layer + "/" + wname)
		if err != nil {
			return fmt.Errorf("onnx: WriteFineTuned: initializer %q: %w", tp.GetName(), err)
		}
		n := int64(1)
		for _, d := range tp.GetDims() {
			n *= d
		}
		if int64(len(a.Data)) != n {
			return fmt.Errorf("onnx: WriteFineTuned: weight %s/%s holds %d values, initializer %q %d", layer, wname, len(a.Data), tp.GetName(), n)
		}
		raw := make([]byte, 4*len(a.Data))
		for i, v := range a.Data {
			binary.LittleEndian.PutUint32(raw[4*i:], math.Float32bits(v))
		}
		tp.RawData, tp.FloatData, tp.ExternalData = raw, nil, nil
		tp.DataLocation = nil
	}
	b, err := proto.Marshal(out)
	if err != nil {
		return fmt.Errorf("onnx: WriteFineTuned: %w", err)
	}
	if int64(len(b)) > MaxModelBytes {
		return fmt.Errorf("onnx: WriteFineTuned: the model would take %d bytes, more than ONNX's protocol buffers hold", len(b))
	}
	_, err = w.Write(b)
	return err
}

// WeightName is the name under which NNLayer holds the initializer of
// ONNX name: characters nn does not take in a weight's name become '_',
// and a name that starts with a digit gains a leading 'w'. (Two names that
// map to one get a suffix _1, _2, … in the order of the initializers.)
func WeightName(name string) string {
	b := []byte(name)
	for i, c := range b {
		if !(c == '_' || c == '.' || c == '-' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9') {
			b[i] = '_'
		}
	}
	if len(b) == 0 || b[0] >= '0' && b[0] <= '9' {
		b = append([]byte{'w'}, b...)
	}
	return string(b)
}

// Build checks the per-sample input shape against the model's input,
// declares the weights and finds the per-sample output shape by converting
// the model for a batch of 2.
func (l *nnLayer) Build(b *nn.LayerBuilder, in []tile.Shape) (tile.Shape, error) {
	if len(in) != 1 {
		return nil, fmt.Errorf("takes one input, got %d", len(in))
	}
	if !l.in.HasShape || len(l.in.Shape) != len(in[0])+1 {
		return nil, fmt.Errorf("ONNX input %q %s does not take samples of shape %v (its first dimension is the batch)", l.in.Name, declared(l.in), in[0])
	}
	for d, dim := range l.in.Shape[1:] {
		if dim.Value >= 0 && int64(in[0][d]) != dim.Value {
			return nil, fmt.Errorf("ONNX input %q %s does not take samples of shape %v", l.in.Name, declared(l.in), in[0])
		}
	}
	for i, t := range l.params {
		l.weights = append(l.weights, b.AddWeight(l.names[i], t.Shape(), nn.Zeros(), true))
	}
	g := tile.NewGraph("onnx_shape")
	x := g.Input("x", l.inType, append(tile.Shape{2}, in[0]...))
	outs, err := l.m.Apply(g, map[string]*tile.Tensor{l.in.Name: x}, nil)
	if err != nil {
		return nil, err
	}
	y := outs[l.out.Name]
	if y == nil || y.Rank() == 0 || y.Dim(0) != 2 {
		return nil, fmt.Errorf("ONNX output %q does not keep the batch as its first dimension", l.out.Name)
	}
	l.outShape = y.Shape()[1:].Clone()
	return l.outShape, nil
}

// Call converts the model into the step's graph, the weights standing for
// the initializers.
func (l *nnLayer) Call(c *nn.CallContext, in []*tile.Tensor) *tile.Tensor {
	g := c.Graph()
	x := in[0]
	if l.inType != tile.Float32 {
		x = g.Cast(x, l.inType)
	}
	ws := map[string]*tile.Tensor{}
	for i, t := range l.params {
		ws[t.Name] = c.Weight(l.weights[i])
	}
	outs, err := l.m.Apply(g, map[string]*tile.Tensor{l.in.Name: x}, ws)
	if err != nil {
		return g.Errorf("onnx", "%v", err)
	}
	y := outs[l.out.Name]
	if y.DType() != tile.Float32 {
		y = g.Cast(y, tile.Float32)
	}
	return y
}

// NNModel returns the model as an nn model named name: an Input of the
// ONNX input's per-sample shape (its dimensions after the batch must be
// fixed) and one layer of class "ONNX", named "onnx", made by NNLayer, its
// weights set to the initializers' values. It predicts what the ONNX model
// computes, and compiles and fits like any nn model; to add layers around
// it (a new head for fine-tuning), build a model with nn.Custom("ONNX",
// def) of NNLayer's def and set the weights with SetWeight. Such a model
// saves its weights (SaveWeights, checkpoints); Save refuses it, since the
// ONNX graph is not part of an nn architecture.
func (m *Model) NNModel(name string) (*nn.Model, error) {
	def, err := m.NNLayer()
	if err != nil {
		return nil, err
	}
	l := def.(*nnLayer)
	if !l.in.HasShape || len(l.in.Shape) < 1 {
		return nil, fmt.Errorf("onnx: NNModel: input %q declares no shape with a batch dimension", l.in.Name)
	}
	var sample []int
	for d, dim := range l.in.Shape[1:] {
		if dim.Value < 0 {
			return nil, fmt.Errorf("onnx: NNModel: input %q %s: dimension %d is open; only the batch may be", l.in.Name, declared(l.in), d+1)
		}
		sample = append(sample, int(dim.Value))
	}
	model, err := nn.Sequential(name, nn.Input(sample...), nn.Custom("ONNX", def, nn.Name("onnx")))
	if err != nil {
		return nil, err
	}
	for i, t := range l.params {
		v, err := t.Value()
		if err != nil {
			return nil, fmt.Errorf("onnx: NNModel: initializer %q: %w", t.Name, err)
		}
		a, err := nn.NewArray(v.Float32s(), v.Shape...)
		if err != nil {
			return nil, fmt.Errorf("onnx: NNModel: initializer %q: %w", t.Name, err)
		}
		if err := model.SetWeight("onnx/"+l.names[i], a); err != nil {
			return nil, err
		}
	}
	return model, nil
}

// declared formats an input's declared shape for messages.
func declared(in ValueInfo) string {
	s := in.Type.String() + "["
	for i, d := range in.Shape {
		if i > 0 {
			s += ", "
		}
		s += d.String()
	}
	return s + "]"
}

// OutputOp returns the op type of the node that computes the graph output
// called name, looking back through the nodes that only move or rename
// values (Identity, Reshape, Flatten, Squeeze, Unsqueeze) to the node
// that computes them, as in a classifier ending in Softmax and a Flatten.
// It returns "" when the value comes from no node (a graph input or an
// initializer) or no graph output has that name.
func (m *Model) OutputOp(name string) string {
	isOutput := false
	for _, o := range m.Outputs {
		isOutput = isOutput || o.Name == name
	}
	if !isOutput {
		return ""
	}
	producer := map[string]*pb.NodeProto{}
	for _, n := range m.nodes {
		for _, o := range n.GetOutput() {
			producer[o] = n
		}
	}
	for range len(m.nodes) + 1 {
		n := producer[name]
		if n == nil || len(n.GetInput()) == 0 {
			break
		}
		switch n.GetOpType() {
		case "Identity", "Reshape", "Flatten", "Squeeze", "Unsqueeze":
			if n.GetDomain() == "" || n.GetDomain() == "ai.onnx" {
				name = n.GetInput()[0]
				continue
			}
		}
		if n.GetDomain() != "" && n.GetDomain() != "ai.onnx" {
			return n.GetDomain() + "." + n.GetOpType()
		}
		return n.GetOpType()
	}
	return ""
}
