package cpu

import (
	"github.com/tartanml/tartan/tile"
)

// dotPlan runs a sum whose body is one direct float32 load or the product
// of two, with every guard absorbed by the clipped reduction loops
// (convolutions and their gradients, depthwise ones included, windowed and
// column sums): instead of evaluating the body on a whole chunk at every
// reduction point and aggregating the chunk in memory, it lists the loads'
// offsets at the reduction points of one row and runs the points over
// strips of lanes held in registers (dotAcc). Each lane still adds the
// float32 products in float64 in the order of the reduction points, so
// results are those of the chunk program's.
type dotPlan struct {
	a, b *loadPlan // b nil: the body is the load a
	// ca, cb are the loads' coefficients of the innermost reduction loop,
	// along which offsets are listed without re-evaluating the forms.
	ca, cb int
	// batch is the number of points listed at a time: as many as keep the
	// operands of one batch of a row in the first-level cache, since every
	// strip of lanes runs over them.
	batch int
	// stream: each point is added to the whole row before the next, the
	// operands being read once in memory order, when no other row of a
	// work item reads them again and they do not fit a cache.
	stream bool
	// block is the number of values of the outermost reduction loop run
	// for every row of a chunk before the next ones.
	block int
}

// dotBlockBytes bounds the operand bytes one block of reduction points
// reads for a row (a variable for tests).
var dotBlockBytes = 256 << 10

// dotBatchBytes bounds the operand bytes of one batch of points of a row.
const dotBatchBytes = 24 << 10

// innerCoef returns the coefficient of loop l in the offset of a direct
// load, or false when a tabulated term depends on it.
func innerCoef(lp *loadPlan, l int) (int, bool) {
	for _, t := range lp.flat.tabs {
		if t.loop == l || t.loop2 == l {
			return 0, false
		}
	}
	c := 0
	for _, t := range lp.flat.terms {
		if t.loop == l {
			c += t.coef
		}
	}
	return c, true
}

// dotBatch is the number of reduction points whose offsets are listed at a
// time.
const dotBatch = 256

// newDotPlan returns the plan for lk's body, or nil when it has another
// form.
func newDotPlan(lk *loopsKernel) *dotPlan {
	p := lk.body
	if lk.agg != tile.Sum || lk.redVec || len(p.checks) > 0 || p.hasMask ||
		p.result.lane != laneF || len(p.consts) > 0 || lk.rowLen < 8 || disableDot {
		return nil
	}
	last := len(lk.s.ext) - 1
	direct := func(in *instr) *loadPlan {
		if in.op != opLoad || in.lane != laneF || in.ld.class != loadDirect ||
			lk.s.p.Buffers[in.ld.buf].DType != tile.Float32 || len(in.ld.flat.extra) > 0 {
			return nil
		}
		if _, ok := innerCoef(in.ld, last); !ok {
			return nil
		}
		return in.ld
	}
	switch len(p.instrs) {
	case 1:
		if a := direct(&p.instrs[0]); a != nil && p.instrs[0].dst == p.result.reg {
			ca, _ := innerCoef(a, last)
			d := &dotPlan{a: a, ca: ca}
			d.plan(lk)
			return d
		}
	case 3:
		a, b, m := direct(&p.instrs[0]), direct(&p.instrs[1]), &p.instrs[2]
		if a == nil || b == nil || m.op != opApply || m.fn != tile.Mul || m.lane != laneF || m.dst != p.result.reg ||
			m.dt != tile.Float32 {
			return nil
		}
		ra, rb := operand{laneF, p.instrs[0].dst}, operand{laneF, p.instrs[1].dst}
		if !(m.args[0] == ra && m.args[1] == rb) && !(m.args[0] == rb && m.args[1] == ra) {
			return nil
		}
		if m.args[0] == rb {
			a, b = b, a
		}
		ca, _ := innerCoef(a, last)
		cb, _ := innerCoef(b, last)
		d := &dotPlan{a: a, b: b, ca: ca, cb: cb}
		d.plan(lk)
		return d
	}
	return nil
}

// plan sets the blocking of the outermost reduction loop and groups rows
// into work items: as many as fit a chunk, in groups of even size, since
// rows that read the same blocks are best computed together, but at least
// as many groups as workers.
func (d *dotPlan) plan(lk *loopsKernel) {
	s := lk.s
	lk.redRows = 0 // rows of reduction points lengthen chunks, which a dot plan has no need of
	loads := 1
	if d.b != nil {
		loads = 2
	}
	unit := max(1, s.points(s.nout+1, len(s.ext))) * min(lk.rowLen, chunk) * 4 * loads
	d.block = max(1, dotBlockBytes/unit)
	d.batch = min(dotBatch, max(16, dotBatchBytes/(min(lk.rowLen, chunk)*4*loads)))
	defer func() {
		if d.stream {
			d.batch = dotBatch
		}
	}()
	rowBytes := max(1, s.points(s.nout, len(s.ext))) * min(lk.rowLen, chunk) * 4 * loads
	if lk.split > 1 || lk.rowLen >= chunk {
		d.stream = rowBytes > dotBlockBytes
		return
	}
	most := max(1, min(lk.rows, chunk/lk.rowLen))
	groups := (lk.rows + most - 1) / most
	// Few groups are made a multiple of the workers, so that each has the
	// same share (a row's result does not depend on its group).
	if w := lk.workers; w > 1 && groups < 4*w {
		groups = min(lk.rows, (groups+w-1)/w*w)
	}
	lk.rowsPer = (lk.rows + groups - 1) / groups
	d.stream = lk.rowsPer == 1 && rowBytes > dotBlockBytes
	work := lk.rowsPer * lk.rowLen * max(1, s.points(s.nout, len(s.ext)))
	lk.itemsPerTask = max(1, grain/max(1, work))
}

// disableDot turns the plan off (tests compare both paths).
var disableDot = false

// reduceDot computes the sums of the chunk's rows of n lanes from c0, the
// outermost reduction loop restricted to [rlo, rhi), into fr.acc.
func (lk *loopsKernel) reduceDot(fr *frame, c0, n, rlo, rhi int) {
	d := lk.dot
	s := lk.s
	first, last := s.nout, len(s.ext)-1
	all, nr := fr.rowVars, fr.rows
	offs := fr.dotOffs
	offA, offB := offs[:dotBatch], offs[dotBatch:2*dotBatch]
	a := fr.bufs[d.a.buf].f32
	var b []float32
	sa, sb := d.a.flat.stride, 0
	if d.b != nil {
		b = fr.bufs[d.b.buf].f32
		sb = d.b.flat.stride
	}
	for r := range nr {
		clear(fr.acc[r*n : (r+1)*n])
	}
	// The outermost loop runs in blocks whose operands stay in cache
	// while every row of the chunk visits them.
	for b0 := rlo; b0 < rhi; b0 += d.block {
		b1 := min(rhi, b0+d.block)
		for r := range nr {
			fr.vars = all[r]
			acc := fr.acc[r*n : (r+1)*n]
			if !lk.first(fr, first, last, b0, b1) {
				continue
			}
			for more := true; more; {
				// The points are listed in runs along the innermost loop.
				np := 0
				for np < d.batch && more {
					k := min(d.batch-np, fr.ends[last]-fr.vars[last])
					oa := d.a.flat.base(fr.vars) + sa*c0
					for j := range offA[np : np+k] {
						offA[np+j] = oa + j*d.ca
					}
					if d.b != nil {
						ob := d.b.flat.base(fr.vars) + sb*c0
						for j := range offB[np : np+k] {
							offB[np+j] = ob + j*d.cb
						}
					}
					np += k
					fr.vars[last] += k - 1
					more = lk.next(fr, first, last, b0, b1)
				}
				switch {
				case d.stream && d.b == nil:
					for p := range np {
						sumAcc(acc, a, offA[p:p+1], sa)
					}
				case d.stream:
					for p := range np {
						dotAcc(acc, a, b, offA[p:p+1], offB[p:p+1], sa, sb)
					}
				case d.b == nil:
					sumAcc(acc, a, offA[:np], sa)
				default:
					dotAcc(acc, a, b, offA[:np], offB[:np], sa, sb)
				}
			}
		}
	}
	fr.vars = all[0]
}

// dotAcc adds a[offA[p] + sa·i] · b[offB[p] + sb·i], rounded to float32,
// to acc[i] for every point p in order.
func dotAcc(acc []float64, a, b []float32, offA, offB []int, sa, sb int) {
	n := len(acc)
	i := 0
	if sa == 1 && sb == 1 {
		i = simdDotAcc(acc, a, b, offA, offB)
	}
	for ; i+4 <= n; i += 4 {
		s0, s1, s2, s3 := acc[i], acc[i+1], acc[i+2], acc[i+3]
		for p, oa := range offA {
			oa += sa * i
			ob := offB[p] + sb*i
			s0 += float64(a[oa] * b[ob])
			s1 += float64(a[oa+sa] * b[ob+sb])
			s2 += float64(a[oa+2*sa] * b[ob+2*sb])
			s3 += float64(a[oa+3*sa] * b[ob+3*sb])
		}
		acc[i], acc[i+1], acc[i+2], acc[i+3] = s0, s1, s2, s3
	}
	for ; i < n; i++ {
		s := acc[i]
		for p, oa := range offA {
			s += float64(a[oa+sa*i] * b[offB[p]+sb*i])
		}
		acc[i] = s
	}
}

// sumAcc adds a[offA[p] + sa·i] to acc[i] for every point p in order.
func sumAcc(acc []float64, a []float32, offA []int, sa int) {
	n := len(acc)
	i := 0
	if sa == 1 {
		i = simdSumAcc(acc, a, offA)
	}
	for ; i+4 <= n; i += 4 {
		s0, s1, s2, s3 := acc[i], acc[i+1], acc[i+2], acc[i+3]
		for _, oa := range offA {
			oa += sa * i
			s0 += float64(a[oa])
			s1 += float64(a[oa+sa])
			s2 += float64(a[oa+2*sa])
			s3 += float64(a[oa+3*sa])
		}
		acc[i], acc[i+1], acc[i+2], acc[i+3] = s0, s1, s2, s3
	}
	for ; i < n; i++ {
		s := acc[i]
		for _, oa := range offA {
			s += float64(a[oa+sa*i])
		}
		acc[i] = s
	}
}
