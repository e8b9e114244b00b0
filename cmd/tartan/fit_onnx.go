package main

import (
	"bytes"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/tartanml/tartan/data"
	"github.com/tartanml/tartan/nn"
	"github.com/tartanml/tartan/onnx"
)

// onnxLayer is the name of the layer that holds an ONNX --model in the nn
// model fit trains; WriteFineTuned reads its weights back by that name.
const onnxLayer = "onnx"

// onnxClassifier is an ONNX --model made an nn model that takes the images
// of a data set.
type onnxClassifier struct {
	src   *onnx.Model
	model *nn.Model
	// probabilities says that the output ends in Softmax (else it is
	// taken for logits); lastOp is the op type of that last node.
	probabilities bool
	lastOp        string
	// about describes the input and output, for the line fit prints.
	about string
}

// loadONNXModel reads the ONNX --model at path.
func loadONNXModel(path string) (*onnx.Model, error) {
	m, err := onnx.Load(path)
	if err != nil {
		return nil, fmt.Errorf("--model: %w", err) // the error names the file
	}
	return m, nil
}

// dimsText formats a declared ONNX shape, "[N, 1, 28, 28]", or says that
// there is none.
func dimsText(v onnx.ValueInfo) string {
	if !v.HasShape {
		return "(no declared shape)"
	}
	var s []string
	for _, d := range v.Shape {
		s = append(s, d.String())
	}
	return "[" + strings.Join(s, ", ") + "]"
}

// newONNXClassifier makes the ONNX model src (from the file path) an nn
// model that fit trains on d: its one graph input takes d's images,
// channels last (N, H, W, C) as d holds them, channels first (N, 1, H, W)
// through a Reshape (which for one channel moves no element), or
// flattened (N, H·W·C), the batch dimension open; its one graph output
// gives one score per class of d, (N, classes). Its initializers start as
// the file's and are trainable weights of the layer named onnxLayer.
func newONNXClassifier(path string, src *onnx.Model, d *data.Dataset) (*onnxClassifier, error) {
	h, w, c := d.H, d.W, d.C
	what := "--model " + path
	expected := fmt.Sprintf("[N, %d, %d, %d] (channels last) or [N, %d] (flattened)", h, w, c, h*w*c)
	if c == 1 {
		expected = fmt.Sprintf("[N, %d, %d, %d] (channels first), ", c, h, w) + expected
	}
	var names []string
	for _, in := range src.Inputs {
		names = append(names, fmt.Sprintf("%q %s", in.Name, dimsText(in)))
	}
	if len(src.Inputs) != 1 {
		return nil, fmt.Errorf("%s has %d inputs besides its initializers (%s); fit feeds one, the images of %s, of shape %s",
			what, len(src.Inputs), strings.Join(names, ", "), d.Name, expected)
	}
	var outNames []string
	for _, out := range src.Outputs {
		outNames = append(outNames, fmt.Sprintf("%q %s", out.Name, dimsText(out)))
	}
	if len(src.Outputs) != 1 {
		return nil, fmt.Errorf("%s has %d outputs (%s); fit trains one, the scores of the %d classes of %s, of shape [N, %d]",
			what, len(src.Outputs), strings.Join(outNames, ", "), d.Classes, d.Name, d.Classes)
	}
	in, out := src.Inputs[0], src.Outputs[0]
	bad := func(why string) error {
		return fmt.Errorf("%s: input %q %s %s; fit feeds it the images of %s, of shape %s, N the batch", what, in.Name, dimsText(in), why, d.Name, expected)
	}
	if in.Sequence || !in.HasShape || len(in.Shape) == 0 {
		return nil, bad("is not a tensor of declared shape")
	}
	if in.Shape[0].Value >= 0 {
		return nil, bad(fmt.Sprintf("has a batch dimension fixed at %d, where fit's batches vary in size (the last of an epoch is smaller)", in.Shape[0].Value))
	}
	matches := func(want ...int) bool {
		if len(in.Shape) != len(want)+1 {
			return false
		}
		for i, n := range want {
			if in.Shape[i+1].Value != int64(n) {
				return false
			}
		}
		return true
	}
	var adapter nn.Layer
	var layout string
	switch {
	case matches(h, w, c):
		layout = "channels last"
	case c == 1 && matches(1, h, w):
		adapter, layout = nn.Reshape([]int{1, h, w}, nn.Name("to_channels_first")), "channels first"
	case matches(h * w * c):
		adapter, layout = nn.Flatten(nn.Name("flatten_images")), "flattened"
	default:
		return nil, bad("does not take them")
	}
	def, err := src.NNLayer()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	// NNModel holds the initializers' values as weights of its layer
	// onnxLayer; the model fit trains takes them over.
	init, err := src.NNModel("onnx_initializers")
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	name := onnx.WeightName(strings.TrimSuffix(filepath.Base(path), filepath.Ext(path)))
	layers := []nn.Layer{}
	if adapter != nil {
		layers = append(layers, adapter)
	}
	layers = append(layers, nn.Custom("ONNX", def, nn.Name(onnxLayer)))
	m, err := nn.Sequential(name, nn.Input(h, w, c), layers...)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	for _, wt := range init.Weights() {
		a, err := init.GetWeight(wt.Name())
		if err == nil {
			err = m.SetWeight(wt.Name(), a)
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", what, err)
		}
	}
	if got := m.OutputShape(); len(got) != 1 || got[0] != d.Classes {
		return nil, fmt.Errorf("%s: output %q %s gives samples of shape %v; fit trains a classifier of the %d classes of %s, whose output is [N, %d], one score per class",
			what, out.Name, dimsText(out), got, d.Classes, d.Name, d.Classes)
	}
	oc := &onnxClassifier{src: src, model: m, lastOp: src.OutputOp(out.Name)}
	oc.probabilities = oc.lastOp == "Softmax"
	kind := "logits (it ends in " + oc.lastOp + ", not Softmax): the loss is the cross-entropy from logits"
	if oc.lastOp == "" {
		kind = "logits (no node computes it): the loss is the cross-entropy from logits"
	}
	if oc.probabilities {
		kind = "probabilities (it ends in Softmax): the loss is the cross-entropy of probabilities"
	}
	oc.about = fmt.Sprintf("ONNX input %q %s takes the images %s; output %q %s gives %s",
		in.Name, dimsText(in), layout, out.Name, dimsText(out), kind)
	return oc, nil
}

// loss is the loss fit trains the classifier with: sparse categorical
// cross-entropy, from logits unless the output ends in Softmax.
func (oc *onnxClassifier) loss() nn.Loss {
	if oc.probabilities {
		return nn.SparseCategoricalCrossentropy()
	}
	return nn.SparseCategoricalCrossentropy(nn.FromLogits())
}

// save writes the ONNX model with the fine-tuned weights to path (through
// writeAtomic, as every output).
func (oc *onnxClassifier) save(path string) error {
	var buf bytes.Buffer
	if err := oc.src.WriteFineTuned(&buf, oc.model, onnxLayer); err != nil {
		return fmt.Errorf("--save %s: %w", path, err)
	}
	return writeAtomic(path, buf.Bytes())
}
