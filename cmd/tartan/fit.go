package main

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"github.com/tartanml/tartan/data"
	"github.com/tartanml/tartan/internal/fileinfo"
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
	// seedSet says whether --seed was given.
	seedSet bool
}

// fitReport is what --json writes.
type fitReport struct {
	Model          string              `json:"model"`
	Device         string              `json:"device"`
	Epochs         int                 `json:"epochs"`
	BatchSize      int                 `json:"batch_size"`
	TrainSamples   int                 `json:"train_samples"`
	CompileSeconds float64             `json:"compile_seconds"`
	EpochSeconds   []number            `json:"epoch_seconds"`
	History        map[string][]number `json:"history"`
	TestLoss       number              `json:"test_loss"`
	TestAccuracy   number              `json:"test_accuracy"`
	StopReason     string              `json:"stop_reason,omitempty"`
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
	fs.Int64Var(&o.seed, "seed", 0, "seed of the initial weights, the shuffling and the dropout masks (a resumed run keeps its checkpoint's seed)")
	fs.StringVar(&o.save, "save", "", "save the trained model (architecture and weights, safetensors) to FILE")
	fs.StringVar(&o.plot, "plot", "", "draw the loss and accuracy curves into FILE.png")
	fs.StringVar(&o.jsonPath, "json", "", "write the run's figures as JSON to FILE")
	fs.StringVar(&o.checkpoint, "checkpoint", "", "save a checkpoint to FILE after every epoch, and resume from it when it exists")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "Usage of tartan fit:\n")
		fs.PrintDefaults()
		fmt.Fprintf(fs.Output(), "\nOutput paths must name regular files (or new files in writable directories), each its own;\n"+
			"they are checked before training. Exit status: 0 success, 1 error, 2 usage error,\n"+
			"3 training stopped by a NaN, 70 internal error.\n")
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil, err
		}
		return nil, fmt.Errorf("%w: %v", errUsage, err)
	}
	fs.Visit(func(f *flag.Flag) { o.seedSet = o.seedSet || f.Name == "seed" })
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
	if strings.ContainsAny(o.checkpoint, "{}") {
		// nn.ModelCheckpoint would fill in {epoch}, but fit resumes from
		// one file of the name given.
		return nil, usageError("--checkpoint %q must not hold { or }: fit saves and resumes one file", o.checkpoint)
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

	// A batch larger than the data is one batch of all of it: asking for
	// no more keeps the host buffers sized by the data, not by the flag.
	fitOpts := []nn.FitOption{nn.BatchSize(min(o.batch, train.Len())), nn.Epochs(o.epochs), nn.Progress(stdout)}
	callbacks := []nn.Callback{nn.TerminateOnNaN()}
	if o.checkpoint != "" {
		if outs["checkpoint"].exists() {
			ck, err := resume(m, o)
			if err != nil {
				return err
			}
			fmt.Fprintf(stdout, "Resuming from %s: %d of %d epochs done\n", o.checkpoint, ck.Epoch, o.epochs)
			fitOpts = append(fitOpts, nn.Resume(ck))
		}
		callbacks = append(callbacks, nn.ModelCheckpoint(o.checkpoint))
	}
	fitOpts = append(fitOpts, nn.Callbacks(callbacks...))
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
		if err := plotHistory(o.plot, m.Name(), hist); err != nil {
			return err
		}
	}
	if o.jsonPath != "" {
		rep := fitReport{
			Model: o.model, Device: dev.Info().ID, Epochs: o.epochs, BatchSize: o.batch,
			TrainSamples: train.Len(), CompileSeconds: m.Stats().CompileSeconds,
			EpochSeconds: numbers(hist.EpochSeconds),
			History: map[string][]number{
				"loss":     numbers(hist.Metrics["loss"]),
				"accuracy": numbers(hist.Metrics["accuracy"]),
			},
			TestLoss: number(scores["loss"]), TestAccuracy: number(scores["accuracy"]), StopReason: hist.StopReason,
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

// maxHeader bounds the safetensors header checkpointSeed reads.
const maxHeader = 100 << 20

// checkpointSeed reads the seed recorded in a checkpoint's metadata, from
// the safetensors header alone.
func checkpointSeed(path string) (int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	var n [8]byte
	if _, err := io.ReadFull(f, n[:]); err != nil {
		return 0, fmt.Errorf("reading the header of %s: %w", path, err)
	}
	size := binary.LittleEndian.Uint64(n[:])
	fi, err := f.Stat()
	if err != nil {
		return 0, err
	}
	if size > maxHeader || size > uint64(fi.Size()-8) {
		return 0, fmt.Errorf("%s: a header of %d bytes does not fit a checkpoint of %d bytes", path, size, fi.Size())
	}
	header := make([]byte, size)
	if _, err := io.ReadFull(f, header); err != nil {
		return 0, fmt.Errorf("reading the header of %s: %w", path, err)
	}
	var doc struct {
		Metadata map[string]string `json:"__metadata__"`
	}
	if err := json.Unmarshal(header, &doc); err != nil {
		return 0, fmt.Errorf("%s: bad header: %w", path, err)
	}
	seed, err := strconv.ParseInt(doc.Metadata["seed"], 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%s: bad seed %q in the metadata", path, doc.Metadata["seed"])
	}
	return seed, nil
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
