package gemm

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas32"
)

// benchShapes are the sizes BenchmarkSgemm and BenchmarkGonum measure: squares, and the
// products of a small CNN at batch 64 (forward, and the transposed backward ones).
var benchShapes = []struct {
	name           string
	transA, transB bool
	m, n, k        int
}{
	{"256cubed", false, false, 256, 256, 256},
	{"1024cubed", false, false, 1024, 1024, 1024},
	{"2048cubed", false, false, 2048, 2048, 2048},
	{"fc_64x256x1568", false, false, 64, 256, 1568},
	{"fc_dX_64x1568x256_NT", false, true, 64, 1568, 256},
	{"fc_dW_1568x256x64_TN", true, false, 1568, 256, 64},
	{"conv1_12544x64x4", false, false, 12544, 64, 4},
	{"conv2_3136x32x256", false, false, 3136, 32, 256},
	{"conv2_dW_256x32x3136_TN", true, false, 256, 32, 3136},
	{"conv2_dcol_3136x256x32_NT", false, true, 3136, 256, 32},
}

type benchOperands struct{ a, b, c []float32 }

func newBenchOperands(m, n, k int) benchOperands {
	rng := rand.New(rand.NewPCG(3, 4))
	fill := func(n int) []float32 {
		s := make([]float32, n)
		for i := range s {
			s[i] = float32(rng.Float64() - 0.5)
		}
		return s
	}
	return benchOperands{fill(m * k), fill(k * n), fill(m * n)}
}

// reportGFLOPS reports the rate of b.N products of m×n×k.
func reportGFLOPS(b *testing.B, m, n, k int, elapsed time.Duration) {
	b.ReportMetric(GFLOPS(m, n, k, elapsed/time.Duration(b.N)), "GFLOP/s")
}

// BenchmarkSgemm measures SgemmParallel on all processors.
func BenchmarkSgemm(b *testing.B) {
	for _, s := range benchShapes {
		b.Run(s.name, func(b *testing.B) {
			o := newBenchOperands(s.m, s.n, s.k)
			lda, ldb := s.k, s.n
			if s.transA {
				lda = s.m
			}
			if s.transB {
				ldb = s.k
			}
			b.ResetTimer()
			start := time.Now()
			for i := 0; i < b.N; i++ {
				SgemmParallel(0, s.transA, s.transB, s.m, s.n, s.k, 1, o.a, lda, o.b, ldb, 0, o.c, s.n)
			}
			reportGFLOPS(b, s.m, s.n, s.k, time.Since(start))
		})
	}
}

// BenchmarkSgemmSerial measures Sgemm on the calling goroutine for each kernel.
func BenchmarkSgemmSerial(b *testing.B) {
	for _, kn := range kernels {
		for _, s := range benchShapes[:2] {
			b.Run(fmt.Sprintf("%s/%s", kn.name, s.name), func(b *testing.B) {
				o := newBenchOperands(s.m, s.n, s.k)
				b.ResetTimer()
				start := time.Now()
				for i := 0; i < b.N; i++ {
					gemm(kn, 1, false, false, s.m, s.n, s.k, 1, o.a, s.k, o.b, s.n, 0, o.c, s.n)
				}
				reportGFLOPS(b, s.m, s.n, s.k, time.Since(start))
			})
		}
	}
}

// BenchmarkGonum measures gonum's blas32.Gemm (its own goroutines) on the same shapes.
func BenchmarkGonum(b *testing.B) {
	for _, s := range benchShapes {
		b.Run(s.name, func(b *testing.B) {
			o := newBenchOperands(s.m, s.n, s.k)
			ta, tb := blas.NoTrans, blas.NoTrans
			ga := blas32.General{Rows: s.m, Cols: s.k, Stride: s.k, Data: o.a}
			if s.transA {
				ta, ga = blas.Trans, blas32.General{Rows: s.k, Cols: s.m, Stride: s.m, Data: o.a}
			}
			gb := blas32.General{Rows: s.k, Cols: s.n, Stride: s.n, Data: o.b}
			if s.transB {
				tb, gb = blas.Trans, blas32.General{Rows: s.n, Cols: s.k, Stride: s.k, Data: o.b}
			}
			gc := blas32.General{Rows: s.m, Cols: s.n, Stride: s.n, Data: o.c}
			b.ResetTimer()
			start := time.Now()
			for i := 0; i < b.N; i++ {
				blas32.Gemm(ta, tb, 1, ga, gb, 0, gc)
			}
			reportGFLOPS(b, s.m, s.n, s.k, time.Since(start))
		})
	}
}
