package cpu

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/tartanml/tartan/kir"
	"github.com/tartanml/tartan/tile"
)

// rewriter simplifies a kernel's expressions before they are compiled, with
// rewrites that never change a value:
//
//   - a select whose condition on index values the loop ranges and the
//     affine Where conditions already decide is its chosen branch (see
//     implier);
//   - an index value of a loaded integer or boolean (i64(int(e))) is the
//     value itself, cast;
//   - a comparison of a value of known small integer range (a boolean, a
//     cast boolean) with a constant is decided, or becomes the boolean or
//     its negation;
//   - And, Or, Not and Select with constant or negated operands fold;
//   - structurally equal subtrees become one node (hash-consing), loads
//     being equal when they read the same buffer at the same element
//     offset, so every value is computed once per chunk.
type rewriter struct {
	p      *kir.Program
	vars   []kir.Range
	memo   map[*kir.Expr]*kir.Expr
	ixMemo map[*kir.Ix]*kir.Ix
	cons   map[string]*kir.Expr
	key    map[*kir.Expr]string
}

func newRewriter(p *kir.Program, k *kir.Kernel) *rewriter {
	return &rewriter{p: p, vars: k.VarRanges(), memo: map[*kir.Expr]*kir.Expr{}, ixMemo: map[*kir.Ix]*kir.Ix{},
		cons: map[string]*kir.Expr{}, key: map[*kir.Expr]string{}}
}

// rewriteKernel returns a copy of k with simplified expressions. The GEMM
// view of a copy points at the rewritten operands.
func rewriteKernel(p *kir.Program, k *kir.Kernel) *kir.Kernel {
	return rewriteWith(newRewriter(p, k), k)
}

func rewriteWith(r *rewriter, k *kir.Kernel) *kir.Kernel {
	out := *k
	out.Where = make([]kir.Cond, len(k.Where))
	for i, c := range k.Where {
		out.Where[i] = kir.Cond{X: r.ix(c.X), Bound: c.Bound}
	}
	// Guards that the loop ranges and the affine Where conditions decide
	// go first (see implier): the body and a condition on a value are
	// evaluated only where every Where condition holds, the epilogue at
	// every output point.
	im := implier{ranges: r.vars}
	for _, c := range k.Where {
		if ixVars(c.X, map[int]bool{}) {
			im.where = append(im.where, c)
		}
	}
	for i, c := range k.Where {
		if c.X.Op == kir.IxValue {
			if e := im.simplify(c.X.E); e != c.X.E {
				out.Where[i] = kir.Cond{X: r.ix(&kir.Ix{Op: kir.IxValue, E: e}), Bound: c.Bound}
			}
		}
	}
	out.Body = r.expr(im.simplify(k.Body))
	if k.Epilogue != nil {
		out.Epilogue = r.expr((&implier{ranges: r.vars}).simplify(k.Epilogue))
	}
	if v := k.Schedule.GEMM; v != nil {
		nv := *v
		nv.A, nv.B = r.expr(im.simplify(v.A)), r.expr(im.simplify(v.B))
		out.Schedule.GEMM = &nv
		if nv.A == nil || nv.B == nil || out.Body.Op != kir.Apply || len(out.Body.Args) != 2 ||
			nv.A != out.Body.Args[0] && nv.A != out.Body.Args[1] || nv.B != out.Body.Args[0] && nv.B != out.Body.Args[1] {
			out.Schedule.GEMM = nil
		}
	}
	return &out
}

func (r *rewriter) ix(x *kir.Ix) *kir.Ix {
	if x == nil {
		return nil
	}
	if y, ok := r.ixMemo[x]; ok {
		return y
	}
	y := x
	switch x.Op {
	case kir.IxAdd:
		a, b := r.ix(x.A), r.ix(x.B)
		if a != x.A || b != x.B {
			y = &kir.Ix{Op: x.Op, A: a, B: b}
		}
	case kir.IxMul, kir.IxFloorDiv, kir.IxMod:
		if a := r.ix(x.A); a != x.A {
			y = &kir.Ix{Op: x.Op, A: a, C: x.C}
		}
	case kir.IxValue:
		if e := r.expr(x.E); e != x.E {
			y = &kir.Ix{Op: x.Op, E: e}
		}
	}
	r.ixMemo[x] = y
	return y
}

func (r *rewriter) expr(e *kir.Expr) *kir.Expr {
	if y, ok := r.memo[e]; ok {
		return y
	}
	y := r.simplify(r.children(e))
	y = r.intern(y)
	r.memo[e] = y
	return y
}

// children returns e with rewritten arguments and indices (e itself when
// nothing changed).
func (r *rewriter) children(e *kir.Expr) *kir.Expr {
	changed := false
	args := make([]*kir.Expr, len(e.Args))
	for i, a := range e.Args {
		args[i] = r.expr(a)
		changed = changed || args[i] != a
	}
	idx := make([]*kir.Ix, len(e.Index))
	for i, x := range e.Index {
		idx[i] = r.ix(x)
		changed = changed || idx[i] != x
	}
	if !changed {
		return e
	}
	c := *e
	c.Args, c.Index = args, idx
	return &c
}

func constOf(dt tile.DType, v float64) *kir.Expr {
	return &kir.Expr{Op: kir.Const, DType: dt, Value: tile.RoundTo(dt, v)}
}

func isConst(e *kir.Expr) (float64, bool) {
	if e.Op == kir.Const {
		return e.Value, true
	}
	return 0, false
}

// boolSource returns the boolean b when e's value is b's value (0 or 1),
// possibly cast to another dtype or read back as an index value.
func boolSource(e *kir.Expr) *kir.Expr {
	for e.DType != tile.Bool {
		switch {
		case e.Op == kir.Cast:
			e = e.Args[0]
		case e.Op == kir.IndexValue && e.Index[0].Op == kir.IxValue:
			e = e.Index[0].E
		default:
			return nil
		}
	}
	return e
}

func not(b *kir.Expr) *kir.Expr {
	if b.Op == kir.Apply && b.Fn == tile.Not {
		return b.Args[0]
	}
	if v, ok := isConst(b); ok {
		return constOf(tile.Bool, b2f(v == 0))
	}
	return &kir.Expr{Op: kir.Apply, DType: tile.Bool, Fn: tile.Not, Args: []*kir.Expr{b}}
}

func compare(fn tile.Fn, a, b float64) bool {
	switch fn {
	case tile.Eq:
		return a == b
	case tile.Ne:
		return a != b
	case tile.Lt:
		return a < b
	case tile.Le:
		return a <= b
	case tile.Gt:
		return a > b
	}
	return a >= b
}

func (r *rewriter) simplify(e *kir.Expr) *kir.Expr {
	switch e.Op {
	case kir.IndexValue:
		// An index value of a loaded integer or boolean is that value.
		if x := e.Index[0]; x.Op == kir.IxValue && (x.E.DType.IsInt() || x.E.DType == tile.Bool) && !e.DType.IsFloat() {
			if x.E.DType == e.DType {
				return x.E
			}
			return &kir.Expr{Op: kir.Cast, DType: e.DType, Args: []*kir.Expr{x.E}}
		}
	case kir.Cast:
		if e.Args[0].DType == e.DType {
			return e.Args[0]
		}
	case kir.Apply:
		return r.simplifyApply(e)
	}
	return e
}

// hasSkip reports whether e reads a Skip load anywhere, loaded indices
// included: out of range, such a load skips the point even in a branch
// whose value is not used, so no rewrite may drop it.
func hasSkip(e *kir.Expr) bool {
	if e.Op == kir.Load && e.OOB == kir.Skip {
		return true
	}
	for _, x := range e.Index {
		if ixHasSkip(x) {
			return true
		}
	}
	for _, a := range e.Args {
		if hasSkip(a) {
			return true
		}
	}
	return false
}

func ixHasSkip(x *kir.Ix) bool {
	if x == nil {
		return false
	}
	if x.Op == kir.IxValue {
		return hasSkip(x.E)
	}
	return ixHasSkip(x.A) || ixHasSkip(x.B)
}

// simplifyApply rewrites an Apply, unless the rewrite would drop a Skip
// load.
func (r *rewriter) simplifyApply(e *kir.Expr) *kir.Expr {
	y := r.simplifyApply1(e)
	if y == e || !hasSkip(e) {
		return y
	}
	for _, a := range e.Args {
		if hasSkip(a) && !occursIn(a, y) {
			return e
		}
	}
	return y
}

// occursIn reports whether node a occurs in the tree y.
func occursIn(a, y *kir.Expr) bool {
	if a == y {
		return true
	}
	for _, x := range y.Args {
		if occursIn(a, x) {
			return true
		}
	}
	for _, x := range y.Index {
		if x != nil && x.Op == kir.IxValue && occursIn(a, x.E) {
			return true
		}
	}
	return false
}

func (r *rewriter) simplifyApply1(e *kir.Expr) *kir.Expr {
	a := e.Args
	switch {
	case e.Fn.IsComparison():
		// A boolean (in any dtype) against a constant: evaluate both cases.
		for i := range 2 {
			c, ok := isConst(a[1-i])
			b := boolSource(a[i])
			if !ok || b == nil {
				continue
			}
			at := func(v float64) bool {
				if i == 0 {
					return compare(e.Fn, v, c)
				}
				return compare(e.Fn, c, v)
			}
			f0, f1 := at(0), at(1)
			switch {
			case f0 == f1:
				return constOf(tile.Bool, b2f(f0))
			case f1:
				return b
			default:
				return not(b)
			}
		}
	case e.Fn == tile.Not:
		if v, ok := isConst(a[0]); ok {
			return constOf(tile.Bool, b2f(v == 0))
		}
		if a[0].Op == kir.Apply && a[0].Fn == tile.Not {
			return a[0].Args[0]
		}
	case e.Fn == tile.And || e.Fn == tile.Or:
		for i := range 2 {
			if v, ok := isConst(a[i]); ok {
				if (v != 0) == (e.Fn == tile.And) {
					return a[1-i]
				}
				return constOf(tile.Bool, v)
			}
		}
		if a[0] == a[1] {
			return a[0]
		}
	case e.Fn == tile.Select:
		if v, ok := isConst(a[0]); ok {
			if v != 0 {
				return a[1]
			}
			return a[2]
		}
		if a[1] == a[2] {
			return a[1]
		}
		if a[0].Op == kir.Apply && a[0].Fn == tile.Not {
			return &kir.Expr{Op: kir.Apply, DType: e.DType, Fn: tile.Select, Args: []*kir.Expr{a[0].Args[0], a[2], a[1]}}
		}
	}
	return e
}

// intern returns the canonical node structurally equal to e.
func (r *rewriter) intern(e *kir.Expr) *kir.Expr {
	k := r.keyOf(e)
	if c, ok := r.cons[k]; ok {
		return c
	}
	r.cons[k] = e
	r.key[e] = k
	return e
}

func (r *rewriter) keyOf(e *kir.Expr) string {
	if k, ok := r.key[e]; ok {
		return k
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%d:%d:%d:%d:%s", e.Op, e.DType, e.Fn, e.OOB, strconv.FormatFloat(e.Value, 'g', -1, 64))
	switch e.Op {
	case kir.Load:
		fmt.Fprintf(&b, ":b%d", e.Buf)
		shape := r.p.Buffers[e.Buf].Shape
		inRange := true
		for d, x := range e.Index {
			lo, hi, ok := kir.Bounds(x, r.vars)
			inRange = inRange && ok && lo >= 0 && hi < shape[d]
		}
		if inRange {
			b.WriteString("@" + kir.Offset(e.Index, shape, r.vars).String())
		} else {
			for _, x := range e.Index {
				b.WriteString("[" + r.ixKey(x) + "]")
			}
		}
	case kir.Random:
		fmt.Fprintf(&b, ":s%d", e.Stream)
	}
	if e.Op != kir.Load {
		for _, x := range e.Index {
			b.WriteString("[" + r.ixKey(x) + "]")
		}
	}
	for _, a := range e.Args {
		b.WriteString("(" + r.keyOf(a) + ")")
	}
	if e.Op == kir.Const && math.IsNaN(e.Value) {
		b.WriteString("nan")
	}
	return b.String()
}

// ixKey prints an index with its loaded values by their canonical keys.
func (r *rewriter) ixKey(x *kir.Ix) string {
	if x == nil {
		return ""
	}
	switch x.Op {
	case kir.IxAdd:
		return "(" + r.ixKey(x.A) + "+" + r.ixKey(x.B) + ")"
	case kir.IxMul:
		return "(" + r.ixKey(x.A) + "*" + strconv.Itoa(x.C) + ")"
	case kir.IxFloorDiv:
		return "(" + r.ixKey(x.A) + "/" + strconv.Itoa(x.C) + ")"
	case kir.IxMod:
		return "(" + r.ixKey(x.A) + "%" + strconv.Itoa(x.C) + ")"
	case kir.IxValue:
		return "int(" + r.keyOf(x.E) + ")"
	}
	return x.String()
}

// implier drops from a kernel's expressions the guards that the loop
// ranges and the affine Where conditions already decide: a select(c, X, Y)
// whose condition c holds at every point where those conditions hold is X
// there, provided Y has no Skip load (whose being out of range would skip
// the point). Padded pooling wraps its window value in such a guard,
// select(i64(2·y + k) ≥ 0 && i64(2·y + k) < H, V, 0), which repeats the
// kernel's own bounds; without it the value is one load and a ReLU.
type implier struct {
	ranges []kir.Range
	where  []kir.Cond // the affine Where conditions
}

// maxImpliedPoints bounds the points implied enumerates for one conjunct.
const maxImpliedPoints = 1 << 16

// simplify returns e without its decided guards; it returns e itself when
// it has none, and never changes the value e has at a point where every
// Where condition holds.
func (m *implier) simplify(e *kir.Expr) *kir.Expr {
	if e.Op == kir.Apply && e.Fn == tile.Select && len(e.Args) == 3 && !hasSkip(e.Args[2]) &&
		m.implied(e.Args[0]) {
		return m.simplify(e.Args[1])
	}
	if e.Op != kir.Apply && e.Op != kir.Cast {
		return e
	}
	var args []*kir.Expr
	for i, a := range e.Args {
		if s := m.simplify(a); s != a {
			if args == nil {
				args = append([]*kir.Expr(nil), e.Args...)
			}
			args[i] = s
		}
	}
	if args == nil {
		return e
	}
	out := *e
	out.Args = args
	return &out
}

// implied reports whether condition c, built of index values and constants,
// is nonzero at every point of the loop ranges where the affine Where
// conditions hold. A conjunction is decided one conjunct at a time; each
// conjunct by enumerating the ranges of the variables it uses, under the
// Where conditions that use only those variables (the others can only
// remove points).
func (m *implier) implied(c *kir.Expr) bool {
	if c.Op == kir.Apply && c.Fn == tile.And && len(c.Args) == 2 {
		return m.implied(c.Args[0]) && m.implied(c.Args[1])
	}
	used := map[int]bool{}
	if !indexVars(c, used) {
		return false
	}
	var vars []int
	points := 1
	for v := range used {
		n := m.ranges[v].Hi - m.ranges[v].Lo + 1
		if n <= 0 || points > maxImpliedPoints/n {
			return false
		}
		points *= n
		vars = append(vars, v)
	}
	var conds []kir.Cond
	for _, wc := range m.where {
		seen := map[int]bool{}
		ixVars(wc.X, seen)
		inside := true
		for v := range seen {
			inside = inside && used[v]
		}
		if inside {
			conds = append(conds, wc)
		}
	}
	vals := make([]int, len(m.ranges))
	for _, v := range vars {
		vals[v] = m.ranges[v].Lo
	}
	for {
		hold := true
		for _, wc := range conds {
			if x := kir.EvalIx(wc.X, vals, nil); x < 0 || x >= wc.Bound {
				hold = false
				break
			}
		}
		if hold {
			if x, ok := indexExprValue(c, vals); !ok || x == 0 {
				return false
			}
		}
		// Next point, the last variable fastest.
		i := len(vars) - 1
		for ; i >= 0; i-- {
			v := vars[i]
			if vals[v]++; vals[v] <= m.ranges[v].Hi {
				break
			}
			vals[v] = m.ranges[v].Lo
		}
		if i < 0 {
			return true
		}
	}
}

// indexVars adds to seen the loop variables e uses, and reports whether e
// is built only of constants, index values of affine indices, casts,
// comparisons, logical operators, and integer addition, subtraction and
// multiplication (indexExprValue's nodes).
func indexVars(e *kir.Expr, seen map[int]bool) bool {
	switch e.Op {
	case kir.Const:
		return true
	case kir.IndexValue:
		return len(e.Index) == 1 && ixVars(e.Index[0], seen)
	case kir.Cast, kir.Apply:
		if e.Op == kir.Apply {
			switch e.Fn {
			case tile.Eq, tile.Ne, tile.Lt, tile.Le, tile.Gt, tile.Ge, tile.And, tile.Or, tile.Not:
			case tile.Add, tile.Sub, tile.Mul:
				if !e.DType.IsInt() {
					return false
				}
			default:
				return false
			}
		}
		for _, a := range e.Args {
			if !indexVars(a, seen) {
				return false
			}
		}
		return len(e.Args) > 0
	}
	return false
}

// indexExprValue evaluates e, an expression indexVars accepts, at the loop
// values vals with kir.Interpret's rules: every node's value rounded to its
// dtype.
func indexExprValue(e *kir.Expr, vals []int) (float64, bool) {
	switch e.Op {
	case kir.Const:
		return tile.RoundTo(e.DType, e.Value), true
	case kir.IndexValue:
		return tile.RoundTo(e.DType, float64(kir.EvalIx(e.Index[0], vals, nil))), true
	}
	var a, b float64
	var ok bool
	if a, ok = indexExprValue(e.Args[0], vals); !ok {
		return 0, false
	}
	if e.Op == kir.Cast {
		return tile.RoundTo(e.DType, a), true
	}
	if e.Fn == tile.Not {
		return b2f(a == 0), len(e.Args) == 1
	}
	if len(e.Args) != 2 {
		return 0, false
	}
	if b, ok = indexExprValue(e.Args[1], vals); !ok {
		return 0, false
	}
	var r float64
	switch e.Fn {
	case tile.Eq, tile.Ne, tile.Lt, tile.Le, tile.Gt, tile.Ge:
		r = b2f(compare(e.Fn, a, b))
	case tile.And:
		r = b2f(a != 0 && b != 0)
	case tile.Or:
		r = b2f(a != 0 || b != 0)
	case tile.Add:
		r = a + b
	case tile.Sub:
		r = a - b
	case tile.Mul:
		r = a * b
	default:
		return 0, false
	}
	return tile.RoundTo(e.DType, r), true
}
