package nn

import (
	"fmt"
	"math"
	"slices"

	"github.com/tartanml/tartan/tile"
)

// targetHint returns what a target shape got, which does not suit the
// loss, suggests, as text to append to the error ("" for nothing): a Dense
// layer applied to samples of more than one axis (which classifies every
// position of the last axis, not the sample), one-hot targets for a sparse
// loss, or class indices for a categorical one. The last two look at the
// first targets of s.
func (m *Model) targetHint(s Samples, got []int) string {
	out := m.outputs[0].shape
	if len(out) >= 2 {
		for _, n := range m.nodes {
			if _, ok := n.layer.(*denseLayer); ok && len(n.in) == 1 && len(n.in[0].shape) >= 2 {
				return fmt.Sprintf("; layer %s gets input %s and applies to its last axis only, giving %s: add a Flatten layer before it to classify whole samples",
					layerDesc(n.layer), fmtShape(n.in[0].shape), fmtShape(n.shape))
			}
		}
		return ""
	}
	if len(out) != 1 {
		return ""
	}
	classes := out[0]
	switch m.comp.loss.Name() {
	case "sparse_categorical_crossentropy":
		if len(got) != 1 {
			return ""
		}
		if got[0] == classes {
			return fmt.Sprintf("; they look one-hot (%d values a sample, one per class of the model's output %s): use CategoricalCrossentropy for one-hot targets, or give class indices 0 to %d",
				classes, fmtShape(out), classes-1)
		}
		if y := firstTargets(s, got); y != nil && allOneHot(y, got[0]) {
			return fmt.Sprintf("; they look one-hot (each a single 1 among %d values), but the model's output %s has %d classes: use CategoricalCrossentropy and a model of %d outputs, or give class indices 0 to %d",
				got[0], fmtShape(out), classes, got[0], classes-1)
		}
	case "categorical_crossentropy":
		if len(got) > 1 || len(got) == 1 && got[0] != 1 {
			return ""
		}
		if y := firstTargets(s, got); y != nil && allIndices(y, classes) {
			return fmt.Sprintf("; they look like class indices (whole numbers from 0 to %d): use SparseCategoricalCrossentropy for class indices, or one-hot encode them as %s",
				classes-1, fmtDims(out))
		}
	}
	return ""
}

// firstTargets reads the targets, of per-sample shape shape, of up to the
// first 1024 samples of s, or returns nil if they cannot be read.
func firstTargets(s Samples, shape []int) []float32 {
	n := min(s.Len(), 1024)
	per := tile.Shape(shape).Size()
	idx := make([]int, n)
	for i := range idx {
		idx[i] = i
	}
	y := make([]float32, n*per)
	if err := s.Read(idx, nil, y); err != nil {
		return nil
	}
	return y
}

// allOneHot reports whether every row of k values of y holds a single 1
// and zeros.
func allOneHot(y []float32, k int) bool {
	if k < 1 {
		return false
	}
	for row := range slices.Chunk(y, k) {
		ones := 0
		for _, v := range row {
			switch v {
			case 1:
				ones++
			case 0:
			default:
				return false
			}
		}
		if ones != 1 {
			return false
		}
	}
	return len(y) > 0
}

// allIndices reports whether every value of y is a whole number in
// [0, classes).
func allIndices(y []float32, classes int) bool {
	for _, v := range y {
		if v != float32(math.Trunc(float64(v))) || v < 0 || int(v) >= classes {
			return false
		}
	}
	return len(y) > 0
}
