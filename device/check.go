package device

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/tartanml/tartan/backend"
	"github.com/tartanml/tartan/backend/reference"
	"github.com/tartanml/tartan/op"
	"github.com/tartanml/tartan/tile"
)

// CheckResult reports a passed correctness check.
type CheckResult struct {
	// MaxError is the largest difference from the reference, relative to
	// the reference value plus 1e-3 (the outputs are probabilities and
	// logits of order one).
	MaxError float64
	// Compile and Run are the device's compile time and the time of one
	// run with its read-back.
	Compile, Run time.Duration
	// Speed is the median time of a run of a 256×256 by 256×256 product
	// with bias, ReLU and a sum read back, after a warm-up run: a figure
	// to compare devices by, dominated by arithmetic rather than by the
	// cost of starting a run.
	Speed time.Duration
}

// speedSize and speedRuns set the timed product of Check: its size, and
// the number of timed runs after the warm-up run.
const speedSize, speedRuns = 256, 5

// checkTolerance bounds MaxError. It admits the tf32 matrix products a
// device may be configured for (about 1e-3 relative) and rejects wrong
// kernels, whose errors are of order one.
const checkTolerance = 5e-3

// Check runs a small dense layer and softmax on dev (a 33×47 by 47×20
// product, a bias, a row softmax and a column sum, with odd sizes so that
// tile edges are exercised) and compares the outputs with the reference
// executor. It returns an error naming the first element that disagrees.
// Then it times a larger product for CheckResult.Speed.
func Check(dev backend.Device) (CheckResult, error) {
	var res CheckResult
	g := tile.NewGraph("device_check")
	x := g.Input("x", tile.Float32, tile.Shape{33, 47})
	w := g.Input("w", tile.Float32, tile.Shape{47, 20})
	b := g.Input("b", tile.Float32, tile.Shape{20})
	logits := op.Dense(g, x, w, b)
	probs := op.Softmax(g, logits, -1)
	g.SetOutput("logits", logits)
	g.SetOutput("probs", probs)
	g.SetOutput("colsum", op.Sum(g, probs, []int{0}, false))
	if err := g.Err(); err != nil {
		return res, fmt.Errorf("device check: building the graph: %w", err)
	}
	r := rand.New(rand.NewPCG(7, 11))
	feeds := map[string][]float32{"x": make([]float32, 33*47), "w": make([]float32, 47*20), "b": make([]float32, 20)}
	for _, name := range []string{"x", "w", "b"} {
		for i := range feeds[name] {
			feeds[name][i] = float32(r.NormFloat64() * 0.5)
		}
	}
	run := func(d backend.Device) (map[string][]float32, time.Duration, time.Duration, error) {
		t0 := time.Now()
		e, err := d.Compile(g)
		if err != nil {
			return nil, 0, 0, fmt.Errorf("compile: %w", err)
		}
		defer e.Close()
		compiled := time.Since(t0)
		t1 := time.Now()
		for _, name := range []string{"x", "w", "b"} {
			if err := e.SetInput(name, feeds[name]); err != nil {
				return nil, 0, 0, err
			}
		}
		if err := e.Run(); err != nil {
			return nil, 0, 0, fmt.Errorf("run: %w", err)
		}
		out := map[string][]float32{}
		for _, o := range g.Outputs() {
			v := make([]float32, o.Tensor.Size())
			if err := e.ReadOutput(o.Name, v); err != nil {
				return nil, 0, 0, err
			}
			out[o.Name] = v
		}
		return out, compiled, time.Since(t1), nil
	}
	got, ct, rt, err := run(dev)
	if err != nil {
		return res, fmt.Errorf("device check on %s: %w", dev.Info().ID, err)
	}
	res.Compile, res.Run = ct, rt
	want, _, _, err := run(reference.New())
	if err != nil {
		return res, fmt.Errorf("device check: reference: %w", err)
	}
	for _, o := range g.Outputs() {
		gv, wv := got[o.Name], want[o.Name]
		for i := range wv {
			e := math.Abs(float64(gv[i])-float64(wv[i])) / (math.Abs(float64(wv[i])) + 1e-3)
			if math.IsNaN(float64(gv[i])) {
				e = math.Inf(1)
			}
			if e > res.MaxError {
				res.MaxError = e
			}
			if e > checkTolerance {
				return res, fmt.Errorf("device check on %s failed: %s[%d] is %v, the reference computes %v",
					dev.Info().ID, o.Name, i, gv[i], wv[i])
			}
		}
	}
	sp, err := timeProduct(dev)
	if err != nil {
		return res, fmt.Errorf("device check on %s: timing a %d×%d product: %w", dev.Info().ID, speedSize, speedSize, err)
	}
	res.Speed = sp
	return res, nil
}

// timeProduct returns the median time of speedRuns runs of a
// speedSize×speedSize product with bias and ReLU, summed to a scalar that
// is read back (which waits for the device), after a warm-up run.
func timeProduct(dev backend.Device) (time.Duration, error) {
	const n = speedSize
	g := tile.NewGraph("device_speed")
	x := g.Input("x", tile.Float32, tile.Shape{n, n})
	w := g.Input("w", tile.Float32, tile.Shape{n, n})
	b := g.Input("b", tile.Float32, tile.Shape{n})
	g.SetOutput("sum", op.Sum(g, op.ReLU(g, op.Dense(g, x, w, b)), nil, false))
	if err := g.Err(); err != nil {
		return 0, fmt.Errorf("building the graph: %w", err)
	}
	e, err := dev.Compile(g)
	if err != nil {
		return 0, fmt.Errorf("compile: %w", err)
	}
	defer e.Close()
	r := rand.New(rand.NewPCG(13, 17))
	for name, size := range map[string]int{"x": n * n, "w": n * n, "b": n} {
		v := make([]float32, size)
		for i := range v {
			v[i] = float32(r.NormFloat64() * 0.1)
		}
		if err := e.SetInput(name, v); err != nil {
			return 0, err
		}
	}
	sum := make([]float32, 1)
	ts := make([]time.Duration, 0, speedRuns)
	for i := range speedRuns + 1 {
		t := time.Now()
		if err := e.Run(); err != nil {
			return 0, fmt.Errorf("run: %w", err)
		}
		if err := e.ReadOutput("sum", sum); err != nil {
			return 0, err
		}
		if i > 0 {
			ts = append(ts, time.Since(t))
		}
	}
	slices.Sort(ts)
	return ts[len(ts)/2], nil
}
