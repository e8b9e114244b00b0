package cpu

import (
	"github.com/tartanml/tartan/kir"
	"github.com/tartanml/tartan/tile"
)

// inferGEMM recognises a kernel that sums the product of two float32 loads,
// even when the compiler did not schedule it as a matrix product (Where
// conditions from padding, loads that need bounds checks or gathers), and
// sorts its loops into groups with kir.GEMMGroups. It returns nil when the
// kernel is not of that form, or when its matrices are single elements (a
// batch of dot products, which the loops executor runs in place).
func inferGEMM(p *kir.Program, k *kir.Kernel) *kir.GEMMView {
	b := k.Body
	if k.Agg != tile.Sum || len(k.Reduce) == 0 || b.Op != kir.Apply || b.Fn != tile.Mul || len(b.Args) != 2 ||
		b.Args[0].Op != kir.Load || b.Args[1].Op != kir.Load || laneOf(b.DType) != laneF {
		return nil
	}
	uses := [2]map[int]bool{{}, {}}
	kir.ExprVars(b.Args[0], uses[0])
	kir.ExprVars(b.Args[1], uses[1])
	view, _ := kir.GEMMGroups(k, b.Args[0], b.Args[1], func(f, v int) bool { return uses[f][v] })
	if view == nil || view.DotProducts(k) {
		return nil
	}
	return view
}
