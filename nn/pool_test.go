package nn

import (
	"math"
	"testing"

	"github.com/tartanml/tartan/backend"
	"github.com/tartanml/tartan/backend/cpu"
	"github.com/tartanml/tartan/grad"
	"github.com/tartanml/tartan/op"
	"github.com/tartanml/tartan/tile"
)

// TestMaxPoolingGradientTies checks where MaxPooling2D, in a training
// graph, sends its gradient when inputs tie: to the first maximum of each
// window in row-major order, as TensorFlow and PyTorch do, and nowhere else.
// The input is one channel of 4×4 (or 5×5) values with ties; the gradient of
// Σ Y·(1, 2, 3, …) is worked by hand per case. Each graph runs on the
// reference executor and on the CPU backend.
func TestMaxPoolingGradientTies(t *testing.T) {
	x44 := []float64{
		1, 1, 0, 2,
		1, 0, 2, 2,
		3, 3, 5, 5,
		3, 3, 5, 5,
	}
	cases := []struct {
		name   string
		x      []float64
		hw     int
		cfg    poolConfig
		wantY  []float64
		wantDx []float64
	}{
		{
			// Windows tile the input: the first 1, the first 2, the first 3,
			// the first 5 win.
			name: "2x2 stride 2", x: x44, hw: 4, cfg: poolConfig{PoolSize: []int{2, 2}, Strides: []int{2, 2}, Padding: "valid"},
			wantY: []float64{1, 2, 3, 5},
			wantDx: []float64{
				1, 0, 0, 2,
				0, 0, 0, 0,
				3, 0, 4, 0,
				0, 0, 0, 0,
			},
		},
		{
			// 'same' on 5×5 pads one row and column after; the padding never
			// wins.
			name: "same padding", hw: 5, cfg: poolConfig{PoolSize: []int{2, 2}, Strides: []int{2, 2}, Padding: "same"},
			x: []float64{
				0, 0, 1, 1, 7,
				0, 0, 1, 1, 7,
				2, 2, 2, 2, 0,
				2, 2, 2, 2, 0,
				4, 4, 0, 0, -1,
			},
			wantY: []float64{0, 1, 7, 2, 2, 0, 4, 0, -1},
			wantDx: []float64{
				1, 0, 2, 0, 3,
				0, 0, 0, 0, 0,
				4, 0, 5, 0, 6,
				0, 0, 0, 0, 0,
				7, 0, 8, 0, 9,
			},
		},
		{
			// Stride 3 skips a row and a column between windows.
			name: "stride above size", hw: 5, cfg: poolConfig{PoolSize: []int{2, 2}, Strides: []int{3, 3}, Padding: "valid"},
			x: []float64{
				1, 1, 9, 2, 2,
				1, 1, 9, 2, 2,
				9, 9, 9, 9, 9,
				3, 3, 9, 4, 4,
				3, 3, 9, 4, 4,
			},
			wantY: []float64{1, 2, 3, 4},
			wantDx: []float64{
				1, 0, 0, 2, 0,
				0, 0, 0, 0, 0,
				0, 0, 0, 0, 0,
				3, 0, 0, 4, 0,
				0, 0, 0, 0, 0,
			},
		},
		{
			// Overlapping windows (stride 1): each window's first maximum
			// gets that window's cotangent.
			name: "overlapping", x: x44, hw: 4, cfg: poolConfig{PoolSize: []int{2, 2}, Strides: []int{1, 1}, Padding: "valid"},
			wantY: []float64{1, 2, 2, 3, 5, 5, 3, 5, 5},
			wantDx: []float64{
				1, 0, 0, 3,
				0, 0, 2, 0,
				4 + 7, 0, 5 + 6 + 8 + 9, 0,
				0, 0, 0, 0,
			},
		},
	}
	// A window holding a NaN yields NaN and sends its gradient to the NaN
	// (its first one), as PyTorch routes it to a NaN.
	nan := math.NaN()
	cases = append(cases, struct {
		name   string
		x      []float64
		hw     int
		cfg    poolConfig
		wantY  []float64
		wantDx []float64
	}{
		name: "NaN", hw: 2, cfg: poolConfig{PoolSize: []int{2, 2}, Strides: []int{2, 2}, Padding: "valid"},
		x: []float64{1, nan, 3, 2}, wantY: []float64{nan}, wantDx: []float64{0, 1, 0, 0},
	})
	devices := []struct {
		name string
		new  func() backend.Device
	}{{"reference", testDevice}, {"cpu", func() backend.Device { return cpu.New() }}}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			g := tile.NewGraph("pool")
			x := g.Input("x", tile.Float32, tile.Shape{1, c.hw, c.hw, 1})
			l := newPool("MaxPooling2D", c.cfg, nil)
			y := l.call(&callContext{g: g, training: true}, []*tile.Tensor{x})
			if err := g.Err(); err != nil {
				t.Fatal(err)
			}
			wv := tile.NewValue(tile.Float32, y.Shape())
			for i := range wv.Data {
				wv.Data[i] = float64(i + 1)
			}
			loss := op.Sum(g, g.Mul(y, g.Constant(wv)), nil, false)
			dx, err := grad.Grad(g, loss, x)
			if err != nil {
				t.Fatal(err)
			}
			g.SetOutput("y", y)
			g.SetOutput("dx", dx[0])
			xs := make([]float32, len(c.x))
			for i, v := range c.x {
				xs[i] = float32(v)
			}
			for _, d := range devices {
				dev := d.new()
				defer dev.Close()
				exe, err := dev.Compile(g)
				if err != nil {
					t.Fatalf("%s: %v", d.name, err)
				}
				defer exe.Close()
				if err := exe.SetInput("x", xs); err != nil {
					t.Fatal(err)
				}
				if err := exe.Run(); err != nil {
					t.Fatal(err)
				}
				for name, want := range map[string][]float64{"y": c.wantY, "dx": c.wantDx} {
					got := make([]float32, len(want))
					if err := exe.ReadOutput(name, got); err != nil {
						t.Fatalf("%s: %v", d.name, err)
					}
					for i := range want {
						if float64(got[i]) != want[i] && !(math.IsNaN(float64(got[i])) && math.IsNaN(want[i])) {
							t.Errorf("%s: %s = %v\nwant %v", d.name, name, got, want)
							break
						}
					}
				}
			}
		})
	}
}

// BenchmarkFashionCNNStep times training steps of the showcase model
// (FashionCNN, dropout on, Adam 1e-3, batches of 64) on the CPU backend, over
// the 20 Fashion-MNIST batches of testdata/torch/adam20, whose flat
// backgrounds give the max pools many ties. It reports ms/step.
func BenchmarkFashionCNNStep(b *testing.B) {
	ts, _, err := ReadSafetensors("testdata/torch/adam20/batches.safetensors")
	if err != nil {
		b.Fatal(err)
	}
	var x, y []float32
	for _, tt := range ts {
		v, err := tt.Int64s()
		if err != nil {
			b.Fatal(err)
		}
		out := make([]float32, len(v))
		for i, e := range v {
			out[i] = float32(e)
			if tt.Name == "x" {
				out[i] /= 255
			}
		}
		if tt.Name == "x" {
			x = out
		} else {
			y = out
		}
	}
	n := len(y)
	xa, err := NewArray(x, n, 28, 28, 1)
	if err != nil {
		b.Fatal(err)
	}
	ya, err := NewArray(y, n)
	if err != nil {
		b.Fatal(err)
	}
	s, err := FromArrays(xa, ya)
	if err != nil {
		b.Fatal(err)
	}
	m, err := FashionCNN()
	if err != nil {
		b.Fatal(err)
	}
	dev := cpu.New()
	defer dev.Close()
	if err := m.Compile(Adam(1e-3), SparseCategoricalCrossentropy(), OnDevice(dev)); err != nil {
		b.Fatal(err)
	}
	// The first epoch compiles the training step.
	if _, err := m.Fit(s, BatchSize(64), quiet); err != nil {
		b.Fatal(err)
	}
	steps := (n + 63) / 64
	b.ResetTimer()
	for b.Loop() {
		if _, err := m.Fit(s, BatchSize(64), quiet); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Microseconds())/1000/float64(b.N*steps), "ms/step")
}
