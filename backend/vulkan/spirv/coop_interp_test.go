package spirv

import (
	"fmt"
	"math"
	"testing"
)

// The interpreter's cooperative matrices: a sub-group's matrix is held
// whole by each of its invocations (the elements row-major), so that a
// load, multiply-add or store by every invocation of the sub-group
// computes what the sub-group computes together; the stores of one
// sub-group write the same values. Loads and stores reach Workgroup
// arrays, and 16-bit components round to nearest even.

// halfBits returns the binary16 (or, for bf, bfloat16) encoding of x
// rounded to nearest, ties to even.
func halfBits(x float64, bf bool) uint64 {
	if bf {
		b := math.Float32bits(float32(x))
		if math.IsNaN(x) {
			return uint64(b>>16 | 0x40)
		}
		return uint64((b + 0x7fff + (b >> 16 & 1)) >> 16)
	}
	var sign uint64
	if math.Signbit(x) {
		sign, x = 0x8000, -x
	}
	switch {
	case math.IsNaN(x):
		return 0x7e00
	case x >= 65520: // halfway between the largest binary16 and 2¹⁶ rounds up
		return sign | 0x7c00
	case x < math.Ldexp(1, -14): // subnormal: a multiple of 2⁻²⁴
		return sign | uint64(math.RoundToEven(math.Ldexp(x, 24)))
	}
	fr, ex := math.Frexp(x)                              // x = fr·2^ex, fr in [0.5, 1)
	mant := uint64(math.RoundToEven(math.Ldexp(fr, 11))) // 11 bits with the leading one
	if mant == 1<<11 {
		mant, ex = 1<<10, ex+1
	}
	return sign | uint64(ex+14)<<10 | mant&0x3ff
}

// halfValue decodes a binary16 (or bfloat16) encoding.
func halfValue(b uint64, bf bool) float64 {
	if bf {
		return float64(math.Float32frombits(uint32(b) << 16))
	}
	sign := 1.0
	if b&0x8000 != 0 {
		sign = -1
	}
	e, f := int(b>>10&0x1f), float64(b&0x3ff)
	switch e {
	case 0:
		return sign * math.Ldexp(f, -24)
	case 31:
		if f != 0 {
			return math.NaN()
		}
		return sign * math.Inf(1)
	}
	return sign * math.Ldexp(1024+f, e-25)
}

// component decodes a matrix component of type t.
func component(t spvType, b uint64) float64 {
	if t.width == 16 {
		return halfValue(b, t.bf16)
	}
	return fl(b, t.width)
}

// coopPlace returns the shared array and the index of element (r, c) of
// a matrix at pointer p, in layout (0: row-major, 1: column-major) with
// stride elements between rows (columns).
func (in *invocation) coopPlace(p *ptr, layout, stride uint64) (func(r, c uint32) int, []val, error) {
	if p.class != scWorkgroup {
		return nil, nil, fmt.Errorf("cooperative matrix in storage class %d", p.class)
	}
	if layout > 1 {
		return nil, nil, fmt.Errorf("cooperative matrix layout %d", layout)
	}
	s := int(sext(stride, 32))
	return func(r, c uint32) int {
		if layout == 1 {
			r, c = c, r
		}
		return p.index + int(r)*s + int(c)
	}, in.shared[p.local], nil
}

func (in *invocation) coopLoad(rt spvType, a []uint32) (val, error) {
	if len(a) != 5 {
		return val{}, fmt.Errorf("cooperative matrix load with %d operands", len(a))
	}
	at, arr, err := in.coopPlace(in.get(a[2]).p, in.get(a[3]).b, in.get(a[4]).b)
	if err != nil {
		return val{}, err
	}
	out := make([]val, rt.n*rt.cols)
	for r := range rt.n {
		for c := range rt.cols {
			i := at(r, c)
			if i < 0 || i >= len(arr) || !arr[i].set {
				return val{}, fmt.Errorf("cooperative matrix load of element %d of a shared array of %d, unset or outside", i, len(arr))
			}
			out[r*rt.cols+c] = arr[i]
		}
	}
	return val{v: out}, nil
}

func (in *invocation) coopStore(a []uint32) error {
	if len(a) != 4 {
		return fmt.Errorf("cooperative matrix store with %d operands", len(a))
	}
	mt := in.typeOf(a[1])
	at, arr, err := in.coopPlace(in.get(a[0]).p, in.get(a[2]).b, in.get(a[3]).b)
	if err != nil {
		return err
	}
	x := in.get(a[1]).v
	for r := range mt.n {
		for c := range mt.cols {
			i := at(r, c)
			if i < 0 || i >= len(arr) {
				return fmt.Errorf("cooperative matrix store to element %d of a shared array of %d", i, len(arr))
			}
			arr[i] = val{b: x[r*mt.cols+c].b, set: true}
		}
	}
	return nil
}

// coopMulAdd computes A·B + C in float32, adding the products of each
// result element in order of depth.
func (in *invocation) coopMulAdd(rt spvType, a []uint32) (val, error) {
	ta, tb, tc := in.typeOf(a[2]), in.typeOf(a[3]), in.typeOf(a[4])
	switch {
	case len(a) != 5:
		return val{}, fmt.Errorf("cooperative matrix multiply-add with operands %v", a[5:])
	case ta.use != 0 || tb.use != 1 || tc.use != 2 || rt.use != 2:
		return val{}, fmt.Errorf("cooperative matrix multiply-add of uses %d, %d, %d", ta.use, tb.use, tc.use)
	case ta.n != rt.n || tb.cols != rt.cols || ta.cols != tb.n || tc.n != rt.n || tc.cols != rt.cols:
		return val{}, fmt.Errorf("cooperative matrix multiply-add of %d×%d by %d×%d into %d×%d", ta.n, ta.cols, tb.n, tb.cols, rt.n, rt.cols)
	}
	ea, eb, ec, er := in.m.types[ta.elem], in.m.types[tb.elem], in.m.types[tc.elem], in.m.types[rt.elem]
	x, y, z := in.get(a[2]).v, in.get(a[3]).v, in.get(a[4]).v
	out := make([]val, rt.n*rt.cols)
	for i := range rt.n {
		for j := range rt.cols {
			s := float32(component(ec, z[i*rt.cols+j].b))
			for k := range ta.cols {
				s += float32(component(ea, x[i*ta.cols+k].b) * component(eb, y[k*tb.cols+j].b))
			}
			out[i*rt.cols+j] = val{b: fbits(float64(s), er.width), set: true}
		}
	}
	return val{v: out}, nil
}

// TestHalfBits checks the interpreter's 16-bit encodings on hand-worked
// values.
func TestHalfBits(t *testing.T) {
	for _, c := range []struct {
		x    float64
		bf   bool
		want uint64
	}{
		{1, false, 0x3c00}, {-2, false, 0xc000}, {65504, false, 0x7bff}, {65520, false, 0x7c00},
		{math.Ldexp(1, -24), false, 1}, {math.Ldexp(1, -25), false, 0}, {math.Ldexp(3, -26), false, 1},
		{1 + math.Ldexp(1, -11), false, 0x3c00}, {1 + math.Ldexp(3, -11), false, 0x3c02}, {0.1, false, 0x2e66},
		{1, true, 0x3f80}, {1 + math.Ldexp(1, -8), true, 0x3f80}, {1 + math.Ldexp(3, -8), true, 0x3f82}, {-0.1, true, 0xbdcd},
	} {
		if got := halfBits(c.x, c.bf); got != c.want {
			t.Errorf("halfBits(%v, bf16 %v) = %#x, want %#x", c.x, c.bf, got, c.want)
		}
		ulp := math.Ldexp(1, -10)
		if c.bf {
			ulp = math.Ldexp(1, -7)
		}
		if v := halfValue(c.want, c.bf); c.want != 0x7c00 && c.x > 1e-6 && math.Abs(v-c.x) > math.Abs(c.x)*ulp {
			t.Errorf("halfValue(%#x) = %v, far from %v", c.want, v, c.x)
		}
	}
}

// TestCoopKernelsValidate runs spirv-val on cooperative-matrix products,
// skipping when the validator predates SPV_KHR_cooperative_matrix (as
// SPIRV-Tools 2023.1 does): the interpreter checks their meaning then.
func TestCoopKernelsValidate(t *testing.T) {
	val := tool(t, "spirv-val")
	dir := t.TempDir()
	tg := coopTarget(CoopShape{M: 16, N: 16, K: 16}, 32)
	for _, c := range productCases {
		p, gemm, _ := c.build(t, 1)
		k, err := Emit(p, gemm, tg)
		if err != nil {
			t.Fatal(err)
		}
		if err := validate(val, dir, c.name, k.Words); err != nil {
			if coopUnknown(err) {
				t.Skipf("this spirv-val does not know SPV_KHR_cooperative_matrix: %v", err)
			}
			t.Errorf("%s: %v", c.name, err)
		}
	}
}
