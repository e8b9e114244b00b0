package grad

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sort"

	"github.com/tartanml/tartan/ref"
	"github.com/tartanml/tartan/tile"
)

// Gradient checking against finite differences.
//
// For every probed coordinate c of every x, Check compares the analytic
// gradient a = ∂y/∂x[c], computed by the nodes Grad builds and evaluated by the
// reference executor, with the central difference
//
//	f = (y(x + h·e_c) − y(x − h·e_c)) / (2h),  h = Step · max(1, |x[c]|),
//
// whose error is O(h²) from truncation plus O(ε·|y|/h) from rounding. The
// error of one coordinate is
//
//	|a − f| / max(|a|, |f|, Floor),
//
// a relative error that becomes an absolute one, scaled by 1/Floor, for
// derivatives smaller than Floor, where rounding noise in f would otherwise
// dominate. A NaN or infinite a or f counts as an infinite error.

// CheckOption configures Check.
type CheckOption func(*checkConfig)

type checkConfig struct {
	step      float64
	floor     float64
	maxProbes int
	seed      uint64
}

// The defaults of Check's options.
const (
	DefaultStep      = 1e-6
	DefaultFloor     = 1e-2
	DefaultMaxProbes = 128
)

// WithStep sets the finite-difference step h relative to max(1, |x|); it must
// be positive. The default 1e-6 suits float64 graphs; graphs that round to
// float32 inside need a larger step, such as 1e-2, and a looser tolerance.
func WithStep(h float64) CheckOption { return func(c *checkConfig) { c.step = h } }

// WithFloor sets the smallest denominator of the relative error; it must be
// positive. The default is 1e-2.
func WithFloor(f float64) CheckOption { return func(c *checkConfig) { c.floor = f } }

// WithMaxProbes bounds the number of coordinates probed per x. Tensors with
// more elements are probed at that many distinct coordinates drawn at random
// (see WithSeed). The default is 128; n ≤ 0 probes every coordinate.
func WithMaxProbes(n int) CheckOption { return func(c *checkConfig) { c.maxProbes = n } }

// WithSeed sets the seed that picks the probed coordinates of large tensors.
// The default is 1, so a check is reproducible.
func WithSeed(s uint64) CheckOption { return func(c *checkConfig) { c.seed = s } }

// Check compares the gradients of the scalar y with respect to each x in xs
// against central finite differences computed with the reference executor,
// and returns the largest error found (the formula is in the comment above)
// and a description of the coordinate where it occurred. Each x must be a
// float64 input or variable of g. feeds must bind every input y needs; vars
// sets variables (those not given are zero). Check adds the gradient nodes to
// g, as Grad does, and changes nothing else in it.
func Check(g *tile.Graph, y *tile.Tensor, xs []*tile.Tensor, feeds, vars map[string]*tile.Value, opts ...CheckOption) (maxRelErr float64, where string, err error) {
	cfg := checkConfig{step: DefaultStep, floor: DefaultFloor, maxProbes: DefaultMaxProbes, seed: 1}
	for _, o := range opts {
		o(&cfg)
	}
	if !(cfg.step > 0) || !(cfg.floor > 0) || math.IsInf(cfg.step, 0) || math.IsInf(cfg.floor, 0) {
		return 0, "", fmt.Errorf("grad: check: step %g and floor %g must be positive and finite", cfg.step, cfg.floor)
	}
	if err := checkGraph(g); err != nil {
		return 0, "", err
	}
	if len(xs) == 0 {
		return 0, "", errors.New("grad: check: no tensors to check")
	}
	for i, x := range xs {
		if err := checkTensor(g, fmt.Sprintf("x %d", i), x); err != nil {
			return 0, "", err
		}
		if _, err := leafName(x); err != nil {
			return 0, "", err
		}
		if x.DType() != tile.Float64 {
			return 0, "", fmt.Errorf("grad: check: x %d (%v) must be f64 for finite differences", i, x)
		}
	}
	grads, err := Grad(g, y, xs...)
	if err != nil {
		return 0, "", err
	}
	return compare(g, y, xs, grads, feeds, vars, cfg)
}

// leafName returns the name of the input or variable x, or an error if x is
// neither.
func leafName(x *tile.Tensor) (string, error) {
	switch op := x.Op().(type) {
	case *tile.InputOp:
		return op.Name, nil
	case *tile.VariableOp:
		return op.Name, nil
	}
	return "", fmt.Errorf("grad: check: %v is not an input or a variable, so it cannot be perturbed", x)
}

// compare evaluates the gradient tensors grads[i] of y with respect to xs[i]
// and compares them with central differences. It is Check after the
// validation and the differentiation.
func compare(g *tile.Graph, y *tile.Tensor, xs, grads []*tile.Tensor, feeds, vars map[string]*tile.Value, cfg checkConfig) (float64, string, error) {
	m, err := ref.New(g)
	if err != nil {
		return 0, "", err
	}
	names := make([]string, 0, len(vars))
	for n := range vars {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		if err := m.SetVar(n, vars[n]); err != nil {
			return 0, "", err
		}
	}
	analytic, err := m.Eval(feeds, grads...)
	if err != nil {
		return 0, "", fmt.Errorf("grad: check: evaluating the gradients: %w", err)
	}
	fs := make(map[string]*tile.Value, len(feeds))
	for n, v := range feeds {
		fs[n] = v
	}
	evalY := func() (float64, error) {
		v, err := m.Eval(fs, y)
		if err != nil {
			return 0, fmt.Errorf("grad: check: evaluating y: %w", err)
		}
		return v[0].Data[0], nil
	}

	rng := rand.New(rand.NewPCG(cfg.seed, 0x9e3779b97f4a7c15))
	worst, where := 0.0, ""
	first := true
	for i, x := range xs {
		name, _ := leafName(x)
		_, isVar := x.Op().(*tile.VariableOp)
		var base *tile.Value
		switch {
		case isVar && vars[name] != nil:
			base = vars[name]
		case isVar:
			base = tile.NewValue(x.DType(), x.Shape())
		case feeds[name] == nil:
			return 0, "", fmt.Errorf("grad: check: input %q is not fed", name)
		default:
			base = feeds[name]
		}
		probe := base.Clone()
		set := func(v *tile.Value) error {
			if isVar {
				return m.SetVar(name, v)
			}
			fs[name] = v
			return nil
		}
		for _, c := range probes(x.Size(), cfg.maxProbes, rng) {
			x0 := probe.Data[c]
			h := cfg.step * max(1, math.Abs(x0))
			xp, xm := x0+h, x0-h
			probe.Data[c] = xp
			if err := set(probe); err != nil {
				return 0, "", err
			}
			yp, err := evalY()
			if err != nil {
				return 0, "", err
			}
			probe.Data[c] = xm
			if err := set(probe); err != nil {
				return 0, "", err
			}
			ym, err := evalY()
			if err != nil {
				return 0, "", err
			}
			probe.Data[c] = x0
			fd := (yp - ym) / (xp - xm)
			a := analytic[i].Data[c]
			e := relErr(a, fd, cfg.floor)
			if first || e > worst {
				first = false
				worst = e
				kind := "input"
				if isVar {
					kind = "variable"
				}
				where = fmt.Sprintf("%s %q at %v: gradient %.12g, finite difference %.12g", kind, name, coords(c, x.Shape()), a, fd)
			}
		}
		if err := set(base); err != nil {
			return 0, "", err
		}
	}
	return worst, where, nil
}

// relErr returns |a − f| / max(|a|, |f|, floor), or +Inf when a or f is not
// finite.
func relErr(a, f, floor float64) float64 {
	if math.IsNaN(a) || math.IsNaN(f) || math.IsInf(a, 0) || math.IsInf(f, 0) {
		return math.Inf(1)
	}
	return math.Abs(a-f) / max(math.Abs(a), math.Abs(f), floor)
}

// probes returns the row-major positions to probe in a tensor of n elements:
// all of them when n ≤ limit or limit ≤ 0, otherwise limit distinct positions
// drawn with rng, in increasing order.
func probes(n, limit int, rng *rand.Rand) []int {
	if limit <= 0 || n <= limit {
		all := make([]int, n)
		for i := range all {
			all[i] = i
		}
		return all
	}
	seen := make(map[int]bool, limit)
	picked := make([]int, 0, limit)
	for len(picked) < limit {
		if p := rng.IntN(n); !seen[p] {
			seen[p] = true
			picked = append(picked, p)
		}
	}
	slices.Sort(picked)
	return picked
}

// coords returns the coordinates of row-major position p in shape.
func coords(p int, shape tile.Shape) []int {
	c := make([]int, len(shape))
	for d := len(shape) - 1; d >= 0; d-- {
		c[d] = p % shape[d]
		p /= shape[d]
	}
	return c
}
