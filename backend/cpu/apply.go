package cpu

import (
	"math"

	"github.com/tartanml/tartan/tile"
)

// The elementwise functions, one loop per function and lane kind. Their
// results equal the reference executor's, which computes in float64 and
// rounds every node to its dtype: float32 addition, subtraction,
// multiplication, division and square root are correctly rounded, so they
// give the same bits; the transcendental functions are computed in float64
// and rounded, except exp, erf and sigmoid of float32 lanes on machines
// with AVX2 and FMA, which vector loops compute in float32 within a few
// units in the last place (see useTranscend).

func execApply(fr *frame, in *instr, m int) {
	fn := in.fn
	switch {
	case fn == tile.Select:
		execSelect(fr, in, m)
	case fn.IsComparison():
		d := fr.outF(in.dst, m)
		a, b := in.args[0], in.args[1]
		if a.lane == laneF {
			fa, fb := fr.f[a.reg][:m], fr.f[b.reg][:m]
			n := simdBinaryF(fn, d, fa, fb)
			compareLanes(fn, d[n:], fa[n:], fb[n:])
		} else {
			compareLanes(fn, d, fr.d[a.reg][:m], fr.d[b.reg][:m])
		}
	case in.lane == laneF:
		d := fr.outF(in.dst, m)
		if fn.Arity() == 1 {
			a := fr.f[in.args[0].reg][:m]
			if simdTranscendF(fn, d, a) {
				return
			}
			n := simdUnaryF(fn, d, a)
			unaryF(fn, d[n:], a[n:])
		} else {
			a, b := fr.f[in.args[0].reg][:m], fr.f[in.args[1].reg][:m]
			n := simdBinaryF(fn, d, a, b)
			binaryF(fn, d[n:], a[n:], b[n:])
		}
	default:
		d := fr.outD(in.dst, m)
		if fn.Arity() == 1 {
			unaryD(fn, d, fr.d[in.args[0].reg][:m])
		} else {
			binaryD(fn, d, fr.d[in.args[0].reg][:m], fr.d[in.args[1].reg][:m], in.isInt)
		}
		switch {
		case in.dt == tile.Float64, in.dt == tile.Bool:
		case fn == tile.Sign, fn == tile.Maximum, fn == tile.Minimum, fn == tile.Floor, fn == tile.Ceil:
		default:
			roundD(in.dt, d)
		}
	}
}

func execSelect(fr *frame, in *instr, m int) {
	c := fr.f[in.args[0].reg][:m]
	if in.lane == laneF {
		d, a, b := fr.outF(in.dst, m), fr.f[in.args[1].reg][:m], fr.f[in.args[2].reg][:m]
		n := simdSelectF(d, c, a, b)
		selectF(d[n:], c[n:], a[n:], b[n:])
		return
	}
	d := fr.outD(in.dst, m)
	a, b := fr.d[in.args[1].reg][:m], fr.d[in.args[2].reg][:m]
	for i := range d {
		if c[i] != 0 {
			d[i] = a[i]
		} else {
			d[i] = b[i]
		}
	}
}

// selectF sets d to a where c is true (1) and to b where it is false (0),
// without branches: bit 29 of a boolean's pattern is set exactly for 1.
func selectF(d, c, a, b []float32) {
	c = c[:len(d)]
	a = a[:len(d)]
	b = b[:len(d)]
	for i := range d {
		m := uint32(int32(math.Float32bits(c[i])<<2) >> 31)
		d[i] = math.Float32frombits(math.Float32bits(a[i])&m | math.Float32bits(b[i])&^m)
	}
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

func b2f32(b bool) float32 {
	if b {
		return 1
	}
	return 0
}

// one32 is the bit pattern of float32 1, the value of true.
const one32 = 0x3f800000

// compareLanes compares float lanes into booleans (float32 0 or 1). The loops
// select integer bit patterns, which compile to conditional moves rather
// than branches that data-dependent outcomes would mispredict.
func compareLanes[T float32 | float64](fn tile.Fn, d []float32, a, b []T) {
	b = b[:len(a)]
	d = d[:len(a)]
	set := func(t bool) float32 {
		var m uint32
		if t {
			m = one32
		}
		return math.Float32frombits(m)
	}
	switch fn {
	case tile.Eq:
		for i := range a {
			d[i] = set(a[i] == b[i])
		}
	case tile.Ne:
		for i := range a {
			d[i] = set(a[i] != b[i])
		}
	case tile.Lt:
		for i := range a {
			d[i] = set(a[i] < b[i])
		}
	case tile.Le:
		for i := range a {
			d[i] = set(a[i] <= b[i])
		}
	case tile.Gt:
		for i := range a {
			d[i] = set(a[i] > b[i])
		}
	case tile.Ge:
		for i := range a {
			d[i] = set(a[i] >= b[i])
		}
	}
}

func sign(a float64) float64 {
	switch {
	case a > 0:
		return 1
	case a < 0:
		return -1
	case a != a:
		return a
	}
	return 0
}

func sigmoid(a float64) float64 { return 1 / (1 + math.Exp(-a)) }

func unaryF(fn tile.Fn, d, a []float32) {
	a = a[:len(d)]
	switch fn {
	case tile.Neg:
		for i, x := range a {
			d[i] = -x
		}
	case tile.Abs:
		for i, x := range a {
			d[i] = float32(math.Abs(float64(x)))
		}
	case tile.Sign:
		for i, x := range a {
			d[i] = float32(sign(float64(x)))
		}
	case tile.Sqrt:
		for i, x := range a {
			d[i] = float32(math.Sqrt(float64(x)))
		}
	case tile.Recip:
		for i, x := range a {
			d[i] = 1 / x
		}
	case tile.Floor:
		for i, x := range a {
			d[i] = float32(math.Floor(float64(x)))
		}
	case tile.Ceil:
		for i, x := range a {
			d[i] = float32(math.Ceil(float64(x)))
		}
	case tile.Not:
		for i, x := range a {
			d[i] = b2f32(x == 0)
		}
	default:
		f := unaryFunc(fn)
		for i, x := range a {
			d[i] = float32(f(float64(x)))
		}
	}
}

// unaryFunc returns the float64 function of a transcendental unary Fn.
func unaryFunc(fn tile.Fn) func(float64) float64 {
	switch fn {
	case tile.Exp:
		return math.Exp
	case tile.Log:
		return math.Log
	case tile.Log1p:
		return math.Log1p
	case tile.Sqrt:
		return math.Sqrt
	case tile.Rsqrt:
		return func(x float64) float64 { return 1 / math.Sqrt(x) }
	case tile.Tanh:
		return math.Tanh
	case tile.Sigmoid:
		return sigmoid
	case tile.Erf:
		return math.Erf
	case tile.Floor:
		return math.Floor
	case tile.Ceil:
		return math.Ceil
	case tile.Recip:
		return func(x float64) float64 { return 1 / x }
	case tile.Abs:
		return math.Abs
	case tile.Neg:
		return func(x float64) float64 { return -x }
	case tile.Sign:
		return sign
	case tile.Not:
		return func(x float64) float64 { return b2f(x == 0) }
	}
	return func(float64) float64 { return math.NaN() }
}

func binaryF(fn tile.Fn, d, a, b []float32) {
	a = a[:len(d)]
	b = b[:len(d)]
	switch fn {
	case tile.Add:
		for i := range d {
			d[i] = a[i] + b[i]
		}
	case tile.Sub:
		for i := range d {
			d[i] = a[i] - b[i]
		}
	case tile.Mul:
		for i := range d {
			d[i] = a[i] * b[i]
		}
	case tile.Div:
		for i := range d {
			d[i] = a[i] / b[i]
		}
	case tile.Maximum:
		for i := range d {
			d[i] = max(a[i], b[i])
		}
	case tile.Minimum:
		for i := range d {
			d[i] = min(a[i], b[i])
		}
	case tile.Pow:
		for i := range d {
			d[i] = float32(math.Pow(float64(a[i]), float64(b[i])))
		}
	case tile.And:
		for i := range d {
			d[i] = b2f32(a[i] != 0 && b[i] != 0)
		}
	case tile.Or:
		for i := range d {
			d[i] = b2f32(a[i] != 0 || b[i] != 0)
		}
	default:
		for i := range d {
			d[i] = float32(math.NaN())
		}
	}
}

func unaryD(fn tile.Fn, d, a []float64) {
	a = a[:len(d)]
	switch fn {
	case tile.Neg:
		for i, x := range a {
			d[i] = -x
		}
	case tile.Not:
		for i, x := range a {
			d[i] = b2f(x == 0)
		}
	default:
		f := unaryFunc(fn)
		for i, x := range a {
			d[i] = f(x)
		}
	}
}

func binaryD(fn tile.Fn, d, a, b []float64, isInt bool) {
	a = a[:len(d)]
	b = b[:len(d)]
	switch fn {
	case tile.Add:
		for i := range d {
			d[i] = a[i] + b[i]
		}
	case tile.Sub:
		for i := range d {
			d[i] = a[i] - b[i]
		}
	case tile.Mul:
		for i := range d {
			d[i] = a[i] * b[i]
		}
	case tile.Div:
		if !isInt {
			for i := range d {
				d[i] = a[i] / b[i]
			}
			return
		}
		for i := range d {
			if b[i] == 0 {
				d[i] = 0
			} else {
				d[i] = math.Trunc(a[i] / b[i])
			}
		}
	case tile.Maximum:
		for i := range d {
			d[i] = max(a[i], b[i])
		}
	case tile.Minimum:
		for i := range d {
			d[i] = min(a[i], b[i])
		}
	case tile.Pow:
		for i := range d {
			d[i] = math.Pow(a[i], b[i])
		}
	case tile.And:
		for i := range d {
			d[i] = b2f(a[i] != 0 && b[i] != 0)
		}
	case tile.Or:
		for i := range d {
			d[i] = b2f(a[i] != 0 || b[i] != 0)
		}
	default:
		for i := range d {
			d[i] = math.NaN()
		}
	}
}
