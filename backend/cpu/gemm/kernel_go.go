package gemm

// goKernel is the portable micro-kernel family, available on every machine: one 4×4
// kernel in each A layout. Edge slivers of fewer rows are packed by the driver.
var goKernel = &kernel{
	name: "go4x4", mr: 4, nr: 4,
	colMajorA: []microKernel{4: kernel4x4GoColA},
	rowMajorA: []microKernel{4: kernel4x4GoRowA},
}

// The portable kernels compute a 4×4 tile as four passes over k, one row of A each: four
// accumulators, four B values and one A value stay in registers even on amd64, whose
// compiler schedules every multiply of a step before its adds and spills a 4×4 or 2×4
// register tile (measured two to three times slower). The B sliver is re-read from L1 by
// each pass. Operands are re-sliced so that a step of k needs at most one bounds check
// per operand.

// kernel4x4GoColA is the portable kernel reading A[r, p] at a[p*as+r].
func kernel4x4GoColA(k int, a []float32, as int, b []float32, bs int, c []float32, ldc int, cols int, alpha, beta float32) {
	for r := 0; r < 4; r++ {
		storeRow4(c[r*ldc:r*ldc+4], alpha, beta, rowTimesB(k, a[r:], as, b, bs))
	}
}

// kernel4x4GoRowA is the portable kernel reading A[r, p] at a[r*as+p].
func kernel4x4GoRowA(k int, a []float32, as int, b []float32, bs int, c []float32, ldc int, cols int, alpha, beta float32) {
	for r := 0; r < 4; r++ {
		storeRow4(c[r*ldc:r*ldc+4], alpha, beta, contiguousRowTimesB(a[r*as:r*as+k], b, bs))
	}
}

// rowTimesB returns the product of one row of A, its k values ps apart in a, with the
// first four columns of B (row p at b[p*bs]).
func rowTimesB(k int, a []float32, ps int, b []float32, bs int) [4]float32 {
	var c0, c1, c2, c3 float32
	a = a[:(k-1)*ps+1]
	_ = b[(k-1)*bs+3]
	for ia, ib := 0, 0; ia < len(a); ia, ib = ia+ps, ib+bs {
		av := a[ia]
		bp := (*[4]float32)(b[ib : ib+4])
		c0 += av * bp[0]
		c1 += av * bp[1]
		c2 += av * bp[2]
		c3 += av * bp[3]
	}
	return [4]float32{c0, c1, c2, c3}
}

// contiguousRowTimesB is rowTimesB for a row whose values are adjacent.
func contiguousRowTimesB(a []float32, b []float32, bs int) [4]float32 {
	var c0, c1, c2, c3 float32
	_ = b[(len(a)-1)*bs+3]
	ib := 0
	for _, av := range a {
		bp := (*[4]float32)(b[ib : ib+4])
		ib += bs
		c0 += av * bp[0]
		c1 += av * bp[1]
		c2 += av * bp[2]
		c3 += av * bp[3]
	}
	return [4]float32{c0, c1, c2, c3}
}

// storeRow4 sets the four elements of row to alpha·v + beta·row, not reading row when
// beta is 0.
func storeRow4(row []float32, alpha, beta float32, v [4]float32) {
	r := (*[4]float32)(row)
	if beta == 0 {
		r[0], r[1], r[2], r[3] = alpha*v[0], alpha*v[1], alpha*v[2], alpha*v[3]
		return
	}
	r[0] = alpha*v[0] + beta*r[0]
	r[1] = alpha*v[1] + beta*r[1]
	r[2] = alpha*v[2] + beta*r[2]
	r[3] = alpha*v[3] + beta*r[3]
}
