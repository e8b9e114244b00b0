package spirv

import (
	"fmt"
	"math"

	"github.com/tartanml/tartan/kir"
	"github.com/tartanml/tartan/tile"
)

// scope evaluates the expressions of one region of a kernel (a point of
// the body with its conditions, or an epilogue) inside one block: loop
// variables are int32 ids with known ranges, and every expression node is
// computed once however often the tree shares it.
type scope struct {
	e      *emitter
	vars   []uint32
	ranges []kir.Range
	acc    uint32 // in an epilogue, the aggregated value, of dtype accDT
	accDT  tile.DType
	// skips holds the in-range conditions of Skip loads the ranges do not
	// prove: a point where one fails contributes nothing.
	skips []uint32
	memo  map[*kir.Expr]uint32
	index map[*kir.Expr]uint32
}

func (e *emitter) scope(vars []uint32, ranges []kir.Range) *scope {
	return &scope{e: e, vars: vars, ranges: ranges, memo: map[*kir.Expr]uint32{}, index: map[*kir.Expr]uint32{}}
}

// ix emits an index expression in int32 arithmetic. Floor division and
// modulo of arguments that may be negative correct the truncating ones.
func (s *scope) ix(x *kir.Ix) uint32 {
	e, m := s.e, s.e.m
	i32 := m.tInt(32, true)
	if lo, hi, ok := kir.Bounds(x, s.ranges); ok && (lo < math.MinInt32 || hi > math.MaxInt32) {
		e.fail("index expression in [%d, %d] needs 64-bit arithmetic", lo, hi)
		return e.ci(0)
	}
	switch x.Op {
	case kir.IxConst:
		return e.ci(x.C)
	case kir.IxVar:
		return s.vars[x.Var]
	case kir.IxAdd:
		return m.op(opIAdd, i32, s.ix(x.A), s.ix(x.B))
	case kir.IxMul:
		return m.op(opIMul, i32, s.ix(x.A), e.ci(x.C))
	case kir.IxValue:
		if v, ok := s.index[x.E]; ok {
			return v
		}
		v := e.index(x.E.DType, s.expr(x.E))
		s.index[x.E] = v
		return v
	}
	if (x.Op != kir.IxFloorDiv && x.Op != kir.IxMod) || x.C <= 0 {
		panic(fmt.Sprintf("index op %d by %d", x.Op, x.C))
	}
	a, c := s.ix(x.A), e.ci(x.C)
	if lo, _, ok := kir.Bounds(x.A, s.ranges); ok && lo >= 0 {
		if x.Op == kir.IxMod {
			return m.op(opSRem, i32, a, c)
		}
		return m.op(opSDiv, i32, a, c)
	}
	q := m.op(opSDiv, i32, a, c)
	r := m.op(opISub, i32, a, m.op(opIMul, i32, q, c))
	neg := m.op(opSLessThan, m.tBool(), r, e.ci(0))
	if x.Op == kir.IxMod {
		return m.op(opIAdd, i32, r, m.op(opSelect, i32, neg, c, e.ci(0)))
	}
	return m.op(opISub, i32, q, m.op(opSelect, i32, neg, e.ci(1), e.ci(0)))
}

// index converts a value of dtype dt to an int32 index as kir.Interpret
// does: toward zero, with values that are not finite, or that an int32
// cannot hold, made MinInt32, out of range of every buffer.
func (e *emitter) index(dt tile.DType, v uint32) uint32 {
	m, k := e.m, kindOf(dt)
	i32, b := m.tInt(32, true), m.tBool()
	switch k {
	case kBool:
		return m.op(opSelect, i32, v, e.ci(1), e.ci(0))
	case kI32:
		return v
	}
	lo, hi := e.num(k, math.MinInt32), e.num(k, 1<<31)
	var in uint32
	if k == kI64 {
		in = m.op(opLogicalAnd, b, m.op(opSGreaterEqual, b, v, lo), m.op(opSLessThan, b, v, hi))
		return m.op(opSelect, i32, in, m.op(opSConvert, i32, v), e.ci(math.MinInt32))
	}
	in = m.op(opLogicalAnd, b, m.op(opFOrdGreaterEq, b, v, lo), m.op(opFOrdLessThan, b, v, hi))
	safe := m.op(opSelect, e.typ(k), in, v, e.num(k, 0))
	return m.op(opSelect, i32, in, m.op(opConvertFToS, i32, safe), e.ci(math.MinInt32))
}

// load emits a load. Reads the ranges do not prove in range read element 0
// instead and yield the Fill value (0 for a Skip load, whose condition
// joins the point's), so no read ever leaves the buffer.
func (s *scope) load(x *kir.Expr) uint32 {
	e, m := s.e, s.e.m
	b := e.p.Buffers[x.Buf]
	fill := 0.0
	if x.OOB == kir.Fill {
		fill = tile.RoundTo(x.DType, x.Value)
	}
	if b.Size() == 0 {
		if x.OOB == kir.Skip {
			s.skips = append(s.skips, m.cBool(false))
		}
		return e.num(kindOf(x.DType), fill)
	}
	var conds []uint32
	for d, ix := range x.Index {
		lo, hi, ok := kir.Bounds(ix, s.ranges)
		if ok && lo >= 0 && hi < b.Shape[d] {
			continue
		}
		v := s.ix(ix)
		if !ok || lo < 0 {
			conds = append(conds, m.op(opSGreaterEqual, m.tBool(), v, e.ci(0)))
		}
		if !ok || hi >= b.Shape[d] {
			conds = append(conds, m.op(opSLessThan, m.tBool(), v, e.ci(b.Shape[d])))
		}
	}
	off := s.ix(kir.Offset(x.Index, b.Shape, s.ranges))
	in := e.and(conds)
	if in != 0 {
		off = m.op(opSelect, m.tInt(32, true), in, off, e.ci(0))
	}
	v := e.convert(b.DType, x.DType, e.read(x.Buf, off))
	if in == 0 {
		return v
	}
	if x.OOB == kir.Skip {
		s.skips = append(s.skips, in)
	}
	return m.op(opSelect, e.typ(kindOf(x.DType)), in, v, e.num(kindOf(x.DType), fill))
}

// expr emits a value expression, computed in kindOf(x.DType).
func (s *scope) expr(x *kir.Expr) uint32 {
	e := s.e
	if v, ok := s.memo[x]; ok {
		return v
	}
	var v uint32
	switch x.Op {
	case kir.Load:
		v = s.load(x)
	case kir.Const:
		v = e.num(kindOf(x.DType), tile.RoundTo(x.DType, x.Value))
	case kir.Apply:
		args := make([]uint32, len(x.Args))
		for i, a := range x.Args {
			args[i] = s.expr(a)
		}
		v = e.apply(x, args)
	case kir.Cast:
		v = e.convert(x.Args[0].DType, x.DType, s.expr(x.Args[0]))
	case kir.IndexValue:
		v = e.convert(tile.Int32, x.DType, s.ix(x.Index[0]))
	case kir.Random:
		v = e.convert(tile.Float32, x.DType, e.uniform(x.Args[0].DType, s.expr(x.Args[0]), s.ix(x.Index[0]), x.Stream))
	case kir.Acc:
		if s.acc == 0 {
			panic("acc outside an epilogue")
		}
		v = e.convert(s.accDT, x.DType, s.acc)
	default:
		panic(fmt.Sprintf("unknown expression op %d", x.Op))
	}
	s.memo[x] = v
	return v
}

// convert converts v from dtype from to dtype to with tile.RoundTo's rules:
// floats to integers truncate toward zero, saturating, with NaN giving 0
// (through int64 when the device has it, so that narrowing to int32 wraps
// around as RoundTo's int32(int64(x)) does); anything to bool is v ≠ 0.
func (e *emitter) convert(from, to tile.DType, v uint32) uint32 {
	m := e.m
	kf, kt := kindOf(from), kindOf(to)
	t := e.typ(kt)
	switch {
	case kf == kt:
		return v
	case kt == kBool:
		if kf.isFloat() {
			return m.op(opFUnordNotEqual, t, v, e.num(kf, 0))
		}
		return m.op(opINotEqual, t, v, e.num(kf, 0))
	case kf == kBool:
		return m.op(opSelect, t, v, e.num(kt, 1), e.num(kt, 0))
	case kf == kI32 && kt == kI64:
		// Sign extension as (zext(x) ^ 2³¹) − 2³¹: llvmpipe (LLVM 15)
		// miscompiles signed 64-bit comparisons of OpSConvert results
		// with constants.
		u64, h := m.tInt(64, false), m.constant(m.tInt(64, false), 1<<31, 0)
		z := m.op(opUConvert, u64, m.op(opBitcast, m.tInt(32, false), v))
		return m.op(opBitcast, t, m.op(opISub, u64, m.op(opBitwiseXor, u64, z, h), h))
	case !kf.isFloat() && !kt.isFloat():
		return m.op(opSConvert, t, v)
	case !kf.isFloat():
		return m.op(opConvertSToF, t, v)
	case kt.isFloat():
		return m.op(opFConvert, t, v)
	}
	wide := kI32
	if kt == kI64 || e.t.Int64 {
		wide = kI64
	}
	lim := math.Ldexp(1, 31)
	if wide == kI64 {
		lim = math.Ldexp(1, 63)
	}
	hi := math.Nextafter(lim, 0)
	if kf == kF32 {
		hi = float64(math.Nextafter32(float32(lim), 0))
	}
	ft, b := e.typ(kf), m.tBool()
	x := m.op(opSelect, ft, m.op(opIsNan, b, v), e.num(kf, 0), v)
	x = m.op(opSelect, ft, m.op(opFOrdLessThan, b, x, e.num(kf, -lim)), e.num(kf, -lim), x)
	x = m.op(opSelect, ft, m.op(opFOrdGreaterThan, b, x, e.num(kf, hi)), e.num(kf, hi), x)
	r := m.op(opConvertFToS, e.typ(wide), x)
	if wide != kt {
		r = m.op(opSConvert, t, r)
	}
	return r
}

// minMax returns the larger (max) or smaller of a and b; for floats NaN
// when either is NaN, as the reference executor does.
func (e *emitter) minMax(max bool, k kind, a, b uint32) uint32 {
	m, t, bt := e.m, e.typ(k), e.m.tBool()
	if !k.isFloat() {
		cmp := uint32(opSLessThan)
		if max {
			cmp = opSGreaterThan
		}
		return m.op(opSelect, t, m.op(cmp, bt, a, b), a, b)
	}
	fn := uint32(glslFMin)
	if max {
		fn = glslFMax
	}
	nan := m.op(opLogicalOr, bt, m.op(opIsNan, bt, a), m.op(opIsNan, bt, b))
	return m.op(opSelect, t, nan, m.op(opFAdd, t, a, b), m.ext(t, fn, a, b))
}

// apply emits an elementwise function of emitted arguments.
func (e *emitter) apply(x *kir.Expr, a []uint32) uint32 {
	m, bt := e.m, e.m.tBool()
	f := x.Fn
	dt := x.Args[len(x.Args)-1].DType // the operands' dtype (Select: the values')
	switch f {
	case tile.Not:
		return e.convert(tile.Bool, x.DType, m.op(opLogicalNot, bt, e.convert(dt, tile.Bool, a[0])))
	case tile.And, tile.Or:
		r := m.op(map[bool]uint32{false: opLogicalAnd, true: opLogicalOr}[f == tile.Or], bt, e.convert(x.Args[0].DType, tile.Bool, a[0]), e.convert(dt, tile.Bool, a[1]))
		return e.convert(tile.Bool, x.DType, r)
	case tile.Select:
		c := e.convert(x.Args[0].DType, tile.Bool, a[0])
		b := e.convert(x.Args[1].DType, dt, a[1])
		return e.convert(dt, x.DType, m.op(opSelect, e.typ(kindOf(dt)), c, b, a[2]))
	}
	for i := range a {
		a[i] = e.convert(x.Args[i].DType, dt, a[i])
	}
	if dt == tile.Bool && f != tile.Eq && f != tile.Ne {
		// Arithmetic on booleans (which graphs never build) is that of
		// their 0 and 1 values.
		for i := range a {
			a[i] = e.convert(tile.Bool, tile.Int32, a[i])
		}
		dt = tile.Int32
	}
	k := kindOf(dt)
	var r uint32
	rdt := dt
	if f.IsComparison() {
		r, rdt = e.compare(f, k, a[0], a[1]), tile.Bool
	} else if k.isFloat() {
		r = e.floatFn(f, k, a)
	} else {
		r = e.intFn(f, k, a)
	}
	return e.convert(rdt, x.DType, r)
}

func (e *emitter) compare(f tile.Fn, k kind, a, b uint32) uint32 {
	ops := map[tile.Fn][3]uint32{ // bool, int, float
		tile.Eq: {opLogicalEqual, opIEqual, opFOrdEqual},
		tile.Ne: {opLogicalNotEqual, opINotEqual, opFUnordNotEqual},
		tile.Lt: {0, opSLessThan, opFOrdLessThan},
		tile.Le: {0, opSLessEqual, opFOrdLessEqual},
		tile.Gt: {0, opSGreaterThan, opFOrdGreaterThan},
		tile.Ge: {0, opSGreaterEqual, opFOrdGreaterEq},
	}[f]
	i := 1
	switch {
	case k == kBool:
		i = 0
	case k.isFloat():
		i = 2
	}
	return e.m.op(ops[i], e.m.tBool(), a, b)
}

func (e *emitter) intFn(f tile.Fn, k kind, a []uint32) uint32 {
	m, t, bt := e.m, e.typ(k), e.m.tBool()
	zero, one, minus := e.num(k, 0), e.num(k, 1), e.num(k, -1)
	switch f {
	case tile.Neg:
		return m.op(opSNegate, t, a[0])
	case tile.Abs:
		return m.op(opSelect, t, m.op(opSLessThan, bt, a[0], zero), m.op(opSNegate, t, a[0]), a[0])
	case tile.Sign:
		neg := m.op(opSelect, t, m.op(opSLessThan, bt, a[0], zero), minus, zero)
		return m.op(opSelect, t, m.op(opSGreaterThan, bt, a[0], zero), one, neg)
	case tile.Add, tile.Sub, tile.Mul:
		return m.op(map[tile.Fn]uint32{tile.Add: opIAdd, tile.Sub: opISub, tile.Mul: opIMul}[f], t, a[0], a[1])
	case tile.Div:
		// Truncating; a zero divisor gives 0, and -1 negates (wrapping).
		z, n := m.op(opIEqual, bt, a[1], zero), m.op(opIEqual, bt, a[1], minus)
		d := m.op(opSelect, t, m.op(opLogicalOr, bt, z, n), one, a[1])
		q := m.op(opSelect, t, n, m.op(opSNegate, t, a[0]), m.op(opSDiv, t, a[0], d))
		return m.op(opSelect, t, z, zero, q)
	case tile.Maximum, tile.Minimum:
		return e.minMax(f == tile.Maximum, k, a[0], a[1])
	}
	e.fail("%v is not defined for integer operands", f)
	return zero
}

// floatFn emits a floating-point function. The float64 forms of the
// functions GLSL.std.450 has only for float32 are computed in float32.
func (e *emitter) floatFn(f tile.Fn, k kind, a []uint32) uint32 {
	m, t, bt := e.m, e.typ(k), e.m.tBool()
	switch f {
	case tile.Tanh, tile.Erf:
		if k == kF64 {
			f32 := e.typ(kF32)
			for i := range a {
				a[i] = m.op(opFConvert, f32, a[i])
			}
			return m.op(opFConvert, t, e.floatFn(f, kF32, a))
		}
	}
	c := func(v float64) uint32 { return e.num(k, v) }
	if op, ok := map[tile.Fn]uint32{tile.Add: opFAdd, tile.Sub: opFSub, tile.Mul: opFMul, tile.Div: opFDiv}[f]; ok {
		return m.op(op, t, a[0], a[1])
	}
	if n, ok := map[tile.Fn]uint32{tile.Abs: glslFAbs, tile.Floor: glslFloor, tile.Ceil: glslCeil}[f]; ok {
		return m.ext(t, n, a[0])
	}
	switch f {
	case tile.Neg:
		return m.op(opFNegate, t, a[0])
	case tile.Sign:
		neg := m.op(opSelect, t, m.op(opFOrdLessThan, bt, a[0], c(0)), c(-1), a[0])
		return m.op(opSelect, t, m.op(opFOrdGreaterThan, bt, a[0], c(0)), c(1), neg)
	case tile.Exp:
		return e.exp(k, a[0])
	case tile.Log:
		return e.log(k, a[0])
	case tile.Log1p:
		// log(u)·x/(u−1) with u = 1+x corrects the rounding of u; where u
		// is 1 the result is x itself.
		u := m.op(opFAdd, t, c(1), a[0])
		d := m.op(opFSub, t, u, c(1))
		r := m.op(opFMul, t, e.log(k, u), m.op(opFDiv, t, a[0], d))
		r = m.op(opSelect, t, m.op(opFOrdEqual, bt, d, c(0)), a[0], r)
		return m.op(opSelect, t, m.op(opFOrdEqual, bt, a[0], c(math.Inf(1))), a[0], r)
	case tile.Sqrt:
		r := m.ext(t, glslSqrt, a[0])
		return m.op(opSelect, t, m.op(opFOrdGreaterEq, bt, a[0], c(0)), r, c(math.NaN()))
	case tile.Rsqrt:
		r := m.ext(t, glslInverseSqrt, a[0])
		r = m.op(opSelect, t, m.op(opFOrdEqual, bt, a[0], c(0)), m.op(opFDiv, t, c(1), a[0]), r)
		return m.op(opSelect, t, m.op(opFOrdGreaterEq, bt, a[0], c(0)), r, c(math.NaN()))
	case tile.Tanh:
		// tanh(±15) is ±1 in float32; clamping keeps e^2x finite.
		x := m.op(opSelect, t, m.op(opFOrdGreaterThan, bt, a[0], c(15)), c(15), a[0])
		x = m.op(opSelect, t, m.op(opFOrdLessThan, bt, x, c(-15)), c(-15), x)
		return m.ext(t, glslTanh, x)
	case tile.Sigmoid:
		return m.op(opFDiv, t, c(1), m.op(opFAdd, t, c(1), e.exp(k, m.op(opFNegate, t, a[0]))))
	case tile.Erf:
		return e.erf(a[0])
	case tile.Recip:
		return m.op(opFDiv, t, c(1), a[0])
	case tile.Pow:
		return e.pow(k, a[0], a[1])
	case tile.Maximum, tile.Minimum:
		return e.minMax(f == tile.Maximum, k, a[0], a[1])
	}
	e.fail("unsupported elementwise function %v", f)
	return c(0)
}

// exp in kind k. GLSL.std.450's Exp is float32 only: a float64 e^x is
// 2^n·e^r with r = x − n·ln 2 in [−ln 2/2, ln 2/2], e^r in float32 (so
// its relative error is float32's), 2^n as two exact powers of two.
func (e *emitter) exp(k kind, x uint32) uint32 {
	m, t, bt := e.m, e.typ(k), e.m.tBool()
	if k == kF32 {
		return m.ext(t, glslExp, x)
	}
	c := func(v float64) uint32 { return e.num(kF64, v) }
	i32, f32 := m.tInt(32, true), e.typ(kF32)
	x = m.op(opSelect, t, m.op(opFOrdGreaterThan, bt, x, c(710)), c(710), x)
	x = m.op(opSelect, t, m.op(opFOrdLessThan, bt, x, c(-746)), c(-746), x)
	n := m.ext(t, glslFloor, m.op(opFAdd, t, m.op(opFMul, t, x, c(math.Log2E)), c(0.5)))
	r := m.op(opFSub, t, m.op(opFSub, t, x, m.op(opFMul, t, n, c(0.6931471803691238))), m.op(opFMul, t, n, c(1.9082149292705877e-10)))
	er := m.op(opFConvert, t, m.ext(f32, glslExp, m.op(opFConvert, f32, r)))
	ni := m.op(opConvertFToS, i32, m.op(opSelect, t, m.op(opIsNan, bt, n), c(0), n))
	h := m.op(opSDiv, i32, ni, e.ci(2))
	p1, p2 := m.ext(t, glslLdexp, c(1), h), m.ext(t, glslLdexp, c(1), m.op(opISub, i32, ni, h))
	return m.op(opFMul, t, m.op(opFMul, t, er, p1), p2)
}

// log in kind k, with IEEE's results where GLSL's is undefined: −∞ at
// zero, NaN below it, +∞ at +∞. A float64 log is e·ln 2 + log m for
// x = m·2^e, m in [√½, √2), log m in float32.
func (e *emitter) log(k kind, x uint32) uint32 {
	m, t, bt := e.m, e.typ(k), e.m.tBool()
	c := func(v float64) uint32 { return e.num(k, v) }
	var r uint32
	if k == kF32 {
		r = m.ext(t, glslLog, x)
	} else {
		i32, f32 := m.tInt(32, true), e.typ(kF32)
		fr := m.ext(m.tStruct("frexp", t, i32), glslFrexpStruct, x)
		mant, ex := m.op(opCompositeExtr, t, fr, 0), m.op(opCompositeExtr, i32, fr, 1)
		small := m.op(opFOrdLessThan, bt, mant, c(math.Sqrt2/2))
		mant = m.op(opSelect, t, small, m.op(opFMul, t, mant, c(2)), mant)
		ex = m.op(opISub, i32, ex, m.op(opSelect, i32, small, e.ci(1), e.ci(0)))
		lm := m.op(opFConvert, t, m.ext(f32, glslLog, m.op(opFConvert, f32, mant)))
		r = m.op(opFAdd, t, lm, m.op(opFMul, t, m.op(opConvertSToF, t, ex), c(math.Ln2)))
		r = m.op(opSelect, t, m.op(opIsInf, bt, x), x, r)
	}
	r = m.op(opSelect, t, m.op(opFOrdEqual, bt, x, c(0)), c(math.Inf(-1)), r)
	return m.op(opSelect, t, m.op(opFOrdGreaterEq, bt, x, c(0)), r, c(math.NaN()))
}

// erf of a float32: for |x| < 0.5 its Taylor series to x¹¹, beyond it
// 1 − erfc(|x|) with the sign of x, erfc from the Chebyshev fit of
// Numerical Recipes (fractional error below 1.2e-7).
func (e *emitter) erf(x uint32) uint32 {
	m, t, bt := e.m, e.typ(kF32), e.m.tBool()
	c := func(v float64) uint32 { return e.num(kF32, v) }
	mul := func(a, b uint32) uint32 { return m.op(opFMul, t, a, b) }
	add := func(a, b uint32) uint32 { return m.op(opFAdd, t, a, b) }
	horner := func(z uint32, cs ...float64) uint32 {
		r := c(cs[0])
		for _, k := range cs[1:] {
			r = add(mul(r, z), c(k))
		}
		return r
	}
	z := mul(x, x)
	small := mul(mul(x, horner(z, -1.0/1320, 1.0/216, -1.0/42, 1.0/10, -1.0/3, 1)), c(2/math.Sqrt(math.Pi)))
	ax := m.ext(t, glslFAbs, x)
	tt := m.op(opFDiv, t, c(1), add(c(1), mul(c(0.5), ax)))
	poly := horner(tt, 0.17087277, -0.82215223, 1.48851587, -1.13520398, 0.27886807, -0.18628806,
		0.09678418, 0.37409196, 1.00002368, -1.26551223)
	y := mul(tt, m.ext(t, glslExp, m.op(opFSub, t, poly, mul(ax, ax))))
	big := m.op(opFSub, t, c(1), y)
	big = m.op(opSelect, t, m.op(opFOrdLessThan, bt, x, c(0)), m.op(opFNegate, t, big), big)
	return m.op(opSelect, t, m.op(opFOrdLessThan, bt, ax, c(0.5)), small, big)
}

// pow with C's special cases, which GLSL's pow leaves undefined: negative
// bases with integer exponents, zero bases, unit bases and zero exponents,
// NaN. A float64 |a|^b is e^(b·log |a|).
func (e *emitter) pow(k kind, a, b uint32) uint32 {
	m, t, bt := e.m, e.typ(k), e.m.tBool()
	c := func(v float64) uint32 { return e.num(k, v) }
	sel := func(cond, x, y uint32) uint32 { return m.op(opSelect, t, cond, x, y) }
	eq := func(x, y uint32) uint32 { return m.op(opFOrdEqual, bt, x, y) }
	lt := func(x, y uint32) uint32 { return m.op(opFOrdLessThan, bt, x, y) }
	or := func(x, y uint32) uint32 { return m.op(opLogicalOr, bt, x, y) }
	and := func(x, y uint32) uint32 { return m.op(opLogicalAnd, bt, x, y) }
	ax := m.ext(t, glslFAbs, a)
	var r uint32
	if k == kF32 {
		r = m.ext(t, glslPow, ax, b)
	} else {
		r = e.exp(k, m.op(opFMul, t, b, e.log(k, ax)))
	}
	r = sel(eq(ax, c(0)), sel(lt(b, c(0)), c(math.Inf(1)), c(0)), r)
	integer := eq(m.ext(t, glslFloor, b), b)
	half := m.op(opFMul, t, b, c(0.5))
	odd := and(integer, m.op(opFUnordNotEqual, bt, m.ext(t, glslFloor, half), half))
	neg := or(lt(a, c(0)), and(eq(a, c(0)), lt(m.op(opFDiv, t, c(1), a), c(0)))) // −0 too
	r = sel(and(neg, odd), m.op(opFNegate, t, r), r)
	finiteNeg := and(lt(a, c(0)), m.op(opLogicalNot, bt, m.op(opIsInf, bt, a)))
	r = sel(and(finiteNeg, m.op(opLogicalNot, bt, integer)), c(math.NaN()), r)
	r = sel(and(eq(ax, c(1)), m.op(opIsInf, bt, b)), c(1), r)
	r = sel(or(m.op(opIsNan, bt, a), m.op(opIsNan, bt, b)), c(math.NaN()), r)
	return sel(or(eq(b, c(0)), eq(a, c(1))), c(1), r)
}

// uniform emits tile.UniformAt(seed, stream, p) as a float32: Philox4x32-10
// on the counter (p/4, 0, stream) under the key seed, word p mod 4, its top
// 24 bits scaled by 2⁻²⁴ (p is at most 2³¹, so the counter's second word is
// 0). Negative positions count as 0, as in kir.Interpret.
func (e *emitter) uniform(seedDT tile.DType, seed, p uint32, stream uint64) uint32 {
	m := e.m
	u32, i32, bt := m.tInt(32, false), m.tInt(32, true), m.tBool()
	var k0, k1 uint32
	if e.t.Int64 {
		u64 := m.tInt(64, false)
		s := m.op(opBitcast, u64, e.convert(seedDT, tile.Int64, seed))
		k0 = m.op(opUConvert, u32, s)
		k1 = m.op(opUConvert, u32, m.op(opShiftRightLogic, u64, s, m.cUint(32)))
	} else {
		s := e.convert(seedDT, tile.Int32, seed)
		k0 = m.op(opBitcast, u32, s)
		k1 = m.op(opSelect, u32, m.op(opSLessThan, bt, s, e.ci(0)), m.cUint(math.MaxUint32), m.cUint(0))
	}
	p = m.op(opSelect, i32, m.op(opSLessThan, bt, p, e.ci(0)), e.ci(0), p)
	pu := m.op(opBitcast, u32, p)
	ctr := [4]uint32{m.op(opUDiv, u32, pu, m.cUint(4)), m.cUint(0), m.cUint(uint32(stream)), m.cUint(uint32(stream >> 32))}
	pair := m.tStruct("umul", u32, u32)
	xor := func(a, b uint32) uint32 { return m.op(opBitwiseXor, u32, a, b) }
	for range 10 {
		p0 := m.op(opUMulExtended, pair, m.cUint(0xD2511F53), ctr[0])
		p1 := m.op(opUMulExtended, pair, m.cUint(0xCD9E8D57), ctr[2])
		lo0, hi0 := m.op(opCompositeExtr, u32, p0, 0), m.op(opCompositeExtr, u32, p0, 1)
		lo1, hi1 := m.op(opCompositeExtr, u32, p1, 0), m.op(opCompositeExtr, u32, p1, 1)
		ctr = [4]uint32{xor(xor(hi1, ctr[1]), k0), lo1, xor(xor(hi0, ctr[3]), k1), lo0}
		k0 = m.op(opIAdd, u32, k0, m.cUint(0x9E3779B9))
		k1 = m.op(opIAdd, u32, k1, m.cUint(0xBB67AE85))
	}
	r := m.op(opUMod, u32, pu, m.cUint(4))
	w := ctr[3]
	for i := 2; i >= 0; i-- {
		w = m.op(opSelect, u32, m.op(opIEqual, bt, r, m.cUint(uint32(i))), ctr[i], w)
	}
	f := m.op(opConvertUToF, e.typ(kF32), m.op(opShiftRightLogic, u32, w, m.cUint(8)))
	return m.op(opFMul, e.typ(kF32), f, e.num(kF32, 1.0/(1<<24)))
}
