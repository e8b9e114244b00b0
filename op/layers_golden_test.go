package op

import (
	"encoding/json"
	"os"
	"sort"
	"testing"

	"github.com/tartanml/tartan/grad"
	"github.com/tartanml/tartan/ref"
	"github.com/tartanml/tartan/tile"
)

// Golden tests of the transposed convolutions, up-sampling, bilinear
// resizing, the separable convolution (DepthwiseConv2D then a 1×1 Conv2D)
// and 1-D pooling against PyTorch: testdata/torch/layers.json, written by testdata/torch/gen_layers.py
// in the format of ops.json (see golden_test.go).

type layerParams struct {
	Strides       []int  `json:"strides"`
	Dilation      []int  `json:"dilation"`
	OutputPadding []int  `json:"output_padding"`
	Padding       string `json:"padding"`
	PoolSize      []int  `json:"pool_size"`
	Size          []int  `json:"size"`
	Interpolation string `json:"interpolation"`
}

type layerCase struct {
	Name      string                `json:"name"`
	Op        string                `json:"op"`
	Params    layerParams           `json:"params"`
	Inputs    map[string]jsonTensor `json:"inputs"`
	Output    jsonTensor            `json:"output"`
	Cotangent *jsonTensor           `json:"cotangent"`
	Grads     map[string]jsonTensor `json:"grads"`
}

func (p layerParams) transpose() ConvTransposeOptions {
	return ConvTransposeOptions{Strides: p.Strides, Padding: Padding(p.Padding), Dilation: p.Dilation, OutputPadding: p.OutputPadding}
}

var layerGoldenOps = map[string]func(g *tile.Graph, in map[string]*tile.Tensor, p layerParams) *tile.Tensor{
	"conv2d_transpose": func(g *tile.Graph, in map[string]*tile.Tensor, p layerParams) *tile.Tensor {
		return BiasAdd(g, Conv2DTranspose(g, in["x"], in["w"], p.transpose()), in["b"])
	},
	"conv1d_transpose": func(g *tile.Graph, in map[string]*tile.Tensor, p layerParams) *tile.Tensor {
		return BiasAdd(g, Conv1DTranspose(g, in["x"], in["w"], p.transpose()), in["b"])
	},
	"upsample2d": func(g *tile.Graph, in map[string]*tile.Tensor, p layerParams) *tile.Tensor {
		return UpSample2D(g, in["x"], p.Size, p.Interpolation)
	},
	"resize_bilinear": func(g *tile.Graph, in map[string]*tile.Tensor, p layerParams) *tile.Tensor {
		return ResizeBilinear(g, in["x"], p.Size[0], p.Size[1])
	},
	"separable_conv2d": func(g *tile.Graph, in map[string]*tile.Tensor, p layerParams) *tile.Tensor {
		y := DepthwiseConv2D(g, in["x"], in["dw"], ConvOptions{Strides: p.Strides, Padding: Padding(p.Padding), Dilation: p.Dilation})
		return BiasAdd(g, Conv2D(g, y, in["pw"], ConvOptions{}), in["b"])
	},
	"max_pool1d": func(g *tile.Graph, in map[string]*tile.Tensor, p layerParams) *tile.Tensor {
		return MaxPool1D(g, in["x"], PoolOptions{Size: p.PoolSize, Strides: p.Strides, Padding: Padding(p.Padding)})
	},
	"avg_pool1d": func(g *tile.Graph, in map[string]*tile.Tensor, p layerParams) *tile.Tensor {
		return AvgPool1D(g, in["x"], PoolOptions{Size: p.PoolSize, Strides: p.Strides, Padding: Padding(p.Padding)})
	},
	"global_avg_pool1d": func(g *tile.Graph, in map[string]*tile.Tensor, p layerParams) *tile.Tensor {
		return Mean(g, in["x"], []int{1}, false)
	},
	"global_max_pool1d": func(g *tile.Graph, in map[string]*tile.Tensor, p layerParams) *tile.Tensor {
		return Max(g, in["x"], []int{1}, false)
	},
}

func loadLayerGolden(t *testing.T) []layerCase {
	t.Helper()
	f, err := os.Open("testdata/torch/layers.json")
	if err != nil {
		t.Fatalf("golden data: %v", err)
	}
	defer f.Close()
	dec := json.NewDecoder(f)
	dec.UseNumber()
	var doc struct {
		Cases []layerCase `json:"cases"`
	}
	if err := dec.Decode(&doc); err != nil {
		t.Fatalf("golden data: %v", err)
	}
	if len(doc.Cases) == 0 {
		t.Fatal("golden data: no cases")
	}
	return doc.Cases
}

func TestGoldenTorchLayers(t *testing.T) {
	cases := loadLayerGolden(t)
	seen := map[string]bool{}
	for _, c := range cases {
		seen[c.Op] = true
		t.Run(c.Name, func(t *testing.T) { runLayerGolden(t, c) })
	}
	for op := range layerGoldenOps {
		if !seen[op] {
			t.Errorf("op %q has no golden case", op)
		}
	}
}

// runLayerGolden builds one case's op on float64 inputs, evaluates it and
// the vector-Jacobian product with the case's cotangent on the reference
// executor, and compares both with PyTorch's.
func runLayerGolden(t *testing.T, c layerCase) {
	build, ok := layerGoldenOps[c.Op]
	if !ok {
		t.Fatalf("no builder for op %q", c.Op)
	}
	g := tile.NewGraph(c.Name)
	in := map[string]*tile.Tensor{}
	feeds := map[string]*tile.Value{}
	for k, jt := range c.Inputs {
		v, err := jt.value()
		if err != nil {
			t.Fatalf("input %s: %v", k, err)
		}
		in[k] = g.Input(k, v.DType, v.Shape)
		feeds[k] = v
	}
	y := build(g, in, c.Params)
	if err := g.Err(); err != nil {
		t.Fatalf("building: %v", err)
	}
	want, err := c.Output.value()
	if err != nil {
		t.Fatal(err)
	}
	if c.Cotangent == nil || len(c.Grads) == 0 {
		t.Fatal("case has no cotangent or gradients")
	}
	r, err := c.Cotangent.value()
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for k := range c.Grads {
		names = append(names, k)
	}
	sort.Strings(names)
	xs := make([]*tile.Tensor, len(names))
	for i, k := range names {
		if xs[i] = in[k]; xs[i] == nil {
			t.Fatalf("gradient for unknown input %q", k)
		}
	}
	grads, err := grad.VJP(g, []*tile.Tensor{y}, []*tile.Tensor{g.Constant(r)}, xs...)
	if err != nil {
		t.Fatal(err)
	}
	m, err := ref.New(g)
	if err != nil {
		t.Fatal(err)
	}
	vals, err := m.Eval(feeds, append([]*tile.Tensor{y}, grads...)...)
	if err != nil {
		t.Fatal(err)
	}
	if err := compareValues(vals[0], want, goldenTol, goldenFloor); err != nil {
		t.Errorf("output: %v", err)
	}
	for i, k := range names {
		jt := c.Grads[k]
		wg, err := jt.value()
		if err != nil {
			t.Fatal(err)
		}
		if err := compareValues(vals[1+i], wg, goldenTol, goldenFloor); err != nil {
			t.Errorf("gradient for %s: %v", k, err)
		}
	}
}
