package opencl

import (
	"fmt"

	"github.com/tartanml/tartan/kir"
	"github.com/tartanml/tartan/tile"
)

// reduceShape is the geometry of a parallel reduction: work-groups of
// TX×TY work-items where TX consecutive output points share a group and the
// TY work-items of each point split its reduction, then combine in local
// memory; Splits groups along the reduction write partial results that a
// second launch combines.
type reduceShape struct {
	TX, TY, GroupsX, Splits int
}

// planReduce picks the geometry for outs output points of red reduction
// points each.
func (r *renderer) planReduce(outs, red int) reduceShape {
	tx := 1
	for tx < 32 && tx < outs {
		tx *= 2
	}
	ty := 256 / tx
	gx := (outs + tx - 1) / tx
	target := r.t.ComputeUnits * 4
	if !r.t.GPU {
		target = r.t.ComputeUnits
	}
	splits := 1
	if gx < target {
		splits = (target + gx - 1) / gx
	}
	// Every work-item should reduce at least 32 points.
	splits = max(1, min(splits, red/(ty*32)))
	if r.t.Split > 0 {
		splits = r.t.Split
	}
	return reduceShape{TX: tx, TY: ty, GroupsX: gx, Splits: splits}
}

// renderReduce renders the parallel reduction strategy for a kernel with an
// associative aggregation: each output point's reduction space, flattened in
// row-major order, is dealt out to TY work-items (and Splits groups); each
// work-item aggregates its share, the group combines the shares in a tree in
// local memory, and the result is stored through the epilogue, or, with
// several splits, stored as a partial that a second kernel combines.
func (r *renderer) renderReduce(i int, k *kir.Kernel) error {
	wide := needWide(r.p, k)
	it := idxType(wide)
	names := varNames(k)
	vars := k.VarRanges()
	pt, err := r.renderPoint(k, names, wide)
	if err != nil {
		return err
	}
	dt := k.Body.DType
	ct := ctype(dt)
	track := needsAny(k.Agg) && mayMiss(k, pt)
	outs, red := k.Shape.Size(), reducePoints(k)
	g := r.planReduce(outs, red)
	fn := kernelFn(i, k)
	lit := func(n int) string { return intLiteral(n, wide) }

	var scratch []scratchParam
	partial, flags := -1, -1
	if g.Splits > 1 {
		partial = r.addScratch(g.Splits * outs * ctypeSize(dt))
		scratch = append(scratch, scratchParam{partial, ct})
		if track {
			flags = r.addScratch(g.Splits * outs)
			scratch = append(scratch, scratchParam{flags, "uchar"})
		}
	}

	var w writer
	w.ind = 1
	nt := g.TX * g.TY
	w.line("__local %s red[%d];", ct, nt)
	if track {
		w.line("__local uchar redAny[%d];", nt)
	}
	w.line("const int lid = get_local_id(0);")
	w.line("const int lx = lid %% %d, ly = lid / %d;", g.TX, g.TX)
	w.line("const int grp = get_group_id(0);")
	w.line("const %s o = (%s)(grp %% %d) * %d + lx;", it, it, g.GroupsX, g.TX)
	w.line("const int split = grp / %d;", g.GroupsX)
	w.line("const int valid = o < %s;", lit(outs))
	w.line("const %s oc = valid ? o : 0;", it)
	outVars := make([]int, len(k.Shape))
	for d := range outVars {
		outVars[d] = d
	}
	decodeVars(&w, it, "oc", outVars, vars, names, wide)
	w.line("%s acc = %s;", ct, aggInit(k.Agg, dt))
	if track {
		w.line("uchar any = 0;")
	}
	redVars := make([]int, len(k.Reduce))
	for j := range redVars {
		redVars[j] = len(k.Shape) + j
	}
	stride := g.TY * g.Splits
	w.open("if (valid) {")
	w.open("for (%s ri = (%s)split * %d + ly; ri < %s; ri += %d) {", it, it, g.TY, lit(red), stride)
	decodeVars(&w, it, "ri", redVars, vars, names, wide)
	accumulate(&w, k, pt, track)
	w.close("}")
	w.close("}")
	if track {
		w.line("redAny[lid] = any;")
	}
	w.line("red[lid] = acc;")
	w.line("barrier(CLK_LOCAL_MEM_FENCE);")
	w.open("for (int step = %d; step > 0; step >>= 1) {", g.TY/2)
	w.open("if (ly < step) {")
	w.line("red[lid] = %s;", aggStep(k.Agg, dt, "red[lid]", fmt.Sprintf("red[lid + step * %d]", g.TX)))
	if track {
		w.line("redAny[lid] |= redAny[lid + step * %d];", g.TX)
	}
	w.close("}")
	w.line("barrier(CLK_LOCAL_MEM_FENCE);")
	w.close("}")
	w.open("if (ly == 0 && valid) {")
	w.line("acc = red[lx];")
	reads := pt.reads
	if g.Splits == 1 {
		if track {
			w.line("if (!redAny[lx]) acc = %s;", literal(dt, 0))
		}
		er, err := r.finish(&w, k, names, wide, "o")
		if err != nil {
			return err
		}
		for _, id := range er.ids() {
			reads.add(id)
		}
	} else {
		w.line("%s[(%s)split * %s + o] = acc;", scratchName(partial), it, lit(outs))
		if track {
			w.line("%s[(%s)split * %s + o] = redAny[lx];", scratchName(flags), it, lit(outs))
		}
	}
	w.close("}")
	params, args := r.params(k.Out, reads, scratch)
	fmt.Fprintf(&r.out, "__kernel __attribute__((reqd_work_group_size(%d, 1, 1)))\nvoid %s(%s) {\n%s%s}\n", nt, fn, params, viewPrologue(args), w.b.String())
	r.r.Launches = append(r.r.Launches, launchPlan{Fn: fn, Kernel: i, Strategy: fmt.Sprintf("reduce %dx%d split %d", g.TX, g.TY, g.Splits),
		Args: args, Global: g.GroupsX * g.Splits * nt, Local: nt, Fixed: true})
	if g.Splits == 1 {
		return nil
	}
	return r.renderCombine(i, k, fn+"_combine", partial, flags, g.Splits, names, wide)
}

// renderCombine renders the second launch of a split reduction: one
// work-item per output point aggregates the partial results of every split
// (and their contribution flags) and stores through the epilogue.
func (r *renderer) renderCombine(i int, k *kir.Kernel, fn string, partial, flags, splits int, names []string, wide bool) error {
	it := idxType(wide)
	dt := k.Body.DType
	ct := ctype(dt)
	outs := k.Shape.Size()
	var w writer
	w.ind = 1
	w.line("if (gid >= %s) return;", intLiteral(outs, wide))
	outVars := make([]int, len(k.Shape))
	for d := range outVars {
		outVars[d] = d
	}
	decodeVars(&w, it, "gid", outVars, k.VarRanges(), names, wide)
	w.line("%s acc = %s;", ct, aggInit(k.Agg, dt))
	if flags >= 0 {
		w.line("uchar any = 0;")
	}
	w.open("for (int s = 0; s < %d; s++) {", splits)
	w.line("acc = %s;", aggStep(k.Agg, dt, "acc", fmt.Sprintf("%s[(%s)s * %s + gid]", scratchName(partial), it, intLiteral(outs, wide))))
	if flags >= 0 {
		w.line("any |= %s[(%s)s * %s + gid];", scratchName(flags), it, intLiteral(outs, wide))
	}
	w.close("}")
	if flags >= 0 {
		w.line("if (!any) acc = %s;", literal(dt, 0))
	}
	reads, err := r.finish(&w, k, names, wide, "gid")
	if err != nil {
		return err
	}
	scratch := []scratchParam{{partial, ct}}
	if flags >= 0 {
		scratch = append(scratch, scratchParam{flags, "uchar"})
	}
	params, args := r.params(k.Out, reads, scratch)
	r.pointKernel(launchPlan{Fn: fn, Kernel: i, Strategy: "reduce-combine", Args: args, Global: outs}, params, w.b.String(), wide)
	return nil
}

// ctypeSize returns the size in bytes of ctype(dt).
func ctypeSize(dt tile.DType) int {
	switch dt {
	case tile.Bool:
		return 1
	case tile.Int64, tile.Float64:
		return 8
	}
	return 4
}
