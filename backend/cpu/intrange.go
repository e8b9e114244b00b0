package cpu

import (
	"github.com/tartanml/tartan/kir"
	"github.com/tartanml/tartan/tile"
)

// Integers computed in float32 lanes.
//
// An integer expression whose value, and every intermediate integer value
// it is computed from, provably stays within ±2²⁴ is exact in float32, and
// then needs no wrap-around: it is computed in float32 lanes, with the
// vectorised float32 operations, like a window position (2·k0 + k1 + 1)
// compared with another. The proof is interval arithmetic over constants,
// index values (from the loop ranges) and casts of booleans; loads of
// integer buffers, division and anything else are left to float64 lanes.

// smallLimit is the largest magnitude such integers may reach. It is below
// 2²⁴, so that comparing one with any integer rounded to float32 still
// gives the exact answer: rounding keeps order, and an integer of larger
// magnitude rounds to at least 2²⁴.
const smallLimit = 1<<24 - 1

// intRange returns an interval containing every value of the integer or
// boolean expression e, or false when none is known within the limit.
func (b *builder) intRange(e *kir.Expr) (lo, hi float64, ok bool) {
	if r, done := b.ranges[e]; done {
		return r.lo, r.hi, r.ok
	}
	lo, hi, ok = b.intRange1(e)
	if ok && (lo < -smallLimit || hi > smallLimit) {
		ok = false
	}
	b.ranges[e] = valueRange{lo, hi, ok}
	return lo, hi, ok
}

type valueRange struct {
	lo, hi float64
	ok     bool
}

func (b *builder) intRange1(e *kir.Expr) (lo, hi float64, ok bool) {
	if e.DType == tile.Bool {
		return 0, 1, true
	}
	if !e.DType.IsInt() {
		return 0, 0, false
	}
	switch e.Op {
	case kir.Const:
		return e.Value, e.Value, true
	case kir.IndexValue:
		l, h, ok := kir.Bounds(e.Index[0], b.s.ranges)
		return float64(l), float64(h), ok
	case kir.Cast:
		if a := e.Args[0]; a.DType == tile.Bool || a.DType.IsInt() {
			return b.intRange(a)
		}
		return 0, 0, false
	case kir.Apply:
		var r [3]valueRange
		for i, a := range e.Args {
			if i == 0 && e.Fn == tile.Select {
				continue
			}
			l, h, ok := b.intRange(a)
			if !ok {
				return 0, 0, false
			}
			r[i] = valueRange{l, h, true}
		}
		x, y := r[0], r[1]
		switch e.Fn {
		case tile.Neg:
			return -x.hi, -x.lo, true
		case tile.Abs:
			if x.lo >= 0 {
				return x.lo, x.hi, true
			}
			return 0, max(-x.lo, x.hi), true
		case tile.Sign:
			return -1, 1, true
		case tile.Add:
			return x.lo + y.lo, x.hi + y.hi, true
		case tile.Sub:
			return x.lo - y.hi, x.hi - y.lo, true
		case tile.Mul:
			p := [4]float64{x.lo * y.lo, x.lo * y.hi, x.hi * y.lo, x.hi * y.hi}
			return min(p[0], p[1], p[2], p[3]), max(p[0], p[1], p[2], p[3]), true
		case tile.Maximum:
			return max(x.lo, y.lo), max(x.hi, y.hi), true
		case tile.Minimum:
			return min(x.lo, y.lo), min(x.hi, y.hi), true
		case tile.Select:
			return min(r[1].lo, r[2].lo), max(r[1].hi, r[2].hi), true
		}
	}
	return 0, 0, false
}

// laneFor returns the lane expression e is computed in: its dtype's, or
// float32 for a small integer.
func (b *builder) laneFor(e *kir.Expr) lane {
	l := laneOf(e.DType)
	if l == laneD && e.DType.IsInt() && e.Op != kir.Load && e.Op != kir.Acc {
		if _, _, ok := b.intRange(e); ok {
			return laneF
		}
	}
	return l
}

// compareLane returns the lane a comparison of args is computed in: float32
// when every operand is computed there, or is an integer load compared
// with small integers only; else float64.
func (b *builder) compareLane(args []*kir.Expr) lane {
	small := false
	for _, a := range args {
		switch {
		case a.Op == kir.Load && a.DType.IsInt():
		case b.laneFor(a) == laneF:
			small = small || a.DType.IsInt()
		default:
			return laneD
		}
	}
	for _, a := range args {
		if a.Op == kir.Load && a.DType.IsInt() && !small {
			return laneD
		}
	}
	return laneF
}

// in compiles e and returns it in lane l, converting it when it is computed
// in the other lane (a small integer used by a float64 operation). An
// integer load wanted in float32 lanes is read straight into them.
func (b *builder) in(l lane, e *kir.Expr) operand {
	if l == laneF && e.Op == kir.Load && e.DType.IsInt() {
		if op, ok := b.memoF[e]; ok {
			return op
		}
		op := b.loadIn(e, laneF)
		b.memoF[e] = op
		return op
	}
	a := b.expr(e)
	if a.lane == l {
		return a
	}
	in := instr{op: opCast, lane: l, dt: e.DType, args: [3]operand{a}, dst: b.regs.new(l)}
	b.emit(in)
	return operand{l, in.dst}
}
