package cpu

import (
	"github.com/tartanml/tartan/kir"
	"github.com/tartanml/tartan/tile"
)

// inferGEMM recognises a kernel that sums the product of two float32 loads,
// even when the compiler did not schedule it as a matrix product (Where
// conditions from padding, loads that need bounds checks or gathers): each
// output loop read by both operands is a batch loop, one read by a single
// operand belongs to that operand's group (M or N, by which comes first), a
// loop of extent 1 joins the group before it, and every reduction loop is a
// K loop. It returns nil when the kernel is not of that form or its output
// loops are not ordered batch, M, N (or batch, N, M).
func inferGEMM(p *kir.Program, k *kir.Kernel) *kir.GEMMView {
	b := k.Body
	if k.Agg != tile.Sum || len(k.Reduce) == 0 || b.Op != kir.Apply || b.Fn != tile.Mul || len(b.Args) != 2 ||
		b.Args[0].Op != kir.Load || b.Args[1].Op != kir.Load || laneOf(b.DType) != laneF {
		return nil
	}
	uses := [2]map[int]bool{{}, {}}
	exprVars(b.Args[0], uses[0])
	exprVars(b.Args[1], uses[1])
	const (
		batch = iota
		only0
		only1
	)
	nout := len(k.Shape)
	labels := make([]int, nout)
	for v := range nout {
		in0, in1 := uses[0][v], uses[1][v]
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
			return nil
		}
	}
	var view kir.GEMMView
	for j := range k.Reduce {
		view.K = append(view.K, nout+j)
	}
	a := 0
	for _, l := range labels {
		if l == only1 {
			a = 1
			break
		}
		if l == only0 {
			break
		}
	}
	mLabel := only0
	if a == 1 {
		mLabel = only1
	}
	rank := func(l int) int {
		switch l {
		case batch:
			return 0
		case mLabel:
			return 1
		}
		return 2
	}
	prev := 0
	for v, l := range labels {
		if rank(l) < prev {
			return nil
		}
		prev = rank(l)
		switch rank(l) {
		case 0:
			view.Batch = append(view.Batch, v)
		case 1:
			view.M = append(view.M, v)
		default:
			view.N = append(view.N, v)
		}
	}
	view.A, view.B = b.Args[a], b.Args[1-a]
	if view.DotProducts(k) {
		return nil // a reduction: the loops executor runs it in place
	}
	return &view
}
