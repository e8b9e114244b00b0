package kir

import "fmt"

// GEMMGroups sorts the loops of k, whose Body sums the product of the loads
// a and b, into the groups of a matrix product. reads(f, v) says whether
// factor f (0 for a, 1 for b) reads loop variable v. An output loop read by
// both factors is a batch loop, one read by a single factor belongs to that
// factor's group, and a loop of extent 1 joins the group of the loop before
// it (the first loop, when of extent 1, is a batch loop); every reduction
// loop is a K loop. The factor whose group's first loop comes first is A,
// its group M. Within each group the variables are in loop order.
//
// When runs is set, each of M and N is one run of loops in the output: a
// factor's own loops before the innermost run of them are batch loops read
// by that factor only (see contiguous), for backends whose products address
// each group by one stride. Otherwise a group may span loops the other
// group's interleave (a channels-first convolution's M is its image and
// spatial loops around the channel loop), for backends that address every
// element through its loop variables.
// Batch loops may still interleave with the groups: attention's products write
// [batch, rows, heads, cols], the heads being a batch loop between the M
// and N loops. A backend lays the product out by the output's strides.
// GEMMGroups returns nil and the reason when an output loop is read by
// neither factor.
func GEMMGroups(k *Kernel, a, b *Expr, reads func(f, v int) bool, runs bool) (*GEMMView, string) {
	const (
		batch = iota
		only0
		only1
	)
	r := len(k.Shape)
	labels := make([]int, r)
	first := -1 // the factor whose own loop comes first
	for v := range r {
		in0, in1 := reads(0, v), reads(1, v)
		switch {
		case k.Shape[v] == 1 && v > 0:
			labels[v] = labels[v-1]
		case k.Shape[v] == 1 || in0 && in1:
			labels[v] = batch
		case in0:
			labels[v] = only0
		case in1:
			labels[v] = only1
		default:
			return nil, fmt.Sprintf("output loop x%d is read by neither operand", v)
		}
	}
	if runs {
		contiguous(k.Shape, labels, only0)
		contiguous(k.Shape, labels, only1)
	}
	for v := range r {
		if first < 0 && labels[v] != batch {
			first = labels[v] - only0
		}
	}
	view := &GEMMView{A: a, B: b}
	mLabel := only0
	if first == 1 {
		mLabel = only1
		view.A, view.B = b, a
	}
	for v, l := range labels {
		switch l {
		case batch:
			view.Batch = append(view.Batch, v)
		case mLabel:
			view.M = append(view.M, v)
		default:
			view.N = append(view.N, v)
		}
	}
	for j := range k.Reduce {
		view.K = append(view.K, r+j)
	}
	return view, ""
}

// contiguous makes the loops labelled own one run in the output: its
// innermost run is kept, and its loops before that run become batch loops
// (label 0), read by one factor only. A channels-first convolution writes
// [n, c, h, w] with n, h and w read by the image only; n then becomes a
// batch loop, so that each image is one dense product, instead of the three
// loops forming no matrix at all. Loops of extent 1 never split a run.
func contiguous(shape []int, labels []int, own int) {
	v := len(labels) - 1
	for v >= 0 && (shape[v] <= 1 || labels[v] != own) {
		v--
	}
	for v >= 0 && (shape[v] <= 1 || labels[v] == own) {
		v--
	}
	for ; v >= 0; v-- {
		if labels[v] == own {
			labels[v] = 0
		}
	}
}

// Complete fills in the conditions and guards of view v of kernel k in
// program p (see GEMMView): it sorts k's Where conditions by operand and
// marks the operands whose loads may leave their buffers. It returns why
// the kernel is not the view's product otherwise: an operand reads a loop
// of the other's group, a condition reads both M and N loops, or a load
// that may leave its buffer yields a value other than 0 there (padding by
// another value is not a plain product of the two operands).
func (v *GEMMView) Complete(p *Program, k *Kernel) string {
	reads := readsAny
	ranges := k.VarRanges()
	v.CondA, v.CondB = nil, nil
	for i, e := range []*Expr{v.A, v.B} {
		set := map[int]bool{}
		ExprVars(e, set)
		if reads(set, [][]int{v.N, v.M}[i]) {
			return fmt.Sprintf("operand %c reads a loop of the other operand's group", 'A'+i)
		}
		guard := false
		for d, x := range e.Index {
			if lo, hi, ok := Bounds(x, ranges); !ok || lo < 0 || hi >= p.Buffers[e.Buf].Shape[d] {
				guard = true
			}
		}
		if guard && e.OOB == Fill && e.Value != 0 {
			return fmt.Sprintf("operand %c is padded with %v, not 0", 'A'+i, e.Value)
		}
		if i == 0 {
			v.GuardA = guard
		} else {
			v.GuardB = guard
		}
	}
	for i, c := range k.Where {
		set := map[int]bool{}
		IxVars(c.X, set)
		switch {
		case !reads(set, v.N):
			v.CondA = append(v.CondA, i)
		case !reads(set, v.M):
			v.CondB = append(v.CondB, i)
		default:
			return fmt.Sprintf("condition %d reads loops of both operands' groups", i)
		}
	}
	return ""
}

// readsAny reports whether set holds one of vs.
func readsAny(set map[int]bool, vs []int) bool {
	for _, x := range vs {
		if set[x] {
			return true
		}
	}
	return false
}

// IxVars adds to set the loop variables index expression x reads, including
// those of the indices of a loaded value it holds.
func IxVars(x *Ix, set map[int]bool) {
	if x == nil {
		return
	}
	switch x.Op {
	case IxVar:
		set[x.Var] = true
	case IxValue:
		ExprVars(x.E, set)
	}
	IxVars(x.A, set)
	IxVars(x.B, set)
}

// ExprVars adds to set the loop variables expression e reads: those of its
// loads' indices, its arguments' and theirs.
func ExprVars(e *Expr, set map[int]bool) {
	if e == nil {
		return
	}
	for _, x := range e.Index {
		IxVars(x, set)
	}
	for _, a := range e.Args {
		ExprVars(a, set)
	}
}
