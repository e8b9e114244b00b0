package onnx

import (
	"errors"
	"fmt"
	"math"
	"runtime/debug"
	"slices"
	"sort"
	"strings"

	"github.com/tartanml/tartan/onnx/internal/pb"
	"github.com/tartanml/tartan/ref"
	"github.com/tartanml/tartan/tile"
)

// Options configures Model.Graph.
type Options struct {
	// Name is the tile graph's name; empty means "onnx".
	Name string
	// Shapes gives the shapes of graph inputs. An input whose declared
	// shape has symbolic or unknown dimensions needs one; a given shape must
	// agree with every fixed dimension the model declares.
	Shapes map[string]tile.Shape
	// Values fixes graph inputs to values known at conversion: they become
	// constants and everything computed from them alone is folded. An input
	// whose value decides a shape (Reshape's shape, Range's limits) must be
	// given here.
	Values map[string]*tile.Value
	// Sequences gives, for every graph input that is a sequence of
	// tensors, the shapes of its elements: element k becomes the tile input
	// Model.ElementName(name, k). Sequence outputs become tile outputs named
	// likewise. An optional graph input is empty when neither Shapes nor
	// Sequences names it; an empty optional output has no tile output.
	Sequences map[string][]tile.Shape
	// Variables names initializers that become tile variables of the same
	// name (to be written with their values before a run, and updated when
	// fine-tuning) rather than constants. AllVariables makes every
	// floating-point initializer a variable.
	Variables    []string
	AllVariables bool
}

// ValueNeededError reports a node that needs the value of a tensor at
// conversion time (a shape, axes, a count) that depends on graph inputs
// whose values are not fixed; Options.Values can fix them.
type ValueNeededError struct {
	Node   string   // the node, as `node 3 "reshape1" (Reshape)`
	Input  int      // which input of the node
	Inputs []string // the graph inputs its value depends on
}

func (e *ValueNeededError) Error() string {
	return fmt.Sprintf("%s: input %d must be known when converting, but depends on graph inputs %s whose values are not fixed (Options.Values)",
		e.Node, e.Input, strings.Join(e.Inputs, ", "))
}

// foldLimit bounds the elements of the inputs of a node that is evaluated
// at conversion time because every input is known.
const foldLimit = 1 << 20

// value is an ONNX value during conversion: a tensor of the tile graph,
// a value known at conversion, or both.
type value struct {
	t    *tile.Tensor
	c    *tile.Value
	dt   tile.DType
	sh   tile.Shape
	deps []string // the graph inputs (not fixed) it depends on, sorted
	// seq is set for a sequence of tensors (of dtype dt), which exists only
	// while converting: its elements are values themselves.
	seq   []*value
	isSeq bool
	// none is set for an empty optional (of a tensor, or of a sequence
	// with isSeq); a present optional is its value.
	none bool
	// lt is the ONNX type of a value held in a wider tile dtype (an 8- or
	// 16-bit integer in int32), Undefined otherwise.
	lt DataType
}

// typ returns the value's ONNX element type.
func (v *value) typ() DataType {
	if v.lt != Undefined {
		return v.lt
	}
	return FromTile(v.dt)
}

// converter holds the state of one Model.Graph call.
type converter struct {
	m     *Model
	g     *tile.Graph
	env   map[string]*value
	scope string // names the subgraph being converted, for messages
	depth int    // how deep subgraphs nest
	// body is set while a loop's or scan's body is converted on a graph of
	// its own (g is then that graph; see body.go).
	body *bodyScope
}

// Graph converts the model into a tile graph: its inputs become tile inputs
// named as in ONNX, initializers constants (or variables, see Options), and
// its outputs tile outputs named as in ONNX (see TileName for names that are
// no tile identifiers). Options refer to inputs and initializers by their
// ONNX names. Whatever depends on known
// values only (shape computations, constants) is computed here. Every
// unsupported op, attribute or type is an error naming the node.
func (m *Model) Graph(opt Options) (*tile.Graph, error) {
	name := opt.Name
	if name == "" {
		name = "onnx"
	}
	cv := &converter{m: m, g: tile.NewGraph(name), env: map[string]*value{}}
	vars := map[string]bool{}
	for _, v := range opt.Variables {
		vars[v] = true
	}
	for _, t := range m.Initializers {
		v, err := t.Value()
		if err != nil {
			return nil, fmt.Errorf("initializer %q: %w", t.Name, err)
		}
		if vars[t.Name] || (opt.AllVariables && v.DType.IsFloat()) {
			delete(vars, t.Name)
			x := cv.g.Variable(m.TileName(t.Name), v.DType, v.Shape)
			cv.env[t.Name] = &value{t: x, dt: v.DType, sh: v.Shape, lt: narrowType(t.Type)}
			continue
		}
		cv.env[t.Name] = &value{c: v, dt: v.DType, sh: v.Shape, lt: narrowType(t.Type)}
	}
	if len(vars) > 0 {
		var names []string
		for n := range vars {
			names = append(names, n)
		}
		sort.Strings(names)
		return nil, fmt.Errorf("Options.Variables names %s, which are no initializers", strings.Join(names, ", "))
	}
	type binding struct {
		size  int
		input string
	}
	params := map[string]binding{}
	for _, in := range m.Inputs {
		dt, ok := in.Type.Storage()
		lt := narrowType(in.Type)
		if !ok {
			return nil, fmt.Errorf("graph input %q: %s tensors are not supported", in.Name, in.Type)
		}
		if in.Optional {
			_, tensor := opt.Shapes[in.Name]
			_, seq := opt.Sequences[in.Name]
			if !tensor && !seq {
				cv.env[in.Name] = &value{none: true, isSeq: in.Sequence, dt: dt, lt: lt}
				continue
			}
		}
		if in.Sequence {
			shapes, ok := opt.Sequences[in.Name]
			if !ok {
				return nil, fmt.Errorf("graph input %q is a sequence; give its elements' shapes in Options.Sequences", in.Name)
			}
			if len(shapes) > maxUnroll {
				return nil, fmt.Errorf("graph input %q: a sequence of %d elements is too long", in.Name, len(shapes))
			}
			seq := &value{isSeq: true, dt: dt, lt: lt, deps: []string{in.Name}}
			for k, sh := range shapes {
				shape, err := inputShape(in, sh)
				if err != nil {
					return nil, fmt.Errorf("element %d: %w", k, err)
				}
				x := cv.g.Input(m.ElementName(in.Name, k), dt, shape)
				if err := cv.g.Err(); err != nil {
					return nil, fmt.Errorf("graph input %q, element %d: %w", in.Name, k, err)
				}
				seq.seq = append(seq.seq, &value{t: x, dt: dt, sh: shape, lt: lt, deps: []string{in.Name}})
			}
			cv.env[in.Name] = seq
			continue
		}
		shape, err := inputShape(in, opt.Shapes[in.Name])
		if err != nil {
			return nil, err
		}
		// A symbolic dimension has one size across the inputs.
		for i, d := range in.Shape {
			if d.Param == "" || i >= len(shape) {
				continue
			}
			if b, ok := params[d.Param]; ok && b.size != shape[i] {
				return nil, fmt.Errorf("graph input %q: dimension %d (%s) is %d, but %d for graph input %q", in.Name, i, d.Param, shape[i], b.size, b.input)
			}
			params[d.Param] = binding{shape[i], in.Name}
		}
		if v, ok := opt.Values[in.Name]; ok {
			if v.DType != dt || !v.Shape.Equal(shape) {
				return nil, fmt.Errorf("graph input %q: Options.Values gives %s%v, the input is %s%v", in.Name, v.DType, v.Shape, dt, shape)
			}
			cv.env[in.Name] = &value{c: v.Clone(), dt: dt, sh: shape, lt: lt}
			continue
		}
		x := cv.g.Input(m.TileName(in.Name), dt, shape)
		if err := cv.g.Err(); err != nil {
			return nil, fmt.Errorf("graph input %q: %w", in.Name, err)
		}
		cv.env[in.Name] = &value{t: x, dt: dt, sh: shape, lt: lt, deps: []string{in.Name}}
	}
	opset := m.Opsets[""]
	for k, n := range m.nodes {
		if err := cv.node(n, m.index[k], opset); err != nil {
			return nil, err
		}
	}
	for _, out := range m.Outputs {
		v := cv.env[out.Name]
		if v == nil {
			return nil, fmt.Errorf("graph output %q: not computed", out.Name)
		}
		if v.none {
			if !out.Optional {
				return nil, fmt.Errorf("graph output %q: the graph computes an empty optional, the model declares no optional", out.Name)
			}
			continue
		}
		if v.isSeq != out.Sequence {
			return nil, fmt.Errorf("graph output %q: the graph computes a %s, the model declares a %s", out.Name, kindName(v.isSeq), kindName(out.Sequence))
		}
		if out.Type != Undefined && out.Type != v.typ() {
			return nil, fmt.Errorf("graph output %q: the graph computes %s, the model declares %s", out.Name, v.typ(), out.Type)
		}
		if v.isSeq {
			for k, e := range v.seq {
				cv.g.SetOutput(m.ElementName(out.Name, k), cv.tensor(cv.g, e))
			}
			continue
		}
		cv.g.SetOutput(m.TileName(out.Name), cv.tensor(cv.g, v))
	}
	if err := cv.g.Err(); err != nil {
		return nil, fmt.Errorf("graph outputs: %w", err)
	}
	return cv.g, nil
}

// narrowType returns d when it is held in a wider tile dtype, else
// Undefined.
func narrowType(d DataType) DataType {
	if d.narrow() {
		return d
	}
	return Undefined
}

func kindName(seq bool) string {
	if seq {
		return "sequence"
	}
	return "tensor"
}

// inputShape returns the shape of graph input in, from the declaration and
// the shape the caller gave.
func inputShape(in ValueInfo, given tile.Shape) (tile.Shape, error) {
	if given == nil {
		if !in.HasShape {
			return nil, fmt.Errorf("graph input %q: the model declares no shape and Options.Shapes gives none", in.Name)
		}
		s := make(tile.Shape, len(in.Shape))
		for i, d := range in.Shape {
			if d.Value < 0 {
				return nil, fmt.Errorf("graph input %q: dimension %d (%s) is not fixed; give the shape in Options.Shapes", in.Name, i, d)
			}
			s[i] = int(d.Value)
		}
		return s, nil
	}
	if in.HasShape {
		if len(given) != len(in.Shape) {
			return nil, fmt.Errorf("graph input %q: Options.Shapes gives %v, of rank %d; the model declares rank %d", in.Name, given, len(given), len(in.Shape))
		}
		for i, d := range in.Shape {
			if d.Value >= 0 && int64(given[i]) != d.Value {
				return nil, fmt.Errorf("graph input %q: Options.Shapes gives %v; the model fixes dimension %d at %d", in.Name, given, i, d.Value)
			}
		}
	}
	for _, d := range given {
		if d < 0 || d > MaxElements {
			return nil, fmt.Errorf("graph input %q: Options.Shapes gives %v", in.Name, given)
		}
	}
	if _, err := elementCount(int64s(given)); err != nil {
		return nil, fmt.Errorf("graph input %q: %w", in.Name, err)
	}
	return given.Clone(), nil
}

func int64s(s []int) []int64 {
	r := make([]int64, len(s))
	for i, v := range s {
		r[i] = int64(v)
	}
	return r
}

// tensor returns v as a tensor of g, adding a constant node when v is known.
func (cv *converter) tensor(g *tile.Graph, v *value) *tile.Tensor {
	if v.none {
		return g.Errorf("onnx", "an empty optional is used as a tensor")
	}
	if v.isSeq {
		return g.Errorf("onnx", "a sequence is used as a tensor")
	}
	if g != cv.g {
		if v.c == nil {
			return g.Errorf("onnx", "internal: a folded node reads an unknown value")
		}
		return g.Constant(v.c)
	}
	if v.t != nil {
		if v.t.Graph() == g {
			return v.t
		}
		if cv.body != nil && cv.body.encloses(v.t.Graph()) {
			return cv.body.local(v.t)
		}
	}
	switch {
	case v.c == nil:
		return g.Errorf("onnx", "internal: a value of another graph is read")
	case cv.body != nil:
		return cv.body.constant(v)
	}
	v.t = g.Constant(v.c)
	return v.t
}

// opFunc builds one ONNX node from its context.
type opFunc func(c *ctx)

// registry maps op types of the default domain to their builders.
var registry = map[string]opFunc{}

func register(name string, fn opFunc) { registry[name] = fn }

// noFold names the ops that are never built on a scratch graph: those that
// convert subgraphs into the graph itself.
var noFold = map[string]bool{}

// domains maps other op domains to their registries.
var domains = map[string]map[string]opFunc{}

func registerIn(domain, name string, fn opFunc) {
	if domains[domain] == nil {
		domains[domain] = map[string]opFunc{}
	}
	domains[domain][name] = fn
}

// ctx is the context of one node's conversion.
type ctx struct {
	cv    *converter
	g     *tile.Graph // where the node is built: the graph, or a scratch one when folding
	node  *pb.NodeProto
	name  string // nodeName
	op    string
	opset int64
	ins   []*value
	attrs map[string]*pb.AttributeProto
	used  map[string]bool
	outs  []*value
	types []DataType // ONNX types of outputs set explicitly (setType)
	err   error
}

// node converts one node.
func (cv *converter) node(n *pb.NodeProto, index int, opset int64) error {
	c := &ctx{cv: cv, node: n, name: cv.scope + nodeName(n, index), op: n.GetOpType(), opset: opset,
		attrs: map[string]*pb.AttributeProto{}, used: map[string]bool{}}
	fn := registry[c.op]
	if d := n.GetDomain(); d != "" && d != "ai.onnx" {
		ops := domains[d]
		if ops == nil {
			return fmt.Errorf("%s: ops of domain %q are not supported", c.name, d)
		}
		v, ok := cv.m.Opsets[d]
		if !ok {
			return fmt.Errorf("%s: the model imports no opset of domain %q", c.name, d)
		}
		c.opset, opset = v, v
		fn = ops[c.op]
		if fn == nil {
			return fmt.Errorf("%s: unsupported op %s of domain %q (opset %d)", c.name, c.op, d, opset)
		}
	}
	if fn == nil {
		return fmt.Errorf("%s: unsupported op %s (opset %d)", c.name, c.op, opset)
	}
	for _, a := range n.GetAttribute() {
		if a.GetRefAttrName() != "" {
			return fmt.Errorf("%s: attribute %q refers to a function's attribute, which a graph may not", c.name, a.GetName())
		}
		if _, dup := c.attrs[a.GetName()]; dup {
			return fmt.Errorf("%s: attribute %q is given twice", c.name, a.GetName())
		}
		c.attrs[a.GetName()] = a
	}
	fold := !noFold[c.op]
	size := 0
	var deps []string
	for _, in := range n.GetInput() {
		if in == "" {
			c.ins = append(c.ins, nil)
			continue
		}
		v := cv.env[in]
		c.ins = append(c.ins, v)
		if v.c == nil {
			fold = false
		}
		size += v.sh.Size()
		for _, d := range v.deps {
			if !slices.Contains(deps, d) {
				deps = append(deps, d)
			}
		}
	}
	sort.Strings(deps)
	if size > foldLimit {
		fold = false
	}
	c.g = cv.g
	if fold {
		c.g = tile.NewGraph("fold")
	}
	before := cv.g.Err()
	if err := c.run(fn); err != nil {
		return err
	}
	if fold && c.err == nil && c.g.Err() == nil && (c.outSize() > foldLimit || foldWork(c.g) > foldWorkLimit) {
		// Too large to compute here: build it in the graph instead.
		fold = false
		c.g, c.outs, c.used, c.types = cv.g, nil, map[string]bool{}, nil
		if err := c.run(fn); err != nil {
			return err
		}
	}
	if c.err == nil {
		if err := c.g.Err(); err != nil && (fold || before == nil) {
			c.err = err
		}
	}
	if c.err == nil {
		for name := range c.attrs {
			if !c.used[name] {
				c.err = fmt.Errorf("attribute %q is not supported", name)
				break
			}
		}
	}
	if c.err == nil {
		for i, out := range n.GetOutput() {
			if out != "" && (i >= len(c.outs) || c.outs[i] == nil) {
				c.err = fmt.Errorf("output %d (%q) is not supported", i, out)
				break
			}
		}
	}
	if c.err == nil && c.g.Err() == nil {
		c.narrowOutputs()
		if err := c.g.Err(); c.err == nil && err != nil {
			c.err = err
		}
	}
	if c.err != nil {
		var need *ValueNeededError
		if errors.As(c.err, &need) {
			return c.err
		}
		return fmt.Errorf("%s at opset %d: %w", c.name, opset, c.err)
	}
	if fold {
		if err := c.evaluate(); err != nil {
			return fmt.Errorf("%s at opset %d: evaluating on known values: %w", c.name, opset, err)
		}
	}
	for i, out := range n.GetOutput() {
		if out == "" || i >= len(c.outs) {
			continue
		}
		v := c.outs[i]
		if v.c == nil && v.deps == nil {
			v.deps = deps
		}
		cv.env[out] = v
	}
	return nil
}

// run calls the op's builder, turning a panic (a bug of the builder) into
// an error naming the node.
func (c *ctx) run(fn opFunc) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%s at opset %d: internal error: panic: %v\n%s", c.name, c.opset, r, debug.Stack())
		}
	}()
	fn(c)
	return nil
}

// evaluate computes the outputs of a node built on a scratch graph from
// known values.
func (c *ctx) evaluate() error {
	var names []string
	for i, v := range c.outs {
		if v == nil || v.c != nil || v.isSeq || v.none {
			continue
		}
		name := fmt.Sprintf("out%d", i)
		c.g.SetOutput(name, v.t)
		names = append(names, name)
	}
	if len(names) == 0 {
		return nil
	}
	if err := c.g.Err(); err != nil {
		return err
	}
	res, err := ref.Run(c.g, nil, nil)
	if err != nil {
		return err
	}
	for i, v := range c.outs {
		if v == nil || v.c != nil || v.isSeq || v.none {
			continue
		}
		c.outs[i] = &value{c: res[fmt.Sprintf("out%d", i)], dt: v.dt, sh: v.sh, lt: v.lt}
	}
	return nil
}

// foldWorkLimit bounds the work (points of index spaces, elements of other
// nodes) of evaluating one node at conversion time.
const foldWorkLimit = 1 << 24

// foldWork estimates the work of evaluating g with the reference executor.
func foldWork(g *tile.Graph) int {
	work := 0
	for _, n := range g.Nodes() {
		points := n.Size()
		if con, ok := n.Op().(*tile.ContractionOp); ok {
			var shapes []tile.Shape
			for _, a := range n.Args() {
				shapes = append(shapes, a.Shape())
			}
			ranges, err := con.Ranges(n.Shape(), shapes)
			if err != nil {
				return math.MaxInt
			}
			points = 1
			for _, r := range ranges {
				k := r.Hi - r.Lo + 1
				if k <= 0 {
					points = 0
					break
				}
				if points > foldWorkLimit/k {
					return math.MaxInt
				}
				points *= k
			}
		}
		work += points
		if work > foldWorkLimit {
			return work
		}
	}
	return work
}

// outSize returns the elements of the outputs that are still to compute.
func (c *ctx) outSize() int {
	n := 0
	for _, v := range c.outs {
		if v != nil && v.c == nil && !v.isSeq && !v.none {
			n += v.sh.Size()
		}
	}
	return n
}

// fail records the node's first error and returns an invalid tensor.
func (c *ctx) fail(format string, args ...any) *tile.Tensor {
	if c.err == nil {
		c.err = fmt.Errorf(format, args...)
	}
	return c.g.Errorf(c.op, format, args...)
}

// failed reports whether an error has been recorded for the node.
func (c *ctx) failed() bool { return c.err != nil || c.g.Err() != nil }

// nin returns the number of inputs given, absent optional ones included.
func (c *ctx) nin() int { return len(c.ins) }

// has reports whether input i is present.
func (c *ctx) has(i int) bool { return i < len(c.ins) && c.ins[i] != nil }

// in returns input i as a tensor.
func (c *ctx) in(i int) *tile.Tensor {
	if !c.has(i) {
		return c.fail("input %d is missing", i)
	}
	if c.ins[i].none {
		return c.fail("input %d is an empty optional, a tensor is expected", i)
	}
	if c.ins[i].isSeq {
		return c.fail("input %d is a sequence, a tensor is expected", i)
	}
	return c.cv.tensor(c.g, c.ins[i])
}

// shape returns input i's shape, nil when it is missing.
func (c *ctx) shape(i int) tile.Shape {
	if !c.has(i) {
		c.fail("input %d is missing", i)
		return nil
	}
	if c.ins[i].isSeq || c.ins[i].none {
		c.fail("input %d is a sequence or an empty optional, a tensor is expected", i)
		return nil
	}
	return c.ins[i].sh.Clone()
}

// dtype returns input i's dtype.
func (c *ctx) dtype(i int) tile.DType {
	if !c.has(i) {
		c.fail("input %d is missing", i)
		return tile.Invalid
	}
	return c.ins[i].dt
}

// known returns input i's value, which must be known at conversion time.
func (c *ctx) known(i int) *tile.Value {
	if !c.has(i) {
		c.fail("input %d is missing", i)
		return nil
	}
	v := c.ins[i]
	if v.isSeq || v.none {
		c.fail("input %d is a sequence or an empty optional, a tensor is expected", i)
		return nil
	}
	if v.c == nil {
		if c.err == nil {
			if len(v.deps) == 0 {
				c.err = fmt.Errorf("input %d must be known when converting, but it is computed while running (from variables, or from constants too large to compute here)", i)
			} else {
				c.err = &ValueNeededError{Node: c.name, Input: i, Inputs: v.deps}
			}
		}
		c.g.Errorf(c.op, "input %d is not known", i)
		return nil
	}
	return v.c
}

// knownInts returns input i's known value as integers.
func (c *ctx) knownInts(i int) []int64 {
	v := c.known(i)
	if v == nil {
		return nil
	}
	if !v.DType.IsInt() {
		c.fail("input %d must be int32 or int64, not %s", i, v.DType)
		return nil
	}
	r := make([]int64, len(v.Data))
	for k, x := range v.Data {
		r[k] = toInt(x)
	}
	return r
}

// toInt converts a float64 holding an integer to int64, saturating.
func toInt(x float64) int64 {
	switch {
	case x >= math.MaxInt64:
		return math.MaxInt64
	case x <= math.MinInt64:
		return math.MinInt64
	case x != x:
		return 0
	}
	return int64(x)
}

// set declares output i as tensor t.
func (c *ctx) set(i int, t *tile.Tensor) {
	for len(c.outs) <= i {
		c.outs = append(c.outs, nil)
	}
	if t == nil || !t.Valid() {
		if c.err == nil && c.g.Err() == nil {
			c.fail("output %d: internal: no tensor", i)
		}
		return
	}
	c.outs[i] = &value{t: t, dt: t.DType(), sh: t.Shape()}
}

// setKnown declares output i as a value known at conversion.
func (c *ctx) setKnown(i int, v *tile.Value) {
	for len(c.outs) <= i {
		c.outs = append(c.outs, nil)
	}
	c.outs[i] = &value{c: v, dt: v.DType, sh: v.Shape}
}

// setType declares the ONNX type of output i, for ops whose output type
// does not follow their inputs' (Cast, the quantization ops, ...).
func (c *ctx) setType(i int, d DataType) {
	for len(c.types) <= i {
		c.types = append(c.types, Undefined)
	}
	c.types[i] = d
}

// typ returns input i's ONNX type.
func (c *ctx) typ(i int) DataType {
	if !c.has(i) {
		return Undefined
	}
	return c.ins[i].typ()
}

// narrowOutputs gives every output its ONNX type (as setType declared
// it, else that of the first input held in the same tile dtype) and wraps
// the outputs of 8- and 16-bit integer types around to their range.
func (c *ctx) narrowOutputs() {
	for i, v := range c.outs {
		if v == nil || v.isSeq || v.none {
			continue
		}
		same := false
		for _, in := range c.ins {
			same = same || in == v
		}
		if same {
			continue // passed through
		}
		lt := Undefined
		if i < len(c.types) && c.types[i] != Undefined {
			lt = c.types[i]
		} else {
			for _, in := range c.ins {
				if in != nil && !in.isSeq && !in.none && in.dt == v.dt {
					lt = in.typ()
					break
				}
			}
		}
		if !lt.narrow() {
			continue
		}
		if lt == Uint32 && !uint32Exact[c.op] {
			// int64 is computed in float64: a product of two uint32 values
			// would lose its low bits before the wrap.
			c.fail("uint32 results are supported only for ops whose int64 results stay exact (not %s)", c.op)
			return
		}
		if st, _ := lt.Storage(); st != v.dt {
			c.fail("output %d: internal: %s held in %s", i, lt, v.dt)
			return
		}
		n, lo := lt.span()
		w := &value{t: v.t, c: v.c, dt: v.dt, sh: v.sh, lt: lt}
		if v.c != nil {
			d := make([]float64, len(v.c.Data))
			for k, x := range v.c.Data {
				d[k] = x - n*math.Floor((x-lo)/n)
			}
			w.c = &tile.Value{DType: v.c.DType, Shape: v.c.Shape.Clone(), Data: d}
			w.t = nil
		} else {
			w.t = wrapInt(c.g, v.t, n, lo)
		}
		c.outs[i] = w
	}
}

// uint32Exact lists the ops whose uint32 results, computed in int64 on
// wrapped operands, never exceed 2^53 before wrapping: no products.
var uint32Exact = map[string]bool{}

func init() {
	for _, op := range []string{"Add", "Sub", "Max", "Min", "Mod", "Div", "Neg", "Abs", "Sum", "Clip",
		"BitShift", "Cast", "CastLike", "Where", "Identity", "Reshape", "Transpose", "Squeeze", "Unsqueeze",
		"Flatten", "Concat", "Split", "Slice", "Gather", "GatherElements", "GatherND", "Expand", "Tile", "Pad",
		"ReduceMax", "ReduceMin", "ArgMax", "ArgMin", "Constant", "ConstantOfShape", "Compress", "ReverseSequence",
		"TopK", "Trilu", "OneHot", "Unique", "If", "Loop", "Scan", "SequenceAt", "Optional", "OptionalGetElement"} {
		uint32Exact[op] = true
	}
}

// wrapInt maps the integers x onto [lo, lo + n) modulo n.
func wrapInt(g *tile.Graph, x *tile.Tensor, n, lo float64) *tile.Tensor {
	k := g.ScalarLike(x, n)
	y := g.Sub(x, g.ScalarLike(x, lo))
	r := g.Sub(y, g.Mul(g.Div(y, k), k)) // truncating division
	r = g.Select(g.Elementwise(tile.Lt, r, g.ScalarLike(x, 0)), g.Add(r, k), r)
	return g.Add(r, g.ScalarLike(x, lo))
}

// nout returns the number of outputs the node declares.
func (c *ctx) nout() int { return len(c.node.GetOutput()) }

// wantsOut reports whether output i is asked for.
func (c *ctx) wantsOut(i int) bool {
	return i < len(c.node.GetOutput()) && c.node.GetOutput()[i] != ""
}
