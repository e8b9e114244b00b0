package cpu

import (
	"github.com/tartanml/tartan/kir"
	"github.com/tartanml/tartan/tile"
)

// Row-uniform selects. A select whose condition reads only loop values of
// the loops outside the vector axis (the phase tests x mod 2 < 1 by which a
// strided gradient interleaves its phases) picks one branch for a whole
// row. Such a select evaluates its condition once per row and copies that
// branch's row (or, for a chunk of one row, points at it), and the loads
// that only the branches not picked would read are skipped for that row:
// of the four phase loads of a stride-2 gradient, each row reads one.
//
// They are compiled only in programs of spaces without reduction loops
// (elementwise kernels) and in the epilogues of matrix products
// (epilogueRunner), where a chunk's rows are output rows whose loop values
// are fixed for the whole evaluation.

// rowTest evaluates a condition at one row's loop values.
type rowTest func(vars []int) bool

// rowScalar evaluates a number at one row's loop values.
type rowScalar func(vars []int) float64

// rowUniformOK reports whether b may compile row-uniform selects.
func (b *builder) rowUniformOK() bool {
	return !disableRowSelect && (len(b.s.ext) == b.s.nout || b.outputRows) && b.axis == b.s.nout-1
}

// disableRowSelect compiles every select lane by lane (tests compare both
// ways).
var disableRowSelect = false

// rowCondOf returns e as a condition on the row's loop values, or false
// when e reads a loaded value or the axis.
func (b *builder) rowCondOf(e *kir.Expr) (rowTest, bool) {
	if e.Op != kir.Apply {
		if x, ok := b.rowScalarOf(e); ok {
			return func(v []int) bool { return x(v) != 0 }, true
		}
		return nil, false
	}
	switch e.Fn {
	case tile.Not:
		a, ok := b.rowCondOf(e.Args[0])
		return func(v []int) bool { return !a(v) }, ok
	case tile.And, tile.Or:
		x, ok1 := b.rowCondOf(e.Args[0])
		y, ok2 := b.rowCondOf(e.Args[1])
		if e.Fn == tile.And {
			return func(v []int) bool { return x(v) && y(v) }, ok1 && ok2
		}
		return func(v []int) bool { return x(v) || y(v) }, ok1 && ok2
	case tile.Lt, tile.Le, tile.Gt, tile.Ge, tile.Eq, tile.Ne:
		x, ok1 := b.rowScalarOf(e.Args[0])
		y, ok2 := b.rowScalarOf(e.Args[1])
		if !ok1 || !ok2 {
			return nil, false
		}
		switch e.Fn {
		case tile.Lt:
			return func(v []int) bool { return x(v) < y(v) }, true
		case tile.Le:
			return func(v []int) bool { return x(v) <= y(v) }, true
		case tile.Gt:
			return func(v []int) bool { return x(v) > y(v) }, true
		case tile.Ge:
			return func(v []int) bool { return x(v) >= y(v) }, true
		case tile.Eq:
			return func(v []int) bool { return x(v) == y(v) }, true
		}
		return func(v []int) bool { return x(v) != y(v) }, true
	}
	return nil, false
}

// rowScalarOf returns e as a number of the row's loop values: a constant,
// an index value not reading the axis, or a cast of one to an integer
// type, within the range where float64 holds integers exactly.
func (b *builder) rowScalarOf(e *kir.Expr) (rowScalar, bool) {
	switch e.Op {
	case kir.Const:
		c := e.Value
		return func([]int) float64 { return c }, true
	case kir.IndexValue:
		x := b.s.ix(e.Index[0]).simp
		if b.dependsOnAxis(x) || !indexOnly(x) {
			return nil, false
		}
		vm := b.s.vm
		return func(v []int) float64 { return float64(scalarIx(x, vm, v)) }, true
	case kir.Cast:
		if e.DType != tile.Int32 && e.DType != tile.Int64 || !e.Args[0].DType.IsInt() {
			return nil, false
		}
		return b.rowScalarOf(e.Args[0])
	}
	return nil, false
}

// indexOnly reports whether x reads loop variables only, no loaded values.
func indexOnly(x *kir.Ix) bool {
	if x == nil {
		return true
	}
	if x.Op == kir.IxValue {
		return false
	}
	return indexOnly(x.A) && indexOnly(x.B)
}

// rowSelect compiles select(c, x, y) with a row-uniform condition c.
func (b *builder) rowSelect(e *kir.Expr, cond rowTest, l lane) operand {
	in := instr{op: opSelectRows, lane: l, dt: e.DType, rowTest: cond}
	in.args[1], in.args[2] = b.in(l, e.Args[1]), b.in(l, e.Args[2])
	in.dst = b.regs.new(l)
	b.emit(in)
	b.p.rowSelects++
	return operand{l, in.dst}
}

// planRows prepares the program's row-need analysis: for every instruction
// the instructions producing its value operands.
func (p *prog) planRows() {
	if p.rowSelects == 0 {
		return
	}
	prodF, prodD := map[int]int{}, map[int]int{}
	producer := func(o operand) int {
		m := prodF
		if o.lane == laneD {
			m = prodD
		}
		if k, ok := m[o.reg]; ok {
			return k
		}
		return -1
	}
	p.operandsOf = make([][3]int, len(p.instrs))
	for k := range p.instrs {
		in := &p.instrs[k]
		ops := [3]int{-1, -1, -1}
		switch in.op {
		case opApply:
			n := in.fn.Arity()
			if in.fn == tile.Select {
				n = 3
			}
			for i := range n {
				ops[i] = producer(in.args[i])
			}
		case opSelectRows:
			ops[1], ops[2] = producer(in.args[1]), producer(in.args[2])
		case opCast, opIxValue, opCondVal:
			ops[0] = producer(in.args[0])
		case opRandom:
			if in.seedBuf < 0 {
				ops[0] = producer(in.seed)
			}
		}
		p.operandsOf[k] = ops
		switch in.op {
		case opLoad, opApply, opCast, opIndexValue, opRandom, opAcc, opSelectRows:
			if in.lane == laneF {
				prodF[in.dst] = k
			} else {
				prodD[in.dst] = k
			}
		}
	}
}

// needRows sets fr.rowNeed: for instruction k and row r,
// fr.rowNeed[k*rows+r] reports whether row r of k's value is read on the
// way to the result, and fr.rowPick the choice of every row-uniform select
// per row. Instructions other than value ones (conditions on the mask) and
// those whose lanes cannot be told apart per row count as needed
// everywhere.
func (p *prog) needRows(fr *frame) {
	rows := max(fr.rows, 1)
	n := len(p.instrs) * rows
	if cap(fr.rowNeed) < n {
		fr.rowNeed, fr.rowPick = make([]bool, n), make([]bool, n)
	}
	need, pick := fr.rowNeed[:n], fr.rowPick[:n]
	clear(need)
	vars := func(r int) []int {
		if fr.rows > 1 {
			return fr.rowVars[r]
		}
		return fr.vars
	}
	last := len(p.instrs) - 1
	for k := last; k >= 0; k-- {
		in := &p.instrs[k]
		row := need[k*rows : (k+1)*rows]
		switch {
		case k == last, in.dst == p.result.reg && in.lane == p.result.lane:
			setTrue(row)
		case in.op != opLoad && in.op != opApply && in.op != opCast && in.op != opSelectRows:
			setTrue(row)
		}
		ops := p.operandsOf[k]
		if in.op == opSelectRows {
			for r := range rows {
				if !row[r] {
					continue
				}
				c := in.rowTest(vars(r))
				pick[k*rows+r] = c
				j := ops[2]
				if c {
					j = ops[1]
				}
				if j >= 0 {
					need[j*rows+r] = true
				}
			}
			continue
		}
		for _, j := range ops {
			if j < 0 {
				continue
			}
			dst := need[j*rows : (j+1)*rows]
			for r, x := range row {
				dst[r] = dst[r] || x
			}
		}
	}
}

// execSelectRows copies each row of the branch its condition picked.
func execSelectRows(fr *frame, p *prog, k int, n int) {
	in := &p.instrs[k]
	rows := max(fr.rows, 1)
	pick := fr.rowPick[k*rows : (k+1)*rows]
	need := fr.rowNeed[k*rows : (k+1)*rows]
	a, b := in.args[1], in.args[2]
	if rows == 1 {
		src := b
		if pick[0] {
			src = a
		}
		if in.lane == laneF {
			fr.f[in.dst] = fr.f[src.reg][:n]
		} else {
			fr.d[in.dst] = fr.d[src.reg][:n]
		}
		return
	}
	m := rows * n
	if in.lane == laneF {
		copyPicked(fr.outF(in.dst, m), fr.f[a.reg][:m], fr.f[b.reg][:m], n, need, pick)
		return
	}
	copyPicked(fr.outD(in.dst, m), fr.d[a.reg][:m], fr.d[b.reg][:m], n, need, pick)
}

// copyPicked copies each row r of n lanes that need marks from x when
// pick[r], else from y, into d.
func copyPicked[T float32 | float64](d, x, y []T, n int, need, pick []bool) {
	for r, ok := range need {
		if !ok {
			continue
		}
		src := y
		if pick[r] {
			src = x
		}
		copy(d[r*n:(r+1)*n], src[r*n:(r+1)*n])
	}
}
