package data

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// checkSmallSplit checks a split written by writeIDXDataset or smallIDXSet:
// n 28×28×1 images, image i with pixels pixel(i, k), label (i+first)%10.
func checkSmallSplit(t *testing.T, d *Dataset, name string, n, first int) {
	t.Helper()
	if d.Name != name || !reflect.DeepEqual(d.Shape(), []int{n, 28, 28, 1}) || d.Classes != 10 {
		t.Fatalf("%s: name %q shape %v classes %d, want %q [%d 28 28 1] 10", name, d.Name, d.Shape(), d.Classes, name, n)
	}
	for i := 0; i < n; i++ {
		if d.Labels[i] != uint8((i+first)%10) {
			t.Fatalf("%s: label %d = %d, want %d", name, i, d.Labels[i], (i+first)%10)
		}
		for _, k := range []int{0, 1, 27, 28, 783} {
			if got := d.Images[i*784+k]; got != pixel(i, k) {
				t.Fatalf("%s: image %d pixel %d = %d, want %d", name, i, k, got, pixel(i, k))
			}
		}
	}
}

func TestLoadFromDir(t *testing.T) {
	tests := []struct {
		name       string
		sub        string // where the files go under the --data folder
		compressed bool
	}{
		{"gzipped, in the folder itself", "", true},
		{"uncompressed, in the folder itself", "", false},
		{"gzipped, in a fashion-mnist subfolder", "fashion-mnist", true},
		{"uncompressed, in a fashion_mnist subfolder", "fashion_mnist", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			isolate(t)
			dir := t.TempDir()
			writeIDXDataset(t, filepath.Join(dir, tc.sub), 12, 5, tc.compressed)
			train, test, err := FashionMNIST(Dir(dir), Download(false), withSysRoot(t.TempDir()))
			if err != nil {
				t.Fatal(err)
			}
			checkSmallSplit(t, train, "fashion-mnist/train", 12, 0)
			checkSmallSplit(t, test, "fashion-mnist/test", 5, 3)
			if train.ClassName(0) != "T-shirt/top" || train.ClassName(9) != "Ankle boot" || test.ClassName(5) != "Sandal" {
				t.Errorf("class names %q", train.ClassNames)
			}
		})
	}
}

func TestMNISTLoads(t *testing.T) {
	isolate(t)
	dir := t.TempDir()
	writeIDXDataset(t, filepath.Join(dir, "mnist"), 4, 3, true)
	train, test, err := MNIST(Dir(dir), withSysRoot(t.TempDir()))
	if err != nil {
		t.Fatal(err)
	}
	checkSmallSplit(t, train, "mnist/train", 4, 0)
	checkSmallSplit(t, test, "mnist/test", 3, 3)
	if train.ClassName(7) != "7" {
		t.Errorf("MNIST class 7 is named %q", train.ClassName(7))
	}
}

func TestSearchOrder(t *testing.T) {
	// Each place holds a data set of a different size, so the training set's
	// length tells which place was read.
	type places struct{ dir, env, cache, system bool }
	tests := []struct {
		name string
		have places
		want int
	}{
		{"data directory first", places{true, true, true, true}, 11},
		{"then TARTAN_DATA", places{false, true, true, true}, 12},
		{"then the Keras cache", places{false, false, true, true}, 13},
		{"then the system package", places{false, false, false, true}, 14},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			isolate(t)
			root := t.TempDir()
			var opts []Option
			if tc.have.dir {
				writeIDXDataset(t, filepath.Join(root, "dir"), 11, 1, true)
				opts = append(opts, Dir(filepath.Join(root, "dir")))
			}
			if tc.have.env {
				writeIDXDataset(t, filepath.Join(root, "env", "fashion-mnist"), 12, 1, false)
				t.Setenv("TARTAN_DATA", filepath.Join(root, "env"))
			}
			if tc.have.cache {
				writeIDXDataset(t, filepath.Join(root, "keras", "datasets", "fashion-mnist"), 13, 1, true)
				t.Setenv("KERAS_HOME", filepath.Join(root, "keras"))
			}
			if tc.have.system {
				writeIDXDataset(t, filepath.Join(root, "share", "fashion-mnist"), 14, 1, true)
			}
			opts = append(opts, withSysRoot(filepath.Join(root, "share")), Download(false))
			train, _, err := FashionMNIST(opts...)
			if err != nil {
				t.Fatal(err)
			}
			if train.Len() != tc.want {
				t.Fatalf("read a training set of %d, want the one of %d", train.Len(), tc.want)
			}
		})
	}
}

func TestHomeKerasCache(t *testing.T) {
	isolate(t)
	writeIDXDataset(t, filepath.Join(os.Getenv("HOME"), ".keras", "datasets", "fashion-mnist"), 6, 2, true)
	train, _, err := FashionMNIST(Download(false), withSysRoot(t.TempDir()))
	if err != nil {
		t.Fatal(err)
	}
	if train.Len() != 6 {
		t.Fatalf("read %d training samples, want 6", train.Len())
	}
	// The Keras cache does not count as holding MNIST when only its
	// fashion-mnist folder has IDX files.
	if _, _, err := MNIST(Download(false), withSysRoot(t.TempDir())); !errors.Is(err, ErrNotFound) {
		t.Fatalf("MNIST: error %v, want ErrNotFound", err)
	}
}

func TestDirLackingFiles(t *testing.T) {
	isolate(t)
	dir := t.TempDir()
	writeIDXDataset(t, dir, 3, 2, true)
	os.Remove(filepath.Join(dir, testLabelsIDX))
	// Another copy elsewhere must not be used when a directory is given.
	writeIDXDataset(t, filepath.Join(os.Getenv("HOME"), ".keras", "datasets", "fashion-mnist"), 6, 2, true)
	_, _, err := FashionMNIST(Dir(dir), withSysRoot(t.TempDir()))
	if !errors.Is(err, ErrNotFound) {
		t.Fatalf("error %v, want ErrNotFound", err)
	}
	for _, s := range []string{dir, "lacks t10k-labels-idx1-ubyte.gz or t10k-labels-idx1-ubyte", "--data DIR", "apt-get install dataset-fashion-mnist"} {
		if !strings.Contains(err.Error(), s) {
			t.Errorf("error does not say %q:\n%v", s, err)
		}
	}
}

func TestNotFoundExplainsHowToGetTheData(t *testing.T) {
	isolate(t)
	_, _, err := FashionMNIST(Download(false), withSysRoot(t.TempDir()))
	if !errors.Is(err, ErrNotFound) {
		t.Fatalf("error %v, want ErrNotFound", err)
	}
	msg := err.Error()
	for _, s := range []string{
		"Fashion-MNIST not found",
		"TARTAN_DATA (not set)",
		filepath.Join(os.Getenv("HOME"), ".keras", "datasets", "fashion-mnist"),
		"Downloading is turned off",
		"apt-get install dataset-fashion-mnist",
		"--data DIR or set TARTAN_DATA=DIR",
		"https://storage.googleapis.com/tensorflow/tf-keras-datasets/train-images-idx3-ubyte.gz",
		"https://storage.googleapis.com/tensorflow/tf-keras-datasets/t10k-labels-idx1-ubyte.gz",
		"http://fashion-mnist.s3-website.eu-central-1.amazonaws.com/",
		"train-labels-idx1-ubyte",
	} {
		if !strings.Contains(msg, s) {
			t.Errorf("message does not say %q:\n%s", s, msg)
		}
	}
	_, _, err = CIFAR10(Download(false), withSysRoot(t.TempDir()))
	if !errors.Is(err, ErrNotFound) || !strings.Contains(err.Error(), "https://www.cs.toronto.edu/~kriz/cifar-10-binary.tar.gz") ||
		!strings.Contains(err.Error(), "data_batch_1.bin") || strings.Contains(err.Error(), "apt-get") {
		t.Errorf("CIFAR-10 message:\n%v", err)
	}
}

func TestWrongFiles(t *testing.T) {
	img := func(n, h, w int) []byte { b, _ := smallIDXSet(n, h, w, 0); return b }
	lbl := func(n int) []byte { _, b := smallIDXSet(n, 1, 1, 0); return b }
	tests := []struct {
		name    string
		replace map[string][]byte // files written over a good set of 6 + 4
		culprit string            // the file the error must name
		want    error
		msg     string
	}{
		{"label count differs", map[string][]byte{trainLabelsIDX: lbl(5)}, trainLabelsIDX, ErrBadContent, "holds 5 labels, but train-images-idx3-ubyte holds 6 images"},
		{"images of the wrong size", map[string][]byte{testImagesIDX: img(4, 32, 32)}, testImagesIDX, ErrBadContent, "4×32×32 array of uint8, but fashion-mnist/test images are a uint8 array of N×28×28"},
		{"label out of range", map[string][]byte{trainLabelsIDX: idxBytes(Uint8, []int{6}, []byte{0, 1, 2, 10, 4, 5})}, trainLabelsIDX, ErrBadContent, "label 10 of sample 3"},
		{"labels where images belong", map[string][]byte{trainImagesIDX: lbl(6)}, trainImagesIDX, ErrBadContent, "looks like a label file"},
		{"images where labels belong", map[string][]byte{testLabelsIDX: img(4, 28, 28)}, testLabelsIDX, ErrBadContent, "looks like an image file"},
		{"int32 images", map[string][]byte{trainImagesIDX: idxBytes(Int32, []int{6, 28, 28}, make([]byte, 4*6*784))}, trainImagesIDX, ErrBadContent, "of int32"},
		{"truncated file", map[string][]byte{testImagesIDX: img(4, 28, 28)[:100]}, testImagesIDX, ErrPayloadSize, "need 3136 payload bytes, but only 84"},
		{"not IDX at all", map[string][]byte{trainLabelsIDX: []byte("<html>404</html>")}, trainLabelsIDX, ErrBadMagic, "3c 68"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			isolate(t)
			dir := t.TempDir()
			writeIDXDataset(t, dir, 6, 4, false)
			for name, b := range tc.replace {
				writeFile(t, dir, strings.TrimSuffix(name, ".gz"), b)
			}
			_, _, err := FashionMNIST(Dir(dir), withSysRoot(t.TempDir()))
			if !errors.Is(err, tc.want) {
				t.Fatalf("error %v, want one wrapping %q", err, tc.want)
			}
			path := filepath.Join(dir, strings.TrimSuffix(tc.culprit, ".gz"))
			if !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), tc.msg) {
				t.Fatalf("error %q should name %s and say %q", err, path, tc.msg)
			}
		})
	}
}
