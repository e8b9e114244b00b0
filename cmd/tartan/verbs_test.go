package main

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"image"
	"image/color"
	"image/jpeg"
	"image/png"
	"io"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/tartanml/tartan/backend/cpu"
	"github.com/tartanml/tartan/data"
	"github.com/tartanml/tartan/nn"
	"github.com/tartanml/tartan/nn/plot"
)

// writeGrayPNG writes 8-bit grey pixels of a w×h image as a PNG file.
func writeGrayPNG(t *testing.T, path string, pix []byte, w, h int) {
	t.Helper()
	img := image.NewGray(image.Rect(0, 0, w, h))
	copy(img.Pix, pix)
	var b bytes.Buffer
	if err := png.Encode(&b, img); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

// argmax returns the index of the largest value.
func argmax(v []float32) int {
	best := 0
	for i, x := range v {
		if x > v[best] {
			best = i
		}
	}
	return best
}

// TestSavedModelVerbs trains a small model with fit --save and uses the
// file with predict, evaluate, summary and fit --model FILE.
func TestSavedModelVerbs(t *testing.T) {
	dir := fashionDir(t)
	tmp := t.TempDir()
	model, fitJSON := filepath.Join(tmp, "model.safetensors"), filepath.Join(tmp, "fit.json")
	code, out, errs := runCLI("fit", "--model", "fashion-mlp", "--epochs", "2", "--limit", "3000", "--device", "cpu",
		"--data", dir, "--seed", "1", "--save", model, "--json", fitJSON)
	if code != exitOK {
		t.Fatalf("fit: exit %d\n%s%s", code, out, errs)
	}
	var fitRep fitReport
	if b, err := os.ReadFile(fitJSON); err != nil || json.Unmarshal(b, &fitRep) != nil {
		t.Fatalf("reading %s: %v", fitJSON, err)
	}
	_, testSet, err := data.FashionMNIST(data.Dir(dir))
	if err != nil {
		t.Fatal(err)
	}
	names := testSet.ClassNames

	t.Run("predict", func(t *testing.T) {
		// The first test images as PNG files, and the model's own
		// answers for them from the IDX data.
		const n = 40
		sub, err := testSet.Subset(n)
		if err != nil {
			t.Fatal(err)
		}
		var files []string
		for i := range n {
			pix, _, err := sub.Sample(i)
			if err != nil {
				t.Fatal(err)
			}
			f := filepath.Join(tmp, fmt.Sprintf("test%02d.png", i))
			writeGrayPNG(t, f, pix, 28, 28)
			files = append(files, f)
		}
		// Image 0 as a dark garment on white, as a photo would show it.
		pix0, _, _ := sub.Sample(0)
		inv := make([]byte, len(pix0))
		for i, v := range pix0 {
			inv[i] = 255 - v
		}
		invFile := filepath.Join(tmp, "dark-on-white.png")
		writeGrayPNG(t, invFile, inv, 28, 28)

		m, err := nn.Load(model)
		if err != nil {
			t.Fatal(err)
		}
		dev := cpu.New()
		defer dev.Close()
		if err := m.SetDevice(dev); err != nil {
			t.Fatal(err)
		}
		samples, err := nn.FromDataset(sub)
		if err != nil {
			t.Fatal(err)
		}
		want, err := m.Predict(samples, nn.Verbose(0))
		if err != nil {
			t.Fatal(err)
		}

		js := filepath.Join(tmp, "predict.json")
		args := append(append([]string{"predict", model}, files...), invFile, "--device", "cpu", "--json", js)
		code, out, errs := runCLI(args...)
		if code != exitOK {
			t.Fatalf("exit %d\n%s%s", code, out, errs)
		}
		var rep predictReport
		if b, err := os.ReadFile(js); err != nil || json.Unmarshal(b, &rep) != nil {
			t.Fatalf("reading %s: %v", js, err)
		}
		if len(rep.Predictions) != n+1 {
			t.Fatalf("%d predictions in %s, want %d", len(rep.Predictions), js, n+1)
		}
		lines := strings.Split(out, "\n")
		row := regexp.MustCompile(`^  [01]\.\d{4}  \d (\S.*)$`)
		right := 0
		for i := range n {
			row0 := want.Data[i*10 : (i+1)*10]
			c := argmax(row0)
			// Each image is 1 head line and 3 rows.
			head := lines[4*i]
			if wantHead := fmt.Sprintf("%s: %d %s", files[i], c, names[c]); head != wantHead {
				t.Errorf("image %d: %q, want %q (the model's own Predict on the IDX data)", i, head, wantHead)
			}
			for k := 1; k <= 3; k++ {
				if !row.MatchString(lines[4*i+k]) {
					t.Errorf("image %d: row %d is %q, want a probability, a class and its name", i, k, lines[4*i+k])
				}
			}
			if want := fmt.Sprintf("  %.4f  %d %s", row0[c], c, names[c]); lines[4*i+1] != want {
				t.Errorf("image %d: first row %q, want %q", i, lines[4*i+1], want)
			}
			p := rep.Predictions[i]
			if p.Class != c || p.Inverted || p.LightBorder > 0.5 || float64(p.Top[0].Probability) != float64(row0[c]) {
				t.Errorf("image %d: JSON %+v, want class %d with probability %v, not inverted", i, p, c, row0[c])
			}
			if _, label, _ := sub.Sample(i); label == c {
				right++
			} else if p.Class == label {
				t.Errorf("image %d: predict is right where the model is wrong", i)
			}
		}
		// The small model is right on about three quarters of them.
		if right < n*6/10 {
			t.Errorf("the model is right on %d of %d test images, want most", right, n)
		}
		c0 := argmax(want.Data[:10])
		tail := strings.Join(lines[4*n:], "\n")
		if wantHead := fmt.Sprintf("%s: %d %s\n  inverted: 100%% of its border is light\n  %.4f  %d %s\n", invFile, c0, names[c0], want.Data[c0], c0, names[c0]); !strings.HasPrefix(tail, wantHead) {
			t.Errorf("the inverted image gives\n%s\nwant it inverted back and predicted as the original:\n%s", tail, wantHead)
		}
		if p := rep.Predictions[n]; !p.Inverted || p.LightBorder != 1 || p.Class != c0 {
			t.Errorf("the inverted image's JSON: %+v", p)
		}

		// --invert no keeps the white background: no inversion line.
		code, out, errs = runCLI("predict", model, invFile, "--device", "cpu", "--invert", "no", "--top", "1")
		if code != exitOK || strings.Contains(out, "inverted") || len(strings.Split(strings.TrimSpace(out), "\n")) != 2 {
			t.Errorf("--invert no --top 1: exit %d\n%s%s", code, out, errs)
		}
		// --invert yes inverts even a black background.
		code, out, _ = runCLI("predict", model, files[0], "--device", "cpu", "--invert", "yes")
		if code != exitOK || !strings.Contains(out, "  inverted: 0% of its border is light\n") {
			t.Errorf("--invert yes: exit %d\n%s", code, out)
		}
		// A larger image is scaled down to the model's input: a 2×
		// enlargement of a test image with a black border stays black
		// outside and is answered.
		big := make([]byte, 56*56)
		for y := range 56 {
			for x := range 56 {
				big[y*56+x] = pix0[(y/2)*28+x/2]
			}
		}
		bigFile := filepath.Join(tmp, "big.png")
		writeGrayPNG(t, bigFile, big, 56, 56)
		if code, out, errs := runCLI("predict", model, bigFile, "--device", "cpu"); code != exitOK || !strings.HasPrefix(out, bigFile+": ") {
			t.Errorf("a 56×56 image: exit %d\n%s%s", code, out, errs)
		}
		// The same as a colour JPEG of a dark garment on white, as a
		// camera would give it: decoded, made grey and inverted.
		rgb := image.NewRGBA(image.Rect(0, 0, 56, 56))
		for i, v := range big {
			rgb.Set(i%56, i/56, color.RGBA{R: 255 - v, G: 255 - v, B: 255 - v, A: 255})
		}
		var jb bytes.Buffer
		if err := jpeg.Encode(&jb, rgb, &jpeg.Options{Quality: 95}); err != nil {
			t.Fatal(err)
		}
		jpegFile := filepath.Join(tmp, "photo.jpg")
		if err := os.WriteFile(jpegFile, jb.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		if code, out, errs := runCLI("predict", model, jpegFile, "--device", "cpu"); code != exitOK ||
			!strings.HasPrefix(out, jpegFile+": ") || !strings.Contains(out, "\n  inverted: 100% of its border is light\n") {
			t.Errorf("a JPEG of a dark garment on white: exit %d\n%s%s", code, out, errs)
		}
	})

	t.Run("predict without class names", func(t *testing.T) {
		m, err := nn.Load(model)
		if err != nil {
			t.Fatal(err)
		}
		if err := m.SetLabels(nil); err != nil {
			t.Fatal(err)
		}
		bare := filepath.Join(tmp, "bare.safetensors")
		if err := m.Save(bare); err != nil {
			t.Fatal(err)
		}
		pix, _, _ := testSet.Sample(0)
		img := filepath.Join(tmp, "unnamed.png")
		writeGrayPNG(t, img, pix, 28, 28)
		code, out, errs := runCLI("predict", bare, img, "--device", "cpu", "--top", "2")
		lines := strings.Split(out, "\n")
		if code != exitOK || len(lines) != 4 || !regexp.MustCompile(`^`+regexp.QuoteMeta(img)+`: \d$`).MatchString(lines[0]) ||
			!regexp.MustCompile(`^  [01]\.\d{4}  \d$`).MatchString(lines[1]) || !strings.HasSuffix(lines[0], lines[1][len(lines[1])-1:]) {
			t.Errorf("exit %d, want classes by number:\n%s%s", code, out, errs)
		}
		if code, out, _ := runCLI("summary", bare); code != exitOK || strings.Contains(out, "Classes") {
			t.Errorf("summary of a model without names: exit %d\n%s", code, out)
		}
	})

	t.Run("evaluate", func(t *testing.T) {
		js := filepath.Join(tmp, "evaluate.json")
		code, out, errs := runCLI("evaluate", model, "--data", dir, "--device", "cpu", "--json", js)
		if code != exitOK {
			t.Fatalf("exit %d\n%s%s", code, out, errs)
		}
		var rep evaluateReport
		if b, err := os.ReadFile(js); err != nil || json.Unmarshal(b, &rep) != nil {
			t.Fatalf("reading %s: %v", js, err)
		}
		// The same model on the same test set and batch size as fit's
		// own evaluation.
		if rep.TestAccuracy != fitRep.TestAccuracy || rep.TestLoss != fitRep.TestLoss || rep.TestSamples != 10000 {
			t.Errorf("evaluate: %+v; fit reported accuracy %v and loss %v", rep, fitRep.TestAccuracy, fitRep.TestLoss)
		}
		want := fmt.Sprintf("Model: fashion_mlp, from %s\nDevice: cpu (", model)
		wantTest := fmt.Sprintf(")\nTest accuracy: %.4f (loss %.4f) on 10000 samples\n", float64(fitRep.TestAccuracy), float64(fitRep.TestLoss))
		if !strings.HasPrefix(out, want) || !strings.HasSuffix(out, wantTest) || strings.Count(out, "\n") != 3 {
			t.Errorf("output\n%s\nwant %q ... %q", out, want, wantTest)
		}
	})

	t.Run("summary", func(t *testing.T) {
		code, out, errs := runCLI("summary", model)
		m, err := nn.Load(model)
		if err != nil {
			t.Fatal(err)
		}
		want := m.Summary() + " Classes: 0 T-shirt/top, 1 Trouser, 2 Pullover, 3 Dress, 4 Coat, 5 Sandal, 6 Shirt, 7 Sneaker, 8 Bag, 9 Ankle boot\n"
		if code != exitOK || out != want {
			t.Errorf("exit %d\n%s%s\nwant\n%s", code, out, errs, want)
		}
	})

	t.Run("fit a saved model further", func(t *testing.T) {
		more, js, plotFile := filepath.Join(tmp, "more.safetensors"), filepath.Join(tmp, "more.json"), filepath.Join(tmp, "more.png")
		code, out, errs := runCLI("fit", "--model", model, "--epochs", "2", "--limit", "1000", "--validation-split", "0.1",
			"--optimizer", "sgd", "--learning-rate", "0.05", "--device", "cpu", "--data", dir, "--save", more, "--json", js, "--plot", plotFile)
		if code != exitOK {
			t.Fatalf("exit %d\n%s%s", code, out, errs)
		}
		for _, want := range []string{
			"\nTraining on 900 samples (100 more held out for validation), batch size 64, sgd with learning rate 0.05\n",
			" - val_accuracy: ", " - val_loss: ", "\nSaved the model to " + more + "\n", "\nSaved the plot to " + plotFile + "\n",
		} {
			if !strings.Contains(out, want) {
				t.Errorf("output lacks %q:\n%s", want, out)
			}
		}
		var rep fitReport
		if b, err := os.ReadFile(js); err != nil || json.Unmarshal(b, &rep) != nil {
			t.Fatalf("reading %s: %v", js, err)
		}
		if rep.Optimizer != "sgd" || rep.LearningRate != 0.05 || rep.TrainSamples != 900 || rep.ValSamples != 100 || rep.ValidationSplit != 0.1 {
			t.Errorf("report %+v", rep)
		}
		for _, k := range []string{"loss", "accuracy", "val_loss", "val_accuracy"} {
			if len(rep.History[k]) != 2 {
				t.Errorf("history %s has %d values, want 2: %v", k, len(rep.History[k]), rep.History)
			}
		}
		// The trained model starts where the first run ended: its first
		// epoch is already better than the first run's first epoch.
		if rep.History["loss"][0] >= fitRep.History["loss"][0] {
			t.Errorf("the continued run's first loss %v is not below the fresh run's %v: did it start afresh?", rep.History["loss"][0], fitRep.History["loss"][0])
		}
		if m, err := nn.Load(more); err != nil || len(m.Labels()) != 10 {
			t.Errorf("the further trained model: %v, labels %q", err, m.Labels())
		}
		f, err := os.Open(plotFile)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		img, err := png.Decode(f)
		if err != nil || img.Bounds().Size() != image.Pt(plot.DefaultWidth, plot.DefaultHeight) {
			t.Errorf("--plot: %v, %v", err, img)
		}
	})

	t.Run("errors", func(t *testing.T) {
		onnx := filepath.Join(tmp, "model.onnx")
		if err := os.WriteFile(onnx, []byte("onnx bytes"), 0o644); err != nil {
			t.Fatal(err)
		}
		text := filepath.Join(tmp, "notes.txt")
		if err := os.WriteFile(text, []byte("not an image"), 0o644); err != nil {
			t.Fatal(err)
		}
		fifo := filepath.Join(tmp, "fifo.png")
		mkfifo(t, fifo)
		// A PNG whose header claims 100000×100000 pixels.
		var b bytes.Buffer
		if err := png.Encode(&b, image.NewGray(image.Rect(0, 0, 1, 1))); err != nil {
			t.Fatal(err)
		}
		huge := b.Bytes()
		binary.BigEndian.PutUint32(huge[16:], 100000) // IHDR width
		binary.BigEndian.PutUint32(huge[20:], 100000) // IHDR height
		binary.BigEndian.PutUint32(huge[29:], crc32.ChecksumIEEE(huge[12:29]))
		hugeFile := filepath.Join(tmp, "huge.png")
		if err := os.WriteFile(hugeFile, huge, 0o644); err != nil {
			t.Fatal(err)
		}
		for _, c := range []struct {
			name string
			args []string
			code int
			want string
		}{
			{"predict a FIFO", []string{"predict", model, fifo, "--device", "cpu"}, exitError, "image " + fifo + " is a named pipe (FIFO), not a regular file"},
			{"predict a huge image", []string{"predict", model, hugeFile, "--device", "cpu"}, exitError, "image " + hugeFile + " is 100000×100000 pixels; predict reads images of 1 to 100000000 pixels"},
			{"fit a file that is no ONNX model", []string{"fit", "--model", onnx, "--data", dir, "--device", "cpu"}, exitError, "--model: " + onnx + ": decoding the model: "},
			{"predict with an ONNX model", []string{"predict", onnx, text}, exitError, "model " + onnx + ": this command does not take ONNX models yet (run it with tartan run " + onnx + ", fine-tune it with tartan fit --model " + onnx + ";"},
			{"evaluate an ONNX model", []string{"evaluate", onnx}, exitError, "this command does not take ONNX models yet"},
			{"summary of a text file", []string{"summary", text}, exitError, "not a valid safetensors file"},
			{"summary of a missing file", []string{"summary", filepath.Join(tmp, "nope")}, exitError, "no such file"},
			{"fit a file that is no model", []string{"fit", "--model", text, "--data", dir, "--device", "cpu"}, exitError, text},
			{"predict a text file", []string{"predict", model, text, "--device", "cpu"}, exitError, "image " + text + ": image: unknown format (predict reads PNG, JPEG and GIF)"},
			{"predict a directory", []string{"predict", model, tmp, "--device", "cpu"}, exitError, "image " + tmp + " is a directory, not a regular file"},
			{"predict a missing image", []string{"predict", model, filepath.Join(tmp, "none.png")}, exitError, "none.png: no such file"},
		} {
			t.Run(c.name, func(t *testing.T) {
				code, out, errs := runCLI(c.args...)
				if code != c.code || !strings.Contains(errs, c.want) {
					t.Errorf("exit %d, want %d with %q:\n%s%s", code, c.code, c.want, out, errs)
				}
			})
		}
	})
}

// TestVerbUsage checks --help on every verb, the usage errors of the new
// flags and arguments, and that shared flags read the same everywhere.
func TestVerbUsage(t *testing.T) {
	helps := map[string]string{}
	for _, verb := range []string{"fit", "evaluate", "predict", "summary"} {
		code, out, errs := runCLI(verb, "--help")
		if code != exitOK || !strings.HasPrefix(out, "Usage: tartan "+verb) || !strings.Contains(out, "Exit status: 0 success") || errs != "" {
			t.Errorf("%s --help: exit %d\n%s%s", verb, code, out, errs)
		}
		if code, out2, _ := runCLI("help", verb); code != exitOK || out2 != out {
			t.Errorf("help %s: exit %d, and not the text of %s --help:\n%s", verb, code, verb, out2)
		}
		helps[verb] = out
	}
	// The help of a shared flag: its line and the lines under it.
	flagHelp := func(help, name string) string {
		i := strings.Index(help, "\n  --"+name+" ")
		if i < 0 {
			return ""
		}
		rest := help[i+1:]
		end := strings.Index(rest[1:], "\n  --")
		if end < 0 {
			end = strings.Index(rest, "\n\n")
		} else {
			end++
		}
		return rest[:end]
	}
	for _, c := range []struct {
		name  string
		verbs []string
	}{{"device", []string{"fit", "evaluate", "predict"}}, {"data", []string{"fit", "evaluate"}}, {"json", []string{"fit", "evaluate", "predict"}}} {
		first := flagHelp(helps[c.verbs[0]], c.name)
		if first == "" {
			t.Errorf("%s --help lacks --%s", c.verbs[0], c.name)
		}
		for _, v := range c.verbs[1:] {
			if got := flagHelp(helps[v], c.name); got != first {
				t.Errorf("--%s reads\n%s\nin %s --help but\n%s\nin %s --help", c.name, got, v, first, c.verbs[0])
			}
		}
	}
	if !strings.Contains(flagHelp(helps["fit"], "batch-size"), "--batch-size N\n        N samples per step of training and testing (default 64)") ||
		!strings.Contains(flagHelp(helps["evaluate"], "batch-size"), "--batch-size N\n        N samples per step of the evaluation (default 64)") {
		t.Errorf("--batch-size:\n%s\n%s", flagHelp(helps["fit"], "batch-size"), flagHelp(helps["evaluate"], "batch-size"))
	}

	for _, c := range []struct {
		name string
		args []string
		want string
	}{
		{"split one", []string{"fit", "--validation-split", "1"}, "--validation-split 1 must be at least 0 and below 1"},
		{"split negative", []string{"fit", "--validation-split", "-0.1"}, "--validation-split -0.1 must be at least 0 and below 1"},
		{"split NaN", []string{"fit", "--validation-split", "NaN"}, "--validation-split NaN must be"},
		{"split not a number", []string{"fit", "--validation-split", "half"}, `invalid value "half" for flag -validation-split`},
		{"optimizer", []string{"fit", "--optimizer", "adadelta"}, `--optimizer "adadelta" is not one of adam, sgd, rmsprop, adagrad, nadam, adamax, lion`},
		{"learning rate zero", []string{"fit", "--learning-rate", "0"}, "--learning-rate 0 must be a positive finite number"},
		{"learning rate negative", []string{"fit", "--learning-rate", "-1e-3"}, "--learning-rate -0.001 must be a positive finite number"},
		{"learning rate infinite", []string{"fit", "--learning-rate", "Inf"}, "--learning-rate +Inf must be a positive finite number"},
		{"learning rate NaN", []string{"fit", "--learning-rate", "NaN"}, "--learning-rate NaN must be a positive finite number"},
		{"unknown model", []string{"fit", "--model", "resnet", "--device", "cpu"}, `--model: unknown model "resnet": neither a showcase model (fashion-cnn, fashion-lstm, fashion-mlp, fashion-vit) nor an existing file`},
		{"evaluate without a model", []string{"evaluate"}, "evaluate needs MODEL"},
		{"evaluate two models", []string{"evaluate", "a", "b"}, `evaluate takes one MODEL, got ["a" "b"]`},
		{"evaluate batch", []string{"evaluate", "m", "--batch-size", "0"}, "--batch-size 0 must be at least 1"},
		{"evaluate unknown flag", []string{"evaluate", "m", "--top", "3"}, "flag provided but not defined: -top (see tartan evaluate --help)"},
		{"predict without arguments", []string{"predict"}, "predict needs MODEL"},
		{"predict without images", []string{"predict", "m.safetensors"}, "predict needs one IMAGE or more after MODEL m.safetensors"},
		{"predict top zero", []string{"predict", "m", "x.png", "--top", "0"}, "--top 0 must be at least 1"},
		{"predict invert", []string{"predict", "m", "x.png", "--invert", "maybe"}, `--invert "maybe" is not one of auto, yes, no`},
		{"predict json a directory", []string{"predict", "m", "x.png", "--json", t.TempDir()}, "is a directory, not a regular file"},
		{"summary without a model", []string{"summary"}, "summary needs MODEL"},
		{"summary two models", []string{"summary", "a", "b"}, "summary takes one MODEL"},
		{"summary unknown flag", []string{"summary", "--device", "cpu", "m"}, "flag provided but not defined: -device (see tartan summary --help)"},
		{"help for an unknown command", []string{"help", "train"}, `help: unknown command "train"`},
	} {
		t.Run(c.name, func(t *testing.T) {
			code, out, errs := runCLI(c.args...)
			if code != exitUsage || !strings.Contains(errs, c.want) {
				t.Errorf("exit %d, want %d with %q:\n%s%s", code, exitUsage, c.want, out, errs)
			}
		})
	}
}

// TestErrorStartsItsLine checks that an error message starts a line of its
// own when the standard output and error are one stream and the output's
// last line is unfinished, and that a checkpoint that cannot be resumed is
// reported right after the summary.
func TestErrorStartsItsLine(t *testing.T) {
	commands["unfinished-line-for-test"] = func(_ []string, _ io.Reader, stdout, _ io.Writer) error {
		fmt.Fprint(stdout, "Device: cpu (a processor)")
		return errors.New("cannot resume: the checkpoint is damaged")
	}
	defer delete(commands, "unfinished-line-for-test")
	var both bytes.Buffer
	if code := runWith([]string{"unfinished-line-for-test"}, strings.NewReader(""), &both, &both); code != exitError {
		t.Errorf("exit %d, want %d", code, exitError)
	}
	if want := "Device: cpu (a processor)\ntartan: cannot resume: the checkpoint is damaged\n"; both.String() != want {
		t.Errorf("output %q, want %q", both.String(), want)
	}

	dir := fashionDir(t)
	ck := filepath.Join(t.TempDir(), "ck.safetensors")
	if err := os.WriteFile(ck, []byte("damaged"), 0o644); err != nil {
		t.Fatal(err)
	}
	both.Reset()
	code := runWith(quickFit(dir, "--checkpoint", ck), strings.NewReader(""), &both, &both)
	want := " Non-trainable params: 0 (0.00 B)\ntartan: cannot resume: nn: loading checkpoint: " + ck + ": not a valid safetensors file: " +
		"7 bytes is too short for the 8-byte header length (truncated?) (remove " + ck + " to start afresh)\n"
	if code != exitError || !strings.HasSuffix(both.String(), want) {
		t.Errorf("exit %d; output\n%s\nwant it to end with\n%s", code, both.String(), want)
	}
}

// TestPredictImageSteps checks the image preparation of predict by hand:
// the light border, the fitting of another size, the probabilities.
func TestPredictImageSteps(t *testing.T) {
	// A 28×28 image whose top row is light: 28 of the 108 border pixels.
	g := image.NewGray(image.Rect(0, 0, 28, 28))
	for x := range 28 {
		g.SetGray(x, 0, color.Gray{Y: 200})
	}
	if got := lightBorder(g); got != 28.0/108 {
		t.Errorf("light border %v, want 28/108", got)
	}
	// A 10×20 white image with a 1-pixel black frame, fitted into 28×28:
	// scaled to 14×28, centred in columns 7 to 20, the rest black.
	tall := image.NewGray(image.Rect(0, 0, 10, 20))
	for y := range 20 {
		for x := range 10 {
			if x > 0 && y > 0 && x < 9 && y < 19 {
				tall.SetGray(x, y, color.Gray{Y: 255})
			}
		}
	}
	f := fitGray(tall, 28, 28)
	for y := range 28 {
		for x := range 28 {
			if v := f.GrayAt(x, y).Y; (x < 7 || x > 20) && v != 0 {
				t.Fatalf("pixel %d,%d outside the scaled image is %d, want 0", x, y, v)
			}
		}
	}
	if v := f.GrayAt(14, 14).Y; v < 250 {
		t.Errorf("the centre is %d, want white", v)
	}
	// A photo-like image: dark object on a light, non-white background;
	// the padding takes the border's shade.
	wide := image.NewGray(image.Rect(0, 0, 56, 28))
	for i := range wide.Pix {
		wide.Pix[i] = 180
	}
	if f := fitGray(wide, 28, 28); f.GrayAt(14, 0).Y != 180 || f.GrayAt(14, 27).Y != 180 || f.GrayAt(14, 14).Y != 180 {
		t.Errorf("a uniform 56×28 image fitted into 28×28 is not uniform: %d %d %d", f.GrayAt(14, 0).Y, f.GrayAt(14, 27).Y, f.GrayAt(14, 14).Y)
	}
	// A distribution is kept; logits become their softmax.
	if p := probabilities([]float32{0.25, 0.75}); p[0] != 0.25 || p[1] != 0.75 {
		t.Errorf("probabilities of a distribution: %v", p)
	}
	if p := probabilities([]float32{0, float32(math.Log(3))}); math.Abs(p[0]-0.25) > 1e-7 || math.Abs(p[1]-0.75) > 1e-7 {
		t.Errorf("probabilities of logits 0 and ln 3: %v, want 0.25 and 0.75", p)
	}
	// A colour image becomes grey by luma, exactly as color.GrayModel.
	rgb := image.NewRGBA(image.Rect(0, 0, 2, 1))
	rgb.Set(0, 0, color.RGBA{R: 255, A: 255})
	rgb.Set(1, 0, color.RGBA{G: 255, A: 255})
	if g := toGray(rgb); g.Pix[0] != 76 || g.Pix[1] != 150 {
		t.Errorf("grey of red and green: %v, want 76 and 150", g.Pix)
	}
}

// TestFitResumeKeepsOptimizer checks that a resumed run goes on with its
// checkpoint's optimizer and learning rate when --optimizer is not given,
// and refuses another --optimizer before any work.
func TestFitResumeKeepsOptimizer(t *testing.T) {
	dir := fashionDir(t)
	ck := filepath.Join(t.TempDir(), "ck.safetensors")
	if code, out, errs := runCLI(quickFit(dir, "--checkpoint", ck, "--optimizer", "sgd", "--learning-rate", "0.03")...); code != exitOK {
		t.Fatalf("first run: exit %d\n%s%s", code, out, errs)
	}
	code, out, errs := runCLI(quickFit(dir, "--checkpoint", ck, "--epochs", "2")...)
	want := "\nTraining on 100 samples, batch size 50, sgd with learning rate 0.03\nResuming from " + ck + ": 1 of 2 epochs done\nCompiling the training step for cpu… done in "
	if code != exitOK || !strings.Contains(out, want) {
		t.Errorf("resumed without --optimizer: exit %d, want the output to hold %q:\n%s%s", code, want, out, errs)
	}
	code, out, errs = runCLI(quickFit(dir, "--checkpoint", ck, "--epochs", "3", "--optimizer", "adam")...)
	if code != exitUsage || !strings.Contains(errs, "--optimizer adam differs from the optimizer sgd of checkpoint "+ck) || strings.Contains(out, "Epoch") {
		t.Errorf("resumed with another --optimizer: exit %d, want %d and a message naming both:\n%s%s", code, exitUsage, out, errs)
	}
}
