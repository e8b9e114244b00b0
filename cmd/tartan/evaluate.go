package main

import (
	"fmt"
	"io"

	"github.com/tartanml/tartan/nn"
)

// evaluateReport is what evaluate's --json writes.
type evaluateReport struct {
	Model        string `json:"model"`
	Name         string `json:"name"`
	Device       string `json:"device"`
	BatchSize    int    `json:"batch_size"`
	TestSamples  int    `json:"test_samples"`
	TestLoss     number `json:"test_loss"`
	TestAccuracy number `json:"test_accuracy"`
}

const evaluateAbout = `Loads MODEL, a model saved by tartan fit --save, and prints its loss and
accuracy on the Fashion-MNIST test set.`

// evaluateCommand runs tartan evaluate.
func evaluateCommand(args []string, stdout, stderr io.Writer) error {
	var dev, dataDir, jsonPath string
	var batch int
	f := newVerbFlags("evaluate", "evaluate MODEL [flags]", evaluateAbout, exitHelp)
	f.dataFlag(&dataDir)
	f.deviceFlag(&dev)
	f.batchFlag(&batch, 64, "the evaluation")
	f.jsonFlag(&jsonPath)
	rest, err := f.parse(args, stdout)
	if err != nil {
		return err
	}
	switch {
	case len(rest) == 0:
		return usageError("evaluate needs MODEL, the file of a model saved by tartan fit --save")
	case len(rest) > 1:
		return usageError("evaluate takes one MODEL, got %q", rest)
	case batch < 1:
		return usageError("--batch-size %d must be at least 1", batch)
	}
	path := rest[0]
	if _, err := checkOutputs(outputFlag{"json", jsonPath}); err != nil {
		return err
	}
	m, err := loadModelFile("model", path)
	if err != nil {
		return err
	}
	d, _, err := openDevice(dev, stderr)
	if err != nil {
		return err
	}
	defer d.Close()
	_, testSet, err := loadFashion(dataDir, stderr)
	if err != nil {
		return err
	}
	if testSet.Len() == 0 {
		return fmt.Errorf("the test set %s has no samples: nothing to evaluate the model on%s", testSet.Name, dataHint(dataDir))
	}
	if err := fitsData("model "+path, m, testSet); err != nil {
		return err
	}
	test, err := nn.FromDataset(testSet)
	if err != nil {
		return err
	}
	// Evaluate needs a compiled model; the optimizer is never used, and
	// SGD without momentum keeps no state.
	if err := m.Compile(nn.SGD(0.01), nn.SparseCategoricalCrossentropy(), nn.Metrics("accuracy"), nn.OnDevice(d)); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "Model: %s, from %s\n", m.Name(), path)
	fmt.Fprintf(stdout, "Device: %s (%s)\n", d.Info().ID, d.Info().Name)
	scores, err := m.Evaluate(test, nn.BatchSize(min(batch, test.Len())), nn.Verbose(0))
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "Test accuracy: %.4f (loss %.4f) on %d samples\n", scores["accuracy"], scores["loss"], test.Len())
	if jsonPath != "" {
		return writeJSON(jsonPath, evaluateReport{
			Model: path, Name: m.Name(), Device: d.Info().ID, BatchSize: batch, TestSamples: test.Len(),
			TestLoss: number(scores["loss"]), TestAccuracy: number(scores["accuracy"]),
		})
	}
	return nil
}
