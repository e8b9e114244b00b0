package op

import (
	"compress/gzip"
	"encoding/json"
	"math"
	"os"
	"sort"
	"testing"
	"time"

	"github.com/tartanml/tartan/grad"
	"github.com/tartanml/tartan/ref"
	"github.com/tartanml/tartan/tile"
)

// The showcase CNN, one forward and backward pass on a batch of 8, against
// testdata/torch/cnn_batch8.json.gz (written by testdata/torch/gen_cnn.py:
// PyTorch in float64, channels-last tensors, Keras kernel layouts, dropout
// off, loss from the logits).
//
// Criterion: every element of logits, probs, loss and of the gradients of the
// loss with respect to x and every weight and bias satisfies
//
//	|got − want| ≤ cnnTol · max(|want|, cnnFloorFrac · max_j |want_j|)
//
// that is, a relative error of at most 1e-5, which becomes an absolute one for
// elements smaller than a millionth of the tensor's largest magnitude.
const (
	cnnTol       = 1e-5
	cnnFloorFrac = 1e-6
)

// cnnParams are the weight and bias names of the model, in layer order.
var cnnParams = []string{"conv1_w", "conv1_b", "conv2_w", "conv2_b", "dense1_w", "dense1_b", "dense2_w", "dense2_b"}

// showcaseCNN builds the model's logits from x (N, 28, 28, 1) and the named
// parameters: Conv2D 64 k2 same relu, MaxPool 2, Conv2D 32 k2 same relu,
// MaxPool 2, Flatten (h, w, c), Dense 256 relu, Dense 10.
func showcaseCNN(g *tile.Graph, x *tile.Tensor, p map[string]*tile.Tensor) *tile.Tensor {
	same := ConvOptions{Padding: Same}
	h := ReLU(g, BiasAdd(g, Conv2D(g, x, p["conv1_w"], same), p["conv1_b"]))
	h = MaxPool2D(g, h, PoolOptions{})
	h = ReLU(g, BiasAdd(g, Conv2D(g, h, p["conv2_w"], same), p["conv2_b"]))
	h = MaxPool2D(g, h, PoolOptions{})
	h = Flatten(g, h)
	h = ReLU(g, Dense(g, h, p["dense1_w"], p["dense1_b"]))
	return Dense(g, h, p["dense2_w"], p["dense2_b"])
}

type cnnGolden struct {
	Inputs  map[string]jsonTensor `json:"inputs"`
	Outputs map[string]jsonTensor `json:"outputs"`
	Grads   map[string]jsonTensor `json:"grads"`
}

func loadCNNGolden(t *testing.T) *cnnGolden {
	t.Helper()
	f, err := os.Open("testdata/torch/cnn_batch8.json.gz")
	if err != nil {
		t.Fatalf("golden data: %v", err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatalf("golden data: %v", err)
	}
	dec := json.NewDecoder(zr)
	dec.UseNumber()
	var doc cnnGolden
	if err := dec.Decode(&doc); err != nil {
		t.Fatalf("golden data: %v", err)
	}
	return &doc
}

func jsonValue(t *testing.T, doc map[string]jsonTensor, name string) *tile.Value {
	t.Helper()
	jt, ok := doc[name]
	if !ok {
		t.Fatalf("golden data has no %q", name)
	}
	v, err := jt.value()
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return v
}

func TestShowcaseCNN(t *testing.T) {
	if testing.Short() {
		t.Skip("the reference executor takes several seconds for this model")
	}
	doc := loadCNNGolden(t)
	g := tile.NewGraph("showcase_cnn")
	feeds := map[string]*tile.Value{}
	leaf := func(name string) *tile.Tensor {
		v := jsonValue(t, doc.Inputs, name)
		feeds[name] = v
		return g.Input(name, v.DType, v.Shape)
	}
	x := leaf("x")
	labels := leaf("labels")
	if labels.DType() != tile.Int64 {
		t.Fatalf("labels are %v, want integers", labels)
	}
	params := map[string]*tile.Tensor{}
	for _, name := range cnnParams {
		params[name] = leaf(name)
	}
	logits := showcaseCNN(g, x, params)
	probs := Softmax(g, logits, -1)
	loss := SparseCategoricalCrossentropy(g, labels, logits, true)
	wrt := append([]*tile.Tensor{x}, make([]*tile.Tensor, len(cnnParams))...)
	for i, name := range cnnParams {
		wrt[1+i] = params[name]
	}
	grads, err := grad.Grad(g, loss, wrt...)
	if err != nil {
		t.Fatal(err)
	}
	if err := g.Err(); err != nil {
		t.Fatal(err)
	}

	m, err := ref.New(g)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	vals, err := m.Eval(feeds, append([]*tile.Tensor{logits, probs, loss}, grads...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("reference executor: forward and backward in %v", time.Since(start).Round(time.Millisecond))

	type check struct {
		name string
		got  *tile.Value
		want *tile.Value
	}
	checks := []check{
		{"logits", vals[0], jsonValue(t, doc.Outputs, "logits")},
		{"probs", vals[1], jsonValue(t, doc.Outputs, "probs")},
		{"loss", vals[2], jsonValue(t, doc.Outputs, "loss")},
	}
	names := append([]string{"x"}, cnnParams...)
	for i, name := range names {
		checks = append(checks, check{"d loss/d " + name, vals[3+i], jsonValue(t, doc.Grads, name)})
	}
	if len(doc.Grads) != len(names) {
		keys := make([]string, 0, len(doc.Grads))
		for k := range doc.Grads {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		t.Errorf("golden gradients %v, want exactly %v", keys, names)
	}
	for _, c := range checks {
		peak := 0.0
		for _, w := range c.want.Data {
			peak = math.Max(peak, math.Abs(w))
		}
		floor := cnnFloorFrac * peak
		if err := compareValues(c.got, c.want, cnnTol, floor); err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		t.Logf("%-16s %-16v worst error %.3g (floor %.3g)", c.name, c.want.Shape, worstErr(c.got.Data, c.want.Data, floor), floor)
	}
}
