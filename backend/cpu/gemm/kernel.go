package gemm

// microKernel computes the first cols columns of one rows×nr tile of C:
//
//	C = alpha·A·B + beta·C   (C is not read when beta is ±0)
//
// where B's row p (nr values, zero beyond cols) starts at b[p*bs] and C's row r at
// c[r*ldc]. How A is read depends on the kernel's layout: column-major kernels read
// A[r, p] at a[p*as+r] (packed slivers, where as = mr, or a transposed operand read in
// place), row-major kernels read it at a[r*as+p] (a plain operand read in place). k ≥ 1
// always: the driver never calls a kernel for an empty product.
type microKernel func(k int, a []float32, as int, b []float32, bs int, c []float32, ldc int, cols int, alpha, beta float32)

// kernel describes one family of register-blocked micro-kernels sharing a tile width nr,
// in both A layouts. The packing routines and the blocked driver adapt to mr and nr, so
// every family shares them.
type kernel struct {
	name   string
	mr, nr int // the largest tile
	// colMajorA[rows] and rowMajorA[rows] compute tiles of that many rows; entry mr is
	// always present, others may be nil, in which case an edge sliver is packed and padded
	// to mr rows.
	colMajorA, rowMajorA []microKernel
	// masked reports whether the kernels honour cols < nr; otherwise they are always given
	// cols = nr and edge tiles go through a scratch tile.
	masked bool
	// transpose16, when not nil, writes blocks 16×16 blocks transposed: for q < blocks,
	// the block whose row i starts at src[i*lds+16q] goes to dst with its row j at
	// dst[(16q+j)*ldd]. It speeds up packing a transposed B.
	transpose16 func(src []float32, lds int, dst []float32, ldd int, blocks int)
	// narrow, when not nil, is a family of at most half the tile width, with a kernel
	// for every row count up to mr and masked columns, that computes the columns of a
	// sliver with at most narrow.nr columns at no wasted lanes: a whole rectangle that
	// narrow (the products of a layer with 16 channels), or the last sliver of a wider
	// one. Every family computes each element of C by the same sequence of operations
	// (fused multiply-adds in order of k, then the alpha and beta scaling), so which one
	// computes a tile does not change the result.
	narrow *kernel
}

// padCols is the number of columns the family's kernels compute for n columns: whole
// tiles, the last one narrow when it fits the narrow family.
func (kn *kernel) padCols(n int) int {
	full := n / kn.nr * kn.nr
	switch rest := n - full; {
	case rest == 0:
		return full
	case kn.narrow != nil && rest <= kn.narrow.nr:
		return full + kn.narrow.nr
	}
	return full + kn.nr
}

// kernels lists the micro-kernel families usable on this machine, fastest first. Its first
// entry serves Sgemm and SgemmParallel; tests run every entry.
var kernels []*kernel

// best is the family Sgemm uses: the first entry of kernels.
var best *kernel

func init() {
	kernels = append(archKernels(), goKernel)
	for _, kn := range kernels {
		// The pooled buffers are sized for tiles of at most maxMR×maxNR.
		if kn.mr > maxMR || kn.nr > maxNR || kn.narrow != nil && (!kn.narrow.masked || kn.narrow.nr > kn.nr/2 || kn.narrow.mr < kn.mr) || kn.colMajorA[kn.mr] == nil || kn.rowMajorA[kn.mr] == nil {
			panic("gemm: malformed kernel family " + kn.name)
		}
	}
	best = kernels[0]
}
