package cpu

import (
	"github.com/tartanml/tartan/kir"
	"github.com/tartanml/tartan/tile"
)

// scatterColumns is the number of output columns (elements of one slice)
// a scatter task owns. Task boundaries depend only on the kernel, so the
// order in which each output element receives its terms never depends on
// the number of workers.
const scatterColumns = 256

// scatterKernel runs a kernel scheduled as an indexed accumulation
// (kir.ScatterView): each task owns a block of columns of one outer
// position, zeroes them and then walks the indices in order, adding each
// update row's block into the row the index names. Its work is that of
// reading the updates once, where the kernel's dense form costs the output's
// size times the number of indices.
type scatterKernel struct {
	out, upd, ind      int // buffer ids
	outer, rows, inner int // output viewed as [outer][rows][inner]
	nidx               int
	blocks             int // column blocks per outer position
	workers            int
	x                  *Executable
}

func newScatterKernel(p *kir.Program, k *kir.Kernel) (*scatterKernel, bool) {
	v := k.Schedule.Scatter
	if k.Schedule.Strategy != "scatter" || v == nil {
		return nil, false
	}
	out := p.Buffers[k.Out]
	switch out.DType {
	case tile.Float32, tile.Float64, tile.Int32, tile.Int64: // f16 and bf16 round every sum: dense path
	default:
		return nil, false
	}
	sk := &scatterKernel{out: k.Out, upd: v.Updates, ind: v.Indices, outer: 1, inner: 1,
		rows: k.Shape[v.Axis], nidx: p.Buffers[v.Indices].Size(), workers: k.Schedule.Workers}
	for _, n := range k.Shape[:v.Axis] {
		sk.outer *= n
	}
	for _, n := range k.Shape[v.Axis+1:] {
		sk.inner *= n
	}
	sk.blocks = (sk.inner + scatterColumns - 1) / scatterColumns
	return sk, true
}

func (sk *scatterKernel) run(x *Executable) {
	sk.x = x
	x.pool.run(sk, sk.outer*sk.blocks, sk.workers)
	sk.x = nil
}

func (sk *scatterKernel) runTask(_, t int) {
	o, blk := t/sk.blocks, t%sk.blocks
	c0 := blk * scatterColumns
	c1 := min(c0+scatterColumns, sk.inner)
	out, upd, ind := sk.x.bufs[sk.out], sk.x.bufs[sk.upd], sk.x.bufs[sk.ind]
	var index func(j int) int
	if ind.i32 != nil {
		index = func(j int) int { return int(ind.i32[j]) }
	} else {
		index = func(j int) int { return int(ind.i64[j]) }
	}
	switch {
	case out.f32 != nil:
		scatterRows(out.f32, upd.f32, index, o, c0, c1, sk)
	case out.f64 != nil:
		scatterRows(out.f64, upd.f64, index, o, c0, c1, sk)
	case out.i32 != nil:
		scatterRows(out.i32, upd.i32, index, o, c0, c1, sk)
	case out.i64 != nil:
		scatterRows(out.i64, upd.i64, index, o, c0, c1, sk)
	}
}

// scatterRows zeroes columns [c0, c1) of outer position o and adds the
// update rows into them in index order.
func scatterRows[T float32 | float64 | int32 | int64](out, upd []T, index func(int) int, o, c0, c1 int, sk *scatterKernel) {
	base := o * sk.rows * sk.inner
	for r := range sk.rows {
		clear(out[base+r*sk.inner+c0 : base+r*sk.inner+c1])
	}
	ubase := o * sk.nidx * sk.inner
	for j := range sk.nidx {
		r := index(j)
		if r < 0 || r >= sk.rows {
			continue
		}
		dst := out[base+r*sk.inner+c0 : base+r*sk.inner+c1]
		src := upd[ubase+j*sk.inner+c0 : ubase+j*sk.inner+c1]
		for c := range dst {
			dst[c] += src[c]
		}
	}
}
