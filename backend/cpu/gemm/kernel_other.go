//go:build !amd64 || purego

package gemm

// archKernels returns no assembly kernels: this build uses the portable kernel only.
func archKernels() []*kernel { return nil }
