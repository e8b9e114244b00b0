package conformance

import (
	"github.com/tartanml/tartan/tile"
)

// elementwiseCases cover every elementwise function and cast, in every
// dtype they apply to, with NumPy broadcasting between odd shapes.
func elementwiseCases() []Case {
	f32 := tile.Float32
	var cs []Case
	unary := []struct {
		fn  tile.Fn
		gen Gen
	}{
		{tile.Neg, nil}, {tile.Abs, nil}, {tile.Sign, nil}, {tile.Exp, Uniform(-3, 3)},
		{tile.Log, Uniform(0.05, 4)}, {tile.Log1p, Uniform(-0.9, 3)}, {tile.Sqrt, Uniform(0.01, 4)},
		{tile.Rsqrt, Uniform(0.05, 4)}, {tile.Tanh, Uniform(-3, 3)}, {tile.Sigmoid, Uniform(-6, 6)},
		{tile.Erf, Uniform(-2, 2)}, {tile.Floor, Uniform(-5, 5)}, {tile.Ceil, Uniform(-5, 5)},
		{tile.Recip, AwayFromZero(0.2, 3)},
	}
	for _, u := range unary {
		cs = append(cs, Case{Name: "unary/" + u.fn.String(), Grad: true, Build: func(b *Builder) {
			x := b.Input("x", f32, tile.Shape{3, 5, 7}, u.gen)
			b.Output("y", b.G.Elementwise(u.fn, x))
		}})
	}
	binary := []struct {
		fn   tile.Fn
		a, b Gen
	}{
		{tile.Add, nil, nil}, {tile.Sub, nil, nil}, {tile.Mul, nil, nil}, {tile.Div, nil, AwayFromZero(0.3, 2)},
		{tile.Pow, Uniform(0.2, 3), Uniform(-2, 2)}, {tile.Maximum, nil, nil}, {tile.Minimum, nil, nil},
	}
	for _, o := range binary {
		cs = append(cs, Case{Name: "binary/" + o.fn.String(), Grad: true, Build: func(b *Builder) {
			x := b.Input("a", f32, tile.Shape{3, 1, 7}, o.a)
			y := b.Input("b", f32, tile.Shape{5, 1}, o.b)
			b.Output("y", b.G.Elementwise(o.fn, x, y))
		}})
	}
	for _, fn := range []tile.Fn{tile.Eq, tile.Ne, tile.Lt, tile.Le, tile.Gt, tile.Ge} {
		cs = append(cs, Case{Name: "compare/" + fn.String(), Build: func(b *Builder) {
			// Small integers make ties frequent.
			x := b.Input("a", f32, tile.Shape{4, 1, 9}, Ints(-2, 3))
			y := b.Input("b", f32, tile.Shape{3, 9}, Ints(-2, 3))
			b.Output("y", b.G.Elementwise(fn, x, y))
			i := b.Input("i", tile.Int32, tile.Shape{3, 9}, Ints(-2, 3))
			j := b.Input("j", tile.Int32, tile.Shape{9}, Ints(-2, 3))
			b.Output("yi", b.G.Elementwise(fn, i, j))
		}})
	}
	cs = append(cs,
		Case{Name: "logic/bool", Build: func(b *Builder) {
			p := b.Input("p", tile.Bool, tile.Shape{5, 1, 6}, nil)
			q := b.Input("q", tile.Bool, tile.Shape{3, 6}, nil)
			g := b.G
			b.Output("and", g.Elementwise(tile.And, p, q))
			b.Output("or", g.Elementwise(tile.Or, p, q))
			b.Output("not", g.Elementwise(tile.Not, p))
			b.Output("eq", g.Elementwise(tile.Eq, p, q))
			b.Output("sel", g.Select(p, q, g.Elementwise(tile.Not, q)))
		}},
		Case{Name: "select/broadcast", Grad: true, Build: func(b *Builder) {
			c := b.Input("c", tile.Bool, tile.Shape{5, 1}, nil)
			x := b.Input("x", f32, tile.Shape{5, 7}, nil)
			y := b.Input("y", f32, tile.Shape{7}, nil)
			b.Output("z", b.G.Select(c, x, y))
		}},
		Case{Name: "int32/arith", Build: func(b *Builder) {
			intArith(b, tile.Int32)
		}},
		Case{Name: "int64/arith", Build: func(b *Builder) {
			intArith(b, tile.Int64)
		}},
		Case{Name: "float64/chain", Grad: true, Build: func(b *Builder) {
			g := b.G
			x := b.Input("x", tile.Float64, tile.Shape{7, 5}, Uniform(0.1, 2))
			y := b.Input("y", tile.Float64, tile.Shape{5}, nil)
			z := g.Add(g.Mul(g.Log(x), y), g.Div(g.Exp(g.Neg(x)), g.Sqrt(x)))
			b.Output("z", g.Elementwise(tile.Maximum, z, g.Tanh(y)))
		}},
		Case{Name: "float16/chain", Build: func(b *Builder) {
			g := b.G
			x := b.Input("x", tile.Float16, tile.Shape{9, 3}, nil)
			b.Output("y", g.Add(g.Mul(x, x), g.ScalarLike(x, 0.5)))
		}},
		Case{Name: "cast/all", Build: func(b *Builder) {
			g := b.G
			x := b.Input("x", f32, tile.Shape{4, 7}, Uniform(-40, 40))
			i := b.Input("i", tile.Int64, tile.Shape{4, 7}, Ints(-3000000000, 3000000000))
			p := b.Input("p", tile.Bool, tile.Shape{4, 7}, nil)
			d := b.Input("d", tile.Float64, tile.Shape{4, 7}, Uniform(-1e6, 1e6))
			for _, dt := range []tile.DType{tile.Bool, tile.Int32, tile.Int64, tile.Float32, tile.Float64} {
				b.Output("x_"+dt.String(), g.Cast(x, dt))
				b.Output("i_"+dt.String(), g.Cast(i, dt))
				b.Output("p_"+dt.String(), g.Cast(p, dt))
				b.Output("d_"+dt.String(), g.Cast(d, dt))
			}
		}},
		Case{Name: "cast/grad", Grad: true, Build: func(b *Builder) {
			g := b.G
			x := b.Input("x", f32, tile.Shape{6, 5}, nil)
			b.Output("y", g.Cast(g.Mul(g.Cast(x, tile.Float64), g.Cast(x, tile.Float64)), f32))
		}},
		Case{Name: "chain/fused", Grad: true, Build: func(b *Builder) {
			// A long chain of float32 operations that a compiler fuses into
			// one kernel, on a size that is not a multiple of any vector
			// width.
			g := b.G
			x := b.Input("x", f32, tile.Shape{7, 11, 13}, nil)
			y := b.Input("y", f32, tile.Shape{11, 1}, nil)
			h := g.Add(g.Mul(x, y), g.Scalar(0.25, f32))
			h = g.Select(g.Elementwise(tile.Gt, h, g.Scalar(0, f32)), h, g.Mul(h, g.Scalar(0.1, f32)))
			h = g.Div(h, g.Add(g.Elementwise(tile.Abs, y), g.Scalar(1, f32)))
			b.Output("z", g.Sub(h, g.Elementwise(tile.Minimum, x, y)))
		}},
	)
	return cs
}

// intArith outputs integer arithmetic with division by zero (which yields
// 0), truncation toward zero and wrap-around.
func intArith(b *Builder, dt tile.DType) {
	g := b.G
	x := b.Input("x", dt, tile.Shape{5, 8}, Ints(-50, 50))
	y := b.Input("y", dt, tile.Shape{8}, Ints(-4, 5))
	big := b.Input("big", dt, tile.Shape{5, 8}, Ints(-2000000000, 2000000000))
	b.Output("add", g.Add(x, y))
	b.Output("sub", g.Sub(x, y))
	b.Output("mul", g.Mul(x, y))
	b.Output("div", g.Div(x, y))
	b.Output("max", g.Maximum(x, y))
	b.Output("min", g.Minimum(x, y))
	b.Output("neg", g.Neg(x))
	b.Output("abs", g.Elementwise(tile.Abs, x))
	b.Output("sign", g.Elementwise(tile.Sign, x))
	b.Output("wrap", g.Add(big, big))
	b.Output("lt", g.Elementwise(tile.Lt, x, y))
}
