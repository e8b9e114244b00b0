package main

import (
	"fmt"
	"io"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/tartanml/tartan/backend"
	"github.com/tartanml/tartan/onnx"
	"github.com/tartanml/tartan/tile"
)

// onnxBenchReport is what tartan bench --onnx --json writes.
type onnxBenchReport struct {
	Model          string  `json:"model"`
	Device         string  `json:"device"`
	Batch          int     `json:"batch"`
	CompileSeconds float64 `json:"compile_seconds"`
	Runs           int     `json:"runs"`
	MedianMS       float64 `json:"median_ms"`
	MinMS          float64 `json:"min_ms"`
	MaxMS          float64 `json:"max_ms"`
	SamplesPerS    float64 `json:"samples_per_second"`
}

// onnxBenchSeconds bounds the timed runs of tartan bench --onnx.
const onnxBenchSeconds = 2.0

// onnxBench measures inference of an ONNX model: each graph input gets
// random data (normal floats, zero integers) of its declared shape, the
// leading dimension, when the model leaves it open, being the batch; after
// three untimed runs, runs (each waiting for its outputs) are timed for
// about two seconds, at most steps of them, and the median is reported.
// With profile > 0 one more run times each kernel and the profile slowest
// are printed.
func onnxBench(path string, batch, steps, profile int, devID, jsonPath string, stdout, stderr io.Writer) error {
	m, err := onnx.Load(path)
	if err != nil {
		return err
	}
	rng := rand.New(rand.NewPCG(1, 2))
	data := map[string]*tile.Value{}
	for _, in := range m.Inputs {
		if in.Sequence {
			return fmt.Errorf("input %q is a sequence of tensors, which bench --onnx cannot fill", in.Name)
		}
		if !in.HasShape {
			return fmt.Errorf("input %q declares no shape, so bench --onnx cannot choose one", in.Name)
		}
		dt, ok := in.Type.Tile()
		if !ok {
			return fmt.Errorf("input %q: element type %s is not supported", in.Name, in.Type)
		}
		shape := make(tile.Shape, len(in.Shape))
		for d, dim := range in.Shape {
			switch {
			case dim.Value >= 0:
				shape[d] = int(dim.Value)
			case d == 0:
				shape[d] = batch
			default:
				return fmt.Errorf("input %q: dimension %d (%s) is open; bench --onnx fills only an open leading (batch) dimension", in.Name, d, dim)
			}
		}
		n := shape.Size()
		if n < 0 || n > onnx.MaxElements {
			return fmt.Errorf("input %q: shape %v is too large", in.Name, shape)
		}
		vals := make([]float64, n)
		if dt.IsFloat() {
			for i := range vals {
				vals[i] = float64(float32(rng.NormFloat64()))
			}
		}
		v, err := tile.ValueOf(dt, shape, vals)
		if err != nil {
			return fmt.Errorf("input %q: %w", in.Name, err)
		}
		data[in.Name] = v
	}
	g, err := onnxGraph(m, data)
	if err != nil {
		return err
	}
	dev, _, err := openDevice(devID, stderr)
	if err != nil {
		return err
	}
	defer dev.Close()
	end := beginProgress(stderr, "compiling %s for %s (batch %d)", path, dev.Info().ID, batch)
	t0 := time.Now()
	x, err := dev.Compile(g)
	if err != nil {
		end("failed")
		return fmt.Errorf("compiling %s for %s: %w", path, dev.Info().ID, err)
	}
	defer x.Close()
	compile := time.Since(t0).Seconds()
	end("")
	if err := feedInputs(x, m, g, data); err != nil {
		return err
	}
	outs := g.Outputs()
	dsts := make([]any, len(outs))
	for i, o := range outs {
		dsts[i] = backend.HostSlice(o.Tensor.DType(), make([]float64, o.Tensor.Size()))
	}
	once := func() (float64, error) {
		t := time.Now()
		if err := x.Run(); err != nil {
			return 0, err
		}
		for i, o := range outs {
			if err := x.ReadOutput(o.Name, dsts[i]); err != nil {
				return 0, err
			}
		}
		return time.Since(t).Seconds(), nil
	}
	end = beginProgress(stderr, "timing %s on %s", path, dev.Info().ID)
	for range 3 {
		if _, err := once(); err != nil {
			end("failed")
			return fmt.Errorf("running %s: %w", path, err)
		}
	}
	var times []float64
	start := time.Now()
	for len(times) < steps && (len(times) < 5 || time.Since(start).Seconds() < onnxBenchSeconds) {
		s, err := once()
		if err != nil {
			end("failed")
			return fmt.Errorf("running %s: %w", path, err)
		}
		times = append(times, s)
	}
	end("")
	slices.Sort(times)
	med := times[len(times)/2]
	rep := onnxBenchReport{Model: path, Device: dev.Info().ID, Batch: batch, CompileSeconds: compile, Runs: len(times),
		MedianMS: med * 1e3, MinMS: times[0] * 1e3, MaxMS: times[len(times)-1] * 1e3, SamplesPerS: float64(batch) / med}
	fmt.Fprintf(stdout, "%s on %s (%s), batch %d: compile %.2f s; latency %.3f ms median (min %.3f, max %.3f) over %d runs; %.1f samples/s\n",
		path, dev.Info().ID, dev.Info().Name, batch, compile, rep.MedianMS, rep.MinMS, rep.MaxMS, rep.Runs, rep.SamplesPerS)
	if profile > 0 {
		if err := printProfile(stdout, x, profile); err != nil {
			return err
		}
	}
	if jsonPath != "" {
		return writeJSON(jsonPath, rep)
	}
	return nil
}
