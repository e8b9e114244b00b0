package grad

import "github.com/tartanml/tartan/tile"

// A recurrence's state sequence S (see tile.RecurrenceOp) is a shifted copy
// of its next states with the initial state in the first step, so its
// cotangent dS flows back shifted the other way: for a forward recurrence
//
//	d(init) = dS[0], d(next)[t] += dS[t+1] for t < Steps-1,
//
// and the second is itself a recurrence, run in the opposite direction from
// a zero initial state and closed with dS. The walk opens it when it reaches
// next, whose consumers have all contributed by then, and closes it when it
// reaches S, whose cotangent is complete then; the nodes in between, the
// cotangents of the cell, are what the reverse-time loop computes.

// openAdjoint starts the reverse recurrence that carries state's cotangent
// back into its next states, and returns its state sequence.
func openAdjoint(g *tile.Graph, state *tile.Tensor) *tile.Tensor {
	r := state.Op().(*tile.RecurrenceOp)
	init := state.Args()[0]
	return g.Recurrence(zeros(g, init), r.Steps, !r.Reverse)
}

// recurrenceRule returns the cotangent of a recurrence's initial state: the
// step of dS that init fills.
func recurrenceRule(g *tile.Graph, t, dy *tile.Tensor) *tile.Tensor {
	r := t.Op().(*tile.RecurrenceOp)
	first := 0
	if r.Reverse {
		first = r.Steps - 1
	}
	start := make([]int, t.Rank())
	stop := t.Shape()
	start[0], stop[0] = first, first+1
	return g.Reshape(g.Slice(dy, start, stop, nil), t.Args()[0].Shape())
}
