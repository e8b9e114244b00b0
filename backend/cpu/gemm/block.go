package gemm

// Cache blocking. The driver walks its rectangle of C in GotoBLAS order:
//
//	for each column block of nc columns                 (jc)
//	  for each depth block of kc                        (pc)  pack op(B) kc×nc: stays in L2
//	    for each sliver of mr rows of op(A)             (ir)  read in place: stays in L1
//	      for each sliver of nr columns of the B block  (jr)  streamed from L2
//	        micro-kernel on one tile of C
//
// Full A slivers are not packed: a kernel reads A where it lies, row-major or transposed,
// with the stride lda, and there is a kernel for every row count, so even a final partial
// sliver needs no copy. (Measured on the development machine, reading A in place beat
// packing it on every shape tried, from 2048³ to k = 4: each sliver is reused only
// nc/nr times, too few to repay the copy.) Only families lacking a row count pack an
// edge sliver, padded with zero rows. B is packed, transposing it when needed, except
// when the rectangle has so few rows that each B sliver is used by only a handful of A
// slivers: then a non-transposed B is read in place too, and only its partial last
// sliver is packed.
//
// The limits below are upper bounds; each call balances its blocks so that the last one
// is not a sliver (for example k = 1568 becomes seven depth blocks of 224).
const (
	kcMax = 256 // depth of a block: an A sliver of 14×256 floats is 14 KiB, in L1
	ncMax = 512 // columns of a packed B block: 256×512 floats is 512 KiB, half of L2
)

// operands is one validated Sgemm call with m, n, k ≥ 1 and alpha ≠ 0.
type operands struct {
	transA, transB bool
	m, n, k        int
	alpha          float32
	a              []float32
	lda            int
	b              []float32
	ldb            int
	beta           float32
	c              []float32
	ldc            int
}

// workspace holds the packing buffers of one goroutine (about 0.6 MiB). Workspaces are
// kept on a free list so that a call allocates nothing once the list is warm.
type workspace struct {
	a    []float32 // one packed edge sliver of A
	b    []float32 // the packed B block
	tile []float32 // an edge tile computed by a full-size kernel before it is merged into C
}

// maxMR and maxNR bound the tile of every kernel, sizing the shared buffers.
const (
	maxMR = 18
	maxNR = 32
)

var workspaces = newFreeList(maxWorkers, func() *workspace {
	return &workspace{
		a:    make([]float32, maxMR*kcMax),
		b:    make([]float32, kcMax*(ncMax+maxNR)),
		tile: make([]float32, maxMR*maxNR),
	}
})

// balance splits n into the fewest blocks of at most limit and returns the block size,
// rounded up to a multiple of unit (the last block may be smaller).
func balance(n, limit, unit int) int {
	blocks := (n + limit - 1) / limit
	size := (n + blocks - 1) / blocks
	return (size + unit - 1) / unit * unit
}

// run computes rows [i0, i1) and columns [j0, j1) of C with kernel family kn, or with its
// narrow family when the rectangle is that narrow.
func (w *workspace) run(kn *kernel, op *operands, i0, i1, j0, j1 int) {
	if kn.narrow != nil && j1-j0 <= kn.narrow.nr {
		kn = kn.narrow
	}
	mr, nr := kn.mr, kn.nr
	kc := balance(op.k, kcMax, 1)
	nc := balance(j1-j0, ncMax, nr)
	c, ldc := op.c, op.ldc
	// B is read in place when few A slivers reuse each B sliver; otherwise a packed copy
	// repays itself with contiguous loads.
	directB := !op.transB && i1-i0 <= directBMaxSlivers*mr
	for jc := j0; jc < j1; jc += nc {
		ncur := min(nc, j1-jc)
		for pc := 0; pc < op.k; pc += kc {
			kcur := min(kc, op.k-pc)
			if !directB {
				packB(w.b, op.b, op.ldb, op.transB, pc, jc, kcur, ncur, nr, kn.transpose16)
			} else if edge := ncur % nr; edge != 0 {
				// Only the partial sliver is packed, zero-padded to nr columns.
				packB(w.b, op.b, op.ldb, false, pc, jc+ncur-edge, kcur, edge, nr, nil)
			}
			beta := op.beta
			if pc > 0 {
				beta = 1
			}
			for ir := i0; ir < i1; ir += mr {
				rows := min(mr, i1-ir)
				// A sliver is read where it lies by the kernel of its row count (and a
				// last sliver of few columns by the narrow family's); without one, it is
				// packed and padded with zero rows to a full sliver.
				var kern, narrow microKernel
				var aS []float32
				as, kr := op.lda, rows
				switch {
				case op.transA && kn.colMajorA[rows] != nil:
					kern, aS = kn.colMajorA[rows], op.a[pc*op.lda+ir:]
					if kn.narrow != nil {
						narrow = kn.narrow.colMajorA[rows]
					}
				case !op.transA && kn.rowMajorA[rows] != nil:
					kern, aS = kn.rowMajorA[rows], op.a[ir*op.lda+pc:]
					if kn.narrow != nil {
						narrow = kn.narrow.rowMajorA[rows]
					}
				default:
					packA(w.a, op.a, op.lda, op.transA, ir, pc, rows, kcur, mr)
					kern, aS, as, kr = kn.colMajorA[mr], w.a[:mr*kcur], mr, mr
				}
				for jr := 0; jr < ncur; jr += nr {
					cols := min(nr, ncur-jr)
					bS, bs := w.b[jr*kcur:(jr+nr)*kcur], nr
					switch {
					case directB && cols == nr:
						bS, bs = op.b[pc*op.ldb+jc+jr:], op.ldb
					case directB:
						bS = w.b[:nr*kcur]
					}
					ci := ir*ldc + jc + jr
					switch {
					case narrow != nil && cols <= kn.narrow.nr:
						narrow(kcur, aS, as, bS, bs, c[ci:], ldc, cols, op.alpha, beta)
					case kr == rows && (cols == nr || kn.masked):
						kern(kcur, aS, as, bS, bs, c[ci:], ldc, cols, op.alpha, beta)
					default:
						kern(kcur, aS, as, bS, bs, w.tile, nr, nr, 1, 0)
						mergeTile(c[ci:], ldc, w.tile, nr, rows, cols, op.alpha, beta)
					}
				}
			}
		}
	}
}

// directBMaxSlivers is the most A slivers a rectangle may have for B to be read in place:
// measured on the development machine, the 64-row dense layer (five slivers) ran 30%
// faster reading B in place, while shapes with dozens of slivers gained nothing from it.
const directBMaxSlivers = 8

// mergeTile sets the rows×cols corner of C to alpha·t + beta·C, not reading C when beta
// is 0.
func mergeTile(c []float32, ldc int, t []float32, ldt, rows, cols int, alpha, beta float32) {
	for r := 0; r < rows; r++ {
		cr := c[r*ldc : r*ldc+cols]
		tr := t[r*ldt : r*ldt+cols]
		if beta == 0 {
			for j, v := range tr {
				cr[j] = alpha * v
			}
			continue
		}
		for j, v := range tr {
			cr[j] = alpha*v + beta*cr[j]
		}
	}
}

// scaleC sets the m×n matrix C to beta·C, writing zeros without reading C when beta is 0.
func scaleC(beta float32, c []float32, m, n, ldc int) {
	if beta == 1 {
		return
	}
	for i := 0; i < m; i++ {
		row := c[i*ldc : i*ldc+n]
		if beta == 0 {
			clear(row)
			continue
		}
		for j := range row {
			row[j] *= beta
		}
	}
}
