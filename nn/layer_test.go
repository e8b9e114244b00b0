package nn

import (
	"strings"
	"testing"
)

func TestSnakeCase(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"Conv2D", "conv2d"},
		{"Dense", "dense"},
		{"MaxPooling2D", "max_pooling2d"},
		{"GlobalAveragePooling2D", "global_average_pooling2d"},
		{"BatchNormalization", "batch_normalization"},
		{"ReLU", "re_lu"},
		{"DepthwiseConv2D", "depthwise_conv2d"},
		{"Conv1D", "conv1d"},
	} {
		if got := snakeCase(c.in); got != c.want {
			t.Errorf("snakeCase(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

// TestShowcaseNamesAndParams checks Keras's automatic names and the
// parameter counts of the showcase CNN, worked by hand:
// conv2d 2·2·1·64 + 64 = 320, conv2d_1 2·2·64·32 + 32 = 8224,
// dense 1568·256 + 256 = 401664, dense_1 256·10 + 10 = 2570.
func TestShowcaseNamesAndParams(t *testing.T) {
	m := must(t)(FashionCNN())
	want := []struct {
		name   string
		params int
		shape  string
	}{
		{"conv2d", 320, "(None, 28, 28, 64)"},
		{"max_pooling2d", 0, "(None, 14, 14, 64)"},
		{"dropout", 0, "(None, 14, 14, 64)"},
		{"conv2d_1", 8224, "(None, 14, 14, 32)"},
		{"max_pooling2d_1", 0, "(None, 7, 7, 32)"},
		{"dropout_1", 0, "(None, 7, 7, 32)"},
		{"flatten", 0, "(None, 1568)"},
		{"dense", 401664, "(None, 256)"},
		{"dropout_2", 0, "(None, 256)"},
		{"dense_1", 2570, "(None, 10)"},
	}
	layers := m.Layers()
	if len(layers) != len(want) {
		t.Fatalf("%d layers, want %d", len(layers), len(want))
	}
	for i, w := range want {
		l := layers[i]
		n := 0
		for _, wt := range l.Weights() {
			n += wt.Size()
		}
		if l.Name() != w.name || n != w.params || fmtShape(l.base().outShape) != w.shape {
			t.Errorf("layer %d: %s %d params %s, want %s %d %s", i, l.Name(), n, fmtShape(l.base().outShape), w.name, w.params, w.shape)
		}
	}
	total, trainable := m.CountParams()
	if total != 412778 || trainable != 412778 {
		t.Errorf("params %d (%d trainable), want 412778", total, trainable)
	}
	var names []string
	for _, w := range m.Weights() {
		names = append(names, w.Name()+fmtDims(w.Shape()))
	}
	got := strings.Join(names, " ")
	wantNames := "conv2d/kernel(2, 2, 1, 64) conv2d/bias(64,) conv2d_1/kernel(2, 2, 64, 32) conv2d_1/bias(32,) " +
		"dense/kernel(1568, 256) dense/bias(256,) dense_1/kernel(256, 10) dense_1/bias(10,)"
	if got != wantNames {
		t.Errorf("weights\n %s\nwant\n %s", got, wantNames)
	}
}

// TestOutputShapes checks the shapes layers compute, worked by hand with
// TensorFlow's window arithmetic.
func TestOutputShapes(t *testing.T) {
	for _, c := range []struct {
		name   string
		in     []int
		layer  Layer
		want   string
		params int
	}{
		{"conv valid", []int{28, 28, 3}, Conv2D(8, 3), "(None, 26, 26, 8)", 3*3*3*8 + 8},
		{"conv same stride 2", []int{7, 7, 3}, Conv2D(4, 3, Padding("same"), Strides(2)), "(None, 4, 4, 4)", 3*3*3*4 + 4},
		{"conv dilated", []int{10, 10, 1}, Conv2D(2, 3, DilationRate(2), UseBias(false)), "(None, 6, 6, 2)", 3 * 3 * 2},
		{"conv nonsquare", []int{9, 9, 2}, Conv2D(2, 1, KernelShape(3, 1), Strides(2, 1)), "(None, 4, 9, 2)", 3*1*2*2 + 2},
		{"conv groups", []int{5, 5, 4}, Conv2D(6, 1, Groups(2)), "(None, 5, 5, 6)", 1*1*2*6 + 6},
		{"conv1d", []int{10, 3}, Conv1D(5, 4), "(None, 7, 5)", 4*3*5 + 5},
		{"depthwise", []int{6, 6, 3}, DepthwiseConv2D(3, DepthMultiplier(2)), "(None, 4, 4, 6)", 3*3*3*2 + 6},
		{"maxpool", []int{7, 7, 2}, MaxPooling2D(2), "(None, 3, 3, 2)", 0},
		{"maxpool same", []int{7, 7, 2}, MaxPooling2D(2, Padding("same")), "(None, 4, 4, 2)", 0},
		{"avgpool strides", []int{8, 8, 1}, AveragePooling2D(3, Strides(1)), "(None, 6, 6, 1)", 0},
		{"global avg", []int{4, 5, 6}, GlobalAveragePooling2D(), "(None, 6)", 0},
		{"global max", []int{4, 5, 6}, GlobalMaxPooling2D(), "(None, 6)", 0},
		{"flatten", []int{2, 3, 4}, Flatten(), "(None, 24)", 0},
		{"reshape", []int{24}, Reshape([]int{-1, 4}), "(None, 6, 4)", 0},
		{"dense rank 3", []int{5, 3}, Dense(7), "(None, 5, 7)", 3*7 + 7},
		{"batchnorm", []int{5, 3}, BatchNormalization(), "(None, 5, 3)", 4 * 3},
		{"layernorm", []int{5, 3}, LayerNormalization(), "(None, 5, 3)", 2 * 3},
		{"embedding", []int{7}, Embedding(100, 16), "(None, 7, 16)", 1600},
		{"relu", []int{3}, ReLU(MaxValue(6)), "(None, 3)", 0},
		{"softmax", []int{3, 4}, Softmax(Axis(1)), "(None, 3, 4)", 0},
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

// TestBuildErrors checks that bad arguments give errors naming the culprit,
// never panics.
func TestBuildErrors(t *testing.T) {
	for _, c := range []struct {
		name  string
		in    []int
		layer Layer
		want  string
	}{
		{"padding on dense", []int{3}, Dense(2, Padding("same")), `(Dense "dense"): option Padding does not apply`},
		{"bad padding", []int{5, 5, 1}, Conv2D(2, 2, Padding("full")), `padding "full"`},
		{"negative units", []int{3}, Dense(-1), "units -1"},
		{"unknown activation", []int{3}, Dense(2, Activation("swoosh")), `unknown activation "swoosh"`},
		{"window too big", []int{2, 2, 1}, Conv2D(1, 3), "window spans 3"},
		{"conv rank", []int{5, 1}, Conv2D(1, 1), "rank 4"},
		{"dropout rate", []int{3}, Dropout(1), "rate 1"},
		{"reshape size", []int{6}, Reshape([]int{4}), "cannot reshape"},
		{"two -1", []int{6}, Reshape([]int{-1, -1}), "at most one -1"},
		{"strides and dilation", []int{9, 9, 1}, Conv2D(1, 2, Strides(2), DilationRate(2)), "cannot both exceed 1"},
		{"groups", []int{5, 5, 3}, Conv2D(4, 1, Groups(2)), "groups 2 must divide the 3 input channels"},
		{"softmax batch axis", []int{3}, Softmax(Axis(0)), "batch axis"},
		{"bad name", []int{3}, Dense(2, Name("a b")), `name "a b"`},
		{"add one input", []int{3}, Add(), "at least two inputs"},
		{"nil option", []int{3}, Dense(2, nil), "nil option"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := Sequential("m", Input(c.in...), c.layer)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %v, want one containing %q", err, c.want)
			}
		})
	}
	if _, err := Sequential("m", Input()); err == nil || !strings.Contains(err.Error(), "shape is empty") {
		t.Errorf("empty input: %v", err)
	}
	if _, err := Sequential("m", nil, Dense(1)); err == nil {
		t.Error("nil input accepted")
	}
	if _, err := Sequential("m", Input(3), Dense(2, Name("x")), Dense(2, Name("x"))); err == nil || !strings.Contains(err.Error(), `two layers are named "x"`) {
		t.Errorf("duplicate names: %v", err)
	}
	if _, err := Sequential("bad name", Input(3), Dense(1)); err == nil {
		t.Error("bad model name accepted")
	}
}

// TestFunctional builds a residual model with shared and merged nodes.
func TestFunctional(t *testing.T) {
	in := Input(4)
	a := Apply(Dense(4, Activation("relu")), in)
	b := Apply(Dense(4), a)
	sum := Apply(Add(), a, b)
	cat := Apply(Concatenate(), sum, in)
	out := Apply(Dense(2, Activation("softmax")), cat)
	m, err := Functional("resnet", []*Node{in}, []*Node{out})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, l := range m.Layers() {
		names = append(names, l.Name())
	}
	if got := strings.Join(names, " "); got != "input_layer dense dense_1 add concatenate dense_2" {
		t.Errorf("layers %s", got)
	}
	if got := fmtShape(cat.shape); got != "(None, 8)" {
		t.Errorf("concatenate shape %s", got)
	}
	if s := m.Summary(); !strings.Contains(s, "Connected to") || !strings.Contains(s, "dense[0][0], dense_1[0][0]") {
		t.Errorf("summary lacks the connections:\n%s", s)
	}
	// A node from an input the model does not list.
	other := Input(4)
	if _, err := Functional("m", []*Node{in}, []*Node{Apply(Add(), a, Apply(Dense(4), other))}); err == nil || !strings.Contains(err.Error(), "not among the model's inputs") {
		t.Errorf("foreign input: %v", err)
	}
	// Errors travel along the chain.
	bad := Apply(Dense(3), Apply(Conv2D(1, 1), in))
	if bad.Err() == nil || !strings.Contains(bad.Err().Error(), "Conv2D") {
		t.Errorf("chained error: %v", bad.Err())
	}
	// A shared layer must see inputs of its first shape.
	shared := Dense(4)
	Apply(shared, in)
	if n := Apply(shared, Input(5)); n.Err() == nil {
		t.Error("shared layer accepted a different input shape")
	}
}
