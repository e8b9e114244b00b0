package opencl

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/tartanml/tartan/kir"
	"github.com/tartanml/tartan/tile"
)

// ctype returns the OpenCL C type a value of dtype dt is computed in. f16 and
// bf16 values are computed in float, as the reference executor does.
// Booleans are uchar 0 or 1.
func ctype(dt tile.DType) string {
	switch dt {
	case tile.Bool:
		return "uchar"
	case tile.Int32:
		return "int"
	case tile.Int64:
		return "long"
	case tile.Float64:
		return "double"
	}
	return "float"
}

// stype returns the element type of a buffer of dtype dt as declared in a
// kernel parameter. Like the reference executor and the CPU backend, Tartan
// computes f16 and bf16 as float32, and stores them so too.
func stype(dt tile.DType) string { return ctype(dt) }

// suffix names the helper-function variant of a computation type.
func suffix(dt tile.DType) string {
	switch dt {
	case tile.Bool:
		return "b"
	case tile.Int32:
		return "i"
	case tile.Int64:
		return "l"
	case tile.Float64:
		return "d"
	}
	return "f"
}

// literal renders the constant v (already rounded to dt) as an OpenCL C
// expression of type ctype(dt). Floating-point literals use the shortest
// decimal form that reads back exactly.
func literal(dt tile.DType, v float64) string {
	switch dt {
	case tile.Bool:
		if v != 0 {
			return "((uchar)1)"
		}
		return "((uchar)0)"
	case tile.Int32:
		i := int64(v)
		if i == math.MinInt32 {
			return "(-2147483647-1)"
		}
		if i < 0 {
			return "(" + strconv.FormatInt(i, 10) + ")"
		}
		return strconv.FormatInt(i, 10)
	case tile.Int64:
		i := int64(v)
		if i == math.MinInt64 {
			return "(-9223372036854775807L-1L)"
		}
		if i < 0 {
			return "(" + strconv.FormatInt(i, 10) + "L)"
		}
		return strconv.FormatInt(i, 10) + "L"
	case tile.Float64:
		return floatLiteral(v, 64, "")
	}
	return floatLiteral(float64(float32(v)), 32, "f")
}

func floatLiteral(v float64, bits int, sfx string) string {
	switch {
	case math.IsNaN(v):
		if bits == 64 {
			return "((double)NAN)"
		}
		return "NAN"
	case math.IsInf(v, 1):
		if bits == 64 {
			return "((double)INFINITY)"
		}
		return "INFINITY"
	case math.IsInf(v, -1):
		if bits == 64 {
			return "(-(double)INFINITY)"
		}
		return "(-INFINITY)"
	}
	s := strconv.FormatFloat(v, 'g', -1, bits)
	if !strings.ContainsAny(s, ".eE") {
		s += ".0"
	}
	if strings.HasPrefix(s, "-") {
		return "(" + s + sfx + ")"
	}
	return s + sfx
}

// intLiteral renders an index constant for integer arithmetic of the given
// width.
func intLiteral(c int, wide bool) string {
	s := strconv.Itoa(c)
	if wide || c > math.MaxInt32 || c < math.MinInt32 {
		s += "L"
	}
	if c < 0 {
		return "(" + s + ")"
	}
	return s
}

// scope renders the expressions of one kernel region (a body, a condition,
// an epilogue, an operand of a matrix product) where the loop variables
// have C names and known ranges.
type scope struct {
	p     *kir.Program
	vars  []kir.Range
	names []string // C name of each loop variable; "" where unavailable
	// wide selects 64-bit index arithmetic.
	wide bool
	// acc is the C expression of the aggregated value (in an Epilogue) and
	// accDT its dtype.
	acc   string
	accDT tile.DType
	// skips collects the in-range conditions of Skip loads that could not
	// be proved: a point where one fails contributes nothing.
	skips []string
	// bufs records the buffers the region reads.
	bufs bufSet
	err  error
}

func newScope(p *kir.Program, vars []kir.Range, names []string, wide bool) *scope {
	return &scope{p: p, vars: vars, names: names, wide: wide, bufs: bufSet{}}
}

func (s *scope) fail(format string, args ...any) string {
	if s.err == nil {
		s.err = fmt.Errorf(format, args...)
	}
	return "0"
}

// hasValue reports whether x depends on a loaded value (a gather), whose
// index arithmetic is done in long.
func hasValue(x *kir.Ix) bool {
	if x == nil {
		return false
	}
	if x.Op == kir.IxValue {
		return true
	}
	return hasValue(x.A) || hasValue(x.B)
}

// ix renders an index expression as integer arithmetic. Floor division and
// modulo of arguments that cannot be negative use C's / and %; otherwise the
// floor helpers.
func (s *scope) ix(x *kir.Ix) string {
	if x == nil {
		return s.fail("nil index expression")
	}
	switch x.Op {
	case kir.IxConst:
		return intLiteral(x.C, s.wide)
	case kir.IxVar:
		if x.Var < 0 || x.Var >= len(s.names) || s.names[x.Var] == "" {
			return s.fail("loop variable %d is not available here", x.Var)
		}
		return s.names[x.Var]
	case kir.IxAdd:
		var terms []*kir.Ix
		var flat func(*kir.Ix)
		flat = func(x *kir.Ix) {
			if x.Op == kir.IxAdd {
				flat(x.A)
				flat(x.B)
				return
			}
			terms = append(terms, x)
		}
		flat(x)
		var b strings.Builder
		b.WriteByte('(')
		for i, t := range terms {
			neg := false
			var txt string
			switch {
			case t.Op == kir.IxConst && t.C < 0 && i > 0:
				neg, txt = true, intLiteral(-t.C, s.wide)
			case t.Op == kir.IxMul && t.C < 0 && i > 0:
				neg, txt = true, s.mul(t.A, -t.C)
			default:
				txt = s.ix(t)
			}
			switch {
			case i == 0:
			case neg:
				b.WriteString(" - ")
			default:
				b.WriteString(" + ")
			}
			b.WriteString(txt)
		}
		b.WriteByte(')')
		return b.String()
	case kir.IxMul:
		return s.mul(x.A, x.C)
	case kir.IxFloorDiv, kir.IxMod:
		if x.C <= 0 {
			return s.fail("division or modulo by %d", x.C)
		}
		a := s.ix(x.A)
		long := s.wide || hasValue(x.A)
		if lo, _, ok := kir.Bounds(x.A, s.vars); ok && lo >= 0 {
			op := " / "
			if x.Op == kir.IxMod {
				op = " % "
			}
			return "(" + a + op + intLiteral(x.C, long) + ")"
		}
		fn := "tt_fdiv_"
		if x.Op == kir.IxMod {
			fn = "tt_fmod_"
		}
		if long {
			return fn + "l(" + a + ", " + intLiteral(x.C, true) + ")"
		}
		return fn + "i(" + a + ", " + intLiteral(x.C, false) + ")"
	case kir.IxValue:
		if x.E == nil {
			return s.fail("index value without expression")
		}
		return "tt_gix_" + suffix(x.E.DType) + "(" + s.expr(x.E) + ")"
	}
	return s.fail("unknown index op %d", x.Op)
}

func (s *scope) mul(a *kir.Ix, c int) string {
	return "(" + s.ix(a) + " * " + intLiteral(c, s.wide) + ")"
}

// inBounds returns the C conditions under which index[d] lies within
// [0, shape[d]) for every dimension, leaving out those the variable ranges
// prove.
func (s *scope) inBounds(index []*kir.Ix, shape tile.Shape) []string {
	var conds []string
	for d, x := range index {
		if d >= len(shape) {
			break
		}
		lo, hi, ok := kir.Bounds(x, s.vars)
		if ok && lo >= 0 && hi < shape[d] {
			continue
		}
		ix := s.ix(x)
		if !ok || lo < 0 {
			conds = append(conds, ix+" >= 0")
		}
		if !ok || hi >= shape[d] {
			conds = append(conds, fmt.Sprintf("%s < %s", ix, intLiteral(shape[d], hasValue(x) || s.wide)))
		}
	}
	return conds
}

// offset renders the row-major element offset of a load.
func (s *scope) offset(index []*kir.Ix, shape tile.Shape) string {
	return s.ix(kir.Offset(index, shape, s.vars))
}

// read renders reading element off of buffer b.
func read(b *kir.Buffer, off string) string { return bufName(b.ID) + "[" + off + "]" }

// store renders writing the value v (of type ctype(b.DType)) to element off
// of buffer b.
func store(b *kir.Buffer, off, v string) string { return bufName(b.ID) + "[" + off + "] = " + v + ";" }

func bufName(id int) string { return "b" + strconv.Itoa(id) }

// load renders a load. Reads are always guarded: a load whose index the
// ranges cannot prove in range reads only where every index is in range and
// otherwise yields its Fill value, or 0 for a Skip load, whose condition is
// also recorded so that the point contributes nothing.
func (s *scope) load(e *kir.Expr) string {
	if e.Buf < 0 || e.Buf >= len(s.p.Buffers) {
		return s.fail("load from missing buffer %d", e.Buf)
	}
	b := s.p.Buffers[e.Buf]
	if len(e.Index) != len(b.Shape) {
		return s.fail("load from b%d%v with %d indices", e.Buf, b.Shape, len(e.Index))
	}
	s.bufs.add(e.Buf)
	conds := s.inBounds(e.Index, b.Shape)
	if len(conds) == 0 {
		return read(b, s.offset(e.Index, b.Shape))
	}
	cond := strings.Join(conds, " && ")
	fill := literal(e.DType, 0)
	if e.OOB == kir.Fill {
		fill = literal(e.DType, tile.RoundTo(e.DType, e.Value))
	} else {
		s.skips = append(s.skips, "("+cond+")")
	}
	return "((" + cond + ") ? " + read(b, s.offset(e.Index, b.Shape)) + " : " + fill + ")"
}

// expr renders a value expression of type ctype(e.DType).
func (s *scope) expr(e *kir.Expr) string {
	if e == nil {
		return s.fail("nil expression")
	}
	switch e.Op {
	case kir.Load:
		return s.load(e)
	case kir.Const:
		return literal(e.DType, tile.RoundTo(e.DType, e.Value))
	case kir.Apply:
		if len(e.Args) != e.Fn.Arity() || len(e.Args) == 0 {
			return s.fail("%v applied to %d arguments", e.Fn, len(e.Args))
		}
		args := make([]string, len(e.Args))
		for i, a := range e.Args {
			args[i] = s.expr(a)
		}
		return s.apply(e, args)
	case kir.Cast:
		if len(e.Args) != 1 {
			return s.fail("cast of %d arguments", len(e.Args))
		}
		return convert(e.Args[0].DType, e.DType, s.expr(e.Args[0]))
	case kir.IndexValue:
		if len(e.Index) != 1 {
			return s.fail("index value with %d indices", len(e.Index))
		}
		return convert(tile.Int64, e.DType, "((long)"+s.ix(e.Index[0])+")")
	case kir.Random:
		if len(e.Args) != 1 || len(e.Index) != 1 {
			return s.fail("random needs one seed and one position")
		}
		seed := convert(e.Args[0].DType, tile.Int64, s.expr(e.Args[0]))
		u := fmt.Sprintf("tt_uniform((ulong)%s, %dUL, (long)%s)", seed, e.Stream, s.ix(e.Index[0]))
		return convert(tile.Float32, e.DType, u)
	case kir.Acc:
		if s.acc == "" {
			return s.fail("acc outside an epilogue")
		}
		return convert(s.accDT, e.DType, s.acc)
	}
	return s.fail("unknown expression op %d", e.Op)
}

// convert renders the conversion of v from dtype from to dtype to with
// tile.RoundTo's rules: floats to integers truncate toward zero with NaN
// giving 0 and wrap around; anything to bool is v != 0.
func convert(from, to tile.DType, v string) string {
	cf, ct := ctype(from), ctype(to)
	switch {
	case to == tile.Bool:
		if from == tile.Bool {
			return v
		}
		return "((uchar)((" + v + ") != 0))"
	case cf == ct:
		return v
	case to.IsInt() && from.IsFloat():
		// tt_f2l truncates toward zero, saturates, and maps NaN to 0 (which
		// convert_long_sat should do, but NVIDIA's does not); the narrowing
		// cast then wraps like RoundTo's int32(int64(x)).
		if to == tile.Int64 {
			return "tt_f2l_" + suffix(from) + "(" + v + ")"
		}
		return "((int)tt_f2l_" + suffix(from) + "(" + v + "))"
	}
	return "((" + ct + ")(" + v + "))"
}

// apply renders an elementwise function of rendered arguments.
func (s *scope) apply(e *kir.Expr, a []string) string {
	dt := e.Args[len(e.Args)-1].DType // the operands' dtype (Select: the values')
	sf := suffix(dt)
	isFloat := dt.IsFloat()
	ct := ctype(dt)
	switch e.Fn {
	case tile.Neg:
		if dt == tile.Int32 {
			return "((int)(0u - (uint)(" + a[0] + ")))"
		}
		return "(-" + a[0] + ")"
	case tile.Abs:
		if isFloat {
			return "fabs(" + a[0] + ")"
		}
		return "tt_abs_" + sf + "(" + a[0] + ")"
	case tile.Sign:
		return "tt_sign_" + sf + "(" + a[0] + ")"
	case tile.Exp:
		return "exp(" + a[0] + ")"
	case tile.Log:
		return "log(" + a[0] + ")"
	case tile.Log1p:
		return "log1p(" + a[0] + ")"
	case tile.Sqrt:
		return "sqrt(" + a[0] + ")"
	case tile.Rsqrt:
		return "rsqrt(" + a[0] + ")"
	case tile.Tanh:
		return "tanh(" + a[0] + ")"
	case tile.Sigmoid:
		return "tt_sigmoid_" + sf + "(" + a[0] + ")"
	case tile.Erf:
		return "erf(" + a[0] + ")"
	case tile.Floor:
		return "floor(" + a[0] + ")"
	case tile.Ceil:
		return "ceil(" + a[0] + ")"
	case tile.Recip:
		return "(" + literal(dt, 1) + " / " + a[0] + ")"
	case tile.Not:
		return "((uchar)(" + a[0] + " == 0))"
	case tile.Add, tile.Sub, tile.Mul:
		op := map[tile.Fn]string{tile.Add: " + ", tile.Sub: " - ", tile.Mul: " * "}[e.Fn]
		if dt == tile.Int32 {
			// Unsigned arithmetic wraps around as RoundTo does, without
			// the undefined behaviour of signed overflow.
			return "((int)((uint)(" + a[0] + ")" + op + "(uint)(" + a[1] + ")))"
		}
		if dt == tile.Int64 {
			return "((long)((ulong)(" + a[0] + ")" + op + "(ulong)(" + a[1] + ")))"
		}
		return "(" + a[0] + op + a[1] + ")"
	case tile.Div:
		if isFloat {
			return "(" + a[0] + " / " + a[1] + ")"
		}
		return "tt_div_" + sf + "(" + a[0] + ", " + a[1] + ")"
	case tile.Pow:
		return "pow(" + a[0] + ", " + a[1] + ")"
	case tile.Maximum:
		if isFloat {
			return "tt_max_" + sf + "(" + a[0] + ", " + a[1] + ")"
		}
		return "max(" + a[0] + ", " + a[1] + ")"
	case tile.Minimum:
		if isFloat {
			return "tt_min_" + sf + "(" + a[0] + ", " + a[1] + ")"
		}
		return "min(" + a[0] + ", " + a[1] + ")"
	case tile.Eq, tile.Ne, tile.Lt, tile.Le, tile.Gt, tile.Ge:
		op := map[tile.Fn]string{tile.Eq: " == ", tile.Ne: " != ", tile.Lt: " < ", tile.Le: " <= ", tile.Gt: " > ", tile.Ge: " >= "}[e.Fn]
		return "((uchar)(" + a[0] + op + a[1] + "))"
	case tile.And:
		return "((uchar)(" + a[0] + " && " + a[1] + "))"
	case tile.Or:
		return "((uchar)(" + a[0] + " || " + a[1] + "))"
	case tile.Select:
		return "(" + a[0] + " ? " + a[1] + " : " + a[2] + ")"
	}
	_ = ct
	return s.fail("unsupported elementwise function %v", e.Fn)
}
