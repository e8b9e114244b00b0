package compile

import (
	"fmt"
	"slices"

	"github.com/tartanml/tartan/kir"
	"github.com/tartanml/tartan/tile"
)

// Splitting long sums (rfactor). On a work-item target whose tiled
// products cannot split a sum across work-groups (Target.SplitK false), a
// matrix product of few outputs over a long sum (longSum: a convolution's
// weight gradient) would occupy a few work-groups for the whole sum. The
// schedule splits such a kernel into two plain kernels instead:
//
//   - the partial product, writing a new scratch buffer T[P, o…]: an extra
//     leading output loop p, and the outermost K loop x (extent E, from Lo)
//     replaced by Lo + p·S + x' with x' over [0, S), under the condition
//     p·S + x' < E when P·S > E. Part p sums the contiguous range
//     [p·S, p·S+S) of x together with every other K loop, and is itself a
//     product (p joins its batch group), which the tiles run as P·(tiles)
//     work-groups;
//   - the combine, writing the original output: Σ_p T[p, o…] over one
//     reduction loop p, in order from part 0, followed by the original
//     kernel's Epilogue (which reads only output loops and the accumulator,
//     both unchanged).
//
// The result is deterministic: every backend runs the two kernels as it
// runs any other, and the combine's order is fixed. The split runs inside
// the schedule pass, after memory planning, so the scratch buffer gets a
// storage slot of its own (a Temp alone in its slot); kernels inside step
// loops are left alone, and the loops after the split kernel move by one.
// Only float32 sums are split, so that the partial sums keep the
// precision of the accumulator the backends use.
const (
	// rfactorGroups is the number of tiles (of rfactorTile × rfactorTile
	// outputs, P parts counting P times) the split aims for.
	rfactorGroups = 128
	rfactorTile   = 64
	// rfactorMinPart is the fewest summed points of one part; rfactorMaxParts
	// bounds the parts (and the combine's loop).
	rfactorMinPart  = 256
	rfactorMaxParts = 64
)

// longSum reports whether a product of nb·m·n outputs over kk summed points
// is one of few outputs over a long sum, which tiles without SplitK run
// on a few work-groups for the whole sum.
func longSum(t Target, nb, m, n, kk int) bool {
	return t.workItems() && !t.SplitK && nb*m*n <= reduceMaxOutputs && kk >= reduceMinDepth
}

// rfactorParts chooses the split of kernel k, a product that view maps:
// the reduction loop j (an index into k.Reduce) split into P parts of S
// values each. ok is false when k is not worth splitting.
func rfactorParts(t Target, k *kir.Kernel, view *kir.GEMMView, regular bool) (j, parts, s int, ok bool) {
	nb, m, n, kk := view.Extents(k)
	switch {
	case view.DotProducts(k), !longSum(t, nb, m, n, kk), k.Body.DType != tile.Float32,
		!regular && (m < gpuMinRows || n < gpuMinRows || kk < gpuMinDepth):
		return 0, 0, 0, false
	}
	nout := len(k.Shape)
	j = -1
	for _, v := range view.K {
		if v >= nout && (j < 0 || v-nout < j) {
			if l := k.Reduce[v-nout]; l.Hi > l.Lo {
				j = v - nout
			}
		}
	}
	if j < 0 {
		return 0, 0, 0, false
	}
	tiles := nb * ceilDiv(m, rfactorTile) * ceilDiv(n, rfactorTile)
	want := min(ceilDiv(rfactorGroups, tiles), rfactorMaxParts, kk/rfactorMinPart)
	e := k.Reduce[j].Hi - k.Reduce[j].Lo + 1
	s = ceilDiv(e, max(want, 1))
	// A part length that divides the loop needs no condition (the operands
	// stay regular); take one if it costs at most half the parts more.
	for d := s; d <= min(e, s+s/2); d++ {
		if e%d == 0 {
			s = d
			break
		}
	}
	parts = ceilDiv(e, s)
	if parts < 2 {
		return 0, 0, 0, false
	}
	return j, parts, s, true
}

func ceilDiv(a, b int) int { return (a + b - 1) / b }

// rfactor splits kernel i of prog when the schedule finds it worth it (see
// above), inserting the partial product before it, and returns the why
// lines of the two kernels, partial first; it returns nil, leaving prog
// unchanged, when the kernel stays whole.
func rfactor(prog *kir.Program, i int, t Target) []string {
	k := prog.Kernels[i]
	if prog.LoopOf(i) >= 0 {
		return nil
	}
	view, regular, _ := gemmView(prog, k, t)
	if view == nil {
		return nil
	}
	j, parts, s, ok := rfactorParts(t, k, view, regular)
	if !ok {
		return nil
	}
	nout := len(k.Shape)
	l := k.Reduce[j]
	e := l.Hi - l.Lo + 1
	_, _, _, kk := view.Extents(k)

	scratch := &kir.Buffer{ID: len(prog.Buffers), Kind: kir.Temp, DType: tile.Float32,
		Shape: append(tile.Shape{parts}, k.Shape...), Slot: prog.Slots}
	part := &kir.Kernel{
		Name:   k.Name + "_part",
		Out:    scratch.ID,
		Shape:  slices.Clone(scratch.Shape),
		Reduce: slices.Clone(k.Reduce),
		Agg:    tile.Sum,
		Source: k.Source,
	}
	part.Reduce[j] = kir.Loop{Name: l.Name + "'", Lo: 0, Hi: s - 1}
	// Old variable v is new variable v+1; the split loop's is Lo + p·S + x'.
	split := kir.IxSum(kir.IxTimes(kir.IxOfVar(0), s), kir.IxOfVar(1+nout+j))
	vals := make([]*kir.Ix, k.NumVars())
	for v := range vals {
		vals[v] = kir.IxOfVar(v + 1)
	}
	vals[nout+j] = kir.IxSum(split, kir.IxOfConst(l.Lo))
	sub := &substituter{vals: vals, vars: part.VarRanges(), done: map[*kir.Expr]*kir.Expr{}}
	for _, c := range k.Where {
		part.Where = append(part.Where, kir.Cond{X: sub.ix(c.X), Bound: c.Bound})
	}
	if parts*s > e {
		part.Where = append(part.Where, kir.Cond{X: kir.Simplify(split, sub.vars), Bound: e})
	}
	part.Body = sub.expr(k.Body)

	// The partial product is a product of many outputs now: schedule it
	// without the long-sum rule (the split is what SplitK would have done).
	pt := t
	pt.SplitK = true
	squeeze(prog, part)
	prog.Buffers = append(prog.Buffers, scratch)
	pwhy := scheduleKernel(prog, part, pt)
	if part.Schedule.Strategy != "gemm" {
		prog.Buffers = prog.Buffers[:len(prog.Buffers)-1]
		return nil
	}
	prog.Slots++
	prog.SlotBytes = append(prog.SlotBytes, scratch.Size()*scratch.DType.Size())

	idx := make([]*kir.Ix, 1+nout)
	idx[0] = kir.IxOfVar(nout)
	for d := range nout {
		idx[d+1] = kir.IxOfVar(d)
	}
	k.Reduce = []kir.Loop{{Name: "part", Lo: 0, Hi: parts - 1}}
	k.Where = nil
	k.Agg = tile.Sum
	k.Body = &kir.Expr{Op: kir.Load, DType: tile.Float32, Buf: scratch.ID, Index: idx, OOB: kir.Skip}
	k.Name += "_combine"
	cwhy := scheduleKernel(prog, k, t)

	prog.Kernels = slices.Insert(prog.Kernels, i, part)
	for li := range prog.Loops {
		if prog.Loops[li].First > i {
			prog.Loops[li].First++
			prog.Loops[li].End++
		}
	}
	note := fmt.Sprintf("rfactor: %d parts of %d points (%s split by %d)", parts, kk/e*s, l.Name, s)
	return []string{
		insertWhy(pwhy, part.Name, note+"; "),
		insertWhy(cwhy, k.Name, fmt.Sprintf("rfactor combine: %d parts in order; ", parts)),
	}
}

// insertWhy puts note after the kernel name that starts why line w.
func insertWhy(w, name, note string) string {
	return name + ": " + note + w[len(name)+2:]
}
