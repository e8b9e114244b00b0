package op

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"sort"
	"strings"
	"testing"

	"github.com/tartanml/tartan/grad"
	"github.com/tartanml/tartan/ref"
	"github.com/tartanml/tartan/tile"
)

// Golden tests against PyTorch. testdata/torch/ops.json (written by
// testdata/torch/gen_ops.py) holds, per case, an op with its parameters,
// float64 inputs (integer ones for labels), the output, a random cotangent R
// of the output's shape and the gradients of Σ output·R with respect to the
// differentiable inputs, all computed by PyTorch in float64 with Keras's
// semantics and channels-last layouts.

// goldenTol is the relative tolerance of the golden comparisons; goldenFloor
// is the magnitude below which it becomes absolute (tol·floor).
const (
	goldenTol   = 1e-9
	goldenFloor = 1e-6
)

// jsonTensor is a tensor as the generators write it. Integer tensors are
// those whose numbers are all written without a fraction or exponent, which
// is how Python's json writes ints and never how it writes floats.
type jsonTensor struct {
	Shape []int         `json:"shape"`
	Data  []json.Number `json:"data"`
}

func (j *jsonTensor) value() (*tile.Value, error) {
	dt := tile.Int64
	data := make([]float64, len(j.Data))
	for i, n := range j.Data {
		if strings.ContainsAny(n.String(), ".eE") {
			dt = tile.Float64
		}
		f, err := n.Float64()
		if err != nil {
			return nil, err
		}
		data[i] = f
	}
	return tile.ValueOf(dt, tile.Shape(j.Shape), data)
}

type goldenParams struct {
	Strides     []int   `json:"strides"`
	Dilation    []int   `json:"dilation"`
	PoolSize    []int   `json:"pool_size"`
	Axes        []int   `json:"axes"`
	Padding     string  `json:"padding"`
	Groups      int     `json:"groups"`
	Axis        int     `json:"axis"`
	Alpha       float64 `json:"alpha"`
	Epsilon     float64 `json:"epsilon"`
	Approximate bool    `json:"approximate"`
	FromLogits  bool    `json:"from_logits"`
	Training    bool    `json:"training"`
	KeepDims    bool    `json:"keepdims"`
}

type goldenCase struct {
	Name      string                `json:"name"`
	Op        string                `json:"op"`
	Params    goldenParams          `json:"params"`
	Inputs    map[string]jsonTensor `json:"inputs"`
	Output    jsonTensor            `json:"output"`
	Cotangent *jsonTensor           `json:"cotangent"`
	Grads     map[string]jsonTensor `json:"grads"`
}

// goldenOps builds each op of ops.json from its named inputs.
var goldenOps = map[string]func(g *tile.Graph, in map[string]*tile.Tensor, p goldenParams) *tile.Tensor{
	"matmul": func(g *tile.Graph, in map[string]*tile.Tensor, p goldenParams) *tile.Tensor {
		return MatMul(g, in["a"], in["b"])
	},
	"dense": func(g *tile.Graph, in map[string]*tile.Tensor, p goldenParams) *tile.Tensor {
		return Dense(g, in["x"], in["w"], in["b"])
	},
	"conv2d": func(g *tile.Graph, in map[string]*tile.Tensor, p goldenParams) *tile.Tensor {
		return BiasAdd(g, Conv2D(g, in["x"], in["w"], p.conv()), in["b"])
	},
	"conv1d": func(g *tile.Graph, in map[string]*tile.Tensor, p goldenParams) *tile.Tensor {
		return BiasAdd(g, Conv1D(g, in["x"], in["w"], p.conv()), in["b"])
	},
	"depthwise_conv2d": func(g *tile.Graph, in map[string]*tile.Tensor, p goldenParams) *tile.Tensor {
		return BiasAdd(g, DepthwiseConv2D(g, in["x"], in["w"], p.conv()), in["b"])
	},
	"max_pool2d": func(g *tile.Graph, in map[string]*tile.Tensor, p goldenParams) *tile.Tensor {
		return MaxPool2D(g, in["x"], p.pool())
	},
	"avg_pool2d": func(g *tile.Graph, in map[string]*tile.Tensor, p goldenParams) *tile.Tensor {
		return AvgPool2D(g, in["x"], p.pool())
	},
	"global_avg_pool2d": func(g *tile.Graph, in map[string]*tile.Tensor, p goldenParams) *tile.Tensor {
		return GlobalAvgPool2D(g, in["x"])
	},
	"global_max_pool2d": func(g *tile.Graph, in map[string]*tile.Tensor, p goldenParams) *tile.Tensor {
		return GlobalMaxPool2D(g, in["x"])
	},
	"relu": func(g *tile.Graph, in map[string]*tile.Tensor, p goldenParams) *tile.Tensor { return ReLU(g, in["x"]) },
	"leaky_relu": func(g *tile.Graph, in map[string]*tile.Tensor, p goldenParams) *tile.Tensor {
		return LeakyReLU(g, in["x"], p.Alpha)
	},
	"elu": func(g *tile.Graph, in map[string]*tile.Tensor, p goldenParams) *tile.Tensor {
		return ELU(g, in["x"], p.Alpha)
	},
	"gelu": func(g *tile.Graph, in map[string]*tile.Tensor, p goldenParams) *tile.Tensor {
		return GELU(g, in["x"], p.Approximate)
	},
	"sigmoid": func(g *tile.Graph, in map[string]*tile.Tensor, p goldenParams) *tile.Tensor {
		return Sigmoid(g, in["x"])
	},
	"tanh": func(g *tile.Graph, in map[string]*tile.Tensor, p goldenParams) *tile.Tensor { return Tanh(g, in["x"]) },
	"softplus": func(g *tile.Graph, in map[string]*tile.Tensor, p goldenParams) *tile.Tensor {
		return Softplus(g, in["x"])
	},
	"softmax": func(g *tile.Graph, in map[string]*tile.Tensor, p goldenParams) *tile.Tensor {
		return Softmax(g, in["x"], p.Axis)
	},
	"log_softmax": func(g *tile.Graph, in map[string]*tile.Tensor, p goldenParams) *tile.Tensor {
		return LogSoftmax(g, in["x"], p.Axis)
	},
	"exp":   unaryFn(tile.Exp),
	"log":   unaryFn(tile.Log),
	"sqrt":  unaryFn(tile.Sqrt),
	"rsqrt": unaryFn(tile.Rsqrt),
	"erf":   unaryFn(tile.Erf),
	"pow": func(g *tile.Graph, in map[string]*tile.Tensor, p goldenParams) *tile.Tensor {
		return g.Elementwise(tile.Pow, in["a"], in["b"])
	},
	"sparse_categorical_crossentropy": func(g *tile.Graph, in map[string]*tile.Tensor, p goldenParams) *tile.Tensor {
		return SparseCategoricalCrossentropy(g, in["labels"], predOf(in, p), p.FromLogits)
	},
	"categorical_crossentropy": func(g *tile.Graph, in map[string]*tile.Tensor, p goldenParams) *tile.Tensor {
		return CategoricalCrossentropy(g, in["targets"], predOf(in, p), p.FromLogits)
	},
	"binary_crossentropy": func(g *tile.Graph, in map[string]*tile.Tensor, p goldenParams) *tile.Tensor {
		return BinaryCrossentropy(g, in["targets"], predOf(in, p), p.FromLogits)
	},
	"mean_squared_error": func(g *tile.Graph, in map[string]*tile.Tensor, p goldenParams) *tile.Tensor {
		return MeanSquaredError(g, in["y_true"], in["y_pred"])
	},
	"mean_absolute_error": func(g *tile.Graph, in map[string]*tile.Tensor, p goldenParams) *tile.Tensor {
		return MeanAbsoluteError(g, in["y_true"], in["y_pred"])
	},
	"batch_norm": func(g *tile.Graph, in map[string]*tile.Tensor, p goldenParams) *tile.Tensor {
		y, _, _ := BatchNorm(g, in["x"], in["gamma"], in["beta"], in["moving_mean"], in["moving_var"], p.Training, p.Epsilon)
		return y
	},
	"layer_norm": func(g *tile.Graph, in map[string]*tile.Tensor, p goldenParams) *tile.Tensor {
		return LayerNorm(g, in["x"], in["gamma"], in["beta"], p.Axis, p.Epsilon)
	},
	"sum": func(g *tile.Graph, in map[string]*tile.Tensor, p goldenParams) *tile.Tensor {
		return Sum(g, in["x"], p.Axes, p.KeepDims)
	},
	"mean": func(g *tile.Graph, in map[string]*tile.Tensor, p goldenParams) *tile.Tensor {
		return Mean(g, in["x"], p.Axes, p.KeepDims)
	},
	"max": func(g *tile.Graph, in map[string]*tile.Tensor, p goldenParams) *tile.Tensor {
		return Max(g, in["x"], p.Axes, p.KeepDims)
	},
	"argmax": func(g *tile.Graph, in map[string]*tile.Tensor, p goldenParams) *tile.Tensor {
		return ArgMax(g, in["x"], p.Axis)
	},
}

func unaryFn(f tile.Fn) func(g *tile.Graph, in map[string]*tile.Tensor, p goldenParams) *tile.Tensor {
	return func(g *tile.Graph, in map[string]*tile.Tensor, p goldenParams) *tile.Tensor {
		return g.Elementwise(f, in["x"])
	}
}

func predOf(in map[string]*tile.Tensor, p goldenParams) *tile.Tensor {
	if p.FromLogits {
		return in["logits"]
	}
	return in["probs"]
}

func (p goldenParams) conv() ConvOptions {
	return ConvOptions{Strides: p.Strides, Padding: Padding(p.Padding), Dilation: p.Dilation, Groups: p.Groups}
}

func (p goldenParams) pool() PoolOptions {
	return PoolOptions{Size: p.PoolSize, Strides: p.Strides, Padding: Padding(p.Padding)}
}

func loadGolden(t *testing.T) []goldenCase {
	t.Helper()
	f, err := os.Open("testdata/torch/ops.json")
	if err != nil {
		t.Fatalf("golden data: %v", err)
	}
	defer f.Close()
	dec := json.NewDecoder(f)
	dec.UseNumber()
	var doc struct {
		Cases []goldenCase `json:"cases"`
	}
	if err := dec.Decode(&doc); err != nil {
		t.Fatalf("golden data: %v", err)
	}
	if len(doc.Cases) == 0 {
		t.Fatal("golden data: no cases")
	}
	return doc.Cases
}

// compareValues reports the first element where got and want differ by more
// than tol·max(|want|, floor), with the worst error, and checks shapes.
func compareValues(got, want *tile.Value, tol, floor float64) error {
	if !got.Shape.Equal(want.Shape) {
		return fmt.Errorf("shape %v, want %v", got.Shape, want.Shape)
	}
	if i := mismatch(got.Data, want.Data, tol, floor); i >= 0 {
		return fmt.Errorf("element %d (of %d): got %.17g, want %.17g (tolerance %g relative, floor %g)",
			i, len(want.Data), got.Data[i], want.Data[i], tol, floor)
	}
	return nil
}

func TestGoldenTorch(t *testing.T) {
	cases := loadGolden(t)
	var worstOut, worstGrad float64
	for _, c := range cases {
		t.Run(c.Name, func(t *testing.T) {
			o, g := runGolden(t, c)
			worstOut, worstGrad = max(worstOut, o), max(worstGrad, g)
		})
	}
	t.Logf("%d cases; worst error relative to max(|want|, %g): outputs %.3g, gradients %.3g", len(cases), goldenFloor, worstOut, worstGrad)
}

// worstErr returns the largest |got − want| / max(|want|, floor).
func worstErr(got, want []float64, floor float64) float64 {
	w := 0.0
	for i := range min(len(got), len(want)) {
		w = max(w, math.Abs(got[i]-want[i])/math.Max(math.Abs(want[i]), floor))
	}
	return w
}

// runGolden checks one case and returns the worst errors of its output and
// gradients.
func runGolden(t *testing.T, c goldenCase) (worstOut, worstGrad float64) {
	build, ok := goldenOps[c.Op]
	if !ok {
		t.Fatalf("no builder for op %q", c.Op)
	}
	g := tile.NewGraph(c.Name)
	in := map[string]*tile.Tensor{}
	feeds := map[string]*tile.Value{}
	keys := make([]string, 0, len(c.Inputs))
	for k := range c.Inputs {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		jt := c.Inputs[k]
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
	targets := []*tile.Tensor{y}
	var gradNames []string
	if len(c.Grads) > 0 {
		if c.Cotangent == nil {
			t.Fatal("case has gradients but no cotangent")
		}
		r, err := c.Cotangent.value()
		if err != nil {
			t.Fatal(err)
		}
		for k := range c.Grads {
			gradNames = append(gradNames, k)
		}
		sort.Strings(gradNames)
		xs := make([]*tile.Tensor, len(gradNames))
		for i, k := range gradNames {
			if xs[i] = in[k]; xs[i] == nil {
				t.Fatalf("gradient for unknown input %q", k)
			}
		}
		// The gradient of Σ y·R is the vector-Jacobian product with R.
		grads, err := grad.VJP(g, []*tile.Tensor{y}, []*tile.Tensor{g.Constant(r)}, xs...)
		if err != nil {
			t.Fatal(err)
		}
		targets = append(targets, grads...)
	}
	m, err := ref.New(g)
	if err != nil {
		t.Fatal(err)
	}
	vals, err := m.Eval(feeds, targets...)
	if err != nil {
		t.Fatal(err)
	}
	if vals[0].DType != want.DType {
		t.Errorf("output dtype %v, want %v", vals[0].DType, want.DType)
	}
	if err := compareValues(vals[0], want, goldenTol, goldenFloor); err != nil {
		t.Errorf("output: %v", err)
	}
	worstOut = worstErr(vals[0].Data, want.Data, goldenFloor)
	for i, k := range gradNames {
		jt := c.Grads[k]
		wg, err := jt.value()
		if err != nil {
			t.Fatal(err)
		}
		if err := compareValues(vals[1+i], wg, goldenTol, goldenFloor); err != nil {
			t.Errorf("gradient for %s: %v", k, err)
		}
		worstGrad = max(worstGrad, worstErr(vals[1+i].Data, wg.Data, goldenFloor))
	}
	return worstOut, worstGrad
}

// TestGoldenCoversOps makes sure the golden data exercise every op the
// builder table knows, so a renamed op cannot silently drop out.
func TestGoldenCoversOps(t *testing.T) {
	seen := map[string]bool{}
	for _, c := range loadGolden(t) {
		seen[c.Op] = true
	}
	for op := range goldenOps {
		if !seen[op] {
			t.Errorf("op %q has no golden case", op)
		}
	}
}
