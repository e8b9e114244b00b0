package kir

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strconv"
)

// Tiling is the tiling decision of a matrix-product kernel (Strategy
// "gemm"): BM×BN outputs per work-group, BK reduction points per staged
// panel, the matrix instruction the product runs on, and how many parts
// its sum is split into across work-groups (added in a fixed order, so
// results do not depend on the decision). A nil Tiling leaves the choice
// to the target's cost model; a backend that cannot run a given tiling
// reports why instead of running something else.
type Tiling struct {
	BM, BN, BK int
	// Matrix is "" for the ordinary cores, else the device's matrix
	// instruction ("3xtf32", "tf32", …). A tuner only chooses among
	// instructions of the precision the user asked for.
	Matrix string `json:",omitempty"`
	// Parts is the number of parts of the sum (0 or 1: one).
	Parts int `json:",omitempty"`
	// From says where the decision came from: "model" or "tuner".
	From string `json:"-"`
}

// String formats the tiling as BMxBNxBK[/matrix][/parts P].
func (t *Tiling) String() string {
	if t == nil {
		return "model"
	}
	s := fmt.Sprintf("%dx%dx%d", t.BM, t.BN, t.BK)
	if t.Matrix != "" {
		s += "/" + t.Matrix
	}
	if t.Parts > 1 {
		s += "/parts " + strconv.Itoa(t.Parts)
	}
	return s
}

// Same reports whether t and u are the same decision (From aside).
func (t Tiling) Same(u Tiling) bool {
	return t.BM == u.BM && t.BN == u.BN && t.BK == u.BK && t.Matrix == u.Matrix && max(t.Parts, 1) == max(u.Parts, 1)
}

// Extract returns kernel k of p as a program of its own: the buffers it
// reads and writes, renumbered in the order Kernel.Buffers names them,
// each in a slot of its own (a view becomes a buffer of the view's shape),
// constants with their values, every other buffer it reads an input
// named in<id>, and its output an output named "out" (a variable when the
// kernel also reads it). The kernel keeps its schedule. The program
// computes what kernel k computes from the same operand values, so a
// tuner can time it in isolation.
func Extract(p *Program, k int) (*Program, error) {
	if k < 0 || k >= len(p.Kernels) {
		return nil, fmt.Errorf("kir: Extract: kernel %d of %d", k, len(p.Kernels))
	}
	src := p.Kernels[k]
	ids := src.Buffers()
	newID := make(map[int]int, len(ids))
	q := &Program{Name: p.Name + "/" + src.Name}
	reads := map[int]bool{}
	for _, id := range ids[1:] {
		reads[id] = true
	}
	for i, id := range ids {
		if id < 0 || id >= len(p.Buffers) {
			return nil, fmt.Errorf("kir: Extract: kernel %s names buffer %d of %d", src.Name, id, len(p.Buffers))
		}
		b := p.Buffers[id]
		nb := &Buffer{ID: i, DType: b.DType, Shape: b.Shape, Slot: i}
		switch {
		case i == 0 && reads[id]:
			nb.Kind, nb.Name = Variable, "out"
			q.Variables = append(q.Variables, Binding{Name: "out", Buffer: i})
			q.Outputs = append(q.Outputs, Binding{Name: "out", Buffer: i})
		case i == 0:
			nb.Kind, nb.Name = Output, "out"
			q.Outputs = append(q.Outputs, Binding{Name: "out", Buffer: i})
		case b.Kind == Constant:
			nb.Kind, nb.Init = Constant, b.Init
		default:
			nb.Kind, nb.Name = Input, "in"+strconv.Itoa(i)
			q.Inputs = append(q.Inputs, Binding{Name: nb.Name, Buffer: i})
		}
		newID[id] = i
		q.Buffers = append(q.Buffers, nb)
		q.SlotBytes = append(q.SlotBytes, b.Size()*b.DType.Size())
	}
	q.Slots = len(q.Buffers)
	kk := *src
	kk.Out = 0
	c := copier{buf: newID, exprs: map[*Expr]*Expr{}}
	kk.Body = c.expr(src.Body)
	kk.Epilogue = c.expr(src.Epilogue)
	kk.Where = nil
	for _, w := range src.Where {
		kk.Where = append(kk.Where, Cond{X: c.ix(w.X), Bound: w.Bound})
	}
	if g := src.Schedule.GEMM; g != nil {
		ng := *g
		ng.A, ng.B = c.exprs[g.A], c.exprs[g.B]
		kk.Schedule.GEMM = &ng
	}
	if s := src.Schedule.Scatter; s != nil {
		kk.Schedule.Scatter = &ScatterView{Updates: newID[s.Updates], Indices: newID[s.Indices], Axis: s.Axis}
	}
	if t := src.Schedule.Tiling; t != nil {
		nt := *t
		kk.Schedule.Tiling = &nt
	}
	q.Kernels = []*Kernel{&kk}
	return q, nil
}

// copier deep-copies expressions with buffer ids renamed, remembering
// which copy each node became.
type copier struct {
	buf   map[int]int
	exprs map[*Expr]*Expr
}

func (c copier) expr(e *Expr) *Expr {
	if e == nil {
		return nil
	}
	out := *e
	if e.Op == Load {
		out.Buf = c.buf[e.Buf]
	}
	out.Args = nil
	for _, a := range e.Args {
		out.Args = append(out.Args, c.expr(a))
	}
	out.Index = nil
	for _, x := range e.Index {
		out.Index = append(out.Index, c.ix(x))
	}
	c.exprs[e] = &out
	return &out
}

func (c copier) ix(x *Ix) *Ix {
	if x == nil {
		return nil
	}
	out := *x
	out.A, out.B = c.ix(x.A), c.ix(x.B)
	out.E = c.expr(x.E)
	return &out
}

// Hash identifies kernel k of p by what it computes and how it is laid
// out, apart from names and its tiling: kernels of one network that
// differ only in the buffers they touch hash alike. It is the key under
// which a tuner's decisions for the kernel are kept.
func Hash(p *Program, k int) (string, error) {
	q, err := Extract(p, k)
	if err != nil {
		return "", err
	}
	kk := q.Kernels[0]
	kk.Name, kk.Source, kk.Schedule.Tiling = "k", "", nil
	q.Name = ""
	// The printer abbreviates constants: their values change nothing a
	// tiling decides, and their types and shapes are in the text.
	sum := sha256.Sum256([]byte(q.String()))
	return hex.EncodeToString(sum[:16]), nil
}
