package conformance

import (
	"github.com/tartanml/tartan/tile"
)

// shapeCases cover the shape ops, gathers and scatters, iota and random
// numbers.
func shapeCases() []Case {
	f32 := tile.Float32
	return []Case{
		{Name: "shape/reshape", Grad: true, Build: func(b *Builder) {
			x := b.Input("x", f32, tile.Shape{3, 10, 7}, nil)
			g := b.G
			y := g.Reshape(x, tile.Shape{5, 6, 7})
			b.Output("y", g.Mul(y, g.Reshape(x, tile.Shape{5, 6, 7})))
			b.Output("flat", g.Reshape(g.Transpose(x, []int{2, 0, 1}), tile.Shape{-1}))
		}},
		{Name: "shape/transpose", Grad: true, Build: func(b *Builder) {
			x := b.Input("x", f32, tile.Shape{3, 5, 7, 2}, nil)
			b.Output("y", b.G.Transpose(x, []int{2, 0, 3, 1}))
		}},
		{Name: "shape/slice", Grad: true, Build: func(b *Builder) {
			x := b.Input("x", f32, tile.Shape{9, 11, 4}, nil)
			g := b.G
			b.Output("a", g.Slice(x, []int{1, 2, 0}, []int{8, 11, 3}, []int{3, 2, 1}))
			b.Output("b", g.Slice(x, []int{0, 5, 1}, []int{9, 6, 4}, nil))
		}},
		{Name: "shape/concat", Grad: true, Build: func(b *Builder) {
			x := b.Input("x", f32, tile.Shape{3, 2, 5}, nil)
			y := b.Input("y", f32, tile.Shape{3, 7, 5}, nil)
			z := b.Input("z", f32, tile.Shape{3, 1, 5}, nil)
			g := b.G
			b.Output("c1", g.Concat(1, x, y, z))
			b.Output("c0", g.Concat(0, x, x))
		}},
		{Name: "shape/concat_many", Build: func(b *Builder) {
			// 400 parts, a third of them empty, as an ONNX graph concatenating
			// per-step results gives: deeper than any compiler nests
			// brackets if each part took one more level.
			x := b.Input("x", f32, tile.Shape{400, 3}, nil)
			g := b.G
			var parts []*tile.Tensor
			for i := range 400 {
				w := i % 3
				parts = append(parts, g.Slice(x, []int{i, 0}, []int{i + 1, w}, nil))
			}
			b.Output("c", g.Concat(1, parts...))
		}},
		{Name: "shape/pad", Grad: true, Build: func(b *Builder) {
			x := b.Input("x", f32, tile.Shape{3, 5, 2}, nil)
			b.Output("y", b.G.Pad(x, []int{1, 0, 2}, []int{2, 3, 0}, 0.5))
		}},
		{Name: "shape/broadcast", Grad: true, Build: func(b *Builder) {
			x := b.Input("x", f32, tile.Shape{5, 1, 3}, nil)
			b.Output("y", b.G.BroadcastTo(x, tile.Shape{2, 5, 7, 3}))
		}},
		{Name: "gather/axis0", Grad: true, Build: func(b *Builder) {
			x := b.Input("x", f32, tile.Shape{7, 5}, nil)
			// Some indices fall outside [0, 7): they read zeros.
			i := b.Input("i", tile.Int32, tile.Shape{4, 3}, Ints(-2, 9))
			b.Output("y", b.G.Gather(x, i, 0))
		}},
		{Name: "gather/axis1", Grad: true, Build: func(b *Builder) {
			x := b.Input("x", f32, tile.Shape{3, 9, 4}, nil)
			i := b.Input("i", tile.Int64, tile.Shape{6}, Ints(0, 9))
			b.Output("y", b.G.Gather(x, i, 1))
		}},
		{Name: "scatter_add", Grad: true, Build: func(b *Builder) {
			u := b.Input("u", f32, tile.Shape{3, 6, 2}, nil)
			i := b.Input("i", tile.Int32, tile.Shape{6}, Ints(-1, 5))
			b.Output("y", b.G.ScatterAdd(u, i, 1, tile.Shape{3, 4, 2}))
		}},
		{Name: "iota/one_hot", Build: func(b *Builder) {
			g := b.G
			b.Output("i32", g.Iota(tile.Int32, tile.Shape{3, 5}, 1))
			b.Output("f32", g.Iota(f32, tile.Shape{4, 3, 2}, 0))
			l := b.Input("labels", tile.Int64, tile.Shape{7}, Ints(-1, 6))
			b.Output("onehot", g.OneHot(l, 5, f32))
		}},
		{Name: "random", Build: func(b *Builder) {
			g := b.G
			seed := b.Input("seed", tile.Int64, tile.Shape{}, Ints(0, 1<<30))
			b.Output("u32", g.Random(seed, f32, tile.Shape{5, 7, 37}, 3))
			b.Output("u64", g.Random(seed, tile.Float64, tile.Shape{13}, 1<<40))
			x := b.Input("x", f32, tile.Shape{9, 33}, nil)
			b.Output("masked", g.Select(g.Elementwise(tile.Ge, g.Random(seed, f32, tile.Shape{9, 33}, 4), g.Scalar(0.3, f32)), x, g.Scalar(0, f32)))
		}},
	}
}
