package kir

import (
	"fmt"
	"math"

	"github.com/tartanml/tartan/tile"
)

// Interpret runs p once, plainly, in float64: the executable meaning of a
// Program, against which the compiler is tested independently of the fast
// backends. bufs holds one slice per buffer, indexed by buffer ID, with one
// float64 per element (integers and booleans as their values):
//
//   - Input buffers must be given;
//   - Variable buffers are read and updated in place (nil means zeros);
//   - Output buffers are allocated when nil and hold the results afterwards;
//   - Constant buffers are (re)filled from Init;
//   - Temp buffers are always replaced by views of one storage area per slot,
//     so temporaries that share a slot really share memory and a wrong memory
//     plan shows up as wrong results.
//
// Kernels run in order, each visiting its output points in row-major order
// and storing every point as soon as it is computed, so a wrongly in-place
// kernel reads values it has already overwritten. Every expression node's
// value is rounded to the node's dtype (tile.RoundTo), aggregation runs in
// float64, and the stored value is rounded to the buffer's dtype, as the
// reference executor rounds after every node. Elementwise functions and Max
// and Min aggregation follow the reference executor: NaN propagates through
// max and min, integer division truncates and yields 0 for a zero divisor.
func Interpret(p *Program, bufs [][]float64) error { return interpret(p, bufs, false) }

// InterpretStrict is Interpret that also checks the guarantees package
// compile gives beyond the IR's meaning (see Program.Validate): it fails if
// a Skip load is out of range at a point whose Where conditions hold, or if a
// load in a Where condition or an Epilogue is out of range without Fill.
func InterpretStrict(p *Program, bufs [][]float64) error { return interpret(p, bufs, true) }

func interpret(p *Program, bufs [][]float64, strict bool) error {
	if err := p.Validate(); err != nil {
		return err
	}
	if len(bufs) != len(p.Buffers) {
		return fmt.Errorf("kir: interpret %q: %d buffers given for %d", p.Name, len(bufs), len(p.Buffers))
	}
	slotElems := make([]int, p.Slots)
	for _, b := range p.Buffers {
		if b.Kind == Temp && b.View == nil {
			slotElems[b.Slot] = max(slotElems[b.Slot], b.Size())
		}
	}
	slots := make([][]float64, p.Slots)
	for i, n := range slotElems {
		if n > 0 {
			slots[i] = make([]float64, n)
		}
	}
	for i, b := range p.Buffers {
		switch b.Kind {
		case Temp:
			if b.View == nil {
				bufs[i] = slots[b.Slot][:b.Size():b.Size()]
			}
			continue
		case Constant:
			bufs[i] = make([]float64, b.Size())
			copy(bufs[i], b.Init)
			continue
		case Input:
			if bufs[i] == nil && b.Size() > 0 {
				return fmt.Errorf("kir: interpret %q: input buffer b%d %q is not given", p.Name, i, b.Name)
			}
		case Variable, Output:
			if bufs[i] == nil || b.Size() == 0 {
				bufs[i] = make([]float64, b.Size())
			}
		}
		if len(bufs[i]) != b.Size() {
			return fmt.Errorf("kir: interpret %q: %s buffer b%d %q has %d elements, want %d (%s%v)",
				p.Name, b.Kind, i, b.Name, len(bufs[i]), b.Size(), b.DType, b.Shape)
		}
	}
	place := func(s int) {
		for i, b := range p.Buffers {
			if b.View != nil {
				lo := b.Base(s)
				bufs[i] = bufs[b.View.Of][lo : lo+b.Size() : lo+b.Size()]
			}
		}
	}
	place(0)
	run := func(k *Kernel) error {
		r := &runner{p: p, k: k, bufs: bufs, strict: strict}
		if err := r.run(); err != nil {
			return fmt.Errorf("kir: interpret %q: kernel %s: %w", p.Name, k.Name, err)
		}
		return nil
	}
	for i := 0; i < len(p.Kernels); i++ {
		l := p.LoopOf(i)
		if l < 0 {
			if err := run(p.Kernels[i]); err != nil {
				return err
			}
			continue
		}
		lp := p.Loops[l]
		for it := range lp.Steps {
			place(lp.Step(it))
			for _, k := range p.Kernels[lp.First:lp.End] {
				if err := run(k); err != nil {
					return fmt.Errorf("%w (step %d)", err, lp.Step(it))
				}
			}
		}
		place(0)
		i = lp.End - 1
	}
	return nil
}

type runner struct {
	p      *Program
	k      *Kernel
	bufs   [][]float64
	strict bool
	vars   []int
	acc    float64
	skip   bool   // a Skip load was out of range at this point
	where  string // what is being evaluated, for strict errors
	err    error
}

func (r *runner) run() error {
	k := r.k
	nout := len(k.Shape)
	r.vars = make([]int, k.NumVars())
	out := r.bufs[k.Out]
	dt := r.p.Buffers[k.Out].DType
	total := k.Shape.Size()
	for pos := range total {
		// Row-major coordinates of pos.
		rem := pos
		for d := nout - 1; d >= 0; d-- {
			r.vars[d] = rem % k.Shape[d]
			rem /= k.Shape[d]
		}
		acc, first := 0.0, true
		r.reduce(0, func() {
			r.where = "where"
			for _, c := range k.Where {
				x := r.ix(c.X)
				if r.err != nil || r.skip || x < 0 || x >= c.Bound {
					r.skip = false
					return
				}
			}
			r.where = "body"
			v := r.eval(k.Body)
			if r.skip {
				if r.strict && r.err == nil {
					r.err = fmt.Errorf("a Skip load is out of range at %v where every condition holds", r.vars)
				}
				r.skip = false
				return
			}
			if first {
				acc, first = v, false
				return
			}
			acc = aggregate(k.Agg, acc, v)
		})
		if r.err != nil {
			return r.err
		}
		res := acc
		if k.Epilogue != nil {
			r.acc = acc
			r.where = "epilogue"
			res = r.eval(k.Epilogue)
			if r.skip && r.err == nil {
				r.err = fmt.Errorf("an epilogue load is out of range at %v", r.vars[:nout])
			}
			if r.err != nil {
				return r.err
			}
		}
		out[pos] = tile.RoundTo(dt, res)
	}
	return nil
}

// reduce calls f at every point of the reduction loops from loop i inward.
func (r *runner) reduce(i int, f func()) {
	if i == len(r.k.Reduce) {
		f()
		return
	}
	l := r.k.Reduce[i]
	v := len(r.k.Shape) + i
	for x := l.Lo; x <= l.Hi && r.err == nil; x++ {
		r.vars[v] = x
		r.reduce(i+1, f)
	}
}

func aggregate(a tile.Agg, acc, v float64) float64 {
	switch a {
	case tile.Sum:
		return acc + v
	case tile.Prod:
		return acc * v
	case tile.Max:
		return nanMax(acc, v)
	case tile.Min:
		return nanMin(acc, v)
	}
	return v
}

func (r *runner) ix(x *Ix) int {
	return EvalIx(x, r.vars, func(e *Expr) int {
		v := r.eval(e)
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return math.MinInt32
		}
		return int(v)
	})
}

func (r *runner) eval(e *Expr) float64 {
	switch e.Op {
	case Load:
		b := r.p.Buffers[e.Buf]
		off := 0
		inRange := true
		for d, x := range e.Index {
			i := r.ix(x)
			if i < 0 || i >= b.Shape[d] {
				inRange = false
			}
			off = off*b.Shape[d] + i
		}
		if inRange {
			return r.bufs[e.Buf][off]
		}
		if e.OOB == Fill {
			return tile.RoundTo(e.DType, e.Value)
		}
		if r.strict && r.where != "body" && r.err == nil {
			r.err = fmt.Errorf("a Skip load of b%d in the %s is out of range at %v", e.Buf, r.where, r.vars)
		}
		r.skip = true
		return 0
	case Const:
		return tile.RoundTo(e.DType, e.Value)
	case Apply:
		var a, b, c float64
		a = r.eval(e.Args[0])
		if len(e.Args) > 1 {
			b = r.eval(e.Args[1])
		}
		if len(e.Args) > 2 {
			c = r.eval(e.Args[2])
		}
		isInt := e.Args[len(e.Args)-1].DType.IsInt()
		return tile.RoundTo(e.DType, apply(e.Fn, a, b, c, isInt))
	case Cast:
		return tile.RoundTo(e.DType, r.eval(e.Args[0]))
	case IndexValue:
		return tile.RoundTo(e.DType, float64(r.ix(e.Index[0])))
	case Random:
		seed := uint64(int64(r.eval(e.Args[0])))
		p := r.ix(e.Index[0])
		if p < 0 {
			p = 0
		}
		return tile.RoundTo(e.DType, tile.UniformAt(seed, e.Stream, p))
	case Acc:
		return tile.RoundTo(e.DType, r.acc)
	}
	return 0
}

// apply computes an elementwise function with the reference executor's
// semantics. isInt reports integer operands (for division).
func apply(f tile.Fn, a, b, c float64, isInt bool) float64 {
	switch f {
	case tile.Neg:
		return -a
	case tile.Abs:
		return math.Abs(a)
	case tile.Sign:
		switch {
		case a > 0:
			return 1
		case a < 0:
			return -1
		case math.IsNaN(a):
			return a
		}
		return 0
	case tile.Exp:
		return math.Exp(a)
	case tile.Log:
		return math.Log(a)
	case tile.Log1p:
		return math.Log1p(a)
	case tile.Sqrt:
		return math.Sqrt(a)
	case tile.Rsqrt:
		return 1 / math.Sqrt(a)
	case tile.Tanh:
		return math.Tanh(a)
	case tile.Sigmoid:
		return 1 / (1 + math.Exp(-a))
	case tile.Erf:
		return math.Erf(a)
	case tile.Floor:
		return math.Floor(a)
	case tile.Ceil:
		return math.Ceil(a)
	case tile.Recip:
		return 1 / a
	case tile.Not:
		return b2f(a == 0)
	case tile.Add:
		return a + b
	case tile.Sub:
		return a - b
	case tile.Mul:
		return a * b
	case tile.Div:
		switch {
		case !isInt:
			return a / b
		case b == 0:
			return 0
		}
		return math.Trunc(a / b)
	case tile.Pow:
		return math.Pow(a, b)
	case tile.Maximum:
		return nanMax(a, b)
	case tile.Minimum:
		return nanMin(a, b)
	case tile.Eq:
		return b2f(a == b)
	case tile.Ne:
		return b2f(a != b)
	case tile.Lt:
		return b2f(a < b)
	case tile.Le:
		return b2f(a <= b)
	case tile.Gt:
		return b2f(a > b)
	case tile.Ge:
		return b2f(a >= b)
	case tile.And:
		return b2f(a != 0 && b != 0)
	case tile.Or:
		return b2f(a != 0 || b != 0)
	case tile.Select:
		if a != 0 {
			return b
		}
		return c
	}
	return math.NaN()
}

func nanMax(a, b float64) float64 {
	if math.IsNaN(a) || math.IsNaN(b) {
		return math.NaN()
	}
	return math.Max(a, b)
}

func nanMin(a, b float64) float64 {
	if math.IsNaN(a) || math.IsNaN(b) {
		return math.NaN()
	}
	return math.Min(a, b)
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
