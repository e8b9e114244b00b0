package op

import (
	"hash/fnv"
	"math/rand/v2"
	"testing"

	"github.com/tartanml/tartan/grad"
	"github.com/tartanml/tartan/tile"
)

// Finite-difference checks: for every differentiable op, the gradient that
// package grad builds for the op's nodes is compared, by grad.Check, with
// central differences of y = Σ op(x)·R (R a fixed random tensor) evaluated by
// the reference executor, at every coordinate of every float input (up to
// grad.Check's default 128 probes per input).

// fdMaxErr is the largest error grad.Check may report: relative, with
// grad.Check's default floor of 1e-2 for small derivatives.
const fdMaxErr = 1e-6

// fdStep is the finite-difference step relative to max(1, |x|). It is larger
// than grad.Check's default 1e-6 because the rounding error of a central
// difference, about ε·|y|/h, dominates at 1e-6 for the larger graphs here
// (errors up to 4e-7 were seen, falling tenfold per tenfold step for the
// linear convolutions), while the truncation error, about h²·|f‴|/6, stays
// near 1e-11 at 1e-5 for these smooth functions.
const fdStep = 1e-5

// gen makes an input value from a random source.
type gen func(r *rand.Rand) *tile.Value

// normal draws standard normal values.
func normal(shape ...int) gen {
	return func(r *rand.Rand) *tile.Value {
		v := tile.NewValue(tile.Float64, shape)
		for i := range v.Data {
			v.Data[i] = r.NormFloat64()
		}
		return v
	}
}

// uniform draws values in [lo, hi).
func uniform(lo, hi float64, shape ...int) gen {
	return func(r *rand.Rand) *tile.Value {
		v := tile.NewValue(tile.Float64, shape)
		for i := range v.Data {
			v.Data[i] = lo + (hi-lo)*r.Float64()
		}
		return v
	}
}

// apart draws values of magnitude in [0.1, 3) with random signs whose
// magnitudes are pairwise at least 1.45/n apart, so that no finite-difference
// step crosses a kink of ReLU or Abs or changes which element is a maximum.
func apart(shape ...int) gen {
	return func(r *rand.Rand) *tile.Value {
		v := tile.NewValue(tile.Float64, shape)
		n := len(v.Data)
		for i, p := range r.Perm(n) {
			m := 0.1 + 2.9*(float64(p)+0.25+0.5*r.Float64())/float64(n)
			if r.IntN(2) == 0 {
				m = -m
			}
			v.Data[i] = m
		}
		return v
	}
}

// labels draws i64 class indices below classes.
func labels(classes int, shape ...int) gen {
	return func(r *rand.Rand) *tile.Value {
		v := tile.NewValue(tile.Int64, shape)
		for i := range v.Data {
			v.Data[i] = float64(r.IntN(classes))
		}
		return v
	}
}

// constant is a fixed value.
func constant(v *tile.Value) gen { return func(*rand.Rand) *tile.Value { return v } }

type fdCase struct {
	name  string
	ins   []gen
	build builder
}

func caseRand(name string) *rand.Rand {
	h := fnv.New64a()
	h.Write([]byte(name))
	return rand.New(rand.NewPCG(h.Sum64(), 0x5eed))
}

func runFD(t *testing.T, cases []fdCase) {
	t.Helper()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := caseRand(c.name)
			vals := make([]*tile.Value, len(c.ins))
			for i, gn := range c.ins {
				vals[i] = gn(r)
			}
			g := tile.NewGraph(c.name)
			xs, feeds := inputs(g, vals)
			y := c.build(g, xs)
			if err := g.Err(); err != nil {
				t.Fatalf("building: %v", err)
			}
			w := normal(y.Shape()...)(r)
			s := Sum(g, g.Mul(y, g.Constant(w)), nil, false)
			var diff []*tile.Tensor
			for _, x := range xs {
				if x.DType().IsFloat() {
					diff = append(diff, x)
				}
			}
			worst, where, err := grad.Check(g, s, diff, feeds, nil, grad.WithStep(fdStep))
			if err != nil {
				t.Fatal(err)
			}
			if worst > fdMaxErr {
				t.Errorf("gradient error %.3g > %g: %s", worst, fdMaxErr, where)
			}
			t.Logf("worst error %.3g: %s", worst, where)
		})
	}
}

func TestGradLinalg(t *testing.T) {
	runFD(t, []fdCase{
		{"matmul_2d", []gen{normal(3, 5), normal(5, 4)}, func(g *tile.Graph, x []*tile.Tensor) *tile.Tensor { return MatMul(g, x[0], x[1]) }},
		{"matmul_broadcast", []gen{normal(2, 1, 3, 4), normal(3, 4, 2)}, func(g *tile.Graph, x []*tile.Tensor) *tile.Tensor { return MatMul(g, x[0], x[1]) }},
		{"matmul_vector", []gen{normal(5), normal(2, 5, 3)}, func(g *tile.Graph, x []*tile.Tensor) *tile.Tensor { return MatMul(g, x[0], x[1]) }},
		{"dense_rank3", []gen{normal(2, 3, 5), normal(5, 3), normal(3)}, func(g *tile.Graph, x []*tile.Tensor) *tile.Tensor { return Dense(g, x[0], x[1], x[2]) }},
		{"bias_add", []gen{normal(2, 3, 4), normal(4)}, func(g *tile.Graph, x []*tile.Tensor) *tile.Tensor { return BiasAdd(g, x[0], x[1]) }},
		{"flatten", []gen{normal(2, 3, 2, 2)}, func(g *tile.Graph, x []*tile.Tensor) *tile.Tensor { return Flatten(g, x[0]) }},
	})
}

func TestGradConv(t *testing.T) {
	conv := func(f func(*tile.Graph, *tile.Tensor, *tile.Tensor, ConvOptions) *tile.Tensor, opt ConvOptions) builder {
		return func(g *tile.Graph, x []*tile.Tensor) *tile.Tensor { return f(g, x[0], x[1], opt) }
	}
	runFD(t, []fdCase{
		{"conv2d_same_s2_odd", []gen{normal(2, 7, 5, 3), normal(3, 3, 3, 4)},
			conv(Conv2D, ConvOptions{Strides: []int{2, 2}, Padding: Same})},
		{"conv2d_valid_dilated_rect", []gen{normal(1, 7, 6, 2), normal(2, 3, 2, 3)},
			conv(Conv2D, ConvOptions{Strides: []int{1, 2}, Dilation: []int{2, 1}})},
		{"conv2d_groups3_same_s2", []gen{normal(1, 5, 4, 6), normal(3, 2, 2, 6)},
			conv(Conv2D, ConvOptions{Strides: []int{2}, Padding: Same, Groups: 3})},
		{"conv1d_same_d2_s2", []gen{normal(2, 9, 3), normal(3, 3, 2)},
			conv(Conv1D, ConvOptions{Strides: []int{2}, Padding: Same, Dilation: []int{2}})},
		{"conv3d_same", []gen{normal(1, 4, 5, 3, 2), normal(2, 3, 2, 2, 3)},
			conv(Conv3D, ConvOptions{Strides: []int{2, 1, 2}, Padding: Same})},
		{"depthwise_same_s2_m2", []gen{normal(2, 6, 5, 3), normal(3, 3, 3, 2)},
			conv(DepthwiseConv2D, ConvOptions{Strides: []int{2}, Padding: Same})},
		{"depthwise_valid_d2", []gen{normal(1, 7, 7, 2), normal(2, 2, 2, 1)},
			conv(DepthwiseConv2D, ConvOptions{Dilation: []int{2}})},
	})
}

func TestGradPool(t *testing.T) {
	pool := func(f func(*tile.Graph, *tile.Tensor, PoolOptions) *tile.Tensor, opt PoolOptions) builder {
		return func(g *tile.Graph, x []*tile.Tensor) *tile.Tensor { return f(g, x[0], opt) }
	}
	runFD(t, []fdCase{
		{"max2d_same_p3_s2", []gen{apart(2, 7, 6, 3)}, pool(MaxPool2D, PoolOptions{Size: []int{3}, Strides: []int{2}, Padding: Same})},
		{"max2d_valid_rect", []gen{apart(1, 5, 7, 2)}, pool(MaxPool2D, PoolOptions{Size: []int{2, 3}, Strides: []int{1, 2}})},
		{"avg2d_same_p3_s2", []gen{normal(2, 7, 6, 3)}, pool(AvgPool2D, PoolOptions{Size: []int{3}, Strides: []int{2}, Padding: Same})},
		{"avg2d_default", []gen{normal(1, 6, 5, 2)}, pool(AvgPool2D, PoolOptions{})},
		{"max1d_same", []gen{apart(1, 9, 2)}, pool(MaxPool1D, PoolOptions{Size: []int{3}, Strides: []int{2}, Padding: Same})},
		{"avg1d_same", []gen{normal(2, 7, 3)}, pool(AvgPool1D, PoolOptions{Size: []int{2}, Strides: []int{1}, Padding: Same})},
		{"global_avg", []gen{normal(2, 5, 3, 4)}, func(g *tile.Graph, x []*tile.Tensor) *tile.Tensor { return GlobalAvgPool2D(g, x[0]) }},
		{"global_max", []gen{apart(2, 5, 3, 4)}, func(g *tile.Graph, x []*tile.Tensor) *tile.Tensor { return GlobalMaxPool2D(g, x[0]) }},
	})
}

func TestGradActivation(t *testing.T) {
	unary := func(f func(*tile.Graph, *tile.Tensor) *tile.Tensor) builder {
		return func(g *tile.Graph, x []*tile.Tensor) *tile.Tensor { return f(g, x[0]) }
	}
	in := []gen{apart(3, 7)}
	runFD(t, []fdCase{
		{"relu", in, unary(ReLU)},
		{"leaky_relu", in, func(g *tile.Graph, x []*tile.Tensor) *tile.Tensor { return LeakyReLU(g, x[0], 0.2) }},
		{"elu", in, func(g *tile.Graph, x []*tile.Tensor) *tile.Tensor { return ELU(g, x[0], 1.3) }},
		{"gelu_exact", in, func(g *tile.Graph, x []*tile.Tensor) *tile.Tensor { return GELU(g, x[0], false) }},
		{"gelu_tanh", in, func(g *tile.Graph, x []*tile.Tensor) *tile.Tensor { return GELU(g, x[0], true) }},
		{"sigmoid", in, unary(Sigmoid)},
		{"tanh", in, unary(Tanh)},
		{"softplus", in, unary(Softplus)},
		{"softmax_last", []gen{normal(3, 7)}, func(g *tile.Graph, x []*tile.Tensor) *tile.Tensor { return Softmax(g, x[0], -1) }},
		{"softmax_middle", []gen{normal(2, 5, 3)}, func(g *tile.Graph, x []*tile.Tensor) *tile.Tensor { return Softmax(g, x[0], 1) }},
		{"log_softmax_last", []gen{normal(5, 4)}, func(g *tile.Graph, x []*tile.Tensor) *tile.Tensor { return LogSoftmax(g, x[0], -1) }},
		{"log_softmax_first", []gen{normal(4, 3)}, func(g *tile.Graph, x []*tile.Tensor) *tile.Tensor { return LogSoftmax(g, x[0], 0) }},
		{"dropout", []gen{normal(3, 7), constant(i64(tile.Shape{}, 99))}, func(g *tile.Graph, x []*tile.Tensor) *tile.Tensor {
			return Dropout(g, x[0], 0.4, x[1], 5)
		}},
	})
}

func TestGradLoss(t *testing.T) {
	sparse := func(fromLogits bool) builder {
		return func(g *tile.Graph, x []*tile.Tensor) *tile.Tensor {
			return SparseCategoricalCrossentropy(g, x[0], x[1], fromLogits)
		}
	}
	dense := func(f func(*tile.Graph, *tile.Tensor, *tile.Tensor, bool) *tile.Tensor, fromLogits bool) builder {
		return func(g *tile.Graph, x []*tile.Tensor) *tile.Tensor { return f(g, x[0], x[1], fromLogits) }
	}
	runFD(t, []fdCase{
		{"sparse_logits", []gen{labels(4, 5), normal(5, 4)}, sparse(true)},
		{"sparse_logits_rank3", []gen{labels(4, 2, 3), normal(2, 3, 4)}, sparse(true)},
		{"sparse_probs", []gen{labels(4, 5), uniform(0.1, 1, 5, 4)}, sparse(false)},
		{"categorical_logits", []gen{uniform(0, 1, 5, 4), normal(5, 4)}, dense(CategoricalCrossentropy, true)},
		{"categorical_probs", []gen{uniform(0, 1, 5, 4), uniform(0.1, 1, 5, 4)}, dense(CategoricalCrossentropy, false)},
		{"binary_logits", []gen{uniform(0, 1, 4, 3), apart(4, 3)}, dense(BinaryCrossentropy, true)},
		{"binary_probs", []gen{uniform(0, 1, 4, 3), uniform(0.05, 0.95, 4, 3)}, dense(BinaryCrossentropy, false)},
		{"mse", []gen{normal(4, 3), normal(4, 3)}, func(g *tile.Graph, x []*tile.Tensor) *tile.Tensor { return MeanSquaredError(g, x[0], x[1]) }},
		{"mae", []gen{normal(4, 3), normal(4, 3)}, func(g *tile.Graph, x []*tile.Tensor) *tile.Tensor { return MeanAbsoluteError(g, x[0], x[1]) }},
	})
}

func TestGradNorm(t *testing.T) {
	bn := func(training bool, out int) builder {
		return func(g *tile.Graph, x []*tile.Tensor) *tile.Tensor {
			var mm, mv *tile.Tensor
			if len(x) == 5 {
				mm, mv = x[3], x[4]
			}
			y, m, v := BatchNorm(g, x[0], x[1], x[2], mm, mv, training, 1e-3)
			return []*tile.Tensor{y, m, v}[out]
		}
	}
	runFD(t, []fdCase{
		{"batch_norm_training", []gen{normal(4, 3, 3, 2), uniform(0.5, 1.5, 2), normal(2)}, bn(true, 0)},
		{"batch_norm_training_var", []gen{normal(5, 3), uniform(0.5, 1.5, 3), normal(3)}, bn(true, 2)},
		{"batch_norm_inference", []gen{normal(3, 2, 3), uniform(0.5, 1.5, 3), normal(3), normal(3), uniform(0.5, 2, 3)}, bn(false, 0)},
		{"layer_norm_last", []gen{normal(3, 5), uniform(0.5, 1.5, 5), normal(5)}, func(g *tile.Graph, x []*tile.Tensor) *tile.Tensor {
			return LayerNorm(g, x[0], x[1], x[2], -1, 1e-3)
		}},
		{"layer_norm_middle", []gen{normal(2, 4, 3), uniform(0.5, 1.5, 4)}, func(g *tile.Graph, x []*tile.Tensor) *tile.Tensor {
			return LayerNorm(g, x[0], x[1], nil, 1, 1e-3)
		}},
	})
}

func TestGradReduce(t *testing.T) {
	red := func(f func(*tile.Graph, *tile.Tensor, []int, bool) *tile.Tensor, axes []int, keep bool) builder {
		return func(g *tile.Graph, x []*tile.Tensor) *tile.Tensor { return f(g, x[0], axes, keep) }
	}
	var cases []fdCase
	for _, r := range []struct {
		name string
		f    func(*tile.Graph, *tile.Tensor, []int, bool) *tile.Tensor
	}{{"sum", Sum}, {"mean", Mean}, {"max", Max}, {"min", Min}} {
		cases = append(cases,
			fdCase{r.name + "_axis1", []gen{apart(3, 4, 5)}, red(r.f, []int{1}, false)},
			fdCase{r.name + "_axes02_keep", []gen{apart(3, 4, 5)}, red(r.f, []int{0, -1}, true)},
			fdCase{r.name + "_all", []gen{apart(3, 5)}, red(r.f, nil, false)},
		)
	}
	runFD(t, cases)
}
