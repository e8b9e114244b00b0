package compile

import (
	"github.com/tartanml/tartan/kir"
	"github.com/tartanml/tartan/tile"
)

// squeeze drops the loops of one point from a kernel before it is
// scheduled: output loops of extent 1 (a depthwise convolution's channel
// multiplier, keep-dims reductions, statistics shaped [1, 1, 1, C]) and
// reduction loops whose range is one value. Their variables become the
// constants they always equal, and the output loop space keeps its
// row-major order, so the kernel writes the same elements in the same
// layout (kir allows a loop space of other dimensions than its output when
// the sizes agree). What it gains is that the innermost loop, along which
// every backend vectorises and which the matrix-product view reads, is a
// real one: a depthwise convolution's innermost output loop had extent 1.
//
// Kernels whose indexed view (kir.ScatterOf) reads the loop variables
// directly keep their loops.
func squeeze(prog *kir.Program, k *kir.Kernel) bool {
	nout := len(k.Shape)
	drop := 0
	for _, n := range k.Shape {
		if n == 1 {
			drop++
		}
	}
	for _, l := range k.Reduce {
		if l.Lo == l.Hi {
			drop++
		}
	}
	if drop == 0 || kir.ScatterOf(prog, k) != nil {
		return false
	}
	vals := make([]*kir.Ix, k.NumVars())
	var shape tile.Shape
	for d, n := range k.Shape {
		if n == 1 {
			vals[d] = kir.IxOfConst(0)
			continue
		}
		vals[d] = kir.IxOfVar(len(shape))
		shape = append(shape, n)
	}
	var reduce []kir.Loop
	for j, l := range k.Reduce {
		// The last loop of a reduction of one point stays, so that its
		// aggregation (and skipping) keeps its meaning.
		last := j == len(k.Reduce)-1 && len(reduce) == 0
		if l.Lo == l.Hi && !last {
			vals[nout+j] = kir.IxOfConst(l.Lo)
			continue
		}
		vals[nout+j] = kir.IxOfVar(len(shape) + len(reduce))
		reduce = append(reduce, l)
	}
	if len(shape) == nout && len(reduce) == len(k.Reduce) {
		return false
	}
	if shape == nil {
		shape = tile.Shape{}
	}
	nk := kir.Kernel{Shape: shape, Reduce: reduce}
	s := &substituter{vals: vals, vars: nk.VarRanges(), done: map[*kir.Expr]*kir.Expr{}}
	k.Shape, k.Reduce = shape, reduce
	for i := range k.Where {
		k.Where[i].X = s.ix(k.Where[i].X)
	}
	k.Body = s.expr(k.Body)
	if k.Epilogue != nil {
		k.Epilogue = s.expr(k.Epilogue)
	}
	return true
}

// substituter rewrites expressions with loop variable v replaced by
// vals[v], including inside gathered index values, sharing the rewrite of
// shared subexpressions.
type substituter struct {
	vals []*kir.Ix
	vars []kir.Range
	done map[*kir.Expr]*kir.Expr
}

func (s *substituter) expr(e *kir.Expr) *kir.Expr {
	if e == nil {
		return nil
	}
	if r, ok := s.done[e]; ok {
		return r
	}
	c := *e
	if e.Args != nil {
		c.Args = make([]*kir.Expr, len(e.Args))
		for i, a := range e.Args {
			c.Args[i] = s.expr(a)
		}
	}
	if e.Index != nil {
		c.Index = make([]*kir.Ix, len(e.Index))
		for i, x := range e.Index {
			c.Index[i] = s.ix(x)
		}
	}
	s.done[e] = &c
	return &c
}

func (s *substituter) ix(x *kir.Ix) *kir.Ix {
	var sub func(x *kir.Ix) *kir.Ix
	sub = func(x *kir.Ix) *kir.Ix {
		if x == nil {
			return nil
		}
		switch x.Op {
		case kir.IxVar:
			return s.vals[x.Var]
		case kir.IxAdd:
			return kir.IxSum(sub(x.A), sub(x.B))
		case kir.IxMul, kir.IxFloorDiv, kir.IxMod:
			return &kir.Ix{Op: x.Op, A: sub(x.A), C: x.C}
		case kir.IxValue:
			return kir.IxOfValue(s.expr(x.E))
		}
		return x
	}
	return kir.Simplify(sub(x), s.vars)
}
