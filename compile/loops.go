package compile

import (
	"fmt"
	"slices"

	"github.com/tartanml/tartan/kir"
	"github.com/tartanml/tartan/tile"
)

// Recurrences (tile.RecurrenceOp) become loops here, between the buffers and
// the slots of pass 6.
//
// A recurrence's state S [T, ...] and its next states N share one storage
// buffer of T+1 steps: S is the view of steps 0..T-1 and N of steps 1..T
// (the other way round for a reverse recurrence), so writing N[t] is writing
// S[t+1], and a copy kernel puts the initial state in the remaining end
// step. The kernels on a cycle through S and N (those reachable from a
// reader of S that reach the writer of N, following data and these delay
// edges) form the loop body; recurrences whose bodies share a kernel form one
// loop. Every body kernel computes one time step per iteration: its leading
// output loop, of T points, is dropped, and every buffer it reads at that
// loop's index becomes a view of the buffer's current step (kir.View), so a
// loop has as many kernels as one step of the cell, whatever T. Kernels off
// the cycle stay outside the loop, computing all steps at once: before it
// when they do not depend on it (an input projection x·W), after it when
// they do (a weight gradient summing over steps).

// isNext reports whether n is the next states of a recurrence.
func (p *plan) isNext(n *node) bool {
	for _, m := range p.g.nodes {
		if m.next == n {
			return true
		}
	}
	return false
}

// recurrence is one recurrence's buffers, once pass 6 has made them.
type recurrence struct {
	src        *node
	steps      int
	reverse    bool
	state, nxt int // the buffers of S and N, views of storage
	storage    int
	initK      *kir.Kernel
}

// recurrenceBuffers creates each recurrence's storage and its two views, and
// a kernel (as a kern, ordered after the initial state's producer) that
// writes the initial state into its end step. It returns the recurrences.
func (p *plan) recurrenceBuffers(add func(*kir.Buffer) int, bufOf map[int]int) ([]*recurrence, error) {
	var recs []*recurrence
	for _, n := range p.g.nodes {
		if n.next == nil {
			continue
		}
		if _, done := bufOf[n.next.id]; done {
			return nil, fmt.Errorf("compile: graph %q: %v closes two recurrences; give each its own next states", p.g.name, n.next)
		}
		T, row := n.shape[0], n.shape[1:].Size()
		st := append(tile.Shape{T + 1}, n.shape[1:]...)
		r := &recurrence{src: n, steps: T, reverse: n.op.(*tile.RecurrenceOp).Reverse}
		r.storage = add(&kir.Buffer{Kind: kir.Temp, DType: n.dtype, Shape: st})
		sOff, nOff, first := 0, row, 0
		if r.reverse {
			sOff, nOff, first = row, 0, T*row
		}
		r.state = add(&kir.Buffer{Kind: kir.Temp, DType: n.dtype, Shape: n.shape.Clone(), View: &kir.View{Of: r.storage, Offset: sOff}})
		r.nxt = add(&kir.Buffer{Kind: kir.Temp, DType: n.dtype, Shape: n.shape.Clone(), View: &kir.View{Of: r.storage, Offset: nOff}})
		bufOf[n.id], bufOf[n.next.id] = r.state, r.nxt
		init := n.args[0]
		k := p.copyKernel(init)
		k.k.Source = "initial state of " + describeSources([]*node{n}) + ": " + k.k.Source
		end := add(&kir.Buffer{Kind: kir.Temp, DType: n.dtype, Shape: init.shape.Clone(), View: &kir.View{Of: r.storage, Offset: first}})
		bufOf[k.value] = end
		r.initK = k.k
		// After the kernel computing the initial state, if any.
		at := 0
		for i, o := range p.kerns {
			if o.value == init.id {
				at = i + 1
			}
		}
		p.kerns = slices.Insert(p.kerns, at, k)
		recs = append(recs, r)
	}
	return recs, nil
}

// planLoops turns the recurrences of prog into loops (see above). inits maps
// each recurrence to its initial-state kernel in prog.
func planLoops(prog *kir.Program, recs []*recurrence) error {
	if len(recs) == 0 {
		return nil
	}
	root := func(b int) int {
		if v := prog.Buffers[b].View; v != nil {
			return v.Of
		}
		return b
	}
	// Bodies, found once on the program as emitted.
	ks := prog.Kernels
	index := map[*kir.Kernel]int{}
	for i, k := range ks {
		index[k] = i
	}
	reads := make([][]int, len(ks))
	for i, k := range ks {
		reads[i] = k.Buffers()[1:]
	}
	readers := map[int][]int{}
	writers := map[int][]int{}
	for i, k := range ks {
		writers[k.Out] = append(writers[k.Out], i)
		for _, b := range reads[i] {
			readers[b] = append(readers[b], i)
		}
	}
	succ := make([][]int, len(ks))
	for i, k := range ks {
		for _, j := range readers[k.Out] {
			if j > i {
				succ[i] = append(succ[i], j)
			}
		}
	}
	for _, r := range recs {
		for _, w := range writers[r.nxt] {
			succ[w] = append(succ[w], readers[r.state]...)
		}
	}
	pred := make([][]int, len(ks))
	for i, ss := range succ {
		for _, j := range ss {
			pred[j] = append(pred[j], i)
		}
	}
	reach := func(from []int, next [][]int) []bool {
		seen := make([]bool, len(ks))
		stack := append([]int(nil), from...)
		for _, i := range from {
			seen[i] = true
		}
		for len(stack) > 0 {
			i := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			for _, j := range next[i] {
				if !seen[j] {
					seen[j] = true
					stack = append(stack, j)
				}
			}
		}
		return seen
	}
	body := make([][]bool, len(recs))
	for ri, r := range recs {
		if len(writers[r.nxt]) == 0 {
			return fmt.Errorf("no kernel computes the next states of recurrence %v", r.src)
		}
		f, b := reach(readers[r.state], succ), reach(writers[r.nxt], pred)
		body[ri] = make([]bool, len(ks))
		for i := range ks {
			body[ri][i] = f[i] && b[i]
		}
	}
	// Group recurrences whose bodies share a kernel.
	group := make([]int, len(recs))
	for i := range group {
		group[i] = i
	}
	find := func(i int) int {
		for group[i] != i {
			i = group[i]
		}
		return i
	}
	for a := range recs {
		for b := a + 1; b < len(recs); b++ {
			for i := range ks {
				if body[a][i] && body[b][i] {
					group[find(b)] = find(a)
					break
				}
			}
		}
	}
	type loop struct {
		recs   []*recurrence
		kernel []*kir.Kernel
	}
	var loops []*loop
	byRoot := map[int]*loop{}
	for ri, r := range recs {
		g := find(ri)
		l := byRoot[g]
		if l == nil {
			l = &loop{}
			byRoot[g] = l
			loops = append(loops, l)
		}
		if o := l.recs; len(o) > 0 && (o[0].steps != r.steps || o[0].reverse != r.reverse) {
			return fmt.Errorf("recurrences %v and %v form one loop but run over %d and %d steps, reverse %v and %v",
				o[0].src, r.src, o[0].steps, r.steps, o[0].reverse, r.reverse)
		}
		l.recs = append(l.recs, r)
	}
	for _, l := range loops {
		in := make([]bool, len(ks))
		for ri, r := range recs {
			if slices.Contains(l.recs, r) {
				for i := range ks {
					in[i] = in[i] || body[ri][i]
				}
			}
		}
		for i, k := range ks {
			if in[i] {
				l.kernel = append(l.kernel, k)
			}
		}
	}
	// Each loop in turn: order the kernels around it, then make its body
	// step-wise. Loops made before are moved as units.
	for _, l := range loops {
		if err := placeLoop(prog, l.recs, l.kernel, root); err != nil {
			return err
		}
	}
	return nil
}

// placeLoop orders prog's kernels around the loop of recs, whose body is
// kernels (none when the next states do not read the states), and makes the
// body step-wise.
func placeLoop(prog *kir.Program, recs []*recurrence, body []*kir.Kernel, root func(int) int) error {
	// Units: single kernels, or the loops already placed.
	type unit struct {
		ks   []*kir.Kernel
		loop *kir.StepLoop
	}
	var units []*unit
	for i := 0; i < len(prog.Kernels); i++ {
		if l := prog.LoopOf(i); l >= 0 {
			lp := prog.Loops[l]
			units = append(units, &unit{ks: prog.Kernels[lp.First:lp.End], loop: &lp})
			i = lp.End - 1
			continue
		}
		units = append(units, &unit{ks: prog.Kernels[i : i+1]})
	}
	in := map[*kir.Kernel]bool{}
	for _, k := range body {
		in[k] = true
	}
	if len(body) == 0 {
		// No loop, only the order, with next's writers in the loop's place.
		for _, k := range prog.Kernels {
			if slices.ContainsFunc(recs, func(r *recurrence) bool { return k.Out == r.nxt }) {
				in[k] = true
			}
		}
	}
	type access struct{ w, r []int }
	touch := func(u *unit) access {
		var a access
		for _, k := range u.ks {
			a.w = append(a.w, root(k.Out))
			for _, b := range k.Buffers()[1:] {
				a.r = append(a.r, root(b))
			}
		}
		return a
	}
	overlap := func(a, b []int) bool {
		return slices.ContainsFunc(a, func(x int) bool { return slices.Contains(b, x) })
	}
	conflict := func(a, b access) bool { return overlap(a.w, b.w) || overlap(a.w, b.r) || overlap(a.r, b.w) }
	acc := make([]access, len(units))
	for i, u := range units {
		acc[i] = touch(u)
	}
	// Everything from the first unit that touches a recurrence's storage is
	// placed: before the loop, in it, or after it.
	var stores []int
	for _, r := range recs {
		stores = append(stores, r.storage)
	}
	isIn := func(u *unit) bool { return u.loop == nil && in[u.ks[0]] }
	first := len(units)
	for i, u := range units {
		if isIn(u) || overlap(acc[i].w, stores) || overlap(acc[i].r, stores) {
			first = i
			break
		}
	}
	// What the loop writes: a kernel reading it needs the loop's steps, so
	// it runs after the loop wherever it was emitted (a reader of one
	// state that is off that state's cycle may be emitted before the cycle,
	// when it feeds another recurrence's cycle).
	var loopWrites []int
	for i, u := range units {
		if isIn(u) {
			loopWrites = append(loopWrites, acc[i].w...)
		}
	}
	var before, inside, after []int
	for i := first; i < len(units); i++ {
		if isIn(units[i]) {
			inside = append(inside, i)
			continue
		}
		needAfter := overlap(acc[i].r, loopWrites)
		for _, j := range slices.Concat(inside, after) {
			needAfter = needAfter || conflict(acc[j], acc[i])
		}
		needBefore := false
		for j := i + 1; j < len(units); j++ {
			needBefore = needBefore || isIn(units[j]) && (overlap(acc[i].w, acc[j].w) || overlap(acc[i].w, acc[j].r))
		}
		switch {
		case needAfter && needBefore:
			k := units[i].ks[0]
			return fmt.Errorf("kernel %s (%s) must run both before and after the loop of recurrence %v", k.Name, k.Source, recs[0].src)
		case needAfter:
			after = append(after, i)
		default:
			before = append(before, i)
		}
	}
	if len(body) > 0 {
		step := newStepper(prog, recs[0].steps)
		for _, i := range inside {
			k, err := step.kernel(units[i].ks[0])
			if err != nil {
				return fmt.Errorf("recurrence %v: %w", recs[0].src, err)
			}
			units[i].ks = []*kir.Kernel{k}
		}
	}
	order := slices.Concat(seq(first), before, inside, after)
	prog.Kernels, prog.Loops = nil, nil
	for n, i := range order {
		u := units[i]
		if len(body) > 0 && n == first+len(before) {
			prog.Loops = append(prog.Loops, kir.StepLoop{First: len(prog.Kernels), End: len(prog.Kernels) + len(inside),
				Steps: recs[0].steps, Reverse: recs[0].reverse})
		}
		if u.loop != nil {
			l := *u.loop
			l.First, l.End = len(prog.Kernels), len(prog.Kernels)+len(u.ks)
			prog.Loops = append(prog.Loops, l)
		}
		prog.Kernels = append(prog.Kernels, u.ks...)
	}
	return nil
}

// seq returns 0, 1, ..., n-1.
func seq(n int) []int {
	s := make([]int, n)
	for i := range s {
		s[i] = i
	}
	return s
}

// stepper rewrites loop-body kernels to compute one step.
type stepper struct {
	prog  *kir.Program
	steps int
	views map[int]int // buffer → its view at the current step
	err   error
}

func newStepper(prog *kir.Program, steps int) *stepper {
	return &stepper{prog: prog, steps: steps, views: map[int]int{}}
}

// stepView returns the buffer that is b's current step: b's rows, one per
// step, in b's storage.
func (s *stepper) stepView(b int) int {
	if v, ok := s.views[b]; ok {
		return v
	}
	buf := s.prog.Buffers[b]
	of, off := b, 0
	if buf.View != nil {
		of, off = buf.View.Of, buf.View.Offset
	}
	row := tile.Shape(buf.Shape[1:])
	v := &kir.Buffer{ID: len(s.prog.Buffers), Kind: kir.Temp, DType: buf.DType, Shape: row.Clone(),
		View: &kir.View{Of: of, Offset: off, Stride: row.Size()}}
	s.prog.Buffers = append(s.prog.Buffers, v)
	s.views[b] = v.ID
	return v.ID
}

// kernel returns k computing one step: its output loop 0 (the step) dropped
// and every access at that loop's index made an access of the step's view.
func (s *stepper) kernel(k *kir.Kernel) (*kir.Kernel, error) {
	out := s.prog.Buffers[k.Out]
	if len(k.Shape) == 0 || k.Shape[0] != s.steps || len(out.Shape) == 0 || out.Shape[0] != s.steps {
		return nil, fmt.Errorf("kernel %s (%s) is on the recurrence's cycle but its output %s%v does not run over the %d steps first",
			k.Name, k.Source, out.DType, out.Shape, s.steps)
	}
	s.err = nil
	nk := *k
	nk.Out = s.stepView(k.Out)
	nk.Shape = k.Shape[1:].Clone()
	nk.Schedule = kir.Schedule{}
	nk.Body = s.expr(k, k.Body)
	nk.Epilogue = s.expr(k, k.Epilogue)
	nk.Where = nil
	for _, c := range k.Where {
		if mentionsVar(c.X, 0) {
			s.fail(k, "a condition %v on the step", c.X)
			continue
		}
		nk.Where = append(nk.Where, kir.Cond{X: shiftVars(c.X, s), Bound: c.Bound})
	}
	nk.Source = k.Source + " (one step)"
	return &nk, s.err
}

func (s *stepper) fail(k *kir.Kernel, format string, args ...any) {
	if s.err == nil {
		s.err = fmt.Errorf("kernel %s (%s) is on the recurrence's cycle but reads %s: each step may read only the same step of what the cycle computes",
			k.Name, k.Source, fmt.Sprintf(format, args...))
	}
}

// mentions reports whether x uses loop variable v (not looking into
// gathered values' expressions).
func mentionsVar(x *kir.Ix, v int) bool {
	if x == nil {
		return false
	}
	if x.Op == kir.IxVar && x.Var == v {
		return true
	}
	return mentionsVar(x.A, v) || mentionsVar(x.B, v) || x.E != nil && exprMentions(x.E, v)
}

func exprMentions(e *kir.Expr, v int) bool {
	if e == nil {
		return false
	}
	for _, x := range e.Index {
		if mentionsVar(x, v) {
			return true
		}
	}
	for _, a := range e.Args {
		if exprMentions(a, v) {
			return true
		}
	}
	return false
}

// shiftVars renumbers loop variables k > 0 to k-1 (variable 0 is gone).
func shiftVars(x *kir.Ix, s *stepper) *kir.Ix {
	if x == nil {
		return nil
	}
	out := *x
	if x.Op == kir.IxVar {
		out.Var--
	}
	out.A, out.B = shiftVars(x.A, s), shiftVars(x.B, s)
	if x.E != nil {
		out.E = s.exprVars(x.E)
	}
	return &out
}

// exprVars is expr for expressions inside index values, where the step is
// not allowed (checked by the caller through mentions).
func (s *stepper) exprVars(e *kir.Expr) *kir.Expr { return s.expr(nil, e) }

func (s *stepper) expr(k *kir.Kernel, e *kir.Expr) *kir.Expr {
	if e == nil {
		return nil
	}
	out := *e
	out.Args = nil
	for _, a := range e.Args {
		out.Args = append(out.Args, s.expr(k, a))
	}
	out.Index = nil
	switch {
	case e.Op == kir.Load && len(e.Index) > 0 && isVar(e.Index[0], 0) && !slices.ContainsFunc(e.Index[1:], func(x *kir.Ix) bool { return mentionsVar(x, 0) }):
		buf := s.prog.Buffers[e.Buf]
		if buf.Shape[0] < s.steps {
			s.failK(k, "b%d%v at the step", e.Buf, buf.Shape)
		}
		out.Buf = s.stepView(e.Buf)
		for _, x := range e.Index[1:] {
			out.Index = append(out.Index, shiftVars(x, s))
		}
	default:
		for _, x := range e.Index {
			if mentionsVar(x, 0) {
				s.failK(k, "%s at %v", describeExpr(e), x)
			}
			out.Index = append(out.Index, shiftVars(x, s))
		}
	}
	return &out
}

func (s *stepper) failK(k *kir.Kernel, format string, args ...any) {
	if k == nil {
		k = &kir.Kernel{Name: "?", Source: "an index value"}
	}
	s.fail(k, format, args...)
}

func describeExpr(e *kir.Expr) string {
	if e.Op == kir.Load {
		return fmt.Sprintf("b%d", e.Buf)
	}
	return e.String()
}

func isVar(x *kir.Ix, v int) bool { return x != nil && x.Op == kir.IxVar && x.Var == v }
