package nn

import (
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"os"
	"slices"
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
	// Weights and GradW are a layer's weights by short name ("kernel") and
	// the gradients with respect to them.
	Weights map[string]goldenTensor `json:"weights"`
	GradW   map[string]goldenTensor `json:"grad_weights"`
	// Updates are the new values of weights a training step sets other
	// than by gradients (BatchNormalization's moving statistics).
	Updates map[string]goldenTensor `json:"updates"`
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
	if len(g.Cases) < 106 {
		t.Fatalf("%d golden cases in layers_more.json, want at least 106", len(g.Cases))
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
		var opts []LayerOption
		if m, ok := o["fill_mode"]; ok {
			opts = append(opts, FillMode(m.(string)), FillValue(num("fill_value")))
		}
		return RandomTranslation(num("height_factor"), num("width_factor"), opts...), nil
	case "RandomCrop":
		return RandomCrop(int(num("height")), int(num("width"))), nil
	case "Dropout":
		return Dropout(num("rate")), nil
	case "ReLU":
		var opts []LayerOption
		if _, ok := o["max_value"]; ok {
			opts = append(opts, MaxValue(num("max_value")))
		}
		if _, ok := o["negative_slope"]; ok {
			opts = append(opts, NegativeSlope(num("negative_slope")))
		}
		return ReLU(opts...), nil
	case "Softmax":
		if a := int(num("axis")); a != -1 {
			return Softmax(Axis(a)), nil
		}
		return Softmax(), nil
	case "Conv1D", "Conv2D", "DepthwiseConv2D":
		k := ints(o["kernel_size"])
		opts := []LayerOption{KernelShape(k...), Strides(ints(o["strides"])...), Padding(o["padding"].(string)),
			DilationRate(ints(o["dilation_rate"])...), UseBias(o["use_bias"].(bool)), Activation(o["activation"].(string))}
		switch c.Layer {
		case "Conv1D":
			return Conv1D(int(num("filters")), k[0], append(opts, Groups(int(num("groups"))))...), nil
		case "Conv2D":
			return Conv2D(int(num("filters")), k[0], append(opts, Groups(int(num("groups"))))...), nil
		}
		return DepthwiseConv2D(k[0], append(opts, DepthMultiplier(int(num("depth_multiplier"))))...), nil
	case "Conv1DTranspose", "Conv2DTranspose":
		opts := []LayerOption{Strides(ints(o["strides"])...), Padding(o["padding"].(string)),
			UseBias(o["use_bias"].(bool)), Activation(o["activation"].(string))}
		if d, ok := o["dilation_rate"]; ok {
			opts = append(opts, DilationRate(ints(d)...))
		}
		if p, ok := o["output_padding"]; ok {
			opts = append(opts, OutputPadding(ints(p)...))
		}
		if c.Layer == "Conv1DTranspose" {
			return Conv1DTranspose(int(num("filters")), int(num("kernel_size")), opts...), nil
		}
		return Conv2DTranspose(int(num("filters")), int(num("kernel_size")), opts...), nil
	case "SeparableConv2D":
		return SeparableConv2D(int(num("filters")), int(num("kernel_size")), Strides(ints(o["strides"])...),
			Padding(o["padding"].(string)), DepthMultiplier(int(num("depth_multiplier"))), Activation(o["activation"].(string))), nil
	case "Embedding":
		return Embedding(int(num("input_dim")), int(num("output_dim"))), nil
	case "Dense":
		return Dense(int(num("units")), Activation(o["activation"].(string))), nil
	case "LayerNormalization":
		return LayerNormalization(Axis(int(num("axis"))), Epsilon(num("epsilon"))), nil
	case "BatchNormalization":
		return BatchNormalization(Epsilon(num("epsilon"))), nil
	}
	return nil, fmt.Errorf("case %s: no nn layer for Keras class %q", c.Name, c.Layer)
}

// layerGradGraph builds the graph of a golden case in dtype (see
// addLayerCase) and returns it with the scalar sum(y·r) and the inputs it
// is differentiated by: x (unless it holds indices), then the weights.
func layerGradGraph(c *layerMoreCase, dtype tile.DType) (g *tile.Graph, loss *tile.Tensor, ins []*tile.Tensor, err error) {
	g = tile.NewGraph("golden_" + c.Name)
	if loss, ins, err = addLayerCase(g, c, dtype, ""); err != nil {
		return nil, nil, nil, err
	}
	return g, loss, ins, g.Err()
}

// addLayerCase adds a golden case to g in dtype: inputs prefix+"x" and
// prefix+"w_"+short for each of the layer's weights; outputs prefix+"y"
// (the layer's output), prefix+"dx" and prefix+"dw_"+short (the gradients
// of sum(y·r) with respect to x, unless it holds indices, and each weight)
// and prefix+"up_"+short for each weight the layer updates in training. It
// returns sum(y·r) and the differentiated inputs, x first. Training cases
// draw under the case's seed and stream.
func addLayerCase(g *tile.Graph, c *layerMoreCase, dtype tile.DType, prefix string) (loss *tile.Tensor, ins []*tile.Tensor, err error) {
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
	x := g.Input(prefix+"x", dtype, tile.Shape(c.X.Shape))
	// An input of indices (Embedding's) has no gradient.
	withX := c.GradX.Shape != nil
	if withX {
		ins = []*tile.Tensor{x}
	}
	cc := &callContext{g: g, training: c.Training, vars: map[*Weight]*tile.Tensor{}, logits: map[*tile.Tensor]*logits{}}
	ws := l.base().weights
	if len(ws) != len(c.Weights) || len(ws) != len(c.GradW) {
		return nil, nil, fmt.Errorf("%s has %d weights, the golden case %d (and %d gradients)", c.Layer, len(ws), len(c.Weights), len(c.GradW))
	}
	for _, w := range ws {
		gw, ok := c.Weights[w.short]
		if !ok {
			return nil, nil, fmt.Errorf("the golden case has no weight %q of %s", w.short, c.Layer)
		}
		if !slicesEqual(w.shape, gw.Shape) {
			return nil, nil, fmt.Errorf("%s's %s has shape %v, PyTorch's %v", c.Layer, w.short, w.shape, gw.Shape)
		}
		cc.vars[w] = g.Input(prefix+"w_"+w.short, dtype, w.shape)
		ins = append(ins, cc.vars[w])
	}
	if c.Training {
		cc.seed = g.Scalar(float64(c.Seed), tile.Int64)
	}
	y := l.call(cc, []*tile.Tensor{x})
	rv, err := tile.ValueOf(dtype, tile.Shape(c.R.Shape), c.R.Data)
	if err != nil {
		return nil, nil, err
	}
	loss = sumAll(g, g.Mul(y, g.Constant(rv)))
	grads, err := grad.Grad(g, loss, ins...)
	if err != nil {
		return nil, nil, err
	}
	if len(cc.updates) != len(c.Updates) {
		return nil, nil, fmt.Errorf("%s updates %d weights, the golden case %d", c.Layer, len(cc.updates), len(c.Updates))
	}
	for _, u := range cc.updates {
		if _, ok := c.Updates[u.w.short]; !ok {
			return nil, nil, fmt.Errorf("%s updates %s, which the golden case does not", c.Layer, u.w.short)
		}
		g.SetOutput(prefix+"up_"+u.w.short, u.value)
	}
	g.SetOutput(prefix+"y", y)
	if withX {
		g.SetOutput(prefix+"dx", grads[0])
		grads = grads[1:]
	}
	for i, w := range ws {
		g.SetOutput(prefix+"dw_"+w.short, grads[i])
	}
	return loss, ins, nil
}

// layerResult is a case's output and gradients on one device.
type layerResult struct {
	y, dx  []float32
	dw, up map[string][]float32
}

// runLayerCases runs golden cases in one float32 graph on dev (one
// compilation for them all) and returns each case's results.
func runLayerCases(dev backend.Device, cases []layerMoreCase) ([]layerResult, error) {
	g := tile.NewGraph("golden_layers_more")
	for i := range cases {
		if _, _, err := addLayerCase(g, &cases[i], tile.Float32, fmt.Sprintf("c%d_", i)); err != nil {
			return nil, fmt.Errorf("case %s: %w", cases[i].Name, err)
		}
	}
	if err := g.Err(); err != nil {
		return nil, err
	}
	exe, err := dev.Compile(g)
	if err != nil {
		return nil, err
	}
	defer exe.Close()
	for i, c := range cases {
		pre := fmt.Sprintf("c%d_", i)
		if err := exe.SetInput(pre+"x", c.X.float32s()); err != nil {
			return nil, err
		}
		for name, w := range c.Weights {
			if err := exe.SetInput(pre+"w_"+name, w.float32s()); err != nil {
				return nil, err
			}
		}
	}
	if err := exe.Run(); err != nil {
		return nil, err
	}
	out := make([]layerResult, len(cases))
	read := func(name string, n int) ([]float32, error) {
		v := make([]float32, n)
		return v, exe.ReadOutput(name, v)
	}
	for i, c := range cases {
		pre := fmt.Sprintf("c%d_", i)
		r := layerResult{dw: map[string][]float32{}, up: map[string][]float32{}}
		if r.y, err = read(pre+"y", len(c.Output.Data)); err != nil {
			return nil, err
		}
		if c.GradX.Shape != nil {
			if r.dx, err = read(pre+"dx", len(c.GradX.Data)); err != nil {
				return nil, err
			}
		}
		for name, gw := range c.GradW {
			if r.dw[name], err = read(pre+"dw_"+name, len(gw.Data)); err != nil {
				return nil, err
			}
		}
		for name, u := range c.Updates {
			if r.up[name], err = read(pre+"up_"+name, len(u.Data)); err != nil {
				return nil, err
			}
		}
		out[i] = r
	}
	return out, nil
}

// goldenParts lists a case's results beside PyTorch's: the output, the
// input gradient, each weight's gradient and each updated weight, in the
// weights' name order.
func goldenParts(c *layerMoreCase, r layerResult) []goldenPart {
	parts := []goldenPart{{"output", r.y, c.Output.Data}}
	if c.GradX.Shape != nil {
		parts = append(parts, goldenPart{"gradient", r.dx, c.GradX.Data})
	}
	for _, name := range slices.Sorted(maps.Keys(c.GradW)) {
		parts = append(parts, goldenPart{"gradient of " + name, r.dw[name], c.GradW[name].Data})
	}
	for _, name := range slices.Sorted(maps.Keys(c.Updates)) {
		parts = append(parts, goldenPart{"updated " + name, r.up[name], c.Updates[name].Data})
	}
	return parts
}

type goldenPart struct {
	what   string
	got    []float32
	golden []float64
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
// gradients with respect to the input and the weights, on the reference
// device and the CPU backend and compares them with PyTorch's within 1e-5;
// training cases first check that their recorded draws are
// tile.UniformAt's. Inference cases also go through a model's Predict on
// the reference device, with the weights set by name.
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
				rs, err := runLayerCases(dev, cases[i:i+1])
				if err != nil {
					t.Fatalf("%s: %v", devName, err)
				}
				for _, p := range goldenParts(c, rs[0]) {
					compareGolden(t, devName+" "+p.what, p.got, p.golden, 1e-5)
				}
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
			for name, w := range c.Weights {
				setWeight(t, m, l.Name()+"/"+name, w.Shape, w.float32s()...)
			}
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

// TestLayersMoreGradientCheck checks every case's gradients with respect to
// the input (unless it holds indices) and the weights in float64 against central finite differences
// (grad.Check) at the case's values.
func TestLayersMoreGradientCheck(t *testing.T) {
	cases := loadLayersMore(t)
	for i := range cases {
		c := &cases[i]
		t.Run(c.Name, func(t *testing.T) {
			g, loss, ins, err := layerGradGraph(c, tile.Float64)
			if err != nil {
				t.Fatal(err)
			}
			feeds := map[string]*tile.Value{}
			tensors := map[string]goldenTensor{"x": c.X}
			for name, w := range c.Weights {
				tensors["w_"+name] = w
			}
			for name, gt := range tensors {
				v, err := tile.ValueOf(tile.Float64, tile.Shape(gt.Shape), gt.Data)
				if err != nil {
					t.Fatal(err)
				}
				feeds[name] = v
			}
			maxErr, where, err := grad.Check(g, loss, ins, feeds, nil)
			if err != nil {
				t.Fatal(err)
			}
			if maxErr > 1e-6 || math.IsNaN(maxErr) {
				t.Errorf("gradient error %g at %s", maxErr, where)
			}
		})
	}
}
