package tile

import "strings"

// Fn is an elementwise function.
type Fn uint8

// The elementwise functions. Unary functions take one operand, binary two and
// Select three (a Bool condition, then the values for true and false).
// Comparisons return Bool. Integer division truncates toward zero.
//
// Floating-point functions follow IEEE 754 with NaN propagating, as in
// PyTorch: Maximum and Minimum are NaN when either operand is (unlike C's
// fmax and fmin, which return the other operand), comparisons with a NaN
// are false except Ne, and Sign of NaN is NaN. Every backend agrees, and
// so do Max and Min aggregations of contractions.
const (
	FnInvalid Fn = iota
	// Unary.
	Neg
	Abs
	Sign
	Exp
	Log
	Log1p
	Sqrt
	Rsqrt
	Tanh
	Sigmoid
	Erf
	Floor
	Ceil
	Recip
	Not
	// Binary.
	Add
	Sub
	Mul
	Div
	Pow
	Maximum
	Minimum
	Eq
	Ne
	Lt
	Le
	Gt
	Ge
	And
	Or
	// Ternary.
	Select
	numFns
)

var fnNames = [...]string{
	Neg: "neg", Abs: "abs", Sign: "sign", Exp: "exp", Log: "log", Log1p: "log1p", Sqrt: "sqrt",
	Rsqrt: "rsqrt", Tanh: "tanh", Sigmoid: "sigmoid", Erf: "erf", Floor: "floor", Ceil: "ceil",
	Recip: "recip", Not: "not",
	Add: "add", Sub: "sub", Mul: "mul", Div: "div", Pow: "pow", Maximum: "max", Minimum: "min",
	Eq: "eq", Ne: "ne", Lt: "lt", Le: "le", Gt: "gt", Ge: "ge", And: "and", Or: "or",
	Select: "select",
}

// String returns the function's name in the textual form, such as "add".
func (f Fn) String() string {
	if f > FnInvalid && f < numFns {
		return fnNames[f]
	}
	return "fn?"
}

// ParseFn returns the function whose String is s.
func ParseFn(s string) (Fn, bool) {
	for f := Neg; f < numFns; f++ {
		if fnNames[f] == s {
			return f, true
		}
	}
	return FnInvalid, false
}

// Arity returns the number of operands f takes.
func (f Fn) Arity() int {
	switch {
	case f >= Neg && f <= Not:
		return 1
	case f >= Add && f <= Or:
		return 2
	case f == Select:
		return 3
	}
	return 0
}

// IsComparison reports whether f compares two operands and returns Bool.
func (f Fn) IsComparison() bool { return f >= Eq && f <= Ge }

// floatOnly reports whether f is defined only for floating-point operands.
func (f Fn) floatOnly() bool {
	switch f {
	case Exp, Log, Log1p, Sqrt, Rsqrt, Tanh, Sigmoid, Erf, Floor, Ceil, Recip, Pow:
		return true
	}
	return false
}

// ElementwiseOp applies Fn to operands of one shape, element by element.
type ElementwiseOp struct{ Fn Fn }

// Kind implements Op.
func (o *ElementwiseOp) Kind() string { return o.Fn.String() }

// Elementwise applies f to the operands, broadcasting them NumPy-style. The
// builder inserts explicit Broadcast nodes, so an ElementwiseOp node's operands
// always have the node's shape.
func (g *Graph) Elementwise(f Fn, xs ...*Tensor) *Tensor {
	name := f.String()
	if !g.check(name, xs...) {
		return g.invalid()
	}
	if f.Arity() == 0 || len(xs) != f.Arity() {
		return g.Errorf(name, "takes %d operands, got %d", f.Arity(), len(xs))
	}
	shapes := make([]Shape, len(xs))
	for i, x := range xs {
		shapes[i] = x.shape
	}
	shape, ok := BroadcastShapes(shapes...)
	if !ok {
		return g.Errorf(name, "shapes %s do not broadcast", describe(xs))
	}
	vals := xs
	if f == Select {
		if xs[0].dtype != Bool {
			return g.Errorf(name, "condition must be bool, got %s", describe(xs[:1]))
		}
		vals = xs[1:]
	}
	dt := vals[0].dtype
	for _, v := range vals[1:] {
		if v.dtype != dt {
			return g.Errorf(name, "operand dtypes differ: %s", describe(xs))
		}
	}
	switch {
	case f == Not || f == And || f == Or:
		if dt != Bool {
			return g.Errorf(name, "needs bool operands, got %s", describe(xs))
		}
	case f.floatOnly() && !dt.IsFloat():
		return g.Errorf(name, "needs floating-point operands, got %s", describe(xs))
	case f != Select && !f.IsComparison() && dt == Bool:
		return g.Errorf(name, "is not defined for bool operands")
	}
	args := make([]*Tensor, len(xs))
	for i, x := range xs {
		args[i] = g.BroadcastTo(x, shape)
	}
	out := dt
	if f.IsComparison() {
		out = Bool
	}
	return g.add(&ElementwiseOp{Fn: f}, out, shape, args...)
}

// describe formats tensors as "f32[2, 3], f32[3]" for error messages.
func describe(xs []*Tensor) string {
	parts := make([]string, len(xs))
	for i, x := range xs {
		parts[i] = x.dtype.String() + x.shape.String()
	}
	return strings.Join(parts, ", ")
}

// Neg returns -x.
func (g *Graph) Neg(x *Tensor) *Tensor { return g.Elementwise(Neg, x) }

// Exp returns eˣ.
func (g *Graph) Exp(x *Tensor) *Tensor { return g.Elementwise(Exp, x) }

// Log returns the natural logarithm of x.
func (g *Graph) Log(x *Tensor) *Tensor { return g.Elementwise(Log, x) }

// Sqrt returns √x.
func (g *Graph) Sqrt(x *Tensor) *Tensor { return g.Elementwise(Sqrt, x) }

// Tanh returns tanh(x).
func (g *Graph) Tanh(x *Tensor) *Tensor { return g.Elementwise(Tanh, x) }

// Add returns a + b.
func (g *Graph) Add(a, b *Tensor) *Tensor { return g.Elementwise(Add, a, b) }

// Sub returns a - b.
func (g *Graph) Sub(a, b *Tensor) *Tensor { return g.Elementwise(Sub, a, b) }

// Mul returns a · b.
func (g *Graph) Mul(a, b *Tensor) *Tensor { return g.Elementwise(Mul, a, b) }

// Div returns a / b.
func (g *Graph) Div(a, b *Tensor) *Tensor { return g.Elementwise(Div, a, b) }

// Maximum returns the larger of a and b, NaN where either is NaN.
func (g *Graph) Maximum(a, b *Tensor) *Tensor { return g.Elementwise(Maximum, a, b) }

// Minimum returns the smaller of a and b, NaN where either is NaN.
func (g *Graph) Minimum(a, b *Tensor) *Tensor { return g.Elementwise(Minimum, a, b) }

// Select returns a where cond holds and b elsewhere.
func (g *Graph) Select(cond, a, b *Tensor) *Tensor { return g.Elementwise(Select, cond, a, b) }

// CastOp converts its operand to the node's dtype with RoundTo's rules.
type CastOp struct{}

// Kind implements Op.
func (*CastOp) Kind() string { return "cast" }

// Cast converts x to dtype dt. Casting to x's own dtype returns x.
func (g *Graph) Cast(x *Tensor, dt DType) *Tensor {
	if !g.check("cast", x) {
		return g.invalid()
	}
	if !dt.Valid() {
		return g.Errorf("cast", "invalid target dtype %v", dt)
	}
	if x.dtype == dt {
		return x
	}
	return g.add(&CastOp{}, dt, x.shape, x)
}

// StopGradientOp passes its operand through unchanged; differentiation
// treats it as a constant (no derivative flows through it), as
// tf.stop_gradient, jax.lax.stop_gradient and PyTorch's detach do.
type StopGradientOp struct{}

// Kind implements Op.
func (*StopGradientOp) Kind() string { return "stop_gradient" }

// StopGradient returns x's values, through which package grad propagates
// no derivative: the gradient of anything computed from the result
// ignores how x depends on its own inputs. The compiler removes the node;
// it costs nothing at run time.
func (g *Graph) StopGradient(x *Tensor) *Tensor {
	if !g.check("stop_gradient", x) {
		return g.invalid()
	}
	return g.add(&StopGradientOp{}, x.dtype, x.shape, x)
}
