package main

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tartanml/tartan/backend/cpu"
	"github.com/tartanml/tartan/data"
	"github.com/tartanml/tartan/nn"
	"github.com/tartanml/tartan/onnx"
)

// exportTiny writes the nn model m, its weights drawn from seed 7, as the
// ONNX file name in dir, and returns its path.
func exportTiny(t *testing.T, dir, name string, m *nn.Model, opts ...onnx.ExportOption) string {
	t.Helper()
	if err := m.InitWeights(7); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, name)
	if err := onnx.ExportFile(m, path, opts...); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestFitONNX fine-tunes tiny ONNX classifiers of the three input layouts
// fit accepts, one ending in logits and two in Softmax, through tartan fit
// --model FILE.onnx on 500 Fashion-MNIST images for one epoch. The test
// accuracy fit reports must be far above chance (10%); the saved .onnx
// must hold new weights, re-import (onnx.Load, NNModel) to a model that
// has exactly that accuracy on the test set, and predict what the
// exporter's nn model does with the fine-tuned weights set into it.
func TestFitONNX(t *testing.T) {
	dir := fashionDir(t)
	tmp := t.TempDir()
	_, testSet, err := data.FashionMNIST(data.Dir(dir))
	if err != nil {
		t.Fatal(err)
	}
	reports := map[string]fitReport{}
	for _, c := range []struct {
		name   string
		model  func() (*nn.Model, error)
		input  []int // the ONNX input's per-sample shape
		layout string
		about  string
	}{
		{"nchw_logits", func() (*nn.Model, error) {
			return nn.Sequential("nchw", nn.Input(1, 28, 28), nn.Flatten(), nn.Dense(10))
		}, []int{1, 28, 28}, "channels first",
			`ONNX input "input_layer" [N, 1, 28, 28] takes the images channels first; output "dense" [N, 10] gives logits (it ends in Gemm, not Softmax): the loss is the cross-entropy from logits`},
		{"nhwc_softmax", func() (*nn.Model, error) {
			return nn.Sequential("nhwc", nn.Input(28, 28, 1), nn.Conv2D(4, 3, nn.Strides(2), nn.Activation("relu")), nn.Flatten(),
				nn.Dense(10, nn.Activation("softmax")))
		}, []int{28, 28, 1}, "channels last",
			`ONNX input "input_layer" [N, 28, 28, 1] takes the images channels last; output "dense" [N, 10] gives probabilities (it ends in Softmax): the loss is the cross-entropy of probabilities`},
		{"flat_softmax", func() (*nn.Model, error) {
			return nn.Sequential("flat", nn.Input(784), nn.Dense(10), nn.Softmax())
		}, []int{784}, "flattened",
			`ONNX input "input_layer" [N, 784] takes the images flattened; output "softmax" [N, 10] gives probabilities (it ends in Softmax): the loss is the cross-entropy of probabilities`},
	} {
		t.Run(c.name, func(t *testing.T) {
			orig, err := c.model()
			if err != nil {
				t.Fatal(err)
			}
			path := exportTiny(t, tmp, c.name+".onnx", orig)
			saved := filepath.Join(tmp, c.name+"_tuned.onnx")
			js := filepath.Join(tmp, c.name+".json")
			code, out, errs := runCLI("fit", "--model", path, "--epochs", "1", "--limit", "500", "--batch-size", "25",
				"--learning-rate", "0.01", "--device", "cpu", "--data", dir, "--seed", "2", "--json", js, "--save", saved)
			if code != 0 {
				t.Fatalf("exit %d\n%s\n%s", code, out, errs)
			}
			for _, want := range []string{c.about + "\n", "onnx (ONNX)", "Epoch 1/1\n20/20 ━━━━━━━━━━━━━━━━━━━━ ", "Saved the fine-tuned ONNX model to " + saved + "\n"} {
				if !strings.Contains(out, want) {
					t.Errorf("output lacks %q:\n%s", want, out)
				}
			}
			var rep fitReport
			raw, err := os.ReadFile(js)
			if err == nil {
				err = json.Unmarshal(raw, &rep)
			}
			if err != nil {
				t.Fatal(err)
			}
			if rep.TrainSamples != 500 || !(rep.TestAccuracy > 0.5) {
				t.Errorf("report %+v: want 500 samples and a test accuracy far above chance", rep)
			}

			// The saved file re-imported: its weights are not the
			// original's, and it predicts what the nn model given them
			// does.
			m, err := onnx.Load(saved)
			if err != nil {
				t.Fatal(err)
			}
			back, err := m.NNModel("tuned")
			if err != nil {
				t.Fatal(err)
			}
			changed := false
			for _, init := range m.Initializers {
				v, err := init.Value()
				if err != nil {
					t.Fatal(err)
				}
				w, err := orig.GetWeight(init.Name)
				if err != nil {
					continue // an initializer that is no weight (a shape)
				}
				vals := v.Float32s()
				if len(w.Shape) == 4 {
					// A convolution's kernel: ONNX's (O, C, kh, kw), nn's
					// (kh, kw, C, O).
					kh, kw, ch, o := w.Shape[0], w.Shape[1], w.Shape[2], w.Shape[3]
					nv := make([]float32, len(vals))
					for i := range kh {
						for j := range kw {
							for cc := range ch {
								for oo := range o {
									nv[((i*kw+j)*ch+cc)*o+oo] = vals[((oo*ch+cc)*kh+i)*kw+j]
								}
							}
						}
					}
					vals = nv
				}
				a, err := nn.NewArray(vals, w.Shape...)
				if err != nil {
					t.Fatalf("initializer %s: %v", init.Name, err)
				}
				for i := range a.Data {
					changed = changed || a.Data[i] != w.Data[i]
				}
				if err := orig.SetWeight(init.Name, a); err != nil {
					t.Fatal(err)
				}
			}
			if !changed {
				t.Errorf("the saved model holds the original weights")
			}
			dev := cpu.New(cpu.Cache(false))
			defer dev.Close()
			for _, mm := range []*nn.Model{back, orig} {
				if err := mm.SetDevice(dev); err != nil {
					t.Fatal(err)
				}
			}
			// The test images in the ONNX input's shape: channels-last
			// data reshaped (for one channel the order is the same).
			n := testSet.Len()
			idx := make([]int, n)
			for i := range idx {
				idx[i] = i
			}
			x := make([]float32, n*784)
			y := make([]int32, n)
			if err := testSet.Batch(idx, x, y); err != nil {
				t.Fatal(err)
			}
			xa, err := nn.NewArray(x, append([]int{n}, c.input...)...)
			if err != nil {
				t.Fatal(err)
			}
			s, err := nn.FromArrays(xa, nil)
			if err != nil {
				t.Fatal(err)
			}
			got, err := back.Predict(s, nn.Verbose(0), nn.BatchSize(500))
			if err != nil {
				t.Fatal(err)
			}
			want, err := orig.Predict(s, nn.Verbose(0), nn.BatchSize(500))
			if err != nil {
				t.Fatal(err)
			}
			correct := 0
			for i := range n {
				best := 0
				for k := range 10 {
					g, w := got.Data[i*10+k], want.Data[i*10+k]
					if d := math.Abs(float64(g - w)); d > 1e-5 {
						t.Fatalf("image %d, class %d: the re-imported model gives %g, the nn model with its weights %g", i, k, g, w)
					}
					if g > got.Data[i*10+best] {
						best = k
					}
				}
				if int32(best) == y[i] {
					correct++
				}
			}
			acc := float64(correct) / float64(n)
			if math.Abs(acc-float64(rep.TestAccuracy)) > 2e-4 {
				t.Errorf("the re-imported model's test accuracy is %.4f, fit reported %.4f", acc, rep.TestAccuracy)
			}
			t.Logf("%s: test accuracy %.4f (fit: %.4f), loss %v", c.name, acc, rep.TestAccuracy, rep.History["loss"])
			reports[c.name] = rep
		})
	}
	// The logits model and the Softmax one start from the same Dense
	// weights (same layer name and seed): trained from logits and from
	// probabilities respectively, their losses and accuracies must agree.
	// Had fit taken the probabilities for logits, they would not.
	a, b := reports["nchw_logits"], reports["flat_softmax"]
	if len(a.History["loss"]) == 1 && len(b.History["loss"]) == 1 {
		if d := math.Abs(float64(a.History["loss"][0] - b.History["loss"][0])); d > 1e-4 || math.Abs(float64(a.TestAccuracy-b.TestAccuracy)) > 1e-3 {
			t.Errorf("from logits: loss %v, test accuracy %v; from probabilities: loss %v, test accuracy %v", a.History["loss"], a.TestAccuracy, b.History["loss"], b.TestAccuracy)
		}
	}
}

// TestFitONNXErrors checks the messages for ONNX models fit cannot train
// and for a --save that is no .onnx file.
func TestFitONNXErrors(t *testing.T) {
	tmp := t.TempDir()
	seq := func(m *nn.Model, err error) *nn.Model {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	good := exportTiny(t, tmp, "good.onnx", seq(nn.Sequential("good", nn.Input(784), nn.Dense(10))))
	code, out, errs := runCLI("fit", "--model", good, "--save", filepath.Join(tmp, "tuned.safetensors"))
	if want := "tartan: usage error: --save " + filepath.Join(tmp, "tuned.safetensors") +
		": an ONNX --model is saved as ONNX, its graph with the fine-tuned weights; give a .onnx file\n"; code != exitUsage || errs != want {
		t.Errorf("--save of another kind: exit %d\n%s%s\nwant %q", code, out, errs, want)
	}
	garbage := filepath.Join(tmp, "garbage.onnx")
	if err := os.WriteFile(garbage, []byte("onnx bytes"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, errs = runCLI("fit", "--model", garbage, "--device", "cpu")
	if want := "tartan: --model: " + garbage + ": decoding the model: "; code != exitError || !strings.HasPrefix(errs, want) {
		t.Errorf("a file that is no ONNX model: exit %d, %q, want it to start %q", code, errs, want)
	}

	dir := fashionDir(t)
	a, b := nn.Input(784), nn.Input(3)
	twoInputs, err := nn.Functional("two", []*nn.Node{a, b}, []*nn.Node{nn.Apply(nn.Dense(10), nn.Apply(nn.Concatenate(), a, b))})
	x := nn.Input(784)
	h := nn.Apply(nn.Dense(10), x)
	twoOutputs, err2 := nn.Functional("two_out", []*nn.Node{x}, []*nn.Node{h, nn.Apply(nn.Dense(2), h)})
	if err == nil {
		err = err2
	}
	if err != nil {
		t.Fatal(err)
	}
	const expected = "[N, 1, 28, 28] (channels first), [N, 28, 28, 1] (channels last) or [N, 784] (flattened), N the batch"
	for _, c := range []struct {
		name string
		path string
		want string
	}{
		{"rows", exportTiny(t, tmp, "rows.onnx", seq(nn.Sequential("rows", nn.Input(28, 28), nn.Flatten(), nn.Dense(10)))),
			`: input "input_layer" [N, 28, 28] does not take them; fit feeds it the images of fashion-mnist/train, of shape ` + expected},
		{"fixed batch", exportTiny(t, tmp, "fixed.onnx", seq(nn.Sequential("fixed", nn.Input(784), nn.Dense(10))), onnx.FixedBatch(1)),
			`: input "input_layer" [1, 784] has a batch dimension fixed at 1, where fit's batches vary in size (the last of an epoch is smaller); fit feeds it the images of fashion-mnist/train, of shape ` + expected},
		{"five classes", exportTiny(t, tmp, "five.onnx", seq(nn.Sequential("five", nn.Input(28, 28, 1), nn.Flatten(), nn.Dense(5)))),
			`: output "dense" [N, 5] gives samples of shape [5]; fit trains a classifier of the 10 classes of fashion-mnist/train, whose output is [N, 10], one score per class`},
		{"two inputs", exportTiny(t, tmp, "two.onnx", twoInputs),
			` has 2 inputs besides its initializers ("input_layer" [N, 784], "input_layer_1" [N, 3]); fit feeds one, the images of fashion-mnist/train, of shape [N, 1, 28, 28] (channels first), [N, 28, 28, 1] (channels last) or [N, 784] (flattened)`},
		{"two outputs", exportTiny(t, tmp, "two_out.onnx", twoOutputs),
			` has 2 outputs ("dense" [N, 10], "dense_1" [N, 2]); fit trains one, the scores of the 10 classes of fashion-mnist/train, of shape [N, 10]`},
	} {
		t.Run(c.name, func(t *testing.T) {
			code, out, errs := runCLI("fit", "--model", c.path, "--device", "cpu", "--data", dir, "--epochs", "1", "--limit", "10")
			if want := "tartan: --model " + c.path + c.want + "\n"; code != exitError || errs != want {
				t.Errorf("exit %d\n%s%s\nwant %s", code, out, errs, want)
			}
		})
	}
}

// TestFitONNXCheckpoint resumes the fine-tuning of an ONNX model from its
// checkpoint, and refuses to resume another ONNX model of the same input
// layout from it.
func TestFitONNXCheckpoint(t *testing.T) {
	dir := fashionDir(t)
	tmp := t.TempDir()
	seq := func(m *nn.Model, err error) *nn.Model {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	linear := exportTiny(t, tmp, "linear.onnx", seq(nn.Sequential("linear", nn.Input(1, 28, 28), nn.Flatten(), nn.Dense(10))))
	deeper := exportTiny(t, tmp, "deeper.onnx", seq(nn.Sequential("deeper", nn.Input(1, 28, 28), nn.Flatten(), nn.Dense(16), nn.Dense(10))))
	ck := filepath.Join(tmp, "ck.safetensors")
	args := func(model, epochs string) []string {
		return []string{"fit", "--model", model, "--epochs", epochs, "--limit", "200", "--device", "cpu", "--data", dir, "--checkpoint", ck}
	}
	if code, out, errs := runCLI(args(linear, "1")...); code != 0 {
		t.Fatalf("exit %d\n%s%s", code, out, errs)
	}
	code, out, errs := runCLI(args(linear, "2")...)
	if want := "Resuming from " + ck + ": 1 of 2 epochs done\n"; code != 0 || !strings.Contains(out, want) || !strings.Contains(out, "Epoch 2/2\n") {
		t.Errorf("resuming: exit %d, want the output to hold %q\n%s%s", code, want, out, errs)
	}
	code, out, errs = runCLI(args(deeper, "3")...)
	if code != exitError || !strings.Contains(errs, "cannot resume: ") {
		t.Errorf("resuming another model: exit %d\n%s%s", code, out, errs)
	}
	t.Logf("another model: %s", strings.TrimSpace(errs))
}
