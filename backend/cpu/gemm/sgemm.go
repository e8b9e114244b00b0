package gemm

import (
	"fmt"
	"time"
)

// Sgemm computes C = alpha*op(A)*op(B) + beta*C for row-major matrices, op(X) = X or Xᵀ.
// A is m×k (k×m when transA), B is k×n (n×k when transB), C is m×n, with leading
// dimensions lda, ldb, ldc. It runs on the calling goroutine only.
//
// When beta is 0, C is only written, so NaNs or infinities already in C do not reach the
// result; when alpha is 0 or k is 0, A and B are not read. C must not overlap A or B.
//
// Like the reference BLAS, Sgemm treats inconsistent arguments as a programming error and
// panics with the error Validate returns (a negative size, a leading dimension smaller
// than the row it spans, a slice too short for its matrix). Callers holding untrusted
// shapes call Validate first and get the error instead.
func Sgemm(transA, transB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) {
	gemm(best, 1, transA, transB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
}

// SgemmParallel is Sgemm split over up to workers goroutines (0 = runtime.GOMAXPROCS).
// Small products use fewer goroutines than asked, down to the calling one alone; the
// result does not depend on the number of goroutines. It panics where Sgemm does.
func SgemmParallel(workers int, transA, transB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) {
	gemm(best, workers, transA, transB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
}

// gemm is Sgemm and SgemmParallel with the micro-kernel chosen by the caller, so that
// tests can run every kernel this machine supports.
func gemm(kn *kernel, workers int, transA, transB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) {
	if err := Validate(transA, transB, m, n, k, len(a), lda, len(b), ldb, len(c), ldc); err != nil {
		panic(err)
	}
	if m == 0 || n == 0 {
		return
	}
	if k == 0 || alpha == 0 {
		scaleC(beta, c, m, n, ldc)
		return
	}
	op := operands{transA: transA, transB: transB, m: m, n: n, k: k, alpha: alpha,
		a: a, lda: lda, b: b, ldb: ldb, beta: beta, c: c, ldc: ldc}
	parallel(kn, workers, &op)
}

// Validate reports whether the arguments describe a well-formed Sgemm call: sizes are
// non-negative, each leading dimension is at least the length of the stored row it
// strides over (and at least 1), and each slice holds its whole matrix. lenA, lenB and
// lenC are the lengths of the slices; A and B are checked only when they would be read
// (m, n and k all positive), C only when m and n are positive.
func Validate(transA, transB bool, m, n, k int, lenA, lda, lenB, ldb, lenC, ldc int) error {
	if m < 0 || n < 0 || k < 0 {
		return fmt.Errorf("gemm: negative size m=%d n=%d k=%d", m, n, k)
	}
	aRows, aCols, aShape := m, k, "m×k"
	if transA {
		aRows, aCols, aShape = k, m, "k×m, transposed"
	}
	bRows, bCols, bShape := k, n, "k×n"
	if transB {
		bRows, bCols, bShape = n, k, "n×k, transposed"
	}
	if err := checkMatrix("A", aShape, aRows, aCols, lda, lenA, n > 0); err != nil {
		return err
	}
	if err := checkMatrix("B", bShape, bRows, bCols, ldb, lenB, m > 0); err != nil {
		return err
	}
	return checkMatrix("C", "m×n", m, n, ldc, lenC, true)
}

// checkMatrix validates one stored rows×cols matrix with leading dimension ld in a slice
// of length size; the length is checked only when read is true and the matrix is not
// empty.
func checkMatrix(name, shape string, rows, cols, ld, size int, read bool) error {
	if ld < max(1, cols) {
		return fmt.Errorf("gemm: ld%s = %d is less than max(1, %d), the row length of %s (%s = %d×%d)",
			lowerName(name), ld, cols, name, shape, rows, cols)
	}
	if read && rows > 0 && cols > 0 {
		if need := (rows-1)*ld + cols; size < need {
			return fmt.Errorf("gemm: %s has %d elements, needs at least %d for %s = %d×%d with ld%s = %d",
				name, size, need, shape, rows, cols, lowerName(name), ld)
		}
	}
	return nil
}

func lowerName(name string) string {
	switch name {
	case "A":
		return "a"
	case "B":
		return "b"
	}
	return "c"
}

// KernelName names the micro-kernel family Sgemm and SgemmParallel use on this machine,
// for example "avx512-14x32", "avx2-6x16" or "go4x4".
func KernelName() string { return best.name }

// Tile returns the rows and columns of the largest micro-kernel tile Sgemm uses on this
// machine: blocks of C whose sizes are multiples of them leave no partial tiles inside.
func Tile() (rows, cols int) { return best.mr, best.nr }

// GFLOPS is the rate, in billions of floating-point operations per second, of an m×n×k
// matrix product (2·m·n·k operations) that took d.
func GFLOPS(m, n, k int, d time.Duration) float64 {
	if d <= 0 {
		return 0
	}
	return 2 * float64(m) * float64(n) * float64(k) / d.Seconds() / 1e9
}
