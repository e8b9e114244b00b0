package nn

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/tartanml/tartan/tile"
)

// Files written here are safetensors files (see WriteSafetensors) whose
// "__metadata__" says what they hold:
//
//   - weights (SaveWeights): every weight as an F32 tensor named like
//     "conv2d/kernel"; metadata format "tartan.weights".
//   - a whole model (Save): the same tensors, plus the architecture JSON
//     (Model.Architecture) under "architecture"; format "tartan.model".
//   - a checkpoint (SaveCheckpoint, ModelCheckpoint): the weights, the
//     optimizer's slots ("optimizer/m/conv2d/kernel", …), its step counter
//     "optimizer/iterations" (I64) and learning rate
//     "optimizer/learning_rate", the dropout seed "rng/seed" (I64), and in
//     the metadata the architecture, the optimizer's configuration, the
//     number of epochs completed ("epoch") and the history so far (JSON);
//     format "tartan.checkpoint".
//
// A model or checkpoint whose outputs are named (Model.SetLabels) also
// carries the names in its metadata, as a JSON list under "labels".
//
// Every file is written atomically (a temporary file in the same directory,
// synced, then renamed), and every load checks the whole file before it
// changes anything: a truncated file, one from another architecture or with
// missing or misshapen tensors is an error and the model is left as it was.
//
// Files are at version 2 (metadata "version"): their metadata carries a
// CRC-32C checksum of every tensor and of the metadata itself (see
// WriteSafetensors), verified on every load, so a damaged byte is an error
// naming the file and the tensor. Version 1 files, written before
// checksums existed (weights files then had no version), still load,
// unchecked; a version 2 file without checksums is damaged and rejected.
// Files of other tools (no Tartan format) have no checksums to check.
//
// A load also rejects values no training can have produced and that would
// silently ruin training from them: a weight, optimizer slot or learning
// rate that is NaN or infinite, a negative second moment (Adam's and
// AdamW's "v", RMSprop's "velocity" slots, running means of squared
// gradients), a negative step counter.

const (
	// fileVersion is the version of the files written now: 2, whose
	// metadata carries checksums. Version 1 files (and weights files
	// without a version, which predate it) have none.
	fileVersion      = "2"
	weightsFormat    = "tartan.weights"
	modelFormat      = "tartan.model"
	checkpointFormat = "tartan.checkpoint"
)

// SaveWeights writes the model's weights to a safetensors file.
func (m *Model) SaveWeights(path string) error {
	ts, err := m.weightTensors()
	if err != nil {
		return err
	}
	return WriteSafetensors(path, ts, map[string]string{"format": weightsFormat, "version": fileVersion, "model": m.name})
}

// weightTensors returns every weight as an F32 tensor.
func (m *Model) weightTensors() ([]SafeTensor, error) {
	var ts []SafeTensor
	for _, w := range m.weights {
		v, err := m.st.f32(w.Name())
		if err != nil {
			return nil, err
		}
		ts = append(ts, F32Tensor(w.Name(), w.shape, v))
	}
	return ts, nil
}

// LoadWeights reads weights written by SaveWeights, Save or SaveCheckpoint
// (or any safetensors file with the same names and shapes, such as one
// written by PyTorch). Every weight of the model must be in the file with
// its shape; tensors the model lacks, other than optimizer and training
// state, make it an error too. Nothing changes unless all of it loads.
func (m *Model) LoadWeights(path string) error {
	ts, _, err := readFile(path)
	if err != nil {
		return fmt.Errorf("nn: loading weights: %w", err)
	}
	return m.setWeightTensors(path, ts)
}

// readFile reads a safetensors file and checks its version: a Tartan file
// of the current version must carry checksums (ReadSafetensors verified
// them), one of version 1 predates them.
func readFile(path string) ([]SafeTensor, map[string]string, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, nil, err
	}
	return parseFile(path, raw)
}

// parseFile is readFile of the contents raw of the file at path.
func parseFile(path string, raw []byte) ([]SafeTensor, map[string]string, error) {
	ts, meta, err := parseSafetensors(raw)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", path, err)
	}
	f := meta["format"]
	if !strings.HasPrefix(f, "tartan.") {
		return ts, meta, nil
	}
	switch v := meta["version"]; {
	case v == "1" || v == "" && f == weightsFormat:
		// Written before checksums existed.
	case v == fileVersion:
		if _, ok := meta[checksumsKey]; !ok {
			return nil, nil, fmt.Errorf("%s: %w: a version %s file without its checksums (the header is damaged)", path, ErrBadSafetensors, v)
		}
	default:
		return nil, nil, fmt.Errorf("%s: %s file version %q is not one this build reads (1 or %s; written by a newer Tartan?)", path, f, v, fileVersion)
	}
	return ts, meta, nil
}

// firstNonFinite returns the index of the first NaN or infinite value, or
// -1.
func firstNonFinite(v []float32) int {
	for i, x := range v {
		if x-x != 0 { // NaN or ±Inf
			return i
		}
	}
	return -1
}

// checkFinite returns an error naming the tensor and the file when v holds
// a NaN or an infinity.
func checkFinite(path, what, name string, v []float32) error {
	if i := firstNonFinite(v); i >= 0 {
		return fmt.Errorf("nn: %s: %s %s holds %v at element %d of %d; a file with a non-finite value is damaged or comes from a diverged run, and is not loaded", path, what, name, v[i], i, len(v))
	}
	return nil
}

// setWeightTensors checks that ts hold every weight of the model and
// nothing foreign, then sets them.
func (m *Model) setWeightTensors(path string, ts []SafeTensor) error {
	byName := map[string]*SafeTensor{}
	for i := range ts {
		byName[ts[i].Name] = &ts[i]
	}
	vals := map[string][]float32{}
	var problems []string
	for _, w := range m.weights {
		t := byName[w.Name()]
		if t == nil {
			problems = append(problems, fmt.Sprintf("weight %s %v is missing", w.Name(), w.shape))
			continue
		}
		if !w.shape.Equal(t.Shape) {
			problems = append(problems, fmt.Sprintf("weight %s is %v in the model but %v in the file", w.Name(), w.shape, t.Shape))
			continue
		}
		if t.DType != "F32" && t.DType != "F64" && t.DType != "F16" && t.DType != "BF16" {
			problems = append(problems, fmt.Sprintf("weight %s is %s in the file, not floating-point", w.Name(), t.DType))
			continue
		}
		v, err := t.Float32s()
		if err != nil {
			problems = append(problems, err.Error())
			continue
		}
		if err := checkFinite(path, "weight", w.Name(), v); err != nil {
			return err
		}
		vals[w.Name()] = v
	}
	for _, t := range ts {
		if m.weight(t.Name) == nil && !isStateName(t.Name) {
			problems = append(problems, fmt.Sprintf("tensor %s %v in the file is not a weight of the model", t.Name, t.Shape))
		}
	}
	if len(problems) > 0 {
		if len(problems) > 6 {
			problems = append(problems[:6], fmt.Sprintf("and %d more", len(problems)-6))
		}
		return fmt.Errorf("nn: %s does not fit model %q (written by a different architecture?): %s", path, m.name, strings.Join(problems, "; "))
	}
	for name, v := range vals {
		if !m.st.has(name) {
			m.st.declare(name, tile.Float32, m.weight(name).shape)
		}
		if err := m.st.setF32(name, v); err != nil {
			return err
		}
	}
	return nil
}

// isStateName reports whether a tensor name is optimizer or training state
// rather than a weight.
func isStateName(name string) bool {
	return strings.HasPrefix(name, "optimizer/") || strings.HasPrefix(name, "rng/")
}

// Save writes the whole model, architecture and weights, to one safetensors
// file; Load reads it back.
func (m *Model) Save(path string) error {
	ts, meta, err := m.modelContents()
	if err != nil {
		return err
	}
	return WriteSafetensors(path, ts, meta)
}

// modelContents returns the tensors and metadata Save writes.
func (m *Model) modelContents() ([]SafeTensor, map[string]string, error) {
	arch, err := m.Architecture()
	if err != nil {
		return nil, nil, err
	}
	ts, err := m.weightTensors()
	if err != nil {
		return nil, nil, err
	}
	meta := map[string]string{"format": modelFormat, "version": fileVersion, "architecture": string(arch)}
	if err := m.putLabels(meta); err != nil {
		return nil, nil, err
	}
	return ts, meta, nil
}

// labelsKey is the metadata key of the output names.
const labelsKey = "labels"

// SetLabels names the model's outputs, one name per output value (such as
// a data set's class names, by label); nil removes the names. Save and
// SaveCheckpoint keep them in the file and Load restores them, so that a
// program loading the model can say what it predicts. The model must have
// one output, and names must count its values (the product of
// OutputShape).
func (m *Model) SetLabels(names []string) error {
	if names == nil {
		m.st.labels = nil
		return nil
	}
	if err := m.checkLabels(names); err != nil {
		return fmt.Errorf("nn: SetLabels: %w", err)
	}
	m.st.labels = slices.Clone(names)
	return nil
}

// Labels returns the names of the model's outputs given to SetLabels or
// read by Load, or nil when it has none.
func (m *Model) Labels() []string { return slices.Clone(m.st.labels) }

// checkLabels checks that names fit the model's outputs.
func (m *Model) checkLabels(names []string) error {
	if len(m.outputs) != 1 {
		return fmt.Errorf("model %q has %d outputs; labels name the values of a single one", m.name, len(m.outputs))
	}
	if n := m.outputs[0].shape.Size(); len(names) != n {
		return fmt.Errorf("%d labels for the %d values of model %q's output %v", len(names), n, m.name, m.outputs[0].shape)
	}
	return nil
}

// putLabels adds the model's labels, if any, to file metadata.
func (m *Model) putLabels(meta map[string]string) error {
	if m.st.labels == nil {
		return nil
	}
	b, err := json.Marshal(m.st.labels)
	if err != nil {
		return err
	}
	meta[labelsKey] = string(b)
	return nil
}

// loadLabels sets the model's labels from file metadata read from path.
func (m *Model) loadLabels(path string, meta map[string]string) error {
	js, ok := meta[labelsKey]
	if !ok {
		return nil
	}
	var names []string
	if err := json.Unmarshal([]byte(js), &names); err != nil {
		return fmt.Errorf("nn: %s: bad %q metadata (a JSON list of strings): %v", path, labelsKey, err)
	}
	if names == nil {
		names = []string{}
	}
	if err := m.checkLabels(names); err != nil {
		return fmt.Errorf("nn: %s: %q metadata: %w", path, labelsKey, err)
	}
	m.st.labels = names
	return nil
}

// Load reads a model written by Save (or a checkpoint): it rebuilds the
// architecture and sets the weights and the labels (SetLabels). The model has no device and is not
// compiled. The architecture's weights are checked against the file's
// tensors before any of them is allocated, so a small file cannot declare
// a model larger than itself.
func Load(path string) (*Model, error) {
	ts, meta, err := readFile(path)
	if err != nil {
		return nil, fmt.Errorf("nn: loading model: %w", err)
	}
	return loadModel(path, ts, meta)
}

// loadModel is Load of the tensors and metadata read from path.
func loadModel(path string, ts []SafeTensor, meta map[string]string) (*Model, error) {
	if f := meta["format"]; f != modelFormat && f != checkpointFormat {
		return nil, fmt.Errorf("nn: %s holds %s, not a model (write one with Model.Save)", path, describeFormat(f))
	}
	m, err := decodeArchitecture([]byte(meta["architecture"]))
	if err != nil {
		return nil, fmt.Errorf("nn: %s: %w", path, err)
	}
	if err := m.setWeightTensors(path, ts); err != nil {
		return nil, err
	}
	if err := m.loadLabels(path, meta); err != nil {
		return nil, err
	}
	return m, nil
}

func describeFormat(f string) string {
	switch f {
	case "":
		return "tensors without Tartan metadata"
	case weightsFormat:
		return "weights only (read them with LoadWeights)"
	}
	return "format " + strconv.Quote(f)
}

// Checkpoint is what LoadCheckpoint read: where training stopped. Pass it to
// Fit with Resume to continue.
type Checkpoint struct {
	// Epoch is the number of epochs completed, which is the epoch (counted
	// from 0) at which training resumes.
	Epoch int
	// History holds the epochs run before the checkpoint.
	History *History
}

// SaveCheckpoint writes everything needed to resume training after epochs
// completed epochs: weights, optimizer state, step counter, seed, and the
// history of the last Fit. The model must be compiled.
func (m *Model) SaveCheckpoint(path string, epochs int) error {
	return m.saveCheckpoint(path, epochs, m.history)
}

func (m *Model) saveCheckpoint(path string, epochs int, hist *History) error {
	ts, meta, err := m.checkpointContents(epochs, hist)
	if err != nil {
		return err
	}
	return WriteSafetensors(path, ts, meta)
}

// checkpointContents returns the tensors and metadata a checkpoint after
// epochs epochs holds.
func (m *Model) checkpointContents(epochs int, hist *History) ([]SafeTensor, map[string]string, error) {
	if m.comp == nil {
		return nil, nil, fmt.Errorf("nn: SaveCheckpoint %q: %w", m.name, errNotCompiled)
	}
	arch, err := m.Architecture()
	if err != nil {
		return nil, nil, err
	}
	ts, err := m.weightTensors()
	if err != nil {
		return nil, nil, err
	}
	names := m.stateNames()
	for _, n := range names {
		v := m.st.vars[n]
		if v.dtype == tile.Int64 {
			x, err := m.st.i64(n)
			if err != nil {
				return nil, nil, err
			}
			ts = append(ts, I64Tensor(n, v.shape, x))
			continue
		}
		x, err := m.st.f32(n)
		if err != nil {
			return nil, nil, err
		}
		ts = append(ts, F32Tensor(n, v.shape, x))
	}
	optCfg, err := json.Marshal(optimizerConfig(m.comp.opt))
	if err != nil {
		return nil, nil, err
	}
	if hist == nil {
		hist = newHistory()
	}
	histJSON, err := json.Marshal(historyJSON(hist))
	if err != nil {
		return nil, nil, err
	}
	meta := map[string]string{
		"format":       checkpointFormat,
		"version":      fileVersion,
		"architecture": string(arch),
		"optimizer":    string(optCfg),
		"loss":         m.comp.loss.Name(),
		"epoch":        strconv.Itoa(epochs),
		"seed":         strconv.FormatInt(m.seed, 10),
		"history":      string(histJSON),
	}
	if err := m.putLabels(meta); err != nil {
		return nil, nil, err
	}
	return ts, meta, nil
}

// stateNames lists the optimizer and seed variables a checkpoint holds, in
// a fixed order.
func (m *Model) stateNames() []string {
	var names []string
	for n := range m.st.vars {
		if isStateName(n) {
			names = append(names, n)
		}
	}
	slices.Sort(names)
	return names
}

// LoadCheckpoint restores a checkpoint written by SaveCheckpoint or
// ModelCheckpoint into the model, which must be compiled with the same
// kind of optimizer: weights, optimizer state, step counter, learning rate
// and seed. It checks the whole file first (its format, the architecture,
// the optimizer, every tensor's presence and shape) and changes nothing
// when any check fails.
func (m *Model) LoadCheckpoint(path string) (*Checkpoint, error) {
	if m.comp == nil {
		return nil, fmt.Errorf("nn: LoadCheckpoint %q: %w", m.name, errNotCompiled)
	}
	ts, meta, err := readFile(path)
	if err != nil {
		return nil, fmt.Errorf("nn: loading checkpoint: %w", err)
	}
	return m.loadCheckpoint(path, ts, meta)
}

// loadCheckpoint is LoadCheckpoint of the tensors and metadata read from
// path.
func (m *Model) loadCheckpoint(path string, ts []SafeTensor, meta map[string]string) (*Checkpoint, error) {
	if meta["format"] != checkpointFormat {
		return nil, fmt.Errorf("nn: %s holds %s, not a checkpoint", path, describeFormat(meta["format"]))
	}
	arch, err := m.Architecture()
	if err != nil {
		return nil, err
	}
	if d := archDiff(arch, []byte(meta["architecture"])); d != "" {
		return nil, fmt.Errorf("nn: checkpoint %s was written by a different model than %q: %s", path, m.name, d)
	}
	var optCfg map[string]any
	if err := json.Unmarshal([]byte(meta["optimizer"]), &optCfg); err != nil {
		return nil, fmt.Errorf("nn: checkpoint %s: bad optimizer metadata: %v", path, err)
	}
	if optCfg["name"] != m.comp.opt.Name() {
		return nil, fmt.Errorf("nn: checkpoint %s was written with optimizer %v, but model %q is compiled with %s", path, optCfg["name"], m.name, m.comp.opt.Name())
	}
	epoch, err := strconv.Atoi(meta["epoch"])
	if err != nil || epoch < 0 {
		return nil, fmt.Errorf("nn: checkpoint %s: bad epoch %q", path, meta["epoch"])
	}
	seed, err := strconv.ParseInt(meta["seed"], 10, 64)
	if err != nil {
		return nil, fmt.Errorf("nn: checkpoint %s: bad seed %q", path, meta["seed"])
	}
	var hj historyDoc
	if err := json.Unmarshal([]byte(meta["history"]), &hj); err != nil {
		return nil, fmt.Errorf("nn: checkpoint %s: bad history: %v", path, err)
	}
	byName := map[string]*SafeTensor{}
	for i := range ts {
		byName[ts[i].Name] = &ts[i]
	}
	// Check the optimizer and seed state before touching anything.
	f32s := map[string][]float32{}
	i64s := map[string][]int64{}
	for _, n := range m.stateNames() {
		v := m.st.vars[n]
		t := byName[n]
		if t == nil {
			return nil, fmt.Errorf("nn: checkpoint %s lacks %s %v (written with other optimizer settings?)", path, n, v.shape)
		}
		if !v.shape.Equal(t.Shape) {
			return nil, fmt.Errorf("nn: checkpoint %s: %s is %v in the file but %v in the model", path, n, t.Shape, v.shape)
		}
		if v.dtype == tile.Int64 {
			if i64s[n], err = t.Int64s(); err != nil {
				return nil, fmt.Errorf("nn: checkpoint %s: %w", path, err)
			}
			if n == iterationsVar && len(i64s[n]) == 1 && i64s[n][0] < 0 {
				return nil, fmt.Errorf("nn: %s: the step counter %s is %d, below 0; the file is damaged and is not loaded", path, n, i64s[n][0])
			}
			continue
		}
		if f32s[n], err = t.Float32s(); err != nil {
			return nil, fmt.Errorf("nn: checkpoint %s: %w", path, err)
		}
		if err := checkFinite(path, "optimizer state", n, f32s[n]); err != nil {
			return nil, err
		}
		if isSecondMoment(m.comp.opt, n) {
			for i, x := range f32s[n] {
				if x < 0 {
					return nil, fmt.Errorf("nn: %s: %s holds %v at element %d of %d, but it is a running mean of squared gradients, never negative; the file is damaged and is not loaded", path, n, x, i, len(f32s[n]))
				}
			}
		}
	}
	for _, t := range ts {
		if isStateName(t.Name) && !m.st.has(t.Name) {
			return nil, fmt.Errorf("nn: checkpoint %s holds %s, which the model's optimizer %s does not have (written with other optimizer settings?)", path, t.Name, m.comp.opt.Name())
		}
	}
	if err := m.setWeightTensors(path, ts); err != nil {
		return nil, err
	}
	for n, v := range f32s {
		if err := m.st.setF32(n, v); err != nil {
			return nil, err
		}
	}
	for n, v := range i64s {
		if err := m.st.setI64(n, v); err != nil {
			return nil, err
		}
	}
	m.seed = seed
	return &Checkpoint{Epoch: epoch, History: hj.history()}, nil
}

// isSecondMoment reports whether state variable name is a slot of o that
// holds a running mean of squared gradients: Adam's (and AdamW's) "v",
// RMSprop's "velocity".
func isSecondMoment(o Optimizer, name string) bool {
	var slot string
	switch o.(type) {
	case *adam:
		slot = "v"
	case *rmsprop:
		slot = "velocity"
	default:
		return false
	}
	return strings.HasPrefix(name, "optimizer/"+slot+"/")
}

// historyDoc is a History in JSON; NaN and infinite values become null.
type historyDoc struct {
	Epochs       []int                 `json:"epochs"`
	Metrics      map[string][]*float64 `json:"metrics"`
	EpochSeconds []float64             `json:"epoch_seconds"`
}

func historyJSON(h *History) historyDoc {
	d := historyDoc{Epochs: h.Epochs, Metrics: map[string][]*float64{}, EpochSeconds: h.EpochSeconds}
	for k, vs := range h.Metrics {
		out := make([]*float64, len(vs))
		for i, v := range vs {
			if !math.IsNaN(v) && !math.IsInf(v, 0) {
				x := v
				out[i] = &x
			}
		}
		d.Metrics[k] = out
	}
	return d
}

func (d historyDoc) history() *History {
	h := newHistory()
	h.Epochs = slices.Clone(d.Epochs)
	h.EpochSeconds = slices.Clone(d.EpochSeconds)
	for k, vs := range d.Metrics {
		out := make([]float64, len(vs))
		for i, v := range vs {
			out[i] = math.NaN()
			if v != nil {
				out[i] = *v
			}
		}
		h.Metrics[k] = out
	}
	return h
}
