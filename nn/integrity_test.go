package nn

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// trainedCheckpoint trains the small classifier for an epoch and writes a
// checkpoint of it.
func trainedCheckpoint(t *testing.T, dir string) string {
	t.Helper()
	x, y := classification(32, 4)
	m := classifier(t, 1, 0)
	if _, err := m.Fit(samples(t, x, []int{4}, y, nil), BatchSize(8), quiet); err != nil {
		t.Fatal(err)
	}
	ck := filepath.Join(dir, "ck.safetensors")
	if err := m.SaveCheckpoint(ck, 1); err != nil {
		t.Fatal(err)
	}
	return ck
}

// tensorSpans returns where each tensor's data lies in a safetensors file:
// the data part's start and, for every byte after it, the tensor it
// belongs to.
func tensorSpans(t *testing.T, raw []byte) (start int, owner []string) {
	t.Helper()
	ts, _, err := parseSafetensors(raw)
	if err != nil {
		t.Fatal(err)
	}
	start = 8 + int(binary.LittleEndian.Uint64(raw))
	for _, x := range ts {
		for range x.Data {
			owner = append(owner, x.Name)
		}
	}
	if start+len(owner) != len(raw) {
		t.Fatalf("data part of %d bytes after %d, file %d", len(owner), start, len(raw))
	}
	return start, owner
}

// loadCheckpointBytes is LoadCheckpoint of a file at path holding raw,
// without writing it.
func loadCheckpointBytes(m *Model, path string, raw []byte) error {
	ts, meta, err := parseFile(path, raw)
	if err != nil {
		return fmt.Errorf("nn: loading checkpoint: %w", err)
	}
	_, err = m.loadCheckpoint(path, ts, meta)
	return err
}

// loadModelBytes is Load of a file at path holding raw, without writing
// it.
func loadModelBytes(path string, raw []byte) error {
	ts, meta, err := parseFile(path, raw)
	if err != nil {
		return fmt.Errorf("nn: loading model: %w", err)
	}
	_, err = loadModel(path, ts, meta)
	return err
}

// TestCheckpointBitFlips flips 200 random bits of a checkpoint's data, one
// at a time: every flip is reported, naming the file and the tensor, and
// the model is left as it was.
func TestCheckpointBitFlips(t *testing.T) {
	dir := t.TempDir()
	ck := trainedCheckpoint(t, dir)
	raw, err := os.ReadFile(ck)
	if err != nil {
		t.Fatal(err)
	}
	start, owner := tensorSpans(t, raw)
	m := classifier(t, 1, 0)
	before := slices.Clone(getWeight(t, m, "dense/kernel"))
	bad := filepath.Join(dir, "flipped.safetensors")
	r := rand.New(rand.NewPCG(9, 9))
	for i := range 200 {
		at := r.IntN(len(owner))
		bit := byte(1) << r.IntN(8)
		flipped := slices.Clone(raw)
		flipped[start+at] ^= bit
		err := loadCheckpointBytes(m, bad, flipped)
		want := `tensor "` + owner[at] + `" does not match its checksum`
		if err == nil || !strings.Contains(err.Error(), bad) || !strings.Contains(err.Error(), want) {
			t.Fatalf("flip %d (byte %d of the data, bit %#x): error %v; want one naming %s and containing %q", i, at, bit, err, bad, want)
		}
	}
	if !slices.Equal(before, getWeight(t, m, "dense/kernel")) {
		t.Error("the weights changed")
	}
	// One of them through the file, as a user meets it.
	flipped := slices.Clone(raw)
	flipped[len(raw)-1] ^= 0x10
	if err := os.WriteFile(bad, flipped, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := m.LoadCheckpoint(bad); err == nil || !strings.Contains(err.Error(), "nn: loading checkpoint: "+bad+": not a valid safetensors file: tensor \"rng/seed\" does not match its checksum (crc32c ") {
		t.Errorf("error %v", err)
	}
	if _, err := m.LoadCheckpoint(ck); err != nil {
		t.Fatalf("the intact checkpoint: %v", err)
	}
}

// TestModelFileBitFlips flips every bit of a model file's header and 200
// random bits of its data: every flip is an error.
func TestModelFileBitFlips(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "m.safetensors")
	if err := must(t)(Sequential("s", Input(3), Dense(2), Dropout(0.5), Dense(2))).Save(path); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	start, owner := tensorSpans(t, raw)
	bad := filepath.Join(dir, "flipped.safetensors")
	try := func(at int, bit byte) error {
		flipped := slices.Clone(raw)
		flipped[at] ^= bit
		return loadModelBytes(bad, flipped)
	}
	for at := range start {
		for b := range 8 {
			if err := try(at, 1<<b); err == nil {
				t.Errorf("flipping bit %d of header byte %d (%q in %q) went unnoticed", b, at, raw[at], raw[max(0, at-20):min(start, at+20)])
			}
		}
	}
	r := rand.New(rand.NewPCG(3, 3))
	for range 200 {
		at := r.IntN(len(owner))
		err := try(start+at, 1<<r.IntN(8))
		if err == nil || !strings.Contains(err.Error(), `tensor "`+owner[at]+`" does not match its checksum`) {
			t.Fatalf("data byte %d: error %v", at, err)
		}
	}
}

// rewrite writes the tensors and metadata of the safetensors file at src
// to dst after edit changes them; the checksums are recomputed, so the file
// is intact as a file.
func rewrite(t *testing.T, src, dst string, edit func(ts []SafeTensor, meta map[string]string)) {
	t.Helper()
	ts, meta, err := ReadSafetensors(src)
	if err != nil {
		t.Fatal(err)
	}
	delete(meta, "checksums")
	edit(ts, meta)
	if err := WriteSafetensors(dst, ts, meta); err != nil {
		t.Fatal(err)
	}
}

// setElement sets element i of the F32 tensor called name.
func setElement(t *testing.T, ts []SafeTensor, name string, i int, v float32) {
	t.Helper()
	for k := range ts {
		if ts[k].Name == name {
			binary.LittleEndian.PutUint32(ts[k].Data[4*i:], math.Float32bits(v))
			return
		}
	}
	t.Fatalf("no tensor %s", name)
}

// TestLoadRejectsImpossibleValues loads files whose values no training
// produces: non-finite weights and optimizer state, negative second
// moments, a negative step counter. Each is an error naming the file and
// the tensor, and changes nothing.
func TestLoadRejectsImpossibleValues(t *testing.T) {
	dir := t.TempDir()
	ck := trainedCheckpoint(t, dir)
	model := filepath.Join(dir, "model.safetensors")
	if err := classifier(t, 1, 0).Save(model); err != nil {
		t.Fatal(err)
	}
	bad := filepath.Join(dir, "bad.safetensors")
	nan := float32(math.NaN())
	inf := float32(math.Inf(1))
	for _, c := range []struct {
		name string
		src  string
		edit func(ts []SafeTensor)
		load func(m *Model) error
		want string
	}{
		{"NaN weight in a checkpoint", ck, func(ts []SafeTensor) { setElement(t, ts, "dense/kernel", 5, nan) }, nil,
			"weight dense/kernel holds NaN at element 5 of 32"},
		{"infinite weight in a checkpoint", ck, func(ts []SafeTensor) { setElement(t, ts, "dense_1/bias", 2, -inf) }, nil,
			"weight dense_1/bias holds -Inf at element 2 of 3"},
		{"negative Adam second moment", ck, func(ts []SafeTensor) { setElement(t, ts, "optimizer/v/dense/kernel", 7, -0.25) }, nil,
			"optimizer/v/dense/kernel holds -0.25 at element 7 of 32, but it is a running mean of squared gradients, never negative"},
		{"NaN first moment", ck, func(ts []SafeTensor) { setElement(t, ts, "optimizer/m/dense/bias", 0, nan) }, nil,
			"optimizer state optimizer/m/dense/bias holds NaN at element 0 of 8"},
		{"infinite learning rate", ck, func(ts []SafeTensor) { setElement(t, ts, "optimizer/learning_rate", 0, inf) }, nil,
			"optimizer state optimizer/learning_rate holds +Inf at element 0 of 1"},
		{"negative step counter", ck, func(ts []SafeTensor) {
			for k := range ts {
				if ts[k].Name == "optimizer/iterations" {
					binary.LittleEndian.PutUint64(ts[k].Data, uint64(math.MaxUint64)) // -1
				}
			}
		}, nil, "the step counter optimizer/iterations is -1, below 0"},
		{"NaN weight in a model file", model, func(ts []SafeTensor) { setElement(t, ts, "dense/bias", 3, nan) },
			func(*Model) error { _, err := Load(bad); return err }, "weight dense/bias holds NaN at element 3 of 8"},
		{"NaN weight through LoadWeights", model, func(ts []SafeTensor) { setElement(t, ts, "dense/kernel", 0, nan) },
			func(m *Model) error { return m.LoadWeights(bad) }, "weight dense/kernel holds NaN at element 0 of 32"},
	} {
		t.Run(c.name, func(t *testing.T) {
			rewrite(t, c.src, bad, func(ts []SafeTensor, _ map[string]string) { c.edit(ts) })
			m := classifier(t, 1, 0)
			before := slices.Clone(getWeight(t, m, "dense/kernel"))
			load := c.load
			if load == nil {
				load = func(m *Model) error { _, err := m.LoadCheckpoint(bad); return err }
			}
			err := load(m)
			if err == nil || !strings.Contains(err.Error(), bad) || !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %v\nwant one naming %s and containing %q", err, bad, c.want)
			}
			if !slices.Equal(before, getWeight(t, m, "dense/kernel")) {
				t.Error("the weights changed")
			}
		})
	}
	// A negative value in a slot that may be negative (momentum) loads.
	sgd := classifier(t, 1, 0)
	if err := sgd.Compile(SGD(0.1, Momentum(0.5)), SparseCategoricalCrossentropy(), OnDevice(testDevice())); err != nil {
		t.Fatal(err)
	}
	sgdCk := filepath.Join(dir, "sgd.safetensors")
	if err := sgd.SaveCheckpoint(sgdCk, 0); err != nil {
		t.Fatal(err)
	}
	rewrite(t, sgdCk, bad, func(ts []SafeTensor, _ map[string]string) {
		setElement(t, ts, "optimizer/momentum/dense/kernel", 1, -3)
	})
	if _, err := sgd.LoadCheckpoint(bad); err != nil {
		t.Errorf("a negative momentum: %v", err)
	}
}

// TestRMSpropNegativeVelocity checks RMSprop's mean square slot.
func TestRMSpropNegativeVelocity(t *testing.T) {
	dir := t.TempDir()
	m := classifier(t, 1, 0)
	if err := m.Compile(RMSprop(0.01), SparseCategoricalCrossentropy(), OnDevice(testDevice())); err != nil {
		t.Fatal(err)
	}
	ck := filepath.Join(dir, "ck.safetensors")
	if err := m.SaveCheckpoint(ck, 0); err != nil {
		t.Fatal(err)
	}
	bad := filepath.Join(dir, "bad.safetensors")
	rewrite(t, ck, bad, func(ts []SafeTensor, _ map[string]string) {
		setElement(t, ts, "optimizer/velocity/dense_1/kernel", 4, -1e-3)
	})
	_, err := m.LoadCheckpoint(bad)
	if err == nil || !strings.Contains(err.Error(), "optimizer/velocity/dense_1/kernel holds -0.001 at element 4 of 24") {
		t.Errorf("error %v", err)
	}
}

// TestFileVersions checks which files without checksums load: version 1
// files, written before checksums, do; a version 2 file that lacks them
// and a file of an unknown version do not.
func TestFileVersions(t *testing.T) {
	dir := t.TempDir()
	m := classifier(t, 1, 0)
	ck := filepath.Join(dir, "ck.safetensors")
	if err := m.SaveCheckpoint(ck, 0); err != nil {
		t.Fatal(err)
	}
	model := filepath.Join(dir, "model.safetensors")
	if err := m.Save(model); err != nil {
		t.Fatal(err)
	}
	weights := filepath.Join(dir, "w.safetensors")
	if err := m.SaveWeights(weights); err != nil {
		t.Fatal(err)
	}
	// unchecked writes src's contents to dst with the given version and no
	// checksums, as older versions wrote them.
	unchecked := func(src, version string) string {
		ts, meta, err := ReadSafetensors(src)
		if err != nil {
			t.Fatal(err)
		}
		delete(meta, "checksums")
		if version == "" {
			delete(meta, "version")
		} else {
			meta["version"] = version
		}
		dst := filepath.Join(dir, "v"+version+"-"+filepath.Base(src))
		if err := writeSafetensors(dst, ts, meta); err != nil {
			t.Fatal(err)
		}
		return dst
	}
	loadCk := func(p string) error { _, err := m.LoadCheckpoint(p); return err }
	loadModel := func(p string) error { _, err := Load(p); return err }
	for _, c := range []struct {
		name string
		path string
		load func(string) error
		want string // "" for success
	}{
		{"version 1 checkpoint", unchecked(ck, "1"), loadCk, ""},
		{"version 1 model", unchecked(model, "1"), loadModel, ""},
		{"weights without a version", unchecked(weights, ""), m.LoadWeights, ""},
		{"version 2 checkpoint without checksums", unchecked(ck, "2"), loadCk, "a version 2 file without its checksums"},
		{"version 2 model without checksums", unchecked(model, "2"), loadModel, "a version 2 file without its checksums"},
		{"version 2 weights without checksums", unchecked(weights, "2"), m.LoadWeights, "a version 2 file without its checksums"},
		{"unknown version", unchecked(model, "3"), loadModel, `tartan.model file version "3" is not one this build reads (1 or 2`},
		{"model without a version", unchecked(model, ""), loadModel, `tartan.model file version "" is not one this build reads`},
		{"current checkpoint", ck, loadCk, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := c.load(c.path)
			switch {
			case c.want == "" && err != nil:
				t.Errorf("error %v", err)
			case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), c.path)):
				t.Errorf("error %v, want one naming the file and containing %q", err, c.want)
			}
		})
	}
	// Other tools' files carry no checksums and load (the PyTorch file).
	if err := must(t)(FashionCNN()).LoadWeights("testdata/torch/adam20/init.safetensors"); err != nil {
		t.Error(err)
	}
}
