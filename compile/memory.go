package compile

import (
	"fmt"
	"sort"

	"github.com/tartanml/tartan/kir"
	"github.com/tartanml/tartan/tile"
)

// memReport describes the slot plan for TARTAN_DEBUG=memory.
type memReport struct {
	lines     []string
	tempBytes int // bytes of the slots shared by temporaries
	totalByte int // bytes of all slots
}

// planMemory is pass 6. It creates the buffers: inputs, variables, the
// constants kernels read, then one per kernel result in kernel order (a
// result written in place of a variable uses the variable's buffer; a graph
// output gets an Output buffer, anything else a Temp). It rewrites the
// kernels from values to buffers and assigns slots: every non-temporary has
// its own; a temporary lives from the kernel that writes it to the last
// kernel that reads it, and takes a free slot (one whose last occupant's life
// ended before this one starts), the smallest that is large enough or else
// the largest, grown to fit, or else a new slot. Slot size is the largest
// occupant's byte size.
func (p *plan) planMemory() (*kir.Program, *memReport, error) {
	prog := &kir.Program{Name: p.g.name}
	bufOf := map[int]int{}
	add := func(b *kir.Buffer) int {
		b.ID = len(prog.Buffers)
		prog.Buffers = append(prog.Buffers, b)
		return b.ID
	}
	recs, err := p.recurrenceBuffers(add, bufOf)
	if err != nil {
		return nil, nil, err
	}
	for _, n := range p.g.inputs {
		id := add(&kir.Buffer{Name: leafName(n), Kind: kir.Input, DType: n.dtype, Shape: n.shape.Clone()})
		bufOf[n.id] = id
		prog.Inputs = append(prog.Inputs, kir.Binding{Name: leafName(n), Buffer: id})
	}
	for _, n := range p.g.vars {
		id := add(&kir.Buffer{Name: leafName(n), Kind: kir.Variable, DType: n.dtype, Shape: n.shape.Clone()})
		bufOf[n.id] = id
		prog.Variables = append(prog.Variables, kir.Binding{Name: leafName(n), Buffer: id})
	}
	read := map[int]bool{}
	for _, k := range p.kerns {
		for v := range k.readSet() {
			read[v] = true
		}
	}
	for _, n := range p.g.nodes {
		if c, ok := n.op.(*tile.ConstantOp); ok && p.f.nests[n.id] == nil && read[n.id] {
			bufOf[n.id] = add(&kir.Buffer{Kind: kir.Constant, DType: n.dtype, Shape: n.shape.Clone(),
				Init: append([]float64(nil), c.Value.Data...)})
		}
	}
	outName := map[int]string{}
	for i, o := range p.g.outputs {
		if _, ok := outName[p.outVal[i]]; !ok {
			outName[p.outVal[i]] = o.name
		}
	}
	for _, k := range p.kerns {
		if v, ok := p.alias[k.value]; ok {
			bufOf[k.value] = bufOf[v]
			continue
		}
		if _, ok := bufOf[k.value]; ok {
			continue // a recurrence's next states or initial state
		}
		b := &kir.Buffer{Kind: kir.Temp, DType: p.dtype[k.value], Shape: p.shape[k.value].Clone()}
		if name, ok := outName[k.value]; ok {
			b.Kind, b.Name = kir.Output, name
		}
		bufOf[k.value] = add(b)
	}
	for i, o := range p.g.outputs {
		prog.Outputs = append(prog.Outputs, kir.Binding{Name: o.name, Buffer: bufOf[p.outVal[i]]})
	}
	for i, k := range p.kerns {
		kk := *k.k
		kk.Out = bufOf[k.value]
		kk.Name = kernelName(i, k, p)
		kk.Body = remapExpr(kk.Body, bufOf)
		kk.Epilogue = remapExpr(kk.Epilogue, bufOf)
		kk.Where = nil
		for _, c := range k.k.Where {
			kk.Where = append(kk.Where, kir.Cond{X: remapIx(c.X, bufOf), Bound: c.Bound})
		}
		prog.Kernels = append(prog.Kernels, &kk)
		for _, r := range recs {
			if r.initK == k.k {
				r.initK = &kk
			}
		}
	}
	if err := planLoops(prog, recs); err != nil {
		return nil, nil, fmt.Errorf("compile: graph %q: %w", p.g.name, err)
	}
	rep := assignSlots(prog)
	return prog, rep, nil
}

func kernelName(i int, k *kern, p *plan) string {
	kind := "copy"
	if !k.copy && k.value < len(p.g.nodes) {
		n := p.g.nodes[k.value]
		kind = kindOf(n.op)
		if h := p.f.hosted[n.id]; h >= 0 {
			kind = kindOf(p.g.nodes[h].op) + "_" + kind
		}
	}
	return fmt.Sprintf("k%d_%s", i, kind)
}

// remapExpr returns a copy of e with loads renamed from values to buffers.
func remapExpr(e *kir.Expr, bufOf map[int]int) *kir.Expr {
	if e == nil {
		return nil
	}
	out := *e
	if e.Op == kir.Load {
		out.Buf = bufOf[e.Buf]
	}
	out.Args = nil
	for _, a := range e.Args {
		out.Args = append(out.Args, remapExpr(a, bufOf))
	}
	out.Index = nil
	for _, x := range e.Index {
		out.Index = append(out.Index, remapIx(x, bufOf))
	}
	return &out
}

func remapIx(x *kir.Ix, bufOf map[int]int) *kir.Ix {
	if x == nil {
		return nil
	}
	out := *x
	out.A = remapIx(x.A, bufOf)
	out.B = remapIx(x.B, bufOf)
	if x.E != nil {
		out.E = remapExpr(x.E, bufOf)
	}
	return &out
}

func assignSlots(prog *kir.Program) *memReport {
	rep := &memReport{}
	// A view's use is a use of its storage, and a use inside a loop lasts
	// from the loop's first kernel to its last.
	first := map[int]int{}
	last := map[int]int{}
	root := func(b int) int {
		if v := prog.Buffers[b].View; v != nil {
			return v.Of
		}
		return b
	}
	for i, k := range prog.Kernels {
		lo, hi := i, i
		if l := prog.LoopOf(i); l >= 0 {
			lo, hi = prog.Loops[l].First, prog.Loops[l].End-1
		}
		out := root(k.Out)
		if f, ok := first[out]; !ok || lo < f {
			first[out] = lo
		}
		last[out] = max(last[out], hi)
		for b := range readSet(k) {
			last[root(b)] = max(last[root(b)], hi)
		}
	}
	bytes := func(b *kir.Buffer) int { return b.Size() * b.DType.Size() }
	var temps []*kir.Buffer
	for _, b := range prog.Buffers {
		if b.View != nil {
			continue // placed in its storage's slot below
		}
		if b.Kind == kir.Temp {
			temps = append(temps, b)
			continue
		}
		b.Slot = prog.Slots
		prog.Slots++
		prog.SlotBytes = append(prog.SlotBytes, bytes(b))
	}
	sort.SliceStable(temps, func(i, j int) bool { return first[temps[i].ID] < first[temps[j].ID] })
	type slot struct {
		id, end int
	}
	var active []slot // temporary slots and the last kernel of their occupant
	for _, b := range temps {
		start, need := first[b.ID], bytes(b)
		best := -1
		for i, s := range active {
			if s.end >= start {
				continue
			}
			have := prog.SlotBytes[s.id]
			if best < 0 {
				best = i
				continue
			}
			cur := prog.SlotBytes[active[best].id]
			switch {
			case have >= need && (cur < need || have < cur):
				best = i
			case cur < need && have > cur:
				best = i
			}
		}
		if best < 0 {
			active = append(active, slot{id: prog.Slots, end: -1})
			prog.Slots++
			prog.SlotBytes = append(prog.SlotBytes, 0)
			best = len(active) - 1
		}
		s := &active[best]
		b.Slot = s.id
		s.end = last[b.ID]
		prog.SlotBytes[s.id] = max(prog.SlotBytes[s.id], need)
		rep.lines = append(rep.lines, fmt.Sprintf("b%d temp %s%v %d bytes, kernels %d..%d: slot %d",
			b.ID, b.DType, b.Shape, need, start, last[b.ID], s.id))
	}
	for _, b := range prog.Buffers {
		if b.View != nil {
			b.Slot = prog.Buffers[b.View.Of].Slot
		}
	}
	for _, s := range active {
		rep.tempBytes += prog.SlotBytes[s.id]
	}
	for _, n := range prog.SlotBytes {
		rep.totalByte += n
	}
	return rep
}
