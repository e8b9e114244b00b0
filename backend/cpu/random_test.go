package cpu

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/tartanml/tartan/kir"
	"github.com/tartanml/tartan/tile"
)

// progGen writes random valid kernel programs: random shapes and dtypes,
// index expressions that are affine, use floor division and modulo, or read
// loaded indices, Where conditions, Skip and Fill loads, every aggregation,
// and epilogues. The generated programs exercise paths of the executors
// that compiled graphs reach rarely.
type progGen struct {
	rng  *rand.Rand
	b    *progBuilder
	nv   int // loop variables of the kernel being generated
	nout int
}

var genDTypes = []tile.DType{tile.Float32, tile.Float32, tile.Float32, tile.Float64, tile.Int32, tile.Int64, tile.Bool}

func (g *progGen) pick(n int) int { return g.rng.IntN(n) }

// affine returns a random affine index over the kernel's variables.
func (g *progGen) affine() *kir.Ix {
	x := kir.IxOfConst(g.pick(5) - 2)
	for range 1 + g.pick(2) {
		x = kir.IxSum(x, kir.IxTimes(kir.IxOfVar(g.pick(g.nv)), g.pick(5)-2))
	}
	return x
}

// index returns a random index expression; loaded values only when
// allowValue.
func (g *progGen) index(allowValue bool) *kir.Ix {
	switch r := g.pick(10); {
	case r < 6:
		return g.affine()
	case r < 8:
		return kir.IxFloorDivBy(g.affine(), 2+g.pick(2))
	case r < 9 || !allowValue:
		return kir.IxModBy(g.affine(), 2+g.pick(3))
	default:
		ints := g.buffers(func(dt tile.DType) bool { return dt.IsInt() })
		if len(ints) == 0 {
			return g.affine()
		}
		buf := ints[g.pick(len(ints))]
		return kir.IxSum(kir.IxOfValue(g.load(buf, false, false)), kir.IxOfConst(g.pick(3)-1))
	}
}

func (g *progGen) buffers(ok func(tile.DType) bool) []int {
	var out []int
	for _, b := range g.b.p.Buffers {
		if b.Kind == kir.Input && ok(b.DType) {
			out = append(out, b.ID)
		}
	}
	return out
}

// load reads buf at random indices: Skip when skip (a body), else Fill.
func (g *progGen) load(buf int, skip, allowValue bool) *kir.Expr {
	b := g.b.p.Buffers[buf]
	idx := make([]*kir.Ix, len(b.Shape))
	for d := range idx {
		if g.pick(3) == 0 && d < g.nout {
			idx[d] = kir.IxOfVar(d) // often the identity, in range
		} else {
			idx[d] = g.index(allowValue)
		}
	}
	e := &kir.Expr{Op: kir.Load, DType: b.DType, Buf: buf, Index: idx}
	if !skip || g.pick(2) == 0 {
		e.OOB, e.Value = kir.Fill, float64(g.pick(3)-1)
	}
	return e
}

// expr returns a random expression of dtype dt.
func (g *progGen) expr(dt tile.DType, depth int, skip, epilogue bool) *kir.Expr {
	if depth <= 0 || g.pick(4) == 0 {
		switch r := g.pick(10); {
		case epilogue && r < 3:
			return &kir.Expr{Op: kir.Cast, DType: dt, Args: []*kir.Expr{acc(tile.Float32)}}
		case r < 6:
			bufs := g.buffers(func(d tile.DType) bool { return d == dt })
			if len(bufs) > 0 {
				return g.load(bufs[g.pick(len(bufs))], skip, !epilogue)
			}
		case r < 7 && dt != tile.Bool:
			return &kir.Expr{Op: kir.IndexValue, DType: dt, Index: []*kir.Ix{g.index(false)}}
		case r < 8 && dt.IsFloat():
			seeds := g.buffers(func(d tile.DType) bool { return d == tile.Int64 })
			if len(seeds) > 0 {
				return &kir.Expr{Op: kir.Random, DType: dt, Stream: uint64(g.pick(4)),
					Args: []*kir.Expr{g.load(seeds[0], false, false)}, Index: []*kir.Ix{g.affine()}}
			}
		}
		return konst(dt, tile.RoundTo(dt, float64(g.pick(7)-3)/2))
	}
	var fns []tile.Fn
	switch {
	case dt == tile.Bool:
		fns = []tile.Fn{tile.Not, tile.And, tile.Or, tile.Lt, tile.Ge, tile.Eq, tile.Ne, tile.Select}
	case dt.IsFloat():
		fns = []tile.Fn{tile.Neg, tile.Abs, tile.Exp, tile.Tanh, tile.Sqrt, tile.Floor, tile.Add, tile.Sub,
			tile.Mul, tile.Div, tile.Maximum, tile.Minimum, tile.Select, tile.Sigmoid, tile.Sign}
	default:
		fns = []tile.Fn{tile.Neg, tile.Abs, tile.Add, tile.Sub, tile.Mul, tile.Div, tile.Maximum, tile.Select, tile.Sign}
	}
	if g.pick(8) == 0 {
		from := genDTypes[g.pick(len(genDTypes))]
		return &kir.Expr{Op: kir.Cast, DType: dt, Args: []*kir.Expr{g.expr(from, depth-1, skip, epilogue)}}
	}
	fn := fns[g.pick(len(fns))]
	if fn.IsComparison() {
		arg := []tile.DType{tile.Float32, tile.Int32, tile.Float64}[g.pick(3)]
		return apply(fn, tile.Bool, g.expr(arg, depth-1, skip, epilogue), g.expr(arg, depth-1, skip, epilogue))
	}
	if fn == tile.Select {
		return apply(fn, dt, g.expr(tile.Bool, depth-1, skip, epilogue), g.expr(dt, depth-1, skip, epilogue), g.expr(dt, depth-1, skip, epilogue))
	}
	args := make([]*kir.Expr, fn.Arity())
	for i := range args {
		args[i] = g.expr(dt, depth-1, skip, epilogue)
	}
	return apply(fn, dt, args...)
}

func (g *progGen) shape(maxRank int) tile.Shape {
	s := make(tile.Shape, g.pick(maxRank+1))
	for d := range s {
		s[d] = 1 + g.pick(7)
		if g.pick(6) == 0 {
			s[d] = 20 + g.pick(300)
		}
	}
	return s
}

// program returns a random valid program of one or two kernels.
func (g *progGen) program(name string) *kir.Program {
	for {
		g.b = newProg(name)
		for range 2 + g.pick(3) {
			dt := genDTypes[g.pick(len(genDTypes))]
			g.b.buf(kir.Input, fmt.Sprintf("in%d", len(g.b.p.Buffers)), dt, g.shape(3))
		}
		g.b.buf(kir.Input, "seed", tile.Int64, tile.Shape{})
		for range 1 + g.pick(2) {
			g.kernel()
		}
		if g.b.p.Validate() == nil {
			return g.b.p
		}
	}
}

func (g *progGen) kernel() {
	dt := genDTypes[g.pick(len(genDTypes))]
	shape := g.shape(3)
	for shape.Size() > 5000 {
		shape = g.shape(3)
	}
	k := &kir.Kernel{Shape: shape, Agg: tile.Assign}
	for range g.pick(3) {
		lo := g.pick(5) - 2
		hi := lo + g.pick(7) - 1
		if g.pick(8) == 0 {
			hi = lo + 200 + g.pick(400)
		}
		k.Reduce = append(k.Reduce, loop(fmt.Sprintf("r%d", len(k.Reduce)), lo, hi))
	}
	g.nout = len(shape)
	g.nv = k.NumVars()
	if g.nv == 0 {
		g.nv = 1
		k.Shape = tile.Shape{1 + g.pick(9)}
		g.nout = 1
	}
	aggs := []tile.Agg{tile.Sum, tile.Max, tile.Min, tile.Prod, tile.Assign}
	if len(k.Reduce) > 0 {
		k.Agg = aggs[g.pick(len(aggs))]
		if dt == tile.Bool && k.Agg != tile.Max && k.Agg != tile.Min && k.Agg != tile.Assign {
			k.Agg = tile.Max
		}
	}
	for range g.pick(3) {
		if g.pick(4) == 0 {
			// A condition on a computed boolean or small integer, as
			// compilers write equality tests.
			dt := []tile.DType{tile.Bool, tile.Int32}[g.pick(2)]
			k.Where = append(k.Where, kir.Cond{X: kir.IxSum(kir.IxOfValue(g.expr(dt, 2, true, false)), kir.IxOfConst(g.pick(3)-1)), Bound: 1 + g.pick(2)})
			continue
		}
		k.Where = append(k.Where, kir.Cond{X: g.index(true), Bound: 1 + g.pick(6)})
	}
	bodyDT := dt
	if g.pick(3) == 0 && len(k.Reduce) > 0 && dt != tile.Bool {
		bodyDT = tile.Float32
		k.Epilogue = &kir.Expr{Op: kir.Cast, DType: dt, Args: []*kir.Expr{apply(tile.Add, tile.Float32, acc(tile.Float32), g.expr(tile.Float32, 2, false, true))}}
	}
	if g.pick(4) == 0 && bodyDT == tile.Float32 {
		// A product of two loads: the matrix-product executor's shape.
		fl := g.buffers(func(d tile.DType) bool { return d == tile.Float32 })
		if len(fl) > 0 {
			k.Body = apply(tile.Mul, tile.Float32, g.load(fl[g.pick(len(fl))], true, true), g.load(fl[g.pick(len(fl))], true, true))
		}
	}
	if k.Body == nil {
		k.Body = g.expr(bodyDT, 3, true, false)
	}
	k.Out = g.b.buf(kir.Output, fmt.Sprintf("out%d", len(g.b.p.Buffers)), dt, k.Shape)
	g.b.kernel(k)
	// Later kernels may read this one's result.
	g.b.p.Buffers[k.Out].Kind = kir.Output
}

// randomStream selects the family of random programs (TARTAN_CPU_STREAM
// overrides it, to search further).
var randomStream = uint64(99)

// TestRandomPrograms compares random programs with kir.Interpret. Set
// TARTAN_CPU_RANDOM to run more of them.
func TestRandomPrograms(t *testing.T) {
	n := 300
	if m := getenv("TARTAN_CPU_RANDOM"); m != "" {
		fmt.Sscan(m, &n)
	}
	if s := getenv("TARTAN_CPU_STREAM"); s != "" {
		fmt.Sscan(s, &randomStream)
	}
	if testing.Short() {
		n = 60
	}
	d := New(Workers(2), Cache(false))
	defer d.Close()
	for i := range n {
		g := &progGen{rng: rand.New(rand.NewPCG(uint64(i), randomStream))}
		p := g.program(fmt.Sprintf("random%d", i))
		t.Run(p.Name, func(t *testing.T) {
			checkProgram(t, d, p, 1, uint64(i))
			if t.Failed() {
				t.Log(p.String())
			}
		})
	}
}
