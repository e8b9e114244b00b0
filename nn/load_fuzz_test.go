package nn

import (
	"bytes"
	"maps"
	"os"
	"slices"
	"testing"

	"github.com/tartanml/tartan/internal/fuzzcheck"
)

// fuzzModels are the models whose files and architectures seed the fuzz
// targets: sequential and functional, with every kind of weight.
func fuzzModels(t testing.TB) []*Model {
	var out []*Model
	add := func(m *Model, err error) {
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, m)
	}
	add(Sequential("clf", Input(4), Dense(8, Activation("relu")), Dropout(0.5), Dense(3, Activation("softmax"))))
	add(Sequential("conv", Input(6, 6, 2), Conv2D(3, 2, Padding("same")), MaxPooling2D(2), BatchNormalization(),
		DepthwiseConv2D(2), GlobalAveragePooling2D(), Dense(2)))
	add(Sequential("seq", Input(5), Embedding(10, 3), Conv1D(2, 2), Flatten(), LayerNormalization(), Dense(1)))
	in := Input(6)
	a := Apply(Dense(5, Activation("tanh")), in)
	b := Apply(Reshape([]int{5, 1}), a)
	c := Apply(Flatten(), Apply(Conv1D(2, 2, Padding("same")), b))
	d := Apply(Concatenate(), Apply(Dense(4), c), in)
	e := Apply(Add(), Apply(Dense(3), d), Apply(Dense(3), d))
	add(Functional("func", []*Node{in}, []*Node{Apply(Softmax(), e)}))
	return out
}

// fuzzClassifier is the compiled model FuzzLoadCheckpoint loads into.
func fuzzClassifier(t testing.TB) *Model {
	m, err := Sequential("clf", Input(4), Dense(8, Activation("relu")), Dropout(0.5), Dense(3, Activation("softmax")))
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Compile(Adam(0.01), SparseCategoricalCrossentropy(), Metrics("accuracy"), OnDevice(testDevice())); err != nil {
		t.Fatal(err)
	}
	return m
}

// addFileSeeds adds the files of the fuzz models (weights, model, and a
// checkpoint of the classifier) and the repository's PyTorch file.
func addFileSeeds(f *testing.F) {
	for _, m := range fuzzModels(f) {
		for _, contents := range []func() ([]SafeTensor, map[string]string, error){
			m.modelContents,
			func() ([]SafeTensor, map[string]string, error) {
				ts, err := m.weightTensors()
				return ts, map[string]string{"format": weightsFormat, "version": fileVersion}, err
			},
		} {
			ts, meta, err := contents()
			if err != nil {
				f.Fatal(err)
			}
			raw, err := encodeSafetensors(ts, meta)
			if err != nil {
				f.Fatal(err)
			}
			f.Add(raw)
		}
	}
	ts, meta, err := fuzzClassifier(f).checkpointContents(3, nil)
	if err != nil {
		f.Fatal(err)
	}
	raw, err := encodeSafetensors(ts, meta)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(raw)
	if raw, err := os.ReadFile("testdata/torch/adam20/init.safetensors"); err == nil {
		f.Add(raw)
	}
	f.Add([]byte{})
	f.Add([]byte("\x02\x00\x00\x00\x00\x00\x00\x00{}"))
}

// inputs returns what a fuzz input is tried as: the input itself and, when
// its layout parses, the input with its checksums recomputed, so that
// mutations of the data and metadata reach the loaders past the checksum
// check.
func inputs(raw []byte) [][]byte {
	out := [][]byte{raw}
	ts, meta, err := parseSafetensorsLayout(raw)
	if err != nil {
		return out
	}
	delete(meta, checksumsKey)
	if fixed, err := encodeSafetensors(ts, meta); err == nil {
		out = append(out, fixed)
	}
	return out
}

// sameTensors reports whether two tensor lists are equal.
func sameTensors(a, b []SafeTensor) bool {
	return slices.EqualFunc(a, b, func(x, y SafeTensor) bool {
		return x.Name == y.Name && x.DType == y.DType && slices.Equal(x.Shape, y.Shape) && bytes.Equal(x.Data, y.Data)
	})
}

// FuzzParseSafetensors checks that parsing never panics, that the
// conversions of whatever it accepts do not either, and that an accepted
// file written back parses to the same tensors and metadata.
func FuzzParseSafetensors(f *testing.F) {
	addFileSeeds(f)
	f.Fuzz(func(t *testing.T, raw []byte) {
		fuzzcheck.Bounded(t, fuzzcheck.DefaultLimit, func() {
			ts, meta, err := parseSafetensors(raw)
			if err != nil {
				return
			}
			for i := range ts {
				ts[i].Float32s()
				ts[i].Int64s()
			}
			again, err := encodeSafetensorsRaw(ts, meta)
			if err != nil {
				t.Fatalf("an accepted file does not write back: %v", err)
			}
			ts2, meta2, err := parseSafetensors(again)
			if err != nil {
				t.Fatalf("a file written back does not parse: %v", err)
			}
			if !sameTensors(ts, ts2) || !maps.Equal(meta, meta2) {
				t.Fatal("a file written back parses differently")
			}
		})
	})
}

// FuzzLoadCheckpoint loads inputs as checkpoints into a compiled model. A
// load never panics; a failed one changes nothing; a successful one saved
// again and loaded into a fresh model gives the same weights and state.
func FuzzLoadCheckpoint(f *testing.F) {
	addFileSeeds(f)
	m := fuzzClassifier(f)
	snapshot := func(m *Model) [][]float32 {
		var out [][]float32
		for _, n := range append(m.weightNames(), m.stateNames()...) {
			if v, err := m.st.f32(n); err == nil {
				out = append(out, slices.Clone(v))
			} else if v, err := m.st.i64(n); err == nil {
				f := make([]float32, len(v))
				for i, x := range v {
					f[i] = float32(x)
				}
				out = append(out, f)
			}
		}
		return out
	}
	equal := func(a, b [][]float32) bool {
		return slices.EqualFunc(a, b, func(x, y []float32) bool {
			return slices.EqualFunc(x, y, func(p, q float32) bool { return p == q || p != p && q != q })
		})
	}
	f.Fuzz(func(t *testing.T, input []byte) {
		fuzzcheck.Bounded(t, fuzzcheck.DefaultLimit, func() {
			for _, raw := range inputs(input) {
				loadCheckpointOnce(t, m, raw, snapshot, equal)
			}
		})
	})
}

// loadCheckpointOnce is FuzzLoadCheckpoint's check of one file.
func loadCheckpointOnce(t *testing.T, m *Model, raw []byte, snapshot func(*Model) [][]float32, equal func(a, b [][]float32) bool) {
	before := snapshot(m)
	ts, meta, err := parseFile("fuzz.safetensors", raw)
	var ck *Checkpoint
	if err == nil {
		ck, err = m.loadCheckpoint("fuzz.safetensors", ts, meta)
	}
	if err != nil {
		if !equal(before, snapshot(m)) {
			t.Fatalf("a failed load (%v) changed the model", err)
		}
		return
	}
	ts2, meta2, err := m.checkpointContents(ck.Epoch, ck.History)
	if err != nil {
		t.Fatal(err)
	}
	again, err := encodeSafetensors(ts2, meta2)
	if err != nil {
		t.Fatal(err)
	}
	fresh := fuzzClassifier(t)
	ts3, meta3, err := parseFile("again.safetensors", again)
	if err == nil {
		_, err = fresh.loadCheckpoint("again.safetensors", ts3, meta3)
	}
	if err != nil {
		t.Fatalf("a loaded checkpoint saved again does not load: %v", err)
	}
	if !equal(snapshot(m), snapshot(fresh)) {
		t.Fatal("a loaded checkpoint saved again loads differently")
	}
}

// weightNames lists the model's weights' names.
func (m *Model) weightNames() []string {
	var out []string
	for _, w := range m.weights {
		out = append(out, w.Name())
	}
	return out
}

// FuzzLoad loads inputs as model files. A load never panics nor allocates
// more than the bound (the architecture is checked against the tensors
// before any weight is allocated); a model it accepts saves to a file that
// loads to the same architecture and weights.
func FuzzLoad(f *testing.F) {
	addFileSeeds(f)
	f.Fuzz(func(t *testing.T, input []byte) {
		fuzzcheck.Bounded(t, fuzzcheck.DefaultLimit, func() {
			for _, raw := range inputs(input) {
				loadOnce(t, raw)
			}
		})
	})
}

// loadOnce is FuzzLoad's check of one file.
func loadOnce(t *testing.T, raw []byte) {
	ts, meta, err := parseFile("fuzz.safetensors", raw)
	if err != nil {
		return
	}
	m, err := loadModel("fuzz.safetensors", ts, meta)
	if err != nil {
		return
	}
	ts2, meta2, err := m.modelContents()
	if err != nil {
		t.Fatalf("a loaded model does not save: %v", err)
	}
	again, err := encodeSafetensors(ts2, meta2)
	if err != nil {
		t.Fatal(err)
	}
	ts3, meta3, err := parseFile("again.safetensors", again)
	if err != nil {
		t.Fatalf("a loaded model saved again does not parse: %v", err)
	}
	m2, err := loadModel("again.safetensors", ts3, meta3)
	if err != nil {
		t.Fatalf("a loaded model saved again does not load: %v", err)
	}
	a1, _ := m.Architecture()
	a2, _ := m2.Architecture()
	w1, _ := m.weightTensors()
	w2, _ := m2.weightTensors()
	if !bytes.Equal(a1, a2) || !sameTensors(w1, w2) {
		t.Fatal("a loaded model saved again loads differently")
	}
}

// FuzzArchitecture decodes inputs as architecture JSON, without drawing
// weights. Decoding never panics; an accepted architecture encodes to JSON
// that decodes to a model encoding to the same JSON.
func FuzzArchitecture(f *testing.F) {
	for _, m := range fuzzModels(f) {
		js, err := m.Architecture()
		if err != nil {
			f.Fatal(err)
		}
		f.Add(js)
	}
	if m, err := FashionCNN(); err == nil {
		js, _ := m.Architecture()
		f.Add(js)
	}
	f.Add([]byte(`{"format":"tartan.architecture","version":1,"class_name":"Sequential","name":"big","layers":[{"class_name":"InputLayer","config":{"name":"input_layer","shape":[65536]}},{"class_name":"Dense","config":{"name":"dense","trainable":true,"units":1048576,"activation":"linear","use_bias":true,"kernel_initializer":{"name":"glorot_uniform"},"bias_initializer":{"name":"zeros"}}}]}`))
	f.Fuzz(func(t *testing.T, js []byte) {
		fuzzcheck.Bounded(t, fuzzcheck.DefaultLimit, func() {
			m, err := decodeArchitecture(js)
			if err != nil {
				return
			}
			a1, err := m.Architecture()
			if err != nil {
				t.Fatalf("a decoded architecture does not encode: %v", err)
			}
			m2, err := decodeArchitecture(a1)
			if err != nil {
				t.Fatalf("an encoded architecture does not decode: %v\n%s", err, a1)
			}
			a2, _ := m2.Architecture()
			if !bytes.Equal(a1, a2) {
				t.Fatalf("the architecture changed on a round trip:\n%s\n%s", a1, a2)
			}
			if d := archDiff(a1, a2); d != "" {
				t.Fatalf("archDiff of equal architectures: %s", d)
			}
		})
	})
}
