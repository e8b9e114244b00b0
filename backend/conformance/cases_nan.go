package conformance

import (
	"math"

	"github.com/tartanml/tartan/grad"
	"github.com/tartanml/tartan/op"
	"github.com/tartanml/tartan/tile"
)

// NaNCases check that NaN propagates as in PyTorch: through ReLU and the
// other activations, through elementwise and contraction max and min,
// through max pooling and dropout, and that the gradients route a NaN
// extremum's cotangent to its first NaN. The hand-worked ones (Want) hold
// every backend to the values themselves; the others draw inputs with NaN
// and infinities among them and compare with the reference, NaN for NaN.
func NaNCases() []Case {
	f32 := tile.Float32
	nan, inf := math.NaN(), math.Inf(1)
	// vjp outputs the gradient of y with respect to x for the cotangent dy.
	vjp := func(b *Builder, name string, y, dy, x *tile.Tensor) {
		gs, err := grad.VJP(b.G, []*tile.Tensor{y}, []*tile.Tensor{dy}, x)
		if err != nil {
			b.G.Errorf("conformance", "%s: %v", name, err)
			return
		}
		b.Output(name, gs[0])
	}
	return []Case{
		{Name: "nan/activations", Build: func(b *Builder) {
			g := b.G
			x := b.Input("x", f32, tile.Shape{8}, Values(-2, -0.5, 0, 1.5, nan, inf, -inf, 7))
			dy := b.Input("dy", f32, tile.Shape{8}, Values(1, 2, 3, 4, 5, 6, 7, 8))
			relu := op.ReLU(g, x)
			relu6 := g.Minimum(op.ReLU(g, x), g.ScalarLike(x, 6))
			leaky := op.LeakyReLU(g, x, 0.1)
			b.Output("relu", relu)
			b.Output("relu6", relu6)
			b.Output("leaky", leaky)
			b.Output("elu", op.ELU(g, x, 1))
			vjp(b, "d_relu", relu, dy, x)
			vjp(b, "d_relu6", relu6, dy, x)
			vjp(b, "d_leaky", leaky, dy, x)
		}, Want: map[string][]float64{
			"relu":  {0, 0, 0, 1.5, nan, inf, 0, 7},
			"relu6": {0, 0, 0, 1.5, nan, 6, 0, 6},
			"leaky": {-0.2, -0.05, 0, 1.5, nan, inf, -inf, 7},
			// eˣ − 1 where x ≤ 0.
			"elu": {-0.8646647167633873, -0.3934693402873666, 0, 1.5, nan, inf, -1, 7},
			// The ReLU passes the cotangent where x is not ≤ 0, NaN
			// included (PyTorch's threshold_backward); ReLU6 also stops it
			// above 6, and leaky ReLU scales it by 0.1 where x is not > 0.
			"d_relu":  {0, 0, 0, 4, 5, 6, 0, 8},
			"d_relu6": {0, 0, 0, 4, 5, 0, 0, 0},
			"d_leaky": {0.1, 0.2, 0.3, 4, 0.5, 6, 0.7, 8},
		}},
		{Name: "nan/maximum_minimum", Build: func(b *Builder) {
			g := b.G
			x := b.Input("a", f32, tile.Shape{5}, Values(1, nan, 2, nan, 3))
			y := b.Input("b", f32, tile.Shape{5}, Values(nan, 3, 1, nan, 3))
			dy := b.Input("dy", f32, tile.Shape{5}, Values(1, 2, 3, 4, 5))
			mx, mn := g.Maximum(x, y), g.Minimum(x, y)
			b.Output("max", mx)
			b.Output("min", mn)
			vjp(b, "dmax_a", mx, dy, x)
			vjp(b, "dmax_b", mx, dy, y)
			vjp(b, "dmin_a", mn, dy, x)
			vjp(b, "dmin_b", mn, dy, y)
		}, Want: map[string][]float64{
			"max": {nan, nan, 2, nan, 3},
			"min": {nan, nan, 1, nan, 3},
			// The cotangent goes to the NaN operand (a when both are), and
			// to a on a tie.
			"dmax_a": {0, 2, 3, 4, 5},
			"dmax_b": {1, 0, 0, 0, 0},
			"dmin_a": {0, 2, 0, 4, 5},
			"dmin_b": {1, 0, 3, 0, 0},
		}},
		{Name: "nan/reduce", Build: func(b *Builder) {
			g := b.G
			x := b.Input("x", f32, tile.Shape{3, 4}, Values(1, nan, 3, nan, 4, 5, -1, 0, -inf, 2, nan, 8))
			dy := b.Input("dy", f32, tile.Shape{3}, Values(1, 2, 3))
			mx, mn := op.Max(g, x, []int{1}, false), op.Min(g, x, []int{1}, false)
			b.Output("max", mx)
			b.Output("min", mn)
			b.Output("argmax", op.ArgMax(g, x, 1))
			b.Output("argmin", op.ArgMin(g, x, 1))
			vjp(b, "d_max", mx, dy, x)
			vjp(b, "d_min", mn, dy, x)
		}, Want: map[string][]float64{
			"max":    {nan, 5, nan},
			"min":    {nan, -1, nan},
			"argmax": {1, 1, 2},
			"argmin": {1, 2, 2},
			// Each row's cotangent goes to its first NaN, or its extremum.
			"d_max": {0, 1, 0, 0, 0, 2, 0, 0, 0, 0, 3, 0},
			"d_min": {0, 1, 0, 0, 0, 0, 2, 0, 0, 0, 3, 0},
		}},
		nanPoolCase(),
		nanLongReduceCase(),
		{Name: "nan/dropout", Build: func(b *Builder) {
			g := b.G
			x := b.Input("x", f32, tile.Shape{13}, Values(nan, nan, nan, nan, nan, nan, nan, nan, nan, nan, nan, nan, nan))
			seed := b.Input("seed", tile.Int64, tile.Shape{}, Values(11))
			b.Output("y", op.Dropout(g, x, 0.5, seed, 4))
		}, Want: map[string][]float64{
			// A dropped NaN is NaN · 0.
			"y": {nan, nan, nan, nan, nan, nan, nan, nan, nan, nan, nan, nan, nan},
		}},
		{Name: "nan/random_activations", Grad: true, Build: func(b *Builder) {
			g := b.G
			x := b.Input("x", f32, tile.Shape{7, 9}, WithNaN(Uniform(-3, 3), 0.1))
			y := b.Input("y", f32, tile.Shape{9}, WithNaN(nil, 0.1))
			b.Output("relu", op.ReLU(g, x))
			b.Output("relu6", g.Minimum(op.ReLU(g, x), g.ScalarLike(x, 6)))
			b.Output("leaky", op.LeakyReLU(g, x, 0.2))
			b.Output("elu", op.ELU(g, x, 1))
			b.Output("softplus", op.Softplus(g, x))
			b.Output("max", g.Maximum(x, y))
			b.Output("min", g.Minimum(x, y))
		}},
		{Name: "nan/random_pool", Grad: true, Build: func(b *Builder) {
			g := b.G
			x := b.Input("x", f32, tile.Shape{2, 7, 9, 11}, WithNaN(Ints(-3, 4), 0.03))
			h := op.ReLU(g, x)
			b.Output("valid", op.MaxPool2D(g, h, op.PoolOptions{}))
			b.Output("same_overlap", op.MaxPool2D(g, h, op.PoolOptions{Size: []int{3}, Strides: []int{2}, Padding: op.Same}))
			b.Output("plain", op.MaxPool2D(g, x, op.PoolOptions{Strides: []int{1}, Padding: op.Same}))
			b.Output("global", op.GlobalMaxPool2D(g, x))
			b.Output("pool1d", op.MaxPool1D(g, b.Input("z", f32, tile.Shape{3, 10, 9}, WithNaN(Ints(-2, 3), 0.05)), op.PoolOptions{Size: []int{3}, Strides: []int{2}}))
		}},
		{Name: "nan/random_dropout", Grad: true, Build: func(b *Builder) {
			g := b.G
			x := b.Input("x", f32, tile.Shape{5, 6, 4, 9}, WithNaN(nil, 0.1))
			seed := b.Input("seed", tile.Int64, tile.Shape{}, Ints(0, 1000))
			b.Output("y", op.Dropout(g, x, 0.4, seed, 5))
			// A pool then a dropout, as in the showcase.
			b.Output("pooled", op.Dropout(g, op.MaxPool2D(g, op.ReLU(g, x), op.PoolOptions{}), 0.3, seed, 6))
		}},
		{Name: "nan/random_mini_cnn", Grad: true, Build: func(b *Builder) {
			// The showcase CNN's layers with a NaN among the inputs: the
			// loss and the gradients must be NaN exactly where the
			// reference has them.
			g := b.G
			x := b.Input("x", f32, tile.Shape{3, 8, 8, 1}, WithNaN(Uniform(0, 1), 0.01))
			labels := b.Input("labels", tile.Int64, tile.Shape{3}, Ints(0, 4))
			same := op.ConvOptions{Padding: op.Same}
			h := op.ReLU(g, op.BiasAdd(g, op.Conv2D(g, x, b.Input("c1", f32, tile.Shape{2, 2, 1, 6}, nil), same), b.Input("b1", f32, tile.Shape{6}, nil)))
			h = op.MaxPool2D(g, h, op.PoolOptions{})
			h = op.ReLU(g, op.Dense(g, op.Flatten(g, h), b.Input("w1", f32, tile.Shape{96, 7}, nil), b.Input("d1", f32, tile.Shape{7}, nil)))
			logits := op.Dense(g, h, b.Input("w2", f32, tile.Shape{7, 4}, nil), b.Input("d2", f32, tile.Shape{4}, nil))
			b.Output("loss", op.SparseCategoricalCrossentropy(g, labels, logits, true))
		}},
	}
}

// nanPoolCase is a hand-worked ReLU and 2×2 max pooling, forward and
// backward, over nine channels (a vector of eight and one more) of three
// kinds: c mod 3 = 0 holds the image
//
//	1 5 2  0
//	3 4 8  1
//	0 9 7  6
//	2 1 3 -1
//
// c mod 3 = 1 the same with a NaN at (1, 1), and c mod 3 = 2 with NaNs at
// (1, 0), (1, 1) and (3, 3). A window holding a NaN pools to NaN and sends
// its cotangent (1, 2, 3, 4 for the four windows) to its first NaN in
// row-major window order.
func nanPoolCase() Case {
	const ch = 9
	nan := math.NaN()
	img := [3][16]float64{
		{1, 5, 2, 0, 3, 4, 8, 1, 0, 9, 7, 6, 2, 1, 3, -1},
		{1, 5, 2, 0, 3, nan, 8, 1, 0, 9, 7, 6, 2, 1, 3, -1},
		{1, 5, 2, 0, nan, nan, 8, 1, 0, 9, 7, 6, 2, 1, 3, nan},
	}
	pooled := [3][4]float64{{5, 8, 9, 7}, {nan, 8, 9, 7}, {nan, 8, 9, nan}}
	// The ReLU and the pooling: where each window's cotangent lands.
	dx := [3][16]float64{
		{0, 1, 0, 0, 0, 0, 2, 0, 0, 3, 4, 0, 0, 0, 0, 0},
		{0, 0, 0, 0, 0, 1, 2, 0, 0, 3, 4, 0, 0, 0, 0, 0},
		{0, 0, 0, 0, 1, 0, 2, 0, 0, 3, 0, 0, 0, 0, 0, 4},
	}
	// NHWC with channel c of kind c mod 3.
	spread := func(per [3][16]float64) []float64 {
		out := make([]float64, 0, 16*ch)
		for p := range 16 {
			for c := range ch {
				out = append(out, per[c%3][p])
			}
		}
		return out
	}
	var x, want, grad16 []float64
	x, grad16 = spread(img), spread(dx)
	for p := range 4 {
		for c := range ch {
			want = append(want, pooled[c%3][p])
		}
	}
	var dy []float64
	for p := range 4 {
		for range ch {
			dy = append(dy, float64(p+1))
		}
	}
	return Case{Name: "nan/max_pool", Build: func(b *Builder) {
		g := b.G
		xt := b.Input("x", tile.Float32, tile.Shape{1, 4, 4, ch}, Values(x...))
		dyt := b.Input("dy", tile.Float32, tile.Shape{1, 2, 2, ch}, Values(dy...))
		y := op.MaxPool2D(g, op.ReLU(g, xt), op.PoolOptions{})
		b.Output("y", y)
		gs, err := grad.VJP(g, []*tile.Tensor{y}, []*tile.Tensor{dyt}, xt)
		if err != nil {
			g.Errorf("conformance", "nan/max_pool: %v", err)
			return
		}
		b.Output("dx", gs[0])
	}, Want: map[string][]float64{"y": want, "dx": grad16}}
}

// nanLongReduceCase is a maximum over rows of 4099 elements, long enough
// for a backend's work-group reduction and for the gradient's position
// tensor to be computed rather than stored: element j of each row is
// j mod 97 − 50, except NaNs at row 0 column 3001 and row 1 columns 17 and
// 2000. Rows 0 and 1 reduce to NaN, row 2 to 46 (first at column 96), and
// each row's cotangent goes to that first NaN or maximum.
func nanLongReduceCase() Case {
	const n = 4099
	nan := math.NaN()
	x := make([]float64, 3*n)
	for r := range 3 {
		for j := range n {
			x[r*n+j] = float64(j%97 - 50)
		}
	}
	x[3001], x[n+17], x[n+2000] = nan, nan, nan
	dx := make([]float64, 3*n)
	dx[3001], dx[n+17], dx[2*n+96] = 1, 2, 3
	return Case{Name: "nan/long_reduce", Build: func(b *Builder) {
		g := b.G
		xt := b.Input("x", tile.Float32, tile.Shape{3, n}, Values(x...))
		dy := b.Input("dy", tile.Float32, tile.Shape{3}, Values(1, 2, 3))
		y := op.Max(g, xt, []int{1}, false)
		b.Output("max", y)
		b.Output("argmax", op.ArgMax(g, xt, 1))
		gs, err := grad.VJP(g, []*tile.Tensor{y}, []*tile.Tensor{dy}, xt)
		if err != nil {
			g.Errorf("conformance", "nan/long_reduce: %v", err)
			return
		}
		b.Output("dx", gs[0])
	}, Want: map[string][]float64{"max": {nan, nan, 46}, "argmax": {3001, 17, 96}, "dx": dx}}
}
