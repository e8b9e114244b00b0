package nn

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestLabelsSaveLoad checks that the names given to SetLabels travel
// through Save and a checkpoint, that a model without them loads without
// them, and that names that do not fit the outputs are refused both by
// SetLabels and in a file.
func TestLabelsSaveLoad(t *testing.T) {
	names := []string{"zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine"}
	dir := t.TempDir()
	m := must(t)(FashionMLP())
	if got := m.Labels(); got != nil {
		t.Fatalf("a new model has labels %q", got)
	}
	plain := filepath.Join(dir, "plain.safetensors")
	if err := m.Save(plain); err != nil {
		t.Fatal(err)
	}
	if got := must(t)(Load(plain)).Labels(); got != nil {
		t.Errorf("a model saved without labels loads with %q", got)
	}

	for _, bad := range [][]string{{}, names[:9], append(slices.Clone(names), "ten")} {
		err := m.SetLabels(bad)
		want := "labels for the 10 values of model \"fashion_mlp\"'s output [10]"
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("SetLabels of %d names: %v, want an error with %q", len(bad), err, want)
		}
	}
	if err := m.SetLabels(names); err != nil {
		t.Fatal(err)
	}
	names[0] = "changed after SetLabels"
	if got := m.Labels(); got[0] != "zero" {
		t.Errorf("SetLabels kept the caller's slice: %q", got)
	}
	names[0] = "zero"
	m.Labels()[1] = "changed through Labels"
	if got := m.Labels(); got[1] != "one" {
		t.Errorf("Labels returned the model's own slice: %q", got)
	}

	model := filepath.Join(dir, "model.safetensors")
	if err := m.Save(model); err != nil {
		t.Fatal(err)
	}
	if got := must(t)(Load(model)).Labels(); !slices.Equal(got, names) {
		t.Errorf("Load restored labels %q, want %q", got, names)
	}
	if err := m.Compile(Adam(1e-3), SparseCategoricalCrossentropy(), OnDevice(testDevice())); err != nil {
		t.Fatal(err)
	}
	ck := filepath.Join(dir, "ck.safetensors")
	if err := m.SaveCheckpoint(ck, 0); err != nil {
		t.Fatal(err)
	}
	if got := must(t)(Load(ck)).Labels(); !slices.Equal(got, names) {
		t.Errorf("Load of a checkpoint restored labels %q, want %q", got, names)
	}
	if err := m.SetLabels(nil); err != nil || m.Labels() != nil {
		t.Errorf("SetLabels(nil): %v, labels %q", err, m.Labels())
	}

	// Files whose labels do not fit: rewritten with valid checksums, so
	// only the labels are wrong.
	ts, meta, err := ReadSafetensors(model)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ labels, want string }{
		{`["a","b"]`, `"labels" metadata: 2 labels for the 10 values`},
		{`[]`, `"labels" metadata: 0 labels for the 10 values`},
		{`{"a":1}`, `bad "labels" metadata (a JSON list of strings)`},
		{`[1,2,3,4,5,6,7,8,9,10]`, `bad "labels" metadata`},
	} {
		meta["labels"] = c.labels
		delete(meta, checksumsKey)
		bad := filepath.Join(dir, "bad.safetensors")
		if err := WriteSafetensors(bad, ts, meta); err != nil {
			t.Fatal(err)
		}
		_, err := Load(bad)
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), bad) {
			t.Errorf("labels %s: Load gave %v, want an error naming %s with %q", c.labels, err, bad, c.want)
		}
	}
}
