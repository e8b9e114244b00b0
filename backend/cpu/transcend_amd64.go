//go:build amd64 && !purego

package cpu

import (
	"github.com/tartanml/tartan/tile"
	"golang.org/x/sys/cpu"
)

// useTranscend reports whether exp, erf and sigmoid of float32 lanes run
// in the AVX2 and FMA loops of transcend_amd64.s.
//
// Those loops compute in float32: exp by range reduction to
// r ∈ [-ln2/2, ln2/2] and a polynomial fitted to e^r (relative error
// 7e-10 before rounding); erf as x·P(x²) below 1 and 1 - e^(-x²)·R(1/x)
// from 1 to 4 (fits of relative error 6e-8 and 1e-8); sigmoid as
// 1/(1 + e^-x). TestTranscendentalAccuracy bounds their error against
// float64 math over every float32 of a wide range: exp within 2 units in
// the last place, erf and sigmoid within 3 (or 1e-38 absolute near
// underflow). Without AVX2 and FMA (and for other functions) lanes are
// computed in float64 and rounded, as the reference executor does.
var useTranscend = cpu.X86.HasAVX2 && cpu.X86.HasFMA

//go:noescape
func expF32x8(d, a *float32, n int)

//go:noescape
func erfF32x8(d, a *float32, n int)

//go:noescape
func sigmoidF32x8(d, a *float32, n int)

// simdTranscendF computes exp, erf or sigmoid of every lane of a into d
// and reports whether it did. The remainder after the last multiple of 8
// goes through the same loop in a padded block, so a lane's result does
// not depend on its position.
func simdTranscendF(fn tile.Fn, d, a []float32) bool {
	if !useTranscend || len(d) == 0 {
		return false
	}
	var f func(d, a *float32, n int)
	switch fn {
	case tile.Exp:
		f = expF32x8
	case tile.Erf:
		f = erfF32x8
	case tile.Sigmoid:
		f = sigmoidF32x8
	default:
		return false
	}
	a = a[:len(d)]
	n := len(d) &^ 7
	if n > 0 {
		f(&d[0], &a[0], n)
	}
	if r := len(d) - n; r > 0 {
		var blk [8]float32
		copy(blk[:], a[n:])
		f(&blk[0], &blk[0], 8)
		copy(d[n:], blk[:r])
	}
	return true
}
