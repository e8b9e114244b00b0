package nn

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
)

// The architecture of a model is kept as JSON, in the manner of Keras's
// model.to_json(): the layers' classes and constructor arguments, and for a
// functional model how they connect.
//
//	{"format": "tartan.architecture", "version": 1,
//	 "class_name": "Sequential", "name": "fashion_cnn",
//	 "layers": [{"class_name": "InputLayer", "config": {"name": "input_layer", "shape": [28, 28, 1]}},
//	            {"class_name": "Conv2D", "config": {"name": "conv2d", "filters": 64, …}}, …]}
//
// A functional model adds "nodes", every layer call in a topological order
// ({"layer": "add", "inbound": ["dense", "dense_1"]}), and the "inputs" and
// "outputs" node references. A reference is a layer's name for its first
// call and "name:k" for its call k (from 0); both mean the call's first
// output. Output j > 0 of call k of a layer of several outputs (a recurrent
// layer with return_state) is "name:k:j", as Keras's inbound node
// [name, k, j]: {"layer": "dense", "inbound": ["lstm:0:1"]} takes the first
// call's h.

const archFormat = "tartan.architecture"

type archDoc struct {
	Format    string      `json:"format"`
	Version   int         `json:"version"`
	ClassName string      `json:"class_name"`
	Name      string      `json:"name"`
	Layers    []archLayer `json:"layers"`
	Nodes     []archNode  `json:"nodes,omitempty"`
	Inputs    []string    `json:"inputs,omitempty"`
	Outputs   []string    `json:"outputs,omitempty"`
}

type archLayer struct {
	ClassName string          `json:"class_name"`
	Config    json.RawMessage `json:"config"`
}

type archNode struct {
	Layer   string   `json:"layer"`
	Inbound []string `json:"inbound"`
}

// Architecture returns the model's architecture as JSON; LoadArchitecture
// rebuilds the model from it (with fresh weights).
func (m *Model) Architecture() ([]byte, error) {
	doc := archDoc{Format: archFormat, Version: 1, ClassName: m.class, Name: m.name}
	for _, l := range m.layers {
		if err := savable(l); err != nil {
			return nil, err
		}
		cfg, err := json.Marshal(l.config())
		if err != nil {
			return nil, fmt.Errorf("nn: encoding layer %s: %w", layerDesc(l), err)
		}
		doc.Layers = append(doc.Layers, archLayer{ClassName: l.ClassName(), Config: cfg})
	}
	if m.class == "Functional" {
		refs := m.nodeRefs()
		calls, _ := m.calls()
		for _, n := range calls {
			if len(n.in) == 0 {
				continue
			}
			an := archNode{Layer: n.layer.Name()}
			for _, x := range n.in {
				an.Inbound = append(an.Inbound, refs[x])
			}
			doc.Nodes = append(doc.Nodes, an)
		}
		for _, n := range m.inputs {
			doc.Inputs = append(doc.Inputs, refs[n])
		}
		for _, n := range m.outputs {
			doc.Outputs = append(doc.Outputs, refs[n])
		}
	}
	return json.Marshal(doc)
}

// nodeRefs names every node: its layer's name, with ":k" for call k > 0,
// and ":k:j" for output j > 0 of call k.
func (m *Model) nodeRefs() map[*Node]string {
	refs := map[*Node]string{}
	_, calls := m.calls()
	for _, n := range m.nodes {
		refs[n] = nodeRef(n.layer.Name(), calls[n.call()], n.index)
	}
	return refs
}

// nodeRef is the reference of output j of call k of the layer called name.
func nodeRef(name string, k, j int) string {
	switch {
	case j > 0:
		return name + ":" + strconv.Itoa(k) + ":" + strconv.Itoa(j)
	case k > 0:
		return name + ":" + strconv.Itoa(k)
	}
	return name
}

// LoadArchitecture builds a model from JSON written by Architecture. Its
// weights are drawn afresh, as InitWeights(0) draws them.
func LoadArchitecture(js []byte) (*Model, error) {
	m, err := decodeArchitecture(js)
	if err != nil {
		return nil, &nestedError{err: err}
	}
	return initialized(m, nil)
}

// decodeArchitecture builds a model from architecture JSON without drawing
// its weights: every size is checked, nothing of the weights' size is
// allocated. Its errors lack the "nn: " prefix: callers give them context
// (LoadArchitecture none, Load the file's path).
func decodeArchitecture(js []byte) (*Model, error) {
	var doc archDoc
	if err := strictJSON(js, &doc); err != nil {
		return nil, fmt.Errorf("architecture: %w", err)
	}
	if doc.Format != archFormat || doc.Version != 1 {
		return nil, fmt.Errorf("architecture: format %q version %d is not %s version 1", doc.Format, doc.Version, archFormat)
	}
	layers := map[string]Layer{}
	inputs := map[string]*Node{}
	var ordered []Layer
	for i, al := range doc.Layers {
		l, in, err := decodeLayer(al)
		if err != nil {
			position := fmt.Sprintf("architecture: layer %d", i)
			if le, ok := err.(*layerError); ok {
				return nil, textError{le.at(position, le.layer.Name()), le}
			}
			return nil, fmt.Errorf("%s (%s): %w", position, al.ClassName, err)
		}
		name := l.Name()
		if name == "" || layers[name] != nil {
			return nil, fmt.Errorf("architecture: layer %d (%s) has an empty or repeated name %q", i, al.ClassName, name)
		}
		layers[name] = l
		ordered = append(ordered, l)
		if in != nil {
			inputs[name] = in
		}
	}
	switch doc.ClassName {
	case "Sequential":
		if len(ordered) < 2 || inputs[ordered[0].Name()] == nil || len(inputs) != 1 {
			return nil, fmt.Errorf("architecture: a Sequential model needs one InputLayer first and at least one layer after it")
		}
		m, err := sequential(doc.Name, inputs[ordered[0].Name()], ordered[1:])
		return m, bare(err)
	case "Functional":
		nodes := map[string]*Node{}
		for name, n := range inputs {
			nodes[name] = n
		}
		calls := map[string]int{}
		for i, an := range doc.Nodes {
			l := layers[an.Layer]
			if l == nil {
				return nil, fmt.Errorf("architecture: node %d uses unknown layer %q", i, an.Layer)
			}
			var in []*Node
			for _, ref := range an.Inbound {
				x := nodes[ref]
				if x == nil {
					return nil, fmt.Errorf("architecture: node %d (%s) takes %q, which is not defined before it", i, an.Layer, ref)
				}
				in = append(in, x)
			}
			outs := ApplyAll(l, in...)
			if err := outs[0].err; err != nil {
				return nil, bare(nestf(err, "architecture: node %d", i))
			}
			k := calls[an.Layer]
			calls[an.Layer]++
			for j, n := range outs {
				nodes[nodeRef(an.Layer, k, j)] = n
			}
		}
		pick := func(refs []string, what string) ([]*Node, error) {
			var out []*Node
			for _, r := range refs {
				n := nodes[r]
				if n == nil {
					return nil, fmt.Errorf("architecture: %s %q is not a node", what, r)
				}
				out = append(out, n)
			}
			return out, nil
		}
		ins, err := pick(doc.Inputs, "input")
		if err != nil {
			return nil, err
		}
		outs, err := pick(doc.Outputs, "output")
		if err != nil {
			return nil, err
		}
		m, err := assemble(doc.Name, "Functional", ins, outs)
		return m, bare(err)
	}
	return nil, fmt.Errorf("architecture: unknown model class %q (want Sequential or Functional)", doc.ClassName)
}

// strictJSON decodes js into v, rejecting unknown fields and trailing data.
func strictJSON(js []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(js))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if dec.More() {
		return fmt.Errorf("unexpected data after the JSON value")
	}
	return nil
}

// decodeLayer rebuilds one layer from its class and config; an InputLayer
// also gets its node.
func decodeLayer(al archLayer) (Layer, *Node, error) {
	dec := func(v any) error { return strictJSON(al.Config, v) }
	var l Layer
	var err error
	switch al.ClassName {
	case "InputLayer":
		var c inputConfig
		if err = dec(&c); err == nil {
			n := newInput(c)
			if n.err != nil {
				return nil, nil, argumentError(n.layer, n.err)
			}
			return n.layer, n, nil
		}
	case "Dense":
		var c denseConfig
		if err = dec(&c); err == nil {
			l = newDense(c, nil)
		}
	case "Conv1D", "Conv2D", "DepthwiseConv2D":
		var c convConfig
		if err = dec(&c); err == nil {
			l = newConv(al.ClassName, c, nil)
		}
	case "MaxPooling2D", "AveragePooling2D":
		var c poolConfig
		if err = dec(&c); err == nil {
			l = newPool(al.ClassName, c, nil)
		}
	case "GlobalAveragePooling2D", "GlobalMaxPooling2D":
		var c layerCommon
		if err = dec(&c); err == nil {
			l = newGlobalPool(al.ClassName, c, nil)
		}
	case "Flatten":
		var c layerCommon
		if err = dec(&c); err == nil {
			l = newFlatten(c, nil)
		}
	case "Reshape":
		var c reshapeConfig
		if err = dec(&c); err == nil {
			l = newReshape(c, nil)
		}
	case "Dropout":
		var c dropoutConfig
		if err = dec(&c); err == nil {
			l = newDropout(c, nil)
		}
	case "BatchNormalization":
		var c batchNormConfig
		if err = dec(&c); err == nil {
			l = newBatchNorm(c, nil)
		}
	case "LayerNormalization":
		var c layerNormConfig
		if err = dec(&c); err == nil {
			l = newLayerNorm(c, nil)
		}
	case "Activation":
		var c activationConfig
		if err = dec(&c); err == nil {
			l = newActivation(c, nil)
		}
	case "ReLU":
		var c reluConfig
		if err = dec(&c); err == nil {
			l = newReLU(c, nil)
		}
	case "Softmax":
		var c softmaxConfig
		if err = dec(&c); err == nil {
			l = newSoftmax(c, nil)
		}
	case "Add":
		var c layerCommon
		if err = dec(&c); err == nil {
			l = newAdd(c, nil)
		}
	case "Concatenate":
		var c concatConfig
		if err = dec(&c); err == nil {
			l = newConcat(c, nil)
		}
	case "Embedding":
		var c embeddingConfig
		if err = dec(&c); err == nil {
			l = newEmbedding(c, nil)
		}
	case "SimpleRNN", "LSTM", "GRU":
		var c recurrentConfig
		if err = dec(&c); err == nil {
			l = newRecurrent(al.ClassName, c, nil)
		}
	case "Bidirectional":
		var c bidirectionalConfig
		if err = dec(&c); err == nil {
			l = newBidirectional(c, nil)
		}
	case "Masking":
		var c maskingConfig
		if err = dec(&c); err == nil {
			l = newMasking(c, nil)
		}
	case "ZeroPadding2D", "Cropping2D":
		var c padCropConfig
		if err = dec(&c); err == nil {
			l = newPadCrop(al.ClassName, c, nil)
		}
	case "UpSampling2D":
		var c upSamplingConfig
		if err = dec(&c); err == nil {
			l = newUpSampling(c, nil)
		}
	case "Rescaling":
		var c rescalingConfig
		if err = dec(&c); err == nil {
			l = newRescaling(c, nil)
		}
	case "Conv1DTranspose", "Conv2DTranspose":
		var c convTransposeConfig
		if err = dec(&c); err == nil {
			l = newConvTranspose(al.ClassName, c, nil)
		}
	case "SeparableConv2D":
		var c separableConfig
		if err = dec(&c); err == nil {
			l = newSeparable(c, nil)
		}
	case "MaxPooling1D", "AveragePooling1D":
		var c poolConfig
		if err = dec(&c); err == nil {
			l = newPool1D(al.ClassName, c, nil)
		}
	case "GlobalAveragePooling1D", "GlobalMaxPooling1D":
		var c layerCommon
		if err = dec(&c); err == nil {
			l = newGlobalPool1D(al.ClassName, c, nil)
		}
	case "RandomFlip":
		var c randomFlipConfig
		if err = dec(&c); err == nil {
			l = newRandomFlip(c, nil)
		}
	case "RandomContrast":
		var c randomContrastConfig
		if err = dec(&c); err == nil {
			l = newRandomContrast(c, nil)
		}
	case "RandomCrop":
		var c randomCropConfig
		if err = dec(&c); err == nil {
			l = newRandomCrop(c, nil)
		}
	case "RandomTranslation":
		var c randomTranslationConfig
		if err = dec(&c); err == nil {
			l = newRandomTranslation(c, nil)
		}
	case "ZeroPadding1D", "Cropping1D":
		var c padCrop1DConfig
		if err = dec(&c); err == nil {
			l = newPadCrop1D(al.ClassName, c, nil)
		}
	case "UpSampling1D":
		var c upSampling1DConfig
		if err = dec(&c); err == nil {
			l = newUpSampling1D(c, nil)
		}
	case "MultiHeadAttention":
		var c attentionConfig
		if err = dec(&c); err == nil {
			l = newAttention(c, nil)
		}
	case "PositionEmbedding":
		var c positionEmbeddingConfig
		if err = dec(&c); err == nil {
			l = newPositionEmbedding(c, nil)
		}
	default:
		return decodeCustom(al) // a Lambda or a registered class
	}
	if err != nil {
		return nil, nil, fmt.Errorf("config: %w", err)
	}
	if e := l.base().err; e != nil {
		return nil, nil, argumentError(l, e)
	}
	return l, nil, nil
}

// archDiff describes the first difference between the architecture of a
// model (want) and one read from a file (got), or returns "" when they
// agree. The model's name is ignored. Layers are compared field by field,
// as JSON values (numbers by value), so the message names the first layer
// and field that differ, with both values.
func archDiff(want, got []byte) string {
	var a, b archDoc
	if json.Unmarshal(want, &a) != nil {
		return "the model's architecture cannot be encoded"
	}
	if err := json.Unmarshal(got, &b); err != nil {
		return fmt.Sprintf("the file's architecture cannot be read: %v", err)
	}
	if a.ClassName != b.ClassName {
		return fmt.Sprintf("the file holds a %s model, this is a %s one", b.ClassName, a.ClassName)
	}
	for i := range max(len(a.Layers), len(b.Layers)) {
		switch {
		case i >= len(a.Layers):
			return fmt.Sprintf("the file has %d layers, the model %d: the file's layer %d is %s", len(b.Layers), len(a.Layers), i, archLayerDesc(b.Layers[i]))
		case i >= len(b.Layers):
			return fmt.Sprintf("the file has %d layers, the model %d: the model's layer %d is %s", len(b.Layers), len(a.Layers), i, archLayerDesc(a.Layers[i]))
		}
		la, lb := a.Layers[i], b.Layers[i]
		if la.ClassName != lb.ClassName {
			return fmt.Sprintf("layer %d is %s in the file but %s in the model", i, archLayerDesc(lb), archLayerDesc(la))
		}
		ca, err := decodeOrdered(la.Config)
		if err != nil {
			return fmt.Sprintf("layer %d (%s) of the model cannot be compared: %v", i, archLayerDesc(la), err)
		}
		cb, err := decodeOrdered(lb.Config)
		if err != nil {
			return fmt.Sprintf("layer %d (%s) of the file cannot be read: %v", i, archLayerDesc(lb), err)
		}
		if field, va, vb, differ := jsonDiff("", ca, cb); differ {
			return fmt.Sprintf("layer %d, %s: %s is %s in the file but %s in the model", i, archLayerDesc(la), field, vb, va)
		}
	}
	var parts []string
	if !slices.EqualFunc(a.Nodes, b.Nodes, func(x, y archNode) bool { return x.Layer == y.Layer && slices.Equal(x.Inbound, y.Inbound) }) {
		parts = append(parts, fmt.Sprintf("the layers connect differently (the file's nodes %v, the model's %v)", b.Nodes, a.Nodes))
	}
	if !slices.Equal(a.Inputs, b.Inputs) || !slices.Equal(a.Outputs, b.Outputs) {
		parts = append(parts, fmt.Sprintf("the inputs or outputs differ (the file's %v → %v, the model's %v → %v)", b.Inputs, b.Outputs, a.Inputs, a.Outputs))
	}
	return strings.Join(parts, "; ")
}

// archLayerDesc names a layer of an architecture: "dropout (Dropout)".
func archLayerDesc(l archLayer) string {
	var c struct {
		Name string `json:"name"`
	}
	if json.Unmarshal(l.Config, &c) != nil || c.Name == "" {
		return l.ClassName
	}
	return c.Name + " (" + l.ClassName + ")"
}

// orderedObject is a JSON object with its keys in the order written.
type orderedObject struct {
	keys []string
	vals map[string]any
}

// decodeOrdered decodes one JSON value: objects become orderedObjects,
// arrays []any, numbers json.Number.
func decodeOrdered(js []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(js))
	dec.UseNumber()
	v, err := decodeOrderedValue(dec, 0)
	if err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("unexpected data after the JSON value")
	}
	return v, nil
}

// maxJSONDepth bounds the nesting decodeOrdered follows.
const maxJSONDepth = 64

func decodeOrderedValue(dec *json.Decoder, depth int) (any, error) {
	if depth > maxJSONDepth {
		return nil, errors.New("JSON nested too deeply")
	}
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	switch tok {
	case json.Delim('{'):
		o := orderedObject{vals: map[string]any{}}
		for dec.More() {
			kt, err := dec.Token()
			if err != nil {
				return nil, err
			}
			k, _ := kt.(string)
			v, err := decodeOrderedValue(dec, depth+1)
			if err != nil {
				return nil, err
			}
			if _, dup := o.vals[k]; !dup {
				o.keys = append(o.keys, k)
			}
			o.vals[k] = v
		}
		_, err := dec.Token()
		return o, err
	case json.Delim('['):
		var out []any
		for dec.More() {
			v, err := decodeOrderedValue(dec, depth+1)
			if err != nil {
				return nil, err
			}
			out = append(out, v)
		}
		_, err := dec.Token()
		return out, err
	}
	return tok, nil
}

// jsonDiff finds the first difference between a (the model's value) and b
// (the file's) at path: its path ("rate", "kernel_initializer.name",
// "shape[1]") and both values as JSON ("absent" for a missing field).
func jsonDiff(path string, a, b any) (field, va, vb string, differ bool) {
	at := func(sub string) string {
		if path == "" {
			return sub
		}
		return path + "." + sub
	}
	switch x := a.(type) {
	case orderedObject:
		y, ok := b.(orderedObject)
		if !ok {
			break
		}
		for _, k := range x.keys {
			yv, ok := y.vals[k]
			if !ok {
				return at(k), jsonText(x.vals[k]), "absent", true
			}
			if f, va, vb, d := jsonDiff(at(k), x.vals[k], yv); d {
				return f, va, vb, true
			}
		}
		for _, k := range y.keys {
			if _, ok := x.vals[k]; !ok {
				return at(k), "absent", jsonText(y.vals[k]), true
			}
		}
		return "", "", "", false
	case []any:
		y, ok := b.([]any)
		if !ok || len(x) != len(y) {
			break
		}
		for i := range x {
			if f, va, vb, d := jsonDiff(fmt.Sprintf("%s[%d]", path, i), x[i], y[i]); d {
				return f, va, vb, true
			}
		}
		return "", "", "", false
	case json.Number:
		if y, ok := b.(json.Number); ok && sameNumber(x, y) {
			return "", "", "", false
		}
	default:
		if a == b {
			return "", "", "", false
		}
	}
	if path == "" {
		path = "the config"
	}
	return path, jsonText(a), jsonText(b), true
}

// sameNumber compares two JSON numbers by value.
func sameNumber(x, y json.Number) bool {
	if x == y {
		return true
	}
	fx, ex := strconv.ParseFloat(string(x), 64)
	fy, ey := strconv.ParseFloat(string(y), 64)
	return ex == nil && ey == nil && fx == fy
}

// jsonText writes a decodeOrdered value back as compact JSON.
func jsonText(v any) string {
	switch x := v.(type) {
	case orderedObject:
		parts := make([]string, len(x.keys))
		for i, k := range x.keys {
			parts[i] = strconv.Quote(k) + ":" + jsonText(x.vals[k])
		}
		return "{" + strings.Join(parts, ",") + "}"
	case []any:
		parts := make([]string, len(x))
		for i, e := range x {
			parts[i] = jsonText(e)
		}
		return "[" + strings.Join(parts, ",") + "]"
	case nil:
		return "null"
	case string:
		b, _ := json.Marshal(x)
		return string(b)
	}
	return fmt.Sprint(v)
}
