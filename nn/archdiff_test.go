package nn

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
)

// TestArchitectureMismatchMessage resumes checkpoints into models that
// differ from the one that wrote them in one field: the error names the
// first layer and field that differ, with both values. A file whose
// architecture JSON is only laid out differently (key order, spacing,
// number spelling) is the same architecture.
func TestArchitectureMismatchMessage(t *testing.T) {
	dir := t.TempDir()
	build := func(layers ...Layer) *Model {
		t.Helper()
		m := must(t)(Sequential("clf", Input(4), layers...))
		if err := m.Compile(Adam(0.01), SparseCategoricalCrossentropy(), OnDevice(testDevice())); err != nil {
			t.Fatal(err)
		}
		return m
	}
	standard := func(rate float64) *Model {
		return build(Dense(8, Activation("relu")), Dropout(rate), Dense(3, Activation("softmax")))
	}
	ck := filepath.Join(dir, "ck.safetensors")
	if err := standard(0.5).SaveCheckpoint(ck, 0); err != nil {
		t.Fatal(err)
	}
	// The same architecture, its JSON rewritten with sorted keys, indented,
	// and 0.5 spelled 0.50; and that with the dropout rate changed too.
	relaid := func(name, from, to string) string {
		p := filepath.Join(dir, name)
		rewrite(t, ck, p, func(_ []SafeTensor, meta map[string]string) {
			var v any
			if err := json.Unmarshal([]byte(meta["architecture"]), &v); err != nil {
				t.Fatal(err)
			}
			b, err := json.MarshalIndent(v, "", "  ")
			if err != nil {
				t.Fatal(err)
			}
			s := strings.Replace(string(b), `"rate": 0.5`, `"rate": `+from, 1)
			if s == string(b) {
				t.Fatalf("no rate in %s", b)
			}
			meta["architecture"] = strings.Replace(s, `"rate": `+from, `"rate": `+to, 1)
		})
		return p
	}
	same := relaid("same.safetensors", "0.50", "0.50")
	changed := relaid("changed.safetensors", "0.50", "0.25")
	prefix := func(p string) string {
		return "nn: checkpoint " + p + ` was written by a different model than "clf": `
	}
	for _, c := range []struct {
		name string
		m    *Model
		path string
		want string // the whole message; "" for a successful load
	}{
		{"dropout rate", standard(0.3), ck, prefix(ck) + "layer 2, dropout (Dropout): rate is 0.5 in the file but 0.3 in the model"},
		{"same, laid out differently", standard(0.5), same, ""},
		{"relaid and changed", standard(0.5), changed, prefix(changed) + "layer 2, dropout (Dropout): rate is 0.25 in the file but 0.5 in the model"},
		{"units", build(Dense(9, Activation("relu")), Dropout(0.5), Dense(3, Activation("softmax"))), ck,
			prefix(ck) + "layer 1, dense (Dense): units is 8 in the file but 9 in the model"},
		{"activation", build(Dense(8, Activation("tanh")), Dropout(0.5), Dense(3, Activation("softmax"))), ck,
			prefix(ck) + `layer 1, dense (Dense): activation is "relu" in the file but "tanh" in the model`},
		{"initializer", build(Dense(8, Activation("relu"), KernelInitializer(HeNormal())), Dropout(0.5), Dense(3, Activation("softmax"))), ck,
			prefix(ck) + `layer 1, dense (Dense): kernel_initializer.name is "glorot_uniform" in the file but "he_normal" in the model`},
		{"layer name", build(Dense(8, Activation("relu"), Name("hidden")), Dropout(0.5), Dense(3, Activation("softmax"))), ck,
			prefix(ck) + `layer 1, hidden (Dense): name is "dense" in the file but "hidden" in the model`},
		{"class", build(Dense(8, Activation("relu")), Activation("relu"), Dense(3, Activation("softmax"))), ck,
			prefix(ck) + "layer 2 is dropout (Dropout) in the file but activation (Activation) in the model"},
		{"extra layer", build(Dense(8, Activation("relu")), Dropout(0.5), Dense(3, Activation("softmax")), Activation("linear")), ck,
			prefix(ck) + "the file has 4 layers, the model 5: the model's layer 4 is activation (Activation)"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := c.m.LoadCheckpoint(c.path)
			switch {
			case c.want == "" && err != nil:
				t.Errorf("error %v", err)
			case c.want != "" && (err == nil || err.Error() != c.want):
				t.Errorf("error\n%v\nwant\n%s", err, c.want)
			}
		})
	}
}
