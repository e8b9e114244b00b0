package data

import (
	"errors"
	"math"
	"os"
	"reflect"
	"testing"
)

// The facts below were read from the files with tools other than this
// package (od and Python's gzip module).

func TestRealFashionMNIST(t *testing.T) {
	if _, err := os.Stat(debianFashion); err != nil {
		t.Skipf("Debian's Fashion-MNIST is not installed (apt-get install dataset-fashion-mnist): %v", err)
	}
	isolate(t)
	// No directory, no TARTAN_DATA, an empty Keras cache: the search must
	// end at the system package.
	train, test, err := FashionMNIST(Download(false))
	if err != nil {
		t.Fatal(err)
	}
	checkReal(t, train, []int{60000, 28, 28, 1},
		[]int{6000, 6000, 6000, 6000, 6000, 6000, 6000, 6000, 6000, 6000},
		[]uint8{9, 0, 0, 3, 0, 2, 7, 2, 5, 5}, 76247)
	checkReal(t, test, []int{10000, 28, 28, 1},
		[]int{1000, 1000, 1000, 1000, 1000, 1000, 1000, 1000, 1000, 1000},
		[]uint8{9, 2, 1, 1, 6, 1, 4, 6, 5, 7}, 33456)
	if train.ClassName(int(train.Labels[0])) != "Ankle boot" {
		t.Errorf("the first training image is a %q, want an Ankle boot", train.ClassName(int(train.Labels[0])))
	}
	// Row 14 of the first training image.
	row := []uint8{0, 0, 1, 4, 6, 7, 2, 0, 0, 0, 0, 0, 237, 226, 217, 223, 222, 219, 222, 221, 216, 223, 229, 215, 218, 255, 77, 0}
	if got := train.Images[14*28 : 15*28]; !reflect.DeepEqual(got, row) {
		t.Errorf("row 14 of image 0 = %v, want %v", got, row)
	}
	// The sum of all training pixels is 3431114169, a mean of 0.2860 after
	// scaling, the figure commonly used to normalise Fashion-MNIST.
	var sum int64
	for _, v := range train.Images {
		sum += int64(v)
	}
	if sum != 3431114169 {
		t.Errorf("training pixels sum to %d, want 3431114169", sum)
	}
	// Batch scales the same pixels: image 0 sums to 76247/255.
	x := make([]float32, 784)
	if err := train.Batch([]int{0}, x, nil); err != nil {
		t.Fatal(err)
	}
	var fsum float64
	for _, v := range x {
		fsum += float64(v)
	}
	if math.Abs(fsum-76247.0/255) > 1e-4 {
		t.Errorf("batched image 0 sums to %v, want %v", fsum, 76247.0/255)
	}
}

func TestRealMNIST(t *testing.T) {
	train, test, err := MNIST(Download(false))
	if errors.Is(err, ErrNotFound) {
		t.Skip("MNIST's IDX files are not here; set TARTAN_DATA to a folder that holds them to run this test")
	}
	if err != nil {
		t.Fatal(err)
	}
	checkReal(t, train, []int{60000, 28, 28, 1},
		[]int{5923, 6742, 5958, 6131, 5842, 5421, 5918, 6265, 5851, 5949},
		[]uint8{5, 0, 4, 1, 9, 2, 1, 3, 1, 4}, 27525)
	checkReal(t, test, []int{10000, 28, 28, 1},
		[]int{980, 1135, 1032, 1010, 982, 892, 958, 1028, 974, 1009},
		[]uint8{7, 2, 1, 0, 4, 1, 4, 9, 5, 9}, 18454)
}

// checkReal checks a real split's shape, class histogram, first ten labels
// and the pixel sum of its first image.
func checkReal(t *testing.T, d *Dataset, shape, hist []int, first []uint8, sum0 int) {
	t.Helper()
	if !reflect.DeepEqual(d.Shape(), shape) || d.Classes != 10 {
		t.Fatalf("%s: shape %v, %d classes; want %v, 10", d.Name, d.Shape(), d.Classes, shape)
	}
	if err := d.Validate(); err != nil {
		t.Fatal(err)
	}
	got := make([]int, 10)
	for _, l := range d.Labels {
		got[l]++
	}
	if !reflect.DeepEqual(got, hist) {
		t.Errorf("%s: class histogram %v, want %v", d.Name, got, hist)
	}
	if !reflect.DeepEqual(d.Labels[:10], first) {
		t.Errorf("%s: first labels %v, want %v", d.Name, d.Labels[:10], first)
	}
	px, _, err := d.Sample(0)
	if err != nil {
		t.Fatal(err)
	}
	s := 0
	for _, v := range px {
		s += int(v)
	}
	if s != sum0 {
		t.Errorf("%s: image 0 sums to %d, want %d", d.Name, s, sum0)
	}
}
