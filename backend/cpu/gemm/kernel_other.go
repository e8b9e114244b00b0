//go:build !amd64 || purego

package gemm

// archKernels returns no assembly kernels: this build uses the portable kernel only.
func archKernels() []*kernel { return nil }

// copyRowsArch reports that this build has no assembly CopyRows.
func copyRowsArch(dst []float32, ldd int, src []float32, lds, n, rows int) bool { return false }
