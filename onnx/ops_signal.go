package onnx

import (
	"fmt"
	"math"

	"github.com/tartanml/tartan/tile"
)

// Signal processing: window functions, the discrete Fourier transform and
// the short-time Fourier transform. Transforms are contractions with
// constant cosine and sine matrices.

func init() {
	register("HannWindow", func(c *ctx) { opWindow(c, []float64{0.5, 0.5}) })
	register("HammingWindow", func(c *ctx) { opWindow(c, []float64{25.0 / 46, 1 - 25.0/46}) })
	register("BlackmanWindow", func(c *ctx) { opWindow(c, []float64{0.42, 0.5, 0.08}) })
	register("DFT", opDFT)
	register("STFT", opSTFT)
}

// opWindow builds Σ_k (−1)^k a_k cos(2πkn/N), N the size when periodic and
// the size − 1 otherwise.
func opWindow(c *ctx, a []float64) {
	sv := c.knownInts(0)
	periodic := c.attrInt("periodic", 1) != 0
	dt := c.attrDType("output_datatype", Float)
	if c.failed() {
		return
	}
	if len(sv) != 1 || sv[0] < 0 || sv[0] > maxIndexList {
		c.fail("size %v must be one count below %d", sv, maxIndexList)
		return
	}
	size := int(sv[0])
	n := float64(size)
	if !periodic {
		n--
	}
	g := c.g
	i := g.Iota(tile.Float64, tile.Shape{size}, 0)
	var w *tile.Tensor
	for k, ak := range a {
		term := g.Mul(g.ScalarLike(i, ak), cos64(g, g.Mul(i, g.ScalarLike(i, 2*math.Pi*float64(k)/n))))
		if k%2 == 1 {
			term = g.Neg(term)
		}
		if w == nil {
			w = term
		} else {
			w = g.Add(w, term)
		}
	}
	c.set(0, g.Cast(w, dt))
}

// alongAxis contracts x's axis (of n elements) with the n × k matrix m:
// y[…, j, …] = Σ_i x[…, i, …] m[i, j].
func alongAxis(g *tile.Graph, x *tile.Tensor, axis int, m *tile.Tensor) *tile.Tensor {
	var out, acc []tile.Affine
	s := x.Shape()
	for d := range s {
		ix := tile.Ix(fmt.Sprintf("d%d", d))
		if d == axis {
			out = append(out, tile.Ix("j"))
			acc = append(acc, tile.Ix("i"))
			continue
		}
		out = append(out, ix)
		acc = append(acc, ix)
	}
	s[axis] = m.Dim(1)
	return g.Contract(tile.Sum, tile.CombMul, s, out,
		[]tile.Operand{{Tensor: x, Index: acc}, {Tensor: m, Index: []tile.Affine{tile.Ix("i"), tile.Ix("j")}}})
}

// dft transforms x (…, n along axis, …, 1 or 2) into k bins of a length-n
// transform, returning (…, k, …, 2).
func dft(c *ctx, x *tile.Tensor, axis, n, bins int, inverse bool) *tile.Tensor {
	g := c.g
	r := x.Rank()
	if x.Dim(r-1) != 1 && x.Dim(r-1) != 2 {
		return c.fail("the last dimension of %v must be 1 (real) or 2 (complex)", x.Shape())
	}
	if int64(n)*int64(bins) > maxIndexList {
		return c.fail("a transform of %d points is too large", n)
	}
	cos, sin := make([]float64, n*bins), make([]float64, n*bins)
	sign := -1.0
	scale := 1.0
	if inverse {
		sign, scale = 1, 1/float64(n)
	}
	for i := range n {
		for k := range bins {
			// reduce i·k mod n first so the angle stays exact
			ph := 2 * math.Pi * float64((int64(i)*int64(k))%int64(n)) / float64(n)
			cos[i*bins+k] = math.Cos(ph) * scale
			sin[i*bins+k] = sign * math.Sin(ph) * scale
		}
	}
	cm, err := tile.ValueOf(x.DType(), tile.Shape{n, bins}, cos)
	if err != nil {
		return c.fail("%v", err)
	}
	sm, _ := tile.ValueOf(x.DType(), tile.Shape{n, bins}, sin)
	C, S := g.Constant(cm), g.Constant(sm)
	part := func(k int) *tile.Tensor {
		start, stop := make([]int, r), x.Shape()
		start[r-1], stop[r-1] = k, k+1
		return g.Slice(x, start, stop, nil)
	}
	re := part(0)
	// (a + ib)(cos + i·sin) = a·cos − b·sin + i(a·sin + b·cos)
	outRe := alongAxis(g, re, axis, C)
	outIm := alongAxis(g, re, axis, S)
	if x.Dim(r-1) == 2 {
		im := part(1)
		outRe = g.Sub(outRe, alongAxis(g, im, axis, S))
		outIm = g.Add(outIm, alongAxis(g, im, axis, C))
	}
	return g.Concat(r-1, outRe, outIm)
}

func opDFT(c *ctx) {
	x := c.in(0)
	a := c.attrInt("axis", 1)
	inverse := c.attrInt("inverse", 0) != 0
	onesided := c.attrInt("onesided", 0) != 0
	if c.failed() {
		return
	}
	r := x.Rank()
	if r < 2 || !x.DType().IsFloat() {
		c.fail("input %s%v must be floating-point (…, signal, 1 or 2)", FromTile(x.DType()), x.Shape())
		return
	}
	ax := c.axis(a, r-1, "axis")
	if c.failed() {
		return
	}
	n := x.Dim(ax)
	if c.has(1) {
		lv := c.knownInts(1)
		if c.failed() {
			return
		}
		if len(lv) != 1 || lv[0] < 1 || lv[0] > maxIndexList {
			c.fail("dft_length %v is out of range", lv)
			return
		}
		n = int(lv[0])
		if n < x.Dim(ax) {
			start, stop := make([]int, r), x.Shape()
			stop[ax] = n
			x = c.g.Slice(x, start, stop, nil)
		} else if n > x.Dim(ax) {
			lo, hi := make([]int, r), make([]int, r)
			hi[ax] = n - x.Dim(ax)
			x = c.g.Pad(x, lo, hi, 0)
		}
	}
	bins := n
	if onesided {
		if inverse {
			c.fail("onesided inverse transforms are not supported")
			return
		}
		bins = n/2 + 1
	}
	c.set(0, dft(c, x, ax, n, bins, inverse))
}

func opSTFT(c *ctx) {
	sig := c.in(0)
	stepv := c.knownInts(1)
	onesided := c.attrInt("onesided", 1) != 0
	if c.failed() {
		return
	}
	if sig.Rank() != 3 || len(stepv) != 1 || stepv[0] < 1 {
		c.fail("signal %v must be (batch, length, 1 or 2) and frame_step one positive count", sig.Shape())
		return
	}
	var win *tile.Tensor
	length := 0
	if c.has(2) {
		win = c.in(2)
		if c.failed() {
			return
		}
		length = win.Size()
	}
	if c.has(3) {
		lv := c.knownInts(3)
		if c.failed() {
			return
		}
		if len(lv) != 1 || lv[0] < 1 || lv[0] > maxIndexList || (win != nil && int(lv[0]) != length) {
			c.fail("frame_length %v is out of range or differs from the window's %d", lv, length)
			return
		}
		length = int(lv[0])
	}
	if length == 0 {
		c.fail("neither a window nor frame_length gives the frame length")
		return
	}
	step := int(min(stepv[0], MaxElements))
	total := sig.Dim(1)
	if total < length {
		c.fail("the signal (%d) is shorter than a frame (%d)", total, length)
		return
	}
	frames := (total-length)/step + 1
	if int64(frames)*int64(length) > maxIndexList {
		c.fail("%d frames of %d are too many", frames, length)
		return
	}
	g := c.g
	idx := make([]float64, 0, frames*length)
	for f := range frames {
		for i := range length {
			idx = append(idx, float64(f*step+i))
		}
	}
	iv, _ := tile.ValueOf(tile.Int64, tile.Shape{frames, length}, idx)
	x := g.Gather(sig, g.Constant(iv), 1) // (batch, frames, length, 1 or 2)
	if win != nil {
		x = g.Mul(x, g.Reshape(win, tile.Shape{1, 1, length, 1}))
	}
	bins := length
	if onesided {
		bins = length/2 + 1
	}
	c.set(0, dft(c, x, 2, length, bins, false))
}

func init() { register("MelWeightMatrix", opMelWeightMatrix) }

// opMelWeightMatrix builds the triangular filters of a mel filter bank:
// num_mel_bins + 2 points equally spaced on the mel scale between the edge
// frequencies, mapped to DFT bins, each filter rising from its left point
// to its centre and falling to its right one. Every input must be known.
func opMelWeightMatrix(c *ctx) {
	nm, dl, sr := c.knownInts(0), c.knownInts(1), c.knownInts(2)
	lo, hi := c.known(3), c.known(4)
	dt := c.attrDType("output_datatype", Float)
	if c.failed() {
		return
	}
	if len(nm) != 1 || len(dl) != 1 || len(sr) != 1 || len(lo.Data) != 1 || len(hi.Data) != 1 {
		c.fail("every input must be a scalar")
		return
	}
	mels, dft, rate := nm[0], dl[0], sr[0]
	if mels < 1 || dft < 1 || rate < 1 || mels > maxIndexList || dft > maxIndexList || (dft/2+1)*mels > maxIndexList {
		c.fail("num_mel_bins %d, dft_length %d and sample_rate %d are out of range", mels, dft, rate)
		return
	}
	bins := int(dft/2 + 1)
	toMel := func(f float64) float64 { return 2595 * math.Log10(1+f/700) }
	lowMel, highMel := toMel(lo.Data[0]), toMel(hi.Data[0])
	points := int(mels) + 2
	step := (highMel - lowMel) / float64(points)
	freq := make([]int, points)
	for i := range freq {
		hz := 700 * (math.Pow(10, (float64(i)*step+lowMel)/2595) - 1)
		freq[i] = int(math.Floor(float64(dft+1) * hz / float64(rate)))
	}
	out := make([]float64, bins*int(mels))
	set := func(j, i int, v float64) error {
		if j < 0 || j >= bins {
			return fmt.Errorf("filter %d reaches DFT bin %d, outside [0, %d)", i, j, bins)
		}
		out[j*int(mels)+i] = v
		return nil
	}
	for i := range int(mels) {
		left, centre, right := freq[i], freq[i+1], freq[i+2]
		var err error
		if up := centre - left; up == 0 {
			err = set(centre, i, 1)
		} else {
			for j := left; j <= centre && err == nil; j++ {
				err = set(j, i, float64(j-left)/float64(up))
			}
		}
		if down := right - centre; down > 0 {
			for j := centre; j < right && err == nil; j++ {
				err = set(j, i, float64(right-j)/float64(down))
			}
		}
		if err != nil {
			c.fail("%v", err)
			return
		}
	}
	v, err := tile.ValueOf(dt, tile.Shape{bins, int(mels)}, out)
	if err != nil {
		c.fail("%v", err)
		return
	}
	c.setKnown(0, v)
}
