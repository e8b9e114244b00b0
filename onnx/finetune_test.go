package onnx

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/tartanml/tartan/data"
	"github.com/tartanml/tartan/device"
	"github.com/tartanml/tartan/nn"
	"github.com/tartanml/tartan/npy"
	"github.com/tartanml/tartan/tile"
)

// TestFineTuneMobileNetV2 fine-tunes the MobileNetV2 that
// testdata/torch/export_models.py exports from PyTorch: imported with
// NNLayer behind an 8× up-sampling and a grey-to-RGB, channels-first
// Lambda, it trains on Fashion-MNIST images resized to its 224×224×3 input,
// with its 1000 logits as the classifier (labels 0 to 9), on the device
// device.Select chooses ($TARTAN_DEVICE). The loss must fall. It then
// writes the fine-tuned model (WriteFineTuned) with an input and its
// prediction as .npy beside it into $TARTAN_ONNX_TUNED_DIR, when set, for
// testdata/torch/check_ort.py --dir to check with onnxruntime. It runs only
// when $TARTAN_ONNX_MODELS names export_models.py's output directory (a
// minute or more on a CPU).
func TestFineTuneMobileNetV2(t *testing.T) {
	dir := os.Getenv("TARTAN_ONNX_MODELS")
	if dir == "" {
		t.Skip("set TARTAN_ONNX_MODELS to the directory export_models.py wrote")
	}
	m, err := Load(filepath.Join(dir, "mobilenet_v2.onnx"))
	if err != nil {
		t.Fatal(err)
	}
	def, err := m.NNLayer()
	if err != nil {
		t.Fatal(err)
	}
	toNCHW := nn.Lambda(func(g *tile.Graph, x *tile.Tensor) *tile.Tensor {
		return g.Transpose(g.Concat(3, x, x, x), []int{0, 3, 1, 2})
	})
	model, err := nn.Sequential("fashion_mobilenet_v2", nn.Input(28, 28, 1),
		nn.UpSampling2D([]int{8, 8}), toNCHW, nn.Custom("ONNX", def, nn.Name("onnx")))
	if err != nil {
		t.Fatal(err)
	}
	params, names := m.weightInitializers()
	for i, p := range params {
		v, err := p.Value()
		if err != nil {
			t.Fatal(err)
		}
		a, _ := nn.NewArray(v.Float32s(), v.Shape...)
		if err := model.SetWeight("onnx/"+names[i], a); err != nil {
			t.Fatal(err)
		}
	}
	trainSet, _, err := data.FashionMNIST()
	if err != nil {
		t.Skip(err)
	}
	sub, err := trainSet.Subset(256)
	if err != nil {
		t.Fatal(err)
	}
	train, err := nn.FromDataset(sub)
	if err != nil {
		t.Fatal(err)
	}
	dev, _, err := device.Select("")
	if err != nil {
		t.Fatal(err)
	}
	defer dev.Close()
	if err := model.Compile(nn.SGD(0.01), nn.SparseCategoricalCrossentropy(nn.FromLogits()), nn.Metrics("accuracy"), nn.OnDevice(dev)); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	hist, err := model.Fit(train, nn.Epochs(3), nn.BatchSize(32), nn.Verbose(0))
	if err != nil {
		t.Fatal(err)
	}
	loss := hist.Metrics["loss"]
	t.Logf("%s: loss %v, accuracy %v, %.1f s", dev.Info().ID, loss, hist.Metrics["accuracy"], time.Since(start).Seconds())
	if !(loss[len(loss)-1] < loss[0]) {
		t.Errorf("fine-tuning did not lower the loss: %v", loss)
	}
	out := os.Getenv("TARTAN_ONNX_TUNED_DIR")
	if out == "" {
		return
	}
	f, err := os.Create(filepath.Join(out, "mobilenet_v2_tuned.onnx"))
	if err != nil {
		t.Fatal(err)
	}
	if err := m.WriteFineTuned(f, model, "onnx"); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	// An input in the ONNX model's own layout, and the fine-tuned nn
	// layer's prediction for it (the whole model's, minus its front).
	xa, err := npy.ReadFile(filepath.Join(dir, "mobilenet_v2_input.npy"))
	if err != nil {
		t.Fatal(err)
	}
	tunedLayer, err := m.NNModel("tuned")
	if err != nil {
		t.Fatal(err)
	}
	for i, p := range params {
		w, err := model.GetWeight("onnx/" + names[i])
		if err != nil {
			t.Fatal(err)
		}
		if err := tunedLayer.SetWeight("onnx/"+names[i], w); err != nil {
			t.Fatalf("%s: %v", p.Name, err)
		}
	}
	if err := tunedLayer.SetDevice(dev); err != nil {
		t.Fatal(err)
	}
	x, _ := nn.NewArray(xa.AsFloat32(), xa.Shape...)
	y, err := tunedLayer.PredictOnBatch(x)
	if err != nil {
		t.Fatal(err)
	}
	if err := npy.WriteFile(filepath.Join(out, "mobilenet_v2_tuned_input.npy"), xa); err != nil {
		t.Fatal(err)
	}
	ya, _ := npy.New(y.Shape, y.Data)
	if err := npy.WriteFile(filepath.Join(out, "mobilenet_v2_tuned_output.npy"), ya); err != nil {
		t.Fatal(err)
	}
}
