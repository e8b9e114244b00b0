package data

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// An explicit data setting that fails is an error naming the setting and
// why, even though other copies of the data set exist.
func TestExplicitDataSettingDoesNotFallBack(t *testing.T) {
	tests := []struct {
		name  string
		env   bool // TARTAN_DATA rather than Dir
		setup func(t *testing.T, root string) string
		want  error
		msg   []string
	}{
		{"TARTAN_DATA does not exist", true, func(t *testing.T, root string) string { return filepath.Join(root, "nowhere") },
			ErrNotFound, []string{"TARTAN_DATA=%s", "%s does not exist", "Unset TARTAN_DATA"}},
		{"TARTAN_DATA is a file", true, func(t *testing.T, root string) string { return writeFile(t, root, "data.txt", []byte("x")) },
			ErrUnusable, []string{"TARTAN_DATA=%s", "%s is a regular file, not a directory"}},
		{"TARTAN_DATA lacks the files", true, func(t *testing.T, root string) string {
			d := filepath.Join(root, "empty")
			writeFile(t, d, "README", []byte("x"))
			return d
		}, ErrNotFound, []string{"Fashion-MNIST is not in TARTAN_DATA=%s", "lacks train-images-idx3-ubyte.gz"}},
		{"TARTAN_DATA holds part of the files", true, func(t *testing.T, root string) string {
			d := filepath.Join(root, "part")
			writeIDXDataset(t, filepath.Join(d, "fashion-mnist"), 3, 2, true)
			removeFile(t, filepath.Join(d, "fashion-mnist", testImagesIDX))
			return d
		}, ErrNotFound, []string{"TARTAN_DATA=%s", "%s/fashion-mnist lacks t10k-images-idx3-ubyte.gz"}},
		{"data directory does not exist", false, func(t *testing.T, root string) string { return filepath.Join(root, "nowhere") },
			ErrNotFound, []string{"the data directory %s", "%s does not exist"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			isolate(t)
			root := t.TempDir()
			// Copies that the old behaviour fell back to.
			writeIDXDataset(t, filepath.Join(root, "keras", "datasets", "fashion-mnist"), 7, 2, true)
			t.Setenv("KERAS_HOME", filepath.Join(root, "keras"))
			writeIDXDataset(t, filepath.Join(root, "share", "fashion-mnist"), 8, 2, true)
			setting := tc.setup(t, root)
			opts := []Option{withSysRoot(filepath.Join(root, "share")), Download(false)}
			if tc.env {
				t.Setenv("TARTAN_DATA", setting)
			} else {
				opts = append(opts, Dir(setting))
			}
			train, _, err := FashionMNIST(opts...)
			if err == nil {
				t.Fatalf("read a training set of %d from another place", train.Len())
			}
			if !errors.Is(err, tc.want) {
				t.Fatalf("error %v; want one wrapping %q", err, tc.want)
			}
			for _, m := range tc.msg {
				if m = strings.ReplaceAll(m, "%s", setting); !strings.Contains(err.Error(), m) {
					t.Errorf("error does not say %q:\n%v", m, err)
				}
			}
		})
	}
}

// removeFile removes path, failing the test when it cannot.
func removeFile(t *testing.T, path string) {
	t.Helper()
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
}
