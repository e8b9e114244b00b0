package nn

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestSpatialLayerShapes checks output shapes and parameter counts of the
// padding, resizing, transposed and separable convolution and 1-D pooling
// layers, worked by hand.
func TestSpatialLayerShapes(t *testing.T) {
	for _, c := range []struct {
		name   string
		in     []int
		layer  Layer
		want   string
		params int
	}{
		{"zero padding default", []int{4, 5, 2}, ZeroPadding2D(nil), "(None, 6, 7, 2)", 0},
		{"zero padding pair", []int{4, 5, 2}, ZeroPadding2D([]int{2, 3}), "(None, 8, 11, 2)", 0},
		{"zero padding four", []int{4, 5, 2}, ZeroPadding2D([]int{0, 1, 2, 3}), "(None, 5, 10, 2)", 0},
		{"cropping default", []int{4, 5, 2}, Cropping2D(nil), "(None, 4, 5, 2)", 0},
		{"cropping four", []int{6, 7, 1}, Cropping2D([]int{1, 2, 0, 3}), "(None, 3, 4, 1)", 0},
		{"upsampling default", []int{3, 4, 2}, UpSampling2D(nil), "(None, 6, 8, 2)", 0},
		{"upsampling pair", []int{3, 4, 2}, UpSampling2D([]int{3, 1}, Interpolation("bilinear")), "(None, 9, 4, 2)", 0},
		{"rescaling", []int{3, 4}, Rescaling(1.0/255, 0), "(None, 3, 4)", 0},
		// 3·2 + max(3 − 2, 0) = 7; kernel (3, 3, 8, 2).
		{"conv transpose valid", []int{3, 3, 2}, Conv2DTranspose(8, 3, Strides(2)), "(None, 7, 7, 8)", 3*3*8*2 + 8},
		{"conv transpose same", []int{5, 4, 3}, Conv2DTranspose(4, 3, Strides(2), Padding("same")), "(None, 10, 8, 4)", 3*3*4*3 + 4},
		// (3 − 1)·2 + 3 + 1 = 8 and (4 − 1)·1 + 3 + 0 = 6.
		{"conv transpose output padding", []int{3, 4, 1}, Conv2DTranspose(2, 3, Strides(2, 1), OutputPadding(1, 0), UseBias(false)), "(None, 8, 6, 2)", 3 * 3 * 2},
		{"conv transpose kernel 1 stride 3", []int{2, 2, 1}, Conv2DTranspose(1, 1, Strides(3)), "(None, 6, 6, 1)", 2},
		{"conv transpose dilated", []int{4, 4, 1}, Conv2DTranspose(1, 3, DilationRate(2)), "(None, 8, 8, 1)", 9 + 1},
		// 5·2 + max(4 − 2, 0) = 12 and (5 − 1)·2 + 4 − 4 + 1 = 9; kernel (4, 3, 2).
		{"conv1d transpose valid", []int{5, 2}, Conv1DTranspose(3, 4, Strides(2)), "(None, 12, 3)", 4*3*2 + 3},
		{"conv1d transpose same output padding", []int{5, 2}, Conv1DTranspose(3, 4, Strides(2), Padding("same"), OutputPadding(1)), "(None, 9, 3)", 4*3*2 + 3},
		// depthwise 3·3·3·2 + pointwise 6·5 + bias 5.
		{"separable", []int{7, 7, 3}, SeparableConv2D(5, 3, DepthMultiplier(2)), "(None, 5, 5, 5)", 54 + 30 + 5},
		{"separable same strides", []int{7, 7, 2}, SeparableConv2D(4, 3, Padding("same"), Strides(2), UseBias(false)), "(None, 4, 4, 4)", 18 + 8},
		{"zero padding 1d default", []int{4, 3}, ZeroPadding1D(nil), "(None, 6, 3)", 0},
		{"zero padding 1d pair", []int{4, 3}, ZeroPadding1D([]int{0, 3}), "(None, 7, 3)", 0},
		{"cropping 1d default", []int{4, 3}, Cropping1D(nil), "(None, 2, 3)", 0},
		{"cropping 1d pair", []int{6, 3}, Cropping1D([]int{3, 0}), "(None, 3, 3)", 0},
		{"upsampling 1d", []int{4, 3}, UpSampling1D(3), "(None, 12, 3)", 0},
		{"maxpool1d", []int{7, 3}, MaxPooling1D(2), "(None, 3, 3)", 0},
		{"maxpool1d same", []int{7, 3}, MaxPooling1D(2, Padding("same")), "(None, 4, 3)", 0},
		{"avgpool1d strides", []int{8, 2}, AveragePooling1D(3, Strides(1)), "(None, 6, 2)", 0},
		{"global avg 1d", []int{5, 6}, GlobalAveragePooling1D(), "(None, 6)", 0},
		{"global max 1d", []int{5, 6}, GlobalMaxPooling1D(), "(None, 6)", 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			m, err := Sequential("m", Input(c.in...), c.layer)
			if err != nil {
				t.Fatal(err)
			}
			total, _ := m.CountParams()
			if got := fmtShape(m.outputs[0].shape); got != c.want || total != c.params {
				t.Errorf("output %s, %d params; want %s, %d", got, total, c.want, c.params)
			}
		})
	}
}

// TestSpatialLayerErrors checks the exact texts of argument and shape
// errors.
func TestSpatialLayerErrors(t *testing.T) {
	for _, c := range []struct {
		in    []int
		layer Layer
		want  string
	}{
		{[]int{4, 4, 1}, ZeroPadding2D([]int{1, 2, 3}), `layer 1 of 1 (ZeroPadding2D "zero_padding2d"): padding [1 2 3] must have 1, 2 or 4 values (every side; height and width; top, bottom, left and right)`},
		{[]int{4, 4, 1}, ZeroPadding2D([]int{-1}), `layer 1 of 1 (ZeroPadding2D "zero_padding2d"): padding [-1] must not be negative`},
		{[]int{4, 4}, ZeroPadding2D(nil), `layer 1 of 1 (ZeroPadding2D "zero_padding2d") on input (None, 4, 4): needs inputs of rank 4 (batch, height, width, channels), got rank 3`},
		{[]int{4, 4, 1}, Cropping2D([]int{2, 0}), `layer 1 of 1 (Cropping2D "cropping2d") on input (None, 4, 4, 1): cropping 2 and 2 of the height leaves nothing of 4`},
		{[]int{4, 4, 1}, Cropping2D([]int{0, 1, 5, 0}), `layer 1 of 1 (Cropping2D "cropping2d") on input (None, 4, 4, 1): cropping 5 and 0 of the width leaves nothing of 4`},
		{[]int{4, 4, 1}, UpSampling2D([]int{0}), `layer 1 of 1 (UpSampling2D "up_sampling2d"): size [0]: values must be positive`},
		{[]int{4, 4, 1}, UpSampling2D([]int{2, 2, 2}), `layer 1 of 1 (UpSampling2D "up_sampling2d"): size [2 2 2]: want 1 or 2 values`},
		{[]int{4, 4, 1}, UpSampling2D(nil, Interpolation("bicubic")), `layer 1 of 1 (UpSampling2D "up_sampling2d"): interpolation "bicubic" must be "nearest" or "bilinear"`},
		{[]int{4, 4, 1}, UpSampling2D(nil, Padding("same")), `layer 1 of 1 (UpSampling2D "up_sampling2d"): option Padding does not apply (it accepts Name, Trainable, Interpolation)`},
		{[]int{4}, Rescaling(1, 0, Name("r"), Strides(2)), `layer 1 of 1 (Rescaling "r"): option Strides does not apply (it accepts Name, Trainable)`},
		{[]int{3, 3, 1}, Conv2DTranspose(0, 3), `layer 1 of 1 (Conv2DTranspose "conv2d_transpose"): filters 0 must be positive`},
		{[]int{3, 3, 1}, Conv2DTranspose(2, 3, Strides(2), OutputPadding(2)), `layer 1 of 1 (Conv2DTranspose "conv2d_transpose"): output padding [2] must lie in [0, stride) for strides [2 2]`},
		{[]int{3, 3, 1}, Conv2DTranspose(2, 3, OutputPadding(1)), `layer 1 of 1 (Conv2DTranspose "conv2d_transpose"): output padding [1] must lie in [0, stride) for strides [1 1]`},
		{[]int{3, 3, 1}, Conv2DTranspose(2, 3, OutputPadding(0, 0, 0)), `layer 1 of 1 (Conv2DTranspose "conv2d_transpose"): output padding [0 0 0]: want 1 or 2 values`},
		{[]int{3, 3, 1}, Conv2DTranspose(2, 3, Padding("full")), `layer 1 of 1 (Conv2DTranspose "conv2d_transpose"): padding "full" must be "valid" or "same"`},
		{[]int{3, 3, 1}, Conv2DTranspose(2, 3, Strides(2), DilationRate(2)), `layer 1 of 1 (Conv2DTranspose "conv2d_transpose"): strides [2 2] and dilation rate [2 2] cannot both exceed 1`},
		{[]int{3, 3, 1}, Conv2DTranspose(2, 3, Groups(2)), `layer 1 of 1 (Conv2DTranspose "conv2d_transpose"): option Groups does not apply (it accepts Name, Trainable, KernelShape, Strides, Padding, OutputPadding, DilationRate, Activation, UseBias, KernelInitializer, BiasInitializer)`},
		{[]int{3, 1}, Conv2DTranspose(2, 3), `layer 1 of 1 (Conv2DTranspose "conv2d_transpose") on input (None, 3, 1): needs inputs of rank 4 (batch, height, width, channels), got rank 3`},
		{[]int{3, 3, 1}, Conv1DTranspose(2, 3), `layer 1 of 1 (Conv1DTranspose "conv1d_transpose") on input (None, 3, 3, 1): needs inputs of rank 3 (batch, steps, channels), got rank 4`},
		{[]int{3, 1}, Conv1DTranspose(2, 3, Strides(2), OutputPadding(1, 1)), `layer 1 of 1 (Conv1DTranspose "conv1d_transpose"): output padding [1 1]: want 1 value`},
		{[]int{5, 5, 2}, Conv2D(2, 3, OutputPadding(1)), `layer 1 of 1 (Conv2D "conv2d"): option OutputPadding does not apply (it accepts Name, Trainable, KernelShape, Strides, Padding, DilationRate, Activation, UseBias, KernelInitializer, BiasInitializer, Groups, KernelRegularizer, BiasRegularizer)`},
		{[]int{5, 5, 2}, SeparableConv2D(4, 3, DepthMultiplier(0)), `layer 1 of 1 (SeparableConv2D "separable_conv2d"): depth multiplier 0 must be positive`},
		{[]int{5, 5, 2}, SeparableConv2D(-1, 3), `layer 1 of 1 (SeparableConv2D "separable_conv2d"): filters -1 must be positive`},
		{[]int{2, 2, 2}, SeparableConv2D(4, 3), `layer 1 of 1 (SeparableConv2D "separable_conv2d") on input (None, 2, 2, 2): spatial dimension 1: the window spans 3 but the input is only 2 long (padding "valid")`},
		{[]int{5, 5, 2}, SeparableConv2D(4, 3, KernelInitializer(Ones())), `layer 1 of 1 (SeparableConv2D "separable_conv2d"): option KernelInitializer does not apply (it accepts Name, Trainable, KernelShape, Strides, Padding, DilationRate, DepthMultiplier, Activation, UseBias, DepthwiseInitializer, PointwiseInitializer, BiasInitializer)`},
		{[]int{4, 3}, ZeroPadding1D([]int{1, 2, 3}), `layer 1 of 1 (ZeroPadding1D "zero_padding1d"): padding [1 2 3] must have 1 or 2 values (both ends; start and end)`},
		{[]int{4, 3}, Cropping1D([]int{0, -2}), `layer 1 of 1 (Cropping1D "cropping1d"): cropping [0 -2] must not be negative`},
		{[]int{4, 3}, Cropping1D([]int{2}), `layer 1 of 1 (Cropping1D "cropping1d") on input (None, 4, 3): cropping 2 and 2 leaves nothing of 4 steps`},
		{[]int{4, 3, 1}, ZeroPadding1D(nil), `layer 1 of 1 (ZeroPadding1D "zero_padding1d") on input (None, 4, 3, 1): needs inputs of rank 3 (batch, steps, channels), got rank 4`},
		{[]int{4, 3}, UpSampling1D(0), `layer 1 of 1 (UpSampling1D "up_sampling1d"): size 0 must be positive`},
		{[]int{7, 3}, MaxPooling1D(0), `layer 1 of 1 (MaxPooling1D "max_pooling1d"): pool size [0]: values must be positive`},
		{[]int{7, 3}, AveragePooling1D(2, Padding("causal")), `layer 1 of 1 (AveragePooling1D "average_pooling1d"): padding "causal" must be "valid" or "same"`},
		{[]int{1, 3}, MaxPooling1D(2), `layer 1 of 1 (MaxPooling1D "max_pooling1d") on input (None, 1, 3): steps: the window spans 2 but the input is only 1 long (padding "valid")`},
		{[]int{4, 4, 3}, MaxPooling1D(2), `layer 1 of 1 (MaxPooling1D "max_pooling1d") on input (None, 4, 4, 3): needs inputs of rank 3 (batch, steps, channels), got rank 4`},
		{[]int{4, 4, 3}, GlobalAveragePooling1D(), `layer 1 of 1 (GlobalAveragePooling1D "global_average_pooling1d") on input (None, 4, 4, 3): needs non-empty inputs of rank 3 (batch, steps, channels), got (None, 4, 4, 3)`},
	} {
		_, err := Sequential("m", Input(c.in...), c.layer)
		want := `nn: Sequential "m": ` + c.want
		if err == nil || err.Error() != want {
			t.Errorf("error\n got %v\nwant %s", err, want)
		}
	}
}

// TestSpatialLayerForward runs the layers without weights in inference and
// compares them with values worked by hand.
func TestSpatialLayerForward(t *testing.T) {
	for _, c := range []struct {
		name  string
		in    []int
		layer Layer
		x     []float32
		want  []float32
	}{
		{"zero padding", []int{2, 2, 1}, ZeroPadding2D([]int{1, 0, 0, 1}), []float32{1, 2, 3, 4},
			[]float32{0, 0, 0, 1, 2, 0, 3, 4, 0}},
		{"cropping", []int{3, 4, 1}, Cropping2D([]int{1, 0, 1, 2}), []float32{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12},
			[]float32{6, 10}},
		{"upsampling nearest", []int{2, 2, 1}, UpSampling2D([]int{2, 1}), []float32{1, 2, 3, 4},
			[]float32{1, 2, 1, 2, 3, 4, 3, 4}},
		{"upsampling nearest channels", []int{1, 2, 2}, UpSampling2D([]int{1, 2}), []float32{1, 10, 2, 20},
			[]float32{1, 10, 1, 10, 2, 20, 2, 20}},
		// Along a row of 0, 4 by 2: positions −¼ (clamped to 0), ¼, ¾, 1¼
		// (clamped to 1) give 0, 1, 3, 4.
		{"upsampling bilinear", []int{1, 2, 1}, UpSampling2D([]int{1, 2}, Interpolation("bilinear")), []float32{0, 4},
			[]float32{0, 1, 3, 4}},
		{"rescaling", []int{3}, Rescaling(0.5, -1), []float32{0, 2, 5}, []float32{-1, 0, 1.5}},
		{"zero padding 1d", []int{2, 2}, ZeroPadding1D([]int{1, 2}), []float32{1, 2, 3, 4}, []float32{0, 0, 1, 2, 3, 4, 0, 0, 0, 0}},
		{"cropping 1d", []int{4, 1}, Cropping1D([]int{1, 2}), []float32{1, 2, 3, 4}, []float32{2}},
		{"upsampling 1d", []int{2, 2}, UpSampling1D(2), []float32{1, 2, 3, 4}, []float32{1, 2, 1, 2, 3, 4, 3, 4}},
		{"maxpool1d same", []int{5, 1}, MaxPooling1D(2, Padding("same")), []float32{1, 3, 2, -1, 5}, []float32{3, 2, 5}},
		// Total padding (3 − 1)·2 + 3 − 5 = 2, one before: windows [−1, 2),
		// [1, 4) and [3, 6), each averaged over its cells inside.
		{"avgpool1d same stride 2", []int{5, 1}, AveragePooling1D(3, Strides(2), Padding("same")), []float32{1, 3, 2, -1, 5},
			[]float32{2, 4.0 / 3, 2}},
		{"global avg 1d", []int{3, 2}, GlobalAveragePooling1D(), []float32{1, 2, 3, 4, 5, 9}, []float32{3, 5}},
		{"global max 1d", []int{3, 2}, GlobalMaxPooling1D(), []float32{1, 2, 3, 4, 5, -9}, []float32{5, 4}},
	} {
		t.Run(c.name, func(t *testing.T) {
			m := must(t)(Sequential("m", Input(c.in...), c.layer))
			if err := m.SetDevice(testDevice()); err != nil {
				t.Fatal(err)
			}
			out, err := m.Predict(samples(t, c.x, c.in, nil, nil), quiet)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(out.Data, c.want) {
				t.Errorf("output %v, want %v", out.Data, c.want)
			}
		})
	}
}

// TestConv2DTransposeByHand checks one transposed convolution with a
// single input and output channel against the scatter worked by hand: with
// stride 2 and a 2×2 kernel of 1, 2, 3, 4 each input value v fills its own
// 2×2 block with v, 2v, 3v, 4v.
func TestConv2DTransposeByHand(t *testing.T) {
	m := must(t)(Sequential("m", Input(2, 2, 1), Conv2DTranspose(1, 2, Strides(2), BiasInitializer(Constant(0.5)))))
	if err := m.InitWeights(0); err != nil {
		t.Fatal(err)
	}
	setWeight(t, m, "conv2d_transpose/kernel", []int{2, 2, 1, 1}, 1, 2, 3, 4)
	if err := m.SetDevice(testDevice()); err != nil {
		t.Fatal(err)
	}
	out, err := m.Predict(samples(t, []float32{1, 10, 100, 1000}, []int{2, 2, 1}, nil, nil), quiet)
	if err != nil {
		t.Fatal(err)
	}
	want := []float32{
		1.5, 2.5, 10.5, 20.5,
		3.5, 4.5, 30.5, 40.5,
		100.5, 200.5, 1000.5, 2000.5,
		300.5, 400.5, 3000.5, 4000.5,
	}
	if !slices.Equal(out.Data, want) || !slices.Equal(out.Shape, []int{1, 4, 4, 1}) {
		t.Errorf("output %v %v, want (1, 4, 4, 1) %v", out.Shape, out.Data, want)
	}
}

// TestSpatialLayersSaveLoad saves a model using every layer of this file and
// loads it back: the architecture JSON, the summary and the predictions
// must agree, and the summary has Keras's lines for the layers.
func TestSpatialLayersSaveLoad(t *testing.T) {
	in := Input(6, 6, 2)
	a := Apply(Rescaling(1.0/255, 0.5), in)
	b := Apply(ZeroPadding2D([]int{1, 2}), a)
	c := Apply(Cropping2D([]int{1, 0, 2, 0}), b)
	d := Apply(SeparableConv2D(3, 3, DepthMultiplier(2), Padding("same"), Activation("relu"),
		DepthwiseInitializer(HeUniform()), PointwiseInitializer(GlorotNormal())), c)
	e := Apply(Conv2DTranspose(2, 3, Strides(2), Padding("same"), OutputPadding(1), Activation("tanh")), d)
	f := Apply(UpSampling2D([]int{1, 2}, Interpolation("bilinear")), e)
	g := Apply(Reshape([]int{-1, 4}), f)
	g = Apply(Conv1DTranspose(4, 2, Padding("same"), UseBias(false)), g)
	g = Apply(Cropping1D([]int{2, 0}), Apply(UpSampling1D(2), Apply(ZeroPadding1D([]int{0, 1}), g)))
	g = Apply(Cropping1D(nil), g) // (224 + 1)·2 − 2 − 2 = 446
	h := Apply(MaxPooling1D(3, Strides(2), Padding("same")), g)
	i := Apply(AveragePooling1D(2), h)
	j := Apply(Concatenate(), Apply(GlobalAveragePooling1D(), i), Apply(GlobalMaxPooling1D(), i))
	m, err := Functional("spatial", []*Node{in}, []*Node{j})
	if err != nil {
		t.Fatal(err)
	}
	if err := m.InitWeights(5); err != nil {
		t.Fatal(err)
	}
	sum := m.Summary()
	for _, row := range [][3]string{
		{"rescaling (Rescaling)", "(None, 6, 6, 2)", " 0 "},
		{"zero_padding2d (ZeroPadding2D)", "(None, 8, 10, 2)", " 0 "},
		{"cropping2d (Cropping2D)", "(None, 7, 8, 2)", " 0 "},
		{"separable_conv2d (SeparableConv2D)", "(None, 7, 8, 3)", " 51 "},   // 3·3·2·2 + 4·3 + 3
		{"conv2d_transpose (Conv2DTranspose)", "(None, 14, 16, 2)", " 56 "}, // 3·3·2·3 + 2; (7 − 1)·2 + 3 − 2 + 1
		{"up_sampling2d (UpSampling2D)", "(None, 14, 32, 2)", " 0 "},
		{"conv1d_transpose (Conv1DTranspose)", "(None, 224, 4)", " 32 "}, // 2·4·4
		{"zero_padding1d (ZeroPadding1D)", "(None, 225, 4)", " 0 "},
		{"up_sampling1d (UpSampling1D)", "(None, 450, 4)", " 0 "},
		{"cropping1d (Cropping1D)", "(None, 448, 4)", " 0 "},
		{"cropping1d_1 (Cropping1D)", "(None, 446, 4)", " 0 "},
		{"max_pooling1d (MaxPooling1D)", "(None, 223, 4)", " 0 "},
		{"average_pooling1d (AveragePooling1D)", "(None, 111, 4)", " 0 "},
		{"global_average_pooling1d (GlobalAveragePooling1D)", "(None, 4)", " 0 "},
		{"global_max_pooling1d (GlobalMaxPooling1D)", "(None, 4)", " 0 "},
	} {
		found := false
		for _, line := range strings.Split(sum, "\n") {
			if strings.HasPrefix(line, "│ "+row[0]+" ") {
				found = strings.Contains(line, "│ "+row[1]+" ") && strings.Contains(line, row[2]+"│")
				break
			}
		}
		if !found {
			t.Errorf("summary lacks the row %s %s%s:\n%s", row[0], row[1], row[2], sum)
		}
	}
	path := filepath.Join(t.TempDir(), "spatial.safetensors")
	if err := m.Save(path); err != nil {
		t.Fatal(err)
	}
	m2, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	a1, _ := m.Architecture()
	a2, _ := m2.Architecture()
	if string(a1) != string(a2) {
		t.Errorf("architectures differ:\n%s\n%s", a1, a2)
	}
	for _, frag := range []string{
		`{"class_name":"ZeroPadding2D","config":{"name":"zero_padding2d","trainable":true,"padding":[[1,1],[2,2]]}}`,
		`{"class_name":"Cropping2D","config":{"name":"cropping2d","trainable":true,"cropping":[[1,0],[2,0]]}}`,
		`"size":[1,2],"interpolation":"bilinear"`,
		`"scale":0.00392156862745098,"offset":0.5`,
		`"strides":[2,2],"padding":"same","output_padding":[1,1],"dilation_rate":[1,1],"activation":"tanh"`,
		`"depth_multiplier":2,"activation":"relu","use_bias":true,"depthwise_initializer":{"name":"he_uniform"},"pointwise_initializer":{"name":"glorot_normal"}`,
		`{"class_name":"ZeroPadding1D","config":{"name":"zero_padding1d","trainable":true,"padding":[0,1]}}`,
		`{"class_name":"UpSampling1D","config":{"name":"up_sampling1d","trainable":true,"size":2}}`,
		`{"class_name":"Cropping1D","config":{"name":"cropping1d_1","trainable":true,"cropping":[1,1]}}`,
		`{"class_name":"MaxPooling1D","config":{"name":"max_pooling1d","trainable":true,"pool_size":[3],"strides":[2],"padding":"same"}}`,
	} {
		if !strings.Contains(string(a1), frag) {
			t.Errorf("architecture lacks %s:\n%s", frag, a1)
		}
	}
	if m.Summary() != m2.Summary() {
		t.Errorf("summaries differ:\n%s\n%s", m.Summary(), m2.Summary())
	}
	x := make([]float32, 3*6*6*2)
	for k := range x {
		x[k] = float32((k*37)%255) - 100
	}
	var preds [][]float32
	for _, mm := range []*Model{m, m2} {
		if err := mm.SetDevice(testDevice()); err != nil {
			t.Fatal(err)
		}
		p, err := mm.Predict(samples(t, x, []int{6, 6, 2}, nil, nil), quiet)
		if err != nil {
			t.Fatal(err)
		}
		preds = append(preds, p.Data)
	}
	if !slices.Equal(preds[0], preds[1]) {
		t.Errorf("predictions differ: %v vs %v", preds[0], preds[1])
	}
}

// TestSpatialArchitectureErrors checks that bad configurations in
// architecture JSON are reported naming the layer and the argument.
func TestSpatialArchitectureErrors(t *testing.T) {
	for _, c := range []struct{ layer, want string }{
		{`{"class_name":"ZeroPadding2D","config":{"name":"z","trainable":true,"padding":[[1,1]]}}`,
			`padding [[1 1]] must be [[top, bottom], [left, right]]`},
		{`{"class_name":"Cropping2D","config":{"name":"c","trainable":true,"cropping":[[1,1],[0,-1]]}}`,
			`cropping [[1 1] [0 -1]] must not be negative`},
		{`{"class_name":"Conv2DTranspose","config":{"name":"t","trainable":true,"filters":2,"kernel_size":[3,3],"strides":[1,1],"padding":"valid","output_padding":[1,0],"dilation_rate":[1,1],"activation":"linear","use_bias":true,"kernel_initializer":{"name":"zeros"},"bias_initializer":{"name":"zeros"}}}`,
			`output padding [1 0] must lie in [0, stride) for strides [1 1]`},
		{`{"class_name":"UpSampling2D","config":{"name":"u","trainable":true,"size":[2,2],"interpolation":"area"}}`,
			`interpolation "area" must be "nearest" or "bilinear"`},
		{`{"class_name":"Cropping1D","config":{"name":"c","trainable":true,"cropping":[1]}}`,
			`nn: architecture: layer 1 (Cropping1D "c"): cropping [1] must be [start, end], neither negative`},
		{`{"class_name":"ZeroPadding1D","config":{"name":"z","trainable":true,"padding":[1,1],"cropping":[1,1]}}`,
			`nn: architecture: layer 1 (ZeroPadding1D "z"): cropping does not apply`},
	} {
		js := `{"format":"tartan.architecture","version":1,"class_name":"Sequential","name":"m","layers":[` +
			`{"class_name":"InputLayer","config":{"name":"input_layer","shape":[4,4,1]}},` + c.layer + `]}`
		_, err := LoadArchitecture([]byte(js))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("error %v, want one containing %q", err, c.want)
		}
	}
}
