package nn_test

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"

	"github.com/tartanml/tartan/backend/cpu"
	"github.com/tartanml/tartan/data"
	"github.com/tartanml/tartan/device"
	"github.com/tartanml/tartan/nn"
)

// points returns n points of the plane, drawn from a fixed seed, labelled 1
// above the diagonal (y > x) and 0 below it.
func points(n int) (x, y *nn.Array) {
	r := rand.New(rand.NewPCG(1, 2))
	xs := make([]float32, 2*n)
	ys := make([]float32, n)
	for i := range n {
		a, b := r.Float32()*2-1, r.Float32()*2-1
		xs[2*i], xs[2*i+1] = a, b
		if b > a {
			ys[i] = 1
		}
	}
	x, _ = nn.NewArray(xs, n, 2)
	y, _ = nn.NewArray(ys, n)
	return x, y
}

// Build a Sequential model, compile it for a device, train it on a small
// synthetic problem, evaluate and predict. A program chooses its device with
// device.Select (the --device flag, $TARTAN_DEVICE, the configured device or
// the best one available); this example uses Tartan's CPU backend directly so
// that its output is the same on every machine.
func Example() {
	model, err := nn.Sequential("diagonal", nn.Input(2),
		nn.Dense(16, nn.Activation("relu")),
		nn.Dense(2, nn.Activation("softmax")))
	if err != nil {
		fmt.Println(err)
		return
	}
	dev := cpu.New()
	defer dev.Close()
	err = model.Compile(nn.Adam(0.01), nn.SparseCategoricalCrossentropy(),
		nn.Metrics("accuracy"), nn.OnDevice(dev), nn.Seed(1))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer model.Close()

	x, y := points(512)
	train, err := nn.FromArrays(x, y)
	if err != nil {
		fmt.Println(err)
		return
	}
	hist, err := model.Fit(train, nn.Epochs(20), nn.BatchSize(32), nn.ValidationSplit(0.25), nn.Verbose(0))
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("epochs run:", len(hist.Epochs))
	acc := hist.Metrics["val_accuracy"]
	fmt.Println("validation accuracy above 90%:", acc[len(acc)-1] > 0.9)

	logs, err := model.Evaluate(train, nn.Verbose(0))
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("evaluated:", logs.Keys())

	// Predict takes samples without targets and returns one row per sample.
	q, _ := nn.NewArray([]float32{-0.5, 0.5, 0.5, -0.5}, 2, 2)
	qs, _ := nn.FromArrays(q, nil)
	p, err := model.Predict(qs, nn.Verbose(0))
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("prediction shape:", p.Shape)
	for i := range 2 {
		row := p.Data[2*i : 2*i+2]
		class := 0
		if row[1] > row[0] {
			class = 1
		}
		fmt.Printf("sample %d: class %d, probabilities sum to %.2f\n", i, class, row[0]+row[1])
	}
	// Output:
	// epochs run: 20
	// validation accuracy above 90%: true
	// evaluated: [accuracy loss]
	// prediction shape: [2 2]
	// sample 0: class 1, probabilities sum to 1.00
	// sample 1: class 0, probabilities sum to 1.00
}

// Summary describes a model as Keras 3 prints it.
func ExampleModel_Summary() {
	model, err := nn.Sequential("small_cnn", nn.Input(28, 28, 1),
		nn.Conv2D(8, 3, nn.Padding("same"), nn.Activation("relu")),
		nn.MaxPooling2D(2),
		nn.Flatten(),
		nn.Dense(10, nn.Activation("softmax")))
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Print(model.Summary())
	// Output:
	// Model: "small_cnn"
	// ┏━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━┳━━━━━━━━━━━━━━━━━━━━━━━━┳━━━━━━━━━━━━━━━┓
	// ┃ Layer (type)                    ┃ Output Shape           ┃       Param # ┃
	// ┡━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━╇━━━━━━━━━━━━━━━━━━━━━━━━╇━━━━━━━━━━━━━━━┩
	// │ conv2d (Conv2D)                 │ (None, 28, 28, 8)      │            80 │
	// ├─────────────────────────────────┼────────────────────────┼───────────────┤
	// │ max_pooling2d (MaxPooling2D)    │ (None, 14, 14, 8)      │             0 │
	// ├─────────────────────────────────┼────────────────────────┼───────────────┤
	// │ flatten (Flatten)               │ (None, 1568)           │             0 │
	// ├─────────────────────────────────┼────────────────────────┼───────────────┤
	// │ dense (Dense)                   │ (None, 10)             │        15,690 │
	// └─────────────────────────────────┴────────────────────────┴───────────────┘
	//  Total params: 15,770 (61.60 KB)
	//  Trainable params: 15,770 (61.60 KB)
	//  Non-trainable params: 0 (0.00 B)
}

// Save writes architecture and weights to one safetensors file; Load
// rebuilds the model from it, with no device: give it one (SetDevice or
// Compile's OnDevice) before it runs.
func ExampleLoad() {
	dir, err := os.MkdirTemp("", "nn-example")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(dir)

	model, err := nn.Sequential("tiny", nn.Input(3), nn.Dense(2, nn.Name("out")))
	if err != nil {
		fmt.Println(err)
		return
	}
	if err := model.InitWeights(7); err != nil {
		fmt.Println(err)
		return
	}
	path := filepath.Join(dir, "tiny.safetensors")
	if err := model.Save(path); err != nil {
		fmt.Println(err)
		return
	}

	back, err := nn.Load(path)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(back.Name(), back.InputShape(), back.OutputShape(), back.Device() == nil)
	for _, w := range back.Weights() {
		a, _ := model.GetWeight(w.Name())
		b, _ := back.GetWeight(w.Name())
		same := len(a.Data) == len(b.Data)
		for i := range a.Data {
			same = same && a.Data[i] == b.Data[i]
		}
		fmt.Println(w.Name(), b.Shape, "same as saved:", same)
	}
	// Output:
	// tiny [3] [2] true
	// out/kernel [3 2] same as saved: true
	// out/bias [2] same as saved: true
}

// A complete training program: the device comes from device.Select (the
// --device flag's value, here empty, then $TARTAN_DEVICE, the device saved
// by `tartan setup`, the best one available) and reaches the model through
// OnDevice; Fashion-MNIST comes from package data. It needs the data set, so
// it is compiled but not run by go test.
func ExampleOnDevice() {
	dev, sel, err := device.Select("")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer dev.Close()
	fmt.Println(sel)

	trainSet, testSet, err := data.FashionMNIST()
	if err != nil {
		fmt.Println(err)
		return
	}
	train, _ := nn.FromDataset(trainSet)
	test, _ := nn.FromDataset(testSet)

	model, err := nn.FashionMLP()
	if err != nil {
		fmt.Println(err)
		return
	}
	if err := model.Compile(nn.Adam(1e-3), nn.SparseCategoricalCrossentropy(),
		nn.Metrics("accuracy"), nn.OnDevice(dev)); err != nil {
		fmt.Println(err)
		return
	}
	defer model.Close()
	if _, err := model.Fit(train, nn.Epochs(5), nn.BatchSize(64), nn.ValidationSplit(0.1)); err != nil {
		fmt.Println(err)
		return
	}
	logs, err := model.Evaluate(test)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("test accuracy %.3f\n", logs["accuracy"])
}
