//go:build amd64 && !purego

package cpu

import (
	"unsafe"

	"golang.org/x/sys/cpu"
)

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

//go:noescape
func axpyF32x8(d, a *float32, w float32, n int)

//go:noescape
func axpy2F32x8(d, a *float32, w float32, n int)

//go:noescape
func axpyF32x16(d, a *float32, w float32, n int)

//go:noescape
func gather2F32x16(d, s *float32, blocks, rem int, mask uint32)

// simdGather2 sets d[i] = s[off+2i] for every i with AVX-512, reporting
// false (doing nothing) without it or for fewer than 8 elements; it reads
// no element past the last.
func simdGather2(d, s []float32, off int) bool {
	n := len(d)
	if !useAVX512 || n < 8 {
		return false
	}
	_ = s[off+2*n-2]
	blocks, rem := n/16, n%16
	if rem == 0 && off+2*n > len(s) {
		// The last block would read one past s's end.
		blocks, rem = blocks-1, 16
	}
	var mask uint32
	if rem > 0 {
		mask = 1<<(2*rem-1) - 1
	}
	gather2F32x16(&d[0], &s[off], blocks, rem, mask)
	return true
}

// useAVX512 reports whether the AVX-512 loops may run.
var useAVX512 = useSIMD && cpu.X86.HasAVX512F

// simdAxpy is axpy's multiple-of-8 prefix for strides 1 and 2 (with
// AVX-512, every element for stride 1), reading no element of a past the
// last one the prefix uses but, for stride 2, the one after it when it
// exists; it returns the prefix's length.
func simdAxpy(d []float32, w float32, a []float32, off, st int) int {
	if st == 1 && useAVX512 && len(d) > 0 && off >= 0 {
		_ = a[off+len(d)-1]
		axpyF32x16(&d[0], &a[off], w, len(d))
		return len(d)
	}
	n := len(d) &^ 7
	if !useSIMD || n == 0 || off < 0 {
		return 0
	}
	switch st {
	case 1:
		_ = a[off+n-1]
		axpyF32x8(&d[0], &a[off], w, n)
	case 2:
		// Each group of 8 reads 16 elements, one past its last.
		if off+2*n > len(a) {
			n -= 8
		}
		if n == 0 {
			return 0
		}
		_ = a[off+2*n-1]
		axpy2F32x8(&d[0], &a[off], w, n)
	default:
		return 0
	}
	return n
}
