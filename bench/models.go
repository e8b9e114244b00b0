package bench

import (
	"fmt"
	"math"

	"github.com/tartanml/tartan/backend"
	"github.com/tartanml/tartan/nn"
)

// modelEntries lists the models, in the suite's order.
func modelEntries() []Entry {
	return []Entry{
		{Name: "mlp", Batch: 256, params: 1_863_690,
			About: "MLP 784-1024-1024-10, ReLU, sparse categorical cross-entropy (nn)",
			build: nnBuilder(mlpModel)},
		{Name: "cnn", Batch: 64, params: 412_778,
			About: "the showcase Fashion-MNIST CNN, 28x28x1, dropout (nn.FashionCNN)",
			build: nnBuilder(cnnModel)},
		{Name: "resnet20", Batch: 128, params: 272_474,
			About: "ResNet-20, 32x32x3, 16/32/64 channels, batch norm, 1x1 projection shortcuts (nn)",
			build: nnBuilder(resnet20Model)},
		{Name: "mobilenetv2", Batch: 128, params: 2_236_682,
			About: "MobileNetV2 width 1.0 on 32x32x3, stem and second stage at stride 1 (nn)",
			build: nnBuilder(mobilenetV2Model)},
		{Name: "transformer", Batch: 32, params: 1_582_090,
			About: "2-layer post-norm transformer encoder, length 128, width 256, 4 heads, FFN 1024, GELU (tile)",
			build: buildTransformer},
		{Name: "stem", Batch: 64, params: 82_826,
			About: "conv 3x3 (32, ReLU) -> max-pool 3x3/2 same -> dense 10, 32x32x3 (nn)",
			build: nnBuilder(stemModel)},
	}
}

// nnModel is what a model entry's constructor returns: the model, the
// per-sample input shape and the number of classes.
type nnModel struct {
	m       *nn.Model
	in      []int
	classes int
	c       Config
}

// nnBuilder turns a model constructor into an entry's build function.
func nnBuilder(f func(c Config) (nnModel, error)) func(Config) (prepared, error) {
	return func(c Config) (prepared, error) {
		nm, err := f(c)
		if err != nil {
			return nil, err
		}
		nm.c = c
		return nm, nil
	}
}

func (nm nnModel) params() int {
	_, trainable := nm.m.CountParams()
	return trainable
}

func (nm nnModel) compile(dev backend.Device) (Step, error) { return newNNStep(dev, nm, nm.c) }

// nnStep trains an nn model, one Fit call of one batch per step.
type nnStep struct {
	m       *nn.Model
	rec     *recorder
	samples nn.Samples
	batch   int
	params  int
}

func newNNStep(dev backend.Device, nm nnModel, c Config) (*nnStep, error) {
	m := nm.m
	if err := m.InitWeights(int64(c.Seed)); err != nil {
		return nil, err
	}
	rec := &recorder{Device: dev}
	if err := m.Compile(nn.Adam(1e-3), nn.SparseCategoricalCrossentropy(nn.FromLogits()), nn.OnDevice(rec)); err != nil {
		return nil, err
	}
	per := 1
	for _, d := range nm.in {
		per *= d
	}
	r := newRand(c.Seed, 1)
	x, err := nn.NewArray(normal(r, c.Batch*per), append([]int{c.Batch}, nm.in...)...)
	if err != nil {
		return nil, err
	}
	yf, _ := labels(r, c.Batch, nm.classes)
	y, err := nn.NewArray(yf, c.Batch)
	if err != nil {
		return nil, err
	}
	s, err := nn.FromArrays(x, y)
	if err != nil {
		return nil, err
	}
	return &nnStep{m: m, rec: rec, samples: s, batch: c.Batch, params: nm.params()}, nil
}

func (s *nnStep) Run() (float64, error) {
	h, err := s.m.Fit(s.samples, nn.BatchSize(s.batch), nn.Epochs(1), nn.Shuffle(false), nn.Verbose(0))
	if err != nil {
		return 0, err
	}
	l := h.Metrics["loss"]
	if len(l) != 1 {
		return 0, fmt.Errorf("training step logged %d losses, want 1", len(l))
	}
	return l[0], nil
}

func (s *nnStep) Params() int  { return s.params }
func (s *nnStep) Kernels() int { return s.rec.kernels() }
func (s *nnStep) CompileSeconds() float64 {
	s.rec.mu.Lock()
	defer s.rec.mu.Unlock()
	return s.rec.seconds
}
func (s *nnStep) Close() error { return s.m.Close() }

// mlpModel is Input(784) → Dense(1024, relu) → Dense(1024, relu) →
// Dense(10), logits. Tiny: 64 → 32 → 32 → 10.
func mlpModel(c Config) (nnModel, error) {
	in, hid := tiny(c, 784, 64), tiny(c, 1024, 32)
	m, err := nn.Sequential("mlp", nn.Input(in),
		nn.Dense(hid, nn.Activation("relu")), nn.Dense(hid, nn.Activation("relu")), nn.Dense(10))
	return nnModel{m: m, in: []int{in}, classes: 10}, err
}

// cnnModel is the showcase CNN at every size: it is small already.
func cnnModel(Config) (nnModel, error) {
	m, err := nn.FashionCNN()
	return nnModel{m: m, in: []int{28, 28, 1}, classes: 10}, err
}

// resnet20Model is ResNet-20 for CIFAR-10: a 3×3 convolution to 16
// channels, three stages of three basic blocks (two 3×3 convolutions with
// batch norm, ReLU after the first and after the residual add) at 16, 32
// and 64 channels, the first block of stages 2 and 3 at stride 2 with a
// 1×1 stride-2 convolution and batch norm on its shortcut (option B), global
// average pooling and a dense layer to 10 logits. Convolutions have no bias.
// Tiny: 8×8 input, 4/8/16 channels, one block per stage.
func resnet20Model(c Config) (nnModel, error) {
	hw, blocks := tiny(c, 32, 8), tiny(c, 3, 1)
	widths := []int{16, 32, 64}
	if c.Tiny {
		widths = []int{4, 8, 16}
	}
	in := nn.Input(hw, hw, 3)
	x := convBN(in, widths[0], 3, 1)
	x = nn.Apply(nn.ReLU(), x)
	for s, f := range widths {
		for b := range blocks {
			stride := 1
			if s > 0 && b == 0 {
				stride = 2
			}
			x = basicBlock(x, f, stride)
		}
	}
	x = nn.Apply(nn.GlobalAveragePooling2D(), x)
	out := nn.Apply(nn.Dense(10), x)
	m, err := nn.Functional("resnet20", []*nn.Node{in}, []*nn.Node{out})
	return nnModel{m: m, in: []int{hw, hw, 3}, classes: 10}, err
}

// convBN is a bias-free convolution with `same` padding followed by batch
// normalisation. Batch norm has Keras's defaults (momentum 0.99, epsilon
// 1e-3), which torch_suite.py copies.
func convBN(x *nn.Node, filters, k, stride int) *nn.Node {
	pad := "same"
	if k == 1 {
		pad = "valid"
	}
	x = nn.Apply(nn.Conv2D(filters, k, nn.Strides(stride), nn.Padding(pad), nn.UseBias(false)), x)
	return nn.Apply(nn.BatchNormalization(), x)
}

func basicBlock(x *nn.Node, filters, stride int) *nn.Node {
	short := x
	if sh := x.Shape(); stride != 1 || len(sh) > 0 && sh[len(sh)-1] != filters {
		short = convBN(x, filters, 1, stride)
	}
	y := nn.Apply(nn.ReLU(), convBN(x, filters, 3, stride))
	y = convBN(y, filters, 3, 1)
	return nn.Apply(nn.ReLU(), nn.Apply(nn.Add(), y, short))
}

// mobileNetV2Stages is MobileNetV2's table of inverted-residual stages:
// expansion t, output channels c, repeats n, stride s of the first block.
// The second stage's stride is 1 instead of ImageNet's 2, as in the common
// CIFAR ports, so that 32×32 inputs end at 4×4 rather than 1×1.
var mobileNetV2Stages = [][4]int{
	{1, 16, 1, 1}, {6, 24, 2, 1}, {6, 32, 3, 2}, {6, 64, 4, 2},
	{6, 96, 3, 1}, {6, 160, 3, 2}, {6, 320, 1, 1},
}

// mobilenetV2Model is MobileNetV2 at width 1.0 for 32×32×3 inputs: a 3×3
// convolution to 32 channels at stride 1 (ImageNet's is stride 2), batch
// norm and ReLU6, the 17 inverted residual blocks of mobileNetV2Stages
// (1×1 expansion, depthwise 3×3, 1×1 linear projection, each with batch
// norm, ReLU6 after the first two; a residual add when the stride is 1 and
// the channels stay), a 1×1 convolution to 1280 channels with batch norm and
// ReLU6, global average pooling and a dense layer to 10 logits, without
// dropout. Tiny: 8×8 input, channels divided by 8 (at least 4), at most two
// blocks per stage.
func mobilenetV2Model(c Config) (nnModel, error) {
	hw := tiny(c, 32, 8)
	ch := func(n int) int {
		if c.Tiny {
			return max(4, n/8)
		}
		return n
	}
	relu6 := func(x *nn.Node) *nn.Node { return nn.Apply(nn.ReLU(nn.MaxValue(6)), x) }
	in := nn.Input(hw, hw, 3)
	x := relu6(convBN(in, ch(32), 3, 1))
	cin := ch(32)
	for _, st := range mobileNetV2Stages {
		t, cout, n, s := st[0], ch(st[1]), st[2], st[3]
		if c.Tiny {
			n = min(n, 2)
		}
		for i := range n {
			stride := 1
			if i == 0 {
				stride = s
			}
			h := x
			if t != 1 {
				h = relu6(convBN(h, cin*t, 1, 1))
			}
			h = nn.Apply(nn.DepthwiseConv2D(3, nn.Strides(stride), nn.Padding("same"), nn.UseBias(false)), h)
			h = relu6(nn.Apply(nn.BatchNormalization(), h))
			h = convBN(h, cout, 1, 1)
			if stride == 1 && cin == cout {
				h = nn.Apply(nn.Add(), x, h)
			}
			x, cin = h, cout
		}
	}
	x = relu6(convBN(x, ch(1280), 1, 1))
	x = nn.Apply(nn.GlobalAveragePooling2D(), x)
	out := nn.Apply(nn.Dense(10), x)
	m, err := nn.Functional("mobilenetv2", []*nn.Node{in}, []*nn.Node{out})
	return nnModel{m: m, in: []int{hw, hw, 3}, classes: 10}, err
}

// stemModel is Input(32, 32, 3) → Conv2D(32, 3, same, relu) →
// MaxPooling2D(3, strides 2, same) → Flatten → Dense(10): the max-pool
// whose gradient follows the loss's. Tiny: 8×8 input, 4 channels.
func stemModel(c Config) (nnModel, error) {
	hw, f := tiny(c, 32, 8), tiny(c, 32, 4)
	m, err := nn.Sequential("stem", nn.Input(hw, hw, 3),
		nn.Conv2D(f, 3, nn.Padding("same"), nn.Activation("relu")),
		nn.MaxPooling2D(3, nn.Strides(2), nn.Padding("same")),
		nn.Flatten(), nn.Dense(10))
	return nnModel{m: m, in: []int{hw, hw, 3}, classes: 10}, err
}

// finite reports whether x is a finite number.
func finite(x float64) bool { return !math.IsNaN(x) && !math.IsInf(x, 0) }
