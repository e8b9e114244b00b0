package nn

import (
	"math"
	"testing"
)

// TestLayerForward runs small models in inference mode and compares them
// with the same computations written out plainly on the host, which checks
// the layers' wiring: weight layouts, bias, activation, padding.
func TestLayerForward(t *testing.T) {
	relu := func(v float64) float64 { return math.Max(v, 0) }
	cases := []struct {
		name    string
		in      []int
		layers  []Layer
		weights map[string][]float32
		x       []float32
		want    func(x []float32) []float64
	}{
		{
			name: "dense relu", in: []int{3}, layers: []Layer{Dense(2, Activation("relu"))},
			weights: map[string][]float32{"dense/kernel": {1, -1, 2, 0.5, -3, 1}, "dense/bias": {0.5, -0.25}},
			x:       []float32{1, 2, 3, -1, 0, 1},
			want: func(x []float32) []float64 {
				k := []float64{1, -1, 2, 0.5, -3, 1}
				b := []float64{0.5, -0.25}
				var out []float64
				for n := range 2 {
					for j := range 2 {
						s := b[j]
						for i := range 3 {
							s += float64(x[n*3+i]) * k[i*2+j]
						}
						out = append(out, relu(s))
					}
				}
				return out
			},
		},
		{
			// 'same' with a 2×2 kernel pads nothing before and one row and
			// column after, as TensorFlow does.
			name: "conv2d same", in: []int{3, 3, 1}, layers: []Layer{Conv2D(2, 2, Padding("same"))},
			weights: map[string][]float32{"conv2d/kernel": {1, -1, 2, 0, 0, 1, -1, 3}, "conv2d/bias": {0.1, -0.2}},
			x:       []float32{1, 2, 3, 4, 5, 6, 7, 8, 9},
			want: func(x []float32) []float64 {
				k := []float64{1, -1, 2, 0, 0, 1, -1, 3} // (kh, kw, in=1, out=2)
				var out []float64
				for y := range 3 {
					for xx := range 3 {
						for o := range 2 {
							s := []float64{0.1, -0.2}[o]
							for i := range 2 {
								for j := range 2 {
									if y+i < 3 && xx+j < 3 {
										s += float64(x[(y+i)*3+xx+j]) * k[(i*2+j)*2+o]
									}
								}
							}
							out = append(out, s)
						}
					}
				}
				return out
			},
		},
		{
			name: "depthwise", in: []int{2, 2, 2}, layers: []Layer{DepthwiseConv2D(2, DepthMultiplier(2), UseBias(false))},
			weights: map[string][]float32{"depthwise_conv2d/kernel": {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}},
			x:       []float32{1, -1, 2, -2, 3, -3, 4, -4},
			want: func(x []float32) []float64 {
				// kernel (kh, kw, c, m); output channel c·2 + m.
				out := make([]float64, 4)
				for c := range 2 {
					for m := range 2 {
						s := 0.0
						for p := range 4 {
							s += float64(x[p*2+c]) * float64(1+(p*2+c)*2+m)
						}
						out[c*2+m] = s
					}
				}
				return out
			},
		},
		{
			name: "max and average pooling", in: []int{4, 4, 1}, layers: []Layer{MaxPooling2D(2), AveragePooling2D(2)},
			x: []float32{1, 5, 2, 0, 3, 4, 8, 1, 0, 0, 9, 9, 7, 1, 2, 3},
			want: func(x []float32) []float64 {
				return []float64{(5.0 + 8 + 7 + 9) / 4}
			},
		},
		{
			name: "global average", in: []int{2, 2, 2}, layers: []Layer{GlobalAveragePooling2D()},
			x:    []float32{1, 10, 2, 20, 3, 30, 4, 40},
			want: func(x []float32) []float64 { return []float64{2.5, 25} },
		},
		{
			name: "embedding", in: []int{4}, layers: []Layer{Embedding(3, 2)},
			weights: map[string][]float32{"embedding/embeddings": {1, 2, 3, 4, 5, 6}},
			x:       []float32{2, 0, 1, 2},
			want:    func(x []float32) []float64 { return []float64{5, 6, 1, 2, 3, 4, 5, 6} },
		},
		{
			name: "batch norm inference", in: []int{2}, layers: []Layer{BatchNormalization()},
			weights: map[string][]float32{"batch_normalization/gamma": {2, 1}, "batch_normalization/beta": {0, 1},
				"batch_normalization/moving_mean": {1, -1}, "batch_normalization/moving_variance": {4, 0.25}},
			x: []float32{3, 0},
			want: func(x []float32) []float64 {
				return []float64{2 * (3 - 1) / math.Sqrt(4+1e-3), (0+1)/math.Sqrt(0.25+1e-3) + 1}
			},
		},
		{
			name: "layer norm", in: []int{4}, layers: []Layer{LayerNormalization()},
			x: []float32{1, 2, 3, 6},
			want: func(x []float32) []float64 {
				mean, v := 3.0, (4.0+1+0+9)/4
				out := make([]float64, 4)
				for i := range 4 {
					out[i] = (float64(x[i]) - mean) / math.Sqrt(v+1e-3)
				}
				return out
			},
		},
		{
			name: "softmax and relu6", in: []int{3}, layers: []Layer{Activation("relu6"), Softmax()},
			x: []float32{-1, 2, 9},
			want: func(x []float32) []float64 {
				e := []float64{1, math.Exp(2), math.Exp(6)}
				s := e[0] + e[1] + e[2]
				return []float64{e[0] / s, e[1] / s, e[2] / s}
			},
		},
		{
			name: "reshape and flatten", in: []int{2, 3}, layers: []Layer{Reshape([]int{3, 2}), Flatten(), ReLU(NegativeSlope(0.5))},
			x:    []float32{1, -2, 3, -4, 5, -6},
			want: func(x []float32) []float64 { return []float64{1, -1, 3, -2, 5, -3} },
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m := must(t)(Sequential("m", Input(c.in...), c.layers...))
			for name, v := range c.weights {
				w := m.weight(name)
				if w == nil {
					t.Fatalf("no weight %s", name)
				}
				setWeight(t, m, name, w.Shape(), v...)
			}
			if err := m.SetDevice(testDevice()); err != nil {
				t.Fatal(err)
			}
			out, err := m.Predict(samples(t, c.x, c.in, nil, nil), quiet)
			if err != nil {
				t.Fatal(err)
			}
			want := c.want(c.x)
			if len(out.Data) != len(want) {
				t.Fatalf("%d outputs, want %d", len(out.Data), len(want))
			}
			for i := range want {
				if !closeTo(float64(out.Data[i]), want[i], 1e-5) {
					t.Errorf("output %d = %v, want %v", i, out.Data[i], want[i])
				}
			}
		})
	}
}
