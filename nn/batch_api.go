package nn

import (
	"fmt"

	"github.com/tartanml/tartan/tile"
)

// TrainOnBatch runs one training step on the batch of inputs x and targets
// y, as Keras's train_on_batch does: one optimizer update over all of x's
// samples (however many), with dropout on. It returns the loss and metrics
// of this batch alone, measured in the step with the weights before the
// update: the training accumulators are reset first, as Keras's default
// reset_metrics=True does, so they never carry over from an earlier call
// or from Fit. The data is checked as Fit checks it; the first call for a
// batch size compiles a step for it, silently.
func (m *Model) TrainOnBatch(x, y *Array) (Logs, error) {
	return m.onBatch("TrainOnBatch", trainProg, "train", x, y)
}

// TestOnBatch returns the loss and metrics of the model on the batch of
// inputs x and targets y, as Keras's test_on_batch does: in inference mode,
// changing no weight, and for this batch alone (reset_metrics=True).
func (m *Model) TestOnBatch(x, y *Array) (Logs, error) {
	return m.onBatch("TestOnBatch", evalProg, "eval", x, y)
}

// onBatch runs one step of kind on x and y and returns the logs of the
// accumulators of prefix.
func (m *Model) onBatch(what string, kind progKind, prefix string, x, y *Array) (Logs, error) {
	if m.comp == nil {
		return nil, fmt.Errorf("nn: %s %q: %w", what, m.name, errNotCompiled)
	}
	if y == nil {
		return nil, fmt.Errorf("nn: %s %q: no targets", what, m.name)
	}
	xs, ys, n, err := m.batchData(what, x, y)
	if err != nil {
		return nil, err
	}
	p, err := m.program(progKey{kind, n})
	if err != nil {
		return nil, err
	}
	if err := m.resetAccumulators(prefix); err != nil {
		return nil, err
	}
	if err := m.st.run(p, map[string]any{"x": xs, "y": ys}); err != nil {
		return nil, nestf(err, "%s %q", what, m.name)
	}
	return m.readLogs(prefix, "")
}

// PredictOnBatch returns the model's outputs for the batch of inputs x, of
// shape (samples, output…), as Keras's predict_on_batch does: one step in
// inference mode over all of x's samples. A model that is not compiled can
// predict once it has a device (SetDevice).
func (m *Model) PredictOnBatch(x *Array) (*Array, error) {
	if err := m.single("PredictOnBatch"); err != nil {
		return nil, err
	}
	xs, _, n, err := m.batchData("PredictOnBatch", x, nil)
	if err != nil {
		return nil, err
	}
	per := m.outputs[0].shape.Size()
	if err := checkBatchBuffers("PredictOnBatch", n, 1, per, 0); err != nil {
		return nil, err
	}
	p, err := m.program(progKey{predictProg, n})
	if err != nil {
		return nil, err
	}
	if err := m.st.run(p, map[string]any{"x": xs}); err != nil {
		return nil, nestf(err, "PredictOnBatch %q", m.name)
	}
	out := &Array{Shape: append([]int{n}, m.outputs[0].shape...), Data: make([]float32, n*per)}
	if err := p.exe.ReadOutput("pred", out.Data); err != nil {
		return nil, nestf(err, "PredictOnBatch %q: reading the outputs", m.name)
	}
	return out, nil
}

// batchData checks a batch as Fit checks its samples (y nil: inputs only)
// and returns the inputs and targets as the step binds them, and the
// number of samples.
func (m *Model) batchData(what string, x, y *Array) ([]float32, []float32, int, error) {
	if x == nil {
		return nil, nil, 0, fmt.Errorf("nn: %s %q: no inputs", what, m.name)
	}
	s, err := FromArrays(x, y)
	if err != nil {
		return nil, nil, 0, nestf(err, "%s %q", what, m.name)
	}
	if err := m.checkSamples("batch", s, y != nil); err != nil {
		return nil, nil, 0, nestf(err, "%s %q", what, m.name)
	}
	n := s.Len()
	in := tile.Shape(m.inputs[0].shape).Size()
	tgt := 0
	if y != nil {
		tgt = m.comp.target.Size()
	}
	if err := checkBatchBuffers(what, n, 1, in, tgt); err != nil {
		return nil, nil, 0, err
	}
	idx := make([]int, n)
	for i := range idx {
		idx[i] = i
	}
	xs := make([]float32, n*in)
	var ys []float32
	if y != nil {
		ys = make([]float32, n*tgt)
	}
	if err := s.Read(idx, xs, ys); err != nil {
		return nil, nil, 0, nestf(err, "%s %q: reading the batch", what, m.name)
	}
	return xs, ys, n, nil
}
