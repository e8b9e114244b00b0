package grad

import (
	"strings"
	"testing"

	"github.com/tartanml/tartan/ref"
	"github.com/tartanml/tartan/tile"
)

// TestWalk checks the walk itself on small graphs with gradients worked out
// by hand: accumulation over several consumers, unreached tensors,
// intermediate tensors as x, y as its own x, dtypes and second derivatives.
func TestWalk(t *testing.T) {
	xv := []float64{1, -2, 0.5}
	cases := []struct {
		name  string
		dt    tile.DType
		build func(g *tile.Graph, x, z *tile.Tensor) (y *tile.Tensor, wrt []*tile.Tensor)
		want  [][]float64
	}{
		// y = Σ (x·x + x): one tensor read by three operand slots.
		{"accumulate", tile.Float64, func(g *tile.Graph, x, _ *tile.Tensor) (*tile.Tensor, []*tile.Tensor) {
			return sumAll(g, g.Add(g.Mul(x, x), x)), []*tile.Tensor{x}
		}, [][]float64{{3, -3, 2}}},
		// y does not depend on z: a zero gradient of z's shape.
		{"unreached", tile.Float64, func(g *tile.Graph, x, z *tile.Tensor) (*tile.Tensor, []*tile.Tensor) {
			return sumAll(g, g.Exp(g.Sub(x, x))), []*tile.Tensor{z, x}
		}, [][]float64{{0, 0}, {0, 0, 0}}},
		// The gradient with respect to an intermediate tensor h = x·x of
		// y = Σ 3h is 3, whatever x is.
		{"intermediate", tile.Float64, func(g *tile.Graph, x, _ *tile.Tensor) (*tile.Tensor, []*tile.Tensor) {
			h := g.Mul(x, x)
			return sumAll(g, g.Mul(h, g.ScalarLike(h, 3))), []*tile.Tensor{h, x}
		}, [][]float64{{3, 3, 3}, {6, -12, 3}}},
		// dy/dy = 1.
		{"y_itself", tile.Float64, func(g *tile.Graph, x, _ *tile.Tensor) (*tile.Tensor, []*tile.Tensor) {
			y := sumAll(g, x)
			return y, []*tile.Tensor{y}
		}, [][]float64{{1}}},
		// Float32 graphs get float32 gradients: d Σ x³ = 3x².
		{"float32", tile.Float32, func(g *tile.Graph, x, _ *tile.Tensor) (*tile.Tensor, []*tile.Tensor) {
			return sumAll(g, g.Mul(g.Mul(x, x), x)), []*tile.Tensor{x}
		}, [][]float64{{3, 12, 0.75}}},
		// Second derivative: the gradient of Σ (d Σ x³/dx) is Σ 6x.
		{"second_order", tile.Float64, func(g *tile.Graph, x, _ *tile.Tensor) (*tile.Tensor, []*tile.Tensor) {
			first, err := Grad(g, sumAll(g, g.Mul(g.Mul(x, x), x)), x)
			if err != nil {
				return g.Errorf("test", "%v", err), nil
			}
			return sumAll(g, first[0]), []*tile.Tensor{x}
		}, [][]float64{{6, -12, 3}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			g := tile.NewGraph(c.name)
			x := g.Input("x", c.dt, tile.Shape{3})
			z := g.Input("z", c.dt, tile.Shape{2})
			y, wrt := c.build(g, x, z)
			if err := g.Err(); err != nil {
				t.Fatal(err)
			}
			feeds := map[string]*tile.Value{"x": value(t, c.dt, tile.Shape{3}, xv...), "z": value(t, c.dt, tile.Shape{2}, 5, 6)}
			got := evalGrads(t, g, y, wrt, feeds)
			for i := range got {
				if !sameValues(got[i].Data, c.want[i], 1e-12) {
					t.Errorf("gradient %d = %v, want %v", i, got[i].Data, c.want[i])
				}
			}
		})
	}
}

// TestVJP checks cotangents for several outputs at once:
// for y1 = 2x and y2 = x², c1·dy1 + c2·dy2 = 2c1 + 2x·c2.
func TestVJP(t *testing.T) {
	g := tile.NewGraph("vjp")
	x := g.Input("x", tile.Float64, tile.Shape{3})
	c1 := g.Input("c1", tile.Float64, tile.Shape{3})
	c2 := g.Input("c2", tile.Float64, tile.Shape{3})
	y1 := g.Mul(x, g.ScalarLike(x, 2))
	y2 := g.Mul(x, x)
	out, err := VJP(g, []*tile.Tensor{y1, y2}, []*tile.Tensor{c1, c2}, x)
	if err != nil {
		t.Fatal(err)
	}
	m, err := ref.New(g)
	if err != nil {
		t.Fatal(err)
	}
	vals, err := m.Eval(map[string]*tile.Value{
		"x":  value(t, tile.Float64, tile.Shape{3}, 1, 2, 3),
		"c1": value(t, tile.Float64, tile.Shape{3}, 1, 0, -1),
		"c2": value(t, tile.Float64, tile.Shape{3}, 0.5, 1, 2),
	}, out[0])
	if err != nil {
		t.Fatal(err)
	}
	if want := []float64{3, 4, 10}; !sameValues(vals[0].Data, want, 0) {
		t.Errorf("vjp = %v, want %v", vals[0].Data, want)
	}
}

// TestOnlyPathVisited checks that nodes off the path from xs to y get no
// derivative nodes: differentiating with respect to a alone builds no
// multiplication for the c·c branch.
func TestOnlyPathVisited(t *testing.T) {
	g := tile.NewGraph("path")
	a := g.Input("a", tile.Float64, tile.Shape{3})
	c := g.Input("c", tile.Float64, tile.Shape{3})
	y := g.Add(sumAll(g, g.Exp(a)), sumAll(g, g.Mul(c, c)))
	before := len(g.Nodes())
	if _, err := Grad(g, y, a); err != nil {
		t.Fatal(err)
	}
	for _, n := range g.Nodes()[before:] {
		for _, arg := range n.Args() {
			if arg == c {
				t.Errorf("derivative node %v reads c, which is off the path", n)
			}
		}
		if n.Op().Kind() == "mul" && n.Args()[1] == c {
			t.Errorf("derivative of c·c built: %v", n)
		}
	}
}

func TestErrors(t *testing.T) {
	g := tile.NewGraph("g")
	x := g.Input("x", tile.Float64, tile.Shape{3})
	i := g.Input("i", tile.Int32, tile.Shape{3})
	vec := g.Exp(x)
	y := sumAll(g, vec)
	other := tile.NewGraph("other")
	ox := other.Input("ox", tile.Float64, tile.Shape{3})
	broken := tile.NewGraph("broken")
	bx := broken.Input("bx", tile.Float64, tile.Shape{3})
	invalid := broken.Reshape(bx, tile.Shape{4})
	cases := []struct {
		name string
		run  func() error
		want string
	}{
		{"nil graph", func() error { _, err := Grad(nil, y, x); return err }, "nil graph"},
		{"y not scalar", func() error { _, err := Grad(g, vec, x); return err }, "must be a floating-point scalar, got f64[3]"},
		{"y not float", func() error { _, err := Grad(g, sumAll(g, i), x); return err }, "must be a floating-point scalar, got i32[]"},
		{"y nil", func() error { _, err := Grad(g, nil, x); return err }, "y is nil"},
		{"x not float", func() error { _, err := Grad(g, y, i); return err }, "x 0 (%1 input i32[3]) is not floating-point"},
		{"x other graph", func() error { _, err := Grad(g, y, ox); return err }, `belongs to graph "other"`},
		{"x nil", func() error { _, err := Grad(g, y, x, nil); return err }, "x 1 is nil"},
		{"graph error", func() error { _, err := Grad(broken, bx, bx); return err }, `graph "broken" has a building error`},
		{"invalid x", func() error { _, err := Grad(g, y, invalid); return err }, "x 0 is an invalid tensor"},
		{"check graph error", func() error {
			_, _, err := Check(broken, bx, []*tile.Tensor{bx}, nil, nil)
			return err
		}, `graph "broken" has a building error`},
		{"cotangent count", func() error { _, err := VJP(g, []*tile.Tensor{vec}, nil, x); return err }, "1 outputs but 0 cotangents"},
		{"cotangent shape", func() error {
			_, err := VJP(g, []*tile.Tensor{vec}, []*tile.Tensor{y}, x)
			return err
		}, "cotangent 0 is f64[] but output 0 is f64[3]"},
		{"output not float", func() error {
			_, err := VJP(g, []*tile.Tensor{i}, []*tile.Tensor{i}, x)
			return err
		}, "output 0 (%1 input i32[3]) is not floating-point"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := c.run()
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("got error %v, want one containing %q", err, c.want)
			}
		})
	}
	if g.Err() != nil {
		t.Errorf("rejected calls left an error on the graph: %v", g.Err())
	}
}

// TestSecondOrderFiniteDifferences checks gradients of gradient graphs: F is
// the gradient of a scalar built from the inputs, so Check compares second
// derivatives, and the rules run on the nodes other rules built (the equality
// contraction of max, Select, Pad, ScatterAdd).
func TestSecondOrderFiniteDifferences(t *testing.T) {
	firstGrad := func(g *tile.Graph, s *tile.Tensor, x *tile.Tensor) *tile.Tensor {
		d, err := Grad(g, s, x)
		if err != nil {
			return g.Errorf("test", "%v", err)
		}
		return d[0]
	}
	i, j, k := tile.Ix("i"), tile.Ix("j"), tile.Ix("k")
	cases := []fdCase{
		{name: "log_softmax", ins: []in{{"x", tile.Shape{3, 4}, distinct()}}, build: func(g *tile.Graph, x []*tile.Tensor) *tile.Tensor {
			lsm := logSoftmax(g, x)
			return firstGrad(g, sumAll(g, g.Mul(lsm, g.Exp(lsm))), x[0])
		}},
		{name: "maxpool_of_square", ins: []in{{"x", tile.Shape{7}, distinct()}}, build: func(g *tile.Graph, x []*tile.Tensor) *tile.Tensor {
			p := g.Contract(tile.Max, tile.CombNone, tile.Shape{4}, []tile.Affine{i}, []tile.Operand{op(x[0], i.Times(2).Plus(j))},
				tile.Constraint{Expr: j, Bound: 2})
			return firstGrad(g, sumAll(g, g.Mul(p, p)), x[0])
		}},
		{name: "matmul_tanh_gather", ins: []in{{"a", tile.Shape{3, 4}, uniform(-1, 1)}, {"b", tile.Shape{4, 2}, uniform(-1, 1)}},
			build: func(g *tile.Graph, x []*tile.Tensor) *tile.Tensor {
				mm := g.Contract(tile.Sum, tile.CombMul, tile.Shape{3, 2}, []tile.Affine{i, j}, []tile.Operand{op(x[0], i, k), op(x[1], k, j)})
				picked := g.Gather(g.Tanh(mm), intConst(g, tile.Int32, tile.Shape{4}, 2, 2, 0, 1), 0)
				s := sumAll(g, g.Pad(g.Mul(picked, picked), []int{1, 0}, []int{0, 1}, 0))
				return g.Concat(0, firstGrad(g, s, x[0]), g.Transpose(firstGrad(g, s, x[1]), []int{1, 0}))
			}},
	}
	runFD(t, cases)
}

// TestStopGradient checks by hand that no derivative flows through
// StopGradient: for y = Σ x·sg(x) + sg(x)², dy/dx is sg(x) = x, where
// without the stop it would be 2x + 2x; and Σ sg(x) has a zero gradient.
func TestStopGradient(t *testing.T) {
	g := tile.NewGraph("stop")
	x := g.Input("x", tile.Float64, tile.Shape{3})
	s := g.StopGradient(x)
	sum := func(e *tile.Tensor) *tile.Tensor {
		return g.Contract(tile.Sum, tile.CombNone, tile.Shape{}, nil, []tile.Operand{{Tensor: e, Index: []tile.Affine{tile.Ix("i")}}})
	}
	gy, err := Grad(g, sum(g.Add(g.Mul(x, s), g.Mul(s, s))), x)
	if err != nil {
		t.Fatal(err)
	}
	gz, err := Grad(g, sum(s), x)
	if err != nil {
		t.Fatal(err)
	}
	m, err := ref.New(g)
	if err != nil {
		t.Fatal(err)
	}
	vals, err := m.Eval(map[string]*tile.Value{"x": value(t, tile.Float64, tile.Shape{3}, 1, -2, 0.5)}, gy[0], s, gz[0])
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range [][]float64{{1, -2, 0.5}, {1, -2, 0.5}, {0, 0, 0}} {
		if !sameValues(vals[i].Data, want, 0) {
			t.Errorf("value %d (d/dx of y, sg(x), d/dx of Σ sg(x)) = %v, want %v", i, vals[i].Data, want)
		}
	}
}
