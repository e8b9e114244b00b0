package opencl

import (
	"github.com/tartanml/tartan/kir"
	"github.com/tartanml/tartan/tile"
)

// renderScatter renders a kernel scheduled as an indexed accumulation
// (kir.ScatterView): one work-item per column of the output viewed as
// [outer][rows][inner] zeroes its column and walks the indices in order,
// adding each update into the row the index names (indices outside the rows
// are skipped). Every output element is owned by one work-item and receives
// its terms in index order, so results are deterministic and need no
// atomics. It reports false for dtypes whose sums the loop nest rounds
// (f16, bf16), which keep the dense form.
func (r *renderer) renderScatter(i int, k *kir.Kernel) bool {
	v := k.Schedule.Scatter
	out := r.p.Buffers[k.Out]
	switch out.DType {
	case tile.Float32, tile.Float64, tile.Int32, tile.Int64:
	default:
		return false
	}
	outer, inner := 1, 1
	for _, n := range k.Shape[:v.Axis] {
		outer *= n
	}
	for _, n := range k.Shape[v.Axis+1:] {
		inner *= n
	}
	rows, nidx := k.Shape[v.Axis], r.p.Buffers[v.Indices].Size()
	wide := needWide(r.p, k) || int64(outer)*int64(nidx)*int64(inner) > 1<<31-1
	it := idxType(wide)
	lit := func(n int) string { return intLiteral(n, wide) }
	var w writer
	w.ind = 1
	total := outer * inner
	w.line("if (gid >= %s) return;", lit(total))
	w.line("const %s o = gid / %s, c = gid %% %s;", it, lit(inner), lit(inner))
	w.line("__global %s* dst = %s + o * %s + c;", stype(out.DType), bufName(k.Out), lit(rows*inner))
	w.line("const __global %s* src = %s + o * %s + c;", stype(out.DType), bufName(v.Updates), lit(nidx*inner))
	w.open("for (%s r = 0; r < %s; r++) {", it, lit(rows))
	w.line("dst[r * %s] = %s;", lit(inner), literal(out.DType, 0))
	w.close("}")
	w.open("for (%s j = 0; j < %s; j++) {", it, lit(nidx))
	w.line("const long x = (long)%s[j];", bufName(v.Indices))
	w.open("if (x >= 0 && x < %d) {", rows)
	w.line("dst[(%s)x * %s] += src[j * %s];", it, lit(inner), lit(inner))
	w.close("}")
	w.close("}")
	params, args := r.params(k.Out, bufSet{v.Updates: 0, v.Indices: 1}, nil)
	r.pointKernel(launchPlan{Fn: kernelFn(i, k), Kernel: i, Strategy: "scatter", Args: args, Global: total}, params, w.b.String(), wide)
	return true
}
