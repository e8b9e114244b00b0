package nn

import (
	"bufio"
	"errors"
	"fmt"
	"maps"
	"math"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// Logs maps metric names to values: "loss", "accuracy", "val_loss", ….
type Logs map[string]float64

// Keys returns the names in Keras's display order: training metrics sorted
// by name, then validation metrics sorted by name.
func (l Logs) Keys() []string {
	var train, val []string
	for k := range l {
		if strings.HasPrefix(k, "val_") {
			val = append(val, k)
		} else {
			train = append(train, k)
		}
	}
	slices.Sort(train)
	slices.Sort(val)
	return append(train, val...)
}

// Callback is called by Fit at the edges of training and of every epoch, as
// Keras's callbacks are. Epochs are numbered from 0, as in Keras (the
// progress bar shows epoch+1). A callback may call Model.StopTraining to end
// training after the current epoch; an error it returns ends Fit with that
// error. Embed BaseCallback to implement only some of the methods.
type Callback interface {
	OnTrainBegin(m *Model) error
	OnEpochBegin(m *Model, epoch int) error
	OnEpochEnd(m *Model, epoch int, logs Logs) error
	OnTrainEnd(m *Model, logs Logs) error
}

// ProgressCallback is a Callback that also wants the running means of the
// current epoch, whenever Fit reads them from the device (for the progress
// bar, a few times a second, not after every batch). batch counts the
// batches done in the epoch.
type ProgressCallback interface {
	Callback
	OnProgress(m *Model, epoch, batch int, logs Logs) error
}

// BaseCallback implements every Callback method as doing nothing.
type BaseCallback struct{}

func (BaseCallback) OnTrainBegin(*Model) error          { return nil }
func (BaseCallback) OnEpochBegin(*Model, int) error     { return nil }
func (BaseCallback) OnEpochEnd(*Model, int, Logs) error { return nil }
func (BaseCallback) OnTrainEnd(*Model, Logs) error      { return nil }

// History records the logs of every epoch; Fit returns it.
type History struct {
	// Epochs lists the epochs run, numbered from 0.
	Epochs []int
	// Metrics holds each logged value per epoch, as Keras's
	// History.history: Metrics["loss"][i] belongs to Epochs[i].
	Metrics map[string][]float64
	// EpochSeconds is the wall time of each epoch, validation included.
	EpochSeconds []float64
	// StopReason says why training ended before its last epoch, or is
	// empty.
	StopReason string

	pendingSeconds float64 // the time of the epoch being recorded
}

func newHistory() *History { return &History{Metrics: map[string][]float64{}} }

// record appends one epoch.
func (h *History) record(epoch int, logs Logs, seconds float64) {
	h.Epochs = append(h.Epochs, epoch)
	for _, k := range logs.Keys() {
		// Keep the lists aligned with Epochs even when a key first
		// appears late.
		for len(h.Metrics[k]) < len(h.Epochs)-1 {
			h.Metrics[k] = append(h.Metrics[k], math.NaN())
		}
		h.Metrics[k] = append(h.Metrics[k], logs[k])
	}
	h.EpochSeconds = append(h.EpochSeconds, seconds)
}

// clone returns a deep copy of h.
func (h *History) clone() *History {
	c := &History{Epochs: slices.Clone(h.Epochs), Metrics: map[string][]float64{}, EpochSeconds: slices.Clone(h.EpochSeconds), StopReason: h.StopReason}
	for k, v := range h.Metrics {
		c.Metrics[k] = slices.Clone(v)
	}
	return c
}

// CallbackOption configures EarlyStopping, ModelCheckpoint or CSVLogger.
type CallbackOption interface{ applyCallback(*callbackSettings) }

type callbackSettings struct {
	given          []string
	monitor        string
	mode           string
	minDelta       float64
	patience       int
	baseline       *float64
	restoreBest    bool
	startFrom      int
	saveBestOnly   bool
	saveWeightOnly bool
	separator      string
	appendRows     bool
}

type callbackOption struct {
	name string
	set  func(*callbackSettings)
}

func (o callbackOption) applyCallback(s *callbackSettings) {
	s.given = append(s.given, o.name)
	o.set(s)
}

// Monitor names the logged value EarlyStopping and ModelCheckpoint watch
// ("val_loss" by default).
func Monitor(name string) CallbackOption {
	return callbackOption{"monitor", func(s *callbackSettings) { s.monitor = name }}
}

// Mode says whether the monitored value should fall ("min") or rise
// ("max"); "auto", the default, means "max" for accuracies and "min"
// otherwise.
func Mode(mode string) CallbackOption {
	return callbackOption{"mode", func(s *callbackSettings) { s.mode = mode }}
}

// MinDelta is the smallest change of the monitored value that counts as an
// improvement for EarlyStopping.
func MinDelta(d float64) CallbackOption {
	return callbackOption{"min_delta", func(s *callbackSettings) { s.minDelta = math.Abs(d) }}
}

// Patience is the number of epochs without improvement after which
// EarlyStopping stops training.
func Patience(n int) CallbackOption {
	return callbackOption{"patience", func(s *callbackSettings) { s.patience = n }}
}

// Baseline is a value EarlyStopping requires the monitored value to beat;
// epochs that do not beat it count as epochs without improvement.
func Baseline(v float64) CallbackOption {
	return callbackOption{"baseline", func(s *callbackSettings) { s.baseline = &v }}
}

// RestoreBestWeights makes EarlyStopping put back the weights of the best
// epoch when it stops training.
func RestoreBestWeights(on bool) CallbackOption {
	return callbackOption{"restore_best_weights", func(s *callbackSettings) { s.restoreBest = on }}
}

// StartFromEpoch makes EarlyStopping ignore the epochs before epoch n.
func StartFromEpoch(n int) CallbackOption {
	return callbackOption{"start_from_epoch", func(s *callbackSettings) { s.startFrom = n }}
}

// SaveBestOnly makes ModelCheckpoint save only when the monitored value
// improves.
func SaveBestOnly(on bool) CallbackOption {
	return callbackOption{"save_best_only", func(s *callbackSettings) { s.saveBestOnly = on }}
}

// SaveWeightsOnly makes ModelCheckpoint save only the weights (as
// SaveWeights does) instead of a full checkpoint.
func SaveWeightsOnly(on bool) CallbackOption {
	return callbackOption{"save_weights_only", func(s *callbackSettings) { s.saveWeightOnly = on }}
}

// Separator sets CSVLogger's field separator ("," by default).
func Separator(sep string) CallbackOption {
	return callbackOption{"separator", func(s *callbackSettings) { s.separator = sep }}
}

// AppendRows makes CSVLogger add to an existing file instead of replacing it,
// as a resumed run wants.
func AppendRows(on bool) CallbackOption {
	return callbackOption{"append", func(s *callbackSettings) { s.appendRows = on }}
}

// newCallbackSettings applies opts and checks that each is one the callback
// accepts.
func newCallbackSettings(name string, allowed []string, opts []CallbackOption) (*callbackSettings, error) {
	s := &callbackSettings{monitor: "val_loss", mode: "auto", separator: ","}
	for _, o := range opts {
		if o == nil {
			return s, fmt.Errorf("nn: %s: nil option", name)
		}
		o.applyCallback(s)
	}
	for _, n := range s.given {
		if !slices.Contains(allowed, n) {
			titles := make([]string, len(allowed))
			for i, a := range allowed {
				titles[i] = optionTitle(a)
			}
			return s, fmt.Errorf("nn: %s: option %s does not apply (it accepts %s)", name, optionTitle(n), strings.Join(titles, ", "))
		}
	}
	if s.mode != "auto" && s.mode != "min" && s.mode != "max" {
		return s, fmt.Errorf("nn: %s: mode %q must be \"auto\", \"min\" or \"max\"", name, s.mode)
	}
	return s, nil
}

// monitorWatch decides whether a monitored value improved, with Keras's
// rules for the direction and the minimum change.
type monitorWatch struct {
	monitor  string
	maximize bool
	delta    float64
}

func newWatch(s *callbackSettings) monitorWatch {
	w := monitorWatch{monitor: s.monitor, delta: s.minDelta}
	switch s.mode {
	case "max":
		w.maximize = true
	case "auto":
		base := strings.TrimPrefix(s.monitor, "val_")
		w.maximize = strings.Contains(base, "acc") || base == "auc"
	}
	return w
}

// worst returns the starting best value.
func (w monitorWatch) worst() float64 {
	if w.maximize {
		return math.Inf(-1)
	}
	return math.Inf(1)
}

// better reports whether current improves on best by more than the minimum
// change.
func (w monitorWatch) better(current, best float64) bool {
	if w.maximize {
		return current-w.delta > best
	}
	return current+w.delta < best
}

// earlyStopping is Keras's EarlyStopping.
type earlyStopping struct {
	BaseCallback
	e         error
	watch     monitorWatch
	patience  int
	baseline  *float64
	restore   bool
	startFrom int

	wait      int     // epochs since the baseline was last beaten by an improvement
	best      float64 // the best value so far
	bestEpoch int     // its epoch, -1 before there is one
	last      float64 // the latest value
	bestW     map[string][]float32
	bestWAt   int // the epoch bestW is from
}

// EarlyStopping returns a callback that stops training when the monitored
// value (Monitor, "val_loss" by default) has not improved for Patience
// epochs, as Keras's EarlyStopping does. It accepts Monitor, Mode, MinDelta,
// Patience, Baseline, RestoreBestWeights and StartFromEpoch.
func EarlyStopping(opts ...CallbackOption) Callback {
	s, err := newCallbackSettings("EarlyStopping", []string{"monitor", "mode", "min_delta", "patience", "baseline", "restore_best_weights", "start_from_epoch"}, opts)
	if err == nil && s.patience < 0 {
		err = fmt.Errorf("nn: EarlyStopping: patience %d is negative", s.patience)
	}
	return &earlyStopping{e: err, watch: newWatch(s), patience: s.patience, baseline: s.baseline, restore: s.restoreBest, startFrom: s.startFrom}
}

func (c *earlyStopping) err() error { return c.e }

func (c *earlyStopping) OnTrainBegin(m *Model) error {
	c.wait, c.bestEpoch, c.bestW = 0, -1, nil
	c.best = c.watch.worst()
	return nil
}

func (c *earlyStopping) OnEpochEnd(m *Model, epoch int, logs Logs) error {
	current, ok := logs[c.watch.monitor]
	if !ok {
		m.warnf("EarlyStopping: %q is not among the logged values %v; not stopping on it", c.watch.monitor, logs.Keys())
		return nil
	}
	if epoch < c.startFrom {
		return nil
	}
	if c.restore && c.bestW == nil {
		w, err := m.weightSnapshot()
		if err != nil {
			return err
		}
		c.bestW, c.bestWAt = w, epoch
	}
	c.wait++
	c.last = current
	if c.watch.better(current, c.best) {
		c.best, c.bestEpoch = current, epoch
		if c.restore {
			w, err := m.weightSnapshot()
			if err != nil {
				return err
			}
			c.bestW, c.bestWAt = w, epoch
		}
		if c.baseline == nil || c.watch.better(current, *c.baseline) {
			c.wait = 0
		}
		return nil
	}
	if c.wait >= c.patience && epoch > 0 {
		m.stopWith("early stopping: " + c.reason(epoch))
		if c.restore && c.bestW != nil {
			m.warnf("Restoring model weights from the end of the best epoch: %d.", c.bestWAt+1)
			return m.restoreSnapshot(c.bestW)
		}
	}
	return nil
}

// reason says why training stops at epoch: "val_loss did not improve for
// 3 epochs (best 0.3012 at epoch 4)", counting the epochs since the best
// one; or, with a baseline that no value has beaten, the epochs watched
// since the start.
func (c *earlyStopping) reason(epoch int) string {
	mon := c.watch.monitor
	epochs := func(n int) string {
		if n == 1 {
			return "1 epoch"
		}
		return fmt.Sprintf("%d epochs", n)
	}
	if c.bestEpoch < 0 {
		return fmt.Sprintf("%s did not improve for %s (it was %s every time)", mon, epochs(c.wait), formatValue(c.last))
	}
	best := fmt.Sprintf("(best %s at epoch %d)", formatValue(c.best), c.bestEpoch+1)
	if c.baseline != nil && !c.watch.better(c.best, *c.baseline) {
		return fmt.Sprintf("%s did not beat the baseline %s in %s %s", mon, formatValue(*c.baseline), epochs(c.wait), best)
	}
	by := ""
	if c.watch.delta > 0 {
		by = fmt.Sprintf(" by more than %g", c.watch.delta)
	}
	return fmt.Sprintf("%s did not improve%s for %s %s", mon, by, epochs(epoch-c.bestEpoch), best)
}

// modelCheckpoint is Keras's ModelCheckpoint, saving full checkpoints by
// default.
type modelCheckpoint struct {
	BaseCallback
	e           error
	path        string
	watch       monitorWatch
	bestOnly    bool
	weightsOnly bool
	best        float64
}

// ModelCheckpoint returns a callback that saves the model at the end of
// every epoch to path, as Keras's ModelCheckpoint does. By default it writes
// a full checkpoint (SaveCheckpoint: weights, optimizer state, step counter,
// seed, epoch and history), from which Fit can resume; SaveWeightsOnly
// writes the weights alone. With SaveBestOnly it saves only when the
// monitored value (Monitor, "val_loss" by default; Mode) improves. The path
// may hold "{epoch}" or "{epoch:02d}", replaced by the 1-based epoch.
//
// It never saves a model whose loss is not finite, nor one with a
// non-finite weight (a step with a non-finite gradient made it so), so that
// after TerminateOnNaN the last good checkpoint survives, whatever the order
// of the callbacks; and every file is written to a
// temporary name and renamed, so a crash mid-write leaves the previous one
// intact.
func ModelCheckpoint(path string, opts ...CallbackOption) Callback {
	s, err := newCallbackSettings("ModelCheckpoint", []string{"monitor", "mode", "save_best_only", "save_weights_only"}, opts)
	if err == nil {
		_, err = formatEpochPath(path, 0)
	}
	c := &modelCheckpoint{e: err, path: path, watch: newWatch(s), bestOnly: s.saveBestOnly, weightsOnly: s.saveWeightOnly}
	return c
}

func (c *modelCheckpoint) err() error { return c.e }

func (c *modelCheckpoint) OnTrainBegin(m *Model) error {
	c.best = c.watch.worst()
	return nil
}

func (c *modelCheckpoint) OnEpochEnd(m *Model, epoch int, logs Logs) error {
	for _, k := range []string{"loss", "val_loss"} {
		if v, ok := logs[k]; ok && (math.IsNaN(v) || math.IsInf(v, 0)) {
			m.warnf("ModelCheckpoint: %s is %v at epoch %d; not saving, the last checkpoint stays", k, v, epoch+1)
			return nil
		}
	}
	if name, v, err := m.nonFiniteWeight(); err != nil {
		return err
	} else if name != "" {
		m.warnf("ModelCheckpoint: weight %s holds %v at epoch %d; not saving, the last checkpoint stays", name, v, epoch+1)
		return nil
	}
	if c.bestOnly {
		current, ok := logs[c.watch.monitor]
		if !ok {
			m.warnf("ModelCheckpoint: can save the best model only with %s available, skipping", c.watch.monitor)
			return nil
		}
		if !c.watch.better(current, c.best) {
			return nil
		}
		c.best = current
	}
	path, err := formatEpochPath(c.path, epoch+1)
	if err != nil {
		return err
	}
	if c.weightsOnly {
		return m.SaveWeights(path)
	}
	// The History records this epoch after the callbacks run; the
	// checkpoint's copy includes it already.
	h := m.history
	if h == nil {
		h = newHistory()
	}
	if n := len(h.Epochs); n == 0 || h.Epochs[n-1] != epoch {
		h = h.clone()
		h.record(epoch, logs, m.history.pendingSeconds)
	}
	return m.saveCheckpoint(path, epoch+1, h)
}

var epochField = regexp.MustCompile(`\{epoch(?::0?(\d*)d)?\}`)

// formatEpochPath replaces {epoch} and {epoch:0Nd} in path by epoch, and
// rejects other fields.
func formatEpochPath(path string, epoch int) (string, error) {
	if path == "" {
		return "", errors.New("nn: ModelCheckpoint: empty path")
	}
	out := epochField.ReplaceAllStringFunc(path, func(f string) string {
		sub := epochField.FindStringSubmatch(f)
		width, _ := strconv.Atoi(sub[1])
		return fmt.Sprintf("%0*d", width, epoch)
	})
	if strings.ContainsAny(out, "{}") {
		return "", fmt.Errorf("nn: ModelCheckpoint: path %q has a field other than {epoch} or {epoch:02d}", path)
	}
	return out, nil
}

// csvLogger is Keras's CSVLogger.
type csvLogger struct {
	BaseCallback
	e      error
	path   string
	sep    string
	append bool
	f      *os.File
	w      *bufio.Writer
	keys   []string
}

// CSVLogger returns a callback writing one line per epoch to a CSV file: a
// header "epoch,<logged names in sorted order>", then the epoch number (from
// 0) and the values. Each line is flushed as it is written. It accepts
// Separator and AppendRows.
func CSVLogger(path string, opts ...CallbackOption) Callback {
	s, err := newCallbackSettings("CSVLogger", []string{"separator", "append"}, opts)
	if err == nil && path == "" {
		err = errors.New("nn: CSVLogger: empty path")
	}
	return &csvLogger{e: err, path: path, sep: s.separator, append: s.appendRows}
}

func (c *csvLogger) err() error { return c.e }

func (c *csvLogger) OnTrainBegin(m *Model) error {
	flags := os.O_CREATE | os.O_WRONLY | os.O_TRUNC
	if c.append {
		flags = os.O_CREATE | os.O_WRONLY | os.O_APPEND
	}
	f, err := os.OpenFile(c.path, flags, 0o644)
	if err != nil {
		return fmt.Errorf("nn: CSVLogger: %w", err)
	}
	c.f, c.w, c.keys = f, bufio.NewWriter(f), nil
	if c.append {
		if st, err := f.Stat(); err == nil && st.Size() > 0 {
			// The header is already there; learn its columns.
			if head, err := readCSVHeader(c.path, c.sep); err == nil && len(head) > 0 {
				c.keys = head[1:]
			}
		}
	}
	return nil
}

// readCSVHeader returns the fields of a CSV file's first line.
func readCSVHeader(path, sep string) ([]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	if !sc.Scan() {
		return nil, sc.Err()
	}
	return strings.Split(sc.Text(), sep), nil
}

func (c *csvLogger) OnEpochEnd(m *Model, epoch int, logs Logs) error {
	if c.w == nil {
		return nil
	}
	if c.keys == nil {
		c.keys = slices.Sorted(maps.Keys(logs))
		fmt.Fprintln(c.w, "epoch"+c.sep+strings.Join(c.keys, c.sep))
	}
	row := []string{strconv.Itoa(epoch)}
	for _, k := range c.keys {
		v, ok := logs[k]
		if !ok {
			row = append(row, "NA")
			continue
		}
		row = append(row, strconv.FormatFloat(v, 'g', -1, 64))
	}
	fmt.Fprintln(c.w, strings.Join(row, c.sep))
	if err := c.w.Flush(); err != nil {
		return fmt.Errorf("nn: CSVLogger: %w", err)
	}
	return nil
}

func (c *csvLogger) OnTrainEnd(m *Model, logs Logs) error {
	if c.f == nil {
		return nil
	}
	err := c.w.Flush()
	if cerr := c.f.Close(); err == nil {
		err = cerr
	}
	c.f, c.w = nil, nil
	if err != nil {
		return fmt.Errorf("nn: CSVLogger: %w", err)
	}
	return nil
}

// terminateOnNaN is Keras's TerminateOnNaN, watching the weights too.
type terminateOnNaN struct{ BaseCallback }

// TerminateOnNaN returns a callback that stops training as soon as the
// running loss is NaN or infinite, which Fit checks whenever it reads the
// running metrics (a few times a second) and at every epoch's end, or when
// at an epoch's end a weight is NaN or infinite: a step whose gradient was
// not finite (an overflow, though the loss still looked finite) left it so.
// NaN propagates through every op as in PyTorch, so such a weight also
// makes the following steps' loss NaN.
func TerminateOnNaN() Callback { return &terminateOnNaN{} }

func (c *terminateOnNaN) OnProgress(m *Model, epoch, batch int, logs Logs) error {
	if m.stop {
		return nil
	}
	if v, ok := logs["loss"]; ok && (math.IsNaN(v) || math.IsInf(v, 0)) {
		m.warnf("Batch %d: Invalid loss, terminating training", batch)
		m.stopWith(fmt.Sprintf("the loss became %v in epoch %d (by batch %d)", v, epoch+1, batch))
	}
	return nil
}

func (c *terminateOnNaN) OnEpochEnd(m *Model, epoch int, logs Logs) error {
	if m.stop {
		return nil
	}
	if v, ok := logs["loss"]; ok && (math.IsNaN(v) || math.IsInf(v, 0)) {
		m.warnf("Epoch %d: Invalid loss, terminating training", epoch+1)
		m.stopWith(fmt.Sprintf("the loss became %v in epoch %d", v, epoch+1))
		return nil
	}
	name, v, err := m.nonFiniteWeight()
	if err != nil {
		return err
	}
	if name != "" {
		m.warnf("Epoch %d: Invalid weight %s, terminating training", epoch+1, name)
		m.stopWith(fmt.Sprintf("weight %s became %v in epoch %d: a step's gradient was not finite (NaN or infinite)", name, v, epoch+1))
	}
	return nil
}

// nonFiniteWeight returns the name and value of the first trainable weight
// element that is NaN or infinite, or "" when every one is finite. It reads
// the weights from the device.
func (m *Model) nonFiniteWeight() (string, float32, error) {
	for _, w := range m.weights {
		if !w.trainable {
			continue
		}
		v, err := m.st.f32(w.Name())
		if err != nil {
			return "", 0, err
		}
		if i := firstNonFinite(v); i >= 0 {
			return w.Name(), v[i], nil
		}
	}
	return "", 0, nil
}

// lrScheduler is Keras's LearningRateScheduler.
type lrScheduler struct {
	BaseCallback
	fn func(epoch int, lr float64) float64
}

// LearningRateScheduler returns a callback that sets the learning rate at
// the start of every epoch to fn(epoch, current rate), and logs it as
// "learning_rate". The optimizer must have a constant learning rate, not a
// Schedule.
func LearningRateScheduler(fn func(epoch int, lr float64) float64) Callback {
	return &lrScheduler{fn: fn}
}

func (c *lrScheduler) err() error {
	if c.fn == nil {
		return errors.New("nn: LearningRateScheduler: nil function")
	}
	return nil
}

func (c *lrScheduler) OnEpochBegin(m *Model, epoch int) error {
	lr, err := m.LearningRate()
	if err != nil {
		return err
	}
	return m.SetLearningRate(c.fn(epoch, lr))
}

func (c *lrScheduler) OnEpochEnd(m *Model, epoch int, logs Logs) error {
	lr, err := m.LearningRate()
	if err != nil {
		return err
	}
	logs["learning_rate"] = lr
	return nil
}
