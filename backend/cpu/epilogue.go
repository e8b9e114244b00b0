package cpu

import "github.com/tartanml/tartan/kir"

// epilogueRunner finishes a matrix-product kernel: it takes the aggregated
// values of a range of output points from a float32 array laid out like the
// output (often the output buffer itself), applies the kernel's Epilogue and
// stores the results. Its loops are the output loops, merged as far as the
// Epilogue's own index expressions allow, so rows are long.
type epilogueRunner struct {
	s       *space
	prog    *prog // nil: the output is the aggregate itself
	outLin  axisLin
	rowAxis int
	rowLen  int
	out     int
}

func newEpilogueRunner(p *kir.Program, k *kir.Kernel, r *regs) *epilogueRunner {
	s := newSpace(p, k, mergeAffine, partEpilogue)
	e := &epilogueRunner{s: s, rowAxis: s.nout - 1, out: k.Out}
	e.rowLen = s.ext[e.rowAxis]
	e.outLin = s.outLin().forAxis(e.rowAxis)
	if k.Epilogue != nil {
		b := newBuilder(s, e.rowAxis, progEpilogue, r)
		b.outputRows = true
		e.prog = b.value(k.Epilogue)
	}
	return e
}

// bind prepares a frame for apply calls.
func (e *epilogueRunner) bind(fr *frame) {
	if e.prog != nil {
		e.prog.bind(fr)
	}
}

// apply finishes the output points [lo, hi) (row-major positions), whose
// aggregates are acc[lo:hi].
func (e *epilogueRunner) apply(fr *frame, acc []float32, lo, hi int) {
	if lo >= hi {
		return
	}
	out := fr.bufs[e.out]
	if e.prog == nil {
		if out.f32 != nil && &out.f32[0] == &acc[0] {
			return
		}
		for p := lo; p < hi; p++ {
			out.setFloat64(p, float64(acc[p]))
		}
		return
	}
	if e.rowLen == 0 {
		return
	}
	direct := out.f32 != nil && e.prog.directOK && e.prog.result.lane == laneF
	for p := lo; p < hi; {
		row, c0 := p/e.rowLen, p%e.rowLen
		n := min(chunk, e.rowLen-c0, hi-p)
		rows := 1
		if c0 == 0 && e.rowLen < chunk && hi-p >= e.rowLen {
			// Whole short rows, several at a time; a range that ends
			// inside a row takes the partial row alone (n above).
			rows = min((hi-p)/e.rowLen, chunk/e.rowLen)
			n = e.rowLen
		}
		for l := e.rowAxis - 1; l >= 0; l-- {
			x := e.s.ext[l]
			fr.vars[l] = row % x
			row /= x
		}
		fr.rows, fr.outerRows = rows, true
		for r := 1; r < rows; r++ {
			nextRow(fr.rowVars[r], fr.rowVars[r-1], e.s.ext, e.rowAxis)
		}
		m := rows * n
		fr.accF, fr.accD = acc[p:p+m:p+m], nil
		var dst []float32
		if direct {
			dst = out.f32[p : p+m : p+m]
			fr.direct, fr.directReg = dst, e.prog.result.reg
		}
		e.prog.exec(fr, c0, n)
		fr.accF, fr.direct, fr.directReg = nil, nil, -1
		if !direct || !sameStart(fr.f[e.prog.result.reg], dst) {
			storeOperand(fr, out, p, 1, e.prog.result, m, 0)
		}
		fr.rows = 1
		p += m
	}
}

// sameStart reports whether two non-empty slices start at the same element.
func sameStart(a, b []float32) bool {
	return len(a) > 0 && len(b) > 0 && &a[0] == &b[0]
}
