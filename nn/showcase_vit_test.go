package nn

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/tartanml/tartan/backend/cpu"
	"github.com/tartanml/tartan/data"
)

// TestFashionViTShapesAndParams checks the showcase transformer's layers and
// parameter count, worked by hand: the patch Conv2D 4·4·1·128 + 128 = 2176,
// the position table 49·128 = 6272; per block two LayerNormalizations of
// 2·128, attention 3·(128·4·32 + 4·32) + 4·32·128 + 128 = 66048 and the MLP
// 128·256 + 256 + 256·128 + 128 = 65920, 132480 in all; the final
// LayerNormalization 256 and Dense 128·10 + 10 = 1290:
// 2176 + 6272 + 4·132480 + 256 + 1290 = 539914.
func TestFashionViTShapesAndParams(t *testing.T) {
	m := must(t)(ShowcaseModel("fashion-vit"))
	if total, trainable := m.CountParams(); total != 539914 || trainable != 539914 {
		t.Errorf("params %d (%d trainable), want 539914", total, trainable)
	}
	if got := m.OutputShape(); len(got) != 1 || got[0] != 10 {
		t.Errorf("output shape %v, want [10]", got)
	}
	shapes := map[string]string{
		"conv2d":                   "(None, 7, 7, 128)",
		"reshape":                  "(None, 49, 128)",
		"position_embedding":       "(None, 49, 128)",
		"multi_head_attention_3":   "(None, 49, 128)",
		"dense_6":                  "(None, 49, 256)",
		"layer_normalization_8":    "(None, 49, 128)",
		"global_average_pooling1d": "(None, 128)",
		"dense_8":                  "(None, 10)",
	}
	for name, want := range shapes {
		l := m.Layer(name)
		if l == nil {
			t.Errorf("no layer %s", name)
			continue
		}
		if got := fmtShape(l.base().outShape); got != want {
			t.Errorf("%s gives %s, want %s", name, got, want)
		}
	}
	var names []string
	for _, w := range m.Layer("multi_head_attention").Weights() {
		names = append(names, w.Name()+fmtDims(w.Shape()))
	}
	if got, want := strings.Join(names, " "), "multi_head_attention/query/kernel(128, 4, 32) multi_head_attention/query/bias(4, 32) "+
		"multi_head_attention/key/kernel(128, 4, 32) multi_head_attention/key/bias(4, 32) "+
		"multi_head_attention/value/kernel(128, 4, 32) multi_head_attention/value/bias(4, 32) "+
		"multi_head_attention/attention_output/kernel(4, 32, 128) multi_head_attention/attention_output/bias(128,)"; got != want {
		t.Errorf("attention weights\n %s\nwant\n %s", got, want)
	}
	if got := fmt.Sprint(ShowcaseModels()); got != "[fashion-cnn fashion-lstm fashion-mlp fashion-vit]" {
		t.Errorf("ShowcaseModels() = %s", got)
	}
}

// TestFashionViTLearns trains the showcase transformer for 40 steps of Adam
// 1e-3 (batches of 64 of the first 2,560 Fashion-MNIST training images) on
// the CPU backend and evaluates it on the first 1,000 test images: it must
// do far better than chance (10%); such runs reach about 50%. It skips
// without the data set and under -short.
func TestFashionViTLearns(t *testing.T) {
	if testing.Short() {
		t.Skip("trains for about 15 s")
	}
	if raceDetector {
		t.Skip("trains for minutes under the race detector; the plain run of the tests covers it")
	}
	train, test, err := data.FashionMNIST(data.Download(false))
	if errors.Is(err, data.ErrNotFound) {
		t.Skipf("Fashion-MNIST is not installed: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	m := must(t)(FashionViT())
	dev := cpu.New()
	defer dev.Close()
	if err := m.Compile(Adam(1e-3), SparseCategoricalCrossentropy(), Metrics("accuracy"), OnDevice(dev)); err != nil {
		t.Fatal(err)
	}
	if _, err := m.Fit(fashionSamples(t, train, 2560), BatchSize(64), Epochs(1), quiet); err != nil {
		t.Fatal(err)
	}
	logs, err := m.Evaluate(fashionSamples(t, test, 1000), BatchSize(100), quiet)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("test accuracy %.4f, loss %.4f after 40 steps", logs["accuracy"], logs["loss"])
	if logs["accuracy"] < 0.35 {
		t.Errorf("test accuracy %.4f after 40 steps, want at least 0.35", logs["accuracy"])
	}
}

// fashionSamples returns the first n images of d, scaled to [0, 1], with
// their labels.
func fashionSamples(t *testing.T, d *data.Dataset, n int) Samples {
	t.Helper()
	idx := make([]int, n)
	for i := range idx {
		idx[i] = i
	}
	x := make([]float32, n*28*28)
	y := make([]int32, n)
	if err := d.Batch(idx, x, y); err != nil {
		t.Fatal(err)
	}
	ys := make([]float32, n)
	for i, v := range y {
		ys[i] = float32(v)
	}
	return samples(t, x, []int{28, 28, 1}, ys, nil)
}
