package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"

	"github.com/tartanml/tartan/data"
	"github.com/tartanml/tartan/nn"
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
	save       string
	plot       string
	jsonPath   string
	checkpoint string
}

// fitReport is what --json writes.
type fitReport struct {
	Model          string               `json:"model"`
	Device         string               `json:"device"`
	Epochs         int                  `json:"epochs"`
	BatchSize      int                  `json:"batch_size"`
	TrainSamples   int                  `json:"train_samples"`
	CompileSeconds float64              `json:"compile_seconds"`
	EpochSeconds   []float64            `json:"epoch_seconds"`
	History        map[string][]float64 `json:"history"`
	TestLoss       float64              `json:"test_loss"`
	TestAccuracy   float64              `json:"test_accuracy"`
	StopReason     string               `json:"stop_reason,omitempty"`
}

func parseFit(args []string, stderr io.Writer) (*fitOptions, error) {
	o := &fitOptions{}
	fs := flag.NewFlagSet("tartan fit", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&o.model, "model", "fashion-cnn", "model to train: "+strings.Join(nn.ShowcaseModels(), ", "))
	fs.IntVar(&o.epochs, "epochs", 10, "number of epochs")
	fs.IntVar(&o.batch, "batch-size", 64, "samples per training step")
	fs.StringVar(&o.device, "device", "", "device id ("+knownDeviceForms+"); default: $TARTAN_DEVICE, then the configured device, then the best available")
	fs.StringVar(&o.dataDir, "data", "", "directory holding the Fashion-MNIST files (default: $TARTAN_DATA, the Keras cache, the system's copy)")
	fs.IntVar(&o.limit, "limit", 0, "train on the first N training samples only (0: all)")
	fs.Int64Var(&o.seed, "seed", 0, "seed of the initial weights, the shuffling and the dropout masks")
	fs.StringVar(&o.save, "save", "", "save the trained model (architecture and weights, safetensors) to FILE")
	fs.StringVar(&o.plot, "plot", "", "draw the loss and accuracy curves into FILE.png")
	fs.StringVar(&o.jsonPath, "json", "", "write the run's figures as JSON to FILE")
	fs.StringVar(&o.checkpoint, "checkpoint", "", "save a checkpoint to FILE after every epoch, and resume from it when it exists")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil, err
		}
		return nil, fmt.Errorf("%w: %v", errUsage, err)
	}
	switch {
	case fs.NArg() > 0:
		return nil, usageError("fit takes no arguments, got %q", fs.Args())
	case o.epochs < 1:
		return nil, usageError("--epochs %d must be at least 1", o.epochs)
	case o.batch < 1:
		return nil, usageError("--batch-size %d must be at least 1", o.batch)
	case o.limit < 0:
		return nil, usageError("--limit %d must not be negative", o.limit)
	}
	if o.plot != "" && !strings.HasSuffix(strings.ToLower(o.plot), ".png") {
		return nil, usageError("--plot %q must name a .png file", o.plot)
	}
	return o, nil
}

// fitCommand runs tartan fit.
func fitCommand(args []string, stdout, stderr io.Writer) error {
	o, err := parseFit(args, stderr)
	if err != nil {
		return err
	}
	m, err := nn.ShowcaseModel(o.model)
	if err != nil {
		return usageError("--model: %v", err)
	}
	dev, _, err := openDevice(o.device, stderr)
	if err != nil {
		return err
	}
	defer dev.Close()

	var dopts []data.Option
	if o.dataDir != "" {
		dopts = append(dopts, data.Dir(o.dataDir))
	}
	dopts = append(dopts, data.Log(stderr))
	trainSet, testSet, err := data.FashionMNIST(dopts...)
	if err != nil {
		return err
	}
	if o.limit > 0 {
		if o.limit > trainSet.Len() {
			return usageError("--limit %d exceeds the %d training samples", o.limit, trainSet.Len())
		}
		if trainSet, err = trainSet.Subset(o.limit); err != nil {
			return err
		}
	}
	train, err := nn.FromDataset(trainSet)
	if err != nil {
		return err
	}
	test, err := nn.FromDataset(testSet)
	if err != nil {
		return err
	}

	if err := m.InitWeights(o.seed); err != nil {
		return err
	}
	fmt.Fprint(stdout, m.Summary())
	if err := m.Compile(nn.Adam(1e-3), nn.SparseCategoricalCrossentropy(), nn.Metrics("accuracy"),
		nn.OnDevice(dev), nn.Seed(o.seed)); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "Device: %s (%s); training on %d samples, batch size %d\n", dev.Info().ID, dev.Info().Name, train.Len(), o.batch)

	fitOpts := []nn.FitOption{nn.BatchSize(o.batch), nn.Epochs(o.epochs), nn.Progress(stdout)}
	callbacks := []nn.Callback{nn.TerminateOnNaN()}
	if o.checkpoint != "" {
		if _, err := os.Stat(o.checkpoint); err == nil {
			ck, err := m.LoadCheckpoint(o.checkpoint)
			if err != nil {
				return fmt.Errorf("cannot resume: %w (remove %s to start afresh)", err, o.checkpoint)
			}
			if ck.Epoch > o.epochs {
				return usageError("checkpoint %s has %d epochs done, more than --epochs %d", o.checkpoint, ck.Epoch, o.epochs)
			}
			fmt.Fprintf(stdout, "Resuming from %s: %d of %d epochs done\n", o.checkpoint, ck.Epoch, o.epochs)
			fitOpts = append(fitOpts, nn.Resume(ck))
		} else if !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		callbacks = append(callbacks, nn.ModelCheckpoint(o.checkpoint))
	}
	fitOpts = append(fitOpts, nn.Callbacks(callbacks...))
	hist, err := m.Fit(train, fitOpts...)
	if err != nil {
		return err
	}
	scores, err := m.Evaluate(test, nn.BatchSize(o.batch), nn.Verbose(0))
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "Test accuracy: %.4f (loss %.4f) on %d samples\n", scores["accuracy"], scores["loss"], test.Len())

	if o.save != "" {
		if err := m.Save(o.save); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "Saved the model to %s\n", o.save)
	}
	if o.plot != "" {
		if err := plotHistory(o.plot, m.Name(), hist); err != nil {
			return err
		}
	}
	if o.jsonPath != "" {
		rep := fitReport{
			Model: o.model, Device: dev.Info().ID, Epochs: o.epochs, BatchSize: o.batch,
			TrainSamples: train.Len(), CompileSeconds: m.Stats().CompileSeconds,
			EpochSeconds: orEmpty(hist.EpochSeconds),
			History: map[string][]float64{
				"loss":     orEmpty(hist.Metrics["loss"]),
				"accuracy": orEmpty(hist.Metrics["accuracy"]),
			},
			TestLoss: scores["loss"], TestAccuracy: scores["accuracy"], StopReason: hist.StopReason,
		}
		if err := writeJSON(o.jsonPath, rep); err != nil {
			return err
		}
	}
	if hist.StopReason != "" {
		return fmt.Errorf("training stopped early: %s", hist.StopReason)
	}
	return nil
}

func orEmpty(v []float64) []float64 {
	if v == nil {
		return []float64{}
	}
	return v
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
// directory and a rename.
func writeAtomic(path string, b []byte) error {
	dir := "."
	if i := strings.LastIndex(path, "/"); i >= 0 {
		dir = path[:i+1]
	}
	f, err := os.CreateTemp(dir, ".tartan-*.tmp")
	if err != nil {
		return err
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
		err = os.Rename(tmp, path)
	}
	if err != nil {
		os.Remove(tmp)
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return nil
}
