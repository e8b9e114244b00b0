package nn

import (
	"fmt"
)

// TrainOnBatch runs one training step on the batch of inputs x and targets
// y, as Keras's train_on_batch does: one optimizer update over all of x's
// samples (however many), with dropout on. It returns the loss and metrics
// of this batch alone, measured in the step with the weights before the
// update: the training accumulators are reset first, as Keras's default
// reset_metrics=True does, so they never carry over from an earlier call
// or from Fit. The data is checked as Fit checks it; the first call for a
// batch size compiles a step for it, silently. A model of several inputs
// or outputs trains with TrainOnBatchMulti.
func (m *Model) TrainOnBatch(x, y *Array) (Logs, error) {
	return m.onBatch("TrainOnBatch", trainProg, "train", []*Array{x}, []*Array{y})
}

// TestOnBatch returns the loss and metrics of the model on the batch of
// inputs x and targets y, as Keras's test_on_batch does: in inference mode,
// changing no weight, and for this batch alone (reset_metrics=True). A
// model of several inputs or outputs tests with TestOnBatchMulti.
func (m *Model) TestOnBatch(x, y *Array) (Logs, error) {
	return m.onBatch("TestOnBatch", evalProg, "eval", []*Array{x}, []*Array{y})
}

// TrainOnBatchMulti is TrainOnBatch for a model of any number of inputs
// and outputs: xs holds one Array per model input, ys one per output, in
// the model's orders, each with the same number of samples.
func (m *Model) TrainOnBatchMulti(xs, ys []*Array) (Logs, error) {
	return m.onBatch("TrainOnBatchMulti", trainProg, "train", xs, ys)
}

// TestOnBatchMulti is TestOnBatch for a model of any number of inputs and
// outputs, with arrays as TrainOnBatchMulti takes them.
func (m *Model) TestOnBatchMulti(xs, ys []*Array) (Logs, error) {
	return m.onBatch("TestOnBatchMulti", evalProg, "eval", xs, ys)
}

// onBatch runs one step of kind on xs and ys and returns the logs of the
// accumulators of prefix.
func (m *Model) onBatch(what string, kind progKind, prefix string, xs, ys []*Array) (Logs, error) {
	if m.comp == nil {
		return nil, fmt.Errorf("nn: %s %q: %w", what, m.name, errNotCompiled)
	}
	if len(ys) == 0 || len(ys) == 1 && ys[0] == nil {
		return nil, fmt.Errorf("nn: %s %q: no targets", what, m.name)
	}
	inputs, n, b, err := m.batchData(what, xs, ys)
	if err != nil {
		return nil, err
	}
	defer m.giveBatches(b)
	p, err := m.program(progKey{kind, n})
	if err != nil {
		return nil, err
	}
	if err := m.resetAccumulators(prefix); err != nil {
		return nil, err
	}
	if err := m.st.run(p, inputs); err != nil {
		return nil, nestf(err, "%s %q", what, m.name)
	}
	return m.readLogs(prefix, "")
}

// PredictOnBatch returns the model's outputs for the batch of inputs x, of
// shape (samples, output…), as Keras's predict_on_batch does: one step in
// inference mode over all of x's samples. A model that is not compiled can
// predict once it has a device (SetDevice). A model of several inputs or
// outputs predicts with PredictOnBatchMulti.
func (m *Model) PredictOnBatch(x *Array) (*Array, error) {
	if len(m.outputs) != 1 {
		return nil, fmt.Errorf("nn: PredictOnBatch: model %q has %d outputs (%s); use PredictOnBatchMulti, which returns one Array per output", m.name, len(m.outputs), quotedList(m.OutputNames()))
	}
	out, err := m.PredictOnBatchMulti([]*Array{x})
	if err != nil {
		return nil, err
	}
	return out[0], nil
}

// PredictOnBatchMulti is PredictOnBatch for a model of any number of inputs
// and outputs: xs holds one Array per model input, and it returns one
// Array per output, in the model's orders.
func (m *Model) PredictOnBatchMulti(xs []*Array) ([]*Array, error) {
	what := "PredictOnBatchMulti"
	if len(m.inputs) == 1 && len(m.outputs) == 1 {
		what = "PredictOnBatch"
	}
	inputs, n, b, err := m.batchData(what, xs, nil)
	if err != nil {
		return nil, err
	}
	defer m.giveBatches(b)
	pers := m.outputSizes()
	if err := checkBatchBuffers(what, n, 1, sum(pers), 0); err != nil {
		return nil, err
	}
	p, err := m.program(progKey{predictProg, n})
	if err != nil {
		return nil, err
	}
	if err := m.st.run(p, inputs); err != nil {
		return nil, nestf(err, "%s %q", what, m.name)
	}
	out := make([]*Array, len(m.outputs))
	for k, o := range m.outputs {
		out[k] = &Array{Shape: append([]int{n}, o.shape...), Data: make([]float32, n*pers[k])}
		if err := p.exe.ReadOutput(predName(k), out[k].Data); err != nil {
			return nil, nestf(err, "%s %q: reading the outputs", what, m.name)
		}
	}
	return out, nil
}

// batchData checks a batch as Fit checks its samples (ys nil: inputs only)
// and returns the step's inputs bound under their graph names, the number
// of samples, and the batch buffers holding them (hand them back with
// giveBatches once the step has run). Counts of arrays and of samples that do not match
// the model are named by input and output.
func (m *Model) batchData(what string, xs, ys []*Array) (map[string]any, int, *batch, error) {
	targets := ys != nil
	if len(xs) == 0 || len(xs) == 1 && xs[0] == nil {
		return nil, 0, nil, fmt.Errorf("nn: %s %q: no inputs", what, m.name)
	}
	if len(xs) != len(m.inputs) {
		return nil, 0, nil, fmt.Errorf("nn: %s %q: %s given, but the model takes %s", what, m.name, countNoun(len(xs), "input array"), m.inputList())
	}
	if targets && m.comp != nil && len(ys) != len(m.comp.heads) {
		return nil, 0, nil, fmt.Errorf("nn: %s %q: %s given, but the model has %s (%s), each needing one", what, m.name, countNoun(len(ys), "target array"), countNoun(len(m.comp.heads), "output"), quotedList(m.OutputNames()))
	}
	names := m.InputNames()
	for k, x := range xs {
		if x == nil {
			return nil, 0, nil, fmt.Errorf("nn: %s %q: the array of input %q is nil", what, m.name, names[k])
		}
	}
	var s MultiSamples
	var err error
	if len(xs) == 1 && (!targets || len(ys) == 1) {
		// One input and one target: the checks and messages of FromArrays.
		var y *Array
		if targets {
			y = ys[0]
		}
		var ss Samples
		if ss, err = FromArrays(xs[0], y); err == nil {
			s = singleSamples{ss}
		}
	} else {
		outs := m.OutputNames()
		for k, y := range ys {
			if y == nil {
				return nil, 0, nil, fmt.Errorf("nn: %s %q: the target array of output %q is nil", what, m.name, outs[k])
			}
		}
		n := -1
		if len(xs[0].Shape) > 0 {
			n = xs[0].Shape[0]
		}
		for k, x := range xs {
			if len(x.Shape) < 1 || x.Shape[0] != n {
				return nil, 0, nil, fmt.Errorf("nn: %s %q: input %q has shape %v, input %q %v: every array needs a first dimension counting the same samples", what, m.name, names[k], x.Shape, names[0], xs[0].Shape)
			}
		}
		for k, y := range ys {
			if len(y.Shape) < 1 || y.Shape[0] != n {
				return nil, 0, nil, fmt.Errorf("nn: %s %q: the targets of output %q have shape %v, but input %q has %d samples (shape %v)", what, m.name, outs[k], y.Shape, names[0], n, xs[0].Shape)
			}
		}
		s, err = FromArrayLists(xs, ys)
	}
	if err != nil {
		return nil, 0, nil, nestf(err, "%s %q", what, m.name)
	}
	if err := m.checkSamples("batch", s, targets); err != nil {
		return nil, 0, nil, nestf(err, "%s %q", what, m.name)
	}
	n := s.Len()
	ins := m.inputSizes()
	var tgts []int
	if targets {
		tgts = m.targetSizes()
	}
	if err := checkBatchBuffers(what, n, 1, sum(ins), sum(tgts)); err != nil {
		return nil, 0, nil, err
	}
	idx := make([]int, n)
	for i := range idx {
		idx[i] = i
	}
	b := m.takeBatches(1, n, ins, tgts)[0]
	if err := s.ReadMulti(idx, b.xs, b.ys); err != nil {
		m.giveBatches(b)
		return nil, 0, nil, nestf(err, "%s %q: reading the batch", what, m.name)
	}
	inputs := map[string]any{}
	b.bind(inputs, n, ins, tgts)
	return inputs, n, b, nil
}
