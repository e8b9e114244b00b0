package nn

import (
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"slices"
	"time"
)

// FitOption configures Fit, Evaluate or Predict. Evaluate and Predict accept
// BatchSize, Verbose and Progress; Fit accepts them all.
type FitOption interface{ applyFit(*fitSettings) }

type fitSettings struct {
	given        []string
	batch        int
	epochs       int
	shuffle      bool
	valSplit     float64
	valData      Data
	initialEpoch int
	callbacks    []Callback
	verbose      int
	out          io.Writer
	resume       *Checkpoint
	now          func() time.Time // the clock of the printed times
	sampleWeight []float64        // SampleWeight (sample_weight.go)
	classWeight  map[int]float64  // ClassWeight (sample_weight.go)
}

type fitOption struct {
	name string
	set  func(*fitSettings)
}

func (o fitOption) applyFit(s *fitSettings) {
	s.given = append(s.given, o.name)
	o.set(s)
}

// BatchSize sets the number of samples per step (Keras's default, 32, when
// not given). The last batch of an epoch holds the remaining samples: no
// sample is dropped or seen twice, and each batch's loss counts in
// proportion to its size. A batch size above the number of samples means
// one batch of all of them, as in Keras.
func BatchSize(n int) FitOption {
	return fitOption{"batch_size", func(s *fitSettings) { s.batch = n }}
}

// Epochs sets the number of epochs to train for (1 by default).
func Epochs(n int) FitOption { return fitOption{"epochs", func(s *fitSettings) { s.epochs = n }} }

// Shuffle turns the shuffling of the training samples before each epoch on
// (the default) or off. The order depends only on the seed (Compile's Seed)
// and the epoch, so a resumed run sees the batches an uninterrupted one
// would have.
func Shuffle(on bool) FitOption { return fitOption{"shuffle", func(s *fitSettings) { s.shuffle = on }} }

// ValidationSplit holds out the last fraction of the training samples (not
// shuffled, as in Keras) and evaluates the model on them after every epoch,
// logging "val_loss" and "val_<metric>".
func ValidationSplit(frac float64) FitOption {
	return fitOption{"validation_split", func(s *fitSettings) { s.valSplit = frac }}
}

// ValidationData evaluates the model on v, Samples or MultiSamples, after
// every epoch.
func ValidationData(v Data) FitOption {
	return fitOption{"validation_data", func(s *fitSettings) { s.valData = v }}
}

// InitialEpoch starts training at epoch n (counted from 0), as when resuming.
func InitialEpoch(n int) FitOption {
	return fitOption{"initial_epoch", func(s *fitSettings) { s.initialEpoch = n }}
}

// Callbacks adds callbacks to Fit.
func Callbacks(cbs ...Callback) FitOption {
	return fitOption{"callbacks", func(s *fitSettings) { s.callbacks = append(s.callbacks, cbs...) }}
}

// Verbose sets what Fit, Evaluate and Predict print, as Keras's verbose
// does: 0 nothing; 1 (the default) a progress bar, redrawn in place on a
// terminal and printed once finished elsewhere:
//
//	Epoch 3/10
//	938/938 ━━━━━━━━━━━━━━━━━━━━ 4s 4ms/step - accuracy: 0.8870 - loss: 0.3100 - val_accuracy: 0.8702 - val_loss: 0.3580
//
// 2 one line per epoch without the bar's graphic, for logs:
//
//	Epoch 3/10
//	938/938 - 4s - 4ms/step - accuracy: 0.8870 - loss: 0.3100 - val_accuracy: 0.8702 - val_loss: 0.3580
//
// With 1 or 2, a run that must first compile a step says so, and how long
// it took:
//
//	Compiling the training and evaluation steps for cpu… done in 1.2 s
//
// ReduceLROnPlateau takes it too: at 1 it says when it reduces the rate.
func Verbose(v int) VerboseOption { return VerboseOption(v) }

// VerboseOption is the verbosity of Fit, Evaluate, Predict or a callback;
// Verbose makes one.
type VerboseOption int

func (v VerboseOption) applyFit(s *fitSettings) {
	s.given = append(s.given, "verbose")
	s.verbose = int(v)
}

// Progress sets where the progress bar, the compiling line and warnings go
// (standard output by default). On a terminal the bar is redrawn in place
// and cut to its width.
func Progress(w io.Writer) FitOption {
	return fitOption{"progress", func(s *fitSettings) { s.out = w }}
}

// Resume continues training from a checkpoint loaded with LoadCheckpoint: it
// starts at the checkpoint's epoch, and the returned History starts with
// the checkpoint's.
func Resume(ck *Checkpoint) FitOption {
	return fitOption{"resume", func(s *fitSettings) { s.resume = ck }}
}

// clock makes Fit, Evaluate and Predict read the times they print from
// a function other than time.Now, so that tests see fixed times. Every
// kind of run accepts it.
type clock func() time.Time

func (c clock) applyFit(s *fitSettings) { s.now = c }

// newFitSettings applies opts over Keras's defaults and checks that each is
// one that what accepts.
func newFitSettings(what string, allowed []string, opts []FitOption) (*fitSettings, error) {
	s := &fitSettings{batch: 32, epochs: 1, shuffle: true, verbose: 1, out: os.Stdout, now: time.Now}
	for _, o := range opts {
		if o == nil {
			return nil, fmt.Errorf("nn: %s: nil option", what)
		}
		o.applyFit(s)
	}
	for _, n := range s.given {
		if allowed != nil && !slices.Contains(allowed, n) {
			return nil, fmt.Errorf("nn: %s: option %s does not apply", what, optionTitle(n))
		}
	}
	switch {
	case s.batch < 1:
		return nil, fmt.Errorf("nn: %s: batch size %d must be positive", what, s.batch)
	case s.verbose < 0 || s.verbose > 2:
		return nil, fmt.Errorf("nn: %s: verbose %d must be 0, 1 or 2", what, s.verbose)
	case s.out == nil:
		return nil, fmt.Errorf("nn: %s: nil progress writer", what)
	}
	return s, nil
}

// Fit trains the model on data for a number of epochs, as Keras's fit does,
// and returns the History of the epochs run. See the FitOption constructors
// for the options and their defaults. data is Samples for a model of one
// input and one output, or MultiSamples (such as FromArrayLists's) for any
// model: one input per model input, one target per output. A model of
// several outputs logs its total loss as "loss", each output's weighted
// loss as "<output>_loss" and its metrics as "<output>_<metric>" (with
// "val_" before them for the validation data), as Keras does.
//
// Before anything runs, the data is checked against the model: the number
// and shapes of the inputs, those of the targets the losses need, and, for
// class labels, that every label is a whole number within the output's
// classes. A failure returns an error and changes nothing. For a model of
// one output, a target shape that does not suit the loss gets a hint when
// the cause looks plain: one-hot targets given to
// SparseCategoricalCrossentropy, class indices to CategoricalCrossentropy,
// or a Dense layer applied to samples of several axes without a Flatten
// before it.
func (m *Model) Fit(data Data, opts ...FitOption) (*History, error) {
	s, err := newFitSettings("Fit", nil, opts)
	if err != nil {
		return nil, err
	}
	if m.comp == nil {
		return nil, fmt.Errorf("nn: Fit %q: %w", m.name, errNotCompiled)
	}
	if s.resume != nil {
		s.initialEpoch = s.resume.Epoch
	}
	switch {
	case s.epochs < 1:
		return nil, fmt.Errorf("nn: Fit: epochs %d must be positive", s.epochs)
	case s.initialEpoch < 0 || s.initialEpoch > s.epochs:
		return nil, fmt.Errorf("nn: Fit: initial epoch %d must lie in [0, %d] for %d epochs", s.initialEpoch, s.epochs, s.epochs)
	case s.valSplit != 0 && s.valData != nil:
		return nil, errors.New("nn: Fit: give ValidationSplit or ValidationData, not both")
	case s.valSplit < 0 || s.valSplit >= 1 || math.IsNaN(s.valSplit):
		return nil, fmt.Errorf("nn: Fit: validation split %v must lie in [0, 1)", s.valSplit)
	}
	train, err := m.samplesFor("training", data, true)
	if err != nil {
		return nil, err
	}
	sw, err := m.fitWeights(train, s)
	if err != nil {
		return nil, err
	}
	var val MultiSamples
	if s.valData != nil {
		if val, err = m.samplesFor("validation", s.valData, true); err != nil {
			return nil, err
		}
	}
	if s.valSplit > 0 {
		n := train.Len()
		at := int(math.Floor(float64(n) * (1 - s.valSplit)))
		if at <= 0 || at >= n {
			return nil, fmt.Errorf("nn: Fit: validation split %v of %d samples leaves %d for training and %d for validation; both need at least one", s.valSplit, n, at, n-at)
		}
		val = &multiWindow{s: train, lo: at, hi: n}
		train = &multiWindow{s: train, lo: 0, hi: at}
	}
	for i, cb := range s.callbacks {
		if cb == nil {
			return nil, fmt.Errorf("nn: Fit: callback %d is nil", i)
		}
		if e, ok := cb.(interface{ err() error }); ok && e.err() != nil {
			return nil, e.err()
		}
	}

	hist := newHistory()
	if s.resume != nil && s.resume.History != nil {
		hist = s.resume.History.clone()
		hist.StopReason = ""
	}
	m.history = hist
	m.stop, m.stopReason = false, ""
	m.logOut = s.out
	defer func() { m.logOut, m.bar = nil, nil }()

	// A batch never exceeds the data: buffers are sized from the samples
	// there are, not from the batch size asked for.
	n := train.Len()
	bs := min(s.batch, n)
	ins, tgts := m.inputSizes(), m.targetSizes()
	if err := checkBatchBuffers("Fit", bs, 2, sum(ins), sum(tgts)); err != nil {
		return nil, err
	}

	// Compile every executable an epoch needs before the first one starts,
	// so that no epoch's time includes compiling.
	var keys []progKey
	for _, b := range batchSizes(n, bs) {
		keys = append(keys, progKey{sw.kind(), b})
	}
	if val != nil {
		for _, b := range batchSizes(val.Len(), s.batch) {
			keys = append(keys, progKey{evalProg, b})
		}
	}
	if err := m.prepare(s.out, s.verbose, s.now, keys...); err != nil {
		return nil, err
	}

	cbs := append(slices.Clone(s.callbacks), &historyCallback{h: hist})
	for _, cb := range cbs {
		if err := cb.OnTrainBegin(m); err != nil {
			return hist, err
		}
	}
	bufs := m.takeBatches(2, bs, ins, tgts)
	var pf *prefetcher
	defer func() {
		if pf != nil {
			pf.stop()
		}
		m.giveBatches(bufs...)
	}()
	steps := (n + bs - 1) / bs
	var last Logs
	for epoch := s.initialEpoch; epoch < s.epochs && !m.stop; epoch++ {
		start := time.Now()
		for _, cb := range cbs {
			if err := cb.OnEpochBegin(m, epoch); err != nil {
				return hist, err
			}
		}
		if s.verbose > 0 {
			fmt.Fprintf(s.out, "Epoch %d/%d\n", epoch+1, s.epochs)
		}
		bar := newProgressBar(s.out, s.verbose, steps, s.now)
		m.bar = bar
		if err := m.resetAccumulators("train"); err != nil {
			return hist, err
		}
		order := epochOrder(n, m.seed, epoch, s.shuffle)
		watch := bar.live || hasProgressCallback(cbs)
		times := &m.st.times
		times.on = debugTiming()
		pf = startPrefetch(train, order, bs, ins, tgts, bufs)
		for step := 0; step < steps; step++ {
			t := time.Now()
			b := pf.next()
			if b.err != nil {
				return hist, nestf(b.err, "Fit: reading training batch %d", step)
			}
			times.since(&times.read, t)
			times.steps++
			nb := b.n
			p, err := m.program(progKey{sw.kind(), nb})
			if err != nil {
				return hist, err
			}
			inputs := map[string]any{}
			b.bind(inputs, nb, ins, tgts)
			if sw != nil {
				inputs["w"] = sw.batch(order[step*bs : step*bs+nb])
			}
			if err := m.st.run(p, inputs); err != nil {
				return hist, nestf(err, "Fit: epoch %d, step %d", epoch+1, step+1)
			}
			pf.release(b)
			if watch && step+1 < steps && bar.due() {
				t := time.Now()
				logs, err := m.readLogs("train", "")
				if err != nil {
					return hist, err
				}
				times.since(&times.logs, t)
				for _, cb := range cbs {
					if pc, ok := cb.(ProgressCallback); ok {
						if err := pc.OnProgress(m, epoch, step+1, logs); err != nil {
							return hist, err
						}
					}
				}
				bar.update(step+1, logs)
				if m.stop {
					break
				}
			}
		}
		pf.stop()
		logs, err := m.readLogs("train", "")
		if err != nil {
			return hist, err
		}
		times.print(os.Stderr, epoch, time.Since(start))
		if val != nil {
			vl, err := m.evaluate(val, s.batch, "val_", nil)
			if err != nil {
				return hist, err
			}
			for k, v := range vl {
				logs[k] = v
			}
		}
		bar.finish(logs)
		m.bar = nil
		hist.pendingSeconds = time.Since(start).Seconds()
		for _, cb := range cbs {
			if err := cb.OnEpochEnd(m, epoch, logs); err != nil {
				return hist, err
			}
		}
		last = logs
	}
	for _, cb := range cbs {
		if err := cb.OnTrainEnd(m, last); err != nil {
			return hist, err
		}
	}
	hist.StopReason = m.stopReason
	return hist, nil
}

// historyCallback records every epoch in a History; Fit adds it after the
// caller's callbacks, so it sees what they add to the logs.
type historyCallback struct {
	BaseCallback
	h *History
}

func (c *historyCallback) OnEpochEnd(m *Model, epoch int, logs Logs) error {
	c.h.record(epoch, logs, c.h.pendingSeconds)
	return nil
}

func hasProgressCallback(cbs []Callback) bool {
	for _, cb := range cbs {
		if _, ok := cb.(ProgressCallback); ok {
			return true
		}
	}
	return false
}

// checkBatchBuffers checks that count host buffers of batch samples, each
// of in input and tgt target values, can be allocated: their sizes do not
// overflow and they fit in the machine's memory.
func checkBatchBuffers(what string, batch, count, in, tgt int) error {
	per, ok := checkedAdd(in, tgt)
	var elems, bytes int
	if ok {
		elems, ok = checkedMul(batch, per)
	}
	if ok {
		bytes, ok = checkedMul(elems, 4*count)
	}
	if !ok {
		return fmt.Errorf("nn: %s: buffers for batches of %d samples of %d values each overflow", what, batch, per)
	}
	if limit := memoryLimit(); int64(bytes) > limit {
		return fmt.Errorf("nn: %s: buffers for batches of %d samples of %d values each need %d bytes, more than the %d bytes of memory this machine has; use a smaller batch size", what, batch, per, bytes, limit)
	}
	return nil
}

// batchSizes returns the distinct batch sizes of n samples in batches of
// b: b itself when n ≥ b, and the remainder when there is one.
func batchSizes(n, b int) []int {
	var out []int
	if n >= b {
		out = append(out, b)
	}
	if r := n % b; r != 0 {
		out = append(out, r)
	}
	return out
}

// epochOrder returns the order in which an epoch visits n samples: a
// permutation that depends only on seed and epoch, or 0…n−1 without
// shuffling.
func epochOrder(n int, seed int64, epoch int, shuffle bool) []int {
	if !shuffle {
		order := make([]int, n)
		for i := range order {
			order[i] = i
		}
		return order
	}
	r := rand.New(rand.NewPCG(uint64(seed), 0x5eed0000+uint64(epoch)))
	return r.Perm(n)
}

// samplesFor returns d as MultiSamples checked against the model (see
// checkSamples).
func (m *Model) samplesFor(what string, d Data, targets bool) (MultiSamples, error) {
	s, err := asMulti(what, d)
	if err != nil {
		return nil, err
	}
	if err := m.checkSamples(what, s, targets); err != nil {
		return nil, err
	}
	return s, nil
}

// checkSamples checks that samples suit the model: their inputs' number and
// shapes, and when targets are wanted, their targets' number and shapes
// and, for class labels, their values.
func (m *Model) checkSamples(what string, s MultiSamples, targets bool) error {
	if s == nil {
		return fmt.Errorf("nn: no %s samples", what)
	}
	if s.Len() < 1 {
		return fmt.Errorf("nn: the %s samples are empty", what)
	}
	shapes := s.InputShapes()
	if len(shapes) != len(m.inputs) {
		hint := ""
		if len(m.inputs) > 1 {
			hint = "; give one array per input, in this order (FromArrayLists)"
		}
		return fmt.Errorf("nn: %s samples have %s, but model %q takes %s%s", what, countNoun(len(shapes), "input"), m.name, m.inputList(), hint)
	}
	for k, got := range shapes {
		in := m.inputs[k]
		if want := in.shape; !want.Equal(got) {
			if len(m.inputs) == 1 {
				return fmt.Errorf("nn: %s samples have inputs of shape %s, but model %q takes %s (layer %s)", what, fmtDims(got), m.name, fmtDims(want), in.layer.Name())
			}
			return fmt.Errorf("nn: %s samples have input %d of shape %s, but model %q's input %d, %q, takes %s", what, k, fmtDims(got), m.name, k, in.layer.Name(), fmtDims(want))
		}
	}
	if !targets {
		return nil
	}
	tss := s.TargetShapes()
	if tss == nil {
		return fmt.Errorf("nn: the %s samples have no targets", what)
	}
	heads := m.comp.heads
	multi := m.comp.multi()
	if len(tss) != len(heads) {
		return fmt.Errorf("nn: %s samples have %s, but model %q has %s (%s), each needing one", what, countNoun(len(tss), "target"), m.name, countNoun(len(heads), "output"), quotedList(m.OutputNames()))
	}
	for k, h := range heads {
		ts := tss[k]
		if ts == nil {
			return fmt.Errorf("nn: the %s samples have no targets for output %q", what, h.name)
		}
		if err := checkTargetShape(h.loss, h.target, ts); err != nil {
			if multi {
				return nestf(err, "%s samples, output %q", what, h.name)
			}
			if hint := m.targetHint(multiAsSingle{s}, ts); hint != "" {
				err = textError{err.Error() + hint, err}
			}
			return nestf(err, "%s samples", what)
		}
	}
	for k, h := range heads {
		classes := h.loss.classes(m.outputs[k].shape)
		if classes == 0 {
			continue
		}
		// Class labels: read them all (targets only) and check each.
		per := h.target.Size()
		const chunk = 4096
		idx := make([]int, 0, chunk)
		y := make([]float32, chunk*per)
		ys := make([][]float32, len(heads))
		for lo := 0; lo < s.Len(); lo += chunk {
			idx = idx[:0]
			for i := lo; i < min(lo+chunk, s.Len()); i++ {
				idx = append(idx, i)
			}
			ys[k] = y[:len(idx)*per]
			if err := s.ReadMulti(idx, nil, ys); err != nil {
				return nestf(err, "reading %s labels", what)
			}
			for j, v := range y[:len(idx)*per] {
				if v != float32(math.Trunc(float64(v))) || v < 0 || int(v) >= classes {
					if multi {
						return fmt.Errorf("nn: %s sample %d has label %v for output %q, which has %d classes (labels must be whole numbers 0 to %d for %s)",
							what, lo+j/per, v, h.name, classes, classes-1, h.loss.Name())
					}
					return fmt.Errorf("nn: %s sample %d has label %v, but model %q has %d classes (labels must be whole numbers 0 to %d for %s)",
						what, lo+j/per, v, m.name, classes, classes-1, h.loss.Name())
				}
			}
		}
	}
	return nil
}

// Evaluate returns the loss and metrics of the model over the samples d
// (Samples or MultiSamples, as Fit takes them), as Keras's evaluate does, in
// inference mode (no dropout, batch normalisation with its moving
// statistics). It accepts BatchSize (32 by default), Verbose and Progress.
func (m *Model) Evaluate(d Data, opts ...FitOption) (Logs, error) {
	set, err := newFitSettings("Evaluate", []string{"batch_size", "verbose", "progress"}, opts)
	if err != nil {
		return nil, err
	}
	if m.comp == nil {
		return nil, fmt.Errorf("nn: Evaluate %q: %w", m.name, errNotCompiled)
	}
	s, err := m.samplesFor("evaluation", d, true)
	if err != nil {
		return nil, err
	}
	set.batch = min(set.batch, s.Len())
	var keys []progKey
	for _, b := range batchSizes(s.Len(), set.batch) {
		keys = append(keys, progKey{evalProg, b})
	}
	if err := m.prepare(set.out, set.verbose, set.now, keys...); err != nil {
		return nil, err
	}
	bar := newProgressBar(set.out, set.verbose, (s.Len()+set.batch-1)/set.batch, set.now)
	logs, err := m.evaluate(s, set.batch, "", bar)
	if err != nil {
		return nil, err
	}
	bar.finish(logs)
	return logs, nil
}

// evaluate runs the evaluation executables over s and returns the means,
// named with namePrefix. bar, when not nil, shows the progress.
func (m *Model) evaluate(s MultiSamples, batch int, namePrefix string, bar *progressBar) (Logs, error) {
	if err := m.resetAccumulators("eval"); err != nil {
		return nil, err
	}
	n := s.Len()
	batch = min(batch, n)
	ins, tgts := m.inputSizes(), m.targetSizes()
	if err := checkBatchBuffers("evaluate", batch, 1, sum(ins), sum(tgts)); err != nil {
		return nil, err
	}
	buf := m.takeBatches(1, batch, ins, tgts)[0]
	defer m.giveBatches(buf)
	idx := make([]int, 0, batch)
	steps := (n + batch - 1) / batch
	for step := 0; step < steps; step++ {
		idx = idx[:0]
		for i := step * batch; i < min((step+1)*batch, n); i++ {
			idx = append(idx, i)
		}
		nb := len(idx)
		xs, ys := buf.view(nb, ins, tgts)
		if err := s.ReadMulti(idx, xs, ys); err != nil {
			return nil, nestf(err, "reading evaluation batch %d", step)
		}
		p, err := m.program(progKey{evalProg, nb})
		if err != nil {
			return nil, err
		}
		inputs := map[string]any{}
		buf.bind(inputs, nb, ins, tgts)
		if err := m.st.run(p, inputs); err != nil {
			return nil, nestf(err, "evaluating batch %d", step+1)
		}
		if bar != nil && bar.live && step+1 < steps && bar.due() {
			logs, err := m.readLogs("eval", namePrefix)
			if err != nil {
				return nil, err
			}
			bar.update(step+1, logs)
		}
	}
	return m.readLogs("eval", namePrefix)
}

// Predict returns the model's outputs for the samples d (Samples, or
// MultiSamples for a model of several inputs), in inference mode, as an
// Array of shape (samples, output…). It accepts BatchSize (32 by default),
// Verbose and Progress. A model of several outputs predicts with
// PredictMulti. A model that is not compiled can predict once it has a
// device (SetDevice).
func (m *Model) Predict(d Data, opts ...FitOption) (*Array, error) {
	if len(m.outputs) != 1 {
		return nil, fmt.Errorf("nn: Predict: model %q has %d outputs (%s); use PredictMulti, which returns one Array per output", m.name, len(m.outputs), quotedList(m.OutputNames()))
	}
	out, err := m.predict("Predict", d, opts)
	if err != nil {
		return nil, err
	}
	return out[0], nil
}

// PredictMulti returns the model's outputs for the samples d, one Array of
// shape (samples, output…) per model output, in output order, as Keras's
// predict does for a model of several outputs. It takes what Predict
// takes.
func (m *Model) PredictMulti(d Data, opts ...FitOption) ([]*Array, error) {
	return m.predict("PredictMulti", d, opts)
}

// predict is Predict and PredictMulti.
func (m *Model) predict(what string, d Data, opts []FitOption) ([]*Array, error) {
	set, err := newFitSettings(what, []string{"batch_size", "verbose", "progress"}, opts)
	if err != nil {
		return nil, err
	}
	s, err := m.samplesFor("prediction", d, false)
	if err != nil {
		return nil, err
	}
	n := s.Len()
	set.batch = min(set.batch, n)
	ins, pers := m.inputSizes(), m.outputSizes()
	if err := checkBatchBuffers(what, set.batch, 1, sum(ins), 0); err != nil {
		return nil, err
	}
	if err := checkBatchBuffers(what, n, 1, sum(pers), 0); err != nil {
		return nil, fmt.Errorf("%w (for the predictions of all %d samples)", err, n)
	}
	var keys []progKey
	for _, b := range batchSizes(n, set.batch) {
		keys = append(keys, progKey{predictProg, b})
	}
	if err := m.prepare(set.out, set.verbose, set.now, keys...); err != nil {
		return nil, err
	}
	res := make([]*Array, len(m.outputs))
	for k, o := range m.outputs {
		res[k] = &Array{Shape: append([]int{n}, o.shape...), Data: make([]float32, n*pers[k])}
	}
	buf := m.takeBatches(1, set.batch, ins, nil)[0]
	defer m.giveBatches(buf)
	idx := make([]int, 0, set.batch)
	steps := (n + set.batch - 1) / set.batch
	bar := newProgressBar(set.out, set.verbose, steps, set.now)
	for step := 0; step < steps; step++ {
		idx = idx[:0]
		for i := step * set.batch; i < min((step+1)*set.batch, n); i++ {
			idx = append(idx, i)
		}
		nb := len(idx)
		xs, _ := buf.view(nb, ins, nil)
		if err := s.ReadMulti(idx, xs, nil); err != nil {
			return nil, nestf(err, "%s: reading batch %d", what, step)
		}
		p, err := m.program(progKey{predictProg, nb})
		if err != nil {
			return nil, err
		}
		inputs := map[string]any{}
		buf.bind(inputs, nb, ins, nil)
		if err := m.st.run(p, inputs); err != nil {
			return nil, nestf(err, "%s: batch %d", what, step+1)
		}
		for k, per := range pers {
			lo := step * set.batch * per
			if err := p.exe.ReadOutput(predName(k), res[k].Data[lo:lo+nb*per]); err != nil {
				return nil, nestf(err, "%s: reading the outputs of batch %d", what, step+1)
			}
		}
		if bar.live && bar.due() && step+1 < steps {
			bar.update(step+1, nil)
		}
	}
	bar.finish(nil)
	return res, nil
}

// LearningRate returns the optimizer's current learning rate: the constant
// one (as LearningRateScheduler may have changed it), or the schedule's at
// the current step.
func (m *Model) LearningRate() (float64, error) {
	if m.comp == nil {
		return 0, fmt.Errorf("nn: LearningRate %q: %w", m.name, errNotCompiled)
	}
	if sch := m.comp.opt.base().schedule; sch != nil {
		it, err := m.st.i64(iterationsVar)
		if err != nil {
			return 0, err
		}
		return sch.Rate(int(it[0])), nil
	}
	v, err := m.st.f32(learningRateVar)
	if err != nil {
		return 0, err
	}
	return float64(v[0]), nil
}

// SetLearningRate replaces the optimizer's constant learning rate. It fails
// for an optimizer that follows a Schedule.
func (m *Model) SetLearningRate(lr float64) error {
	if m.comp == nil {
		return fmt.Errorf("nn: SetLearningRate %q: %w", m.name, errNotCompiled)
	}
	if m.comp.opt.base().schedule != nil {
		return fmt.Errorf("nn: SetLearningRate: optimizer %s follows a schedule; its rate cannot be set", m.comp.opt.Name())
	}
	if !(lr > 0) || math.IsInf(lr, 0) {
		return fmt.Errorf("nn: SetLearningRate: learning rate %v must be positive and finite", lr)
	}
	return m.st.setF32(learningRateVar, []float32{float32(lr)})
}

// Iterations returns the number of optimizer updates applied so far.
func (m *Model) Iterations() (int64, error) {
	if m.comp == nil {
		return 0, fmt.Errorf("nn: Iterations %q: %w", m.name, errNotCompiled)
	}
	v, err := m.st.i64(iterationsVar)
	if err != nil {
		return 0, err
	}
	return v[0], nil
}

// stopWith stops training and records why.
func (m *Model) stopWith(reason string) {
	m.stop = true
	if m.stopReason == "" {
		m.stopReason = reason
	}
}

// warnf prints a warning on its own line where Fit prints its progress, or
// on standard error outside Fit.
func (m *Model) warnf(format string, args ...any) {
	w := m.logOut
	if w == nil {
		w = os.Stderr
	}
	if m.bar != nil {
		m.bar.breakLine()
	}
	fmt.Fprintf(w, format+"\n", args...)
}

// weightSnapshot copies every weight's current value.
func (m *Model) weightSnapshot() (map[string][]float32, error) {
	out := map[string][]float32{}
	for _, w := range m.weights {
		v, err := m.st.f32(w.Name())
		if err != nil {
			return nil, err
		}
		out[w.Name()] = slices.Clone(v)
	}
	return out, nil
}

// restoreSnapshot puts back weights copied by weightSnapshot.
func (m *Model) restoreSnapshot(snap map[string][]float32) error {
	for name, v := range snap {
		if err := m.st.setF32(name, slices.Clone(v)); err != nil {
			return err
		}
	}
	return nil
}
