package nn

import (
	"errors"
	"fmt"
	"io"
	"slices"

	"github.com/tartanml/tartan/backend"
	"github.com/tartanml/tartan/tile"
)

// Model is a network of layers from input nodes to output nodes, made by
// Sequential or Functional. It owns the values of its weights and, once
// compiled, its optimizer state and the executables that train and run it.
// A Model is not safe for concurrent use.
type Model struct {
	name    string
	class   string // "Sequential" or "Functional"
	inputs  []*Node
	outputs []*Node
	nodes   []*Node // every node, in a topological order, inputs first
	layers  []Layer // distinct layers in order of first use, input layers included
	weights []*Weight

	st    *store
	dev   backend.Device
	comp  *compiled
	progs map[progKey]*program
	seed  int64 // seeds dropout and shuffling
	stats Stats
	spare []*batch // batch buffers kept between calls (takeBatches)

	// Set while Fit runs.
	history    *History     // the History of the last Fit
	stop       bool         // a callback asked to stop
	stopReason string       // why
	logOut     io.Writer    // where warnings go
	bar        *progressBar // the epoch's progress bar
}

// Stats counts the work of compiling a model's executables.
type Stats struct {
	// Compiles is the number of executables compiled.
	Compiles int
	// CompileSeconds is the time spent building and compiling them.
	CompileSeconds float64
}

// assemble is the constructor shared by Sequential and Functional: it checks
// the nodes, orders them, names the layers and checks that the weights fit
// in memory. It allocates none of them: initialized draws them, Load reads
// them.
func assemble(name, class string, inputs, outputs []*Node) (*Model, error) {
	if !validLayerName(name) {
		return nil, fmt.Errorf("nn: %s: model name %q is not usable (letters, digits, _ . -, not starting with a digit)", class, name)
	}
	if len(inputs) == 0 || len(outputs) == 0 {
		return nil, fmt.Errorf("nn: %s %q: needs at least one input and one output node", class, name)
	}
	for i, n := range inputs {
		if n == nil {
			return nil, fmt.Errorf("nn: %s %q: input %d is nil", class, name, i)
		}
		if n.err != nil {
			return nil, nestf(n.err, "%s %q", class, name)
		}
		if _, ok := n.layer.(*inputLayer); !ok {
			return nil, fmt.Errorf("nn: %s %q: input %d comes from layer %s, not from Input", class, name, i, layerDesc(n.layer))
		}
	}
	for i, n := range outputs {
		if n == nil {
			return nil, fmt.Errorf("nn: %s %q: output %d is nil", class, name, i)
		}
		if n.err != nil {
			return nil, nestf(n.err, "%s %q", class, name)
		}
	}
	m := &Model{name: name, class: class, inputs: inputs, outputs: outputs, progs: map[progKey]*program{}}

	// Depth-first from the outputs, arguments before users: a topological
	// order in which every node follows its inputs.
	seen := map[*Node]bool{}
	var visit func(n *Node) error
	visit = func(n *Node) error {
		if seen[n] {
			return nil
		}
		seen[n] = true
		if _, ok := n.layer.(*inputLayer); ok {
			if !slices.Contains(inputs, n) {
				return fmt.Errorf("nn: %s %q: the outputs depend on an Input%s that is not among the model's inputs", class, name, fmtShape(n.shape))
			}
		}
		for _, x := range n.in {
			if err := visit(x); err != nil {
				return err
			}
		}
		m.nodes = append(m.nodes, n)
		return nil
	}
	for _, n := range inputs {
		seen[n] = true
		m.nodes = append(m.nodes, n)
	}
	for _, n := range outputs {
		if err := visit(n); err != nil {
			return nil, err
		}
	}
	for _, n := range m.nodes {
		if !slices.Contains(m.layers, n.layer) {
			m.layers = append(m.layers, n.layer)
		}
	}
	if err := m.nameLayers(); err != nil {
		return nil, err
	}
	if class == "Sequential" {
		for _, l := range m.layers {
			if k := outputCount(l); k > 1 {
				return nil, fmt.Errorf("nn: Sequential %q: layer %s gives %d outputs (return_state); a Sequential model takes layers of one output: use Functional and ApplyAll", name, layerDesc(l), k)
			}
		}
	}
	for i, l := range m.layers {
		l.base().stream = uint64(i + 1)
		m.weights = append(m.weights, l.Weights()...)
	}
	m.st = newStore()
	if err := m.checkWeightMemory(); err != nil {
		return nil, err
	}
	return m, nil
}

// initialized draws the initial weights of a model assemble returned, as
// InitWeights(0) does.
func initialized(m *Model, err error) (*Model, error) {
	if err != nil {
		return nil, err
	}
	if err := m.InitWeights(0); err != nil {
		return nil, err
	}
	return m, nil
}

// nameLayers gives every unnamed layer Keras's automatic name and rejects
// two layers of one name.
func (m *Model) nameLayers() error {
	used := map[string]Layer{}
	for _, l := range m.layers {
		if n := l.Name(); n != "" {
			if other, dup := used[n]; dup && other != l {
				return fmt.Errorf("nn: %s %q: two layers are named %q (%s and %s)", m.class, m.name, n, l.ClassName(), other.ClassName())
			}
			used[n] = l
		}
	}
	for l, n := range plannedNames(m.layers) {
		l.base().name = n
	}
	return nil
}

// plannedNames returns the name each of layers has or gets when a model
// holds them in this order: its own, or Keras's automatic one (the
// snake-case class name, then _1, _2, … skipping names taken). Nil layers
// are skipped.
func plannedNames(layers []Layer) map[Layer]string {
	names := map[Layer]string{}
	used := map[string]bool{}
	for _, l := range layers {
		if l != nil && l.Name() != "" {
			names[l] = l.Name()
			used[l.Name()] = true
		}
	}
	counts := map[string]int{}
	for _, l := range layers {
		if l == nil || names[l] != "" {
			continue
		}
		base := snakeCase(l.ClassName())
		if _, ok := l.(*inputLayer); ok {
			base = "input_layer"
		}
		for {
			k := counts[base]
			counts[base]++
			cand := base
			if k > 0 {
				cand = fmt.Sprintf("%s_%d", base, k)
			}
			if !used[cand] {
				names[l] = cand
				used[cand] = true
				break
			}
		}
	}
	return names
}

// calls returns the model's layer calls in the order their nodes come, each
// as the node of its first output (see Node.call), and each call's number
// among the calls of its layer, from 0.
func (m *Model) calls() ([]*Node, map[*Node]int) {
	var out []*Node
	index := map[*Node]int{}
	count := map[Layer]int{}
	for _, n := range m.nodes {
		c := n.call()
		if _, seen := index[c]; seen {
			continue
		}
		index[c] = count[c.layer]
		count[c.layer]++
		out = append(out, c)
	}
	return out, index
}

// Name returns the model's name.
func (m *Model) Name() string { return m.name }

// Layers returns the model's layers in order, input layers first for a
// functional model and absent from a sequential one, as Keras lists them.
func (m *Model) Layers() []Layer {
	var out []Layer
	for _, l := range m.layers {
		if _, ok := l.(*inputLayer); ok && m.class == "Sequential" {
			continue
		}
		out = append(out, l)
	}
	return out
}

// Layer returns the layer called name, or nil.
func (m *Model) Layer(name string) Layer {
	for _, l := range m.layers {
		if l.Name() == name {
			return l
		}
	}
	return nil
}

// Weights returns every weight of the model, layer by layer.
func (m *Model) Weights() []*Weight { return m.weights }

// InputShape returns the per-sample shape of the model's first input.
func (m *Model) InputShape() []int { return m.inputs[0].shape.Clone() }

// OutputShape returns the per-sample shape of the model's first output.
func (m *Model) OutputShape() []int { return m.outputs[0].shape.Clone() }

// CountParams returns the number of weight elements: all of them, and the
// trainable ones.
func (m *Model) CountParams() (total, trainable int) {
	for _, w := range m.weights {
		total += w.Size()
		if w.trainable {
			trainable += w.Size()
		}
	}
	return total, trainable
}

// Stats returns how much compiling the model's executables has cost so far.
func (m *Model) Stats() Stats { return m.stats }

// InitWeights draws every weight afresh from its initializer. The values
// depend only on seed and the weight's name, so a model built the same way
// starts the same way. Models start from InitWeights(0).
func (m *Model) InitWeights(seed int64) error {
	for _, w := range m.weights {
		// A weight declared here for the first time is filled in place, so
		// that its values are allocated once.
		var v []float32
		if !m.st.has(w.Name()) {
			v = m.st.declare(w.Name(), tile.Float32, w.shape).f32
		} else {
			v = make([]float32, w.Size())
		}
		w.init.fill(v, w.shape, weightRNG(seed, w.Name()))
		if err := m.st.setF32(w.Name(), v); err != nil {
			return err
		}
	}
	return nil
}

// GetWeight returns a copy of the current value of the weight called name.
func (m *Model) GetWeight(name string) (*Array, error) {
	w := m.weight(name)
	if w == nil {
		return nil, fmt.Errorf("nn: model %q has no weight %q", m.name, name)
	}
	v, err := m.st.f32(name)
	if err != nil {
		return nil, err
	}
	return &Array{Shape: w.shape.Clone(), Data: slices.Clone(v)}, nil
}

// SetWeight replaces the value of the weight called name; a must have the
// weight's shape.
func (m *Model) SetWeight(name string, a *Array) error {
	w := m.weight(name)
	if w == nil {
		return fmt.Errorf("nn: model %q has no weight %q", m.name, name)
	}
	if a == nil || !tile.Shape(a.Shape).Equal(w.shape) || len(a.Data) != w.Size() {
		got := "nil"
		if a != nil {
			got = fmt.Sprintf("%v (%d values)", a.Shape, len(a.Data))
		}
		return fmt.Errorf("nn: weight %q is %v, got %s", name, w.shape, got)
	}
	return m.st.setF32(name, slices.Clone(a.Data))
}

func (m *Model) weight(name string) *Weight {
	for _, w := range m.weights {
		if w.Name() == name {
			return w
		}
	}
	return nil
}

// SetDevice makes the model run on dev from now on. Compile's OnDevice
// option does the same.
func (m *Model) SetDevice(dev backend.Device) error {
	if dev == nil {
		return errors.New("nn: SetDevice: nil device")
	}
	if dev != m.dev {
		if err := m.syncAll(); err != nil {
			return err
		}
		m.dropPrograms()
		m.dev = dev
	}
	return nil
}

// Device returns the device the model runs on, nil before one is chosen.
func (m *Model) Device() backend.Device { return m.dev }

// StopTraining asks Fit to stop after the current epoch, as setting Keras's
// model.stop_training does. Callbacks call it.
func (m *Model) StopTraining() { m.stop = true }

// Close releases the model's executables. The model keeps its weights and
// can run again; it compiles anew when it does.
func (m *Model) Close() error {
	if err := m.syncAll(); err != nil {
		return err
	}
	return m.dropPrograms()
}

// forward adds the model's computation to c's graph, with xs bound to the
// model's inputs, and returns the outputs. An error names the layer whose
// computation failed.
func (m *Model) forward(c *callContext, xs []*tile.Tensor) ([]*tile.Tensor, error) {
	vals := map[*Node]*tile.Tensor{}
	for i, n := range m.inputs {
		vals[n] = xs[i]
	}
	for _, n := range m.nodes {
		if _, ok := vals[n]; ok {
			continue
		}
		args := make([]*tile.Tensor, len(n.in))
		for i, x := range n.in {
			args[i] = vals[x]
		}
		// A call of several outputs is computed once, when the first of
		// its nodes comes, and gives every node its tensor.
		nodes := []*Node{n}
		var outs []*tile.Tensor
		if n.outs != nil {
			nodes = n.outs
			outs = n.layer.(multiOutputLayer).callAll(c, args)
		} else {
			outs = []*tile.Tensor{n.layer.call(c, args)}
		}
		if len(outs) != len(nodes) {
			return nil, fmt.Errorf("nn: layer %s: a call gave %d outputs, want %d", layerDesc(n.layer), len(outs), len(nodes))
		}
		for i, o := range nodes {
			vals[o] = outs[i]
		}
		c.passMask(n.layer, args, outs[0])
		if err := c.g.Err(); err != nil {
			return nil, nestf(err, "layer %s", layerDesc(n.layer))
		}
	}
	outs := make([]*tile.Tensor, len(m.outputs))
	for i, n := range m.outputs {
		outs[i] = vals[n]
	}
	return outs, nil
}

// declareWeights adds a variable for every weight to c's graph.
func (m *Model) declareWeights(c *callContext) {
	for _, w := range m.weights {
		c.vars[w] = c.g.Variable(w.Name(), tile.Float32, w.shape)
	}
}
