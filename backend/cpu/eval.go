package cpu

import (
	"math"
	"unsafe"

	"github.com/tartanml/tartan/tile"
)

// frame is one worker's evaluation state: loop values, registers, the lane
// mask and the kernel executors' per-worker scratch. Frames are allocated
// when an executable is built and reused by every kernel, so running
// allocates nothing.
type frame struct {
	bufs []*buffer
	// vars holds the loop values of the chunk's first row; rowVars[r] those
	// of row r (rowVars[0] is vars). rows is the number of rows of the
	// chunk being evaluated.
	vars    []int
	rowVars [][]int
	rows    int
	// ends[l] is one past the last value of reduction loop l at the
	// current values of the loops outside it (its clipped range).
	ends []int
	// outerRows: the rows are consecutive points of the loops before the
	// axis (not reduction points).
	outerRows bool
	// f and d are the current views of the value registers; fs and ds their
	// own storage. iv holds integer registers.
	f, fs [][]float32
	d, ds [][]float64
	iv    [][]int
	mask  []bool
	// accF or accD is the aggregated value an epilogue's Acc reads, one per
	// lane of the chunk being evaluated.
	accF []float32
	accD []float64
	// Scratch of the kernel executors: float64 accumulators, or float32
	// ones (acc32) for exact aggregations of float32 lanes.
	acc   []float64
	wide  []float64 // a wide sum's rows (loopsKernel.reduceOutVec)
	acc32 []float32
	tmp32 []float32
	has   []bool
	pack  []float32 // gemm operand packing
	pk    []int     // affine packer state
	// dotOffs lists load offsets at reduction points (loopsKernel.reduceDot).
	dotOffs []int
	// direct, when not nil, is where register directReg is written: the
	// output memory of the chunk, so that the result needs no copy.
	direct    []float32
	directReg int
	// hoisting: a reduction is under way whose body may skip its hoisted
	// instructions once they were evaluated (hoisted) for the chunk at
	// hoistS0 of hoistN lanes and hoistRows rows, by program hoistProg.
	hoisting, hoisted bool
	hoistS0, hoistN   int
	hoistRows         int
	hoistProg         *prog
	// rowNeed and rowPick are the rows each instruction computes and each
	// row-uniform select picks (prog.needRows).
	rowNeed, rowPick []bool
	// periodic keeps the lanes of the current task's periodic float32
	// loads between its chunks (see execLoadPeriodic); a new task moves
	// them to spare, since the buffers may have been written since, so a
	// worker holds lanes for one kernel's loads at a time.
	periodic, spare []*periodicLanes
}

// periodicLanes is the last chunk a periodic load filled in this task: the
// base offset of its rows, its phase, rows and lanes.
type periodicLanes struct {
	in                *instr
	base, ph, rows, n int
	lanes             []float32
}

// frame returns worker w's frame for a new task.
func (x *Executable) frame(w int) *frame {
	fr := x.frames[w]
	fr.spare = append(fr.spare, fr.periodic...)
	fr.periodic = fr.periodic[:0]
	return fr
}

func newFrame(bufs []*buffer, nvars int, r regs, pack, ints int) *frame {
	fr := &frame{bufs: bufs, vars: make([]int, nvars), rowVars: make([][]int, chunk), rows: 1, ends: make([]int, nvars),
		f: make([][]float32, r.f), fs: make([][]float32, r.f),
		d: make([][]float64, r.d), ds: make([][]float64, r.d),
		iv: make([][]int, r.i), mask: make([]bool, chunk),
		acc: make([]float64, chunk), wide: make([]float64, chunk), acc32: make([]float32, chunk), tmp32: make([]float32, chunk), has: make([]bool, chunk),
		pack: make([]float32, pack), pk: make([]int, ints), dotOffs: make([]int, 2*dotBatch)}
	for i := range fr.fs {
		fr.fs[i] = make([]float32, chunk)
	}
	for i := range fr.ds {
		fr.ds[i] = make([]float64, chunk)
	}
	for i := range fr.iv {
		fr.iv[i] = make([]int, chunk)
	}
	fr.rowVars[0] = fr.vars
	for i := 1; i < chunk; i++ {
		fr.rowVars[i] = make([]int, nvars)
	}
	return fr
}

// outF returns register r's own storage for m lanes and points r at it.
func (fr *frame) outF(r, m int) []float32 {
	d := fr.fs[r][:m]
	if r == fr.directReg && fr.direct != nil {
		d = fr.direct[:m:m]
	}
	fr.f[r] = d
	return d
}

func (fr *frame) outD(r, m int) []float64 {
	d := fr.ds[r][:m]
	fr.d[r] = d
	return d
}

// interval narrows [lo, hi) to the lanes i where 0 ≤ b + s·i < bound.
func interval(b, s, bound, lo, hi int) (int, int) {
	switch {
	case s == 0:
		if b < 0 || b >= bound {
			return lo, lo
		}
	case s > 0:
		// i ≥ ⌈-b/s⌉ and i < ⌈(bound-b)/s⌉.
		lo = max(lo, ceilDiv(-b, s))
		hi = min(hi, ceilDiv(bound-b, s))
	default:
		t := -s
		// b - t·i ≥ 0: i ≤ ⌊b/t⌋; b - t·i < bound: i ≥ ⌊(b-bound)/t⌋ + 1.
		hi = min(hi, floorDiv(b, t)+1)
		lo = max(lo, floorDiv(b-bound, t)+1)
	}
	if hi < lo {
		hi = lo
	}
	return lo, hi
}

func floorDiv(a, b int) int {
	q := a / b
	if a%b != 0 && (a < 0) != (b < 0) {
		q--
	}
	return q
}

func ceilDiv(a, b int) int { return -floorDiv(-a, b) }

func floorMod(a, b int) int { return a - b*floorDiv(a, b) }

// active returns the interval of lanes of the one-row chunk [start,
// start+n) on which p's affine checks hold.
func (p *prog) active(fr *frame, start, n int) (lo, hi int) {
	lo, hi = 0, n
	for i := range p.checks {
		c := &p.checks[i]
		lo, hi = interval(c.l.base(fr.vars)+c.l.stride*start, c.l.stride, c.bound, lo, hi)
		if lo >= hi {
			return lo, lo
		}
	}
	return lo, hi
}

// evalChunk evaluates a body program on the chunk of fr.rows rows of n
// lanes from axis position start. It returns the lanes [lo, hi) its result
// register covers (lane lo first) and, when some of them are inactive, the
// mask of the active ones; lo == hi when no lane is active.
func (p *prog) evalChunk(fr *frame, start, n int) (lo, hi int, mask []bool) {
	if fr.rows == 1 {
		lo, hi = p.active(fr, start, n)
		if lo >= hi {
			return lo, lo, nil
		}
		m := hi - lo
		if p.hasMask {
			mask = fr.mask[:m]
			setTrue(mask)
		}
		p.exec(fr, start+lo, m)
		return lo, hi, mask
	}
	m := fr.rows * n
	partial, any := false, false
	if len(p.checks) > 0 {
		// Checks that read no output loop hold alike for every row of
		// output points: their lanes are found once.
		glo, ghi, perRow := 0, n, !fr.outerRows
		for i := range p.checks {
			if c := &p.checks[i]; fr.outerRows && c.rowFree {
				glo, ghi = interval(c.l.base(fr.vars)+c.l.stride*start, c.l.stride, c.bound, glo, ghi)
			} else {
				perRow = true
			}
		}
		for r := range fr.rows {
			rlo, rhi := glo, ghi
			if perRow {
				vars := fr.rowVars[r]
				for i := range p.checks {
					if c := &p.checks[i]; !fr.outerRows || !c.rowFree {
						rlo, rhi = interval(c.l.base(vars)+c.l.stride*start, c.l.stride, c.bound, rlo, rhi)
					}
				}
			}
			row := fr.mask[r*n : (r+1)*n]
			if rlo >= rhi {
				clear(row)
				partial = true
				continue
			}
			any = true
			if rlo > 0 || rhi < n {
				partial = true
			}
			clear(row[:rlo])
			setTrue(row[rlo:rhi])
			clear(row[rhi:])
		}
		if !any {
			return 0, 0, nil
		}
	} else if p.hasMask {
		setTrue(fr.mask[:m])
	}
	p.exec(fr, start, n)
	if partial || p.hasMask {
		mask = fr.mask[:m]
	}
	return 0, m, mask
}

// bind points the constant registers at their values.
func (p *prog) bind(fr *frame) {
	for i := range p.consts {
		c := &p.consts[i]
		if c.op.lane == laneF {
			fr.f[c.op.reg] = c.f
		} else {
			fr.d[c.op.reg] = c.d
		}
	}
}

// exec runs p's instructions on the chunk of fr.rows rows of n lanes each,
// from axis position s0: m = rows·n lanes, row r being lanes [r·n, (r+1)·n).
// The constants must be bound. When p.hasMask, fr.mask[:m] must be set
// first; lanes that turn out inactive are cleared.
func (p *prog) exec(fr *frame, s0, n int) {
	m := fr.rows * n
	skip := p.nhoist > 0 && fr.hoisted && fr.hoistProg == p && fr.hoistS0 == s0 && fr.hoistN == n && fr.hoistRows == fr.rows
	if fr.hoisting && p.nhoist > 0 {
		fr.hoisted, fr.hoistProg, fr.hoistS0, fr.hoistN, fr.hoistRows = true, p, s0, n, fr.rows
	}
	if p.rowSelects > 0 {
		p.needRows(fr)
	}
	for k := range p.instrs {
		if skip && p.hoist[k] {
			continue
		}
		in := &p.instrs[k]
		switch in.op {
		case opSelectRows:
			execSelectRows(fr, p, k, n)
		case opLoad:
			if p.rowSelects > 0 && in.ld.class != loadGeneral && in.ld.period == 0 {
				rows := max(fr.rows, 1)
				need := fr.rowNeed[k*rows : (k+1)*rows]
				if some, all := anyAll(need); !some {
					// Read by no branch picked: the register's own lanes,
					// left as they are.
					if in.lane == laneF {
						fr.outF(in.dst, fr.rows*n)
					} else {
						fr.outD(in.dst, fr.rows*n)
					}
					continue
				} else if !all && fr.rows > 1 {
					execLoadSomeRows(fr, in, s0, n, need)
					continue
				}
			}
			if fr.rows > 1 {
				execLoadRows(fr, in, s0, n)
			} else if in.lane == laneF {
				execLoadF(fr, in, s0, m)
			} else {
				execLoadD(fr, in, s0, m)
			}
		case opApply:
			execApply(fr, in, m)
		case opCast:
			execCast(fr, in, m)
		case opIndexValue:
			execIndexValue(fr, in, s0, n)
		case opRandom:
			execRandom(fr, in, s0, n)
		case opAcc:
			execAcc(fr, in, m)
		case opIxLin:
			st := in.lin.stride
			for r := range fr.rows {
				d := fr.iv[in.dst][r*n : (r+1)*n]
				b := in.lin.base(fr.rowVars[r]) + st*s0
				for i := range d {
					d[i] = b + st*i
				}
			}
		case opIxAdd:
			d, a, b := fr.iv[in.dst][:m], fr.iv[in.ia][:m], fr.iv[in.ib][:m]
			for i := range d {
				d[i] = a[i] + b[i]
			}
		case opIxMulC:
			d, a := fr.iv[in.dst][:m], fr.iv[in.ia][:m]
			for i := range d {
				d[i] = a[i] * in.c
			}
		case opIxDiv:
			d, a := fr.iv[in.dst][:m], fr.iv[in.ia][:m]
			for i := range d {
				d[i] = floorDiv(a[i], in.c)
			}
		case opIxMod:
			d, a := fr.iv[in.dst][:m], fr.iv[in.ia][:m]
			for i := range d {
				d[i] = floorMod(a[i], in.c)
			}
		case opIxValue:
			d := fr.iv[in.dst][:m]
			if in.args[0].lane == laneF {
				for i, v := range fr.f[in.args[0].reg][:m] {
					d[i] = intOf(float64(v))
				}
			} else {
				for i, v := range fr.d[in.args[0].reg][:m] {
					d[i] = intOf(v)
				}
			}
		case opCond:
			a, mask := fr.iv[in.ia][:m], fr.mask[:m]
			for i, x := range a {
				if x < 0 || x >= in.c {
					mask[i] = false
				}
			}
		case opCondVal:
			execCondVal(fr, in, m)
		}
	}
}

// execCondVal clears the mask lanes where 0 ≤ int(v) + in.ib < in.c
// fails, v being a value register.
func execCondVal(fr *frame, in *instr, m int) {
	mask := fr.mask[:m]
	lo, hi := -in.ib, in.c-in.ib // int(v) must lie in [lo, hi)
	a := in.args[0]
	if a.lane == laneF {
		v := fr.f[a.reg][:m]
		if in.isInt && lo == 0 && hi == 1 {
			// Integral values: the condition is v == 0. Branch-free, on
			// the mask's bytes.
			k := simdMaskZeroF32(mask, v)
			mask, v = mask[k:], v[k:]
			mb := unsafe.Slice((*uint8)(unsafe.Pointer(unsafe.SliceData(mask))), len(mask))
			for i, x := range v {
				// 1 exactly when x is ±0.
				z := uint8(1 - (math.Float32bits(x)&0x7fffffff+0x7fffffff)>>31)
				mb[i] &= z
			}
			return
		}
		for i, x := range v {
			if xi := intOf(float64(x)); xi < lo || xi >= hi {
				mask[i] = false
			}
		}
		return
	}
	for i, x := range fr.d[a.reg][:m] {
		if xi := intOf(x); xi < lo || xi >= hi {
			mask[i] = false
		}
	}
}

// intOf converts a loaded index value as the reference executor does.
func intOf(v float64) int {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return math.MinInt32
	}
	return int(v)
}

// loadRange computes a checked load's in-range lanes and, for them, the
// offset of lane 0 (which may itself be out of range).
func loadRange(vars []int, lp *loadPlan, s0, m int) (off, lo, hi int) {
	lo, hi = 0, m
	for d := range lp.dims {
		l := &lp.dims[d]
		lo, hi = interval(l.base(vars)+l.stride*s0, l.stride, lp.bounds[d], lo, hi)
	}
	return lp.flat.base(vars) + lp.flat.stride*s0, lo, hi
}

// generalOffsets computes a general load's offsets into fr.iv's scratch
// register... it returns, per lane, the offset or -1 when out of range.
func generalOffset(fr *frame, lp *loadPlan, i int) int {
	off := 0
	for d, r := range lp.idx {
		x := fr.iv[r][i]
		if x < 0 || x >= lp.shape[d] {
			return -1
		}
		off = off*lp.shape[d] + x
	}
	return off
}

func execLoadF(fr *frame, in *instr, s0, m int) {
	lp := in.ld
	if lp.period > 0 {
		execLoadPeriodic(fr, in, s0, m)
		return
	}
	buf := fr.bufs[lp.buf]
	if buf.f32 == nil {
		execLoadOtherF(fr, in, buf, s0, m)
		return
	}
	src := buf.f32
	switch lp.class {
	case loadDirect:
		off, st := lp.flat.base(fr.vars)+lp.flat.stride*s0, lp.flat.stride
		if st == 1 {
			fr.f[in.dst] = src[off : off+m : off+m]
			return
		}
		gatherLong(fr.outF(in.dst, m), src, off, st)
	case loadChecked:
		off, lo, hi := loadRange(fr.vars, lp, s0, m)
		st := lp.flat.stride
		if lo == 0 && hi == m && st == 1 {
			fr.f[in.dst] = src[off : off+m : off+m]
			return
		}
		d := fr.outF(in.dst, m)
		fv := float32(lp.fill)
		if lo >= hi {
			lo, hi = 0, 0
		}
		for i := 0; i < lo; i++ {
			d[i] = fv
		}
		if hi > lo {
			gatherLong(d[lo:hi], src, off+st*lo, st)
		}
		for i := hi; i < m; i++ {
			d[i] = fv
		}
	case loadGeneral:
		d := fr.outF(in.dst, m)
		fv := float32(lp.fill)
		for i := range d {
			if o := generalOffset(fr, lp, i); o >= 0 {
				d[i] = src[o]
			} else {
				d[i] = fv
				if lp.skip {
					fr.mask[i] = false
				}
			}
		}
	}
}

// execLoadOtherF loads a boolean buffer (as 0 or 1) or an integer buffer
// (rounded to float32) into float32 lanes.
func execLoadOtherF(fr *frame, in *instr, buf *buffer, s0, m int) {
	lp := in.ld
	d := fr.outF(in.dst, m)
	fv := float32(lp.fill)
	switch lp.class {
	case loadDirect, loadChecked:
		off, lo, hi := loadRange(fr.vars, lp, s0, m)
		if lo >= hi {
			lo, hi = 0, 0
		}
		for i := 0; i < lo; i++ {
			d[i] = fv
		}
		if hi > lo {
			gatherToF32(d[lo:hi], buf, off+lp.flat.stride*lo, lp.flat.stride)
		}
		for i := hi; i < m; i++ {
			d[i] = fv
		}
	case loadGeneral:
		for i := range d {
			if o := generalOffset(fr, lp, i); o >= 0 {
				d[i] = float32(elemD(buf, o))
			} else {
				d[i] = fv
				if lp.skip {
					fr.mask[i] = false
				}
			}
		}
	}
}

// gatherToF32 copies elements off + st·i of a buffer of any dtype into d
// as float32.
func gatherToF32(d []float32, buf *buffer, off, st int) {
	switch {
	case buf.f32 != nil:
		if st != 2 || !simdGather2(d, buf.f32, off) {
			gatherF(d, buf.f32, off, st)
		}
	case buf.b != nil && st == 1:
		boolsToF32(d, buf.b[off:off+len(d)])
	case buf.b != nil:
		for i := range d {
			d[i] = b2f32(buf.b[off])
			off += st
		}
	case buf.i32 != nil:
		for i := range d {
			d[i] = float32(buf.i32[off])
			off += st
		}
	case buf.i64 != nil:
		for i := range d {
			d[i] = float32(buf.i64[off])
			off += st
		}
	default:
		for i := range d {
			d[i] = float32(elemD(buf, off))
			off += st
		}
	}
}

// execLoadRows loads a chunk of several rows: each row's lanes are gathered
// (or filled out of range) from its own offset.
func execLoadRows(fr *frame, in *instr, s0, n int) {
	lp := in.ld
	if lp.period > 0 {
		execLoadPeriodic(fr, in, s0, n)
		return
	}
	buf := fr.bufs[lp.buf]
	m := fr.rows * n
	if lp.class == loadGeneral {
		if in.lane == laneF {
			execLoadF(fr, in, s0, m)
		} else {
			execLoadD(fr, in, s0, m)
		}
		return
	}
	st := lp.flat.stride
	if in.lane == laneF && lp.class == loadDirect && st == 1 && buf.f32 != nil {
		// Rows that follow each other in memory are read in place.
		off := lp.flat.base(fr.rowVars[0]) + s0
		contiguous := lp.rowMajor && fr.outerRows && n == lp.axisExt
		if rs := &lp.redStep; !fr.outerRows && rs.loop >= 0 && len(rs.tabs) == 0 {
			// Rows of reduction points are consecutive points of one
			// loop: their offsets step by its coefficient.
			contiguous = rs.coef == n
		}
		for r := 1; r < fr.rows && !contiguous; r++ {
			if lp.flat.base(fr.rowVars[r])+s0 != off+r*n {
				break
			}
			contiguous = r == fr.rows-1
		}
		if contiguous {
			fr.f[in.dst] = buf.f32[off : off+m : off+m]
			return
		}
	}
	if in.lane == laneF && lp.invariant && lp.class == loadDirect {
		// Every row is the first: load it once and double it.
		d := fr.outF(in.dst, m)
		gatherToF32(d[:n], buf, lp.flat.c+st*s0, st)
		for k := n; k < m; k *= 2 {
			copy(d[k:m], d[:k])
		}
		return
	}
	if in.lane == laneF {
		d := fr.outF(in.dst, m)
		fv := float32(lp.fill)
		w := newRowRanges(fr, lp, s0, n)
		for r := range fr.rows {
			row := d[r*n : (r+1)*n]
			off, lo, hi := w.next(r)
			if lo >= hi {
				lo, hi = 0, 0
			}
			for i := 0; i < lo; i++ {
				row[i] = fv
			}
			if hi > lo {
				gatherToF32(row[lo:hi], buf, off+st*lo, st)
			}
			for i := hi; i < n; i++ {
				row[i] = fv
			}
		}
		return
	}
	d := fr.outD(in.dst, m)
	w := newRowRanges(fr, lp, s0, n)
	for r := range fr.rows {
		row := d[r*n : (r+1)*n]
		off, lo, hi := w.next(r)
		if lo >= hi {
			lo, hi = 0, 0
		}
		for i := 0; i < lo; i++ {
			row[i] = lp.fill
		}
		if hi > lo {
			gatherD(row[lo:hi], buf, off+st*lo, st)
		}
		for i := hi; i < n; i++ {
			row[i] = lp.fill
		}
	}
}

// boolsToF32 converts booleans to 0 or 1 without branches: a Go bool is one
// byte holding 0 or 1.
func boolsToF32(d []float32, src []bool) {
	k := simdBoolsToF32(d, src)
	d, src = d[k:], src[k:]
	b := unsafe.Slice((*uint8)(unsafe.Pointer(unsafe.SliceData(src))), len(src))
	b = b[:len(d)]
	for i, x := range b {
		d[i] = float32(x)
	}
}

// fillF sets every element of d to v, by doubling copies.
func fillF(d []float32, v float32) {
	if len(d) == 0 {
		return
	}
	d[0] = v
	for k := 1; k < len(d); k *= 2 {
		copy(d[k:], d[:k])
	}
}

// gatherF copies src[off + st·i] into d.
func gatherF(d, src []float32, off, st int) {
	switch st {
	case 0:
		fillF(d, src[off])
	case 1:
		copy(d, src[off:off+len(d)])
	default:
		for i := range d {
			d[i] = src[off]
			off += st
		}
	}
}

// gatherLong is gatherF with the stride-2 loop in AVX-512 where it runs,
// for runs long enough to be worth a call (gatherF stays inlined).
func gatherLong(d, src []float32, off, st int) {
	if st != 2 || !simdGather2(d, src, off) {
		gatherF(d, src, off, st)
	}
}

// elemD returns element o of a non-float32 buffer as float64.
func elemD(b *buffer, o int) float64 {
	switch {
	case b.f64 != nil:
		return b.f64[o]
	case b.i32 != nil:
		return float64(b.i32[o])
	case b.i64 != nil:
		return float64(b.i64[o])
	case b.b != nil:
		if b.b[o] {
			return 1
		}
		return 0
	case b.f32 != nil:
		return float64(b.f32[o])
	}
	return 0
}

// gatherD copies elements off + st·i of b into d as float64.
func gatherD(d []float64, b *buffer, off, st int) {
	switch {
	case b.f64 != nil:
		if st == 1 {
			copy(d, b.f64[off:off+len(d)])
			return
		}
		for i := range d {
			d[i] = b.f64[off]
			off += st
		}
	case b.i32 != nil:
		for i := range d {
			d[i] = float64(b.i32[off])
			off += st
		}
	case b.i64 != nil:
		for i := range d {
			d[i] = float64(b.i64[off])
			off += st
		}
	case b.b != nil:
		for i := range d {
			if b.b[off] {
				d[i] = 1
			} else {
				d[i] = 0
			}
			off += st
		}
	default:
		for i := range d {
			d[i] = elemD(b, off)
			off += st
		}
	}
}

func execLoadD(fr *frame, in *instr, s0, m int) {
	lp := in.ld
	if lp.period > 0 {
		execLoadPeriodic(fr, in, s0, m)
		return
	}
	src := fr.bufs[lp.buf]
	switch lp.class {
	case loadDirect:
		off, st := lp.flat.base(fr.vars)+lp.flat.stride*s0, lp.flat.stride
		if st == 1 && src.f64 != nil {
			fr.d[in.dst] = src.f64[off : off+m : off+m]
			return
		}
		gatherD(fr.outD(in.dst, m), src, off, st)
	case loadChecked:
		off, lo, hi := loadRange(fr.vars, lp, s0, m)
		st := lp.flat.stride
		d := fr.outD(in.dst, m)
		if lo >= hi {
			lo, hi = 0, 0
		}
		for i := 0; i < lo; i++ {
			d[i] = lp.fill
		}
		if hi > lo {
			gatherD(d[lo:hi], src, off+st*lo, st)
		}
		for i := hi; i < m; i++ {
			d[i] = lp.fill
		}
	case loadGeneral:
		d := fr.outD(in.dst, m)
		for i := range d {
			if o := generalOffset(fr, lp, i); o >= 0 {
				d[i] = elemD(src, o)
			} else {
				d[i] = lp.fill
				if lp.skip {
					fr.mask[i] = false
				}
			}
		}
	}
}

func execIndexValue(fr *frame, in *instr, s0, n int) {
	m := fr.rows * n
	if in.lane == laneF {
		d := fr.outF(in.dst, m)
		if !in.aff {
			for i, x := range fr.iv[in.ia][:m] {
				d[i] = float32(x)
			}
			return
		}
		st := in.lin.stride
		for r := range fr.rows {
			row := d[r*n : (r+1)*n]
			b := in.lin.base(fr.rowVars[r]) + st*s0
			for i := range row {
				row[i] = float32(b + st*i)
			}
		}
		return
	}
	d := fr.outD(in.dst, m)
	if in.aff {
		st := in.lin.stride
		for r := range fr.rows {
			row := d[r*n : (r+1)*n]
			b := in.lin.base(fr.rowVars[r]) + st*s0
			for i := range row {
				row[i] = float64(b + st*i)
			}
		}
	} else {
		for i, x := range fr.iv[in.ia][:m] {
			d[i] = float64(x)
		}
	}
	if in.dt != tile.Float64 && in.dt != tile.Int64 {
		roundD(in.dt, d)
	}
}

func execRandom(fr *frame, in *instr, s0, n int) {
	m := fr.rows * n
	var seeds []float64
	var seedsF []float32
	var scalar uint64
	switch {
	case in.seedBuf >= 0:
		scalar = uint64(int64(elemD(fr.bufs[in.seedBuf], in.seedOff)))
	case in.seed.lane == laneD:
		seeds = fr.d[in.seed.reg][:m]
	default:
		seedsF = fr.f[in.seed.reg][:m]
	}
	seed := func(i int) uint64 {
		switch {
		case seeds != nil:
			return uint64(int64(seeds[i]))
		case seedsF != nil:
			return uint64(int64(seedsF[i]))
		}
		return scalar
	}
	if in.aff && in.lin.stride == 1 && in.lane == laneF {
		// Consecutive positions under one seed: whole Philox blocks.
		s := seed(0)
		uniform := true
		if in.seedBuf < 0 {
			for i := 1; i < m && uniform; i++ {
				uniform = seed(i) == s
			}
		}
		if uniform {
			d := fr.outF(in.dst, m)
			ok := true
			for r := range fr.rows {
				p0 := in.lin.base(fr.rowVars[r]) + s0
				if p0 < 0 {
					ok = false
					break
				}
				philoxFill(d[r*n:(r+1)*n], s, in.stream, p0)
			}
			if ok {
				return
			}
		}
	}
	var cache philoxCache
	cache.q = -1
	pos := func(i int) int {
		if in.aff {
			r := i / n
			return in.lin.base(fr.rowVars[r]) + in.lin.stride*(s0+i-r*n)
		}
		return fr.iv[in.ia][i]
	}
	if in.lane == laneF {
		d := fr.outF(in.dst, m)
		for i := range d {
			d[i] = float32(cache.uniform(seed(i), in.stream, pos(i)))
		}
		return
	}
	d := fr.outD(in.dst, m)
	for i := range d {
		d[i] = tile.RoundTo(in.dt, cache.uniform(seed(i), in.stream, pos(i)))
	}
}

// philoxFill sets d[i] to the uniform number at position p0+i (p0 ≥ 0) for
// one seed and stream, computing each Philox block once.
func philoxFill(d []float32, seed, stream uint64, p0 int) {
	const scale = 1.0 / (1 << 24)
	k0, k1 := uint32(seed), uint32(seed>>32)
	c2, c3 := uint32(stream), uint32(stream>>32)
	i := 0
	for i < len(d) {
		p := p0 + i
		q := uint64(p / 4)
		if p%4 == 0 {
			if n := simdPhilox(d[i:], q, stream, seed); n > 0 {
				i += n
				continue
			}
		}
		o := philox(uint32(q), uint32(q>>32), c2, c3, k0, k1)
		for j := p % 4; j < 4 && i < len(d); j++ {
			d[i] = float32(o[j]>>8) * scale
			i++
		}
	}
}

// philox is tile.Philox4x32 on unpacked words, for the compiler to keep in
// registers.
func philox(c0, c1, c2, c3, k0, k1 uint32) [4]uint32 {
	const (
		m0, m1 = 0xD2511F53, 0xCD9E8D57
		w0, w1 = 0x9E3779B9, 0xBB67AE85
	)
	for range 10 {
		p0 := uint64(m0) * uint64(c0)
		p1 := uint64(m1) * uint64(c2)
		c0, c1, c2, c3 = uint32(p1>>32)^c1^k0, uint32(p1), uint32(p0>>32)^c3^k1, uint32(p0)
		k0 += w0
		k1 += w1
	}
	return [4]uint32{c0, c1, c2, c3}
}

// philoxCache remembers the last Philox block, since four consecutive
// positions share one.
type philoxCache struct {
	seed, stream uint64
	q            int
	out          [4]uint32
}

func (c *philoxCache) uniform(seed, stream uint64, p int) float64 {
	if p < 0 {
		p = 0
	}
	q := p / 4
	if q != c.q || seed != c.seed || stream != c.stream {
		c.q, c.seed, c.stream = q, seed, stream
		uq := uint64(q)
		c.out = tile.Philox4x32([4]uint32{uint32(uq), uint32(uq >> 32), uint32(stream), uint32(stream >> 32)},
			[2]uint32{uint32(seed), uint32(seed >> 32)})
	}
	return float64(c.out[p%4]>>8) * (1.0 / (1 << 24))
}

func execAcc(fr *frame, in *instr, m int) {
	if in.lane == laneF {
		if fr.accF != nil {
			fr.f[in.dst] = fr.accF[:m:m]
			return
		}
		d := fr.outF(in.dst, m)
		for i, v := range fr.accD[:m] {
			d[i] = float32(v)
		}
		return
	}
	d := fr.outD(in.dst, m)
	if fr.accD != nil {
		copy(d, fr.accD[:m])
	} else {
		for i, v := range fr.accF[:m] {
			d[i] = float64(v)
		}
	}
	if in.dt != tile.Float64 {
		roundD(in.dt, d)
	}
}

func execCast(fr *frame, in *instr, m int) {
	a := in.args[0]
	switch {
	case in.lane == laneF && in.dt == tile.Bool:
		d := fr.outF(in.dst, m)
		if a.lane == laneF {
			for i, v := range fr.f[a.reg][:m] {
				d[i] = b2f32(v != 0)
			}
		} else {
			for i, v := range fr.d[a.reg][:m] {
				d[i] = b2f32(v != 0)
			}
		}
	case a.lane == laneD && in.lane == laneF:
		d := fr.outF(in.dst, m)
		for i, v := range fr.d[a.reg][:m] {
			d[i] = float32(v)
		}
	case a.lane == laneF && in.lane == laneD:
		d := fr.outD(in.dst, m)
		for i, v := range fr.f[a.reg][:m] {
			d[i] = float64(v)
		}
		if in.dt != tile.Float64 {
			roundD(in.dt, d)
		}
	default:
		d := fr.outD(in.dst, m)
		copy(d, fr.d[a.reg][:m])
		if in.dt != tile.Float64 {
			roundD(in.dt, d)
		}
	}
}

// roundD rounds every value of d to dtype dt (not f64) with tile.RoundTo's
// rules.
func roundD(dt tile.DType, d []float64) {
	switch dt {
	case tile.Int32:
		for i, v := range d {
			if v != v {
				d[i] = 0
			} else if v >= math.MinInt32 && v <= math.MaxInt32 {
				d[i] = float64(int32(v))
			} else {
				d[i] = tile.RoundTo(dt, v)
			}
		}
	case tile.Int64:
		for i, v := range d {
			if v != v {
				d[i] = 0
			} else {
				d[i] = math.Trunc(v)
			}
		}
	case tile.Bool:
		for i, v := range d {
			if v != 0 {
				d[i] = 1
			} else {
				d[i] = 0
			}
		}
	case tile.Float32, tile.Float16, tile.BFloat16:
		for i, v := range d {
			d[i] = float64(float32(v))
		}
	}
}

// execLoadPeriodic loads a periodic load (loadPlan.period) into the chunk
// of fr.rows rows of n lanes from axis position s0: lane i of a row reads
// base + pcoef·((s0+i) mod period), base being the row's. One period is
// gathered per row and the rest of the row copied from it; rows of the same
// base are copies of the first.
func execLoadPeriodic(fr *frame, in *instr, s0, n int) {
	lp := in.ld
	buf := fr.bufs[lp.buf]
	p, c := lp.period, lp.pcoef
	ph := s0 % p
	fillRow := func(row []float32, base int) {
		k := min(len(row), p)
		first := min(k, p-ph) // lanes before the pattern wraps
		gatherToF32(row[:first], buf, base+c*ph, c)
		if k > first {
			gatherToF32(row[first:k], buf, base, c)
		}
		for ; k < len(row); k *= 2 {
			copy(row[k:], row[:k])
		}
	}
	fillRowD := func(row []float64, base int) {
		for i := range row {
			row[i] = elemD(buf, base+c*((ph+i)%p))
		}
	}
	rows := max(fr.rows, 1)
	m := rows * n
	vars := func(r int) []int {
		if fr.rows > 1 {
			return fr.rowVars[r]
		}
		return fr.vars
	}
	if in.lane == laneF {
		var d []float32
		if rows == 1 || lp.invariant {
			// Every row starts at the same offset: chunks of equal phase
			// and size hold the same lanes, so a chunk like the last one
			// reuses its lanes (as a direct load points at memory).
			pl, hit := fr.periodicOf(in, lp.flat.base(vars(0)), ph, rows, n)
			if hit {
				fr.f[in.dst] = pl.lanes[:m:m]
				return
			}
			if pl != nil {
				d = pl.lanes[:m:m]
				fr.f[in.dst] = d
			}
		}
		if d == nil {
			d = fr.outF(in.dst, m)
		}
		for r := range rows {
			row := d[r*n : (r+1)*n]
			if r > 0 && lp.invariant {
				copy(row, d[:n])
				continue
			}
			fillRow(row, lp.flat.base(vars(r)))
		}
		return
	}
	d := fr.outD(in.dst, m)
	for r := range rows {
		fillRowD(d[r*n:(r+1)*n], lp.flat.base(vars(r)))
	}
}

// periodicOf returns the lanes kept for the periodic load in of a chunk
// whose rows start at base, and whether they already hold that chunk's
// (filled in this task at the same phase, rows and lanes). When they do
// not, the entry is set to describe the chunk about to be filled into
// its lanes. It returns nil when in writes the output memory directly.
func (fr *frame) periodicOf(in *instr, base, ph, rows, n int) (*periodicLanes, bool) {
	if in.dst == fr.directReg && fr.direct != nil {
		return nil, false
	}
	var pl *periodicLanes
	for _, e := range fr.periodic {
		if e.in == in {
			pl = e
			break
		}
	}
	switch {
	case pl != nil:
		if pl.base == base && pl.ph == ph && pl.rows == rows && pl.n == n {
			return pl, true
		}
	case len(fr.spare) > 0:
		pl = fr.spare[len(fr.spare)-1]
		fr.spare = fr.spare[:len(fr.spare)-1]
		fr.periodic = append(fr.periodic, pl)
	default:
		pl = &periodicLanes{lanes: make([]float32, chunk)}
		fr.periodic = append(fr.periodic, pl)
	}
	if len(pl.lanes) < rows*n {
		pl.lanes = make([]float32, rows*n)
	}
	pl.in, pl.base, pl.ph, pl.rows, pl.n = in, base, ph, rows, n
	return pl, false
}

// anyAll reports whether some and whether all of v are set.
func anyAll(v []bool) (some, all bool) {
	all = true
	for _, x := range v {
		some = some || x
		all = all && x
	}
	return some, all
}

// execLoadSomeRows loads the rows of a direct or checked load that need
// says are read (see prog.needRows); the others keep whatever the register
// held.
func execLoadSomeRows(fr *frame, in *instr, s0, n int, need []bool) {
	lp := in.ld
	buf := fr.bufs[lp.buf]
	m := fr.rows * n
	if in.lane == laneF {
		loadSomeRows(fr, lp, s0, n, need, fr.outF(in.dst, m), float32(lp.fill), func(d []float32, off, st int) { gatherToF32(d, buf, off, st) })
		return
	}
	loadSomeRows(fr, lp, s0, n, need, fr.outD(in.dst, m), lp.fill, func(d []float64, off, st int) { gatherD(d, buf, off, st) })
}

// loadSomeRows fills the rows of d that need marks: the lanes in range
// gathered from the row's offset, the others fv.
func loadSomeRows[T float32 | float64](fr *frame, lp *loadPlan, s0, n int, need []bool, d []T, fv T, gather func(d []T, off, st int)) {
	st := lp.flat.stride
	for r, ok := range need {
		if !ok {
			continue
		}
		row := d[r*n : (r+1)*n]
		off, lo, hi := loadRange(fr.rowVars[r], lp, s0, n)
		if lo >= hi {
			lo, hi = 0, 0
		}
		for i := 0; i < lo; i++ {
			row[i] = fv
		}
		if hi > lo {
			gather(row[lo:hi], off+st*lo, st)
		}
		for i := hi; i < n; i++ {
			row[i] = fv
		}
	}
}
