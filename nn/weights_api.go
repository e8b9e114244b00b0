package nn

import (
	"fmt"
	"slices"

	"github.com/tartanml/tartan/tile"
)

// GetWeights returns a copy of the value of every weight, as Keras's
// get_weights does: layer by layer in the model's order, each layer's in
// Keras's order (kernel, then bias; BatchNormalization's gamma, beta,
// moving_mean, moving_variance), frozen and non-trainable weights included.
// Weights lists the same weights in the same order.
func (m *Model) GetWeights() ([]*Array, error) {
	out := make([]*Array, len(m.weights))
	for i, w := range m.weights {
		v, err := m.st.f32(w.Name())
		if err != nil {
			return nil, nestf(err, "GetWeights %q", m.name)
		}
		out[i] = &Array{Shape: w.shape.Clone(), Data: slices.Clone(v)}
	}
	return out, nil
}

// SetWeights replaces the value of every weight by the arrays ws, in the
// order GetWeights returns them, as Keras's set_weights does. It checks the
// number of arrays and every array's shape against its weight, and changes
// nothing when any check fails.
func (m *Model) SetWeights(ws []*Array) error {
	if len(ws) != len(m.weights) {
		return fmt.Errorf("nn: SetWeights: model %q has %d weights, got %d arrays", m.name, len(m.weights), len(ws))
	}
	for i, a := range ws {
		w := m.weights[i]
		if a == nil {
			return fmt.Errorf("nn: SetWeights: array %d (for weight %q, %s) is nil", i, w.Name(), fmtDims(w.shape))
		}
		if !tile.Shape(a.Shape).Equal(w.shape) || len(a.Data) != w.Size() {
			return fmt.Errorf("nn: SetWeights: array %d is %s (%d values), but weight %q is %s", i, fmtDims(a.Shape), len(a.Data), w.Name(), fmtDims(w.shape))
		}
	}
	for i, a := range ws {
		if err := m.st.setF32(m.weights[i].Name(), slices.Clone(a.Data)); err != nil {
			return err
		}
	}
	return nil
}
