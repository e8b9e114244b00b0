package conformance

import (
	"github.com/tartanml/tartan/op"
	"github.com/tartanml/tartan/tile"
)

// opCases cover the op library: linear algebra, convolutions, pooling,
// activations, softmax, losses, normalisation, reductions and dropout.
func opCases() []Case {
	f32 := tile.Float32
	conv := func(name string, x, k tile.Shape, o op.ConvOptions, f func(g *tile.Graph, x, k *tile.Tensor, o op.ConvOptions) *tile.Tensor) Case {
		return Case{Name: name, Grad: true, Build: func(b *Builder) {
			xt := b.Input("x", f32, x, nil)
			kt := b.Input("k", f32, k, nil)
			b.Output("y", f(b.G, xt, kt, o))
		}}
	}
	pool := func(name string, x tile.Shape, o op.PoolOptions, f func(g *tile.Graph, x *tile.Tensor, o op.PoolOptions) *tile.Tensor) Case {
		return Case{Name: name, Grad: true, Build: func(b *Builder) {
			b.Output("y", f(b.G, b.Input("x", f32, x, nil), o))
		}}
	}
	act := func(name string, f func(g *tile.Graph, x *tile.Tensor) *tile.Tensor) Case {
		return Case{Name: "activation/" + name, Grad: true, Build: func(b *Builder) {
			b.Output("y", f(b.G, b.Input("x", f32, tile.Shape{5, 9}, Uniform(-3, 3))))
		}}
	}
	same := op.Same
	return []Case{
		{Name: "op/matmul", Grad: true, Build: func(b *Builder) {
			g := b.G
			b.Output("mm", op.MatMul(g, b.Input("a", f32, tile.Shape{7, 5}, nil), b.Input("b", f32, tile.Shape{5, 3}, nil)))
			b.Output("bmm", op.MatMul(g, b.Input("c", f32, tile.Shape{2, 1, 4, 5}, nil), b.Input("d", f32, tile.Shape{3, 5, 6}, nil)))
		}},
		{Name: "op/dense", Grad: true, Build: func(b *Builder) {
			g := b.G
			x := b.Input("x", f32, tile.Shape{6, 17}, nil)
			y := op.Dense(g, x, b.Input("w", f32, tile.Shape{17, 9}, nil), b.Input("bias", f32, tile.Shape{9}, nil))
			b.Output("y", op.ReLU(g, y))
			b.Output("flat", op.Flatten(g, b.Input("z", f32, tile.Shape{2, 3, 5}, nil)))
		}},
		{Name: "op/bias_add", Grad: true, Build: func(b *Builder) {
			b.Output("y", op.BiasAdd(b.G, b.Input("x", f32, tile.Shape{3, 4, 5}, nil), b.Input("b", f32, tile.Shape{5}, nil)))
		}},
		conv("conv/1d_valid_stride", tile.Shape{2, 11, 3}, tile.Shape{3, 3, 4}, op.ConvOptions{Strides: []int{2}}, op.Conv1D),
		conv("conv/2d_same", tile.Shape{2, 7, 9, 3}, tile.Shape{3, 3, 3, 5}, op.ConvOptions{Padding: same}, op.Conv2D),
		conv("conv/2d_same_even_kernel", tile.Shape{3, 6, 5, 2}, tile.Shape{2, 2, 2, 4}, op.ConvOptions{Padding: same}, op.Conv2D),
		conv("conv/2d_stride_dilation", tile.Shape{2, 11, 10, 2}, tile.Shape{2, 3, 2, 3}, op.ConvOptions{Strides: []int{2, 1}, Dilation: []int{2}}, op.Conv2D),
		conv("conv/2d_same_stride", tile.Shape{1, 9, 8, 3}, tile.Shape{3, 3, 3, 2}, op.ConvOptions{Strides: []int{2}, Padding: same}, op.Conv2D),
		// Overlapping strided windows over even extents: the input
		// gradients split into sub-pixel phases (compile/subpixel.go).
		conv("conv/2d_stride2_even", tile.Shape{2, 8, 10, 3}, tile.Shape{3, 3, 3, 4}, op.ConvOptions{Strides: []int{2}, Padding: same}, op.Conv2D),
		conv("conv/2d_stride3_k5", tile.Shape{1, 12, 9, 2}, tile.Shape{5, 4, 2, 3}, op.ConvOptions{Strides: []int{3}}, op.Conv2D),
		conv("conv/depthwise_stride2", tile.Shape{2, 8, 6, 3}, tile.Shape{3, 3, 3, 1}, op.ConvOptions{Strides: []int{2}, Padding: same}, op.DepthwiseConv2D),
		conv("conv/2d_groups", tile.Shape{2, 6, 6, 4}, tile.Shape{3, 3, 2, 6}, op.ConvOptions{Groups: 2, Padding: same}, op.Conv2D),
		conv("conv/3d", tile.Shape{1, 4, 5, 4, 2}, tile.Shape{2, 3, 2, 2, 3}, op.ConvOptions{}, op.Conv3D),
		conv("conv/depthwise", tile.Shape{2, 7, 6, 3}, tile.Shape{3, 3, 3, 2}, op.ConvOptions{Padding: same}, op.DepthwiseConv2D),
		{Name: "conv/channels_first", Grad: true, Build: func(b *Builder) {
			// ONNX's layout: x (N, C, H, W), w (M, C, 3, 3), padding 1. The
			// images are a batch loop of the matrix product, read by x
			// only, between which the weights' M loop lies in the output.
			x := b.Input("x", f32, tile.Shape{3, 4, 6, 5}, nil)
			w := b.Input("w", f32, tile.Shape{7, 4, 3, 3}, nil)
			n, m, c := tile.Ix("n"), tile.Ix("m"), tile.Ix("c")
			y0, y1, k0, k1 := tile.Ix("y0"), tile.Ix("y1"), tile.Ix("k0"), tile.Ix("k1")
			b.Output("y", b.G.Contract(tile.Sum, tile.CombMul, tile.Shape{3, 7, 6, 5}, []tile.Affine{n, m, y0, y1},
				[]tile.Operand{{Tensor: x, Index: []tile.Affine{n, c, y0.Plus(k0).AddConst(-1), y1.Plus(k1).AddConst(-1)}},
					{Tensor: w, Index: []tile.Affine{m, c, k0, k1}}}))
		}},
		conv("conv/wide_channels", tile.Shape{2, 6, 7, 40}, tile.Shape{2, 2, 40, 33}, op.ConvOptions{Padding: same}, op.Conv2D),
		pool("pool/max1d", tile.Shape{2, 9, 3}, op.PoolOptions{Size: []int{3}, Strides: []int{2}}, op.MaxPool1D),
		pool("pool/max2d", tile.Shape{2, 8, 6, 5}, op.PoolOptions{}, op.MaxPool2D),
		pool("pool/max2d_same", tile.Shape{2, 7, 5, 3}, op.PoolOptions{Size: []int{3}, Strides: []int{2}, Padding: same}, op.MaxPool2D),
		pool("pool/max2d_same_even", tile.Shape{2, 8, 6, 3}, op.PoolOptions{Size: []int{3}, Strides: []int{2}, Padding: same}, op.MaxPool2D),
		pool("pool/avg2d_same_even", tile.Shape{2, 6, 8, 2}, op.PoolOptions{Size: []int{3}, Strides: []int{2}, Padding: same}, op.AvgPool2D),
		pool("pool/avg1d_same", tile.Shape{2, 9, 3}, op.PoolOptions{Size: []int{2}, Padding: same}, op.AvgPool1D),
		pool("pool/avg2d", tile.Shape{2, 7, 7, 4}, op.PoolOptions{Size: []int{3}, Strides: []int{2}}, op.AvgPool2D),
		{Name: "pool/global", Grad: true, Build: func(b *Builder) {
			x := b.Input("x", f32, tile.Shape{3, 5, 4, 6}, nil)
			b.Output("avg", op.GlobalAvgPool2D(b.G, x))
			b.Output("max", op.GlobalMaxPool2D(b.G, x))
		}},
		act("relu", op.ReLU),
		act("leaky_relu", func(g *tile.Graph, x *tile.Tensor) *tile.Tensor { return op.LeakyReLU(g, x, 0.2) }),
		act("elu", func(g *tile.Graph, x *tile.Tensor) *tile.Tensor { return op.ELU(g, x, 1.3) }),
		act("gelu", func(g *tile.Graph, x *tile.Tensor) *tile.Tensor { return op.GELU(g, x, false) }),
		act("gelu_tanh", func(g *tile.Graph, x *tile.Tensor) *tile.Tensor { return op.GELU(g, x, true) }),
		act("sigmoid", op.Sigmoid),
		act("tanh", op.Tanh),
		act("softplus", op.Softplus),
		{Name: "op/softmax", Grad: true, Build: func(b *Builder) {
			x := b.Input("x", f32, tile.Shape{4, 7, 5}, Uniform(-4, 4))
			b.Output("last", op.Softmax(b.G, x, -1))
			b.Output("mid", op.Softmax(b.G, x, 1))
			b.Output("log", op.LogSoftmax(b.G, x, -1))
		}},
		{Name: "loss/sparse_cce", Grad: true, Build: func(b *Builder) {
			g := b.G
			logits := b.Input("logits", f32, tile.Shape{9, 7}, Uniform(-3, 3))
			labels := b.Input("labels", tile.Int64, tile.Shape{9}, Ints(0, 7))
			b.Output("logits_loss", op.SparseCategoricalCrossentropy(g, labels, logits, true))
			probs := b.Input("probs", f32, tile.Shape{9, 7}, Uniform(0.01, 1))
			b.Output("probs_loss", op.SparseCategoricalCrossentropy(g, labels, probs, false))
		}},
		{Name: "loss/cce_bce", Grad: true, Build: func(b *Builder) {
			g := b.G
			pred := b.Input("pred", f32, tile.Shape{6, 5}, Uniform(0.02, 0.98))
			target := b.Input("target", f32, tile.Shape{6, 5}, Uniform(0, 1))
			logits := b.Input("logits", f32, tile.Shape{6, 5}, Uniform(-3, 3))
			b.Output("cce", op.CategoricalCrossentropy(g, target, pred, false))
			b.Output("cce_logits", op.CategoricalCrossentropy(g, target, logits, true))
			b.Output("bce", op.BinaryCrossentropy(g, target, pred, false))
			b.Output("bce_logits", op.BinaryCrossentropy(g, target, logits, true))
		}},
		{Name: "loss/regression", Grad: true, Build: func(b *Builder) {
			g := b.G
			pred := b.Input("pred", f32, tile.Shape{7, 3}, nil)
			target := b.Input("target", f32, tile.Shape{7, 3}, nil)
			b.Output("mse", op.MeanSquaredError(g, target, pred))
			b.Output("mae", op.MeanAbsoluteError(g, target, pred))
		}},
		{Name: "norm/batch", Grad: true, Build: func(b *Builder) {
			g := b.G
			x := b.Input("x", f32, tile.Shape{6, 3, 5}, nil)
			gamma := b.Input("gamma", f32, tile.Shape{5}, Uniform(0.5, 1.5))
			beta := b.Input("beta", f32, tile.Shape{5}, nil)
			y, mean, variance := op.BatchNorm(g, x, gamma, beta, nil, nil, true, 1e-3)
			b.Output("y", y)
			b.Output("mean", mean)
			b.Output("var", variance)
			mm := b.Input("moving_mean", f32, tile.Shape{5}, nil)
			mv := b.Input("moving_var", f32, tile.Shape{5}, Uniform(0.5, 2))
			yi, _, _ := op.BatchNorm(g, x, gamma, beta, mm, mv, false, 1e-3)
			b.Output("inference", yi)
		}},
		{Name: "norm/layer", Grad: true, Build: func(b *Builder) {
			g := b.G
			x := b.Input("x", f32, tile.Shape{4, 9}, nil)
			b.Output("y", op.LayerNorm(g, x, b.Input("gamma", f32, tile.Shape{9}, nil), b.Input("beta", f32, tile.Shape{9}, nil), -1, 1e-5))
		}},
		{Name: "reduce/float", Grad: true, Build: func(b *Builder) {
			g := b.G
			x := b.Input("x", f32, tile.Shape{3, 5, 7}, nil)
			b.Output("sum", op.Sum(g, x, []int{0, 2}, false))
			b.Output("sum_all", op.Sum(g, x, nil, false))
			b.Output("mean", op.Mean(g, x, []int{1}, true))
			b.Output("max", op.Max(g, x, []int{2}, false))
			b.Output("min", op.Min(g, x, []int{0}, true))
		}},
		{Name: "reduce/arg", Build: func(b *Builder) {
			g := b.G
			x := b.Input("x", f32, tile.Shape{4, 6, 5}, nil)
			b.Output("argmax", op.ArgMax(g, x, 1))
			b.Output("argmin", op.ArgMin(g, x, -1))
		}},
		{Name: "op/dropout", Grad: true, Build: func(b *Builder) {
			g := b.G
			x := b.Input("x", f32, tile.Shape{5, 13, 7}, nil)
			seed := b.Input("seed", tile.Int64, tile.Shape{}, Ints(0, 1000))
			b.Output("y", op.Dropout(g, x, 0.4, seed, 9))
		}},
		{Name: "model/mini_cnn", Grad: true, Build: func(b *Builder) {
			// The showcase CNN's layers at a small size: convolution, bias,
			// ReLU, max pooling, dense layers and the loss, as fused by a
			// compiler.
			g := b.G
			x := b.Input("x", f32, tile.Shape{3, 8, 8, 1}, Uniform(0, 1))
			labels := b.Input("labels", tile.Int64, tile.Shape{3}, Ints(0, 4))
			same := op.ConvOptions{Padding: op.Same}
			h := op.ReLU(g, op.BiasAdd(g, op.Conv2D(g, x, b.Input("c1", f32, tile.Shape{2, 2, 1, 6}, nil), same), b.Input("b1", f32, tile.Shape{6}, nil)))
			h = op.MaxPool2D(g, h, op.PoolOptions{})
			h = op.ReLU(g, op.BiasAdd(g, op.Conv2D(g, h, b.Input("c2", f32, tile.Shape{2, 2, 6, 5}, nil), same), b.Input("b2", f32, tile.Shape{5}, nil)))
			h = op.MaxPool2D(g, h, op.PoolOptions{})
			h = op.ReLU(g, op.Dense(g, op.Flatten(g, h), b.Input("w1", f32, tile.Shape{20, 7}, nil), b.Input("d1", f32, tile.Shape{7}, nil)))
			logits := op.Dense(g, h, b.Input("w2", f32, tile.Shape{7, 4}, nil), b.Input("d2", f32, tile.Shape{4}, nil))
			b.Output("loss", op.SparseCategoricalCrossentropy(g, labels, logits, true))
		}},
	}
}
