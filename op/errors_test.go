package op

import (
	"strings"
	"testing"

	"github.com/tartanml/tartan/tile"
)

// inputMaker declares inputs with generated names on one graph.
type inputMaker struct {
	g *tile.Graph
	n int
}

func (m *inputMaker) x(dt tile.DType, shape ...int) *tile.Tensor {
	m.n++
	return m.g.Input("in"+string(rune('a'+m.n)), dt, shape)
}

func TestBadInput(t *testing.T) {
	const f32, f64, i32, i64, b = tile.Float32, tile.Float64, tile.Int32, tile.Int64, tile.Bool
	cases := []struct {
		name  string
		build func(g *tile.Graph, m *inputMaker) *tile.Tensor
		want  []string // substrings of the error; the op name comes first
	}{
		{"matmul_inner", func(g *tile.Graph, m *inputMaker) *tile.Tensor { return MatMul(g, m.x(f32, 2, 3), m.x(f32, 4, 5)) },
			[]string{"matmul:", "f32[2, 3]", "f32[4, 5]", "inner dimensions"}},
		{"matmul_batch", func(g *tile.Graph, m *inputMaker) *tile.Tensor {
			return MatMul(g, m.x(f32, 2, 3, 4), m.x(f32, 3, 4, 5))
		}, []string{"matmul:", "[2, 3, 4]", "[3, 4, 5]", "broadcast"}},
		{"matmul_scalar", func(g *tile.Graph, m *inputMaker) *tile.Tensor { return MatMul(g, m.x(f32), m.x(f32, 2)) },
			[]string{"matmul:", "rank", "f32[]"}},
		{"matmul_int", func(g *tile.Graph, m *inputMaker) *tile.Tensor { return MatMul(g, m.x(i32, 2, 2), m.x(i32, 2, 2)) },
			[]string{"matmul:", "floating-point", "i32[2, 2]"}},
		{"matmul_dtypes", func(g *tile.Graph, m *inputMaker) *tile.Tensor { return MatMul(g, m.x(f32, 2, 2), m.x(f64, 2, 2)) },
			[]string{"matmul:", "dtypes differ", "f32[2, 2]", "f64[2, 2]"}},
		{"dense_features", func(g *tile.Graph, m *inputMaker) *tile.Tensor { return Dense(g, m.x(f32, 2, 3), m.x(f32, 4, 5), nil) },
			[]string{"dense:", "[2, 3]", "[4, 5]"}},
		{"dense_bias", func(g *tile.Graph, m *inputMaker) *tile.Tensor {
			return Dense(g, m.x(f32, 2, 3), m.x(f32, 3, 5), m.x(f32, 4))
		}, []string{"dense:", "bias", "f32[4]", "(5)"}},
		{"bias_add", func(g *tile.Graph, m *inputMaker) *tile.Tensor { return BiasAdd(g, m.x(f32, 2, 3), m.x(f32, 2)) },
			[]string{"bias_add:", "f32[2, 3]", "f32[2]"}},
		{"flatten_scalar", func(g *tile.Graph, m *inputMaker) *tile.Tensor { return Flatten(g, m.x(f32)) },
			[]string{"flatten:", "f32[]"}},
		{"conv2d_rank", func(g *tile.Graph, m *inputMaker) *tile.Tensor {
			return Conv2D(g, m.x(f32, 5, 5, 3), m.x(f32, 3, 3, 3, 4), ConvOptions{})
		}, []string{"conv2d:", "rank 4", "[5, 5, 3]", "[3, 3, 3, 4]"}},
		{"conv2d_channels", func(g *tile.Graph, m *inputMaker) *tile.Tensor {
			return Conv2D(g, m.x(f32, 1, 5, 5, 3), m.x(f32, 3, 3, 2, 4), ConvOptions{})
		}, []string{"conv2d:", "[1, 5, 5, 3]", "[3, 3, 2, 4]", "input channels"}},
		{"conv2d_groups", func(g *tile.Graph, m *inputMaker) *tile.Tensor {
			return Conv2D(g, m.x(f32, 1, 5, 5, 3), m.x(f32, 3, 3, 1, 4), ConvOptions{Groups: 2})
		}, []string{"conv2d:", "2 groups", "[1, 5, 5, 3]", "[3, 3, 1, 4]"}},
		{"conv2d_too_small", func(g *tile.Graph, m *inputMaker) *tile.Tensor {
			return Conv2D(g, m.x(f32, 1, 2, 5, 1), m.x(f32, 3, 3, 1, 1), ConvOptions{})
		}, []string{"conv2d:", "spatial dimension 0", "smaller than the window", "[1, 2, 5, 1]"}},
		{"conv2d_padding", func(g *tile.Graph, m *inputMaker) *tile.Tensor {
			return Conv2D(g, m.x(f32, 1, 5, 5, 1), m.x(f32, 3, 3, 1, 1), ConvOptions{Padding: "full"})
		}, []string{"conv2d:", `unknown padding "full"`, "f32[1, 5, 5, 1]"}},
		{"conv2d_strides_len", func(g *tile.Graph, m *inputMaker) *tile.Tensor {
			return Conv2D(g, m.x(f32, 1, 5, 5, 1), m.x(f32, 3, 3, 1, 1), ConvOptions{Strides: []int{1, 2, 3}})
		}, []string{"conv2d:", "strides [1 2 3]", "2 spatial"}},
		{"conv2d_dilation_zero", func(g *tile.Graph, m *inputMaker) *tile.Tensor {
			return Conv2D(g, m.x(f32, 1, 5, 5, 1), m.x(f32, 3, 3, 1, 1), ConvOptions{Dilation: []int{0}})
		}, []string{"conv2d:", "dilation [0]", "positive"}},
		{"conv1d_rank", func(g *tile.Graph, m *inputMaker) *tile.Tensor {
			return Conv1D(g, m.x(f32, 1, 5, 5, 1), m.x(f32, 3, 1, 1), ConvOptions{})
		}, []string{"conv1d:", "rank 3", "[1, 5, 5, 1]"}},
		{"depthwise_channels", func(g *tile.Graph, m *inputMaker) *tile.Tensor {
			return DepthwiseConv2D(g, m.x(f32, 1, 5, 5, 3), m.x(f32, 3, 3, 4, 1), ConvOptions{})
		}, []string{"depthwise_conv2d:", "[3, 3, 4, 1]", "[1, 5, 5, 3]"}},
		{"depthwise_groups", func(g *tile.Graph, m *inputMaker) *tile.Tensor {
			return DepthwiseConv2D(g, m.x(f32, 1, 5, 5, 3), m.x(f32, 3, 3, 3, 1), ConvOptions{Groups: 3})
		}, []string{"depthwise_conv2d:", "Groups 3", "[1, 5, 5, 3]"}},
		{"max_pool_rank", func(g *tile.Graph, m *inputMaker) *tile.Tensor { return MaxPool2D(g, m.x(f32, 5, 5, 3), PoolOptions{}) },
			[]string{"max_pool2d:", "rank 4", "f32[5, 5, 3]"}},
		{"max_pool_size", func(g *tile.Graph, m *inputMaker) *tile.Tensor {
			return MaxPool2D(g, m.x(f32, 1, 5, 5, 3), PoolOptions{Size: []int{0}})
		}, []string{"max_pool2d:", "pool size [0]", "[1, 5, 5, 3]"}},
		{"max_pool_too_big", func(g *tile.Graph, m *inputMaker) *tile.Tensor {
			return MaxPool2D(g, m.x(f32, 1, 5, 1, 3), PoolOptions{})
		}, []string{"max_pool2d:", "spatial dimension 1", "[1, 5, 1, 3]"}},
		{"avg_pool_int", func(g *tile.Graph, m *inputMaker) *tile.Tensor {
			return AvgPool2D(g, m.x(i32, 1, 4, 4, 1), PoolOptions{})
		},
			[]string{"avg_pool2d:", "floating-point", "i32[1, 4, 4, 1]"}},
		{"avg_pool1d_strides", func(g *tile.Graph, m *inputMaker) *tile.Tensor {
			return AvgPool1D(g, m.x(f32, 1, 4, 1), PoolOptions{Strides: []int{-1}})
		}, []string{"avg_pool1d:", "strides [-1]", "[1, 4, 1]"}},
		{"global_avg_rank", func(g *tile.Graph, m *inputMaker) *tile.Tensor { return GlobalAvgPool2D(g, m.x(f32, 2, 3)) },
			[]string{"global_avg_pool2d:", "f32[2, 3]"}},
		{"relu_int", func(g *tile.Graph, m *inputMaker) *tile.Tensor { return ReLU(g, m.x(i32, 3)) },
			[]string{"relu:", "floating-point", "i32[3]"}},
		{"gelu_nil", func(g *tile.Graph, m *inputMaker) *tile.Tensor { return GELU(g, nil, false) },
			[]string{"gelu:", "x is nil"}},
		{"softmax_axis", func(g *tile.Graph, m *inputMaker) *tile.Tensor { return Softmax(g, m.x(f32, 2, 3), 2) },
			[]string{"softmax:", "axis 2", "f32[2, 3]"}},
		{"log_softmax_bool", func(g *tile.Graph, m *inputMaker) *tile.Tensor { return LogSoftmax(g, m.x(b, 2, 3), -1) },
			[]string{"log_softmax:", "floating-point", "bool[2, 3]"}},
		{"sparse_float_labels", func(g *tile.Graph, m *inputMaker) *tile.Tensor {
			return SparseCategoricalCrossentropy(g, m.x(f32, 4), m.x(f32, 4, 10), true)
		}, []string{"sparse_categorical_crossentropy:", "labels must be i32 or i64", "f32[4]", "f32[4, 10]"}},
		{"sparse_label_shape", func(g *tile.Graph, m *inputMaker) *tile.Tensor {
			return SparseCategoricalCrossentropy(g, m.x(i64, 5), m.x(f32, 4, 10), true)
		}, []string{"sparse_categorical_crossentropy:", "i64[5]", "f32[4, 10]"}},
		{"sparse_int_pred", func(g *tile.Graph, m *inputMaker) *tile.Tensor {
			return SparseCategoricalCrossentropy(g, m.x(i64, 4), m.x(i64, 4, 10), true)
		}, []string{"sparse_categorical_crossentropy:", "pred must be floating-point", "i64[4, 10]"}},
		{"categorical_shape", func(g *tile.Graph, m *inputMaker) *tile.Tensor {
			return CategoricalCrossentropy(g, m.x(f32, 4, 9), m.x(f32, 4, 10), false)
		}, []string{"categorical_crossentropy:", "f32[4, 9]", "f32[4, 10]"}},
		{"binary_shape", func(g *tile.Graph, m *inputMaker) *tile.Tensor {
			return BinaryCrossentropy(g, m.x(f32, 4), m.x(f32, 4, 1), true)
		}, []string{"binary_crossentropy:", "f32[4]", "f32[4, 1]"}},
		{"mse_shape", func(g *tile.Graph, m *inputMaker) *tile.Tensor { return MeanSquaredError(g, m.x(f32, 3), m.x(f32, 4)) },
			[]string{"mean_squared_error:", "f32[3]", "f32[4]"}},
		{"mae_int_pred", func(g *tile.Graph, m *inputMaker) *tile.Tensor { return MeanAbsoluteError(g, m.x(f32, 3), m.x(i32, 3)) },
			[]string{"mean_absolute_error:", "floating-point", "i32[3]"}},
		{"batch_norm_gamma", func(g *tile.Graph, m *inputMaker) *tile.Tensor {
			y, _, _ := BatchNorm(g, m.x(f32, 2, 4, 4, 3), m.x(f32, 4), nil, nil, nil, true, 1e-3)
			return y
		}, []string{"batch_norm:", "gamma", "(3)", "f32[2, 4, 4, 3]", "f32[4]"}},
		{"batch_norm_no_moving", func(g *tile.Graph, m *inputMaker) *tile.Tensor {
			y, _, _ := BatchNorm(g, m.x(f32, 2, 3), nil, nil, nil, m.x(f32, 3), false, 1e-3)
			return y
		}, []string{"batch_norm:", "inference mode needs moving_mean and moving_var", "f32[2, 3]"}},
		{"batch_norm_rank", func(g *tile.Graph, m *inputMaker) *tile.Tensor {
			y, _, _ := BatchNorm(g, m.x(f32, 3), nil, nil, nil, nil, true, 1e-3)
			return y
		}, []string{"batch_norm:", "rank >= 2", "f32[3]"}},
		{"batch_norm_epsilon", func(g *tile.Graph, m *inputMaker) *tile.Tensor {
			y, _, _ := BatchNorm(g, m.x(f32, 2, 3), nil, nil, nil, nil, true, -1)
			return y
		}, []string{"batch_norm:", "epsilon -1", "f32[2, 3]"}},
		{"layer_norm_axis", func(g *tile.Graph, m *inputMaker) *tile.Tensor {
			return LayerNorm(g, m.x(f32, 2, 3), nil, nil, -3, 1e-3)
		}, []string{"layer_norm:", "axis -3", "f32[2, 3]"}},
		{"layer_norm_beta", func(g *tile.Graph, m *inputMaker) *tile.Tensor {
			return LayerNorm(g, m.x(f32, 2, 3), nil, m.x(f32, 2), -1, 1e-3)
		}, []string{"layer_norm:", "beta", "(3)", "f32[2, 3]", "f32[2]"}},
		{"sum_repeated_axis", func(g *tile.Graph, m *inputMaker) *tile.Tensor { return Sum(g, m.x(f32, 2, 3), []int{1, -1}, false) },
			[]string{"sum:", "repeated", "f32[2, 3]"}},
		{"sum_axis_range", func(g *tile.Graph, m *inputMaker) *tile.Tensor { return Sum(g, m.x(f32, 2, 3), []int{2}, false) },
			[]string{"sum:", "axis 2", "f32[2, 3]"}},
		{"sum_bool", func(g *tile.Graph, m *inputMaker) *tile.Tensor { return Sum(g, m.x(b, 2, 3), nil, false) },
			[]string{"sum:", "numeric", "bool[2, 3]"}},
		{"mean_int", func(g *tile.Graph, m *inputMaker) *tile.Tensor { return Mean(g, m.x(i64, 2, 3), nil, false) },
			[]string{"mean:", "floating-point", "i64[2, 3]"}},
		{"max_empty", func(g *tile.Graph, m *inputMaker) *tile.Tensor { return Max(g, m.x(f32, 2, 0), []int{1}, false) },
			[]string{"max:", "empty axis 1", "f32[2, 0]"}},
		{"argmax_axis", func(g *tile.Graph, m *inputMaker) *tile.Tensor { return ArgMax(g, m.x(f32, 2, 3), -3) },
			[]string{"argmax:", "axis -3", "f32[2, 3]"}},
		{"argmin_bool", func(g *tile.Graph, m *inputMaker) *tile.Tensor { return ArgMin(g, m.x(b, 2, 3), 0) },
			[]string{"argmin:", "numeric", "bool[2, 3]"}},
		{"dropout_rate", func(g *tile.Graph, m *inputMaker) *tile.Tensor { return Dropout(g, m.x(f32, 2, 3), 1, m.x(i64), 0) },
			[]string{"dropout:", "rate 1", "f32[2, 3]"}},
		{"dropout_seed", func(g *tile.Graph, m *inputMaker) *tile.Tensor {
			return Dropout(g, m.x(f32, 2, 3), 0.5, m.x(i64, 2), 0)
		},
			[]string{"dropout:", "seed", "i64[2]"}},
		{"other_graph", func(g *tile.Graph, m *inputMaker) *tile.Tensor {
			other := tile.NewGraph("other")
			return Dense(g, m.x(f32, 2, 3), other.Input("k", f32, tile.Shape{3, 4}), nil)
		}, []string{"dense:", "kernel", "another graph"}},
		// The first error is kept and later ops return invalid tensors.
		{"chain", func(g *tile.Graph, m *inputMaker) *tile.Tensor {
			h := Conv2D(g, m.x(f32, 1, 5, 5, 3), m.x(f32, 3, 3, 2, 4), ConvOptions{})
			return Softmax(g, Dense(g, ReLU(g, h), m.x(f32, 4, 2), nil), -1)
		}, []string{"conv2d:", "[1, 5, 5, 3]", "[3, 3, 2, 4]"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			g := tile.NewGraph(c.name)
			y := c.build(g, &inputMaker{g: g})
			if y.Valid() {
				t.Fatalf("got a valid tensor %v, want an invalid one", y)
			}
			err := g.Err()
			if err == nil {
				t.Fatal("no error recorded")
			}
			msg := err.Error()
			if !strings.HasPrefix(msg, "tile: "+c.want[0]) {
				t.Errorf("error %q does not start with the op %q", msg, c.want[0])
			}
			for _, w := range c.want[1:] {
				if !strings.Contains(msg, w) {
					t.Errorf("error %q does not mention %q", msg, w)
				}
			}
		})
	}
}

func TestNilGraph(t *testing.T) {
	// Nothing to record the error on: the ops return nil rather than panic.
	if y := ReLU(nil, nil); y.Valid() {
		t.Errorf("ReLU(nil, nil) = %v", y)
	}
	if y, m, v := BatchNorm(nil, nil, nil, nil, nil, nil, true, 0); y.Valid() || m.Valid() || v.Valid() {
		t.Error("BatchNorm on a nil graph returned valid tensors")
	}
}
