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
