//go:build amd64 && !purego

package cpu

import "unsafe"

//go:noescape
func dotAccF32x8(acc *float64, a, b *float32, offA, offB *int, np, n int)

//go:noescape
func sumAccF32x8(acc *float64, a *float32, offA *int, np, n int)

// simdDotAcc is dotAcc for unit strides on the first lanes of acc, a
// multiple of 8, and returns their number.
func simdDotAcc(acc []float64, a, b []float32, offA, offB []int) int {
	n := len(acc) &^ 7
	if !useSIMD || n == 0 || len(offA) == 0 {
		return 0
	}
	dotAccF32x8(&acc[0], unsafe.SliceData(a), unsafe.SliceData(b), &offA[0], &offB[0], len(offA), n)
	return n
}

// simdSumAcc is sumAcc for a unit stride, as simdDotAcc.
func simdSumAcc(acc []float64, a []float32, offA []int) int {
	n := len(acc) &^ 7
	if !useSIMD || n == 0 || len(offA) == 0 {
		return 0
	}
	sumAccF32x8(&acc[0], unsafe.SliceData(a), &offA[0], len(offA), n)
	return n
}
