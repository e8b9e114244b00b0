// Package conformance is the test suite every Tartan backend must pass: it
// builds small graphs covering every node kind of package tile and every op
// of package op, forward and backward (package grad), runs them on the
// device under test and on the reference device (package backend/reference,
// float64 throughout), and compares the results.
//
// The entry point is Run, called from a backend's tests:
//
//	func TestConformance(t *testing.T) { conformance.Run(t, cpu.New()) }
//
// Each case is a table entry (cases_*.go) that builds a graph with random
// inputs of odd sizes, often broadcast; cases marked differentiable also
// output the gradient of a random weighting of their float outputs with
// respect to every float input. Cases with variable updates run several
// steps and compare the variables after each.
//
// Criterion (compare.go): integer and boolean results must be equal; a
// floating-point element passes when
//
//	|got − want| ≤ 1e-4 · max(|want|, 1e-3 · peak) + 1e-6
//
// where peak is the largest finite magnitude in that result tensor of the
// reference: float32 rounding, with an absolute floor for elements that
// cancel to near zero. NaN must meet NaN and infinities must be equal.
package conformance

import (
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/tartanml/tartan/backend"
	"github.com/tartanml/tartan/backend/reference"
	"github.com/tartanml/tartan/grad"
	"github.com/tartanml/tartan/tile"
)

// Case is one conformance check: a graph and its inputs.
type Case struct {
	Name string
	// Build declares the graph's inputs, variables and outputs through b.
	Build func(b *Builder)
	// Grad adds the gradients of a random weighting of the float outputs
	// with respect to every float input.
	Grad bool
	// Steps is the number of runs (variables are compared after each); 0
	// means 1.
	Steps int
	// Want holds hand-worked values of some outputs, by name, that both
	// the device under test and the reference must give (after the first
	// run), with the package criterion: NaN must meet NaN.
	Want map[string][]float64
}

// Seed is the seed of case c's data in Run: a hash of its name, so that
// adding, removing or reordering cases leaves every other case's data as
// it was.
func Seed(c Case) uint64 {
	h := fnv.New64a()
	h.Write([]byte(c.Name))
	return h.Sum64()
}

// Cases returns every conformance case.
func Cases() []Case {
	var all []Case
	for _, group := range [][]Case{elementwiseCases(), shapeCases(), contractionCases(), opCases(), stateCases(), loopCases(), NaNCases()} {
		all = append(all, group...)
	}
	return all
}

// Run checks dev against the reference device on every case, each as a
// subtest.
func Run(t *testing.T, dev backend.Device) {
	t.Helper()
	ref := reference.New()
	for _, c := range Cases() {
		t.Run(c.Name, func(t *testing.T) {
			if err := Check(dev, ref, c, Seed(c)); err != nil {
				t.Error(err)
			}
		})
	}
	t.Run("concurrent_compiles", func(t *testing.T) { checkConcurrent(t, dev, ref) })
}

// checkConcurrent compiles every fifth case at once on dev, as Device
// promises it may, then checks each executable in turn.
func checkConcurrent(t *testing.T, dev, ref backend.Device) {
	type job struct {
		c   Case
		b   *Builder
		x   backend.Executable
		err error
	}
	var jobs []*job
	for i, c := range Cases() {
		if i%5 != 0 {
			continue
		}
		b, err := prepare(c, Seed(c))
		if err != nil {
			t.Fatalf("%s: %v", c.Name, err)
		}
		jobs = append(jobs, &job{c: c, b: b})
	}
	var wg sync.WaitGroup
	for _, j := range jobs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			j.x, j.err = dev.Compile(j.b.G)
		}()
	}
	wg.Wait()
	for _, j := range jobs {
		if j.err != nil {
			t.Errorf("%s: %s: compile: %v", j.c.Name, dev.Info().ID, j.err)
			continue
		}
		err := compareOn(dev, j.x, ref, j.b, j.c)
		j.x.Close()
		if err != nil {
			t.Errorf("%s: %v", j.c.Name, err)
		}
	}
}

// Check runs one case on dev and on the reference ref from random data drawn
// with seed, and returns an error describing the first difference.
func Check(dev, ref backend.Device, c Case, seed uint64) error {
	b, err := prepare(c, seed)
	if err != nil {
		return err
	}
	xd, err := dev.Compile(b.G)
	if err != nil {
		return fmt.Errorf("%s: compile: %w", dev.Info().ID, err)
	}
	defer xd.Close()
	return compareOn(dev, xd, ref, b, c)
}

// Prepare builds case c's graph and the data of its inputs and variables
// from seed, as Check does, for running a case on something that is not a
// backend.Device (such as kir.Interpret).
func Prepare(c Case, seed uint64) (*Builder, error) { return prepare(c, seed) }

// prepare builds case c's graph and data from seed.
func prepare(c Case, seed uint64) (*Builder, error) {
	b := &Builder{G: tile.NewGraph(c.Name), rng: rand.New(rand.NewPCG(seed, 0x7a27a2)),
		feeds: map[string]any{}, vars: map[string]any{}}
	c.Build(b)
	if c.Grad {
		if err := addGradients(b); err != nil {
			return nil, err
		}
	}
	if err := b.G.Err(); err != nil {
		return nil, fmt.Errorf("building the graph: %w", err)
	}
	for name, want := range c.Want {
		var out *tile.Tensor
		for _, o := range b.G.Outputs() {
			if o.Name == name {
				out = o.Tensor
			}
		}
		if out == nil || out.Size() != len(want) {
			return nil, fmt.Errorf("hand-worked values of %q: the case has no output of that name and %d elements", name, len(want))
		}
	}
	return b, nil
}

// compareOn runs xd, compiled on dev from b's graph, and the reference
// for c's steps and compares every output and variable.
func compareOn(dev backend.Device, xd backend.Executable, ref backend.Device, b *Builder, c Case) error {
	xr, err := ref.Compile(b.G)
	if err != nil {
		return fmt.Errorf("reference: compile: %w", err)
	}
	defer xr.Close()
	for _, x := range []backend.Executable{xd, xr} {
		for name, v := range b.feeds {
			if err := x.SetInput(name, v); err != nil {
				return fmt.Errorf("set input %q: %w", name, err)
			}
		}
		for name, v := range b.vars {
			if err := x.WriteVariable(name, v); err != nil {
				return fmt.Errorf("write variable %q: %w", name, err)
			}
		}
	}
	steps := max(1, c.Steps)
	for step := range steps {
		if err := xd.Run(); err != nil {
			return fmt.Errorf("%s: run: %w", dev.Info().ID, err)
		}
		if err := xr.Run(); err != nil {
			return fmt.Errorf("reference: run: %w", err)
		}
		for _, o := range b.G.Outputs() {
			got, want := newHost(o.Tensor), newHost(o.Tensor)
			if err := xd.ReadOutput(o.Name, got); err != nil {
				return fmt.Errorf("%s: read output %q: %w", dev.Info().ID, o.Name, err)
			}
			if err := xr.ReadOutput(o.Name, want); err != nil {
				return fmt.Errorf("reference: read output %q: %w", o.Name, err)
			}
			if err := compare(o.Tensor.DType(), got, want); err != nil {
				return fmt.Errorf("step %d: output %q (%s%v): %w", step, o.Name, o.Tensor.DType(), o.Tensor.Shape(), err)
			}
			if hand, ok := c.Want[o.Name]; ok && step == 0 {
				if err := CompareWant(o.Tensor.DType(), want, hand); err != nil {
					return fmt.Errorf("reference: output %q (%s%v) against its hand-worked values: %w", o.Name, o.Tensor.DType(), o.Tensor.Shape(), err)
				}
				if err := CompareWant(o.Tensor.DType(), got, hand); err != nil {
					return fmt.Errorf("%s: output %q (%s%v) against its hand-worked values: %w", dev.Info().ID, o.Name, o.Tensor.DType(), o.Tensor.Shape(), err)
				}
			}
		}
		for _, v := range b.G.Variables() {
			name := v.Op().(*tile.VariableOp).Name
			got, want := newHost(v), newHost(v)
			if err := xd.ReadVariable(name, got); err != nil {
				return fmt.Errorf("%s: read variable %q: %w", dev.Info().ID, name, err)
			}
			if err := xr.ReadVariable(name, want); err != nil {
				return fmt.Errorf("reference: read variable %q: %w", name, err)
			}
			if err := compare(v.DType(), got, want); err != nil {
				return fmt.Errorf("step %d: variable %q (%s%v): %w", step, name, v.DType(), v.Shape(), err)
			}
		}
	}
	return nil
}

// CompareWant checks the host slice got, of dtype dt, against hand-worked
// values with the package criterion.
func CompareWant(dt tile.DType, got any, want []float64) error {
	return compare(dt, got, backend.HostSlice(dt, want))
}

// newHost returns a zero host slice for t.
func newHost(t *tile.Tensor) any { return backend.HostSlice(t.DType(), make([]float64, t.Size())) }

// addGradients adds to b's graph the gradient of Σ_k Σ(out_k · w_k), w_k
// random constants, with respect to every float input, as outputs named
// "d_<input>".
func addGradients(b *Builder) error {
	g := b.G
	if g.Err() != nil {
		return nil
	}
	var loss *tile.Tensor
	for _, o := range g.Outputs() {
		y := o.Tensor
		if !y.DType().IsFloat() {
			continue
		}
		w := b.Const(y.DType(), y.Shape(), Uniform(-1, 1))
		term := g.Cast(sumAll(g, g.Mul(y, w)), tile.Float32)
		if loss == nil {
			loss = term
		} else {
			loss = g.Add(loss, term)
		}
	}
	var xs []*tile.Tensor
	for _, name := range b.order {
		x := g.Leaf(name)
		if x != nil && x.Op().Kind() == "input" && x.DType().IsFloat() {
			xs = append(xs, x)
		}
	}
	if loss == nil || len(xs) == 0 {
		return fmt.Errorf("case marked differentiable has no float output or input")
	}
	grads, err := grad.Grad(g, loss, xs...)
	if err != nil {
		return fmt.Errorf("gradients: %w", err)
	}
	for i, x := range xs {
		g.SetOutput("d_"+x.Op().(*tile.InputOp).Name, grads[i])
	}
	return nil
}

// sumAll sums every element of x into a scalar with a contraction.
func sumAll(g *tile.Graph, x *tile.Tensor) *tile.Tensor {
	idx := make([]tile.Affine, x.Rank())
	for d := range idx {
		idx[d] = tile.Ix(fmt.Sprintf("i%d", d))
	}
	return g.Contract(tile.Sum, tile.CombNone, tile.Shape{}, nil, []tile.Operand{{Tensor: x, Index: idx}})
}
