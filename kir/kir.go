package kir

import "github.com/tartanml/tartan/tile"

// BufKind says where a buffer's contents come from and go.
type BufKind uint8

// The buffer kinds.
const (
	// Temp holds an intermediate result; its contents do not outlive a run.
	Temp BufKind = iota
	// Input is bound by the host before a run.
	Input
	// Output is read by the host after a run. An output buffer may also be
	// an input or a variable buffer when the program returns one unchanged.
	Output
	// Variable is persistent state that survives between runs.
	Variable
	// Constant is filled once from Buffer.Init.
	Constant
)

var bufKindNames = [...]string{Temp: "temp", Input: "input", Output: "output", Variable: "variable", Constant: "constant"}

func (k BufKind) String() string { return bufKindNames[k] }

// Buffer is a dense row-major array on the device.
type Buffer struct {
	ID    int
	Name  string // the input, output or variable name; empty for temporaries
	Kind  BufKind
	DType tile.DType
	Shape tile.Shape
	// Init holds a constant buffer's elements.
	Init []float64
	// Slot is the storage slot of a Temp buffer: temporaries of one slot
	// never live at the same time. Non-temporaries have their own slots too.
	Slot int
	// View, when set, places the buffer's elements inside another buffer's
	// storage instead of at the start of its slot.
	View *View
}

// View places a Temp buffer's elements inside the storage of buffer Of, a
// buffer of any kind that is not itself a view, whose slot the view shares:
// element i of the view is element Offset + s·Stride + i of Of, where s is
// the step of the enclosing StepLoop (0 outside every loop). A view whose
// Stride is not 0 is read and written only by kernels inside loops. Views
// are how a loop's kernels work on one time step of a sequence: the step's
// rows of a [Steps, ...] buffer.
type View struct {
	Of             int
	Offset, Stride int
}

// StepLoop repeats kernels First up to (not including) End, in order, Steps
// times: for iteration k = 0, 1, ..., Steps-1 the step s is k, or Steps-1-k
// when Reverse is set, and every view's elements move to step s (see View).
// Loops do not nest or overlap, and a kernel inside a loop may depend on what
// the loop's kernels wrote in earlier iterations: that is what a loop is
// for, and why its kernels run one iteration after another.
type StepLoop struct {
	First, End int
	Steps      int
	Reverse    bool
}

// Size returns the number of elements.
func (b *Buffer) Size() int { return b.Shape.Size() }

// Base returns the element offset of b's first element within the storage
// of its slot at step s: 0 for a buffer that is not a view.
func (b *Buffer) Base(s int) int {
	if b.View == nil {
		return 0
	}
	return b.View.Offset + s*b.View.Stride
}

// LoopOf returns the index of the loop that kernel k belongs to, or -1.
func (p *Program) LoopOf(k int) int {
	for i, l := range p.Loops {
		if k >= l.First && k < l.End {
			return i
		}
	}
	return -1
}

// Step returns the step of iteration k of loop l.
func (l StepLoop) Step(k int) int {
	if l.Reverse {
		return l.Steps - 1 - k
	}
	return k
}

// Binding names a program input, output or variable and its buffer.
type Binding struct {
	Name   string
	Buffer int
}

// Program is a compiled graph: buffers, and kernels run in order. After the
// last kernel, the Outputs hold the results and the Variables hold their
// updated values (updates are compiled into kernels that write the variable
// buffers, ordered after every read of the old values).
type Program struct {
	Name      string
	Buffers   []*Buffer
	Kernels   []*Kernel
	Inputs    []Binding
	Outputs   []Binding
	Variables []Binding
	// Loops are the kernel ranges run once per time step, in kernel order.
	Loops []StepLoop
	// Slots is the number of storage slots; SlotBytes the bytes each needs.
	Slots     int
	SlotBytes []int
}

// Loop is a reduction loop variable running over the inclusive range
// [Lo, Hi].
type Loop struct {
	Name   string
	Lo, Hi int
}

// Cond is a point condition 0 ≤ X < Bound.
type Cond struct {
	X     *Ix
	Bound int
}

// Kernel is one loop nest writing one buffer; see the package documentation
// for its meaning.
type Kernel struct {
	Name string
	// Out is the output buffer; Shape is the output loop space, whose points
	// in row-major order are the buffer's elements in order: the buffer's
	// shape, or that shape without some dimensions of extent 1.
	Out   int
	Shape tile.Shape
	// Reduce lists the reduction loops, outermost first. Loop variable k of a
	// kernel is output loop k for k < len(Shape), else Reduce[k-len(Shape)].
	Reduce []Loop
	// Agg combines Body values over the reduction loops. Without reduction
	// loops it is tile.Assign.
	Agg tile.Agg
	// Where lists point conditions on the loop variables.
	Where    []Cond
	Body     *Expr
	Epilogue *Expr
	Schedule Schedule
	// Source names the tile nodes the kernel computes, for debugging.
	Source string
}

// NumVars returns the number of loop variables (output then reduction).
func (k *Kernel) NumVars() int { return len(k.Shape) + len(k.Reduce) }

// IxOp is the kind of an index expression node.
type IxOp uint8

// The index expression nodes.
const (
	IxConst    IxOp = iota // C
	IxVar                  // loop variable number Var
	IxAdd                  // A + B
	IxMul                  // A · C
	IxFloorDiv             // ⌊A / C⌋, C > 0
	IxMod                  // A mod C (floor modulo, in [0, C)), C > 0
	IxValue                // the integer value of expression E (a gathered index)
)

// Ix is an integer index expression.
type Ix struct {
	Op   IxOp
	Var  int
	C    int
	A, B *Ix
	E    *Expr
}

// ExprOp is the kind of a value expression node.
type ExprOp uint8

// The value expression nodes.
const (
	// Load reads Buf at Index (one Ix per dimension of the buffer's shape).
	// Out of range, the point is skipped when OOB is Skip, else the load
	// yields Value.
	Load ExprOp = iota
	// Const is the constant Value.
	Const
	// Apply applies the elementwise function Fn to Args.
	Apply
	// Cast converts Args[0] to DType with tile.RoundTo's rules.
	Cast
	// IndexValue is the value of the index expression Index[0].
	IndexValue
	// Random is the uniform number tile.UniformAt(seed, Stream, p) where the
	// seed is the integer value of Args[0] and p is Index[0].
	Random
	// Acc is the aggregated value, in an Epilogue.
	Acc
)

// OOB is what an out-of-range load does.
type OOB uint8

// The out-of-range policies.
const (
	Skip OOB = iota // the point contributes nothing (contraction operands)
	Fill            // the load yields Expr.Value (padding, gathers)
)

// Expr is a value expression node. Every node has a DType.
type Expr struct {
	Op    ExprOp
	DType tile.DType
	Fn    tile.Fn
	Args  []*Expr
	// Load.
	Buf   int
	Index []*Ix
	OOB   OOB
	// Const and Fill value.
	Value float64
	// Random stream.
	Stream uint64
}

// Schedule is how a kernel's loops are executed on a device. It changes
// speed, never results (up to floating-point reassociation of sums).
type Schedule struct {
	// Strategy names the kernel template: "loops" (generic loop nest),
	// "gemm" (a contraction of two operands mapped onto a tiled matrix
	// product) or "reduce" (a reduction across output rows).
	Strategy string
	// GEMM describes the matrix-product view when Strategy is "gemm".
	GEMM *GEMMView
	// Scatter describes the indexed-accumulation view when Strategy is
	// "scatter".
	Scatter *ScatterView
	// Tiling, for a "gemm" kernel, is the tiling a tuner chose for the
	// device; nil leaves it to the target's cost model.
	Tiling *Tiling
	// Parallel is the number of outer output loops whose points are
	// distributed over workers (CPU goroutines, OpenCL work-groups).
	Parallel int
	// Tile gives per-output-loop tile sizes (0: untiled).
	Tile []int
	// Vector is the vector width along the innermost output loop.
	Vector int
	// Unroll is the unroll factor of the innermost reduction loop.
	Unroll int
	// Local is the work-group size for OpenCL backends (0: backend's choice).
	Local []int
	// Workers is the number of parallel workers to use (0: all).
	Workers int
}

// ScatterView is the indexed form of a kernel that adds slices of an updates
// buffer into its output at the positions an integer indices buffer gives
// (tile's scatter_add, Gather's adjoint). With r = len(Shape) and the
// indices of rank q, the kernel's dense meaning is
//
//	Out[o] = Σ_j (Indices[j] == o[Axis]) ? Updates[o[:Axis], j, o[Axis+1:]] : 0
//
// over every position j of Indices, which costs Out's size times the number
// of indices. The view says the same thing as a loop over the indices:
//
//	Out = 0; for j in row-major order: Out[o[:Axis], Indices[j], o[Axis+1:]] += Updates[o[:Axis], j, o[Axis+1:]]
//
// skipping indices outside [0, Shape[Axis]). A backend runs it with the
// points of o[:Axis] and o[Axis+1:] spread over its workers and the j loop
// in order inside each, so that every output element receives its terms in
// the same order on every backend and for any number of workers.
type ScatterView struct {
	Updates, Indices int // buffer ids
	Axis             int
}

// GEMMView maps a kernel whose Body is Load(A)·Load(B), aggregated by sum,
// onto C[b][m][n] = Σ_k A[b][m][k]·B[b][k][n]. Each of M, N, K and Batch lists
// loop variables (outer to inner); the matrix index along a group is the
// row-major combination of its variables' positions within their ranges.
//
// The matrices are the operands with their conditions and guards applied:
// A[b][m][k] is 0 where one of A's Where conditions (CondA) fails or, when
// GuardA is set, where A's load leaves its buffer, and its load's value
// elsewhere; B likewise. At such a point the kernel skips the term (a
// failed condition, a Skip load out of range) or multiplies by 0 (a Fill
// load of value 0), and a sum of products gains nothing either way, so a
// backend may stage 0 for the operand there. (Only a NaN or an infinity
// in the other operand tells the two apart: 0·∞ is NaN where the kernel
// skips the term.) The operands' dependence on the groups, and these
// lists, are set by the compiler's schedule; Complete fills them in.
type GEMMView struct {
	Batch, M, N, K []int
	// A and B are the operands' loads within Body.
	A, B *Expr
	// CondA and CondB list, in order, the indices into the kernel's Where
	// of the conditions that belong to A (they read only Batch, M and K
	// loops) and to B (Batch, N and K loops). Every condition is in
	// exactly one list, in A's when it reads neither M nor N loops.
	CondA, CondB []int
	// GuardA and GuardB report that the operand's load may leave its
	// buffer somewhere in the loop box (kir.Bounds cannot prove it in
	// range), so that a backend must check its indices before reading and
	// use 0 outside. An unguarded operand may be read unchecked.
	GuardA, GuardB bool
}

// Conds returns the Where conditions of k that belong to operand A (b
// false) or B (b true).
func (v *GEMMView) Conds(k *Kernel, b bool) []Cond {
	idx := v.CondA
	if b {
		idx = v.CondB
	}
	cs := make([]Cond, len(idx))
	for i, j := range idx {
		cs[i] = k.Where[j]
	}
	return cs
}

// Extents returns the number of points of each group of the view: batch
// matrices, rows, columns and the summed length.
func (v *GEMMView) Extents(k *Kernel) (batch, m, n, kk int) {
	vars := k.VarRanges()
	size := func(vs []int) int {
		p := 1
		for _, x := range vs {
			if x >= 0 && x < len(vars) {
				p *= max(vars[x].Hi-vars[x].Lo+1, 0)
			}
		}
		return p
	}
	return size(v.Batch), size(v.M), size(v.N), size(v.K)
}

// DotProducts reports whether the view's matrices are single elements, so
// that the "product" is a batch of dot products: a reduction, which a
// matrix-product schedule runs far slower than a loop nest (it packs the
// strided operands of every dot product).
func (v *GEMMView) DotProducts(k *Kernel) bool {
	_, m, n, _ := v.Extents(k)
	return m == 1 && n == 1
}

// Buffers returns the ids of the buffers k writes or reads: its output first,
// then every loaded buffer once, in the order the expressions name them.
func (k *Kernel) Buffers() []int {
	ids := []int{k.Out}
	seen := map[int]bool{k.Out: true}
	var ix func(x *Ix)
	var expr func(e *Expr)
	expr = func(e *Expr) {
		if e == nil {
			return
		}
		if e.Op == Load && !seen[e.Buf] {
			seen[e.Buf] = true
			ids = append(ids, e.Buf)
		}
		for _, a := range e.Args {
			expr(a)
		}
		for _, x := range e.Index {
			ix(x)
		}
	}
	ix = func(x *Ix) {
		if x == nil {
			return
		}
		ix(x.A)
		ix(x.B)
		expr(x.E)
	}
	expr(k.Body)
	expr(k.Epilogue)
	for _, c := range k.Where {
		ix(c.X)
	}
	if s := k.Schedule.Scatter; s != nil {
		for _, b := range []int{s.Updates, s.Indices} {
			if !seen[b] {
				seen[b] = true
				ids = append(ids, b)
			}
		}
	}
	return ids
}
