package onnx

import (
	"container/heap"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"google.golang.org/protobuf/proto"

	"github.com/tartanml/tartan/onnx/internal/pb"
)

// MaxModelBytes bounds the size of a model file that Load and Read accept:
// 2 GiB, protobuf's own limit for one message.
const MaxModelBytes = 2 << 30

// readLimit is MaxModelBytes, lowered by tests.
var readLimit int64 = MaxModelBytes

// Model is a decoded and checked ONNX model.
type Model struct {
	// IRVersion is the model's IR version.
	IRVersion int64
	// Opsets maps each imported operator-set domain ("" for the default
	// ai.onnx domain) to its version.
	Opsets map[string]int64
	// Producer names the program that wrote the model, with its version.
	Producer string
	// Inputs are the graph inputs that are not initializers, in order.
	Inputs []ValueInfo
	// Outputs are the graph outputs, in order.
	Outputs []ValueInfo
	// Initializers are the graph's constant tensors, in order.
	Initializers []*Tensor

	src   *pb.ModelProto  // the model as read, for WriteFineTuned
	nodes []*pb.NodeProto // topologically sorted
	index []int           // index[i] is nodes[i]'s position in the file
	names map[string]string
}

// TileName returns the name that the graph input, output or initializer
// called name has in the tile graphs Graph builds. ONNX names that are tile
// identifiers keep their names; others (such as PyTorch's "0" or
// "input:0?") have every character that an identifier may not hold replaced
// by '_', a '_' put before a leading digit or dot, and a suffix "_2",
// "_3", … where that would clash with another name.
func (m *Model) TileName(name string) string {
	if t, ok := m.names[name]; ok {
		return t
	}
	return name
}

// ElementName returns the tile name of element k of the sequence-typed
// graph input or output called name: TileName(name) + "/" + k.
func (m *Model) ElementName(name string, k int) string {
	return fmt.Sprintf("%s/%d", m.TileName(name), k)
}

// Initializer returns the initializer called name, or nil. Its Value is
// what a variable made from it (Options.Variables) should be written with
// before the first run.
func (m *Model) Initializer(name string) *Tensor {
	for _, t := range m.Initializers {
		if t.Name == name {
			return t
		}
	}
	return nil
}

// isIdent reports whether s is a tile identifier: a letter or '_', then
// letters, digits and _ . / : -.
func isIdent(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		letter := c == '_' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z'
		if letter || i > 0 && ('0' <= c && c <= '9' || c == '.' || c == '/' || c == ':' || c == '-') {
			continue
		}
		return false
	}
	return true
}

// assignNames gives every graph input, output and initializer a tile name.
func (m *Model) assignNames() {
	var all []string
	for _, in := range m.Inputs {
		all = append(all, in.Name)
	}
	for _, t := range m.Initializers {
		all = append(all, t.Name)
	}
	for _, out := range m.Outputs {
		all = append(all, out.Name)
	}
	m.names = map[string]string{}
	taken := map[string]bool{}
	for _, n := range all {
		if isIdent(n) {
			m.names[n] = n
			taken[n] = true
		}
	}
	for _, n := range all {
		if _, done := m.names[n]; done {
			continue
		}
		b := []byte(n)
		for i, c := range b {
			if !isIdent("a" + string(c)) {
				b[i] = '_'
			}
		}
		base := string(b)
		if !isIdent(base) {
			base = "_" + base
		}
		t := base
		for k := 2; taken[t]; k++ {
			t = fmt.Sprintf("%s_%d", base, k)
		}
		m.names[n] = t
		taken[t] = true
	}
}

// ValueInfo describes a graph input or output: its name, element type and
// shape.
type ValueInfo struct {
	Name string
	Type DataType
	// Shape holds one Dim per dimension; nil with HasShape false when the
	// model gives no shape at all.
	Shape    []Dim
	HasShape bool
	// Sequence is set for a sequence of tensors; Type and Shape then
	// describe its elements.
	Sequence bool
	// Optional is set for an optional value (of a tensor or sequence),
	// which may be empty.
	Optional bool
}

// Dim is one dimension of a ValueInfo: a fixed size, a symbolic name (such
// as "batch"), or neither (unknown).
type Dim struct {
	// Value is the size, or -1 when it is not fixed.
	Value int64
	// Param is the symbolic name of a dimension that is not fixed, or "".
	Param string
}

// String returns the size, the symbolic name, or "?".
func (d Dim) String() string {
	switch {
	case d.Value >= 0:
		return fmt.Sprint(d.Value)
	case d.Param != "":
		return d.Param
	}
	return "?"
}

// Load reads and checks the ONNX model in the file at path. External data
// is read relative to the file's directory.
func Load(path string) (*Model, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("%s: not a regular file", path)
	}
	m, err := Read(f, filepath.Dir(path))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return m, nil
}

// Read reads and checks an ONNX model (a serialized ModelProto) from r,
// at most MaxModelBytes. External data is read relative to dir; with an
// empty dir a model with external data is refused.
func Read(r io.Reader, dir string) (*Model, error) {
	data, err := io.ReadAll(io.LimitReader(r, readLimit+1))
	if err != nil {
		return nil, fmt.Errorf("reading the model: %w", err)
	}
	if int64(len(data)) > readLimit {
		return nil, fmt.Errorf("the model is larger than %d bytes", readLimit)
	}
	var mp pb.ModelProto
	if err := unmarshal(data, &mp); err != nil {
		return nil, fmt.Errorf("decoding the model: %w", err)
	}
	return fromProto(&mp, dir)
}

func unmarshal(data []byte, m proto.Message) error {
	return proto.UnmarshalOptions{RecursionLimit: 100}.Unmarshal(data, m)
}

// fromProto checks a decoded model and builds the Model.
func fromProto(mp *pb.ModelProto, dir string) (*Model, error) {
	m := &Model{IRVersion: mp.GetIrVersion(), Opsets: map[string]int64{}, src: mp}
	m.Producer = mp.GetProducerName()
	if v := mp.GetProducerVersion(); v != "" {
		m.Producer += " " + v
	}
	for _, o := range mp.GetOpsetImport() {
		d := o.GetDomain()
		if d == "ai.onnx" {
			d = ""
		}
		if _, dup := m.Opsets[d]; dup {
			return nil, fmt.Errorf("opset domain %q is imported twice", d)
		}
		m.Opsets[d] = o.GetVersion()
	}
	if len(mp.GetOpsetImport()) == 0 {
		// IR version 3 and later require an import; older models meant
		// opset 1 of the default domain.
		m.Opsets[""] = 1
	}
	g := mp.GetGraph()
	if g == nil {
		return nil, errors.New("the model has no graph")
	}
	if len(g.GetSparseInitializer()) > 0 {
		return nil, errors.New("sparse initializers are not supported")
	}
	defined := map[string]string{} // name → what defines it
	inits := map[string]bool{}
	for i, tp := range g.GetInitializer() {
		t, err := decodeTensor(tp, dir)
		if err != nil {
			return nil, fmt.Errorf("initializer %d: %w", i, err)
		}
		if t.Name == "" {
			return nil, fmt.Errorf("initializer %d has no name", i)
		}
		if what, dup := defined[t.Name]; dup {
			return nil, fmt.Errorf("initializer %d: name %q is already %s", i, t.Name, what)
		}
		defined[t.Name] = fmt.Sprintf("initializer %d", i)
		inits[t.Name] = true
		m.Initializers = append(m.Initializers, t)
	}
	seenInput := map[string]bool{}
	for i, vi := range g.GetInput() {
		info, err := valueInfo(vi)
		if err != nil {
			return nil, fmt.Errorf("graph input %d: %w", i, err)
		}
		if seenInput[info.Name] {
			return nil, fmt.Errorf("graph input %d: name %q is listed twice", i, info.Name)
		}
		seenInput[info.Name] = true
		if inits[info.Name] {
			continue // an initializer listed as an input too: it keeps its value
		}
		defined[info.Name] = fmt.Sprintf("graph input %d", i)
		m.Inputs = append(m.Inputs, info)
	}
	nodes := g.GetNode()
	producer := map[string]int{}
	for i, n := range nodes {
		for _, out := range n.GetOutput() {
			if out == "" {
				continue
			}
			if what, dup := defined[out]; dup {
				return nil, fmt.Errorf("%s: output %q is already %s", nodeName(n, i), out, what)
			}
			if j, dup := producer[out]; dup {
				return nil, fmt.Errorf("%s: output %q is also an output of %s", nodeName(n, i), out, nodeName(nodes[j], j))
			}
			producer[out] = i
		}
	}
	for i, n := range nodes {
		if n.GetOpType() == "" {
			return nil, fmt.Errorf("node %d has no op type", i)
		}
		for _, in := range n.GetInput() {
			if in == "" {
				continue
			}
			if _, ok := defined[in]; ok {
				continue
			}
			if _, ok := producer[in]; !ok {
				return nil, fmt.Errorf("%s: input %q is produced by no node and is no graph input or initializer", nodeName(n, i), in)
			}
		}
	}
	// Topological order (the file should already be sorted; sort anyway,
	// finding cycles): Kahn's algorithm keeping file order among ready nodes.
	indeg := make([]int, len(nodes))
	users := make([][]int, len(nodes))
	for i, n := range nodes {
		for _, in := range n.GetInput() {
			if j, ok := producer[in]; ok && in != "" {
				indeg[i]++
				users[j] = append(users[j], i)
			}
		}
	}
	// Smallest index first, so that a sorted file keeps its order.
	ready := &intHeap{}
	for i := range nodes {
		if indeg[i] == 0 {
			heap.Push(ready, i)
		}
	}
	for ready.Len() > 0 {
		i := heap.Pop(ready).(int)
		m.nodes = append(m.nodes, nodes[i])
		m.index = append(m.index, i)
		for _, u := range users[i] {
			indeg[u]--
			if indeg[u] == 0 {
				heap.Push(ready, u)
			}
		}
	}
	if len(m.nodes) != len(nodes) {
		for i, n := range nodes {
			if indeg[i] > 0 {
				return nil, fmt.Errorf("%s is part of a cycle of the graph", nodeName(n, i))
			}
		}
	}
	seenOutput := map[string]bool{}
	for i, vi := range g.GetOutput() {
		info, err := valueInfo(vi)
		if err != nil {
			return nil, fmt.Errorf("graph output %d: %w", i, err)
		}
		if seenOutput[info.Name] {
			return nil, fmt.Errorf("graph output %d: name %q is listed twice", i, info.Name)
		}
		seenOutput[info.Name] = true
		if _, ok := producer[info.Name]; !ok {
			if _, ok := defined[info.Name]; !ok {
				return nil, fmt.Errorf("graph output %d: %q is produced by no node and is no graph input or initializer", i, info.Name)
			}
		}
		m.Outputs = append(m.Outputs, info)
	}
	m.assignNames()
	return m, nil
}

// intHeap is a min-heap of node indices.
type intHeap []int

func (h intHeap) Len() int           { return len(h) }
func (h intHeap) Less(i, j int) bool { return h[i] < h[j] }
func (h intHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *intHeap) Push(x any)        { *h = append(*h, x.(int)) }
func (h *intHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// valueInfo decodes a graph input or output's description.
func valueInfo(vi *pb.ValueInfoProto) (ValueInfo, error) {
	info := ValueInfo{Name: vi.GetName()}
	if info.Name == "" {
		return info, errors.New("no name")
	}
	tp := vi.GetType()
	if tp == nil {
		return info, fmt.Errorf("%q has no type", info.Name)
	}
	if ot := tp.GetOptionalType(); ot != nil && ot.GetElemType() != nil {
		info.Optional = true
		tp = ot.GetElemType()
	}
	tt := tp.GetTensorType()
	if st := tp.GetSequenceType(); st != nil && st.GetElemType().GetTensorType() != nil {
		info.Sequence = true
		tt = st.GetElemType().GetTensorType()
	}
	if tt == nil {
		kind := "a non-tensor type"
		switch {
		case tp.GetSequenceType() != nil:
			kind = "a sequence"
		case tp.GetMapType() != nil:
			kind = "a map"
		case tp.GetOptionalType() != nil:
			kind = "an optional"
		case tp.GetSparseTensorType() != nil:
			kind = "a sparse tensor"
		}
		return info, fmt.Errorf("%q is %s; only tensors are supported", info.Name, kind)
	}
	info.Type = DataType(tt.GetElemType())
	if sh := tt.GetShape(); sh != nil {
		info.HasShape = true
		info.Shape = []Dim{}
		for _, d := range sh.GetDim() {
			switch v := d.GetValue().(type) {
			case *pb.TensorShapeProto_Dimension_DimValue:
				if v.DimValue < 0 || v.DimValue > MaxElements {
					return info, fmt.Errorf("%q: dimension %d is out of range", info.Name, v.DimValue)
				}
				info.Shape = append(info.Shape, Dim{Value: v.DimValue})
			case *pb.TensorShapeProto_Dimension_DimParam:
				info.Shape = append(info.Shape, Dim{Value: -1, Param: v.DimParam})
			default:
				info.Shape = append(info.Shape, Dim{Value: -1})
			}
		}
	}
	return info, nil
}

// nodeName names node n, the i-th of its graph, for messages:
// `node 3 "conv1" (Conv)`.
func nodeName(n *pb.NodeProto, i int) string {
	if n.GetName() != "" {
		return fmt.Sprintf("node %d %q (%s)", i, n.GetName(), n.GetOpType())
	}
	return fmt.Sprintf("node %d (%s)", i, n.GetOpType())
}
