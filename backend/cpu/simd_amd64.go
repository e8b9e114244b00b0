//go:build amd64 && !purego

package cpu

import (
	"github.com/tartanml/tartan/tile"
	"golang.org/x/sys/cpu"
)

// useSIMD reports whether the AVX2 loops of simd_amd64.s may run.
var useSIMD = cpu.X86.HasAVX2

//go:noescape
func addF32x8(d, a, b *float32, n int)

//go:noescape
func subF32x8(d, a, b *float32, n int)

//go:noescape
func mulF32x8(d, a, b *float32, n int)

//go:noescape
func divF32x8(d, a, b *float32, n int)

//go:noescape
func maxF32x8(d, a, b *float32, n int)

//go:noescape
func minF32x8(d, a, b *float32, n int)

//go:noescape
func eqF32x8(d, a, b *float32, n int)

//go:noescape
func neF32x8(d, a, b *float32, n int)

//go:noescape
func ltF32x8(d, a, b *float32, n int)

//go:noescape
func leF32x8(d, a, b *float32, n int)

//go:noescape
func gtF32x8(d, a, b *float32, n int)

//go:noescape
func geF32x8(d, a, b *float32, n int)

//go:noescape
func selectF32x8(d, c, a, b *float32, n int)

//go:noescape
func sqrtF32x8(d, a *float32, n int)

//go:noescape
func andF32x8(d, a, b *float32, n int)

//go:noescape
func orF32x8(d, a, b *float32, n int)

//go:noescape
func cvtF64F32x4(d *float32, s *float64, n int)

// simdToF32 converts the multiple-of-4 prefix of s into d and returns its
// length.
func simdToF32(d []float32, s []float64) int {
	n := len(s) &^ 3
	if !useSIMD || n == 0 {
		return 0
	}
	d = d[:n]
	cvtF64F32x4(&d[0], &s[0], n)
	return n
}

//go:noescape
func negF32x8(d, a *float32, n int)

//go:noescape
func absF32x8(d, a *float32, n int)

// simdBinaryF computes the multiple-of-8 prefix of a binary function or
// comparison of float32 lanes with AVX2 and returns its length (0 when it
// did nothing). a and b hold at least len(d) elements.
func simdBinaryF(fn tile.Fn, d, a, b []float32) int {
	n := len(d) &^ 7
	if !useSIMD || n == 0 {
		return 0
	}
	a, b = a[:n], b[:n]
	var f func(d, a, b *float32, n int)
	switch fn {
	case tile.Add:
		f = addF32x8
	case tile.Sub:
		f = subF32x8
	case tile.Mul:
		f = mulF32x8
	case tile.Div:
		f = divF32x8
	case tile.Maximum:
		f = maxF32x8
	case tile.Minimum:
		f = minF32x8
	case tile.Eq:
		f = eqF32x8
	case tile.Ne:
		f = neF32x8
	case tile.Lt:
		f = ltF32x8
	case tile.Le:
		f = leF32x8
	case tile.Gt:
		f = gtF32x8
	case tile.Ge:
		f = geF32x8
	case tile.And:
		f = andF32x8
	case tile.Or:
		f = orF32x8
	default:
		return 0
	}
	f(&d[0], &a[0], &b[0], n)
	return n
}

// simdSelectF is selectF's multiple-of-8 prefix.
func simdSelectF(d, c, a, b []float32) int {
	n := len(d) &^ 7
	if !useSIMD || n == 0 {
		return 0
	}
	c, a, b = c[:n], a[:n], b[:n]
	selectF32x8(&d[0], &c[0], &a[0], &b[0], n)
	return n
}

// simdUnaryF is the multiple-of-8 prefix of a unary function.
func simdUnaryF(fn tile.Fn, d, a []float32) int {
	n := len(d) &^ 7
	if !useSIMD || n == 0 {
		return 0
	}
	a = a[:n]
	switch fn {
	case tile.Sqrt:
		sqrtF32x8(&d[0], &a[0], n)
	case tile.Neg:
		negF32x8(&d[0], &a[0], n)
	case tile.Abs:
		absF32x8(&d[0], &a[0], n)
	default:
		return 0
	}
	return n
}

//go:noescape
func aggMaxF64F32x4(acc *float64, v *float32, n int)

//go:noescape
func aggMinF64F32x4(acc *float64, v *float32, n int)

//go:noescape
func aggSumF64F32x4(acc *float64, v *float32, n int)

// simdAggregateF aggregates the multiple-of-4 prefix of float32 lanes into
// float64 accumulators and returns its length.
func simdAggregateF(a tile.Agg, acc []float64, v []float32) int {
	n := len(acc) &^ 3
	if !useSIMD || n == 0 {
		return 0
	}
	v = v[:n]
	switch a {
	case tile.Sum:
		aggSumF64F32x4(&acc[0], &v[0], n)
	case tile.Max:
		aggMaxF64F32x4(&acc[0], &v[0], n)
	case tile.Min:
		aggMinF64F32x4(&acc[0], &v[0], n)
	default:
		return 0
	}
	return n
}

//go:noescape
func philoxF32x8(d *float32, blocks int, q0, stream, seed uint64)

// simdPhilox fills d with the numbers of whole blocks q0, q0+1, … and
// returns how many elements it wrote (a multiple of 32).
func simdPhilox(d []float32, q0, stream, seed uint64) int {
	blocks := len(d) / 4 &^ 7
	if !useSIMD || blocks == 0 || uint64(uint32(q0))+uint64(blocks) > 1<<32 {
		return 0
	}
	philoxF32x8(&d[0], blocks, q0, stream, seed)
	return blocks * 4
}

//go:noescape
func aggMaxF32x8(acc, v *float32, n int)

//go:noescape
func aggMinF32x8(acc, v *float32, n int)

// simdAggregateF32 is the multiple-of-8 prefix of a maximum or minimum of
// float32 lanes into float32 accumulators.
func simdAggregateF32(a tile.Agg, acc, v []float32) int {
	n := len(acc) &^ 7
	if !useSIMD || n == 0 {
		return 0
	}
	v = v[:n]
	switch a {
	case tile.Max:
		aggMaxF32x8(&acc[0], &v[0], n)
	case tile.Min:
		aggMinF32x8(&acc[0], &v[0], n)
	default:
		return 0
	}
	return n
}

//go:noescape
func maskMaxF32x8(acc, v *float32, mask *bool, n int)

//go:noescape
func maskMinF32x8(acc, v *float32, mask *bool, n int)

//go:noescape
func maskZeroF32x8(mask *bool, v *float32, n int)

// simdMaskAggregateF32 is the multiple-of-8 prefix of a masked maximum or
// minimum into float32 accumulators.
func simdMaskAggregateF32(a tile.Agg, acc, v []float32, mask []bool) int {
	n := len(acc) &^ 7
	if !useSIMD || n == 0 {
		return 0
	}
	v, mask = v[:n], mask[:n]
	switch a {
	case tile.Max:
		maskMaxF32x8(&acc[0], &v[0], &mask[0], n)
	case tile.Min:
		maskMinF32x8(&acc[0], &v[0], &mask[0], n)
	default:
		return 0
	}
	return n
}

// simdMaskZeroF32 is the multiple-of-8 prefix of clearing mask lanes
// where v is not zero.
func simdMaskZeroF32(mask []bool, v []float32) int {
	n := len(mask) &^ 7
	if !useSIMD || n == 0 {
		return 0
	}
	v = v[:n]
	maskZeroF32x8(&mask[0], &v[0], n)
	return n
}

func reluF32x8(d, v *float32, n int)

func reluMaxF32x8(acc, v *float32, n int)

func reluMinF32x8(acc, v *float32, n int)

func firstF32x8(d, v, ext *float32, n int, p float32)

func firstReluF32x8(d, v, ext *float32, n int, p float32)

func infToZeroF32x8(d *float32, n int)

func routeF32x8(d, first, cot *float32, n int, p float32)

func routeActF32x8(d, act, first, cot *float32, n int, p float32)

// simdRelu sets d[i] to 0 if v[i] ≤ 0 else v[i] (NaN included) for a prefix
// of d and returns its length.
func simdRelu(d, v []float32) int {
	n := len(d) &^ 7
	if !useSIMD || n == 0 {
		return 0
	}
	v = v[:n]
	reluF32x8(&d[0], &v[0], n)
	return n
}

// simdReluAgg aggregates the ReLU of v into acc by maximum or minimum (NaN
// propagating) for a prefix of acc and returns its length.
func simdReluAgg(a tile.Agg, acc, v []float32) int {
	n := len(acc) &^ 7
	if !useSIMD || n == 0 {
		return 0
	}
	v = v[:n]
	switch a {
	case tile.Max:
		reluMaxF32x8(&acc[0], &v[0], n)
	case tile.Min:
		reluMinF32x8(&acc[0], &v[0], n)
	default:
		return 0
	}
	return n
}

// simdFirst sets d[i] to min(d[i], p) where V(v[i]) attains ext[i] (equal,
// or both NaN), V being the ReLU or the identity, for a prefix of d and
// returns its length. p and d must never be NaN or zero.
func simdFirst(d, v, ext []float32, p float32, relu bool) int {
	n := len(d) &^ 7
	if !useSIMD || n == 0 {
		return 0
	}
	v, ext = v[:n], ext[:n]
	if relu {
		firstReluF32x8(&d[0], &v[0], &ext[0], n, p)
	} else {
		firstF32x8(&d[0], &v[0], &ext[0], n, p)
	}
	return n
}

// simdInfToZero sets the +Inf elements of a prefix of d to 0 and returns
// its length.
func simdInfToZero(d []float32) int {
	n := len(d) &^ 7
	if !useSIMD || n == 0 {
		return 0
	}
	infToZeroF32x8(&d[0], n)
	return n
}

// simdRoute sets d[i] to cot[i] where first[i] == p (and not act[i] ≤ 0,
// when act is not nil), else to 0, for a prefix of d and returns its
// length.
func simdRoute(d, act, first, cot []float32, p float32) int {
	n := len(d) &^ 7
	if !useSIMD || n == 0 {
		return 0
	}
	first, cot = first[:n], cot[:n]
	if act != nil {
		act = act[:n]
		routeActF32x8(&d[0], &act[0], &first[0], &cot[0], n, p)
	} else {
		routeF32x8(&d[0], &first[0], &cot[0], n, p)
	}
	return n
}

func boolsToF32x8(d *float32, src *bool, n int)

func f32ToBoolsx8(d *bool, v *float32, n int)

// simdBoolsToF32 converts a prefix of src to 0 or 1 in d and returns its
// length.
func simdBoolsToF32(d []float32, src []bool) int {
	n := len(d) &^ 7
	if !useSIMD || n == 0 {
		return 0
	}
	src = src[:n]
	boolsToF32x8(&d[0], &src[0], n)
	return n
}

// simdF32ToBools stores a prefix of the boolean lanes v (0 or 1) as
// booleans in d and returns its length.
func simdF32ToBools(d []bool, v []float32) int {
	n := len(d) &^ 7
	if !useSIMD || n == 0 {
		return 0
	}
	v = v[:n]
	f32ToBoolsx8(&d[0], &v[0], n)
	return n
}
