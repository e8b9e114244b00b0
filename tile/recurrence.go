package tile

// RecurrenceOp is the state sequence of a recurrence over the leading (time)
// axis: the node S built by Graph.Recurrence from an initial state init, and
// closed by Graph.CloseRecurrence with the tensor next computed from S. For a
// forward recurrence
//
//	S[0] = init, S[t] = next[t-1] for 0 < t < Steps,
//
// and for a reverse one S[Steps-1] = init, S[t] = next[t+1]. The node's only
// argument is init; next is held by the op, since it is built after S and
// from it. A recurrence is how a loop is written in tile: the nodes between S
// and next are computed one time step after another, each step reading the
// state the step before it left, and compile runs them as a loop whose
// kernels do not multiply with Steps. Every node on a path from S to next
// must compute step t of its result from step t of the values on the path
// (and anything off the path), which is what an RNN cell applied to a
// sequence does; compile reports a node that does not.
type RecurrenceOp struct {
	Steps   int
	Reverse bool
	next    *Tensor
}

// Kind implements Op.
func (*RecurrenceOp) Kind() string { return "recurrence" }

// Next returns the tensor the recurrence was closed with, or nil while it is
// open.
func (o *RecurrenceOp) Next() *Tensor { return o.next }

// Recurrence returns the state sequence of a new recurrence over steps time
// steps starting from init: a tensor of shape [steps, init's shape...]
// (see RecurrenceOp). The recurrence must be closed with CloseRecurrence
// before the graph is compiled or evaluated.
func (g *Graph) Recurrence(init *Tensor, steps int, reverse bool) *Tensor {
	if !g.check("recurrence", init) {
		return g.invalid()
	}
	if steps < 1 {
		return g.Errorf("recurrence", "steps must be at least 1, got %d", steps)
	}
	shape := append(Shape{steps}, init.shape...)
	return g.add(&RecurrenceOp{Steps: steps, Reverse: reverse}, init.dtype, shape, init)
}

// CloseRecurrence binds the recurrence whose state sequence is state to next,
// the sequence of states its steps compute: next must have state's dtype and
// shape, and a recurrence is closed once. Next is normally built after state
// and from it; one built before it makes the state a plain shift of next.
func (g *Graph) CloseRecurrence(state, next *Tensor) {
	if !g.check("close", state, next) {
		return
	}
	op, ok := state.op.(*RecurrenceOp)
	switch {
	case !ok:
		g.Errorf("close", "%v is not a recurrence", state)
	case op.next != nil:
		g.Errorf("close", "recurrence %v is already closed with %v", state, op.next)
	case next.dtype != state.dtype || !next.shape.Equal(state.shape):
		g.Errorf("close", "recurrence %v is %s%v but its next states %v are %s%v", state, state.dtype, state.shape, next, next.dtype, next.shape)
	case next == state:
		g.Errorf("close", "recurrence %v cannot be its own next states", state)
	default:
		op.next = next
		g.closes = append(g.closes, state)
	}
}

// Recurrences returns the state nodes of the graph's recurrences, in the
// order they were closed. The slice must not be modified.
func (g *Graph) Recurrences() []*Tensor { return g.closes }
