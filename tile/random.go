package tile

// RandomOp draws uniform numbers in [0, 1) for every element of the node. Its
// one operand is a scalar i64 seed. Element p (row-major position) is word
// p mod 4 of Philox4x32-10 applied to the counter (q, q>>32, Stream,
// Stream>>32) with q = p/4 and the key (seed, seed>>32), and its top 24 bits
// make the number: (word >> 8) · 2⁻²⁴. Every backend therefore draws the same
// numbers for the same seed, stream and shape.
type RandomOp struct{ Stream uint64 }

// Kind implements Op.
func (*RandomOp) Kind() string { return "random" }

// Random returns uniform numbers in [0, 1) of a floating dtype and shape,
// drawn from the scalar i64 seed and the stream number, which tells apart the
// draws of different nodes under one seed.
func (g *Graph) Random(seed *Tensor, dt DType, shape Shape, stream uint64) *Tensor {
	if !g.check("random", seed) || !g.checkStorage("random", dt, shape) {
		return g.invalid()
	}
	if seed.dtype != Int64 || seed.Rank() != 0 {
		return g.Errorf("random", "seed must be a scalar i64, got %s", describe([]*Tensor{seed}))
	}
	if !dt.IsFloat() {
		return g.Errorf("random", "dtype must be floating-point, got %v", dt)
	}
	return g.add(&RandomOp{Stream: stream}, dt, shape, seed)
}

// UniformAt returns the number RandomOp draws at row-major position p.
func UniformAt(seed, stream uint64, p int) float64 {
	q := uint64(p / 4)
	out := Philox4x32([4]uint32{uint32(q), uint32(q >> 32), uint32(stream), uint32(stream >> 32)},
		[2]uint32{uint32(seed), uint32(seed >> 32)})
	return float64(out[p%4]>>8) * (1.0 / (1 << 24))
}

// Philox4x32 is the Philox4x32-10 counter-based generator of Salmon et al.
// (SC'11): ten rounds of multiply-and-xor mixing of the counter under the key.
func Philox4x32(ctr [4]uint32, key [2]uint32) [4]uint32 {
	const (
		m0, m1 = 0xD2511F53, 0xCD9E8D57
		w0, w1 = 0x9E3779B9, 0xBB67AE85
	)
	for range 10 {
		p0 := uint64(m0) * uint64(ctr[0])
		p1 := uint64(m1) * uint64(ctr[2])
		ctr = [4]uint32{
			uint32(p1>>32) ^ ctr[1] ^ key[0], uint32(p1),
			uint32(p0>>32) ^ ctr[3] ^ key[1], uint32(p0),
		}
		key[0] += w0
		key[1] += w1
	}
	return ctr
}
