package main

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"

	"github.com/tartanml/tartan/data"
	"github.com/tartanml/tartan/internal/fileinfo"
	"github.com/tartanml/tartan/nn"
	"github.com/tartanml/tartan/nn/plot"
	"github.com/tartanml/tartan/onnx"
)

// fitOptions are the flags of tartan fit.
type fitOptions struct {
	model      string
	epochs     int
	batch      int
	device     string
	dataDir    string
	limit      int
	seed       int64
	valSplit   float64
	optimizer  string
	lr         float64
	save       string
	plot       string
	jsonPath   string
	checkpoint string
	// seedSet, optSet and lrSet say whether --seed, --optimizer and
	// --learning-rate were given.
	seedSet, optSet, lrSet bool
}

// fitReport is what --json writes.
type fitReport struct {
	Model           string              `json:"model"`
	Device          string              `json:"device"`
	Epochs          int                 `json:"epochs"`
	BatchSize       int                 `json:"batch_size"`
	Optimizer       string              `json:"optimizer"`
	LearningRate    float64             `json:"learning_rate"`
	TrainSamples    int                 `json:"train_samples"`
	ValidationSplit float64             `json:"validation_split"`
	ValSamples      int                 `json:"validation_samples"`
	CompileSeconds  float64             `json:"compile_seconds"`
	EpochSeconds    []number            `json:"epoch_seconds"`
	History         map[string][]number `json:"history"`
	TestLoss        number              `json:"test_loss"`
	TestAccuracy    number              `json:"test_accuracy"`
	StopReason      string              `json:"stop_reason,omitempty"`
}

// defaultLearningRates are the learning rates of --optimizer when
// --learning-rate is not given: Keras's defaults.
var defaultLearningRates = map[string]float64{
	"adam": 1e-3, "sgd": 1e-2, "rmsprop": 1e-3, "adagrad": 1e-3, "nadam": 1e-3, "adamax": 1e-3, "lion": 1e-3,
}

const fitAbout = `Trains a model on Fashion-MNIST: a showcase model from freshly drawn weights,
a model saved by tartan fit --save, trained further with a new optimizer, or an
ONNX model (FILE.onnx), fine-tuned from its own weights.
Prints the model's summary, a progress bar per epoch (with the validation
loss and accuracy under --validation-split) and the accuracy on the test set.`

const fitFooter = `Output paths (--save, --json, --plot, --checkpoint) must name regular files
(or new files in writable directories), each its own; they are checked before
training. With --checkpoint a run resumes from the file when it exists, keeping
the checkpoint's seed and optimizer.

An ONNX --model needs one input that takes the images, of shape [N, 28, 28, 1]
(channels last), [N, 1, 28, 28] (channels first) or [N, 784] (flattened), with
the batch dimension N open, and one output of shape [N, 10]. The output is taken
for probabilities when its last node is Softmax and for logits otherwise, and
the loss is the cross-entropy of probabilities or from logits accordingly.
--save writes it back as ONNX (the graph as read, with the fine-tuned weights)
and must name a .onnx file.

Exit status: 0 success, 1 error, 2 usage error, 3 training stopped by a NaN,
70 internal error.`

func parseFit(args []string, stdout io.Writer) (*fitOptions, error) {
	o := &fitOptions{}
	f := newVerbFlags("fit", "fit [flags]", fitAbout, fitFooter)
	f.StringVar(&o.model, "model", "fashion-cnn", "the model to train, `NAME|FILE`: a showcase model ("+strings.Join(nn.ShowcaseModels(), ", ")+"),\na model saved by tartan fit --save, which trains further, or an ONNX model\n(FILE.onnx), which is fine-tuned")
	f.IntVar(&o.epochs, "epochs", 10, "train for `N` epochs")
	f.batchFlag(&o.batch, 64, "training and testing")
	f.deviceFlag(&o.device)
	f.dataFlag(&o.dataDir)
	f.IntVar(&o.limit, "limit", 0, "train on the first `N` training samples only (0: all)")
	f.Int64Var(&o.seed, "seed", 0, "the seed `S` of the initial weights, the shuffling and the dropout masks\n(a resumed run keeps its checkpoint's seed)")
	f.Float64Var(&o.valSplit, "validation-split", 0, "hold out the last fraction `F` (0 ≤ F < 1) of the training samples and\nreport val_loss and val_accuracy on them after every epoch")
	f.StringVar(&o.optimizer, "optimizer", "adam", "the optimizer `NAME`: adam, sgd, rmsprop, adagrad, nadam, adamax or lion")
	f.Float64Var(&o.lr, "learning-rate", 0, "the optimizer's learning rate `LR`\n(default: Keras's for the optimizer: adam 0.001, sgd 0.01, rmsprop 0.001;\nadam 0.0005 for fashion-vit)")
	f.StringVar(&o.save, "save", "", "save the trained model (architecture, weights and class names) to `FILE`\n(an ONNX --model: as ONNX with the fine-tuned weights, to a .onnx FILE)")
	f.StringVar(&o.plot, "plot", "", "draw the loss and accuracy curves and the test accuracy into `FILE`.png")
	f.jsonFlag(&o.jsonPath)
	f.StringVar(&o.checkpoint, "checkpoint", "", "save a checkpoint to `FILE` after every epoch, and resume from it\nwhen it exists")
	rest, err := f.parse(args, stdout)
	if err != nil {
		return nil, err
	}
	o.seedSet, o.optSet, o.lrSet = f.given("seed"), f.given("optimizer"), f.given("learning-rate")
	_, knownOpt := defaultLearningRates[o.optimizer]
	switch {
	case len(rest) > 0:
		return nil, usageError("fit takes no arguments, got %q", rest)
	case o.epochs < 1:
		return nil, usageError("--epochs %d must be at least 1", o.epochs)
	case o.batch < 1:
		return nil, usageError("--batch-size %d must be at least 1", o.batch)
	case o.limit < 0:
		return nil, usageError("--limit %d must not be negative", o.limit)
	case !(o.valSplit >= 0 && o.valSplit < 1):
		return nil, usageError("--validation-split %v must be at least 0 and below 1", o.valSplit)
	case !knownOpt:
		return nil, usageError("--optimizer %q is not one of adam, sgd, rmsprop, adagrad, nadam, adamax, lion", o.optimizer)
	case o.lrSet && !(o.lr > 0 && !math.IsInf(o.lr, 0)):
		return nil, usageError("--learning-rate %v must be a positive finite number", o.lr)
	}
	if !o.lrSet {
		o.lr = defaultLearningRates[o.optimizer]
		if o.optimizer == "adam" {
			o.lr = nn.ShowcaseAdamRate(o.model)
		}
	}
	if o.plot != "" && !strings.HasSuffix(strings.ToLower(o.plot), ".png") {
		return nil, usageError("--plot %q must name a .png file", o.plot)
	}
	if strings.ContainsAny(o.checkpoint, "{}") {
		// nn.ModelCheckpoint would fill in {epoch}, but fit resumes from
		// one file of the name given.
		return nil, usageError("--checkpoint %q must not hold { or }: fit saves and resumes one file", o.checkpoint)
	}
	return o, nil
}

// newOptimizer returns the optimizer of --optimizer and --learning-rate.
func newOptimizer(name string, lr float64) nn.Optimizer {
	switch name {
	case "sgd":
		return nn.SGD(lr)
	case "rmsprop":
		return nn.RMSprop(lr)
	case "adagrad":
		return nn.Adagrad(lr)
	case "nadam":
		return nn.Nadam(lr)
	case "adamax":
		return nn.Adamax(lr)
	case "lion":
		return nn.Lion(lr)
	}
	return nn.Adam(lr)
}

// fitModel returns the model --model names: a showcase model, whose
// weights are still to be drawn (fresh is true), or a model file saved by
// tartan fit --save (an ONNX file is newONNXClassifier's).
func fitModel(name string) (m *nn.Model, fresh bool, err error) {
	for _, s := range nn.ShowcaseModels() {
		if name == s {
			m, err := nn.ShowcaseModel(name)
			return m, true, err
		}
	}
	if _, err := os.Stat(name); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, false, usageError("--model: unknown model %q: neither a showcase model (%s) nor an existing file",
				name, strings.Join(nn.ShowcaseModels(), ", "))
		}
		return nil, false, fmt.Errorf("--model %s: %w", name, err)
	}
	m, err = loadModelFile("--model", name)
	return m, false, err
}

// fitCommand runs tartan fit.
func fitCommand(args []string, stdout, stderr io.Writer) error {
	o, err := parseFit(args, stdout)
	if err != nil {
		return err
	}
	var m *nn.Model
	var fresh bool
	var src *onnx.Model // an ONNX --model, made an nn model once the data is read
	if isONNX(o.model) {
		if o.save != "" && !isONNX(o.save) {
			return usageError("--save %s: an ONNX --model is saved as ONNX, its graph with the fine-tuned weights; give a .onnx file", o.save)
		}
		if src, err = loadONNXModel(o.model); err != nil {
			return err
		}
	} else if m, fresh, err = fitModel(o.model); err != nil {
		return err
	}
	// Everything the run will write is checked before the work starts, so
	// that a long run does not end in an error about its outputs.
	outs, err := checkOutputs(
		outputFlag{"checkpoint", o.checkpoint}, outputFlag{"save", o.save},
		outputFlag{"json", o.jsonPath}, outputFlag{"plot", o.plot})
	if err != nil {
		return err
	}
	if outs["checkpoint"].exists() {
		if err := checkResumeSeed(o); err != nil {
			return err
		}
		if err := checkResumeOptimizer(o); err != nil {
			return err
		}
	}
	dev, _, err := openDevice(o.device, stderr)
	if err != nil {
		return err
	}
	defer dev.Close()

	trainSet, testSet, err := loadFashion(o.dataDir, stderr)
	if err != nil {
		return err
	}
	// An empty test set would otherwise be noticed by Evaluate, after
	// the whole training.
	if trainSet.Len() == 0 {
		return fmt.Errorf("the training set %s has no samples: nothing to train on%s", trainSet.Name, dataHint(o.dataDir))
	}
	if testSet.Len() == 0 {
		return fmt.Errorf("the test set %s has no samples: nothing to evaluate the model on%s", testSet.Name, dataHint(o.dataDir))
	}
	if o.limit > 0 {
		if o.limit > trainSet.Len() {
			return usageError("--limit %d exceeds the %d training samples", o.limit, trainSet.Len())
		}
		if trainSet, err = trainSet.Subset(o.limit); err != nil {
			return err
		}
	}
	// The split nn.ValidationSplit makes: the last fraction held out.
	nTrain := trainSet.Len()
	if o.valSplit > 0 {
		nTrain = int(math.Floor(float64(trainSet.Len()) * (1 - o.valSplit)))
		if nTrain < 1 || nTrain == trainSet.Len() {
			return usageError("--validation-split %v of %d training samples leaves %d for training and %d for validation; both need at least one",
				o.valSplit, trainSet.Len(), nTrain, trainSet.Len()-nTrain)
		}
	}
	var oc *onnxClassifier
	if src != nil {
		if oc, err = newONNXClassifier(o.model, src, trainSet); err != nil {
			return err
		}
		m = oc.model
	} else if err := fitsData("--model "+o.model, m, trainSet); err != nil {
		return err
	}
	train, err := nn.FromDataset(trainSet)
	if err != nil {
		return err
	}
	test, err := nn.FromDataset(testSet)
	if err != nil {
		return err
	}

	if fresh {
		if err := m.InitWeights(o.seed); err != nil {
			return err
		}
	}
	if err := m.SetLabels(trainSet.ClassNames); err != nil {
		return fmt.Errorf("--model %s: %w", o.model, err)
	}
	fmt.Fprint(stdout, m.Summary())
	loss := nn.SparseCategoricalCrossentropy()
	if oc != nil {
		fmt.Fprintln(stdout, oc.about)
		loss = oc.loss()
	}
	if err := m.Compile(newOptimizer(o.optimizer, o.lr), loss, nn.Metrics("accuracy"),
		nn.OnDevice(dev), nn.Seed(o.seed)); err != nil {
		return err
	}

	// A batch larger than the data is one batch of all of it: asking for
	// no more keeps the host buffers sized by the data, not by the flag.
	fitOpts := []nn.FitOption{nn.BatchSize(min(o.batch, nTrain)), nn.Epochs(o.epochs), nn.Progress(progressWriter(stdout))}
	if o.valSplit > 0 {
		fitOpts = append(fitOpts, nn.ValidationSplit(o.valSplit))
	}
	callbacks := []nn.Callback{nn.TerminateOnNaN()}
	// The checkpoint is read before anything else is printed, so that an
	// error reading it follows the summary and nothing else.
	var ck *nn.Checkpoint
	if outs["checkpoint"].exists() {
		if ck, err = resume(m, o); err != nil {
			return err
		}
		fitOpts = append(fitOpts, nn.Resume(ck))
		if o.lrSet {
			// The checkpoint restored its learning rate; the flag asks
			// for another from now on.
			if err := m.SetLearningRate(o.lr); err != nil {
				return err
			}
		} else {
			lr, err := m.LearningRate()
			if err != nil {
				return err
			}
			// The device keeps it as a float32: say 0.03, not
			// 0.029999999329447746.
			o.lr, _ = strconv.ParseFloat(strconv.FormatFloat(lr, 'g', -1, 32), 64)
		}
	}
	if o.checkpoint != "" {
		callbacks = append(callbacks, nn.ModelCheckpoint(o.checkpoint))
	}
	fitOpts = append(fitOpts, nn.Callbacks(callbacks...))
	held := ""
	if o.valSplit > 0 {
		held = fmt.Sprintf(" (%d more held out for validation)", trainSet.Len()-nTrain)
	}
	fmt.Fprintf(stdout, "Device: %s (%s)\n", dev.Info().ID, dev.Info().Name)
	fmt.Fprintf(stdout, "Training on %d samples%s, batch size %d, %s with learning rate %g\n",
		nTrain, held, o.batch, o.optimizer, o.lr)
	if ck != nil {
		fmt.Fprintf(stdout, "Resuming from %s: %d of %d epochs done\n", o.checkpoint, ck.Epoch, o.epochs)
	}
	hist, err := m.Fit(train, fitOpts...)
	if err != nil {
		return err
	}
	scores, err := m.Evaluate(test, nn.BatchSize(min(o.batch, test.Len())), nn.Verbose(0))
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "Test accuracy: %.4f (loss %.4f) on %d samples\n", scores["accuracy"], scores["loss"], test.Len())

	stopped := hist.StopReason != ""
	switch {
	case o.save != "" && stopped:
		// The weights of a run stopped by a NaN are not worth keeping.
		fmt.Fprintf(stderr, "tartan: not saving the model to %s: training stopped early\n", o.save)
	case o.save != "" && oc != nil:
		if err := oc.save(o.save); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "Saved the fine-tuned ONNX model to %s\n", o.save)
	case o.save != "":
		if err := m.Save(o.save); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "Saved the model to %s\n", o.save)
	}
	switch {
	case o.plot != "" && stopped && len(hist.Epochs) == 0:
		fmt.Fprintf(stderr, "tartan: not writing %s: training stopped before the first epoch ended\n", o.plot)
	case o.plot != "":
		opts := []plot.Option{plot.Title(m.Name())}
		if acc := scores["accuracy"]; !math.IsNaN(acc) && !math.IsInf(acc, 0) {
			opts = append(opts, plot.TestAccuracy(acc))
		}
		if err := writePlot(o.plot, hist, opts...); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "Saved the plot to %s\n", o.plot)
	}
	if o.jsonPath != "" {
		history := map[string][]number{"loss": {}, "accuracy": {}}
		for k, v := range hist.Metrics {
			history[k] = numbers(v)
		}
		rep := fitReport{
			Model: o.model, Device: dev.Info().ID, Epochs: o.epochs, BatchSize: o.batch,
			Optimizer: o.optimizer, LearningRate: o.lr,
			TrainSamples: nTrain, ValidationSplit: o.valSplit, ValSamples: trainSet.Len() - nTrain,
			CompileSeconds: m.Stats().CompileSeconds,
			EpochSeconds:   numbers(hist.EpochSeconds),
			History:        history,
			TestLoss:       number(scores["loss"]), TestAccuracy: number(scores["accuracy"]), StopReason: hist.StopReason,
		}
		if err := writeJSON(o.jsonPath, rep); err != nil {
			return err
		}
	}
	if hist.StopReason != "" {
		return fmt.Errorf("%w: %s", errStopped, hist.StopReason)
	}
	return nil
}

// loadFashion reads Fashion-MNIST from dir, or from where the data package
// looks when dir is empty, logging to stderr.
func loadFashion(dir string, stderr io.Writer) (train, test *data.Dataset, err error) {
	var dopts []data.Option
	if dir != "" {
		dopts = append(dopts, data.Dir(dir))
	}
	dopts = append(dopts, data.Log(stderr))
	return data.FashionMNIST(dopts...)
}

// fitsData checks that model m takes the samples of d and has an output
// per class of d; what names the model in the error.
func fitsData(what string, m *nn.Model, d *data.Dataset) error {
	in, want := m.InputShape(), d.SampleShape()
	if !slices.Equal(in, want) {
		return fmt.Errorf("%s takes inputs of shape %v, but the images of %s are %v", what, in, d.Name, want)
	}
	out := m.OutputShape()
	if len(out) != 1 || out[0] != d.Classes {
		return fmt.Errorf("%s has outputs of shape %v, but %s has %d classes (a model for it ends in %d values)", what, out, d.Name, d.Classes, d.Classes)
	}
	return nil
}

// writePlot draws the curves of hist into the PNG file path, written like
// every output (writeAtomic).
func writePlot(path string, hist *nn.History, opts ...plot.Option) error {
	b, err := plot.PNG(hist, opts...)
	if err != nil {
		return fmt.Errorf("--plot: %w", err)
	}
	return writeAtomic(path, b)
}

// number is a float64 that JSON holds as null when it is NaN or infinite
// (a run stopped by a NaN loss still writes its report).
type number float64

// MarshalJSON implements json.Marshaler.
func (x number) MarshalJSON() ([]byte, error) {
	f := float64(x)
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return []byte("null"), nil
	}
	return json.Marshal(f)
}

// UnmarshalJSON implements json.Unmarshaler: null is NaN.
func (x *number) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		*x = number(math.NaN())
		return nil
	}
	var f float64
	if err := json.Unmarshal(b, &f); err != nil {
		return err
	}
	*x = number(f)
	return nil
}

// numbers converts v, giving an empty list (not null) for none.
func numbers(v []float64) []number {
	out := make([]number, len(v))
	for i, f := range v {
		out[i] = number(f)
	}
	return out
}

// dataHint says where the data came from, for messages.
func dataHint(dir string) string {
	if dir == "" {
		return " (give --data DIR to use other files)"
	}
	return " (from --data " + dir + ")"
}

// checkResumeSeed refuses an explicit --seed that differs from the seed of
// the checkpoint the run will resume from: the resumed run goes on with the
// checkpoint's seed, so the flag would be ignored. A checkpoint whose seed
// cannot be read is left for the resume to report.
func checkResumeSeed(o *fitOptions) error {
	if !o.seedSet {
		return nil
	}
	seed, err := checkpointSeed(o.checkpoint)
	if err != nil || seed == o.seed {
		return nil
	}
	return usageError("--seed %d differs from the seed %d of checkpoint %s, and a resumed run keeps its checkpoint's seed: "+
		"resume with --seed %d or without --seed, or remove %s to start afresh with seed %d",
		o.seed, seed, o.checkpoint, seed, o.checkpoint, o.seed)
}

// checkResumeOptimizer makes a resumed run keep its checkpoint's optimizer
// (a run resumed without --optimizer goes on with it), and refuses an
// explicit --optimizer that differs from it. A checkpoint whose optimizer
// cannot be read is left for the resume to report.
func checkResumeOptimizer(o *fitOptions) error {
	meta, err := checkpointMetadata(o.checkpoint)
	if err != nil {
		return nil
	}
	var cfg struct {
		Name string `json:"name"`
	}
	if json.Unmarshal([]byte(meta["optimizer"]), &cfg) != nil {
		return nil
	}
	if _, ok := defaultLearningRates[cfg.Name]; !ok || cfg.Name == o.optimizer {
		return nil
	}
	if o.optSet {
		return usageError("--optimizer %s differs from the optimizer %s of checkpoint %s, and a resumed run keeps its checkpoint's optimizer: "+
			"resume with --optimizer %s or without --optimizer, or remove %s to start afresh with %s",
			o.optimizer, cfg.Name, o.checkpoint, cfg.Name, o.checkpoint, o.optimizer)
	}
	o.optimizer = cfg.Name
	return nil
}

// resume loads the checkpoint of o into m, which is compiled.
func resume(m *nn.Model, o *fitOptions) (*nn.Checkpoint, error) {
	ck, err := m.LoadCheckpoint(o.checkpoint)
	if err != nil {
		return nil, fmt.Errorf("cannot resume: %w (remove %s to start afresh)", err, o.checkpoint)
	}
	if ck.Epoch > o.epochs {
		return nil, usageError("checkpoint %s has %d epochs done, more than --epochs %d", o.checkpoint, ck.Epoch, o.epochs)
	}
	return ck, nil
}

// maxHeader bounds the safetensors header checkpointMetadata reads.
const maxHeader = 100 << 20

// checkpointSeed reads the seed recorded in a checkpoint's metadata.
func checkpointSeed(path string) (int64, error) {
	meta, err := checkpointMetadata(path)
	if err != nil {
		return 0, err
	}
	seed, err := strconv.ParseInt(meta["seed"], 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%s: bad seed %q in the metadata", path, meta["seed"])
	}
	return seed, nil
}

// checkpointMetadata reads a checkpoint's metadata from the safetensors
// header alone, unchecked (the resume checks the whole file).
func checkpointMetadata(path string) (map[string]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var n [8]byte
	if _, err := io.ReadFull(f, n[:]); err != nil {
		return nil, fmt.Errorf("reading the header of %s: %w", path, err)
	}
	size := binary.LittleEndian.Uint64(n[:])
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if size > maxHeader || size > uint64(fi.Size()-8) {
		return nil, fmt.Errorf("%s: a header of %d bytes does not fit a checkpoint of %d bytes", path, size, fi.Size())
	}
	header := make([]byte, size)
	if _, err := io.ReadFull(f, header); err != nil {
		return nil, fmt.Errorf("reading the header of %s: %w", path, err)
	}
	var doc struct {
		Metadata map[string]string `json:"__metadata__"`
	}
	if err := json.Unmarshal(header, &doc); err != nil {
		return nil, fmt.Errorf("%s: bad header: %w", path, err)
	}
	return doc.Metadata, nil
}

// writeJSON writes v to path through a temporary file and a rename.
func writeJSON(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return fmt.Errorf("--json: %w (a value is not a finite number)", err)
	}
	return writeAtomic(path, append(b, '\n'))
}

// writeAtomic writes b to path through a synced temporary file in the same
// directory and a rename. When path is a symbolic link, the file it leads
// to is replaced and the link stays.
func writeAtomic(path string, b []byte) error {
	target, _, err := followLinks(path)
	if err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	f, err := os.CreateTemp(filepath.Dir(target), ".tartan-*.tmp")
	if err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	tmp := f.Name()
	err = f.Chmod(0o644)
	if err == nil {
		_, err = f.Write(b)
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, target)
	}
	if err != nil {
		os.Remove(tmp)
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return nil
}

// outputFlag is an output path and the flag (without dashes) that named it;
// an empty path is an output not asked for.
type outputFlag struct{ flag, path string }

// output is a checked output path.
type output struct {
	outputFlag
	// target is the file written: path with its symbolic links followed.
	target string
	// info describes target when it exists; it is a regular file then.
	info fs.FileInfo
	// key is target as an absolute path with every link followed.
	key string
}

// exists reports whether the output's file exists already.
func (o output) exists() bool { return o.info != nil }

// maxLinks bounds the symbolic links followed from one path.
const maxLinks = 40

// followLinks follows the symbolic links from path to the file they lead
// to, which need not exist (a dangling link names the file to create). It
// returns that file's path and, when it exists, its FileInfo. A path that
// leads through a file that is not a directory does not exist.
func followLinks(path string) (string, fs.FileInfo, error) {
	fi, err := os.Stat(path)
	if err == nil {
		target, err := filepath.EvalSymlinks(path)
		if err != nil {
			// Special links (such as /dev/stdout to a pipe) lead to no path.
			target = path
		}
		return target, fi, nil
	}
	p := path
	for hops := 0; ; hops++ {
		fi, err := os.Lstat(p)
		if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
			return p, nil, nil
		}
		if err != nil {
			return p, nil, err
		}
		if fi.Mode()&fs.ModeSymlink == 0 {
			// It exists after all, but Stat failed: say why.
			_, err := os.Stat(p)
			return p, nil, err
		}
		if hops == maxLinks {
			return p, nil, fmt.Errorf("more than %d symbolic links from %s (a loop?)", maxLinks, path)
		}
		t, err := os.Readlink(p)
		if err != nil {
			return p, nil, err
		}
		if !filepath.IsAbs(t) {
			t = filepath.Join(filepath.Dir(p), t)
		}
		p = t
	}
}

// checkOutputs checks, before any work, that every output can be written:
// the path names a regular file (perhaps through symbolic links) or a file
// that does not exist yet, its directory exists and accepts new files (a
// temporary file is created there and removed, since outputs are written
// to a temporary file and renamed), and no two outputs are the same file,
// compared by their absolute paths with every link followed and, for files
// that exist, by identity (hard links). Outputs with an empty path are
// left out. A path that names something other than a regular file, or
// that collides with another output, is a usage error.
func checkOutputs(flags ...outputFlag) (map[string]output, error) {
	outs := map[string]output{}
	var checked []output
	keys := map[string]string{} // canonical path -> flag
	probed := map[string]error{}
	for _, f := range flags {
		if f.path == "" {
			continue
		}
		o, err := checkOutput(f, probed)
		if err != nil {
			return nil, err
		}
		if other, ok := keys[o.key]; ok {
			return nil, collision(outs[other], o)
		}
		for _, c := range checked {
			if c.info != nil && o.info != nil && os.SameFile(c.info, o.info) {
				return nil, collision(c, o)
			}
		}
		keys[o.key] = f.flag
		outs[f.flag] = o
		checked = append(checked, o)
	}
	return outs, nil
}

// collision is the usage error for two outputs that are one file.
func collision(a, b output) error {
	what := ""
	switch {
	case a.path == b.path:
	case a.key == b.key:
		what = " " + b.key
	default:
		what = " (hard links to one file)"
	}
	return usageError("--%s %s and --%s %s name the same file%s: one would overwrite the other; give each output its own file",
		a.flag, a.path, b.flag, b.path, what)
}

// checkOutput checks one output path. probed caches the result of each
// directory's write test.
func checkOutput(f outputFlag, probed map[string]error) (output, error) {
	o := output{outputFlag: f}
	if strings.HasSuffix(f.path, "/") || strings.HasSuffix(f.path, string(filepath.Separator)) {
		return o, usageError("--%s %s ends in a slash: it must name a file", f.flag, f.path)
	}
	target, fi, err := followLinks(f.path)
	if err != nil {
		return o, fmt.Errorf("--%s %s: %w", f.flag, f.path, err)
	}
	o.target, o.info = target, fi
	via := ""
	if target != f.path {
		via = fmt.Sprintf(" (a symbolic link to %s)", target)
	}
	if fi != nil && !fi.Mode().IsRegular() {
		return o, usageError("--%s %s%s is %s, not a regular file: name a file to write", f.flag, f.path, via, fileinfo.Kind(fi.Mode()))
	}
	// The temporary file goes next to the link (where a rename replaces
	// it) or next to the file it leads to (where a write through the link
	// goes): both directories must take new files.
	dirs := []string{filepath.Dir(f.path)}
	if d := filepath.Dir(target); d != dirs[0] {
		dirs = append(dirs, d)
	}
	for _, dir := range dirs {
		if err := probeDir(dir, probed); err != nil {
			return o, fmt.Errorf("--%s %s%s: %w", f.flag, f.path, via, err)
		}
	}
	dir, err := filepath.EvalSymlinks(filepath.Dir(target))
	if err == nil {
		dir, err = filepath.Abs(dir)
	}
	if err != nil {
		return o, fmt.Errorf("--%s %s: %w", f.flag, f.path, err)
	}
	o.key = filepath.Join(dir, filepath.Base(target))
	return o, nil
}

// probeDir checks that dir is a directory in which a file can be created,
// by creating and removing one.
func probeDir(dir string, probed map[string]error) error {
	if err, ok := probed[dir]; ok {
		return err
	}
	err := func() error {
		fi, err := os.Stat(dir)
		if errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("the directory %s does not exist", dir)
		}
		if err != nil {
			return err
		}
		if !fi.IsDir() {
			return fmt.Errorf("%s is %s, not a directory", dir, fileinfo.Kind(fi.Mode()))
		}
		tmp, err := os.CreateTemp(dir, ".tartan-probe-*")
		if err != nil {
			var pe *fs.PathError
			if errors.As(err, &pe) {
				err = pe.Err
			}
			return fmt.Errorf("cannot create files in %s: %w", dir, err)
		}
		name := tmp.Name()
		tmp.Close()
		if err := os.Remove(name); err != nil {
			return fmt.Errorf("cannot remove files in %s: %w", dir, err)
		}
		return nil
	}()
	probed[dir] = err
	return err
}
