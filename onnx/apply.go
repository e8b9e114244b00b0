package onnx

import (
	"fmt"
	"sort"
	"strings"

	"github.com/tartanml/tartan/tile"
)

// Apply adds the model's computation to g, which another program builds
// (an nn layer's step, say), and returns the tensor of every graph output
// by ONNX name. inputs maps every graph input (by ONNX name) to a tensor of
// g of the input's element type, whose shape binds the dimensions the
// model leaves open; weights maps initializers (by ONNX name) to tensors of
// g that stand for them, such as the variables of a model being fine-tuned,
// of the initializer's type and shape. The other initializers are
// constants. Sequence inputs and outputs are not supported here (use
// Graph); an optional input left out of inputs is empty.
func (m *Model) Apply(g *tile.Graph, inputs, weights map[string]*tile.Tensor) (map[string]*tile.Tensor, error) {
	if g == nil {
		return nil, fmt.Errorf("onnx: Apply: nil graph")
	}
	cv := &converter{m: m, g: g, env: map[string]*value{}}
	used := map[string]bool{}
	for _, t := range m.Initializers {
		v, err := t.Value()
		if err != nil {
			return nil, fmt.Errorf("initializer %q: %w", t.Name, err)
		}
		w, ok := weights[t.Name]
		if !ok {
			cv.env[t.Name] = &value{c: v, dt: v.DType, sh: v.Shape, lt: narrowType(t.Type)}
			continue
		}
		used[t.Name] = true
		if w == nil || w.Graph() != g || w.DType() != v.DType || !w.Shape().Equal(v.Shape) {
			return nil, fmt.Errorf("initializer %q is %s%v: its weight must be a tensor of the graph of that type and shape, got %v", t.Name, v.DType, v.Shape, w)
		}
		cv.env[t.Name] = &value{t: w, dt: v.DType, sh: v.Shape, lt: narrowType(t.Type)}
	}
	var extra []string
	for name := range weights {
		if !used[name] {
			extra = append(extra, name)
		}
	}
	if len(extra) > 0 {
		sort.Strings(extra)
		return nil, fmt.Errorf("weights for %s, which are no initializers", strings.Join(extra, ", "))
	}
	params := map[string]int{}
	for _, in := range m.Inputs {
		dt, ok := in.Type.Storage()
		if !ok {
			return nil, fmt.Errorf("graph input %q: %s tensors are not supported", in.Name, in.Type)
		}
		if in.Sequence {
			return nil, fmt.Errorf("graph input %q is a sequence, which Apply does not take (use Graph)", in.Name)
		}
		x, ok := inputs[in.Name]
		if !ok {
			if in.Optional {
				cv.env[in.Name] = &value{none: true, dt: dt, lt: narrowType(in.Type)}
				continue
			}
			return nil, fmt.Errorf("graph input %q is not given", in.Name)
		}
		if x == nil || x.Graph() != g || x.DType() != dt {
			return nil, fmt.Errorf("graph input %q needs a %s tensor of the graph, got %v", in.Name, dt, x)
		}
		shape, err := inputShape(in, x.Shape())
		if err != nil {
			return nil, err
		}
		for i, d := range in.Shape {
			if d.Param == "" || i >= len(shape) {
				continue
			}
			if n, ok := params[d.Param]; ok && n != shape[i] {
				return nil, fmt.Errorf("graph input %q: dimension %d (%s) is %d, but %d elsewhere", in.Name, i, d.Param, shape[i], n)
			}
			params[d.Param] = shape[i]
		}
		cv.env[in.Name] = &value{t: x, dt: dt, sh: shape, lt: narrowType(in.Type), deps: []string{in.Name}}
	}
	opset := m.Opsets[""]
	for k, n := range m.nodes {
		if err := cv.node(n, m.index[k], opset); err != nil {
			return nil, err
		}
	}
	outs := map[string]*tile.Tensor{}
	for _, out := range m.Outputs {
		v := cv.env[out.Name]
		switch {
		case v == nil:
			return nil, fmt.Errorf("graph output %q: not computed", out.Name)
		case v.none:
			continue
		case v.isSeq:
			return nil, fmt.Errorf("graph output %q is a sequence, which Apply does not return (use Graph)", out.Name)
		}
		outs[out.Name] = cv.tensor(g, v)
	}
	if err := g.Err(); err != nil {
		return nil, fmt.Errorf("graph outputs: %w", err)
	}
	return outs, nil
}
