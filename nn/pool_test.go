package nn

import (
	"math"
	"testing"

	"github.com/tartanml/tartan/grad"
	"github.com/tartanml/tartan/op"
	"github.com/tartanml/tartan/ref"
	"github.com/tartanml/tartan/tile"
)

// TestFirstMaxPoolGradient checks where max pooling sends its gradient when
// inputs tie: to the first maximum of each window in row-major order, as
// TensorFlow and PyTorch do, and nowhere else. The input is one channel of
// 4×4 (or 5×5) values with ties; the gradient of Σ Y·(1, 2, 3, …) is worked
// by hand per case.
func TestFirstMaxPoolGradient(t *testing.T) {
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
	// A window holding a NaN yields NaN, like op.MaxPool2D, and passes no
	// gradient back.
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
		x: []float64{1, nan, 3, 2}, wantY: []float64{nan}, wantDx: []float64{0, 0, 0, 0},
	})
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			g := tile.NewGraph("pool")
			x := g.Input("x", tile.Float32, tile.Shape{1, c.hw, c.hw, 1})
			opt := op.PoolOptions{Size: c.cfg.PoolSize, Strides: c.cfg.Strides, Padding: op.Padding(c.cfg.Padding)}
			y := firstMaxPool(g, x, opt, c.cfg)
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
			xv, err := tile.ValueOf(tile.Float32, tile.Shape{1, c.hw, c.hw, 1}, c.x)
			if err != nil {
				t.Fatal(err)
			}
			out, err := ref.Run(g, map[string]*tile.Value{"x": xv}, nil)
			if err != nil {
				t.Fatal(err)
			}
			for name, want := range map[string][]float64{"y": c.wantY, "dx": c.wantDx} {
				got := out[name].Data
				if len(got) != len(want) {
					t.Fatalf("%s has %d values, want %d", name, len(got), len(want))
				}
				for i := range want {
					if got[i] != want[i] && !(math.IsNaN(got[i]) && math.IsNaN(want[i])) {
						t.Errorf("%s = %v\nwant %v", name, got, want)
						break
					}
				}
			}
		})
	}
}
