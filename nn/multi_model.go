package nn

import (
	"fmt"
	"strings"

	"github.com/tartanml/tartan/tile"
)

// inputSizes returns the number of values of one sample of each model
// input.
func (m *Model) inputSizes() []int {
	out := make([]int, len(m.inputs))
	for k, n := range m.inputs {
		out[k] = tile.Shape(n.shape).Size()
	}
	return out
}

// targetSizes returns the number of values of one sample of each target
// the compiled losses take.
func (m *Model) targetSizes() []int {
	out := make([]int, len(m.comp.heads))
	for k, h := range m.comp.heads {
		out[k] = h.target.Size()
	}
	return out
}

// outputSizes returns the number of values of one sample of each output.
func (m *Model) outputSizes() []int {
	out := make([]int, len(m.outputs))
	for k, n := range m.outputs {
		out[k] = n.shape.Size()
	}
	return out
}

func sum(v []int) int {
	t := 0
	for _, x := range v {
		t += x
	}
	return t
}

// quotedList formats names as "a", "b".
func quotedList(names []string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = fmt.Sprintf("%q", n)
	}
	return strings.Join(q, ", ")
}

// inputList and outputList describe the model's inputs and outputs for
// messages: "2 inputs ("a" (3,), "b" (4,))".
func (m *Model) inputList() string {
	parts := make([]string, len(m.inputs))
	for k, n := range m.inputs {
		parts[k] = fmt.Sprintf("%q %s", n.layer.Name(), fmtDims(n.shape))
	}
	return countNoun(len(parts), "input") + " (" + strings.Join(parts, ", ") + ")"
}

func countNoun(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}
