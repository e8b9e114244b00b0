package data_test

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"

	"github.com/tartanml/tartan/data"
)

// idx encodes an IDX file of unsigned bytes: two zero bytes, the type code
// 0x08 (uint8), the number of dimensions, each dimension as a big-endian
// uint32, then the elements.
func idx(dims []int, elems []byte) []byte {
	var b bytes.Buffer
	b.Write([]byte{0, 0, byte(data.Uint8), byte(len(dims))})
	for _, d := range dims {
		binary.Write(&b, binary.BigEndian, uint32(d))
	}
	b.Write(elems)
	return b.Bytes()
}

// ReadIDX parses one IDX file, the format of MNIST and Fashion-MNIST.
func ExampleReadIDX() {
	x, err := data.ReadIDX(bytes.NewReader(idx([]int{2, 3}, []byte{1, 2, 3, 4, 5, 6})))
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(x.Type, x.Dims, x.Data)

	// A damaged file is an error that says what is wrong.
	_, err = data.ReadIDX(bytes.NewReader(idx([]int{2, 3}, []byte{1, 2, 3})))
	fmt.Println(err)
	// Output:
	// uint8 [2 3] [1 2 3 4 5 6]
	// data: IDX stream: payload does not match the dimensions: dimensions 2×3 of uint8 need 6 payload bytes, but only 3 follow the header: the file is cut short or its header is wrong
}

// FashionMNIST reads the data set from the directory given by Dir (the
// command line's --data), else $TARTAN_DATA, the Keras cache or where
// Debian's dataset-fashion-mnist installs it. Here a miniature copy, three
// training images and two test images of 28×28 pixels, is written to a
// temporary directory under the four file names of the real data set
// (uncompressed; the .gz names are read as well).
func ExampleFashionMNIST() {
	dir, err := os.MkdirTemp("", "fashion")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(dir)
	write := func(name string, dims []int, elems []byte) {
		if err == nil {
			err = os.WriteFile(filepath.Join(dir, name), idx(dims, elems), 0o644)
		}
	}
	images := func(n int) []byte {
		px := make([]byte, n*28*28)
		for i := range px {
			px[i] = byte(i / (28 * 28) * 100) // image i is uniformly 100·i
		}
		return px
	}
	write("train-images-idx3-ubyte", []int{3, 28, 28}, images(3))
	write("train-labels-idx1-ubyte", []int{3}, []byte{9, 0, 3})
	write("t10k-images-idx3-ubyte", []int{2, 28, 28}, images(2))
	write("t10k-labels-idx1-ubyte", []int{2}, []byte{7, 1})
	if err != nil {
		fmt.Println(err)
		return
	}

	train, test, err := data.FashionMNIST(data.Dir(dir))
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("train:", train.Shape(), "test:", test.Shape(), "classes:", train.Classes)
	for i := range train.Len() {
		_, label, _ := train.Sample(i)
		fmt.Printf("sample %d: label %d (%s)\n", i, label, train.ClassName(label))
	}

	// Batch scales pixels to [0, 1] as float32, channels-last.
	x := make([]float32, 2*28*28)
	y := make([]int32, 2)
	if err := train.Batch([]int{2, 1}, x, y); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("batch labels %v, first pixels %.3f and %.3f\n", y, x[0], x[28*28])

	// Split holds out the last fraction, as Keras's validation_split does.
	tr, val, err := train.Split(1.0 / 3)
	fmt.Println("split:", tr.Len(), val.Len(), err)
	// Output:
	// train: [3 28 28 1] test: [2 28 28 1] classes: 10
	// sample 0: label 9 (Ankle boot)
	// sample 1: label 0 (T-shirt/top)
	// sample 2: label 3 (Dress)
	// batch labels [3 0], first pixels 0.784 and 0.392
	// split: 2 1 <nil>
}
