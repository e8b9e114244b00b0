package tile

import (
	"fmt"
	"regexp"
)

// Graph is a tensor program under construction: nodes, named inputs and
// variables, named outputs, and variable updates. A Graph is not safe for
// concurrent building; a finished Graph may be read from many goroutines.
type Graph struct {
	name    string
	nodes   []*Tensor
	inputs  []*Tensor
	vars    []*Tensor
	outputs []Output
	updates []Update
	closes  []*Tensor          // closed recurrences, in closing order
	leaves  map[string]*Tensor // inputs and variables by name
	err     error
}

// Output is a named result of a program.
type Output struct {
	Name   string
	Tensor *Tensor
}

// Update replaces the value of Variable with Value when a program run ends.
// Every read of a variable during a run sees its value from before the run.
type Update struct {
	Variable *Tensor
	Value    *Tensor
}

// Tensor is a node of a Graph: an Op applied to argument nodes, with a static
// dtype and shape. Tensors are immutable once built.
type Tensor struct {
	graph *Graph
	id    int
	op    Op
	args  []*Tensor
	dtype DType
	shape Shape
}

// Op is the operation a node computes. The concrete types are the node kinds
// listed in the package documentation.
type Op interface {
	// Kind returns the op's name in the textual form, such as "reshape".
	Kind() string
}

// Error is a graph-building error. It names the op and says what is wrong,
// with the shapes involved.
type Error struct {
	Op  string
	Msg string
}

func (e *Error) Error() string { return "tile: " + e.Op + ": " + e.Msg }

// NewGraph returns an empty graph with the given name.
func NewGraph(name string) *Graph {
	return &Graph{name: name, leaves: map[string]*Tensor{}}
}

// Name returns the graph's name.
func (g *Graph) Name() string { return g.name }

// Err returns the first error met while building, or nil.
func (g *Graph) Err() error { return g.err }

// Nodes returns every node in creation order, which is a topological order.
// The slice must not be modified.
func (g *Graph) Nodes() []*Tensor { return g.nodes }

// Inputs returns the input nodes in creation order.
func (g *Graph) Inputs() []*Tensor { return g.inputs }

// Variables returns the variable nodes in creation order.
func (g *Graph) Variables() []*Tensor { return g.vars }

// Outputs returns the named outputs in the order they were declared.
func (g *Graph) Outputs() []Output { return g.outputs }

// Updates returns the variable updates in the order they were declared.
func (g *Graph) Updates() []Update { return g.updates }

// Leaf returns the input or variable with the given name, or nil.
func (g *Graph) Leaf(name string) *Tensor { return g.leaves[name] }

// Errorf records a building error for op, unless one is already recorded, and
// returns an invalid tensor. Op libraries built on tile use it to report their
// own argument errors through the same channel.
func (g *Graph) Errorf(op, format string, args ...any) *Tensor {
	if g.err == nil {
		g.err = &Error{Op: op, Msg: fmt.Sprintf(format, args...)}
	}
	return g.invalid()
}

// invalid returns the placeholder tensor handed out after an error.
func (g *Graph) invalid() *Tensor { return &Tensor{graph: g, id: -1} }

// ID returns the node's index in Graph.Nodes, or -1 for an invalid tensor.
func (t *Tensor) ID() int { return t.id }

// Graph returns the graph the tensor belongs to.
func (t *Tensor) Graph() *Graph { return t.graph }

// Op returns the operation the node computes, nil for an invalid tensor.
func (t *Tensor) Op() Op { return t.op }

// Args returns the node's arguments. The slice must not be modified.
func (t *Tensor) Args() []*Tensor { return t.args }

// DType returns the element type.
func (t *Tensor) DType() DType { return t.dtype }

// Shape returns a copy of the tensor's shape.
func (t *Tensor) Shape() Shape { return t.shape.Clone() }

// Dim returns the size of dimension i; negative i counts from the end. It
// returns 0 when i is out of range.
func (t *Tensor) Dim(i int) int {
	if i < 0 {
		i += len(t.shape)
	}
	if i < 0 || i >= len(t.shape) {
		return 0
	}
	return t.shape[i]
}

// Rank returns the number of dimensions.
func (t *Tensor) Rank() int { return len(t.shape) }

// Size returns the number of elements.
func (t *Tensor) Size() int { return t.shape.Size() }

// Valid reports whether t is a real node rather than the placeholder returned
// after an error.
func (t *Tensor) Valid() bool { return t != nil && t.id >= 0 && t.op != nil }

func (t *Tensor) String() string {
	if !t.Valid() {
		return "<invalid tensor>"
	}
	return fmt.Sprintf("%%%d %s %s%s", t.id, t.op.Kind(), t.dtype, t.shape)
}

// check verifies that args are valid tensors of g and that no error is
// recorded yet. It records an error for op and returns false otherwise.
func (g *Graph) check(op string, args ...*Tensor) bool {
	if g.err != nil {
		return false
	}
	for i, a := range args {
		switch {
		case a == nil:
			g.Errorf(op, "argument %d is nil", i)
			return false
		case a.graph != g:
			g.Errorf(op, "argument %d (%v) belongs to another graph", i, a)
			return false
		case !a.Valid():
			g.Errorf(op, "argument %d is an invalid tensor", i)
			return false
		}
	}
	return true
}

// add appends a new node. The shape is copied. A shape that holds more
// than MaxBytes (or whose size overflows) records an error naming the op
// and returns an invalid tensor instead.
func (g *Graph) add(op Op, dt DType, shape Shape, args ...*Tensor) *Tensor {
	if !g.checkStorage(op.Kind(), dt, shape) {
		return g.invalid()
	}
	t := &Tensor{graph: g, id: len(g.nodes), op: op, args: args, dtype: dt, shape: shape.Clone()}
	g.nodes = append(g.nodes, t)
	return t
}

var identRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_./:-]*$`)

var indexRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// checkShape records an error for op and returns false when s has a
// negative dimension or more elements than MaxBytes.
func (g *Graph) checkShape(op string, s Shape) bool { return g.checkStorage(op, Invalid, s) }

// checkStorage records an error for op and returns false when s has a
// negative dimension or a tensor of s and dt would hold more than MaxBytes
// (an invalid dt counts one byte per element).
func (g *Graph) checkStorage(op string, dt DType, s Shape) bool {
	if err := s.CheckStorage(dt); err != nil {
		g.Errorf(op, "%v", err)
		return false
	}
	return true
}

// Input declares a named program input of the given dtype and shape.
func (g *Graph) Input(name string, dt DType, shape Shape) *Tensor {
	return g.leaf("input", name, dt, shape)
}

// Variable declares named persistent state of the given dtype and shape.
func (g *Graph) Variable(name string, dt DType, shape Shape) *Tensor {
	return g.leaf("variable", name, dt, shape)
}

func (g *Graph) leaf(kind, name string, dt DType, shape Shape) *Tensor {
	if !g.check(kind) || !g.checkStorage(kind, dt, shape) {
		return g.invalid()
	}
	if !identRE.MatchString(name) {
		return g.Errorf(kind, "name %q is not an identifier (letters, digits, _ . / : -, not starting with a digit)", name)
	}
	if !dt.Valid() {
		return g.Errorf(kind, "%q has invalid dtype %v", name, dt)
	}
	if g.leaves[name] != nil {
		return g.Errorf(kind, "name %q is already declared", name)
	}
	var t *Tensor
	if kind == "input" {
		t = g.add(&InputOp{Name: name}, dt, shape)
		g.inputs = append(g.inputs, t)
	} else {
		t = g.add(&VariableOp{Name: name}, dt, shape)
		g.vars = append(g.vars, t)
	}
	g.leaves[name] = t
	return t
}

// InputOp is a program input, bound to a value at every run.
type InputOp struct{ Name string }

// VariableOp is persistent state, read at every run and replaced by Updates.
type VariableOp struct{ Name string }

// Kind implements Op.
func (*InputOp) Kind() string { return "input" }

// Kind implements Op.
func (*VariableOp) Kind() string { return "variable" }

// SetOutput declares t as the program result called name.
func (g *Graph) SetOutput(name string, t *Tensor) {
	if !g.check("output", t) {
		return
	}
	if !identRE.MatchString(name) {
		g.Errorf("output", "name %q is not an identifier", name)
		return
	}
	for _, o := range g.outputs {
		if o.Name == name {
			g.Errorf("output", "name %q is already declared", name)
			return
		}
	}
	g.outputs = append(g.outputs, Output{name, t})
}

// Update declares that variable v takes value x when a run ends. x must have
// v's dtype and shape, and each variable may be updated once.
func (g *Graph) Update(v, x *Tensor) {
	if !g.check("update", v, x) {
		return
	}
	vo, ok := v.op.(*VariableOp)
	if !ok {
		g.Errorf("update", "target %v is not a variable", v)
		return
	}
	if v.dtype != x.dtype || !v.shape.Equal(x.shape) {
		g.Errorf("update", "variable %q is %s%v but the new value is %s%v", vo.Name, v.dtype, v.shape, x.dtype, x.shape)
		return
	}
	for _, u := range g.updates {
		if u.Variable == v {
			g.Errorf("update", "variable %q is updated twice", vo.Name)
			return
		}
	}
	g.updates = append(g.updates, Update{v, x})
}
