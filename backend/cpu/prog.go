package cpu

import (
	"slices"

	"github.com/tartanml/tartan/kir"
	"github.com/tartanml/tartan/tile"
)

// A prog is an expression tree compiled once into a list of instructions that
// each process a whole chunk of lanes: up to chunk consecutive positions of
// one loop of the kernel (the program's axis), the other loops being fixed.
// Every instruction is one tight loop over the lanes, so the cost of
// interpreting the tree is paid once per chunk, not once per element.
//
// Values live in registers of two kinds of lanes: float32 lanes for f32 (and
// f16, bf16) values, float64 lanes for f64, integer and boolean values,
// which are held as float64 numbers rounded to their dtype after every
// operation, as the reference executor does. Index expressions that are not
// affine are computed in integer registers.
//
// A register is written by one instruction per evaluation. A load whose lanes
// are consecutive elements of a buffer does not copy them: its register is
// re-pointed at the buffer.

// chunk is the largest number of lanes one evaluation processes. A chunk is
// one run along the axis or, when runs are shorter, several rows: runs at
// consecutive points of the loops outside the axis.
const chunk = 1024

// lane is the kind of a value register.
type lane uint8

const (
	laneF lane = iota // float32
	laneD             // float64
)

type opcode uint8

const (
	opLoad opcode = iota
	opApply
	opCast
	opIndexValue
	opRandom
	opAcc
	opIxLin      // integer register = affine form
	opIxAdd      // a + b
	opIxMulC     // a · c
	opIxDiv      // ⌊a / c⌋
	opIxMod      // a mod c
	opIxValue    // integer value of a value register
	opCond       // clear mask lanes where the integer register is outside [0, c)
	opCondVal    // clear mask lanes where int(value) + ib is outside [0, c)
	opSelectRows // each row's lanes from args[1] or args[2], as rowTest picks (rowselect.go)
)

// operand names a value register.
type operand struct {
	lane lane
	reg  int
}

// instr is one instruction. Its fields' meaning depends on op.
type instr struct {
	op     opcode
	lane   lane       // result lane of value instructions
	dt     tile.DType // result dtype
	fn     tile.Fn
	dst    int
	args   [3]operand
	ia     int // integer operand register (index ops, general IndexValue/Random)
	ib     int
	c      int
	isInt  bool      // integer operands (Div)
	lin    axisLin   // opIxLin, affine opIndexValue and opRandom
	aff    bool      // lin is used (else ia)
	ld     *loadPlan // opLoad
	seed   operand   // opRandom
	stream uint64
	// seedBuf ≥ 0: the seed is the element seedOff of that buffer (a
	// scalar), read once per chunk.
	seedBuf, seedOff int
	rowTest          rowTest // opSelectRows
}

// loadPlan is a compiled Load.
type loadPlan struct {
	buf   int
	class loadClass
	dtype tile.DType
	flat  axisLin   // offset (direct, checked)
	dims  []axisLin // the indices of the dimensions checked (checked)
	// bounds are the extents of the dimensions of dims: those whose index
	// may leave the buffer.
	bounds []int
	// flatStep and dimSteps carry flat and dims from one row of a chunk to
	// the next (rowstep.go); redStep and redDimSteps do so for rows of
	// reduction points (consecutive points of the innermost loop).
	flatStep, redStep     rowStep
	dimSteps, redDimSteps []rowStep
	shape                 []int
	idx                   []int // integer registers of the indices (general)
	fill                  float64
	// skip: out-of-range lanes are inactive (a Skip load in a body).
	skip bool
	// rowMajor: a direct load whose offset advances exactly like the
	// row-major position over the loops up to the axis, so that chunks of
	// whole rows at consecutive output points are consecutive in memory;
	// axisExt is the extent of the axis.
	rowMajor bool
	axisExt  int
	// invariant: a direct load whose offset depends on no loop but the
	// axis, the same row for every row of a chunk (a bias along channels).
	invariant bool
	// period > 0: a direct load whose lane at axis position x reads
	// base + pcoef·(x mod period) (flat holds the base, stride 0), a
	// per-channel value along a merged loop (periodicTerm).
	period, pcoef int
}

// constReg is a register holding one constant in every lane.
type constReg struct {
	op operand
	f  []float32
	d  []float64
}

// rangeCheck is the condition 0 ≤ base + stride·lane < bound on an affine
// form, which holds on an interval of lanes.
type rangeCheck struct {
	l     axisLin
	bound int
	// rowFree: the check reads no output loop but the vector axis, so it
	// holds alike for every row of a chunk whose rows are output points.
	rowFree bool
}

// prog is a compiled expression over chunks along loop axis.
type prog struct {
	axis   int
	instrs []instr
	result operand
	consts []constReg
	// checks are the affine Where conditions and the per-dimension bounds of
	// checked Skip loads: a chunk is evaluated on the interval of lanes
	// where all of them hold.
	checks []rangeCheck
	// hasMask is set when some lanes of that interval may still be inactive
	// (general conditions or general Skip loads); evaluation then fills
	// frame.mask.
	hasMask bool
	// directOK: the result is computed by the last instruction, which no
	// other instruction reads, so it may write straight to the output.
	directOK bool
	// hoist marks the instructions whose lanes depend on no reduction
	// loop (see markHoist); nhoist counts them.
	hoist  []bool
	nhoist int
	// rowSelects counts the opSelectRows instructions; operandsOf lists,
	// per instruction, those producing its value operands (-1: none), for
	// the rows each must compute (needRows).
	rowSelects int
	operandsOf [][3]int
}

// markHoist marks the instructions of a body whose results are the same at
// every point of the reduction loops (loops from first on): direct loads
// and index forms over output loops only, and the applications and casts
// of such values and constants. A reduction evaluates them once per work
// item instead of once per reduction point (see exec): a bias or a batch
// mean along the channels is loaded once, not at every pixel.
func (p *prog) markHoist(first int) {
	p.hoist = make([]bool, len(p.instrs))
	p.nhoist = 0
	// fixed values: value registers (lane, reg) and integer registers.
	fixedV := map[operand]bool{}
	fixedI := map[int]bool{}
	for _, c := range p.consts {
		fixedV[c.op] = true
	}
	outerOnly := func(l *axisLin) bool {
		if len(l.extra) > 0 {
			return false
		}
		for _, t := range l.terms {
			if t.loop >= first {
				return false
			}
		}
		for _, t := range l.tabs {
			if t.loop >= first || t.loop2 >= first {
				return false
			}
		}
		return true
	}
	for k := range p.instrs {
		in := &p.instrs[k]
		h := false
		switch in.op {
		case opLoad:
			h = p.axis < first && in.ld.class == loadDirect && !in.ld.skip && outerOnly(&in.ld.flat)
		case opApply, opCast:
			h = true
			n := 1
			if in.op == opApply {
				n = in.fn.Arity()
			}
			for _, a := range in.args[:n] {
				h = h && fixedV[a]
			}
		case opIxLin:
			h = p.axis < first && outerOnly(&in.lin)
		case opIxAdd:
			h = fixedI[in.ia] && fixedI[in.ib]
		case opIxMulC, opIxDiv, opIxMod:
			h = fixedI[in.ia]
		}
		if !h {
			continue
		}
		p.hoist[k] = true
		p.nhoist++
		switch in.op {
		case opIxLin, opIxAdd, opIxMulC, opIxDiv, opIxMod:
			fixedI[in.dst] = true
		default:
			fixedV[operand{in.lane, in.dst}] = true
		}
	}
}

// regs counts the registers of every program of one kernel: they share a
// frame, so their registers must not overlap.
type regs struct{ f, d, i int }

func (r *regs) new(l lane) int {
	if l == laneF {
		r.f++
		return r.f - 1
	}
	r.d++
	return r.d - 1
}

func (r *regs) newInt() int {
	r.i++
	return r.i - 1
}

// progKind says how a program treats Skip loads and Acc.
type progKind uint8

const (
	// progBody: Skip loads and Where conditions make lanes inactive.
	progBody progKind = iota
	// progEpilogue: Acc reads the aggregated value; loads are never
	// skipped (a Skip load out of range yields 0).
	progEpilogue
)

// builder compiles expressions of one kernel into a prog.
type builder struct {
	s      *space
	axis   int
	kind   progKind
	p      *prog
	regs   *regs
	memo   map[*kir.Expr]operand
	ixMemo map[*kir.Ix]int
	consts map[constKey]operand
	ranges map[*kir.Expr]valueRange
	memoF  map[*kir.Expr]operand // integer loads read into float32 lanes
	// Guards the loop bounds absorbed (see loopsKernel.clip): Where
	// conditions and dimensions of Skip loads that need no check, and the
	// Skip loads always in range within the clipped loops.
	absWhere  map[int]bool
	absDim    map[*kir.Expr][]bool
	unguarded map[*kir.Expr]bool
	// outputRows: the program is only ever run on rows of output points
	// (a matrix product's epilogue), reduction loops or not.
	outputRows bool
}

type constKey struct {
	l lane
	v float64
}

func newBuilder(s *space, axis int, kind progKind, r *regs) *builder {
	return &builder{s: s, axis: axis, kind: kind, p: &prog{axis: axis}, regs: r,
		memo: map[*kir.Expr]operand{}, ixMemo: map[*kir.Ix]int{}, consts: map[constKey]operand{},
		ranges: map[*kir.Expr]valueRange{}, memoF: map[*kir.Expr]operand{}}
}

// where adds the kernel's Where conditions to a body program.
func (b *builder) where(conds []kir.Cond) {
	for i, c := range conds {
		if b.absWhere[i] {
			continue
		}
		if cf := b.s.cond(c); cf != nil {
			b.p.checks = append(b.p.checks, rangeCheck{l: b.s.lin(cf.aff).forAxis(b.axis), bound: cf.bound})
			continue
		}
		info := b.s.ix(c.X)
		if info.aff != nil {
			b.p.checks = append(b.p.checks, rangeCheck{l: b.s.lin(info.aff).forAxis(b.axis), bound: c.Bound})
			continue
		}
		if l, ok := b.semi(info.simp); ok {
			b.p.checks = append(b.p.checks, rangeCheck{l: l, bound: c.Bound})
			continue
		}
		if e, k, ok := loadedValue(info.simp); ok {
			// 0 ≤ int(e) + k < bound, tested on e's lanes directly.
			b.p.hasMask = true
			b.emit(instr{op: opCondVal, args: [3]operand{b.expr(e)}, ib: k, c: c.Bound,
				isInt: e.DType == tile.Bool || b.laneFor(e) == laneF && e.DType.IsInt()})
			continue
		}
		r := b.ixReg(info.simp)
		b.p.hasMask = true
		b.emit(instr{op: opCond, ia: r, c: c.Bound})
	}
}

// loadedValue reports whether x is int(e) + k.
func loadedValue(x *kir.Ix) (*kir.Expr, int, bool) {
	switch {
	case x.Op == kir.IxValue:
		return x.E, 0, true
	case x.Op == kir.IxAdd && x.A.Op == kir.IxValue && x.B.Op == kir.IxConst:
		return x.A.E, x.B.C, true
	}
	return nil, 0, false
}

// value compiles e and makes it the program's result.
func (b *builder) value(e *kir.Expr) *prog {
	b.p.result = b.expr(e)
	b.p.planRows()
	for i := range b.p.checks {
		b.p.checks[i].rowFree = b.rowFree(&b.p.checks[i].l)
	}
	if n := len(b.p.instrs); n > 0 {
		last := &b.p.instrs[n-1]
		b.p.directOK = last.dst == b.p.result.reg && last.lane == b.p.result.lane && last.op != opLoad && last.op != opAcc &&
			!(last.op == opIxLin || last.op == opIxAdd || last.op == opIxMulC || last.op == opIxDiv || last.op == opIxMod || last.op == opIxValue || last.op == opCond)
	}
	return b.p
}

// rowFree reports whether l reads no output loop (its axis apart).
func (b *builder) rowFree(l *axisLin) bool {
	if len(l.extra) > 0 {
		return false
	}
	for _, t := range l.terms {
		if t.loop < b.s.nout {
			return false
		}
	}
	for _, t := range l.tabs {
		if t.loop < b.s.nout || (t.loop2 >= 0 && t.loop2 < b.s.nout) {
			return false
		}
	}
	return true
}

func (b *builder) emit(in instr) { b.p.instrs = append(b.p.instrs, in) }

func (b *builder) constant(l lane, dt tile.DType, v float64) operand {
	v = tile.RoundTo(dt, v)
	key := constKey{l, v}
	if op, ok := b.consts[key]; ok {
		return op
	}
	op := operand{l, b.regs.new(l)}
	c := constReg{op: op}
	if l == laneF {
		c.f = make([]float32, chunk)
		for i := range c.f {
			c.f[i] = float32(v)
		}
	} else {
		c.d = make([]float64, chunk)
		for i := range c.d {
			c.d[i] = v
		}
	}
	b.p.consts = append(b.p.consts, c)
	b.consts[key] = op
	return op
}

func (b *builder) expr(e *kir.Expr) operand {
	if op, ok := b.memo[e]; ok {
		return op
	}
	op := b.expr1(e)
	b.memo[e] = op
	return op
}

func (b *builder) expr1(e *kir.Expr) operand {
	l := b.laneFor(e)
	switch e.Op {
	case kir.Const:
		return b.constant(l, e.DType, e.Value)
	case kir.Load:
		return b.load(e)
	case kir.Apply:
		if e.Fn == tile.Select && b.rowUniformOK() {
			if c, ok := b.rowCondOf(e.Args[0]); ok {
				return b.rowSelect(e, c, l)
			}
		}
		in := instr{op: opApply, lane: l, dt: e.DType, fn: e.Fn}
		// Value operands share one lane: the result's, or for a
		// comparison float32 when both are, else float64.
		vl := l
		if e.Fn.IsComparison() {
			vl = b.compareLane(e.Args)
		}
		for i, a := range e.Args {
			if i == 0 && e.Fn == tile.Select {
				in.args[i] = b.in(laneF, a)
				continue
			}
			in.args[i] = b.in(vl, a)
		}
		in.isInt = e.Args[len(e.Args)-1].DType.IsInt()
		in.dst = b.regs.new(l)
		b.emit(in)
		return operand{l, in.dst}
	case kir.Cast:
		a := b.expr(e.Args[0])
		if a.lane == laneF && l == laneF && (e.DType != tile.Bool || e.Args[0].DType == tile.Bool) {
			return a // f32, f16 and bf16 are all computed as float32, booleans as 0 or 1
		}
		in := instr{op: opCast, lane: l, dt: e.DType, args: [3]operand{a}, dst: b.regs.new(l)}
		b.emit(in)
		return operand{l, in.dst}
	case kir.IndexValue:
		in := instr{op: opIndexValue, lane: l, dt: e.DType}
		b.index(&in, e.Index[0])
		in.dst = b.regs.new(l)
		b.emit(in)
		return operand{l, in.dst}
	case kir.Random:
		in := instr{op: opRandom, lane: l, dt: e.DType, stream: e.Stream, seedBuf: -1}
		if a := e.Args[0]; a.Op == kir.Load && b.constantOffset(a) {
			in.seedBuf, in.seedOff = a.Buf, b.s.loads[a].flat.konst
		} else {
			in.seed = b.expr(a)
		}
		b.index(&in, e.Index[0])
		in.dst = b.regs.new(l)
		b.emit(in)
		return operand{l, in.dst}
	case kir.Acc:
		in := instr{op: opAcc, lane: l, dt: e.DType, dst: b.regs.new(l)}
		b.emit(in)
		return operand{l, in.dst}
	}
	// Validated programs have no other node kinds.
	return b.constant(l, e.DType, 0)
}

// constantOffset reports whether load e reads one element, in range,
// whatever the loop values.
func (b *builder) constantOffset(e *kir.Expr) bool {
	info := b.s.loads[e]
	if info == nil {
		info = b.s.load(e)
		b.s.loads[e] = info
	}
	if info.class != loadDirect {
		return false
	}
	for _, c := range info.flat.coef {
		if c != 0 {
			return false
		}
	}
	return true
}

// index sets in's position: an affine form, or an integer register.
func (b *builder) index(in *instr, x *kir.Ix) {
	info := b.s.ix(x)
	if info.aff != nil {
		in.aff = true
		in.lin = b.s.lin(info.aff).forAxis(b.axis)
		return
	}
	if l, ok := b.semi(info.simp); ok {
		in.aff, in.lin = true, l
		return
	}
	in.ia = b.ixReg(info.simp)
}

// semi returns x as an affine form along the axis plus terms that do not
// depend on the axis, or false when some non-affine term does (or reads a
// loaded value).
func (b *builder) semi(x *kir.Ix) (axisLin, bool) {
	out := axisLin{vm: b.s.vm}
	coef := map[int]int{}
	var walk func(x *kir.Ix, k int) bool
	walk = func(x *kir.Ix, k int) bool {
		switch x.Op {
		case kir.IxConst:
			out.c += k * x.C
		case kir.IxVar:
			v := x.Var
			loop := b.s.varLoop[v]
			if len(b.s.vars[loop]) != 1 {
				return false
			}
			out.c += k * b.s.varLo[v]
			coef[loop] += k
		case kir.IxAdd:
			return walk(x.A, k) && walk(x.B, k)
		case kir.IxMul:
			return walk(x.A, k*x.C)
		case kir.IxFloorDiv, kir.IxMod:
			if b.dependsOnAxis(x) {
				return false
			}
			out.extra = append(out.extra, scalarTerm{k, x})
		default:
			return false
		}
		return true
	}
	if !walk(x, 1) {
		return axisLin{}, false
	}
	// Terms of one loop, or of two with few positions together, become a
	// table over their positions: no division at run time.
	var rest []scalarTerm
	type pair struct{ a, b int }
	tabs := map[pair][]int{}
	var order []pair
	for _, t := range out.extra {
		ls := b.loopsOf(t.x)
		var key pair
		size := 1
		switch len(ls) {
		case 1:
			key, size = pair{ls[0], -1}, b.s.ext[ls[0]]
		case 2:
			key, size = pair{ls[0], ls[1]}, b.s.ext[ls[0]]*b.s.ext[ls[1]]
		default:
			size = -1
		}
		if size < 0 || size > 1<<16 {
			rest = append(rest, t)
			continue
		}
		tab, ok := tabs[key]
		if !ok {
			tab = make([]int, size)
			order = append(order, key)
		}
		vars := make([]int, len(b.s.ext))
		for pos := range tab {
			if key.b < 0 {
				vars[key.a] = pos
			} else {
				vars[key.a], vars[key.b] = pos/b.s.ext[key.b], pos%b.s.ext[key.b]
			}
			tab[pos] += t.coef * scalarIx(t.x, b.s.vm, vars)
		}
		tabs[key] = tab
	}
	out.extra = rest
	for _, k := range order {
		n2 := 0
		if k.b >= 0 {
			n2 = b.s.ext[k.b]
		}
		out.tabs = append(out.tabs, tabTerm{k.a, tabs[k], k.b, n2})
	}
	for l := range len(b.s.ext) {
		if c := coef[l]; c != 0 {
			if l == b.axis {
				out.stride = c
			} else {
				out.terms = append(out.terms, term{l, c})
			}
		}
	}
	return out, true
}

// loopsOf returns the loops whose variables x reads, in increasing order.
func (b *builder) loopsOf(x *kir.Ix) []int {
	var ls []int
	var walk func(x *kir.Ix)
	walk = func(x *kir.Ix) {
		if x == nil {
			return
		}
		if x.Op == kir.IxVar {
			if l := b.s.varLoop[x.Var]; !slices.Contains(ls, l) {
				ls = append(ls, l)
			}
		}
		walk(x.A)
		walk(x.B)
	}
	walk(x)
	slices.Sort(ls)
	return ls
}

// dependsOnAxis reports whether x reads a loaded value or a variable of the
// axis loop, or of a loop covering several variables.
func (b *builder) dependsOnAxis(x *kir.Ix) bool {
	if x == nil {
		return false
	}
	switch x.Op {
	case kir.IxVar:
		loop := b.s.varLoop[x.Var]
		return loop == b.axis || len(b.s.vars[loop]) != 1
	case kir.IxValue:
		return true
	}
	return b.dependsOnAxis(x.A) || b.dependsOnAxis(x.B)
}

// ixReg compiles an index expression into an integer register.
func (b *builder) ixReg(x *kir.Ix) int {
	if r, ok := b.ixMemo[x]; ok {
		return r
	}
	var in instr
	if coef, konst, ok := kir.LinearForm(x, b.s.nv); ok {
		in = instr{op: opIxLin, lin: b.s.lin(&affineIx{coef, konst}).forAxis(b.axis)}
	} else {
		switch x.Op {
		case kir.IxAdd:
			in = instr{op: opIxAdd, ia: b.ixReg(x.A), ib: b.ixReg(x.B)}
		case kir.IxMul:
			in = instr{op: opIxMulC, ia: b.ixReg(x.A), c: x.C}
		case kir.IxFloorDiv:
			in = instr{op: opIxDiv, ia: b.ixReg(x.A), c: x.C}
		case kir.IxMod:
			in = instr{op: opIxMod, ia: b.ixReg(x.A), c: x.C}
		case kir.IxValue:
			in = instr{op: opIxValue, args: [3]operand{b.expr(x.E)}}
		default:
			in = instr{op: opIxLin}
		}
	}
	in.dst = b.regs.newInt()
	b.emit(in)
	b.ixMemo[x] = in.dst
	return in.dst
}

func (b *builder) load(e *kir.Expr) operand { return b.loadIn(e, laneOf(e.DType)) }

// loadIn compiles load e into lane l.
func (b *builder) loadIn(e *kir.Expr, l lane) operand {
	info := b.s.loads[e]
	if info == nil {
		// Only spaces without merged loops are extended after their loops
		// are built.
		info = b.s.load(e)
		b.s.loads[e] = info
	}
	buf := b.s.p.Buffers[e.Buf]
	lp := &loadPlan{buf: e.Buf, class: info.class, dtype: buf.DType, shape: buf.Shape, fill: tile.RoundTo(e.DType, e.Value)}
	if e.OOB == kir.Skip {
		lp.fill = 0
		lp.skip = b.kind == progBody
	}
	switch info.class {
	case loadDirect:
		lp.flat = b.s.lin(&info.flat).forAxis(b.axis)
		lp.rowMajor, lp.axisExt = b.rowMajor(lp.flat), b.s.ext[b.axis]
		lp.invariant = len(lp.flat.terms) == 0 && len(lp.flat.tabs) == 0 && len(lp.flat.extra) == 0
		if pt, ok := b.s.periodic[&info.flat]; ok {
			if b.s.varLoop[pt.v] != b.axis {
				panic("cpu: internal: a periodic load off the vector axis")
			}
			lp.period, lp.pcoef, lp.rowMajor = pt.period, pt.coef, false
		}
	case loadChecked:
		lp.flat = b.s.lin(&info.flat).forAxis(b.axis)
		if lp.skip && b.unguarded[e] {
			lp.class, lp.skip = loadDirect, false
			lp.rowMajor, lp.axisExt = b.rowMajor(lp.flat), b.s.ext[b.axis]
			lp.invariant = len(lp.flat.terms) == 0
			break
		}
		for d, cf := range info.dimForm {
			if cf == nil {
				continue // in range everywhere
			}
			l := b.s.lin(cf.aff).forAxis(b.axis)
			if lp.skip && !b.absorbed(e, d) {
				b.p.checks = append(b.p.checks, rangeCheck{l: l, bound: cf.bound})
			}
			lp.dims, lp.bounds = append(lp.dims, l), append(lp.bounds, cf.bound)
		}
		lp.skip = false // handled by the checks
	case loadGeneral:
		if b.semiLoad(e, lp, info, buf.Shape) {
			break
		}
		lp.idx = make([]int, len(info.ix))
		for d, x := range info.ix {
			lp.idx[d] = b.ixReg(b.s.ix(x).simp)
		}
		if lp.skip {
			b.p.hasMask = true
		}
	}
	if lp.class != loadGeneral {
		lp.flatStep, lp.dimSteps = lp.rowSteps(b.axis - 1)
		lp.redStep.loop = -1
		if last := len(b.s.ext) - 1; b.axis < last {
			lp.redStep, lp.redDimSteps = lp.rowSteps(last)
		}
	}
	in := instr{op: opLoad, lane: l, dt: e.DType, ld: lp, dst: b.regs.new(l)}
	b.emit(in)
	return operand{l, in.dst}
}

// rowSteps returns the steps of the load's offset and checked indices
// along loop; the offset's step evaluates afresh (loop -1) when some index's
// does.
func (lp *loadPlan) rowSteps(loop int) (rowStep, []rowStep) {
	flat := newRowStep(&lp.flat, loop)
	dims := make([]rowStep, len(lp.dims))
	for d := range lp.dims {
		dims[d] = newRowStep(&lp.dims[d], loop)
		if dims[d].loop < 0 {
			flat.loop = -1
		}
	}
	return flat, dims
}

// absorbed reports whether the clipped loops keep dimension d of load e in
// range.
func (b *builder) absorbed(e *kir.Expr, d int) bool {
	a := b.absDim[e]
	return d < len(a) && a[d]
}

// rowMajor reports whether l (with stride 1 along the axis) advances by
// the axis extent from one point of the loops before the axis to the next,
// as a row-major position does.
func (b *builder) rowMajor(l axisLin) bool {
	if l.stride != 1 || len(l.tabs) > 0 || len(l.extra) > 0 || b.axis >= b.s.nout {
		return false
	}
	// Terms of the loops after the axis (reductions) are the same for
	// every row.
	coef := make([]int, b.axis)
	for _, t := range l.terms {
		if t.loop < b.axis {
			coef[t.loop] = t.coef
		}
	}
	want := b.s.ext[b.axis]
	for loop := b.axis - 1; loop >= 0; loop-- {
		if coef[loop] != want && b.s.ext[loop] > 1 {
			return false
		}
		want *= b.s.ext[loop]
	}
	return true
}

// semiLoad makes a general load direct or checked when every index is
// semi-affine along the axis.
func (b *builder) semiLoad(e *kir.Expr, lp *loadPlan, info *loadInfo, shape tile.Shape) bool {
	dims := make([]axisLin, len(info.ix))
	for d, x := range info.ix {
		l, ok := b.semi(b.s.ix(x).simp)
		if !ok {
			return false
		}
		dims[d] = l
	}
	strides := shape.Strides()
	flat := axisLin{vm: b.s.vm}
	for d := range dims {
		flat = flat.plus(dims[d].scaled(strides[d]))
	}
	lp.flat = flat
	if info.inRange {
		lp.class = loadDirect
		lp.skip = false
		return true
	}
	lp.class = loadChecked
	for d := range dims {
		if !info.dimIn[d] {
			lp.dims, lp.bounds = append(lp.dims, dims[d]), append(lp.bounds, shape[d])
		}
	}
	if lp.skip {
		for d := range dims {
			if b.absorbed(e, d) {
				continue
			}
			b.p.checks = append(b.p.checks, rangeCheck{l: dims[d], bound: shape[d]})
		}
	}
	lp.skip = false
	return true
}
