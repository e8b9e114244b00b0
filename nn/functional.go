package nn

import (
	"errors"
	"fmt"
	"slices"

	"github.com/tartanml/tartan/tile"
)

// Node is a symbolic tensor of a functional model: the output of an Input or
// of a layer applied to other nodes. Its shape is per sample (without the
// batch dimension). A node made from bad arguments carries the error, and
// every node computed from it carries it too, so a chain of Apply calls
// needs one check, which Functional does. A call of a layer of several
// outputs (see ApplyAll) makes one node per output, all of one computation.
type Node struct {
	layer Layer
	in    []*Node
	shape tile.Shape
	err   error
	// outs lists every output node of the call that made this one, first
	// output first, when the call gives several (see ApplyAll); index is
	// this node's place among them. A call of one output leaves outs nil.
	outs  []*Node
	index int
}

// call returns the node that stands for the layer call that made n: its
// first output.
func (n *Node) call() *Node {
	if n.outs != nil {
		return n.outs[0]
	}
	return n
}

// Shape returns the node's per-sample shape, nil when the node has an error.
func (n *Node) Shape() []int {
	if n == nil || n.err != nil {
		return nil
	}
	return n.shape.Clone()
}

// Err returns the error met while making the node, or nil.
func (n *Node) Err() error {
	if n == nil {
		return errors.New("nn: nil node")
	}
	return n.err
}

// Layer returns the layer that produces the node.
func (n *Node) Layer() Layer { return n.layer }

// inputLayer is the layer behind an Input node. It computes nothing: the
// model binds the program input to its node.
type inputLayer struct {
	layerBase
	cfg inputConfig
}

type inputConfig struct {
	Name  string `json:"name"`
	Shape []int  `json:"shape"`
}

// Input returns the input node of a model whose samples have the given
// shape, such as Input(28, 28, 1) for 28×28 grey images (channels-last).
// Sequential takes it as its first argument; Functional takes it among its
// inputs.
func Input(shape ...int) *Node {
	return newInput(inputConfig{Shape: append([]int(nil), shape...)})
}

func newInput(cfg inputConfig) *Node {
	l := &inputLayer{layerBase: newBase("InputLayer", cfg.Name, true, nil), cfg: cfg}
	n := &Node{layer: l}
	if len(cfg.Shape) == 0 {
		l.err = errors.New("nn: Input: the sample shape is empty; give at least one dimension, such as Input(784)")
	}
	for _, d := range cfg.Shape {
		if d < 1 {
			l.err = fmt.Errorf("nn: Input: shape %v has a dimension below 1", cfg.Shape)
		}
	}
	if l.err == nil {
		if err := checkShapeStorage(cfg.Shape); err != nil {
			l.err = fmt.Errorf("nn: Input: a sample of shape %s is too large: %v", fmtDims(cfg.Shape), err)
		}
	}
	n.err = l.err
	if n.err == nil {
		n.shape = tile.Shape(cfg.Shape).Clone()
		l.built, l.outShape = true, n.shape.Clone()
	}
	return n
}

func (l *inputLayer) build(in []tile.Shape) (tile.Shape, error) {
	return nil, errors.New("an input layer cannot be applied to other nodes")
}

func (l *inputLayer) call(c *callContext, in []*tile.Tensor) *tile.Tensor {
	return c.g.Errorf("input", "an input layer is bound, not called")
}

func (l *inputLayer) config() any {
	cfg := l.cfg
	cfg.Name = l.name
	return cfg
}

// Apply calls layer l on the input nodes and returns its output node, as
// Keras's layer(x) does. The first call builds the layer for the inputs'
// shapes; calling it again on nodes of the same shapes shares its weights.
// On a layer of several outputs (a recurrent layer with ReturnState) Apply
// returns the first, as Keras's layer(x)[0]; ApplyAll returns them all.
func Apply(l Layer, in ...*Node) *Node {
	return apply("Apply", l, in)[0]
}

// ApplyAll calls layer l on the input nodes as Apply does and returns every
// output node of that one call, in Keras's order: for a recurrent layer
// with ReturnState, [output, h] (SimpleRNN, GRU) or [output, h, c] (LSTM),
// and for Bidirectional the output, then the forward layer's states, then
// the backward layer's. A layer of one output gives one node. The layer
// computes once per call, whichever of the nodes a model uses. On an error
// every node returned carries it (one node when l is nil).
func ApplyAll(l Layer, in ...*Node) []*Node {
	return apply("ApplyAll", l, in)
}

// outputCount returns how many outputs a call of l gives.
func outputCount(l Layer) int {
	if ml, ok := l.(multiOutputLayer); ok {
		return 1 + len(ml.extraOutputs())
	}
	return 1
}

// apply is Apply and ApplyAll, what naming the function in errors.
func apply(what string, l Layer, in []*Node) []*Node {
	if l == nil {
		return []*Node{{err: fmt.Errorf("nn: %s: nil layer", what)}}
	}
	k := outputCount(l)
	fail := func(err error) []*Node {
		outs := make([]*Node, k)
		for i := range outs {
			outs[i] = &Node{layer: l, in: in, err: err, index: i}
		}
		return outs
	}
	b := l.base()
	desc := layerDesc(l)
	if b.err != nil {
		return fail(argumentError(l, b.err))
	}
	if _, ok := l.(*inputLayer); ok {
		return fail(fmt.Errorf("nn: %s: %s is an input layer; use its node directly", what, desc))
	}
	if len(in) == 0 {
		return fail(fmt.Errorf("nn: %s: %s needs at least one input node", what, desc))
	}
	shapes := make([]tile.Shape, len(in))
	for i, x := range in {
		if x == nil {
			return fail(fmt.Errorf("nn: %s: input %d of %s is nil", what, i, desc))
		}
		if x.err != nil {
			return fail(x.err)
		}
		shapes[i] = x.shape
	}
	if b.built {
		if !slices.EqualFunc(shapes, b.inShapes, tile.Shape.Equal) {
			return fail(fmt.Errorf("nn: %s: %s was built for inputs %s and cannot take %s", what, desc, fmtShapes(b.inShapes), fmtShapes(shapes)))
		}
		return outputNodes(l, in, b.outShape.Clone())
	}
	out, err := l.build(shapes)
	if err == nil {
		err = checkLayerSizes(b, out)
	}
	if err != nil {
		b.weights = nil
		return fail(&layerError{layer: l, input: cloneShapes(shapes), err: err})
	}
	b.built = true
	b.inShapes = cloneShapes(shapes)
	b.outShape = out.Clone()
	return outputNodes(l, in, out)
}

// outputNodes makes the output nodes of one call of l, built, on the nodes
// in: first the output of shape first, then any further outputs.
func outputNodes(l Layer, in []*Node, first tile.Shape) []*Node {
	n := &Node{layer: l, in: in, shape: first}
	ml, ok := l.(multiOutputLayer)
	if !ok {
		return []*Node{n}
	}
	extra := ml.extraOutputs()
	if len(extra) == 0 {
		return []*Node{n}
	}
	outs := []*Node{n}
	for i, s := range extra {
		outs = append(outs, &Node{layer: l, in: in, shape: s.Clone(), index: i + 1})
	}
	for _, o := range outs {
		o.outs = outs
	}
	return outs
}

// cloneShapes returns a deep copy of ss.
func cloneShapes(ss []tile.Shape) []tile.Shape {
	out := make([]tile.Shape, len(ss))
	for i, s := range ss {
		out[i] = s.Clone()
	}
	return out
}

// layerDesc names a layer for error messages: "conv2d (Conv2D)", or just the
// class before the layer is named.
func layerDesc(l Layer) string {
	if l.Name() == "" {
		return l.ClassName()
	}
	return l.Name() + " (" + l.ClassName() + ")"
}

// fmtShapes formats per-sample shapes as Keras batch shapes.
func fmtShapes(ss []tile.Shape) string {
	if len(ss) == 1 {
		return fmtShape(ss[0])
	}
	out := "["
	for i, s := range ss {
		if i > 0 {
			out += ", "
		}
		out += fmtShape(s)
	}
	return out + "]"
}

// Functional returns a model computing the output nodes from the input
// nodes, as keras.Model(inputs, outputs) does. Every node the outputs depend
// on must come from the given inputs. Any number of inputs and outputs
// train and run: Fit, Evaluate and PredictMulti take MultiSamples (see
// FromArrayLists), and Compile a loss per output (see Losses).
func Functional(name string, inputs, outputs []*Node) (*Model, error) {
	return initialized(assemble(name, "Functional", inputs, outputs))
}
