package conformance

import (
	"github.com/tartanml/tartan/tile"
)

// contractionCases cover raw contractions: every aggregation and
// combination, constraints, and reads out of range, which are skipped.
func contractionCases() []Case {
	f32 := tile.Float32
	parse := func(b *Builder, src string, ops map[string]*tile.Tensor) *tile.Tensor {
		return tile.ParseContraction(b.G, src, ops, nil)
	}
	return []Case{
		{Name: "contract/matmul", Grad: true, Build: func(b *Builder) {
			a := b.Input("a", f32, tile.Shape{13, 9}, nil)
			c := b.Input("c", f32, tile.Shape{9, 7}, nil)
			b.Output("y", parse(b, "O[i, j : 13, 7] = +(A[i, k] * B[k, j])", map[string]*tile.Tensor{"A": a, "B": c}))
		}},
		{Name: "contract/transposed", Grad: true, Build: func(b *Builder) {
			a := b.Input("a", f32, tile.Shape{9, 13}, nil)
			c := b.Input("c", f32, tile.Shape{7, 9}, nil)
			b.Output("y", parse(b, "O[j, i : 7, 13] = +(A[k, i] * B[j, k])", map[string]*tile.Tensor{"A": a, "B": c}))
		}},
		{Name: "contract/batched", Grad: true, Build: func(b *Builder) {
			a := b.Input("a", f32, tile.Shape{3, 5, 6}, nil)
			c := b.Input("c", f32, tile.Shape{3, 6, 4}, nil)
			b.Output("y", parse(b, "O[n, i, j : 3, 5, 4] = +(A[n, i, k] * B[n, k, j])", map[string]*tile.Tensor{"A": a, "B": c}))
		}},
		{Name: "contract/interleaved", Grad: true, Build: func(b *Builder) {
			// Attention's products: the heads are a batch loop between the
			// rows and the columns of the output.
			p := b.Input("p", f32, tile.Shape{2, 3, 5, 6}, nil)
			v := b.Input("v", f32, tile.Shape{2, 6, 3, 4}, nil)
			b.Output("y", parse(b, "O[n, i, h, d : 2, 5, 3, 4] = +(P[n, h, i, j] * V[n, j, h, d])", map[string]*tile.Tensor{"P": p, "V": v}))
		}},
		{Name: "contract/long_sum", Grad: true, Build: func(b *Builder) {
			// A long reduction into few outputs, as in a weight gradient.
			a := b.Input("a", f32, tile.Shape{1500, 3}, nil)
			c := b.Input("c", f32, tile.Shape{1500, 5}, nil)
			b.Output("y", parse(b, "O[i, j : 3, 5] = +(A[k, i] * B[k, j])", map[string]*tile.Tensor{"A": a, "B": c}))
			b.Output("s", parse(b, "O[j : 5] = +(B[k, j])", map[string]*tile.Tensor{"B": c}))
		}},
		{Name: "contract/max_min", Grad: true, Build: func(b *Builder) {
			a := b.Input("a", f32, tile.Shape{11, 7}, nil)
			ops := map[string]*tile.Tensor{"A": a}
			b.Output("max", parse(b, "O[i, j : 6, 7] = >(A[2*i + k, j]), k < 2", ops))
			b.Output("min", parse(b, "O[j : 7] = <(A[k, j])", ops))
		}},
		{Name: "contract/prod", Grad: true, Build: func(b *Builder) {
			a := b.Input("a", f32, tile.Shape{5, 4}, AwayFromZero(0.5, 1.5))
			b.Output("y", parse(b, "O[i : 5] = *(A[i, k])", map[string]*tile.Tensor{"A": a}))
		}},
		{Name: "contract/assign", Grad: true, Build: func(b *Builder) {
			a := b.Input("a", f32, tile.Shape{5, 7}, nil)
			b.Output("y", parse(b, "O[j, i : 7, 5] = =(A[i, j])", map[string]*tile.Tensor{"A": a}))
		}},
		{Name: "contract/add_comb", Grad: true, Build: func(b *Builder) {
			a := b.Input("a", f32, tile.Shape{5, 3}, nil)
			c := b.Input("c", f32, tile.Shape{3, 7}, nil)
			b.Output("y", parse(b, "O[i, j : 5, 7] = +(A[i, k] + B[k, j])", map[string]*tile.Tensor{"A": a, "B": c}))
		}},
		{Name: "contract/add_comb_max", Build: func(b *Builder) {
			a := b.Input("a", f32, tile.Shape{5, 3}, nil)
			c := b.Input("c", f32, tile.Shape{3, 7}, nil)
			b.Output("y", parse(b, "O[i, j : 5, 7] = >(A[i, k] + B[k, j])", map[string]*tile.Tensor{"A": a, "B": c}))
		}},
		{Name: "contract/eq_comb", Grad: true, Build: func(b *Builder) {
			a := b.Input("a", f32, tile.Shape{6, 4}, Ints(0, 3))
			c := b.Input("c", f32, tile.Shape{4}, Ints(0, 3))
			v := b.Input("v", f32, tile.Shape{6, 4}, nil)
			ops := map[string]*tile.Tensor{"A": a, "B": c, "C": v}
			b.Output("sum", parse(b, "O[i : 6] = +(A[i, k] == B[k] ? C[i, k])", ops))
		}},
		{Name: "contract/eq_comb_max", Build: func(b *Builder) {
			a := b.Input("a", f32, tile.Shape{6, 4}, Ints(0, 3))
			c := b.Input("c", f32, tile.Shape{4}, Ints(0, 3))
			v := b.Input("v", f32, tile.Shape{6, 4}, nil)
			ops := map[string]*tile.Tensor{"A": a, "B": c, "C": v}
			b.Output("max", parse(b, "O[i : 6] = >(A[i, k] == B[k] ? C[i, k])", ops))
		}},
		{Name: "contract/padding", Grad: true, Build: func(b *Builder) {
			// Out-of-range reads are skipped: a window that hangs over the
			// edges, and a shift.
			a := b.Input("a", f32, tile.Shape{7}, nil)
			ops := map[string]*tile.Tensor{"A": a}
			b.Output("win", parse(b, "O[i : 7] = +(A[i + k - 1]), k < 3", ops))
			b.Output("shift", parse(b, "O[i : 9] = +(A[i - 2])", ops))
			b.Output("wmax", parse(b, "O[i : 7] = >(A[i + k - 2]), k < 5", ops))
		}},
		{Name: "contract/padded_products", Grad: true, Build: func(b *Builder) {
			// Matrix products with guarded operands and conditions, large
			// enough for the tiles of GPU backends (at least 16 rows and
			// columns, 32 summed points): a padded 3×3 convolution over 16
			// channels, whose gradients are padded products too, and a
			// product with a condition on one operand's loops. The
			// channel counts give blocks of 16 columns.
			x := b.Input("x", f32, tile.Shape{2, 6, 7, 16}, nil)
			w := b.Input("w", f32, tile.Shape{3, 3, 16, 16}, nil)
			b.Output("conv", parse(b, "O[n, y, x, f : 2, 6, 7, 16] = +(X[n, y + i - 1, x + j - 1, c] * W[i, j, c, f])",
				map[string]*tile.Tensor{"X": x, "W": w}))
			a := b.Input("a", f32, tile.Shape{37, 45}, nil)
			c := b.Input("c", f32, tile.Shape{45, 33}, nil)
			b.Output("band", parse(b, "O[i, j : 37, 33] = +(A[i, k] * B[k, j]), i + k < 50", map[string]*tile.Tensor{"A": a, "B": c}))
		}},
		{Name: "contract/strided_grad", Grad: true, Build: func(b *Builder) {
			// Strided windows whose gradient writes through compound
			// output indices.
			a := b.Input("a", f32, tile.Shape{4, 10, 3}, nil)
			ops := map[string]*tile.Tensor{"A": a}
			b.Output("y", parse(b, "O[n, i, c : 4, 4, 3] = +(A[n, 3*i + k, c]), k < 2", ops))
		}},
		{Name: "contract/int", Build: func(b *Builder) {
			a := b.Input("a", tile.Int32, tile.Shape{5, 6}, Ints(-5, 6))
			c := b.Input("c", tile.Int64, tile.Shape{6, 4}, Ints(-5, 6))
			b.Output("sum", parse(b, "O[i : 5] = +(A[i, k])", map[string]*tile.Tensor{"A": a}))
			b.Output("max", parse(b, "O[j : 4] = >(B[k, j])", map[string]*tile.Tensor{"B": c}))
			p := b.Input("p", tile.Bool, tile.Shape{5, 6}, nil)
			b.Output("any", parse(b, "O[i : 5] = >(P[i, k])", map[string]*tile.Tensor{"P": p}))
			b.Output("all", parse(b, "O[i : 5] = <(P[i, k])", map[string]*tile.Tensor{"P": p}))
		}},
		{Name: "contract/float64_matmul", Grad: true, Build: func(b *Builder) {
			a := b.Input("a", tile.Float64, tile.Shape{5, 6}, nil)
			c := b.Input("c", tile.Float64, tile.Shape{6, 3}, nil)
			b.Output("y", parse(b, "O[i, j : 5, 3] = +(A[i, k] * B[k, j])", map[string]*tile.Tensor{"A": a, "B": c}))
		}},
	}
}
