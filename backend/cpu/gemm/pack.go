package gemm

// Packing copies a block of op(A) or op(B) into the contiguous sliver layout the
// micro-kernel streams through, so that its loads are sequential whatever the operand's
// transposition and leading dimension. Rows or columns past the matrix edge are filled
// with zeros, which lets edge tiles run the same full-size kernel.

// packA packs the mc×kc block of op(A) that starts at row i0 and column p0 into dst as
// ceil(mc/mr) slivers, each holding kc steps of mr values (dst[s*kc*mr + p*mr + r] is
// op(A)[i0+s*mr+r, p0+p]). op(A)[i, p] is a[i*lda+p], or a[p*lda+i] when trans.
func packA(dst, a []float32, lda int, trans bool, i0, p0, mc, kc, mr int) {
	for s := 0; s*mr < mc; s++ {
		rows := min(mr, mc-s*mr)
		d := dst[s*kc*mr : (s+1)*kc*mr]
		ib := i0 + s*mr
		if trans {
			// Each step of k reads rows contiguous values.
			for p := 0; p < kc; p++ {
				o := (p0+p)*lda + ib
				dp := d[p*mr : p*mr+mr]
				copy(dp, a[o:o+rows])
				clear(dp[rows:])
			}
			continue
		}
		// Each row of the sliver reads kc contiguous values.
		for r := 0; r < rows; r++ {
			o := (ib+r)*lda + p0
			for p, v := range a[o : o+kc] {
				d[p*mr+r] = v
			}
		}
		for r := rows; r < mr; r++ {
			for p := 0; p < kc; p++ {
				d[p*mr+r] = 0
			}
		}
	}
}

// packB packs the kc×nc block of op(B) that starts at row p0 and column j0 into dst as
// ceil(nc/nr) slivers, each holding kc steps of nr values (dst[t*kc*nr + p*nr + c] is
// op(B)[p0+p, j0+t*nr+c]). op(B)[p, j] is b[p*ldb+j], or b[j*ldb+p] when trans; the
// transposed case uses tr, when not nil, for whole 16×16 blocks.
func packB(dst, b []float32, ldb int, trans bool, p0, j0, kc, nc, nr int, tr func([]float32, int, []float32, int, int)) {
	for t := 0; t*nr < nc; t++ {
		cols := min(nr, nc-t*nr)
		d := dst[t*kc*nr : (t+1)*kc*nr]
		jb := j0 + t*nr
		if !trans {
			for p := 0; p < kc; p++ {
				o := (p0+p)*ldb + jb
				dp := d[p*nr : p*nr+nr]
				copy(dp, b[o:o+cols])
				clear(dp[cols:])
			}
			continue
		}
		c := 0
		if tr != nil && kc >= 16 {
			// Whole groups of 16 columns, 16 steps at a time; the last kc%16 steps of
			// those columns are left to the loop below.
			for ; c+16 <= cols; c += 16 {
				tr(b[(jb+c)*ldb+p0:], ldb, d[c:], nr, kc/16)
			}
		}
		if done := kc / 16 * 16; c > 0 && done < kc {
			for cc := 0; cc < c; cc++ {
				o := (jb+cc)*ldb + p0
				for p, v := range b[o+done : o+kc] {
					d[(done+p)*nr+cc] = v
				}
			}
		}
		for ; c < cols; c++ {
			o := (jb+c)*ldb + p0
			for p, v := range b[o : o+kc] {
				d[p*nr+c] = v
			}
		}
		for c := cols; c < nr; c++ {
			for p := 0; p < kc; p++ {
				d[p*nr+c] = 0
			}
		}
	}
}

// CopyRows copies rows rows of n values, row j from src[j*lds:] to dst[j*ldd:], in
// vectors where the processor allows: the packing of operands into matrices (im2col),
// which would otherwise make a call to copy for every short row. The strides must not
// be negative, and the rows must not overlap across dst and src.
func CopyRows(dst []float32, ldd int, src []float32, lds, n, rows int) {
	if rows <= 0 || n <= 0 {
		return
	}
	if ldd < 0 || lds < 0 {
		panic("gemm: CopyRows with a negative stride")
	}
	_ = dst[(rows-1)*ldd+n-1]
	_ = src[(rows-1)*lds+n-1]
	if copyRowsArch(dst, ldd, src, lds, n, rows) {
		return
	}
	for j := range rows {
		copy(dst[j*ldd:j*ldd+n], src[j*lds:j*lds+n])
	}
}
