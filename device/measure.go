package device

import (
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	"github.com/tartanml/tartan/backend"
	"github.com/tartanml/tartan/backend/reference"
	"github.com/tartanml/tartan/grad"
	"github.com/tartanml/tartan/op"
	"github.com/tartanml/tartan/tile"
)

// The measured training step: a batch of stepBatch samples of stepIn
// features through a dense layer of stepHidden units with ReLU, a dense
// layer to stepClasses logits and the softmax cross-entropy loss, its
// gradients and a plain SGD update of the four parameters: about 4.4
// MFLOP a step (stepFLOPs).
const (
	stepBatch, stepIn, stepHidden, stepClasses = 64, 256, 64, 10
	stepRate                                   = 0.05
)

// StepWorkload names the measured step. The cache keeps it with the
// measurements, so that a later change of the step makes old figures stale
// rather than comparable.
const StepWorkload = "train-step-1: 64×256 dense 64 relu, dense 10, softmax cross-entropy, sgd"

// stepFLOPs is the arithmetic of one step: the three products of each
// dense layer (forward, gradient of the input, gradient of the weights),
// the gradient of the first layer's input excepted, as nothing needs it.
const stepFLOPs = 2*stepBatch*stepIn*stepHidden*2 + 2*stepBatch*stepHidden*stepClasses*3

// The timed runs: after one warm-up run, at least minStepRuns and at most
// maxStepRuns runs, stopping once stepBudget has been spent on them.
const (
	minStepRuns, maxStepRuns = 3, 31
	stepBudget               = 500 * time.Millisecond
)

// MeasureTimeout bounds one device's measurement, compilation included: a
// driver that hangs makes the measurement fail after this long instead of
// hanging tartan devices or tartan setup.
const MeasureTimeout = 20 * time.Second

// Measurement is a device's measured speed.
type Measurement struct {
	// Step is the median time of a training step (run and loss read back).
	Step time.Duration `json:"step_ns"`
	// Runs is the number of timed runs the median is of.
	Runs int `json:"runs"`
	// Measured is when (RFC 3339, UTC).
	Measured string `json:"measured"`
}

// GFLOPS is the step's arithmetic rate in 10⁹ operations a second.
func (m Measurement) GFLOPS() float64 {
	if m.Step <= 0 {
		return 0
	}
	return stepFLOPs / m.Step.Seconds() / 1e9
}

// stepGraph builds the measured training step.
func stepGraph() (*tile.Graph, error) {
	g := tile.NewGraph("device_step")
	x := g.Input("x", tile.Float32, tile.Shape{stepBatch, stepIn})
	labels := g.Input("labels", tile.Int32, tile.Shape{stepBatch})
	w1 := g.Variable("w1", tile.Float32, tile.Shape{stepIn, stepHidden})
	b1 := g.Variable("b1", tile.Float32, tile.Shape{stepHidden})
	w2 := g.Variable("w2", tile.Float32, tile.Shape{stepHidden, stepClasses})
	b2 := g.Variable("b2", tile.Float32, tile.Shape{stepClasses})
	h := op.ReLU(g, op.Dense(g, x, w1, b1))
	loss := op.SparseCategoricalCrossentropy(g, labels, op.Dense(g, h, w2, b2), true)
	g.SetOutput("loss", loss)
	if err := g.Err(); err != nil {
		return nil, fmt.Errorf("building the step: %w", err)
	}
	params := []*tile.Tensor{w1, b1, w2, b2}
	grads, err := grad.Grad(g, loss, params...)
	if err != nil {
		return nil, fmt.Errorf("the step's gradients: %w", err)
	}
	for i, p := range params {
		g.Update(p, g.Sub(p, g.Mul(g.ScalarLike(grads[i], stepRate), grads[i])))
	}
	if err := g.Err(); err != nil {
		return nil, fmt.Errorf("building the step: %w", err)
	}
	return g, nil
}

// stepData is the step's inputs and initial parameters, the same on every
// device.
func stepData() (map[string][]float32, []int32) {
	r := rand.New(rand.NewPCG(23, 29))
	vals := map[string][]float32{}
	for _, v := range []struct {
		name  string
		n     int
		scale float64
	}{
		{"x", stepBatch * stepIn, 1},
		{"w1", stepIn * stepHidden, 1 / math.Sqrt(stepIn)},
		{"b1", stepHidden, 0.1},
		{"w2", stepHidden * stepClasses, 1 / math.Sqrt(stepHidden)},
		{"b2", stepClasses, 0.1},
	} {
		d := make([]float32, v.n)
		for i := range d {
			d[i] = float32(r.NormFloat64() * v.scale)
		}
		vals[v.name] = d
	}
	labels := make([]int32, stepBatch)
	for i := range labels {
		labels[i] = int32(r.IntN(stepClasses))
	}
	return vals, labels
}

// stepRunner is a compiled step with its data bound.
type stepRunner struct {
	e    backend.Executable
	loss []float32
}

func newStepRunner(dev backend.Device, g *tile.Graph) (*stepRunner, error) {
	e, err := dev.Compile(g)
	if err != nil {
		return nil, fmt.Errorf("compile: %w", err)
	}
	vals, labels := stepData()
	for _, name := range []string{"w1", "b1", "w2", "b2"} {
		if err := e.WriteVariable(name, vals[name]); err != nil {
			e.Close()
			return nil, err
		}
	}
	if err := e.SetInput("x", vals["x"]); err == nil {
		err = e.SetInput("labels", labels)
	} else {
		e.Close()
		return nil, err
	}
	return &stepRunner{e: e, loss: make([]float32, 1)}, nil
}

// step runs one step and reads the loss back, which waits for the device.
func (s *stepRunner) step() (float32, error) {
	if err := s.e.Run(); err != nil {
		return 0, fmt.Errorf("run: %w", err)
	}
	if err := s.e.ReadOutput("loss", s.loss); err != nil {
		return 0, err
	}
	return s.loss[0], nil
}

// stepTolerance bounds the difference of the first step's loss from the
// reference executor's, relative: a loss of order one, in float32.
const stepTolerance = 1e-3

// MeasureDevice times the training step on dev: the median of several runs
// after a warm-up run whose loss must agree with the reference executor's
// (a device that computes the step wrongly is not measured). It takes
// about a second on a CPU; MeasureID bounds it with MeasureTimeout.
func MeasureDevice(dev backend.Device) (Measurement, error) {
	g, err := stepGraph()
	if err != nil {
		return Measurement{}, err
	}
	want, err := referenceLoss(g)
	if err != nil {
		return Measurement{}, err
	}
	s, err := newStepRunner(dev, g)
	if err != nil {
		return Measurement{}, err
	}
	defer s.e.Close()
	got, err := s.step()
	if err != nil {
		return Measurement{}, err
	}
	if d := math.Abs(float64(got) - want); !(d <= stepTolerance*math.Abs(want)) {
		return Measurement{}, fmt.Errorf("the step's loss is %v, the reference computes %v", got, want)
	}
	var ts []time.Duration
	start := time.Now()
	for len(ts) < maxStepRuns && (len(ts) < minStepRuns || time.Since(start) < stepBudget) {
		t := time.Now()
		if _, err := s.step(); err != nil {
			return Measurement{}, err
		}
		ts = append(ts, time.Since(t))
	}
	slices.Sort(ts)
	return Measurement{Step: max(ts[len(ts)/2], time.Nanosecond), Runs: len(ts),
		Measured: time.Now().UTC().Format(time.RFC3339)}, nil
}

// referenceLoss is the first step's loss on the reference executor.
func referenceLoss(g *tile.Graph) (float64, error) {
	s, err := newStepRunner(reference.New(), g)
	if err != nil {
		return 0, fmt.Errorf("the reference step: %w", err)
	}
	defer s.e.Close()
	l, err := s.step()
	if err != nil {
		return 0, fmt.Errorf("the reference step: %w", err)
	}
	return float64(l), nil
}

// ErrMeasureTimeout is matched by the error of a measurement that did not
// finish within MeasureTimeout.
var ErrMeasureTimeout = errors.New("the measurement did not finish in time")

// measureID opens the device id and measures it, within timeout. A device
// that does not finish in time is left open, running on, as nothing can
// interrupt a driver call; the caller goes on without its measurement.
func measureID(id string, timeout time.Duration) (Measurement, error) {
	type result struct {
		m   Measurement
		err error
	}
	done := make(chan result, 1)
	go func() {
		dev, err := openDevice(id)
		if err != nil {
			done <- result{err: fmt.Errorf("opening %s: %w", id, err)}
			return
		}
		m, err := measureDevice(dev)
		dev.Close()
		done <- result{m, err}
	}()
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	select {
	case r := <-done:
		return r.m, r.err
	case <-timer.C:
		return Measurement{}, fmt.Errorf("%w: %s took more than %s (a hanging driver?)", ErrMeasureTimeout, id, timeout)
	}
}

// measureDevice is MeasureDevice; tests replace it.
var measureDevice = MeasureDevice

// MeasureResult is one device's outcome in Measure.
type MeasureResult struct {
	ID string
	// Measurement is the new figure, when Err is nil.
	Measurement
	// Err says why the device could not be measured.
	Err error
}

// Measure measures the training step on the devices of l with the given
// ids (each within MeasureTimeout), writes the figures to the measurement
// cache, and ranks l again with them. A device whose measurement fails
// loses its cached figure. progress, when not nil, gets a line per device
// as it is measured. The error is the cache's, which cannot be written;
// the figures then still rank l.
func Measure(l *Listing, ids []string, progress io.Writer) ([]MeasureResult, error) {
	if progress == nil {
		progress = io.Discard
	}
	var res []MeasureResult
	var add []cachedFigure
	var drop []string
	w := 0
	for _, id := range ids {
		w = max(w, len(id))
	}
	for _, id := range ids {
		i := slices.IndexFunc(l.Devices, func(e Entry) bool { return e.ID == id })
		if i < 0 {
			return res, fmt.Errorf("measure: no device %q; devices: %s", id, l.IDs())
		}
		e := &l.Devices[i]
		fmt.Fprintf(progress, "  %-*s  ", w, id)
		m, err := measureID(id, MeasureTimeout)
		res = append(res, MeasureResult{ID: id, Measurement: m, Err: err})
		if err != nil {
			fmt.Fprintf(progress, "not measured: %v\n", err)
			e.Measured = nil
			drop = append(drop, id)
			continue
		}
		fmt.Fprintf(progress, "%s a step (%.1f GFLOP/s, median of %d runs)\n", formatDuration(m.Step), m.GFLOPS(), m.Runs)
		e.Measured = &m
		add = append(add, cachedFigure{ID: e.ID, Name: e.Name, Driver: e.Driver, Measurement: m})
	}
	rank(l.Devices)
	path, err := MeasureCachePath()
	if err != nil {
		return res, fmt.Errorf("the measurements are not saved: %w", err)
	}
	if err := saveMeasurements(path, add, drop); err != nil {
		return res, fmt.Errorf("the measurements are not saved: %w", err)
	}
	// The cache is sound now: drop a note about its damage.
	l.Notes = slices.DeleteFunc(l.Notes, func(n string) bool { return strings.HasPrefix(n, "measurement cache ") })
	return res, nil
}

// MeasureLine describes the measured step for messages: its size and how
// it is timed.
func MeasureLine() string {
	return fmt.Sprintf("a training step of %.1f MFLOP (a %d×%d batch through dense layers of %d and %d units, softmax cross-entropy, SGD), the median of up to %d runs after a warm-up run checked against the reference",
		stepFLOPs/1e6, stepBatch, stepIn, stepHidden, stepClasses, maxStepRuns)
}
