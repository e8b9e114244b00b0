package tile

import (
	"fmt"
	"strings"
)

// The textual form of a program has one statement per line; '#' starts a
// comment that runs to the end of the line. The statements are
//
//	graph NAME                              (optional, first)
//	input NAME: DTYPE[DIMS]
//	variable NAME: DTYPE[DIMS]
//	NAME = constant DTYPE[DIMS] DATA        (DATA: one number, or [n, …] row-major)
//	NAME = OP(ARGS)                         (elementwise functions and shape ops)
//	NAME[INDICES : SIZES] = AGG(OPERANDS), CONSTRAINTS   (a contraction)
//	output NAME = TENSOR
//	update VARIABLE = TENSOR
//
// Statements name the tensor they define; later statements refer to it by that
// name. Print writes the nodes of a graph in this form and Parse reads it back.

// maxDepth bounds the nesting of parentheses in index and size expressions.
const maxDepth = 200

// parser reads statements of the textual form.
type parser struct {
	scanner
	sizes map[string]int // size names for output dimensions and bounds
}

// catch turns a syntaxError raised while running f into an error naming its
// line and column; other panics propagate.
func (p *parser) catch(f func()) (err *syntaxError) {
	defer func() {
		if r := recover(); r != nil {
			e, ok := r.(syntaxError)
			if !ok {
				panic(r)
			}
			err = &e
		}
	}()
	f()
	return nil
}

// where formats byte offset off as "line:col".
func (p *parser) where(off int) string {
	l, c := position(p.src, off)
	return fmt.Sprintf("%d:%d", l, c)
}

// ParseContraction parses one contraction statement, such as
//
//	O[n, y, x, c : N, Y/2, X/2, C] = >(I[n, 2*y + i, 2*x + j, c]), i < 2, j < 2
//
// and builds it in g with Contract. Operand names are looked up in operands.
// Output sizes and constraint bounds are integer expressions (+ - * and floor
// division /, parentheses) over integer literals and the names in sizes. Index
// expressions must be affine: sums of integer multiples of index names and
// integers. The output name is not used. Syntax errors are recorded on g as
// op "parse" with the line and column, and an invalid tensor is returned, as
// for every builder error.
func ParseContraction(g *Graph, src string, operands map[string]*Tensor, sizes map[string]int) *Tensor {
	if g.Err() != nil {
		return g.invalid()
	}
	var t *Tensor
	p := &parser{scanner: scanner{src: src}, sizes: sizes}
	serr := p.catch(func() {
		p.next()
		p.skipNewlines()
		p.name("the output name")
		t = p.contraction(g, func(off int, name string) *Tensor {
			x, ok := operands[name]
			if !ok {
				if len(operands) == 0 {
					p.fail(off, "unknown operand %q (no operands are given)", name)
				}
				p.fail(off, "unknown operand %q (the operands are %s)", name, strings.Join(sortedKeys(operands), ", "))
			}
			return x
		})
		p.endStatement()
		p.skipNewlines()
		if p.tok.kind != tEOF {
			p.fail(p.tok.off, "expected end of input after the contraction, found %s", p.describeTok())
		}
	})
	if serr != nil {
		return g.Errorf("parse", "%s: %s", p.where(serr.off), serr.msg)
	}
	return t
}

// contraction parses a contraction statement after its output name and
// builds it; lookup resolves operand names.
func (p *parser) contraction(g *Graph, lookup func(off int, name string) *Tensor) *Tensor {
	p.expect("[", "to open the output indices")
	var out []Affine
	var shape Shape
	if !p.accept("]") {
		for {
			out = append(out, p.affine(0))
			if !p.accept(",") {
				break
			}
		}
		colon := p.expect(":", "between the output indices and the output sizes")
		for {
			shape = append(shape, p.size(0))
			if !p.accept(",") {
				break
			}
		}
		p.expect("]", "to close the output")
		if len(out) != len(shape) {
			p.fail(colon, "the output has %d index expressions but %d sizes", len(out), len(shape))
		}
	}
	p.expect("=", "after the output")
	aggs := map[string]Agg{"+": Sum, ">": Max, "<": Min, "*": Prod, "=": Assign}
	agg, ok := aggs[p.tok.text]
	if p.tok.kind != tPunct || !ok {
		p.fail(p.tok.off, "expected an aggregation (+ > < * =), found %s", p.describeTok())
	}
	p.next()
	p.expect("(", "after the aggregation")
	ops := []Operand{p.operand(lookup)}
	comb := CombNone
	switch {
	case p.accept("*"):
		comb = CombMul
		ops = append(ops, p.operand(lookup))
	case p.accept("+"):
		comb = CombAdd
		ops = append(ops, p.operand(lookup))
	case p.accept("=="):
		comb = CombEq
		ops = append(ops, p.operand(lookup))
		p.expect("?", "in the combination A == B ? C")
		ops = append(ops, p.operand(lookup))
	}
	p.expect(")", "to close the combination (one operand, A * B, A + B or A == B ? C)")
	var cons []Constraint
	for p.accept(",") {
		e := p.affine(0)
		p.expect("<", "in the constraint")
		cons = append(cons, Constraint{Expr: e, Bound: p.size(0)})
	}
	if p.tok.kind != tNewline && p.tok.kind != tEOF {
		p.fail(p.tok.off, "expected ',' and a constraint, or end of statement, found %s", p.describeTok())
	}
	return g.Contract(agg, comb, shape, out, ops, cons...)
}

// operand parses "NAME[index, …]".
func (p *parser) operand(lookup func(off int, name string) *Tensor) Operand {
	off := p.tok.off
	name := p.name("an operand name")
	t := lookup(off, name)
	p.expect("[", "to open the indices of operand "+quoteName(name))
	idx := []Affine{}
	if !p.accept("]") {
		for {
			idx = append(idx, p.affine(0))
			if !p.accept(",") {
				break
			}
		}
		p.expect("]", "to close the indices of operand "+quoteName(name))
	}
	if t.Valid() && len(idx) != t.Rank() {
		p.fail(off, "operand %s is indexed with %d expressions but has shape %v", quoteName(name), len(idx), t.shape)
	}
	return Operand{Tensor: t, Index: idx}
}

// affine parses an index expression: terms joined by + and -.
func (p *parser) affine(depth int) Affine {
	a := p.affineTerm(depth)
	for p.is("+") || p.is("-") {
		op := p.tok
		p.next()
		b := p.affineTerm(depth)
		if op.text == "-" {
			b = b.Times(-1)
		}
		a = p.affineAdd(op.off, a, b)
	}
	return a
}

// affineTerm parses factors joined by *, at most one of them involving an
// index.
func (p *parser) affineTerm(depth int) Affine {
	a := p.affineFactor(depth)
	for {
		switch {
		case p.is("*"):
			off := p.tok.off
			p.next()
			b := p.affineFactor(depth)
			a = p.affineMul(off, a, b)
		case p.is("/"):
			p.fail(p.tok.off, "division is not allowed in an index expression (it is not affine)")
		default:
			return a
		}
	}
}

// affineFactor parses an integer, an index name, a parenthesised expression
// or a negated factor.
func (p *parser) affineFactor(depth int) Affine {
	if depth > maxDepth {
		p.fail(p.tok.off, "expression nested too deeply")
	}
	switch {
	case p.tok.kind == tNumber:
		return Lit(p.intLit("an integer"))
	case p.tok.kind == tIdent:
		return Ix(p.ident("an index"))
	case p.accept("("):
		a := p.affine(depth + 1)
		p.expect(")", "to close the parenthesis")
		return a
	case p.accept("-"):
		return p.affineFactor(depth + 1).Times(-1)
	case p.accept("+"):
		return p.affineFactor(depth + 1)
	}
	p.fail(p.tok.off, "expected an index expression, found %s", p.describeTok())
	return Affine{}
}

// affineAdd returns a + b, failing at off if a coefficient overflows.
func (p *parser) affineAdd(off int, a, b Affine) Affine {
	_, ok := addInt(a.Const, b.Const)
	for _, t := range b.Terms {
		_, ok2 := addInt(a.Coef(t.Index), t.Coef)
		ok = ok && ok2
	}
	if !ok {
		p.fail(off, "integer overflow in index expression")
	}
	return a.Plus(b)
}

// affineMul returns a·b, failing at off unless one side is a constant.
func (p *parser) affineMul(off int, a, b Affine) Affine {
	if len(a.Terms) > 0 && len(b.Terms) > 0 {
		p.fail(off, "the product (%v) * (%v) is not affine: one side must be a constant", a, b)
	}
	if len(a.Terms) > 0 {
		a, b = b, a
	}
	k := a.Const
	_, ok := mulInt(b.Const, k)
	for _, t := range b.Terms {
		_, ok2 := mulInt(t.Coef, k)
		ok = ok && ok2
	}
	if !ok {
		p.fail(off, "integer overflow in index expression")
	}
	return b.Times(k)
}

// size parses an integer expression over literals and size names: terms
// joined by + and -.
func (p *parser) size(depth int) int {
	a := p.sizeTerm(depth)
	for p.is("+") || p.is("-") {
		op := p.tok
		p.next()
		b := p.sizeTerm(depth)
		if op.text == "-" {
			b = -b
		}
		var ok bool
		if a, ok = addInt(a, b); !ok {
			p.fail(op.off, "integer overflow in size expression")
		}
	}
	return a
}

// sizeTerm parses factors joined by * and / (floor division).
func (p *parser) sizeTerm(depth int) int {
	a := p.sizeFactor(depth)
	for p.is("*") || p.is("/") {
		op := p.tok
		p.next()
		b := p.sizeFactor(depth)
		if op.text == "/" {
			if b == 0 {
				p.fail(op.off, "division by zero in size expression")
			}
			a = floorDiv(a, b)
			continue
		}
		var ok bool
		if a, ok = mulInt(a, b); !ok {
			p.fail(op.off, "integer overflow in size expression")
		}
	}
	return a
}

// sizeFactor parses an integer, a size name, a parenthesised expression or a
// negated factor.
func (p *parser) sizeFactor(depth int) int {
	if depth > maxDepth {
		p.fail(p.tok.off, "expression nested too deeply")
	}
	switch {
	case p.tok.kind == tNumber:
		return p.intLit("an integer")
	case p.tok.kind == tIdent:
		off := p.tok.off
		name := p.ident("a size")
		v, ok := p.sizes[name]
		if !ok {
			if len(p.sizes) == 0 {
				p.fail(off, "unknown size %q (no sizes are defined)", name)
			}
			p.fail(off, "unknown size %q (the sizes are %s)", name, strings.Join(sortedKeys(p.sizes), ", "))
		}
		if _, ok := addInt(v, 0); !ok {
			p.fail(off, "size %q is out of range", name)
		}
		return v
	case p.accept("("):
		a := p.size(depth + 1)
		p.expect(")", "to close the parenthesis")
		return a
	case p.accept("-"):
		return -p.sizeFactor(depth + 1)
	case p.accept("+"):
		return p.sizeFactor(depth + 1)
	}
	p.fail(p.tok.off, "expected a size, found %s", p.describeTok())
	return 0
}

// Parse reads a whole program in the textual form that Print writes and
// builds it through the Graph builder methods, so every builder check
// applies. Errors name the line and column of the offending statement or
// token; builder errors also name the op and shapes. Parse(Print(g)) builds a
// graph equal to g, node for node.
func Parse(src string) (*Graph, error) {
	var g *Graph
	p := &parser{scanner: scanner{src: src}}
	serr := p.catch(func() {
		p.next()
		p.skipNewlines()
		name := ""
		if p.tok.kind == tIdent && p.tok.text == "graph" && p.keywordStatement() {
			p.next()
			name = p.name("the graph name")
			p.endStatement()
		}
		g = NewGraph(name)
		env := map[string]*Tensor{}
		defined := map[string]int{}
		for p.skipNewlines(); p.tok.kind != tEOF; p.skipNewlines() {
			stmt := p.tok.off
			p.statement(g, env, defined)
			if err := g.Err(); err != nil {
				msg := err.Error()
				if e, ok := err.(*Error); ok {
					msg = e.Op + ": " + e.Msg
				}
				p.fail(stmt, "%s", msg)
			}
			p.endStatement()
		}
	})
	if serr != nil {
		return nil, &Error{Op: "parse", Msg: p.where(serr.off) + ": " + serr.msg}
	}
	return g, nil
}

// keywordStatement reports whether the current identifier starts a keyword
// statement rather than being the name a statement defines ("output = …").
func (p *parser) keywordStatement() bool {
	i := p.off
	for i < len(p.src) && (p.src[i] == ' ' || p.src[i] == '\t') {
		i++
	}
	return i == len(p.src) || p.src[i] != '=' && p.src[i] != '['
}

// statement parses one statement and builds what it declares. env maps the
// names defined so far to their tensors, and defined to the offsets of their
// definitions.
func (p *parser) statement(g *Graph, env map[string]*Tensor, defined map[string]int) {
	fresh := func(off int, name string) {
		if prev, dup := defined[name]; dup {
			p.fail(off, "%s is already defined at %s", quoteName(name), p.where(prev))
		}
	}
	define := func(off int, name string, t *Tensor) {
		fresh(off, name)
		defined[name] = off
		env[name] = t
	}
	ref := func(what string) *Tensor {
		off := p.tok.off
		name := p.name(what)
		t, ok := env[name]
		if !ok {
			p.fail(off, "unknown tensor %s", quoteName(name))
		}
		return t
	}
	if p.tok.kind == tIdent && p.keywordStatement() {
		kw := p.tok
		switch kw.text {
		case "graph":
			p.fail(kw.off, "the graph statement must come first, and only once")
		case "input", "variable":
			p.next()
			off := p.tok.off
			name := p.name("the " + kw.text + " name")
			p.expect(":", "after the "+kw.text+" name")
			dt, shape := p.tensorType()
			fresh(off, name)
			var t *Tensor
			if kw.text == "input" {
				t = g.Input(name, dt, shape)
			} else {
				t = g.Variable(name, dt, shape)
			}
			define(off, name, t)
			return
		case "output":
			p.next()
			name := p.name("the output name")
			p.expect("=", "after the output name")
			g.SetOutput(name, ref("a tensor name"))
			return
		case "update":
			p.next()
			v := ref("a variable name")
			p.expect("=", "after the variable name")
			g.Update(v, ref("a tensor name"))
			return
		case "close":
			p.next()
			r := ref("a recurrence name")
			p.expect("=", "after the recurrence name")
			g.CloseRecurrence(r, ref("a tensor name"))
			return
		}
	}
	off := p.tok.off
	name := p.name("a statement (graph, input, variable, output, update, or NAME = …)")
	fresh(off, name)
	var t *Tensor
	if p.is("[") {
		t = p.contraction(g, func(off int, name string) *Tensor {
			t, ok := env[name]
			if !ok {
				p.fail(off, "unknown tensor %s", quoteName(name))
			}
			return t
		})
	} else {
		p.expect("=", "after "+quoteName(name))
		t = p.expression(g, ref)
	}
	define(off, name, t)
}

// expression parses the right-hand side of "NAME = …" and builds it.
func (p *parser) expression(g *Graph, ref func(what string) *Tensor) *Tensor {
	opOff := p.tok.off
	op := p.ident("an op name")
	if op == "constant" {
		dt, shape := p.tensorType()
		data := []float64{}
		if p.accept("[") {
			if !p.accept("]") {
				for {
					data = append(data, p.number("a number"))
					if !p.accept(",") {
						break
					}
				}
				p.expect("]", "to close the constant's elements")
			}
		} else {
			data = append(data, p.number("the constant's value (a number or [n, …])"))
		}
		v, err := ValueOf(dt, shape, data)
		if err != nil {
			p.fail(opOff, "constant: %s", strings.TrimPrefix(err.Error(), "tile: value: "))
		}
		return g.Constant(v)
	}
	p.expect("(", "after "+op)
	comma := func() { p.expect(",", "between the arguments of "+op) }
	tensor := func() *Tensor { return ref("a tensor name") }
	var t *Tensor
	switch op {
	case "cast":
		x := tensor()
		comma()
		t = g.Cast(x, p.dtype())
	case "stop_gradient":
		t = g.StopGradient(tensor())
	case "reshape":
		x := tensor()
		comma()
		t = g.Reshape(x, Shape(p.intList("the shape")))
	case "transpose":
		x := tensor()
		comma()
		t = g.Transpose(x, p.intList("the permutation"))
	case "slice":
		x := tensor()
		comma()
		start := p.intList("the start")
		comma()
		stop := p.intList("the stop")
		var step []int
		if p.accept(",") {
			step = p.intList("the step")
		}
		t = g.Slice(x, start, stop, step)
	case "concat":
		axis := p.integer("the axis")
		var xs []*Tensor
		for p.accept(",") {
			xs = append(xs, tensor())
		}
		t = g.Concat(axis, xs...)
	case "pad":
		x := tensor()
		comma()
		lo := p.intList("the low padding")
		comma()
		hi := p.intList("the high padding")
		comma()
		t = g.Pad(x, lo, hi, p.number("the padding value"))
	case "broadcast":
		x := tensor()
		comma()
		t = g.BroadcastTo(x, p.shape("shape"))
	case "gather":
		data := tensor()
		comma()
		idx := tensor()
		comma()
		t = g.Gather(data, idx, p.integer("the axis"))
	case "scatter_add":
		upd := tensor()
		comma()
		idx := tensor()
		comma()
		axis := p.integer("the axis")
		comma()
		t = g.ScatterAdd(upd, idx, axis, p.shape("shape"))
	case "iota":
		dt, shape := p.tensorType()
		comma()
		t = g.Iota(dt, shape, p.integer("the axis"))
	case "recurrence":
		init := tensor()
		comma()
		steps := p.integer("the number of steps")
		comma()
		dirOff := p.tok.off
		dir := p.name("forward or reverse")
		if dir != "forward" && dir != "reverse" {
			p.fail(dirOff, "recurrence direction must be forward or reverse, got %s", quoteName(dir))
		}
		t = g.Recurrence(init, steps, dir == "reverse")
	case "random":
		seed := tensor()
		comma()
		dt, shape := p.tensorType()
		comma()
		t = g.Random(seed, dt, shape, p.uint64("the stream number"))
	default:
		f, ok := ParseFn(op)
		if !ok {
			p.fail(opOff, "unknown op %q", op)
		}
		var xs []*Tensor
		if !p.is(")") {
			xs = append(xs, tensor())
			for p.accept(",") {
				xs = append(xs, tensor())
			}
		}
		t = g.Elementwise(f, xs...)
	}
	p.expect(")", "to close the arguments of "+op)
	return t
}
