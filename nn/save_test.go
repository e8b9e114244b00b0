package nn

import (
	"encoding/binary"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestReadPeerSafetensors reads the initial weights PyTorch's tooling wrote
// (testdata/torch) and loads them into the showcase model.
func TestReadPeerSafetensors(t *testing.T) {
	ts, meta, err := ReadSafetensors("testdata/torch/adam20/init.safetensors")
	if err != nil {
		t.Fatal(err)
	}
	if meta["generator"] != "gen_adam20.py" {
		t.Errorf("metadata %v", meta)
	}
	m := must(t)(FashionCNN())
	if len(ts) != len(m.Weights()) {
		t.Fatalf("%d tensors, want %d", len(ts), len(m.Weights()))
	}
	if err := m.LoadWeights("testdata/torch/adam20/init.safetensors"); err != nil {
		t.Fatal(err)
	}
	// The README's check: glorot limits √(6/(fan_in + fan_out)).
	for name, limit := range map[string]float64{"conv2d/kernel": math.Sqrt(6.0 / (4 + 256)), "dense/kernel": math.Sqrt(6.0 / (1568 + 256))} {
		v := getWeight(t, m, name)
		mx := 0.0
		for _, x := range v {
			mx = max(mx, float64(x), -float64(x))
		}
		if mx > limit || mx < 0.95*limit {
			t.Errorf("%s: largest |w| %v, want just under %v", name, mx, limit)
		}
	}
	for _, v := range getWeight(t, m, "dense_1/bias") {
		if v != 0 {
			t.Fatal("biases are not zero")
		}
	}
}

// TestSafetensorsRoundTrip writes tensors and reads them back, and checks
// the layout byte by byte for a small file.
func TestSafetensorsRoundTrip(t *testing.T) {
	path := filepath.Join(t.TempDir(), "t.safetensors")
	in := []SafeTensor{F32Tensor("a/b", []int{2, 2}, []float32{1, -2, 3.5, 0}), I64Tensor("step", []int{}, []int64{-7}), F32Tensor("empty", []int{0, 3}, nil)}
	if err := WriteSafetensors(path, in, map[string]string{"k": "v"}); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	n := binary.LittleEndian.Uint64(raw)
	if (8+n)%8 != 0 || int(8+n)+16+8 != len(raw) {
		t.Errorf("header length %d, file %d bytes", n, len(raw))
	}
	// The checksums are CRC-32C of each tensor's bytes, dtype and shape
	// ("F32[2,2]"), and of the other metadata as length-prefixed strings.
	want := `{"__metadata__":{"checksums":"{\"algorithm\":\"crc32c\",\"metadata\":\"580fd4e9\",\"tensors\":{\"a/b\":\"4901925a\",\"empty\":\"7435d3d7\",\"step\":\"a13ea88a\"}}","k":"v"},"a/b":{"dtype":"F32","shape":[2,2],"data_offsets":[0,16]},"step":{"dtype":"I64","shape":[],"data_offsets":[16,24]},"empty":{"dtype":"F32","shape":[0,3],"data_offsets":[24,24]}}`
	if got := strings.TrimRight(string(raw[8:8+n]), " "); got != want {
		t.Errorf("header\n%s\nwant\n%s", got, want)
	}
	out, meta, err := ReadSafetensors(path)
	if err != nil {
		t.Fatal(err)
	}
	if meta["k"] != "v" || len(out) != 3 {
		t.Fatalf("read %d tensors, metadata %v", len(out), meta)
	}
	f, _ := out[0].Float32s()
	i, _ := out[1].Int64s()
	if out[0].Name != "a/b" || !slices.Equal(f, []float32{1, -2, 3.5, 0}) || !slices.Equal(i, []int64{-7}) || out[2].Len() != 0 {
		t.Errorf("read back %v %v %v", out, f, i)
	}
	entries, _ := os.ReadDir(filepath.Dir(path))
	if len(entries) != 1 {
		t.Errorf("temporary files left behind: %v", entries)
	}
	if st, err := os.Stat(path); err != nil || st.Mode().Perm() != 0o644 {
		t.Errorf("file mode %v, %v; want -rw-r--r--", st.Mode(), err)
	}
}

// TestSafetensorsDamage checks that damaged files are reported.
func TestSafetensorsDamage(t *testing.T) {
	header := func(h string) []byte {
		b := make([]byte, 8)
		binary.LittleEndian.PutUint64(b, uint64(len(h)))
		return append(b, h...)
	}
	ok := `{"x":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}}`
	for _, c := range []struct {
		name string
		raw  []byte
		want string
	}{
		{"empty", nil, "too short"},
		{"huge header", []byte{0, 0, 0, 0, 0, 0, 0, 1}, "exceeds"},
		{"short header", header(ok)[:20], "truncated"},
		{"truncated data", append(header(ok), 1, 2, 3), "truncated"},
		{"not json", append(header("{nope"), make([]byte, 8)...), "header JSON"},
		{"bad dtype", append(header(`{"x":{"dtype":"Q8","shape":[1],"data_offsets":[0,1]}}`), 0), "unknown dtype"},
		{"size mismatch", append(header(`{"x":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}}`), make([]byte, 8)...), "do not hold"},
		{"gap", append(header(`{"x":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}}`), make([]byte, 8)...), "gap"},
		{"overlap", append(header(`{"x":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"y":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}}`), make([]byte, 8)...), "overlaps"},
		{"trailing", append(header(ok), make([]byte, 12)...), "follow the last tensor"},
		{"duplicate", append(header(`{"x":{"dtype":"U8","shape":[1],"data_offsets":[0,1]},"x":{"dtype":"U8","shape":[1],"data_offsets":[1,2]}}`), 0, 0), "twice"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, _, err := parseSafetensors(c.raw)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %v, want one containing %q", err, c.want)
			}
		})
	}
}

// TestSaveLoadModel saves a functional model with shared structure and
// every kind of weight, loads it, and compares predictions.
func TestSaveLoadModel(t *testing.T) {
	in := Input(6)
	a := Apply(Dense(5, Activation("tanh"), Name("first")), in)
	b := Apply(Reshape([]int{5, 1}), a)
	c := Apply(Conv1D(2, 2, Padding("same")), b)
	d := Apply(Flatten(), c)
	e := Apply(LayerNormalization(), Apply(Dense(10), d))
	f := Apply(BatchNormalization(Momentum(0.9)), Apply(Concatenate(), e, in))
	out := Apply(Dense(3, Activation("softmax")), Apply(Dropout(0.2), f))
	m, err := Functional("saved", []*Node{in}, []*Node{out})
	if err != nil {
		t.Fatal(err)
	}
	if err := m.InitWeights(3); err != nil {
		t.Fatal(err)
	}
	setWeight(t, m, "batch_normalization/moving_mean", []int{16}, 0.5, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0.25)
	path := filepath.Join(t.TempDir(), "model.safetensors")
	if err := m.Save(path); err != nil {
		t.Fatal(err)
	}
	m2, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if m.Summary() != m2.Summary() {
		t.Errorf("summaries differ:\n%s\n%s", m.Summary(), m2.Summary())
	}
	x := make([]float32, 4*6)
	for i := range x {
		x[i] = float32(i%7) - 3
	}
	var preds [][]float32
	for _, mm := range []*Model{m, m2} {
		if err := mm.SetDevice(testDevice()); err != nil {
			t.Fatal(err)
		}
		p, err := mm.Predict(samples(t, x, []int{6}, nil, nil), quiet)
		if err != nil {
			t.Fatal(err)
		}
		preds = append(preds, p.Data)
	}
	if !slices.Equal(preds[0], preds[1]) {
		t.Errorf("predictions differ: %v vs %v", preds[0], preds[1])
	}
	a1, _ := m.Architecture()
	a2, _ := m2.Architecture()
	if string(a1) != string(a2) {
		t.Errorf("architectures differ:\n%s\n%s", a1, a2)
	}
}

// TestLoadErrors checks that bad model and weight files are reported and
// leave the model as it was.
func TestLoadErrors(t *testing.T) {
	dir := t.TempDir()
	m := must(t)(FashionMLP())
	good := filepath.Join(dir, "mlp.safetensors")
	if err := m.Save(good); err != nil {
		t.Fatal(err)
	}
	raw, _ := os.ReadFile(good)
	truncated := filepath.Join(dir, "truncated.safetensors")
	os.WriteFile(truncated, raw[:len(raw)/2], 0o644)
	cnn := filepath.Join(dir, "cnn.safetensors")
	if err := must(t)(FashionCNN()).Save(cnn); err != nil {
		t.Fatal(err)
	}
	weights := filepath.Join(dir, "w.safetensors")
	if err := m.SaveWeights(weights); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		load func() error
		want string
	}{
		{"truncated model", func() error { _, err := Load(truncated); return err }, "truncated"},
		{"weights as model", func() error { _, err := Load(weights); return err }, "weights only"},
		{"truncated weights", func() error { return m.LoadWeights(truncated) }, "truncated"},
		{"other architecture", func() error { return m.LoadWeights(cnn) }, "does not fit model \"fashion_mlp\""},
		{"peer file into mlp", func() error { return m.LoadWeights("testdata/torch/adam20/init.safetensors") }, "conv2d/kernel"},
	} {
		t.Run(c.name, func(t *testing.T) {
			before := slices.Clone(getWeight(t, m, "dense/kernel"))
			err := c.load()
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %v, want one containing %q", err, c.want)
			}
			if !slices.Equal(before, getWeight(t, m, "dense/kernel")) {
				t.Error("the weights changed")
			}
		})
	}
	// A file whose dense/kernel has the wrong shape.
	bad := filepath.Join(dir, "shape.safetensors")
	ts, _ := m.weightTensors()
	ts[0] = F32Tensor("dense/kernel", []int{10, 10}, make([]float32, 100))
	if err := WriteSafetensors(bad, ts, nil); err != nil {
		t.Fatal(err)
	}
	if err := m.LoadWeights(bad); err == nil || !strings.Contains(err.Error(), "is [784, 128] in the model but [10 10] in the file") {
		t.Errorf("wrong shape: %v", err)
	}
}
