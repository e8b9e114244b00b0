package opencl

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/tartanml/tartan/kir"
	"github.com/tartanml/tartan/tile"
)

// argRef names one argument of a launch (kir.Arg): a buffer of the
// program, one of the scratch buffers the renderer asked for, or the
// element offset of a view buffer within its slot's storage, an int (a long
// when the storage has 2^31 elements or more) that the executable sets for
// every step of a loop.
type argRef = kir.Arg

var bufArg, scratchArg, viewArg = kir.BufArg, kir.ScratchArg, kir.ViewArg

func scratchName(i int) string { return "p" + strconv.Itoa(i) }
func viewName(id int) string   { return "v" + strconv.Itoa(id) }

// wideView reports whether the offsets of view buffer b need a long: its
// storage has too many elements for an int.
func wideView(p *kir.Program, b *kir.Buffer) bool {
	return b.View != nil && p.Buffers[b.View.Of].Size() >= math.MaxInt32
}

// viewPrologue returns the statements that start a __kernel whose launch
// arguments are args: every view buffer's pointer, which the executable
// binds to its slot's storage, moves to the view's first element, so that
// the kernel's code addresses a view like any buffer. Kernels without
// views have no prologue.
func viewPrologue(args []argRef) string {
	var b strings.Builder
	for _, a := range args {
		if a.View >= 0 {
			fmt.Fprintf(&b, "\t%s += %s;\n", bufName(a.View), viewName(a.View))
		}
	}
	return b.String()
}

// launchPlan is one kernel launch of a rendered program: a 1-D range of
// Global work-items in work-groups of Local (0: the backend's choice).
type launchPlan struct {
	Fn string // the __kernel function
	// Name is the launch's own function name, for messages and
	// profiles: Fn is another's when the code is the same (render_shard.go).
	Name     string
	Kernel   int    // the kir kernel it computes (part of)
	Strategy string // "loops", "reduce", "gemm", "gemm-mma", … for messages
	Args     []argRef
	Global   int
	Local    int
	// Fixed says the kernel was written for exactly Local work-items per
	// group (reqd_work_group_size).
	Fixed bool
	// Shard is the part of the program holding the kernel when the
	// program is built in parts (render_shard.go).
	Shard int
	// A kernel with one independent work-item per point and no barriers
	// (loops and combining kernels with int indices) can share a launch
	// with others: params is its parameter list, body its statements
	// after the work-item index gid is set, and span where its __kernel
	// text lies in the source being written.
	params, body string
	span         [2]int
}

// rendered is a whole program in OpenCL C with its launches in order.
type rendered struct {
	Source   string
	Launches []launchPlan
	// Scratch lists the byte sizes of the extra buffers the launches use
	// (partial results of split reductions).
	Scratch []int
	FP64    bool
	// Shards is the number of parts the source can be built in.
	Shards int
}

// traits is what rendering needs to know about the device.
type traits struct {
	Name          string
	GPU           bool
	ComputeUnits  int
	MaxWorkGroup  int
	LocalMemBytes int
	FP64          bool
	// MMA selects the tensor-core matrix product for f32 gemm kernels:
	// "" (none), "tf32" or "3xtf32". EmulateMMA renders the warp-level
	// instruction as portable code (for testing its data layout anywhere).
	MMA        string
	EmulateMMA bool
	// NoMerge keeps every kernel in a launch of its own.
	NoMerge bool
	// MMAMin, when positive, keeps products of fewer multiply-adds off
	// the tensor cores.
	MMAMin int
	// Force, for tests, overrides the strategy choice of every kernel that
	// admits it: "loops" or "reduce". GEMMTile picks the gemm tiling and
	// Split the number of reduction splits; either (or EmulateMMA) selects
	// the gemm template on CPU devices too.
	Force    string
	GEMMTile int
	Split    int
}

// renderer turns a kir.Program into OpenCL C.
type renderer struct {
	p   *kir.Program
	t   traits
	out strings.Builder
	r   rendered
}

// render renders every kernel of p for a device with traits t.
func render(p *kir.Program, t traits) (*rendered, error) {
	if t.MaxWorkGroup <= 0 {
		t.MaxWorkGroup = 256
	}
	if t.ComputeUnits <= 0 {
		t.ComputeUnits = 1
	}
	r := &renderer{p: p, t: t}
	for _, b := range p.Buffers {
		if b.DType == tile.Float64 {
			r.r.FP64 = true
		}
	}
	if r.r.FP64 && !t.FP64 {
		for _, b := range p.Buffers {
			if b.DType == tile.Float64 {
				return nil, fmt.Errorf("opencl: program %q: buffer b%d %q is f64, but device %q has no double precision (cl_khr_fp64)", p.Name, b.ID, b.Name, t.Name)
			}
		}
	}
	fmt.Fprintf(&r.out, "// Program %q: %d kernels, rendered by Tartan's OpenCL backend.\n", p.Name, len(p.Kernels))
	r.out.WriteString(preamble)
	if r.r.FP64 {
		r.out.WriteString(preambleFP64)
	}
	if usesMMA(p, t) {
		r.out.WriteString(mmaPreamble(t))
	}
	head := r.out.Len()
	for i, k := range p.Kernels {
		if k.Shape.Size() == 0 {
			continue // nothing to compute
		}
		if err := r.kernel(i, k); err != nil {
			return nil, fmt.Errorf("opencl: program %q: kernel %d (%s): %w", p.Name, i, k.Name, err)
		}
	}
	src, err := r.mergeLaunches()
	if err != nil {
		return nil, err
	}
	r.r.Source = r.shardLaunches(r.dedupKernels(src, head))
	return &r.r, nil
}

// kernelFn returns the C function name of kernel i: the kernel's own name
// when it is a C identifier (the compiler's names, such as k3_conv, are),
// else k<i> followed by its letters and digits.
func kernelFn(i int, k *kir.Kernel) string {
	valid := k.Name != "" && len(k.Name) <= 48 && !(k.Name[0] >= '0' && k.Name[0] <= '9') && !strings.HasPrefix(k.Name, "tt_")
	for _, c := range k.Name {
		if !(c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9') {
			valid = false
		}
	}
	prefix := "k" + strconv.Itoa(i)
	if valid && (k.Name == prefix || strings.HasPrefix(k.Name, prefix+"_")) {
		return k.Name
	}
	var b strings.Builder
	b.WriteString(prefix)
	b.WriteByte('_')
	for _, c := range k.Name {
		if b.Len() > 40 {
			break
		}
		if c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' {
			b.WriteRune(c)
		} else {
			b.WriteByte('_')
		}
	}
	return strings.TrimSuffix(b.String(), "_")
}

// kernel renders one kir kernel with the strategy that suits it.
func (r *renderer) kernel(i int, k *kir.Kernel) error {
	fmt.Fprintf(&r.out, "\n/*\n%s*/\n", commentSafe(k.String()))
	strategy := r.chooseStrategy(k)
	switch strategy.kind {
	case "gemm":
		return r.renderGEMM(i, k, strategy.gemm)
	case "reduce":
		return r.renderReduce(i, k)
	case "scatter":
		if r.renderScatter(i, k) {
			return nil
		}
	}
	if strategy.note != "" {
		fmt.Fprintf(&r.out, "// loops: %s\n", strategy.note)
	}
	return r.renderLoops(i, k)
}

func commentSafe(s string) string { return strings.ReplaceAll(s, "*/", "* /") }

type choice struct {
	kind string
	gemm *gemmPlan
	note string
}

// reducePoints returns the number of points of k's reduction loops.
func reducePoints(k *kir.Kernel) int {
	n := 1
	for _, l := range k.Reduce {
		n *= max(l.Hi-l.Lo+1, 0)
	}
	return n
}

// chooseStrategy picks the kernel template: the compiler's gemm when its
// view maps onto the tiled matrix product, the parallel reduction when the
// compiler asked for one or when the output has too few points to occupy
// the device while each point reduces many, and otherwise the loop nest.
func (r *renderer) chooseStrategy(k *kir.Kernel) choice {
	outs, red := k.Shape.Size(), reducePoints(k)
	canReduce := len(k.Reduce) > 0 && k.Agg != tile.Assign && red > 1
	switch r.t.Force {
	case "loops":
		return choice{kind: "loops", note: "forced"}
	case "reduce":
		if canReduce {
			return choice{kind: "reduce"}
		}
	}
	var note string
	if k.Schedule.Strategy == "scatter" && k.Schedule.Scatter != nil {
		return choice{kind: "scatter"}
	}
	if k.Schedule.Strategy == "gemm" {
		pl, why := planGEMM(r.p, k)
		switch {
		case pl == nil:
			note = "not rendered as a matrix product: " + why
		case !r.t.GPU && r.t.GEMMTile == 0 && r.t.Split == 0 && !r.t.EmulateMMA:
			// On CPU devices (PoCL) the work-group barriers of the tiled
			// template cost more to compile and run than the loop nest,
			// which the implementation vectorises across work-items.
			note = "matrix product on a CPU device"
		default:
			return choice{kind: "gemm", gemm: pl}
		}
	}
	if canReduce {
		if k.Schedule.Strategy == "reduce" || (r.t.GPU && outs < 256*r.t.ComputeUnits && red >= 256) {
			return choice{kind: "reduce"}
		}
	}
	return choice{kind: "loops", note: note}
}

// needWide reports whether k needs 64-bit index arithmetic: a buffer, the
// output space, the reduction space or an index expression beyond int.
func needWide(p *kir.Program, k *kir.Kernel) bool {
	const lim = math.MaxInt32
	if k.Shape.Size() >= lim || reducePoints(k) >= lim || p.Buffers[k.Out].Size() >= lim {
		return true
	}
	vars := k.VarRanges()
	wide := false
	checkIx := func(x *kir.Ix) {
		if lo, hi, ok := kir.Bounds(x, vars); ok && (lo <= -lim || hi >= lim) {
			wide = true
		}
	}
	var walk func(e *kir.Expr)
	walkIx := func(x *kir.Ix) {
		checkIx(x)
		var sub func(x *kir.Ix)
		sub = func(x *kir.Ix) {
			if x == nil {
				return
			}
			if x.Op == kir.IxValue {
				walk(x.E)
			}
			sub(x.A)
			sub(x.B)
		}
		sub(x)
	}
	walk = func(e *kir.Expr) {
		if e == nil {
			return
		}
		if e.Op == kir.Load && e.Buf >= 0 && e.Buf < len(p.Buffers) {
			if p.Buffers[e.Buf].Size() >= lim {
				wide = true
			}
			walkIx(kir.Offset(e.Index, p.Buffers[e.Buf].Shape, vars))
		}
		for _, x := range e.Index {
			walkIx(x)
		}
		for _, a := range e.Args {
			walk(a)
		}
	}
	walk(k.Body)
	walk(k.Epilogue)
	for _, c := range k.Where {
		walkIx(c.X)
	}
	return wide
}

// varNames returns the C names of k's loop variables: x<d> for output loop
// d, r<i> for reduction loop i.
func varNames(k *kir.Kernel) []string {
	names := make([]string, 0, k.NumVars())
	for d := range k.Shape {
		names = append(names, "x"+strconv.Itoa(d))
	}
	for i := range k.Reduce {
		names = append(names, "r"+strconv.Itoa(i))
	}
	return names
}

// writer builds indented C code.
type writer struct {
	b   strings.Builder
	ind int
}

func (w *writer) line(format string, args ...any) {
	for range w.ind {
		w.b.WriteByte('\t')
	}
	fmt.Fprintf(&w.b, format, args...)
	w.b.WriteByte('\n')
}

func (w *writer) open(format string, args ...any) {
	w.line(format, args...)
	w.ind++
}

func (w *writer) close(s string) {
	w.ind--
	w.line("%s", s)
}

// idxType returns the C type of index arithmetic.
func idxType(wide bool) string {
	if wide {
		return "long"
	}
	return "int"
}

// decodeVars writes the declarations of the loop variables vars (each at its
// range's low end plus its position) from the row-major linear index idx
// over their extents.
func decodeVars(w *writer, it, idx string, vars []int, ranges []kir.Range, names []string, wide bool) {
	cur := idx
	for j := len(vars) - 1; j >= 0; j-- {
		v := vars[j]
		ext := ranges[v].Hi - ranges[v].Lo + 1
		lo := ranges[v].Lo
		pos := cur
		if j > 0 && ext > 1 {
			pos = "(" + cur + " % " + intLiteral(ext, wide) + ")"
		}
		if ext <= 1 {
			pos = "0"
		}
		if lo != 0 {
			pos = "(" + pos + " + " + intLiteral(lo, wide) + ")"
		}
		w.line("const %s %s = %s;", it, names[v], pos)
		if j > 0 && ext > 1 {
			next := "t_" + names[v]
			w.line("const %s %s = %s / %s;", it, next, cur, intLiteral(ext, wide))
			cur = next
		}
	}
}

// params renders the parameter list: the output buffer first, then every
// buffer read (in the order the code first reads them), then scratch buffers, then the offset of every
// view among the buffers (see viewPrologue). restrict is used only when no
// two of the buffers share storage (a view shares its parent's).
func (r *renderer) params(out int, reads bufSet, scratch []scratchParam) (string, []argRef) {
	ids := []int{out}
	for _, id := range reads.ids() {
		if id != out {
			ids = append(ids, id)
		}
	}
	slots := map[int]bool{}
	distinct := true
	for _, id := range ids {
		s := r.p.Buffers[id].Slot
		if slots[s] {
			distinct = false
		}
		slots[s] = true
	}
	restrict := ""
	if distinct {
		restrict = "restrict "
	}
	var parts []string
	var args []argRef
	for j, id := range ids {
		b := r.p.Buffers[id]
		c := "const "
		if j == 0 {
			c = ""
		}
		if j == 0 && reads.has(out) {
			// The kernel updates its output in place.
			restrict = ""
		}
		parts = append(parts, fmt.Sprintf("__global %s%s* %s%s", c, stype(b.DType), restrict, bufName(id)))
		args = append(args, bufArg(id))
	}
	for _, s := range scratch {
		parts = append(parts, fmt.Sprintf("__global %s* restrict %s", s.ctype, scratchName(s.index)))
		args = append(args, scratchArg(s.index))
	}
	for _, id := range ids {
		if b := r.p.Buffers[id]; b.View != nil {
			parts = append(parts, fmt.Sprintf("const %s %s", idxType(wideView(r.p, b)), viewName(id)))
			args = append(args, viewArg(id))
		}
	}
	return strings.Join(parts, ", "), args
}

type scratchParam struct {
	index int
	ctype string
}

// addScratch reserves a scratch buffer of the given size.
func (r *renderer) addScratch(bytes int) int {
	r.r.Scratch = append(r.r.Scratch, max(bytes, 16))
	return len(r.r.Scratch) - 1
}

// point holds the rendered pieces of evaluating one point of a kernel.
type point struct {
	where string // condition from the Where list; "" when none
	body  string
	skips []string
	reads bufSet
}

// renderPoint renders k's Where conditions and body with the variable names.
func (r *renderer) renderPoint(k *kir.Kernel, names []string, wide bool) (*point, error) {
	vars := k.VarRanges()
	s := newScope(r.p, vars, names, wide)
	var conds []string
	for _, c := range k.Where {
		lo, hi, ok := kir.Bounds(c.X, vars)
		x := s.ix(c.X)
		if !ok || lo < 0 {
			conds = append(conds, x+" >= 0")
		}
		if !ok || hi >= c.Bound {
			conds = append(conds, fmt.Sprintf("%s < %s", x, intLiteral(c.Bound, hasValue(c.X) || wide)))
		}
		if ok && (hi < 0 || lo >= c.Bound) {
			conds = append(conds, "0")
		}
	}
	body := s.expr(k.Body)
	if s.err != nil {
		return nil, s.err
	}
	return &point{where: strings.Join(conds, " && "), body: body, skips: s.skips, reads: s.bufs}, nil
}

// aggInit returns the identity of aggregation a in dtype dt.
func aggInit(a tile.Agg, dt tile.DType) string {
	switch a {
	case tile.Prod:
		return literal(dt, 1)
	case tile.Max:
		switch dt {
		case tile.Bool:
			return literal(dt, 0)
		case tile.Int32:
			return literal(dt, math.MinInt32)
		case tile.Int64:
			return literal(dt, math.MinInt64)
		}
		return literal(dt, math.Inf(-1))
	case tile.Min:
		switch dt {
		case tile.Bool:
			return literal(dt, 1)
		case tile.Int32:
			return literal(dt, math.MaxInt32)
		case tile.Int64:
			return "9223372036854775807L"
		}
		return literal(dt, math.Inf(1))
	}
	return literal(dt, 0)
}

// aggStep renders acc combined with v by aggregation a in dtype dt.
func aggStep(a tile.Agg, dt tile.DType, acc, v string) string {
	switch a {
	case tile.Sum:
		switch dt {
		case tile.Bool:
			return "(" + acc + " | " + v + ")"
		case tile.Int32:
			return "((int)((uint)" + acc + " + (uint)(" + v + ")))"
		case tile.Int64:
			return "((long)((ulong)" + acc + " + (ulong)(" + v + ")))"
		}
		return acc + " + " + v
	case tile.Prod:
		switch dt {
		case tile.Bool:
			return "(" + acc + " & " + v + ")"
		case tile.Int32:
			return "((int)((uint)" + acc + " * (uint)(" + v + ")))"
		}
		return acc + " * " + v
	case tile.Max:
		if dt.IsFloat() {
			return "tt_max_" + suffix(dt) + "(" + acc + ", " + v + ")"
		}
		return "max(" + acc + ", " + v + ")"
	case tile.Min:
		if dt.IsFloat() {
			return "tt_min_" + suffix(dt) + "(" + acc + ", " + v + ")"
		}
		return "min(" + acc + ", " + v + ")"
	}
	return v
}

// needsAny reports whether the aggregation must track whether any point
// contributed: with no contribution the result is 0, not the identity.
func needsAny(a tile.Agg) bool { return a == tile.Max || a == tile.Min || a == tile.Prod }

// accumulate writes the evaluation of one point into acc (and any).
func accumulate(w *writer, k *kir.Kernel, pt *point, trackAny bool) {
	dt := k.Body.DType
	if pt.where != "" {
		w.open("if (%s) {", pt.where)
	}
	w.line("const %s v = %s;", ctype(dt), pt.body)
	if len(pt.skips) > 0 {
		w.open("if (%s) {", strings.Join(pt.skips, " && "))
	}
	w.line("acc = %s;", aggStep(k.Agg, dt, "acc", "v"))
	if trackAny {
		w.line("any = 1;")
	}
	if len(pt.skips) > 0 {
		w.close("}")
	}
	if pt.where != "" {
		w.close("}")
	}
}

// mayMiss reports whether some output point may get no contribution.
func mayMiss(k *kir.Kernel, pt *point) bool {
	if pt.where != "" || len(pt.skips) > 0 {
		return true
	}
	for _, l := range k.Reduce {
		if l.Hi < l.Lo {
			return true
		}
	}
	return false
}

// finish writes the epilogue and the store of acc at the output point whose
// row-major offset is off; the output loop variables are declared.
func (r *renderer) finish(w *writer, k *kir.Kernel, names []string, wide bool, off string) (bufSet, error) {
	out := r.p.Buffers[k.Out]
	v := "acc"
	reads := bufSet{}
	if k.Epilogue != nil {
		vars := k.VarRanges()[:len(k.Shape)]
		en := append([]string(nil), names[:len(k.Shape)]...)
		s := newScope(r.p, vars, en, wide)
		s.acc, s.accDT = "acc", k.Body.DType
		v = s.expr(k.Epilogue)
		if s.err != nil {
			return nil, fmt.Errorf("epilogue: %w", s.err)
		}
		reads = s.bufs
		v = convert(k.Epilogue.DType, out.DType, v)
	} else {
		v = convert(k.Body.DType, out.DType, v)
	}
	w.line("%s", store(out, off, v))
	return reads, nil
}

// renderLoops renders the generic loop nest: one work-item per output point,
// the reduction loops in order inside it.
func (r *renderer) renderLoops(i int, k *kir.Kernel) error {
	wide := needWide(r.p, k)
	it := idxType(wide)
	names := varNames(k)
	vars := k.VarRanges()
	pt, err := r.renderPoint(k, names, wide)
	if err != nil {
		return err
	}
	dt := k.Body.DType
	track := needsAny(k.Agg) && mayMiss(k, pt)
	var w writer
	w.ind = 1
	total := k.Shape.Size()
	w.line("if (gid >= %s) return;", intLiteral(total, wide))
	outs := make([]int, len(k.Shape))
	for d := range outs {
		outs[d] = d
	}
	decodeVars(&w, it, "gid", outs, vars, names, wide)
	w.line("%s acc = %s;", ctype(dt), aggInit(k.Agg, dt))
	if track {
		w.line("uchar any = 0;")
	}
	for j, l := range k.Reduce {
		if j == len(k.Reduce)-1 && k.Schedule.Unroll > 1 {
			w.line("#pragma unroll %d", k.Schedule.Unroll)
		}
		v := names[len(k.Shape)+j]
		w.open("for (%s %s = %s; %s <= %s; %s++) {", it, v, intLiteral(l.Lo, wide), v, intLiteral(l.Hi, wide), v)
	}
	accumulate(&w, k, pt, track)
	for range k.Reduce {
		w.close("}")
	}
	if track {
		w.line("if (!any) acc = %s;", literal(dt, 0))
	}
	reads, err := r.finish(&w, k, names, wide, "gid")
	if err != nil {
		return err
	}
	for _, id := range pt.reads.ids() {
		reads.add(id)
	}
	fn := kernelFn(i, k)
	params, args := r.params(k.Out, reads, nil)
	r.pointKernel(launchPlan{Fn: fn, Kernel: i, Strategy: "loops", Args: args, Global: total}, params, w.b.String(), wide)
	return nil
}

// pointKernel writes a kernel whose work-item gid computes one point,
// given its body after gid is set, and adds its launch.
func (r *renderer) pointKernel(lp launchPlan, params, body string, wide bool) {
	it := idxType(wide)
	body = viewPrologue(lp.Args) + body
	lp.span[0] = r.out.Len()
	fmt.Fprintf(&r.out, "__kernel void %s(%s) {\n\tconst %s gid = (%s)get_global_id(0);\n%s}\n", lp.Fn, params, it, it, body)
	lp.span[1] = r.out.Len()
	if !wide {
		lp.params, lp.body = params, body
	}
	r.r.Launches = append(r.r.Launches, lp)
}
