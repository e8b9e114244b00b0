package onnx

import (
	"errors"
	"fmt"

	"github.com/tartanml/tartan/onnx/internal/pb"
	"github.com/tartanml/tartan/tile"
)

// Control flow.
//
// If: with a condition known when converting, the branch taken is
// inlined; with one computed while running, both branches are converted
// and their outputs selected elementwise (Where), which is exact since
// branches have no side effects, and keeps a NaN of the branch not taken
// out of the result. The branches' outputs must then agree in type and
// shape (sequences in length too); otherwise the error names the output
// and both shapes, and is a ValueNeededError when fixing graph inputs
// (Options.Values) would make the condition known.
//
// Loop: when every value is known, the iterations are computed while
// converting, each body on a graph of its own, so nothing is left in the
// graph. Otherwise, with a trip count M known when converting, the body is
// converted once for all iterations and becomes one recurrence over M
// steps (body.go): the loop-carried values are recurrence states (one per
// value; a value the body passes through stays as it is), the iteration
// number is a tensor of the step indices, scan outputs are the per-step
// values stacked, and outer values the body reads are computed once,
// outside the loop. The graph does not grow with M. A condition computed
// while running (the initial one or the body's) is a further state,
// whether the loop still runs: once it fails, the carried values stay as
// they are, so their final values are exact; scan outputs would then have
// a length known only while running, which is an error. A body that
// cannot be converted once for all iterations (one whose shapes depend on
// the iteration number, as Slice bounds computed from it; one carrying
// sequences, or values that change shape; a recurrence, such as an RNN
// over a sequence, started from the loop's state) is converted once per
// iteration instead, up to maxUnroll iterations, which needs the
// condition known at each; so is a Loop without a trip count.
//
// Scan: likewise one recurrence over the scanned axis, with the scan
// inputs' axes and directions and the scan outputs' as ONNX defines them
// (opset 8's Scan: one recurrence per batch element), and converted once
// per step where that cannot be done.

func init() {
	for _, op := range []string{"If", "Loop", "Scan", "SequenceMap"} {
		noFold[op] = true
	}
	register("If", opIf)
	register("Loop", opLoop)
	register("Scan", opScan)
	register("SequenceMap", opSequenceMap)
}

// opSequenceMap runs its body once per element of the input sequence,
// with the same element of every other sequence input and the tensors as
// they are, and collects each body output into a sequence.
func opSequenceMap(c *ctx) {
	body := c.attrGraph("body")
	if c.failed() {
		return
	}
	s := c.sequence(0)
	if c.failed() {
		return
	}
	n := len(s.seq)
	for i := 1; i < c.nin(); i++ {
		if !c.has(i) {
			c.fail("input %d is missing", i)
			return
		}
		if v := c.ins[i]; v.isSeq && len(v.seq) != n {
			c.fail("sequence input %d has %d elements, input 0 %d", i, len(v.seq), n)
			return
		}
	}
	outs := make([][]*value, c.nout())
	for k := range n {
		args := []*value{s.seq[k]}
		for i := 1; i < c.nin(); i++ {
			v := c.ins[i]
			if v.isSeq {
				v = v.seq[k]
			}
			args = append(args, v)
		}
		res, err := c.subgraph(body, "body", args)
		if err != nil {
			c.err = err
			return
		}
		if len(res) != c.nout() {
			c.fail("the body has %d outputs, the node %d", len(res), c.nout())
			return
		}
		for j, r := range res {
			if r.isSeq {
				c.fail("body output %d is a sequence", j)
				return
			}
			outs[j] = append(outs[j], r)
		}
	}
	for j := range outs {
		dt := tile.Float32
		if len(outs[j]) > 0 {
			dt = outs[j][0].dt
		} else if bo := body.GetOutput(); j < len(bo) {
			if t, ok := DataType(bo[j].GetType().GetTensorType().GetElemType()).Tile(); ok {
				dt = t
			}
		}
		c.setSeq(j, dt, outs[j])
	}
}

// maxUnroll bounds the iterations of an unrolled Loop or Scan.
const maxUnroll = 1 << 14

func (c *ctx) attrGraph(name string) *pb.GraphProto {
	a := c.attr(name, pb.AttributeProto_GRAPH)
	if a == nil {
		if !c.failed() {
			c.fail("no %s attribute", name)
		}
		return nil
	}
	return a.GetG()
}

// subgraph converts body with its inputs bound to args (names from outer
// scopes stay visible) and returns its outputs. The names it defines are
// forgotten afterwards.
func (c *ctx) subgraph(body *pb.GraphProto, what string, args []*value) ([]*value, error) {
	cv := c.cv
	if cv.depth >= 16 {
		return nil, fmt.Errorf("%s: subgraphs nest too deeply", what)
	}
	if len(body.GetInput()) != len(args) {
		return nil, fmt.Errorf("%s takes %d inputs, %d given", what, len(body.GetInput()), len(args))
	}
	saved := map[string]*value{}
	bind := func(name string, v *value) error {
		if name == "" {
			return fmt.Errorf("%s: a value has no name", what)
		}
		if _, done := saved[name]; !done {
			saved[name] = cv.env[name]
		}
		cv.env[name] = v
		return nil
	}
	defer func() {
		for name, v := range saved {
			if v == nil {
				delete(cv.env, name)
			} else {
				cv.env[name] = v
			}
		}
	}()
	for _, tp := range body.GetInitializer() {
		t, err := decodeTensor(tp, "")
		if err != nil {
			return nil, fmt.Errorf("%s: %w", what, err)
		}
		v, err := t.Value()
		if err != nil {
			return nil, fmt.Errorf("%s: %w", what, err)
		}
		if err := bind(t.Name, &value{c: v, dt: v.DType, sh: v.Shape, lt: narrowType(t.Type)}); err != nil {
			return nil, err
		}
	}
	for i, in := range body.GetInput() {
		if err := bind(in.GetName(), args[i]); err != nil {
			return nil, err
		}
	}
	scope, depth := cv.scope, cv.depth
	cv.scope, cv.depth = fmt.Sprintf("%s%s %s: ", scope, c.name, what), depth+1
	defer func() { cv.scope, cv.depth = scope, depth }()
	for i, n := range body.GetNode() {
		for _, in := range n.GetInput() {
			if in != "" && cv.env[in] == nil {
				return nil, fmt.Errorf("%s%s: input %q is produced by no earlier node and is no input or outer value", cv.scope, nodeName(n, i), in)
			}
		}
		for _, out := range n.GetOutput() {
			if out != "" {
				if _, done := saved[out]; !done {
					saved[out] = cv.env[out]
				}
			}
		}
		if err := cv.node(n, i, c.opset); err != nil {
			return nil, err
		}
	}
	var outs []*value
	for _, o := range body.GetOutput() {
		v := cv.env[o.GetName()]
		if v == nil {
			return nil, fmt.Errorf("%s: output %q is not computed", what, o.GetName())
		}
		outs = append(outs, v)
	}
	return outs, nil
}

func opIf(c *ctx) {
	then, els := c.attrGraph("then_branch"), c.attrGraph("else_branch")
	if c.failed() {
		return
	}
	if !c.has(0) || c.ins[0].isSeq || c.ins[0].none {
		c.fail("the condition must be a tensor")
		return
	}
	cond := c.ins[0]
	if n := cond.sh.Size(); n != 1 {
		c.fail("the condition holds %d elements, not one", n)
		return
	}
	if cond.c == nil {
		c.selectBranches(then, els)
		return
	}
	body, what := then, "then_branch"
	if cond.c.Data[0] == 0 {
		body, what = els, "else_branch"
	}
	outs, err := c.subgraph(body, what, nil)
	if err != nil {
		c.err = err
		return
	}
	if len(outs) != c.nout() {
		c.fail("%s has %d outputs, the node %d", what, len(outs), c.nout())
		return
	}
	c.outs = outs
}

// selectBranches converts both branches of an If whose condition is
// computed while running and selects between their outputs elementwise.
// Branches have no side effects, so computing both is exact, and the
// selection keeps what the branch not taken computed (a NaN, say) out of
// the result. When the outputs cannot be selected and the condition depends
// on graph inputs, the error is a ValueNeededError, so that fixing them
// (Options.Values) inlines the branch taken instead.
func (c *ctx) selectBranches(then, els *pb.GraphProto) {
	fail := func(format string, args ...any) {
		err := fmt.Errorf(format, args...)
		if deps := c.ins[0].deps; len(deps) > 0 {
			err = fmt.Errorf("%w; with the condition computed while running, %v", &ValueNeededError{Node: c.name, Input: 0, Inputs: deps}, err)
		}
		if c.err == nil {
			c.err = err
		}
	}
	a, err := c.subgraph(then, "then_branch", nil)
	if err != nil {
		c.err = err
		return
	}
	b, err := c.subgraph(els, "else_branch", nil)
	if err != nil {
		c.err = err
		return
	}
	if len(a) != c.nout() || len(b) != c.nout() {
		c.fail("then_branch has %d outputs, else_branch %d, the node %d", len(a), len(b), c.nout())
		return
	}
	if c.ins[0].dt != tile.Bool {
		c.fail("the condition is %s, not bool", c.ins[0].typ())
		return
	}
	g := c.g
	pick := g.Reshape(c.in(0), tile.Shape{})
	sel := func(k int, x, y *value) *value {
		if x.typ() != y.typ() || !x.sh.Equal(y.sh) {
			fail("output %d (%q): then_branch gives %s%v, else_branch %s%v; a condition computed while running needs both of one type and shape",
				k, c.node.GetOutput()[k], x.typ(), x.sh, y.typ(), y.sh)
			return nil
		}
		t := g.Select(pick, c.cv.tensor(g, x), c.cv.tensor(g, y))
		return &value{t: t, dt: t.DType(), sh: t.Shape(), lt: x.lt}
	}
	for k := range a {
		x, y := a[k], b[k]
		switch {
		case x.none && y.none && x.isSeq == y.isSeq:
			c.outs = append(c.outs, x)
		case x.none || y.none:
			fail("output %d (%q): one branch gives an empty optional and the other a value; a condition computed while running needs both present or both empty", k, c.node.GetOutput()[k])
		case x.isSeq && y.isSeq:
			if len(x.seq) != len(y.seq) {
				fail("output %d (%q): then_branch gives a sequence of %d tensors, else_branch of %d; a condition computed while running needs one length", k, c.node.GetOutput()[k], len(x.seq), len(y.seq))
				break
			}
			seq := &value{isSeq: true, dt: x.dt, lt: x.lt}
			for e := range x.seq {
				seq.seq = append(seq.seq, sel(k, x.seq[e], y.seq[e]))
			}
			c.outs = append(c.outs, seq)
		case x.isSeq || y.isSeq:
			fail("output %d (%q): one branch gives a sequence and the other a tensor", k, c.node.GetOutput()[k])
		default:
			c.outs = append(c.outs, sel(k, x, y))
		}
		if c.err != nil {
			return
		}
	}
}

// scalarValue returns a known scalar.
func scalarValue(dt tile.DType, x float64) *value {
	v, _ := tile.ValueOf(dt, tile.Shape{}, []float64{x})
	return &value{c: v, dt: dt, sh: tile.Shape{}}
}

// stack joins per-iteration values along a new axis.
func (c *ctx) stack(vs []*value, axis int) *tile.Tensor {
	g := c.cv.g
	var ts []*tile.Tensor
	for _, v := range vs {
		t := c.cv.tensor(g, v)
		s := t.Shape()
		ns := append(append(s[:axis:axis].Clone(), 1), s[axis:]...)
		ts = append(ts, g.Reshape(t, ns))
	}
	if len(ts) == 1 {
		return ts[0]
	}
	return g.Concat(axis, ts...)
}

// maxSteps bounds the steps of a loop or scan computed step by step.
const maxSteps = 1 << 22

// opLoop converts a Loop. When every value is known it is computed here,
// iteration after iteration. Otherwise, with a trip count M, the body is
// converted once for all iterations (loopSteps); where that cannot be done
// (a body whose shapes depend on the iteration, say) and M is small, or
// without a trip count, the body is converted once per iteration, which
// needs the condition known at each.
func opLoop(c *ctx) {
	body := c.attrGraph("body")
	if c.failed() {
		return
	}
	trips, hasM := int64(0), c.has(0)
	if hasM {
		if v := c.knownInts(0); len(v) == 1 {
			trips = v[0]
		} else if !c.failed() {
			c.fail("M holds %d elements, not one", len(v))
		}
	}
	if c.failed() {
		return
	}
	if !hasM {
		trips = -1
	} else if trips < 0 {
		trips = 0
	}
	var condIn *value
	cond, condKnown := true, true
	if c.has(1) {
		condIn = c.ins[1]
		switch {
		case condIn.isSeq || condIn.none || condIn.sh.Size() != 1:
			c.fail("cond must be a tensor of one element")
			return
		case condIn.dt != tile.Bool:
			c.fail("cond is %s, not bool", condIn.typ())
			return
		case condIn.c != nil:
			cond = condIn.c.Data[0] != 0
		default:
			condKnown = false
		}
	}
	carried := c.ins[2:]
	for i, v := range carried {
		if v == nil {
			c.fail("loop-carried input %d is missing", i)
			return
		}
	}
	nScan := len(body.GetOutput()) - 1 - len(carried)
	if nScan < 0 || c.nout() != len(carried)+nScan {
		c.fail("the body's %d outputs do not fit %d loop-carried values and the node's %d outputs", len(body.GetOutput()), len(carried), c.nout())
		return
	}
	if trips == 0 || condKnown && !cond {
		c.loopNoIteration(body, carried, nScan)
		return
	}
	if condKnown {
		if outs, ok := c.loopKnown(body, trips, carried, nScan); ok {
			c.outs = outs
			return
		}
	}
	if trips < 0 {
		if !condKnown {
			c.known(1)
			return
		}
		c.loopUnrolled(body, trips, carried, nScan)
		return
	}
	err := c.loopSteps(body, trips, condIn, carried, nScan)
	if err == nil {
		return
	}
	c.outs = nil
	var need *ValueNeededError
	switch {
	case errors.As(err, &need):
		c.err = err
		return
	case trips > maxUnroll:
		c.err = fmt.Errorf("%w (and %d iterations are too many to convert one by one)", err, trips)
		return
	case !condKnown:
		c.err = c.needing(1, err)
		return
	}
	c.loopUnrolled(body, trips, carried, nScan)
	if c.err != nil && !errors.As(c.err, &need) {
		c.err = fmt.Errorf("%w; converted once per iteration instead: %v", err, c.err)
	}
}

// needing returns err, wrapped in a ValueNeededError for input i when i
// depends on graph inputs whose values would avoid the error.
func (c *ctx) needing(i int, err error) error {
	if deps := c.ins[i].deps; len(deps) > 0 {
		return fmt.Errorf("%w; with its value computed while running, %v", &ValueNeededError{Node: c.name, Input: i, Inputs: deps}, err)
	}
	return err
}

// loopNoIteration sets the outputs of a Loop that runs no iteration: the
// initial values and empty scan outputs, whose shapes the body tells.
func (c *ctx) loopNoIteration(body *pb.GraphProto, carried []*value, nScan int) {
	c.outs = append([]*value{}, carried...)
	if nScan == 0 {
		return
	}
	s := c.cv.newScope("loop body")
	args := []*value{s.param("iteration", scalarValue(tile.Int64, 0)), scalarValue(tile.Bool, 1)}
	for k, v := range carried {
		if v.isSeq || v.none {
			args = append(args, v)
			continue
		}
		args = append(args, s.param(fmt.Sprintf("state%d", k), v))
	}
	var outs []*value
	err := c.cv.within(s, func() (err error) {
		outs, err = c.subgraph(body, "body", args)
		return err
	})
	for k := range nScan {
		j := 1 + len(carried) + k
		if err != nil || j >= len(outs) || outs[j].isSeq || outs[j].none {
			c.fail("scan output %d of a loop that runs no iteration has no known shape", k)
			return
		}
		o := outs[j]
		v := tile.NewValue(o.dt, append(tile.Shape{0}, o.sh...))
		c.outs = append(c.outs, &value{c: v, dt: o.dt, sh: v.Shape, lt: o.lt})
	}
}

// loopKnown computes a Loop whose values are all known, iteration after
// iteration, each converted on a graph of its own. It reports false, with
// nothing built, when a value is not known (or after maxUnroll
// iterations).
func (c *ctx) loopKnown(body *pb.GraphProto, trips int64, carried []*value, nScan int) ([]*value, bool) {
	state := make([]*value, len(carried))
	for k, v := range carried {
		w, ok := knownCopy(v)
		if !ok {
			return nil, false
		}
		state[k] = w
	}
	scans := make([][]*value, nScan)
	for i, cond := int64(0), true; cond && (trips < 0 || i < trips); i++ {
		if i >= maxUnroll {
			return nil, false
		}
		s := c.cv.newScope("loop body")
		args := append([]*value{scalarValue(tile.Int64, float64(i)), scalarValue(tile.Bool, 1)}, state...)
		var outs []*value
		err := c.cv.within(s, func() (err error) {
			outs, err = c.subgraph(body, "body", args)
			return err
		})
		if err != nil || len(outs) != 1+len(state)+nScan {
			return nil, false
		}
		known := make([]*value, len(outs))
		for j, o := range outs {
			w, ok := knownCopy(o)
			if !ok {
				return nil, false
			}
			known[j] = w
		}
		if co := known[0]; co.isSeq || co.none || len(co.c.Data) != 1 {
			return nil, false
		} else {
			cond = co.c.Data[0] != 0
		}
		state = known[1 : 1+len(state)]
		for k := range nScan {
			o := known[1+len(state)+k]
			if o.isSeq || o.none || len(scans[k]) > 0 && !o.sh.Equal(scans[k][0].sh) {
				return nil, false
			}
			scans[k] = append(scans[k], o)
		}
	}
	res := state
	for k := range nScan {
		first := scans[k][0]
		v := tile.NewValue(first.dt, append(tile.Shape{len(scans[k])}, first.sh...))
		v.Data = v.Data[:0]
		for _, o := range scans[k] {
			v.Data = append(v.Data, o.c.Data...)
		}
		res = append(res, &value{c: v, dt: v.DType, sh: v.Shape, lt: first.lt})
	}
	return res, true
}

// loopUnrolled converts the body once per iteration into the graph, with
// the condition known at each.
func (c *ctx) loopUnrolled(body *pb.GraphProto, trips int64, carried []*value, nScan int) {
	scans := make([][]*value, nScan)
	for i, cond := int64(0), true; cond && (trips < 0 || i < trips); i++ {
		if i >= maxUnroll {
			c.fail("more than %d iterations are not supported", maxUnroll)
			return
		}
		args := append([]*value{scalarValue(tile.Int64, float64(i)), scalarValue(tile.Bool, 1)}, carried...)
		outs, err := c.subgraph(body, "body", args)
		if err != nil {
			c.err = err
			return
		}
		if len(outs) != 1+len(carried)+nScan {
			c.fail("the body gives %d outputs, not %d", len(outs), 1+len(carried)+nScan)
			return
		}
		cv := outs[0]
		if cv.c == nil {
			c.fail("iteration %d: the body's condition depends on values not known when converting", i)
			return
		}
		if len(cv.c.Data) != 1 {
			c.fail("iteration %d: the body's condition holds %d elements", i, len(cv.c.Data))
			return
		}
		cond = cv.c.Data[0] != 0
		carried = outs[1 : 1+len(carried)]
		for k := range nScan {
			scans[k] = append(scans[k], outs[1+len(carried)+k])
		}
	}
	c.outs = append([]*value{}, carried...)
	for k := range nScan {
		c.set(len(carried)+k, c.stack(scans[k], 0))
	}
}

// loopSteps converts a Loop of trips iterations (at least one) as one
// recurrence: the body is converted once, on the loop-carried values of
// every iteration at once. With a condition computed while running (the
// initial one, condIn, or the body's), an iteration after the condition
// fails leaves the carried values as they are, which gives the exact final
// values; scan outputs would then have a length known only while running,
// which is an error.
func (c *ctx) loopSteps(body *pb.GraphProto, trips int64, condIn *value, carried []*value, nScan int) error {
	s := c.cv.newScope("loop body")
	iter := s.param("iteration", scalarValue(tile.Int64, 0))
	args := []*value{iter, scalarValue(tile.Bool, 1)}
	for k, v := range carried {
		if v.isSeq || v.none {
			return fmt.Errorf("loop-carried value %d is a sequence or an optional, which only a loop of known values or conditions may carry", k)
		}
		args = append(args, s.param(fmt.Sprintf("state%d", k), v))
	}
	var outs []*value
	err := c.cv.within(s, func() (err error) {
		outs, err = c.subgraph(body, "body", args)
		return err
	})
	if err != nil {
		return fmt.Errorf("converting the body once for all %d iterations, with the iteration number and the loop-carried values known only while running: %w", trips, err)
	}
	if len(outs) != 1+len(carried)+nScan {
		return fmt.Errorf("the body gives %d outputs, not %d", len(outs), 1+len(carried)+nScan)
	}
	for j, o := range outs {
		if o.isSeq || o.none {
			return fmt.Errorf("body output %d (%q) is a sequence or an optional, which only a loop of known values or conditions may give", j, body.GetOutput()[j].GetName())
		}
	}
	co := outs[0]
	if co.sh.Size() != 1 || co.dt != tile.Bool {
		return fmt.Errorf("the body's condition is %s%v, not one bool", co.typ(), co.sh)
	}
	steps, active := trips, condIn != nil && condIn.c == nil
	if co.c != nil && co.c.Data[0] == 0 {
		steps = 1 // the first iteration stops the loop
	}
	active = active || co.c == nil
	if active && nScan > 0 {
		err := fmt.Errorf("the loop's condition is computed while running, so its %d scan outputs would have a length known only then", nScan)
		if co.c != nil {
			return c.needing(1, err)
		}
		return err
	}
	if steps > maxSteps {
		return fmt.Errorf("%d iterations are too many to compute step by step (at most %d)", steps, maxSteps)
	}
	g := c.g
	T := int(steps)
	var cond, condInit *tile.Tensor
	if active {
		if err := c.cv.within(s, func() error { cond = c.cv.tensor(s.g, co); return s.g.Err() }); err != nil {
			return err
		}
		condInit = g.Scalar(1, tile.Bool)
		if condIn != nil {
			condInit = g.Reshape(c.cv.tensor(g, condIn), tile.Shape{})
		}
	}
	bind := map[*tile.Tensor]*tile.Tensor{iter.t: g.Iota(tile.Int64, tile.Shape{T}, 0)}
	st := make([]stepState, len(carried))
	for k, v := range carried {
		st[k] = stepState{param: args[2+k].t, init: c.cv.tensor(g, v), out: outs[1+k], what: fmt.Sprintf("loop-carried value %d", k)}
	}
	var scans []*value
	for k := range nScan {
		scans = append(scans, outs[1+len(carried)+k])
	}
	finals, per, err := c.runSteps(s, T, st, bind, cond, condInit, scans)
	if err != nil {
		return err
	}
	c.outs = nil
	for k, v := range carried {
		if finals[k] == nil {
			c.outs = append(c.outs, v)
			continue
		}
		c.outs = append(c.outs, &value{t: finals[k], dt: v.dt, sh: v.sh, lt: outs[1+k].lt})
	}
	for k, t := range per {
		c.outs = append(c.outs, &value{t: t, dt: t.DType(), sh: t.Shape(), lt: scans[k].lt})
	}
	return g.Err()
}

// stepState is one state of a body computed step by step: the input of the
// body's graph that holds it, its initial value (a tensor of the graph
// being built) and the body output that replaces it after every step.
type stepState struct {
	param, init *tile.Tensor
	out         *value
	what        string
}

// runSteps builds the recurrence of a body converted on s over steps
// steps: the states st, and the other per-step inputs of the body bound by
// bind to tensors with a leading axis of steps. With cond (a bool body
// output of one element), a step changes the states only while cond held
// after every step before it, and condInit before the first. It returns
// each state's final value (nil for a state the body passes through
// unchanged) and the values of perStep at every step, stacked along a new
// leading axis.
func (c *ctx) runSteps(s *bodyScope, steps int, st []stepState, bind map[*tile.Tensor]*tile.Tensor,
	cond, condInit *tile.Tensor, perStep []*value) ([]*tile.Tensor, []*tile.Tensor, error) {
	g := c.g
	outT := make([]*tile.Tensor, len(st))
	if err := c.cv.within(s, func() error {
		for k := range st {
			outT[k] = c.cv.tensor(s.g, st[k].out)
		}
		return s.g.Err()
	}); err != nil {
		return nil, nil, err
	}
	var perT []*tile.Tensor
	if err := c.cv.within(s, func() error {
		for _, v := range perStep {
			perT = append(perT, c.cv.tensor(s.g, v))
		}
		return s.g.Err()
	}); err != nil {
		return nil, nil, err
	}
	for k, x := range st {
		if o := outT[k]; o.DType() != x.param.DType() || !o.Shape().Equal(x.param.Shape()) {
			return nil, nil, fmt.Errorf("%s enters the body as %s%v and leaves it as %s%v; computed step by step, it must keep its type and shape",
				x.what, x.param.DType(), x.param.Shape(), o.DType(), o.Shape())
		}
		if n := steps * x.init.Size(); x.init.Size() > 0 && n/x.init.Size() != steps || n > MaxElements {
			return nil, nil, fmt.Errorf("%s: %d steps of %v are too many to hold", x.what, steps, x.init.Shape())
		}
	}
	withSteps := func(sh tile.Shape) tile.Shape { return append(tile.Shape{steps}, sh...) }
	// Each state is a recurrence, except one the body passes through (the
	// same at every step) and, without a condition, one whose next value
	// is the next value of another state, or the value of another state:
	// those are shifts of that state, since two recurrences may not share
	// their next states.
	const (
		recur = iota
		fixed
		sameNext  // of state of
		prevState // of state of
	)
	kind := make([]int, len(st))
	of := make([]int, len(st))
	isParam := func(t *tile.Tensor) int {
		for j := range st {
			if st[j].param == t {
				return j
			}
		}
		return -1
	}
	for k := range st {
		if outT[k] == st[k].param {
			kind[k] = fixed
			continue
		}
		if cond != nil {
			continue
		}
		if j := isParam(outT[k]); j >= 0 {
			kind[k], of[k] = prevState, j
			continue
		}
		for j := range k {
			if kind[j] == recur && outT[j] == outT[k] {
				kind[k], of[k] = sameNext, j
				break
			}
		}
	}
	for k := range st {
		if kind[k] == prevState && kind[of[k]] != recur && kind[of[k]] != fixed {
			return nil, nil, fmt.Errorf("%s takes the value of %s, which takes another state's: such a permutation of states is not supported", st[k].what, st[of[k]].what)
		}
	}
	batched := map[*tile.Tensor]bool{}
	for p := range bind {
		batched[p] = true
	}
	for k, x := range st {
		batched[x.param] = kind[k] != fixed
	}
	want := append(append([]*tile.Tensor{}, outT...), perT...)
	if cond != nil {
		want = append(want, cond)
	}
	if err := checkBody(s, batched, want); err != nil {
		return nil, nil, err
	}
	var active *tile.Tensor
	if cond != nil {
		active = g.Recurrence(condInit, steps, false)
	}
	rec := make([]*tile.Tensor, len(st))
	var stateP, nextP []*tile.Tensor
	for k, x := range st {
		switch kind[k] {
		case fixed:
			bind[x.param] = x.init
		case recur:
			rec[k] = g.Recurrence(x.init, steps, false)
			bind[x.param] = rec[k]
			stateP, nextP = append(stateP, x.param), append(nextP, outT[k])
		}
	}
	for k, x := range st {
		first := g.Reshape(x.init, append(tile.Shape{1}, x.init.Shape()...))
		var rest *tile.Tensor
		switch kind[k] {
		case sameNext: // S_k = init_k, then S_j from step 1 on
			rest = rec[of[k]]
			if steps > 1 {
				rest = sliceSteps(g, rest, 1, steps)
			}
		case prevState: // S_k = init_k, then S_j up to the step before last
			j := of[k]
			if kind[j] == fixed {
				rest = g.BroadcastTo(st[j].init, append(tile.Shape{steps - 1}, x.init.Shape()...))
			} else if steps > 1 {
				rest = sliceSteps(g, rec[j], 0, steps-1)
			}
		default:
			continue
		}
		if steps > 1 {
			first = g.Concat(0, first, rest)
		}
		bind[x.param] = first
		stateP = append(stateP, x.param)
	}
	if cond != nil {
		nextP = append(nextP, cond)
	}
	copies, isB, err := batchBody(s, g, steps, bind, batched, stateP, nextP, want)
	if err != nil {
		return nil, nil, err
	}
	lift := func(i int) *tile.Tensor {
		if isB[i] {
			return copies[i]
		}
		return g.BroadcastTo(copies[i], withSteps(want[i].Shape()))
	}
	var run *tile.Tensor // active[t], shaped to select states
	if cond != nil {
		run = active
	}
	// Close the recurrences last first, each with a next state of its own,
	// so that each recurrence's nodes nest in those of the recurrences made
	// before it.
	finals := make([]*tile.Tensor, len(st))
	last := func(t *tile.Tensor, sh tile.Shape) *tile.Tensor {
		return g.Reshape(sliceSteps(g, t, steps-1, steps), sh)
	}
	for k := len(st) - 1; k >= 0; k-- {
		x := st[k]
		sh := x.init.Shape()
		switch kind[k] {
		case fixed:
			continue
		case recur:
			var nx *tile.Tensor
			if run != nil {
				nx = g.Select(g.Reshape(run, withSteps(ones(len(sh)))), lift(k), rec[k])
			} else {
				nx = sliceSteps(g, lift(k), 0, steps)
			}
			g.CloseRecurrence(rec[k], nx)
			finals[k] = last(nx, sh)
		default:
			finals[k] = last(lift(k), sh)
		}
	}
	if cond != nil {
		ci := len(want) - 1
		g.CloseRecurrence(active, g.Elementwise(tile.And, active, g.Reshape(lift(ci), tile.Shape{steps})))
	}
	var per []*tile.Tensor
	for i := range perT {
		per = append(per, lift(len(st)+i))
	}
	return finals, per, g.Err()
}

// sliceSteps returns steps lo..hi-1 of t, along its leading axis, as a node
// of its own.
func sliceSteps(g *tile.Graph, t *tile.Tensor, lo, hi int) *tile.Tensor {
	start, stop := make([]int, t.Rank()), t.Shape()
	start[0], stop[0] = lo, hi
	return g.Slice(t, start, stop, nil)
}

func opScan(c *ctx) {
	body := c.attrGraph("body")
	nScanIn := int(c.attrInt("num_scan_inputs", 0))
	var inAxes, inDirs, outAxes, outDirs []int64
	var dirs8 []int64
	if c.opset >= 9 {
		inAxes, inDirs = c.attrInts("scan_input_axes"), c.attrInts("scan_input_directions")
		outAxes, outDirs = c.attrInts("scan_output_axes"), c.attrInts("scan_output_directions")
	} else {
		dirs8 = c.attrInts("directions")
	}
	if c.failed() {
		return
	}
	ins := c.ins
	if c.opset < 9 {
		if c.has(0) {
			c.fail("sequence_lens is not supported")
			return
		}
		ins = ins[1:]
	}
	nState := len(ins) - nScanIn
	if nScanIn < 1 || nState < 0 {
		c.fail("num_scan_inputs %d does not fit %d inputs", nScanIn, len(ins))
		return
	}
	nScanOut := c.nout() - nState
	if nScanOut < 0 || len(body.GetOutput()) != nState+nScanOut {
		c.fail("the body's %d outputs do not fit %d states and %d node outputs", len(body.GetOutput()), nState, c.nout())
		return
	}
	get := func(v []int64, i int, def int64) int64 {
		if i < len(v) {
			return v[i]
		}
		return def
	}
	g := c.cv.g
	if c.opset < 9 {
		// Scan 8: axis 0 of every input is a batch, scanned along axis 1.
		batch := ins[0].sh
		if len(batch) == 0 {
			c.fail("inputs need a batch axis")
			return
		}
		nb := batch[0]
		var perBatch [][]*value
		for b := range nb {
			var args []*value
			for _, v := range ins {
				t := c.cv.tensor(g, v)
				start, stop := make([]int, t.Rank()), t.Shape()
				start[0], stop[0] = b, b+1
				args = append(args, &value{t: g.Reshape(g.Slice(t, start, stop, nil), t.Shape()[1:]), dt: v.dt, sh: v.sh[1:]})
			}
			outs := c.scan(body, args, nState, nScanOut, func(i int) (int, bool) { return 0, get(dirs8, i, 0) == 1 },
				func(int) (int, bool) { return 0, false })
			if outs == nil {
				return
			}
			perBatch = append(perBatch, outs)
		}
		for k := range nState + nScanOut {
			var vs []*value
			for b := range nb {
				vs = append(vs, perBatch[b][k])
			}
			c.set(k, c.stack(vs, 0))
		}
		return
	}
	outs := c.scan(body, ins, nState, nScanOut,
		func(i int) (int, bool) { return int(get(inAxes, i, 0)), get(inDirs, i, 0) == 1 },
		func(i int) (int, bool) { return int(get(outAxes, i, 0)), get(outDirs, i, 0) == 1 })
	if outs == nil {
		return
	}
	c.outs = outs
}

// scan runs a Scan body over its scan inputs (axis and direction of input
// i from inAxis, of output k from outAxis) and returns the final states and
// stacked outputs, or nil after recording an error. The body is converted
// once for all steps (scanSteps), or, where that cannot be done and the
// steps are few, once per step.
func (c *ctx) scan(body *pb.GraphProto, ins []*value, nState, nScanOut int, inAxis, outAxis func(int) (int, bool)) []*value {
	steps, _, _, ok := c.scanLayout(ins[nState:], inAxis)
	if !ok {
		return nil
	}
	if steps == 0 {
		return c.scanOnce(body, ins, nState, nScanOut, inAxis, outAxis)
	}
	outs, err := c.scanSteps(body, ins, nState, nScanOut, inAxis, outAxis)
	if err == nil {
		return outs
	}
	var need *ValueNeededError
	switch {
	case errors.As(err, &need):
		c.err = err
		return nil
	case steps > maxUnroll:
		c.err = fmt.Errorf("%w (and %d steps are too many to convert one by one)", err, steps)
		return nil
	}
	outs = c.scanOnce(body, ins, nState, nScanOut, inAxis, outAxis)
	if c.err != nil && !errors.As(c.err, &need) {
		c.err = fmt.Errorf("%w; converted once per step instead: %v", err, c.err)
	}
	return outs
}

// scanLayout returns the number of steps of scan inputs scanIn and the
// axis each is scanned along, and whether it is read from the end; it
// records an error and reports false when they do not fit.
func (c *ctx) scanLayout(scanIn []*value, inAxis func(int) (int, bool)) (steps int, axes []int, rev []bool, ok bool) {
	steps = -1
	axes = make([]int, len(scanIn))
	rev = make([]bool, len(scanIn))
	for i, v := range scanIn {
		if v.isSeq || v.none {
			c.fail("scan input %d is not a tensor", i)
			return 0, nil, nil, false
		}
		a, r := inAxis(i)
		if a < 0 {
			a += len(v.sh)
		}
		if a < 0 || a >= len(v.sh) {
			c.fail("scan input %d: axis %d is out of range for %v", i, a, v.sh)
			return 0, nil, nil, false
		}
		if steps >= 0 && v.sh[a] != steps {
			c.fail("scan inputs differ in length: %d and %d", steps, v.sh[a])
			return 0, nil, nil, false
		}
		steps, axes[i], rev[i] = v.sh[a], a, r
	}
	return steps, axes, rev, true
}

// scanSteps converts a Scan of at least one step as one recurrence, the
// body converted once on the states and scan input slices of every step at
// once.
func (c *ctx) scanSteps(body *pb.GraphProto, ins []*value, nState, nScanOut int, inAxis, outAxis func(int) (int, bool)) ([]*value, error) {
	g := c.g
	states, scanIn := ins[:nState], ins[nState:]
	steps, axes, rev, _ := c.scanLayout(scanIn, inAxis)
	if steps > maxSteps {
		return nil, fmt.Errorf("%d steps are too many to compute step by step (at most %d)", steps, maxSteps)
	}
	s := c.cv.newScope("scan body")
	var args []*value
	for k, v := range states {
		if v.isSeq || v.none {
			return nil, fmt.Errorf("state %d is not a tensor", k)
		}
		args = append(args, s.param(fmt.Sprintf("state%d", k), v))
	}
	for i, v := range scanIn {
		sh := append(v.sh[:axes[i]:axes[i]].Clone(), v.sh[axes[i]+1:]...)
		args = append(args, s.param(fmt.Sprintf("input%d", i), &value{dt: v.dt, sh: sh, lt: v.lt}))
	}
	var outs []*value
	err := c.cv.within(s, func() (err error) {
		outs, err = c.subgraph(body, "body", args)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("converting the body once for all %d steps, with the states and the scan inputs' slices known only while running: %w", steps, err)
	}
	if len(outs) != nState+nScanOut {
		return nil, fmt.Errorf("the body gives %d outputs, not %d", len(outs), nState+nScanOut)
	}
	for j, o := range outs {
		if o.isSeq || o.none {
			return nil, fmt.Errorf("body output %d (%q) is a sequence or an optional", j, body.GetOutput()[j].GetName())
		}
	}
	bind := map[*tile.Tensor]*tile.Tensor{}
	for i, v := range scanIn {
		x := c.cv.tensor(g, v)
		perm := []int{axes[i]}
		for d := range x.Rank() {
			if d != axes[i] {
				perm = append(perm, d)
			}
		}
		x = g.Transpose(x, perm)
		if rev[i] {
			x = reverseSteps(g, x)
		}
		bind[args[nState+i].t] = x
	}
	st := make([]stepState, nState)
	for k, v := range states {
		st[k] = stepState{param: args[k].t, init: c.cv.tensor(g, v), out: outs[k], what: fmt.Sprintf("state %d", k)}
	}
	finals, per, err := c.runSteps(s, steps, st, bind, nil, nil, outs[nState:])
	if err != nil {
		return nil, err
	}
	var res []*value
	for k, v := range states {
		if finals[k] == nil {
			res = append(res, v)
			continue
		}
		res = append(res, &value{t: finals[k], dt: v.dt, sh: v.sh, lt: outs[k].lt})
	}
	for k, t := range per {
		a, r := outAxis(k)
		rank := t.Rank()
		if a < 0 {
			a += rank
		}
		if a < 0 || a >= rank {
			return nil, fmt.Errorf("scan output %d: axis %d is out of range", k, a)
		}
		if r {
			t = reverseSteps(g, t)
		}
		perm := make([]int, rank)
		for d := range rank {
			switch {
			case d < a:
				perm[d] = d + 1
			case d == a:
				perm[d] = 0
			default:
				perm[d] = d
			}
		}
		t = g.Transpose(t, perm)
		res = append(res, &value{t: t, dt: t.DType(), sh: t.Shape(), lt: outs[nState+k].lt})
	}
	return res, g.Err()
}

// reverseSteps returns t with its leading axis reversed.
func reverseSteps(g *tile.Graph, t *tile.Tensor) *tile.Tensor {
	n := t.Dim(0)
	idx := tile.NewValue(tile.Int64, tile.Shape{n})
	for i := range n {
		idx.Data[i] = float64(n - 1 - i)
	}
	return g.Gather(t, g.Constant(idx), 0)
}

// scanOnce runs a Scan body over its scan inputs converted once per step,
// like scan.
func (c *ctx) scanOnce(body *pb.GraphProto, ins []*value, nState, nScanOut int, inAxis, outAxis func(int) (int, bool)) []*value {
	g := c.cv.g
	states := append([]*value{}, ins[:nState]...)
	scanIn := ins[nState:]
	steps, axes, rev, ok := c.scanLayout(scanIn, inAxis)
	if !ok {
		return nil
	}
	if steps > maxUnroll {
		c.fail("scans of more than %d steps are not supported", maxUnroll)
		return nil
	}
	scans := make([][]*value, nScanOut)
	for s := range steps {
		args := append([]*value{}, states...)
		for i, v := range scanIn {
			t := c.cv.tensor(g, v)
			at := s
			if rev[i] {
				at = steps - 1 - s
			}
			start, stop := make([]int, t.Rank()), t.Shape()
			start[axes[i]], stop[axes[i]] = at, at+1
			sh := append(v.sh[:axes[i]:axes[i]].Clone(), v.sh[axes[i]+1:]...)
			args = append(args, &value{t: g.Reshape(g.Slice(t, start, stop, nil), sh), dt: v.dt, sh: sh})
		}
		outs, err := c.subgraph(body, "body", args)
		if err != nil {
			c.err = err
			return nil
		}
		states = outs[:nState]
		for k := range nScanOut {
			scans[k] = append(scans[k], outs[nState+k])
		}
	}
	res := append([]*value{}, states...)
	for k := range nScanOut {
		if len(scans[k]) == 0 {
			c.fail("a scan of no steps has scan outputs of no known shape")
			return nil
		}
		a, r := outAxis(k)
		vs := scans[k]
		if r {
			vs = append([]*value{}, vs...)
			for i, j := 0, len(vs)-1; i < j; i, j = i+1, j-1 {
				vs[i], vs[j] = vs[j], vs[i]
			}
		}
		rank := len(vs[0].sh) + 1
		if a < 0 {
			a += rank
		}
		if a < 0 || a >= rank {
			c.fail("scan output %d: axis %d is out of range", k, a)
			return nil
		}
		t := c.stack(vs, a)
		res = append(res, &value{t: t, dt: t.DType(), sh: t.Shape()})
	}
	return res
}
