package nn

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tartanml/tartan/backend"
	"github.com/tartanml/tartan/tile"
)

// failingDevice is a device whose executables fail to run.
type failingDevice struct{ backend.Device }

func (d failingDevice) Compile(g *tile.Graph) (backend.Executable, error) {
	x, err := d.Device.Compile(g)
	return failingRun{x}, err
}

type failingRun struct{ backend.Executable }

var errDeviceLost = errors.New("device lost")

func (failingRun) Run() error { return errDeviceLost }

// TestNestedErrors checks that an error of this package given context by
// another says "nn:" once, names the layer at fault by position, class and
// the name it gets, and still unwraps to its cause.
func TestNestedErrors(t *testing.T) {
	check := func(what string, err error, want string) {
		t.Helper()
		if err == nil {
			t.Errorf("%s: no error, want %q", what, want)
			return
		}
		if got := err.Error(); got != want {
			t.Errorf("%s:\n got %s\nwant %s", what, got, want)
		}
	}
	_, err := Sequential("m", Input(8, 8, 1), Conv2D(0, 3), Flatten(), Dense(3))
	check("constructor", err, `nn: Sequential "m": layer 1 of 3 (Conv2D "conv2d"): filters 0 must be positive`)
	_, err = Sequential("m", Input(4), Dense(3), Dense(0))
	check("second Dense", err, `nn: Sequential "m": layer 2 of 2 (Dense "dense_1"): units 0 must be positive`)
	_, err = Sequential("m", Input(4), Dense(3, Name("dense_1")), Dense(4), Dense(0))
	check("named around", err, `nn: Sequential "m": layer 3 of 3 (Dense "dense_2"): units 0 must be positive`)
	_, err = Sequential("m", Input(2, 2, 1), Conv2D(4, 3, Name("c")), Flatten(), Dense(3))
	check("build", err, `nn: Sequential "m": layer 1 of 3 (Conv2D "c") on input (None, 2, 2, 1): spatial dimension 1: the window spans 3 but the input is only 2 long (padding "valid")`)
	_, err = Sequential("m", Input(-1), Dense(3))
	check("input", err, `nn: Sequential "m": Input: shape [-1] has a dimension below 1`)
	_, err = Sequential("m", Input(4), Dense(3, Activation("nope")))
	check("activation", err, `nn: Sequential "m": layer 1 of 1 (Dense "dense"): unknown activation "nope" (want one of [linear relu relu6 sigmoid tanh softmax log_softmax elu gelu softplus leaky_relu silu swish])`)

	// Apply alone keeps its text; a functional model adds its own name.
	in := Input(2, 2, 1)
	out := Apply(Conv2D(4, 3), in)
	check("Apply", out.err, `nn: Conv2D on input (None, 2, 2, 1): spatial dimension 1: the window spans 3 but the input is only 2 long (padding "valid")`)
	_, err = Functional("f", []*Node{in}, []*Node{out})
	check("Functional", err, `nn: Functional "f": Conv2D on input (None, 2, 2, 1): spatial dimension 1: the window spans 3 but the input is only 2 long (padding "valid")`)
	check("Apply of a bad layer", Apply(Dense(0), Input(3)).err, `nn: Dense: units 0 must be positive`)

	// Architectures and files.
	badArch := `{"format":"tartan.architecture","version":1,"class_name":"Sequential","name":"m","layers":[` +
		`{"class_name":"InputLayer","config":{"name":"input_layer","shape":[4]}},` +
		`{"class_name":"Dense","config":{"name":"dense","trainable":true,"units":0,"activation":"","use_bias":true,"kernel_initializer":{"name":"glorot_uniform"},"bias_initializer":{"name":"zeros"}}}]}`
	_, err = LoadArchitecture([]byte(badArch))
	check("LoadArchitecture", err, `nn: architecture: layer 1 (Dense "dense"): units 0 must be positive`)
	narrow := strings.Replace(strings.Replace(badArch, `"units":0`, `"units":2`, 1), `"shape":[4]`, `"shape":[0]`, 1)
	_, err = LoadArchitecture([]byte(narrow))
	check("LoadArchitecture, input", err, `nn: architecture: layer 0 (InputLayer "input_layer"): shape [0] has a dimension below 1`)
	path := filepath.Join(t.TempDir(), "m.safetensors")
	if err := WriteSafetensors(path, nil, map[string]string{"format": modelFormat, "version": fileVersion, "architecture": badArch}); err != nil {
		t.Fatal(err)
	}
	_, err = Load(path)
	check("Load", err, `nn: `+path+`: architecture: layer 1 (Dense "dense"): units 0 must be positive`)

	// Running: the device's error comes through once prefixed.
	m := regressor(t)
	if err := m.SetDevice(failingDevice{testDevice()}); err != nil {
		t.Fatal(err)
	}
	_, err = m.Fit(constSamples(t, 4, 0.5), BatchSize(2), quiet)
	check("Fit", err, `nn: Fit: epoch 1, step 1: running "reg_train_b2": device lost`)
	if !errors.Is(err, errDeviceLost) {
		t.Errorf("Fit's error %v does not unwrap to the device's", err)
	}
	_, err = m.Evaluate(constSamples(t, 4, 0.5), BatchSize(2), quiet)
	check("Evaluate", err, `nn: evaluating batch 1: running "reg_eval_b2": device lost`)
	_, err = m.Predict(constSamples(t, 4, 0.5), BatchSize(2), quiet)
	check("Predict", err, `nn: Predict: batch 1: running "reg_predict_b2": device lost`)
}

// TestTargetHints checks the hints of a target shape that does not suit
// the loss: one-hot targets for a sparse loss, class indices for a
// categorical one, and a Dense layer that, given samples of more than one
// axis, classifies each position of the last axis instead of the sample.
func TestTargetHints(t *testing.T) {
	x := make([]float32, 4*4)
	labels := []float32{0, 2, 1, 2}
	oneHot := []float32{1, 0, 0, 0, 0, 1, 0, 1, 0, 0, 0, 1}
	oneHot5 := []float32{1, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 1}
	clf := func(loss Loss) *Model {
		m := must(t)(Sequential("m", Input(4), Dense(3, Activation("softmax"))))
		if err := m.Compile(Adam(0.01), loss, OnDevice(testDevice())); err != nil {
			t.Fatal(err)
		}
		return m
	}
	for _, c := range []struct {
		name string
		m    *Model
		s    Samples
		want string
	}{
		{"one-hot, sparse loss", clf(SparseCategoricalCrossentropy()), samples(t, x, []int{4}, oneHot, []int{3}),
			"nn: training samples: targets of shape (3,) do not suit loss sparse_categorical_crossentropy, which wants () for this model; " +
				"they look one-hot (3 values a sample, one per class of the model's output (None, 3)): use CategoricalCrossentropy for one-hot targets, or give class indices 0 to 2"},
		{"one-hot rows, other classes", clf(SparseCategoricalCrossentropy()), samples(t, x, []int{4}, oneHot5, []int{5}),
			"nn: training samples: targets of shape (5,) do not suit loss sparse_categorical_crossentropy, which wants () for this model; " +
				"they look one-hot (each a single 1 among 5 values), but the model's output (None, 3) has 3 classes: use CategoricalCrossentropy and a model of 5 outputs, or give class indices 0 to 2"},
		{"indices, categorical loss", clf(CategoricalCrossentropy()), samples(t, x, []int{4}, labels, nil),
			"nn: training samples: targets of shape () do not suit loss categorical_crossentropy, which wants (3,) for this model; " +
				"they look like class indices (whole numbers from 0 to 2): use SparseCategoricalCrossentropy for class indices, or one-hot encode them as (3,)"},
		{"indices (n, 1), categorical loss", clf(CategoricalCrossentropy()), samples(t, x, []int{4}, labels, []int{1}),
			"nn: training samples: targets of shape (1,) do not suit loss categorical_crossentropy, which wants (3,) for this model; " +
				"they look like class indices (whole numbers from 0 to 2): use SparseCategoricalCrossentropy for class indices, or one-hot encode them as (3,)"},
		{"fractions, categorical loss", clf(CategoricalCrossentropy()), samples(t, x, []int{4}, []float32{0.5, 1, 2, 0}, nil),
			"nn: training samples: targets of shape () do not suit loss categorical_crossentropy, which wants (3,) for this model"},
	} {
		_, err := c.m.Fit(c.s, quiet)
		if err == nil || err.Error() != c.want {
			t.Errorf("%s:\n got %v\nwant %s", c.name, err, c.want)
		}
	}

	// Dense on images: Keras's Dense, like Tartan's, applies to the last
	// axis, so the model's output is one prediction per pixel.
	m := must(t)(Sequential("m", Input(5, 5, 1), Dense(10, Activation("softmax"))))
	if err := m.Compile(Adam(0.01), SparseCategoricalCrossentropy(), OnDevice(testDevice())); err != nil {
		t.Fatal(err)
	}
	images := make([]float32, 2*25)
	hint := "; layer dense (Dense) gets input (None, 5, 5, 1) and applies to its last axis only, giving (None, 5, 5, 10): add a Flatten layer before it to classify whole samples"
	_, err := m.Fit(samples(t, images, []int{5, 5, 1}, []float32{3, 7}, nil), quiet)
	if want := "nn: training samples: targets of shape () do not suit loss sparse_categorical_crossentropy, which wants (5, 5) for this model" + hint; err == nil || err.Error() != want {
		t.Errorf("Dense on images, Fit:\n got %v\nwant %s", err, want)
	}
	_, err = m.Evaluate(samples(t, images, []int{5, 5, 1}, make([]float32, 20), []int{10}), quiet)
	if want := "nn: evaluation samples: targets of shape (10,) do not suit loss sparse_categorical_crossentropy, which wants (5, 5) for this model" + hint; err == nil || err.Error() != want {
		t.Errorf("Dense on images, Evaluate:\n got %v\nwant %s", err, want)
	}
}
