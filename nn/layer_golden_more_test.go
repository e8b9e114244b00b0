package nn

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"testing"

	"github.com/tartanml/tartan/backend"
	"github.com/tartanml/tartan/grad"
	"github.com/tartanml/tartan/tile"
)

// Golden tests of the weightless layers (padding, cropping, up-sampling,
// rescaling, pooling, augmentation) against PyTorch:
// testdata/torch/layers_more.json, written by
// testdata/torch/gen_layers_more.py (see its docstring for what each case
// computes). Every case gives an input x, a weighting r of the output, the
// output y and the gradient of sum(y·r) with respect to x.

type layerMoreCase struct {
	Name     string         `json:"name"`
	Layer    string         `json:"layer"`
	Options  map[string]any `json:"options"`
	Training bool           `json:"training"`
	Seed     int64          `json:"seed"`
	Stream   uint64         `json:"stream"`
	Draws    []float64      `json:"draws"`
	X        goldenTensor   `json:"x"`
	R        goldenTensor   `json:"weighting"`
	Output   goldenTensor   `json:"output"`
	GradX    goldenTensor   `json:"grad_x"`
}

func loadLayersMore(t *testing.T) []layerMoreCase {
	t.Helper()
	raw, err := os.ReadFile("testdata/torch/layers_more.json")
	if err != nil {
		t.Fatal(err)
	}
	var g struct {
		Cases []layerMoreCase `json:"cases"`
	}
	if err := json.Unmarshal(raw, &g); err != nil {
		t.Fatal(err)
	}
	if len(g.Cases) < 64 {
		t.Fatalf("%d golden cases in layers_more.json, want at least 64", len(g.Cases))
	}
	return g.Cases
}

// ints reads a JSON number or list of numbers as ints.
func ints(v any) []int {
	switch v := v.(type) {
	case float64:
		return []int{int(v)}
	case []any:
		var out []int
		for _, e := range v {
			out = append(out, ints(e)...)
		}
		return out
	}
	return nil
}

// sidesArg is the shortest argument of ZeroPadding2D or Cropping2D meaning
// [[top, bottom], [left, right]] = v: one value, two, or all four.
func sidesArg(v []int) []int {
	switch {
	case v[0] == v[1] && v[2] == v[3] && v[0] == v[2]:
		return v[:1]
	case v[0] == v[1] && v[2] == v[3]:
		return []int{v[0], v[2]}
	}
	return v
}

// moreLayer builds the nn layer a golden case's Keras class and options
// describe, passing nil or shorter forms where they mean the same, so that
// the defaults are covered too.
func moreLayer(c *layerMoreCase) (Layer, error) {
	o := c.Options
	num := func(k string) float64 { f, _ := o[k].(float64); return f }
	pool := func() (size []int, opts []LayerOption) {
		size = ints(o["pool_size"])
		opts = []LayerOption{Padding(o["padding"].(string))}
		if s, ok := o["strides"]; ok {
			opts = append(opts, Strides(ints(s)...))
		}
		return size, opts
	}
	switch c.Layer {
	case "ZeroPadding1D", "Cropping1D":
		key := map[string]string{"ZeroPadding1D": "padding", "Cropping1D": "cropping"}[c.Layer]
		p := ints(o[key])
		switch {
		case p[0] == 1 && p[1] == 1:
			p = nil
		case p[0] == p[1]:
			p = p[:1]
		}
		if c.Layer == "Cropping1D" {
			return Cropping1D(p), nil
		}
		return ZeroPadding1D(p), nil
	case "ZeroPadding2D":
		return ZeroPadding2D(sidesArg(ints(o["padding"]))), nil
	case "Cropping2D":
		return Cropping2D(sidesArg(ints(o["cropping"]))), nil
	case "UpSampling1D":
		return UpSampling1D(int(num("size"))), nil
	case "UpSampling2D":
		size := ints(o["size"])
		if size[0] == size[1] {
			size = size[:1]
		}
		return UpSampling2D(size, Interpolation(o["interpolation"].(string))), nil
	case "Rescaling":
		return Rescaling(num("scale"), num("offset")), nil
	case "MaxPooling1D":
		size, opts := pool()
		return MaxPooling1D(size[0], opts...), nil
	case "AveragePooling1D":
		size, opts := pool()
		return AveragePooling1D(size[0], opts...), nil
	case "MaxPooling2D":
		size, opts := pool()
		return MaxPooling2D(size[0], append(opts, PoolShape(size...))...), nil
	case "AveragePooling2D":
		size, opts := pool()
		return AveragePooling2D(size[0], append(opts, PoolShape(size...))...), nil
	case "GlobalAveragePooling1D":
		return GlobalAveragePooling1D(), nil
	case "GlobalMaxPooling1D":
		return GlobalMaxPooling1D(), nil
	case "GlobalAveragePooling2D":
		return GlobalAveragePooling2D(), nil
	case "GlobalMaxPooling2D":
		return GlobalMaxPooling2D(), nil
	case "RandomFlip":
		return RandomFlip(o["mode"].(string)), nil
	case "RandomContrast":
		var opts []LayerOption
		if vr := o["value_range"]; vr != nil {
			r := vr.([]any)
			opts = append(opts, ValueRange(r[0].(float64), r[1].(float64)))
		}
		return RandomContrast(num("factor"), opts...), nil
	case "RandomTranslation":
		return RandomTranslation(num("height_factor"), num("width_factor")), nil
	case "RandomCrop":
		return RandomCrop(int(num("height")), int(num("width"))), nil
	}
	return nil, fmt.Errorf("case %s: no nn layer for Keras class %q", c.Name, c.Layer)
}

// layerGradGraph builds the graph of a golden case in dtype: input "x",
// outputs "y" (the layer's output) and "dx" (the gradient of sum(y·r) with
// respect to x), and returns it with the scalar sum(y·r) and x.
func layerGradGraph(c *layerMoreCase, dtype tile.DType) (g *tile.Graph, loss, x *tile.Tensor, err error) {
	g = tile.NewGraph("golden_" + c.Name)
	if loss, x, err = addLayerCase(g, c, dtype, ""); err != nil {
		return nil, nil, nil, err
	}
	return g, loss, x, g.Err()
}

// addLayerCase adds a golden case to g in dtype: input prefix+"x", outputs
// prefix+"y" (the layer's output) and prefix+"dx" (the gradient of sum(y·r)
// with respect to x); it returns the scalar sum(y·r) and x. Training cases
// draw under the case's seed and stream.
func addLayerCase(g *tile.Graph, c *layerMoreCase, dtype tile.DType, prefix string) (loss, x *tile.Tensor, err error) {
	l, err := moreLayer(c)
	if err != nil {
		return nil, nil, err
	}
	if err := l.base().err; err != nil {
		return nil, nil, err
	}
	out, err := l.build([]tile.Shape{tile.Shape(c.X.Shape[1:])})
	if err != nil {
		return nil, nil, fmt.Errorf("building %s: %w", c.Layer, err)
	}
	if !slicesEqual(out, c.Output.Shape[1:]) {
		return nil, nil, fmt.Errorf("%s builds output %v, PyTorch's is %v per sample", c.Layer, out, c.Output.Shape[1:])
	}
	l.base().stream = c.Stream
	x = g.Input(prefix+"x", dtype, tile.Shape(c.X.Shape))
	cc := &callContext{g: g, training: c.Training, vars: map[*Weight]*tile.Tensor{}}
	if c.Training {
		cc.seed = g.Scalar(float64(c.Seed), tile.Int64)
	}
	y := l.call(cc, []*tile.Tensor{x})
	rv, err := tile.ValueOf(dtype, tile.Shape(c.R.Shape), c.R.Data)
	if err != nil {
		return nil, nil, err
	}
	loss = sumAll(g, g.Mul(y, g.Constant(rv)))
	dx, err := grad.Grad(g, loss, x)
	if err != nil {
		return nil, nil, err
	}
	g.SetOutput(prefix+"y", y)
	g.SetOutput(prefix+"dx", dx[0])
	return loss, x, nil
}

// runLayerCase runs a golden case's graph on dev in float32 and returns the
// output and the input gradient.
func runLayerCase(dev backend.Device, c *layerMoreCase) (y, dx []float32, err error) {
	g, _, _, err := layerGradGraph(c, tile.Float32)
	if err != nil {
		return nil, nil, err
	}
	exe, err := dev.Compile(g)
	if err != nil {
		return nil, nil, err
	}
	defer exe.Close()
	if err := exe.SetInput("x", c.X.float32s()); err != nil {
		return nil, nil, err
	}
	if err := exe.Run(); err != nil {
		return nil, nil, err
	}
	y, dx = make([]float32, len(c.Output.Data)), make([]float32, len(c.GradX.Data))
	if err := exe.ReadOutput("y", y); err != nil {
		return nil, nil, err
	}
	if err := exe.ReadOutput("dx", dx); err != nil {
		return nil, nil, err
	}
	return y, dx, nil
}

// compareGolden reports the first element of got farther than rel
// (relative, with closeTo's absolute floor) from want.
func compareGolden(t *testing.T, what string, got []float32, want []float64, rel float64) {
	t.Helper()
	for i, w := range want {
		if !closeTo(float64(got[i]), w, rel) {
			t.Errorf("%s[%d] = %.8g, PyTorch %.8g", what, i, got[i], w)
			return
		}
	}
}

// TestLayersMoreMatchPyTorch runs every case of layers_more.json, output and
// input gradient, on the reference device and the CPU backend and compares
// both with PyTorch's within 1e-5; training cases first check that their
// recorded draws are tile.UniformAt's. Inference cases also go through a
// model's Predict on the reference device.
func TestLayersMoreMatchPyTorch(t *testing.T) {
	cases := loadLayersMore(t)
	for i := range cases {
		c := &cases[i]
		t.Run(c.Name, func(t *testing.T) {
			for p, want := range c.Draws {
				if got := tile.UniformAt(uint64(c.Seed), c.Stream, p); got != want {
					t.Fatalf("draw %d under seed %d, stream %d: tile.UniformAt %v, the generator %v", p, c.Seed, c.Stream, got, want)
				}
			}
			for devName, dev := range goldenDevices(t) {
				y, dx, err := runLayerCase(dev, c)
				if err != nil {
					t.Fatalf("%s: %v", devName, err)
				}
				compareGolden(t, devName+" output", y, c.Output.Data, 1e-5)
				compareGolden(t, devName+" gradient", dx, c.GradX.Data, 1e-5)
			}
			if c.Training {
				return
			}
			l, err := moreLayer(c)
			if err != nil {
				t.Fatal(err)
			}
			in := c.X.Shape[1:]
			m := must(t)(Sequential("m", Input(in...), l))
			if err := m.SetDevice(testDevice()); err != nil {
				t.Fatal(err)
			}
			out, err := m.Predict(samples(t, c.X.float32s(), in, nil, nil), quiet)
			if err != nil {
				t.Fatal(err)
			}
			if !slicesEqual(out.Shape, c.Output.Shape) {
				t.Fatalf("Predict's output shape %v, PyTorch %v", out.Shape, c.Output.Shape)
			}
			compareGolden(t, "Predict's output", out.Data, c.Output.Data, 1e-5)
		})
	}
}

// TestLayersMoreGradientCheck checks every case's input gradient in float64
// against central finite differences (grad.Check) at the case's input.
func TestLayersMoreGradientCheck(t *testing.T) {
	cases := loadLayersMore(t)
	for i := range cases {
		c := &cases[i]
		t.Run(c.Name, func(t *testing.T) {
			g, loss, x, err := layerGradGraph(c, tile.Float64)
			if err != nil {
				t.Fatal(err)
			}
			xv, err := tile.ValueOf(tile.Float64, x.Shape(), c.X.Data)
			if err != nil {
				t.Fatal(err)
			}
			maxErr, where, err := grad.Check(g, loss, []*tile.Tensor{x}, map[string]*tile.Value{"x": xv}, nil)
			if err != nil {
				t.Fatal(err)
			}
			if maxErr > 1e-6 || math.IsNaN(maxErr) {
				t.Errorf("gradient error %g at %s", maxErr, where)
			}
		})
	}
}
