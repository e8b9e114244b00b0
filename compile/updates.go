package compile

import (
	"container/heap"
	"fmt"

	"github.com/tartanml/tartan/kir"
	"github.com/tartanml/tartan/tile"
)

// plan is the program under construction from pass 4 on. Values are what
// kernels read and write before buffers exist: value i < len(g.nodes) is
// node i's value, later ones are copies.
type plan struct {
	g      *graph
	f      *fusion
	kerns  []*kern
	dtype  []tile.DType
	shape  []tile.Shape
	alias  map[int]int // value → variable node whose buffer holds it
	outVal []int       // value of each graph output
	// inPlace and viaTemp name the variables updated each way, for
	// debugging output.
	inPlace, viaTemp []string
}

func newPlan(g *graph, f *fusion, ks []*kern) *plan {
	p := &plan{g: g, f: f, kerns: ks, alias: map[int]int{}}
	for _, n := range g.nodes {
		p.dtype = append(p.dtype, n.dtype)
		p.shape = append(p.shape, n.shape)
	}
	return p
}

func (p *plan) newValue(dt tile.DType, s tile.Shape) int {
	p.dtype = append(p.dtype, dt)
	p.shape = append(p.shape, s)
	return len(p.dtype) - 1
}

// copyKernel returns a kernel that copies node src (inline constants
// included) into a new value.
func (p *plan) copyKernel(src *node) *kern {
	v := p.newValue(src.dtype, src.shape)
	em := &emitter{f: p.f, vars: (&nest{shape: src.shape}).ranges(), accFor: -1, used: map[int]bool{}}
	body := em.expr(ref(src, identityIndex(len(src.shape))), nil, false)
	k := &kir.Kernel{Out: v, Shape: src.shape.Clone(), Agg: tile.Assign, Body: body,
		Source: "copy of " + describeSources([]*node{src})}
	return &kern{k: k, value: v, nodes: []*node{src}, order: src.id, copy: true}
}

// copyValue returns a kernel that copies value src into a new value.
func (p *plan) copyValue(src int, order int) *kern {
	v := p.newValue(p.dtype[src], p.shape[src])
	body := &kir.Expr{Op: kir.Load, DType: p.dtype[src], Buf: src, Index: identityIndex(len(p.shape[src]))}
	k := &kir.Kernel{Out: v, Shape: p.shape[src].Clone(), Agg: tile.Assign, Body: body}
	return &kern{k: k, value: v, order: order, copy: true}
}

// planOutputs gives every output a value: the node's own when it is computed
// or an input or a variable that no update replaces, else a copy (constants,
// and variables whose old value is returned while being updated).
func (p *plan) planOutputs() {
	updated := map[*node]bool{}
	for _, u := range p.g.updates {
		if u.x != u.v {
			updated[u.v] = true
		}
	}
	copies := map[*node]int{}
	for _, o := range p.g.outputs {
		n := o.n
		needCopy := false
		switch n.op.(type) {
		case *tile.ConstantOp, *tile.RecurrenceOp:
			needCopy = true
		case *tile.VariableOp:
			needCopy = updated[n]
		}
		needCopy = needCopy || p.isNext(n)
		if !needCopy {
			p.outVal = append(p.outVal, n.id)
			continue
		}
		if v, ok := copies[n]; ok {
			p.outVal = append(p.outVal, v)
			continue
		}
		k := p.copyKernel(n)
		k.k.Source = "output " + o.name + ": " + k.k.Source
		p.kerns = append(p.kerns, k)
		copies[n] = k.value
		p.outVal = append(p.outVal, k.value)
	}
}

// readSet returns the values the kernel loads, each with whether every load
// of it is at the output point. It is computed once.
func (k *kern) readSet() map[int]bool {
	if k.reads == nil {
		k.reads = readSet(k.k)
	}
	return k.reads
}

func readSet(k *kir.Kernel) map[int]bool {
	reads := map[int]bool{}
	var ix func(x *kir.Ix)
	var expr func(e *kir.Expr)
	ix = func(x *kir.Ix) {
		if x == nil {
			return
		}
		if x.Op == kir.IxValue {
			expr(x.E)
		}
		ix(x.A)
		ix(x.B)
	}
	expr = func(e *kir.Expr) {
		if e == nil {
			return
		}
		if e.Op == kir.Load {
			at, seen := reads[e.Buf]
			reads[e.Buf] = (!seen || at) && len(e.Index) == len(k.Shape) && isIdentity(e.Index)
		}
		for _, a := range e.Args {
			expr(a)
		}
		for _, x := range e.Index {
			ix(x)
		}
	}
	for _, c := range k.Where {
		ix(c.X)
	}
	expr(k.Body)
	expr(k.Epilogue)
	return reads
}

// planUpdates is pass 5. Each update v ← x is written by a kernel K: x's own
// kernel when x is computed and not already claimed by another update, else a
// kernel copying x. K writes v's buffer in place when
//
//   - K reads v's old value only at the point it writes, and has no
//     reduction loops if it reads v at all (a backend may then overwrite
//     element by element in any order), and
//   - every other kernel that reads v's old value can run before K: adding
//     those orderings to the data dependences leaves no cycle.
//
// Otherwise K writes a temporary (or its output buffer) and a copy into v
// runs after every other kernel. Swapping two variables (v1 ← v2, v2 ← v1)
// thus copies one of them through a temporary. Finally the kernels are
// ordered: data dependences and the orderings above, ties broken by graph
// order, then the final copies.
func (p *plan) planUpdates() error {
	producer := map[int]int{} // value → kernel index
	for i, k := range p.kerns {
		producer[k.value] = i
	}
	// Every update's writer exists before any decision, so that the readers
	// of each old value are all known.
	writer := make([]int, len(p.g.updates))
	claimed := map[int]bool{}
	for i, u := range p.g.updates {
		if u.x == u.v {
			continue
		}
		ki, ok := producer[u.x.id]
		if !ok || claimed[u.x.id] || p.isNext(u.x) {
			k := p.copyKernel(u.x)
			k.k.Source = "update " + leafName(u.v) + ": " + k.k.Source
			p.kerns = append(p.kerns, k)
			ki = len(p.kerns) - 1
			producer[k.value] = ki
		}
		claimed[u.x.id] = true
		writer[i] = ki
	}
	var anti [][2]int // kernel a must run before kernel b
	var finals []*kern
	for ui, u := range p.g.updates {
		if u.x == u.v {
			continue
		}
		ki := writer[ui]
		K := p.kerns[ki]
		name := leafName(u.v)
		legal := true
		if at, reads := K.readSet()[u.v.id]; reads && (!at || len(K.k.Reduce) > 0) {
			legal = false
		}
		var extra [][2]int
		if legal {
			for i, k := range p.kerns {
				if i != ki {
					if _, reads := k.readSet()[u.v.id]; reads {
						extra = append(extra, [2]int{i, ki})
					}
				}
			}
			legal = p.acyclic(producer, append(append([][2]int(nil), anti...), extra...))
		}
		if legal {
			anti = append(anti, extra...)
			p.alias[K.value] = u.v.id
			p.inPlace = append(p.inPlace, name)
			continue
		}
		c := p.copyValue(K.value, len(p.g.nodes))
		c.k.Source = "update " + name + ": copy of the new value"
		c.k.Out = c.value
		p.alias[c.value] = u.v.id
		finals = append(finals, c)
		p.viaTemp = append(p.viaTemp, name)
	}
	order, err := p.topo(producer, anti)
	if err != nil {
		return err
	}
	ks := make([]*kern, 0, len(order)+len(finals))
	for _, i := range order {
		ks = append(ks, p.kerns[i])
	}
	p.kerns = append(ks, finals...)
	return nil
}

// edges returns the dependence edges between kernels: producer before
// reader, plus the extra orderings.
func (p *plan) edges(producer map[int]int, extra [][2]int) [][]int {
	succ := make([][]int, len(p.kerns))
	for i, k := range p.kerns {
		for v := range k.readSet() {
			if j, ok := producer[v]; ok && j != i {
				succ[j] = append(succ[j], i)
			}
		}
	}
	for _, e := range extra {
		succ[e[0]] = append(succ[e[0]], e[1])
	}
	return succ
}

func (p *plan) acyclic(producer map[int]int, extra [][2]int) bool {
	_, err := p.topo(producer, extra)
	return err == nil
}

// topo orders the kernels by the dependence edges, preferring graph order.
func (p *plan) topo(producer map[int]int, extra [][2]int) ([]int, error) {
	succ := p.edges(producer, extra)
	indeg := make([]int, len(p.kerns))
	for _, ss := range succ {
		for _, s := range ss {
			indeg[s]++
		}
	}
	h := &kernHeap{p: p}
	for i, d := range indeg {
		if d == 0 {
			heap.Push(h, i)
		}
	}
	var order []int
	for h.Len() > 0 {
		i := heap.Pop(h).(int)
		order = append(order, i)
		for _, s := range succ[i] {
			if indeg[s]--; indeg[s] == 0 {
				heap.Push(h, s)
			}
		}
	}
	if len(order) != len(p.kerns) {
		return nil, fmt.Errorf("compile: graph %q: kernel dependences form a cycle", p.g.name)
	}
	return order, nil
}

// kernHeap pops kernel indices in graph order (then creation order).
type kernHeap struct {
	p  *plan
	is []int
}

func (h *kernHeap) Len() int { return len(h.is) }
func (h *kernHeap) Less(a, b int) bool {
	ka, kb := h.p.kerns[h.is[a]], h.p.kerns[h.is[b]]
	if ka.order != kb.order {
		return ka.order < kb.order
	}
	return h.is[a] < h.is[b]
}
func (h *kernHeap) Swap(a, b int) { h.is[a], h.is[b] = h.is[b], h.is[a] }
func (h *kernHeap) Push(x any)    { h.is = append(h.is, x.(int)) }
func (h *kernHeap) Pop() any {
	x := h.is[len(h.is)-1]
	h.is = h.is[:len(h.is)-1]
	return x
}
