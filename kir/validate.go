package kir

import (
	"fmt"
	"slices"

	"github.com/tartanml/tartan/tile"
)

// Validate checks that p is well formed, and returns an error naming the
// first buffer, binding or kernel at fault. A well-formed program satisfies:
//
//   - Buffers[i].ID == i; every buffer has a valid kind and dtype, a shape
//     without negative dimensions, and a slot below Slots whose SlotBytes
//     hold it; a Constant buffer's Init has one element per element of its
//     shape; only Temp buffers share slots.
//   - Inputs bind Input buffers and Variables bind Variable buffers, each
//     name once; Outputs bind Output, Input or Variable buffers.
//   - Every kernel writes a Temp, Output or Variable buffer whose size is
//     that of the kernel's Shape (the points of Shape, in row-major order,
//     are the buffer's elements in order: a loop space may leave out the
//     output's dimensions of extent 1); its Agg is valid, and tile.Assign when there are no
//     Reduce loops; Body is set and, like Epilogue, has the output buffer's
//     dtype (Epilogue's when present, else Body's).
//   - Expressions are well formed: a Load names a buffer, has one index per
//     dimension and that buffer's dtype; Apply has as many arguments as its
//     function takes; Cast one argument; IndexValue one index; Random one
//     (seed) argument, one (position) index and a float dtype; Acc appears
//     only in an Epilogue.
//   - Index expressions use only the kernel's loop variables (only output
//     loops in an Epilogue), and floor division and modulo only by positive
//     constants.
//   - A "gemm" schedule has a GEMMView whose A and B are the two arguments of
//     Body, a Mul; A reads no N loop and B no M loop; CondA and CondB list
//     every Where condition once, each with an operand whose groups hold
//     every loop it reads; an operand that may leave its buffer is guarded
//     and, when a Fill load, filled with 0 (see GEMMView.Complete).
//   - A "scatter" schedule has a ScatterView whose dense meaning (see
//     ScatterView) is exactly the kernel's Body, Reduce loops and Agg, with
//     no Where conditions and no Epilogue.
//
// Programs from package compile also keep these guarantees, which Validate
// cannot check statically but InterpretStrict checks while running:
//
//   - A Skip load in a Body is in range at every point where all the Where
//     conditions hold, so a backend may read it unchecked once the
//     conditions pass; loads inside Where conditions and Epilogues are always
//     in range or Fill. Out-of-range reads of a contraction appear as Where
//     conditions, padding and gathers as Fill loads.
//   - A kernel reads its own output buffer only in place of a variable
//     update, only at the point being written (index x0, x1, …), and only when
//     it has no Reduce loops; every other read of a variable's old value is
//     ordered before the kernel that overwrites it.
//   - Index expressions are in the normal form described at Simplify.
//   - Reduction loops are never empty (Lo ≤ Hi): a contraction with an empty
//     index space compiles to a kernel without reduction loops whose Body is
//     the constant 0.
//   - Every kernel writes every element of its output buffer.
//   - In a "gemm" kernel Batch, M and N partition the output loops and K
//     holds the reduction loops; every reduction loop of more than one point
//     is read by both operands.
//   - A "reduce" kernel has fewer than two output points per worker and a
//     large reduction with an associative aggregation (not tile.Assign): a
//     backend may split its reduction loops across workers and combine, with
//     Agg, the partial results that received at least one contribution (an
//     empty part is not a 0) before applying the Epilogue.
//   - Kernels appear in an order that respects every data dependence, and
//     a kernel that writes a variable's buffer runs after every kernel that
//     reads the variable's old value.
func (p *Program) Validate() error {
	if p == nil {
		return fmt.Errorf("kir: nil program")
	}
	if len(p.SlotBytes) != p.Slots {
		return fmt.Errorf("kir: program %q has %d slots but %d slot sizes", p.Name, p.Slots, len(p.SlotBytes))
	}
	owner := make([]int, p.Slots)
	for i := range owner {
		owner[i] = -1
	}
	for i, b := range p.Buffers {
		if b == nil {
			return fmt.Errorf("kir: program %q: buffer %d is nil", p.Name, i)
		}
		if b.ID != i {
			return fmt.Errorf("kir: program %q: buffer at position %d has ID %d", p.Name, i, b.ID)
		}
		if b.Kind > Constant || !b.DType.Valid() {
			return fmt.Errorf("kir: program %q: buffer b%d has invalid kind %d or dtype %v", p.Name, i, b.Kind, b.DType)
		}
		for _, d := range b.Shape {
			if d < 0 {
				return fmt.Errorf("kir: program %q: buffer b%d has negative shape %v", p.Name, i, b.Shape)
			}
		}
		if b.Kind == Constant && len(b.Init) != b.Size() {
			return fmt.Errorf("kir: program %q: constant buffer b%d%v has %d initial elements", p.Name, i, b.Shape, len(b.Init))
		}
		if b.Slot < 0 || b.Slot >= p.Slots {
			return fmt.Errorf("kir: program %q: buffer b%d is in slot %d of %d", p.Name, i, b.Slot, p.Slots)
		}
		if need := b.Size() * b.DType.Size(); need > p.SlotBytes[b.Slot] {
			return fmt.Errorf("kir: program %q: buffer b%d needs %d bytes but slot %d has %d", p.Name, i, need, b.Slot, p.SlotBytes[b.Slot])
		}
		switch o := owner[b.Slot]; {
		case b.View != nil:
		case o < 0:
			owner[b.Slot] = i
		case b.Kind != Temp || p.Buffers[o].Kind != Temp:
			return fmt.Errorf("kir: program %q: buffers b%d (%s) and b%d (%s) share slot %d, but only temporaries may", p.Name, o, p.Buffers[o].Kind, i, b.Kind, b.Slot)
		}
	}
	if err := p.validateViews(); err != nil {
		return err
	}
	check := func(what string, bs []Binding, kinds ...BufKind) error {
		seen := map[string]bool{}
		for _, x := range bs {
			if x.Buffer < 0 || x.Buffer >= len(p.Buffers) {
				return fmt.Errorf("kir: program %q: %s %q binds missing buffer %d", p.Name, what, x.Name, x.Buffer)
			}
			if seen[x.Name] {
				return fmt.Errorf("kir: program %q: %s %q is bound twice", p.Name, what, x.Name)
			}
			seen[x.Name] = true
			ok := false
			for _, k := range kinds {
				ok = ok || p.Buffers[x.Buffer].Kind == k
			}
			if !ok {
				return fmt.Errorf("kir: program %q: %s %q binds b%d, a %s buffer", p.Name, what, x.Name, x.Buffer, p.Buffers[x.Buffer].Kind)
			}
		}
		return nil
	}
	if err := check("input", p.Inputs, Input); err != nil {
		return err
	}
	if err := check("variable", p.Variables, Variable); err != nil {
		return err
	}
	if err := check("output", p.Outputs, Output, Input, Variable); err != nil {
		return err
	}
	for i, k := range p.Kernels {
		if k == nil {
			return fmt.Errorf("kir: program %q: kernel %d is nil", p.Name, i)
		}
		if err := k.validate(p); err != nil {
			return fmt.Errorf("kir: program %q: kernel %d (%s): %w", p.Name, i, k.Name, err)
		}
	}
	return nil
}

func (k *Kernel) validate(p *Program) error {
	if k.Out < 0 || k.Out >= len(p.Buffers) {
		return fmt.Errorf("writes missing buffer %d", k.Out)
	}
	out := p.Buffers[k.Out]
	if out.Kind == Input || out.Kind == Constant {
		return fmt.Errorf("writes b%d, a %s buffer", k.Out, out.Kind)
	}
	if k.Shape.Size() != out.Size() {
		return fmt.Errorf("loop space %v has another size than its output b%d%v", k.Shape, k.Out, out.Shape)
	}
	if k.Agg == tile.AggInvalid || k.Agg > tile.Assign {
		return fmt.Errorf("invalid aggregation %d", k.Agg)
	}
	if len(k.Reduce) == 0 && k.Agg != tile.Assign {
		return fmt.Errorf("aggregation %v without reduction loops (want =)", k.Agg)
	}
	if k.Body == nil {
		return fmt.Errorf("has no body")
	}
	nv := k.NumVars()
	v := validator{p: p, nvars: nv}
	for _, c := range k.Where {
		if err := v.ix(c.X); err != nil {
			return fmt.Errorf("where condition: %w", err)
		}
	}
	if err := v.expr(k.Body); err != nil {
		return fmt.Errorf("body: %w", err)
	}
	res := k.Body
	if k.Epilogue != nil {
		ev := validator{p: p, nvars: len(k.Shape), acc: true}
		if err := ev.expr(k.Epilogue); err != nil {
			return fmt.Errorf("epilogue: %w", err)
		}
		res = k.Epilogue
	}
	if res.DType != out.DType {
		return fmt.Errorf("computes %v values for the %v buffer b%d", res.DType, out.DType, k.Out)
	}
	s := &k.Schedule
	if t := s.Tiling; t != nil && (s.Strategy != "gemm" || t.BM <= 0 || t.BN <= 0 || t.BK <= 0 || t.Parts < 0) {
		return fmt.Errorf("tiling %s on a %q schedule: want a gemm schedule and positive sizes", t, s.Strategy)
	}
	switch s.Strategy {
	case "", "loops", "reduce":
	case "gemm":
		g := s.GEMM
		if g == nil || k.Body.Op != Apply || k.Body.Fn != tile.Mul || len(k.Body.Args) != 2 ||
			g.A != k.Body.Args[0] && g.A != k.Body.Args[1] || g.B != k.Body.Args[0] && g.B != k.Body.Args[1] || g.A == g.B {
			return fmt.Errorf("gemm schedule without a matching GEMMView")
		}
		for _, group := range [][]int{g.Batch, g.M, g.N, g.K} {
			for _, x := range group {
				if x < 0 || x >= nv {
					return fmt.Errorf("gemm view names loop variable %d of %d", x, nv)
				}
			}
		}
		want := *g
		if why := want.Complete(v.p, k); why != "" {
			return fmt.Errorf("gemm view: %s", why)
		}
		seen := make([]int, len(k.Where))
		for i, list := range [][]int{g.CondA, g.CondB} {
			for _, c := range list {
				if c < 0 || c >= len(k.Where) || seen[c] != 0 {
					return fmt.Errorf("gemm view names condition %d twice or of %d", c, len(k.Where))
				}
				set := map[int]bool{}
				IxVars(k.Where[c].X, set)
				if readsAny(set, [][]int{g.N, g.M}[i]) {
					return fmt.Errorf("gemm view gives condition %d to the wrong operand", c)
				}
				seen[c]++
			}
		}
		switch {
		case slices.Contains(seen, 0):
			return fmt.Errorf("gemm view gives condition %d to neither operand", slices.Index(seen, 0))
		case want.GuardA && !g.GuardA || want.GuardB && !g.GuardB:
			return fmt.Errorf("gemm view reads an operand unchecked that may leave its buffer")
		}
	case "scatter":
		if err := v.scatter(k); err != nil {
			return fmt.Errorf("scatter schedule: %w", err)
		}
	default:
		return fmt.Errorf("unknown strategy %q", s.Strategy)
	}
	return nil
}

type validator struct {
	p     *Program
	nvars int
	acc   bool // Acc allowed
}

func (v validator) ix(x *Ix) error {
	if x == nil {
		return fmt.Errorf("nil index expression")
	}
	switch x.Op {
	case IxConst:
	case IxVar:
		if x.Var < 0 || x.Var >= v.nvars {
			return fmt.Errorf("loop variable %d out of %d", x.Var, v.nvars)
		}
	case IxAdd:
		if err := v.ix(x.A); err != nil {
			return err
		}
		return v.ix(x.B)
	case IxMul:
		return v.ix(x.A)
	case IxFloorDiv, IxMod:
		if x.C <= 0 {
			return fmt.Errorf("division or modulo by %d", x.C)
		}
		return v.ix(x.A)
	case IxValue:
		if x.E == nil {
			return fmt.Errorf("index value without expression")
		}
		if !x.E.DType.Valid() {
			return fmt.Errorf("index value of invalid dtype")
		}
		inner := v
		inner.acc = false
		return inner.expr(x.E)
	default:
		return fmt.Errorf("unknown index op %d", x.Op)
	}
	return nil
}

func (v validator) expr(e *Expr) error {
	if e == nil {
		return fmt.Errorf("nil expression")
	}
	if !e.DType.Valid() {
		return fmt.Errorf("expression of invalid dtype %v", e.DType)
	}
	switch e.Op {
	case Load:
		if e.Buf < 0 || e.Buf >= len(v.p.Buffers) {
			return fmt.Errorf("load from missing buffer %d", e.Buf)
		}
		b := v.p.Buffers[e.Buf]
		if len(e.Index) != len(b.Shape) {
			return fmt.Errorf("load from b%d%v with %d indices", e.Buf, b.Shape, len(e.Index))
		}
		if e.DType != b.DType {
			return fmt.Errorf("load of %v from the %v buffer b%d", e.DType, b.DType, e.Buf)
		}
		if e.OOB > Fill {
			return fmt.Errorf("load with invalid out-of-range policy %d", e.OOB)
		}
		for _, x := range e.Index {
			if err := v.ix(x); err != nil {
				return err
			}
		}
	case Const:
	case Apply:
		if e.Fn.Arity() == 0 || e.Fn.Arity() != len(e.Args) {
			return fmt.Errorf("%v applied to %d arguments", e.Fn, len(e.Args))
		}
	case Cast:
		if len(e.Args) != 1 {
			return fmt.Errorf("cast of %d arguments", len(e.Args))
		}
	case IndexValue:
		if len(e.Index) != 1 {
			return fmt.Errorf("index value with %d indices", len(e.Index))
		}
		return v.ix(e.Index[0])
	case Random:
		if len(e.Args) != 1 || len(e.Index) != 1 || !e.DType.IsFloat() {
			return fmt.Errorf("random needs one seed, one position and a float dtype")
		}
		if err := v.ix(e.Index[0]); err != nil {
			return err
		}
	case Acc:
		if !v.acc {
			return fmt.Errorf("acc outside an epilogue")
		}
	default:
		return fmt.Errorf("unknown expression op %d", e.Op)
	}
	for _, a := range e.Args {
		if err := v.expr(a); err != nil {
			return err
		}
	}
	return nil
}

// validateViews checks the loops and the views: loops in kernel order,
// neither empty nor overlapping; views that are Temp buffers inside a
// non-view buffer of the same dtype and slot, moving ones used only in loops, inside their storage at every step a kernel reading or
// writing them can run at.
func (p *Program) validateViews() error {
	end := 0
	for i, l := range p.Loops {
		if l.First < end || l.End <= l.First || l.End > len(p.Kernels) || l.Steps < 1 {
			return fmt.Errorf("kir: program %q: loop %d (kernels %d to %d, %d steps) is empty, out of order or out of range", p.Name, i, l.First, l.End, l.Steps)
		}
		end = l.End
	}
	steps := make([]int, len(p.Buffers)) // the most steps of a loop using each buffer
	for i, k := range p.Kernels {
		n := 1
		if l := p.LoopOf(i); l >= 0 {
			n = p.Loops[l].Steps
		} else {
			n = 0
		}
		for _, b := range k.Buffers() {
			if b >= 0 && b < len(steps) {
				steps[b] = max(steps[b], n)
			}
		}
	}
	for i, b := range p.Buffers {
		v := b.View
		if v == nil {
			continue
		}
		if v.Of < 0 || v.Of >= len(p.Buffers) || v.Of == i {
			return fmt.Errorf("kir: program %q: buffer b%d is a view of missing buffer %d", p.Name, i, v.Of)
		}
		of := p.Buffers[v.Of]
		if b.Kind != Temp || of.View != nil || of.DType != b.DType || of.Slot != b.Slot {
			return fmt.Errorf("kir: program %q: view b%d (%s %s slot %d) must be a temporary in the slot and of the dtype of a buffer that is not a view, not b%d (%s %s slot %d)",
				p.Name, i, b.Kind, b.DType, b.Slot, v.Of, of.Kind, of.DType, of.Slot)
		}
		if v.Stride != 0 {
			for k, kr := range p.Kernels {
				if p.LoopOf(k) < 0 && slicesContains(kr.Buffers(), i) {
					return fmt.Errorf("kir: program %q: kernel %d (%s) outside every loop uses view b%d, which moves with the step", p.Name, k, kr.Name, i)
				}
			}
		}
		for _, s := range []int{0, max(steps[i]-1, 0)} {
			if lo := b.Base(s); lo < 0 || lo+b.Size() > of.Size() {
				return fmt.Errorf("kir: program %q: view b%d%v at step %d starts at element %d of b%d%v, out of range", p.Name, i, b.Shape, s, lo, v.Of, of.Shape)
			}
		}
	}
	return nil
}

func slicesContains(xs []int, x int) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}
