package op

import (
	"testing"

	"github.com/tartanml/tartan/ref"
	"github.com/tartanml/tartan/tile"
)

// TestFloat32 builds ops on f32 inputs, as models train, and checks that the
// results keep the f32 dtype and agree with the same ops in f64 on the same
// (f32-representable) inputs to within f32 rounding: |f32 − f64| ≤
// 1e-5·max(|f64|, 1), all values here being of order 1.
func TestFloat32(t *testing.T) {
	cases := []fdCase{
		{"conv2d_same_s2_bias", []gen{normal(2, 7, 5, 3), normal(3, 3, 3, 4), normal(4)}, func(g *tile.Graph, x []*tile.Tensor) *tile.Tensor {
			return BiasAdd(g, Conv2D(g, x[0], x[1], ConvOptions{Strides: []int{2}, Padding: Same}), x[2])
		}},
		{"depthwise_groups", []gen{normal(1, 5, 5, 4), normal(2, 2, 4, 2), normal(2, 2, 2, 4)}, func(g *tile.Graph, x []*tile.Tensor) *tile.Tensor {
			h := DepthwiseConv2D(g, x[0], x[1], ConvOptions{Padding: Same})
			return Conv2D(g, h, x[2], ConvOptions{Groups: 4})
		}},
		{"pools", []gen{normal(2, 7, 6, 3)}, func(g *tile.Graph, x []*tile.Tensor) *tile.Tensor {
			opt := PoolOptions{Size: []int{3}, Strides: []int{2}, Padding: Same}
			return g.Add(MaxPool2D(g, x[0], opt), AvgPool2D(g, x[0], opt))
		}},
		{"dense_activations", []gen{normal(4, 6), normal(6, 5), normal(5)}, func(g *tile.Graph, x []*tile.Tensor) *tile.Tensor {
			h := Dense(g, x[0], x[1], x[2])
			return g.Add(g.Add(GELU(g, h, false), ELU(g, h, 1)), g.Add(Softplus(g, h), LogSoftmax(g, h, -1)))
		}},
		{"losses", []gen{labels(5, 4), uniform(0.1, 1, 4, 5), uniform(0, 1, 4, 5)}, func(g *tile.Graph, x []*tile.Tensor) *tile.Tensor {
			a := SparseCategoricalCrossentropy(g, x[0], x[1], false)
			b := BinaryCrossentropy(g, x[2], x[1], false)
			return g.Add(a, g.Add(b, CategoricalCrossentropy(g, x[2], x[1], true)))
		}},
		{"norms", []gen{normal(4, 3, 2), uniform(0.5, 1.5, 2), normal(2)}, func(g *tile.Graph, x []*tile.Tensor) *tile.Tensor {
			y, _, _ := BatchNorm(g, x[0], x[1], x[2], nil, nil, true, 1e-3)
			return g.Add(y, LayerNorm(g, x[0], x[1], x[2], -1, 1e-3))
		}},
		{"dropout", []gen{normal(3, 7), constant(i64(tile.Shape{}, 5))}, func(g *tile.Graph, x []*tile.Tensor) *tile.Tensor {
			return Dropout(g, x[0], 0.5, x[1], 2)
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := caseRand(c.name)
			vals64 := make([]*tile.Value, len(c.ins))
			vals32 := make([]*tile.Value, len(c.ins))
			for i, gn := range c.ins {
				v := gn(r)
				if v.DType == tile.Float64 {
					for j, x := range v.Data {
						v.Data[j] = tile.RoundTo(tile.Float32, x)
					}
					vals32[i] = &tile.Value{DType: tile.Float32, Shape: v.Shape, Data: v.Data}
				} else {
					vals32[i] = v
				}
				vals64[i] = v
			}
			run := func(vals []*tile.Value) *tile.Value {
				g := tile.NewGraph(c.name)
				xs, feeds := inputs(g, vals)
				y := c.build(g, xs)
				if err := g.Err(); err != nil {
					t.Fatal(err)
				}
				g.SetOutput("y", y)
				out, err := ref.Run(g, feeds, nil)
				if err != nil {
					t.Fatal(err)
				}
				return out["y"]
			}
			want, got := run(vals64), run(vals32)
			if got.DType != tile.Float32 {
				t.Errorf("dtype %v, want f32", got.DType)
			}
			if err := compareValues(got, want, 1e-5, 1); err != nil {
				t.Error(err)
			}
		})
	}
}
