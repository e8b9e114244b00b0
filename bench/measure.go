package bench

import (
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/tartanml/tartan/backend"
)

// Options bounds the measurement of each entry.
type Options struct {
	// Warmup is the number of untimed steps first (the first one compiles
	// nn models); warm-up ends early, after at least one step, once it has
	// taken MaxSeconds beyond compiling. Default 2.
	Warmup int
	// MaxSteps bounds the timed steps. Default 100.
	MaxSteps int
	// MaxSeconds ends the timed steps once they have taken this long; at
	// least one is always timed. Default 3.
	MaxSeconds float64
	// Config sizes every entry (Batch 0 keeps each entry's own).
	Config Config
}

func (o Options) withDefaults() Options {
	if o.Warmup <= 0 {
		o.Warmup = 2
	}
	if o.MaxSteps <= 0 {
		o.MaxSteps = 100
	}
	if o.MaxSeconds <= 0 {
		o.MaxSeconds = 3
	}
	return o
}

// Result is the measurement of one entry; reports of torch_suite.py have
// the same fields.
type Result struct {
	Name  string `json:"name"`
	Kind  string `json:"kind"` // "model" or "fragment"
	Batch int    `json:"batch"`
	// Params is the number of trainable parameters.
	Params int `json:"params"`
	// MSPerStep is the median of the timed steps' wall times.
	MSPerStep float64 `json:"ms_per_step"`
	// Steps is the number of timed steps.
	Steps int `json:"steps"`
	// CompileSeconds is the time the device took to compile the step
	// (for PyTorch, which has no compile step, the first step's time).
	CompileSeconds float64 `json:"compile_seconds"`
	// Kernels is the number of kernels of the compiled step, -1 when the
	// backend does not say.
	Kernels int `json:"kernels"`
	// FirstLoss and LastLoss are the losses of the first and last steps
	// run, warm-up included.
	FirstLoss float64 `json:"first_loss"`
	LastLoss  float64 `json:"last_loss"`
	// Error says why the entry has no measurement, when it has none.
	Error string `json:"error,omitempty"`
}

// OK reports whether r holds a measurement.
func (r Result) OK() bool { return r.Error == "" && r.Steps > 0 && r.MSPerStep > 0 }

// Report is a run of the suite.
type Report struct {
	// Tool is "tartan" or "pytorch".
	Tool string `json:"tool"`
	// Version is the tool's version (Go's for Tartan).
	Version string `json:"version"`
	// Device is the device id ("cpu", "opencl:0:0"; for PyTorch "cpu" or
	// "cuda") and DeviceName its name.
	Device     string `json:"device"`
	DeviceName string `json:"device_name"`
	// Threads is the number of CPU threads the tool computes with.
	Threads int `json:"threads"`
	// Precision says how float32 products are computed: "float32" for
	// Tartan; for PyTorch on CUDA whether TF32 is allowed.
	Precision string `json:"precision"`
	// Cache says whether Tartan compiled against empty caches ("cold").
	Cache      string   `json:"cache,omitempty"`
	MaxSteps   int      `json:"max_steps"`
	MaxSeconds float64  `json:"max_seconds"`
	Entries    []Result `json:"entries"`
}

// Measure builds e's step on dev, runs the warm-up and then times steps
// within o's bounds. A failure is recorded in the result's Error, so that a
// suite goes on.
func Measure(dev backend.Device, e Entry, o Options) Result {
	o = o.withDefaults()
	res := Result{Name: e.Name, Kind: e.Kind(), Batch: e.Batch, Kernels: -1}
	if o.Config.Batch > 0 {
		res.Batch = o.Config.Batch
	}
	st, err := e.Build(dev, o.Config)
	if err != nil {
		res.Error = err.Error()
		return res
	}
	defer st.Close()
	res.Params = st.Params()
	times, losses, err := runSteps(st, o)
	if len(losses) > 0 {
		res.FirstLoss, res.LastLoss = losses[0], losses[len(losses)-1]
	}
	res.CompileSeconds = st.CompileSeconds()
	res.Kernels = st.Kernels()
	if err != nil {
		res.Error = err.Error()
		res.FirstLoss, res.LastLoss = 0, 0
		return res
	}
	res.Steps = len(times)
	res.MSPerStep = median(times) * 1e3
	return res
}

// runSteps runs st's warm-up and timed steps and returns the timed steps'
// seconds and every step's loss. A loss that is not finite ends the run
// with an error.
func runSteps(st Step, o Options) (times, losses []float64, err error) {
	step := func() (float64, error) {
		t := time.Now()
		l, err := st.Run()
		if err != nil {
			return 0, fmt.Errorf("step %d: %w", len(losses)+1, err)
		}
		losses = append(losses, l)
		if !finite(l) {
			return 0, fmt.Errorf("step %d: the loss is %v", len(losses), l)
		}
		return time.Since(t).Seconds(), nil
	}
	warm := 0.0
	for i := 0; i < o.Warmup; i++ {
		before := st.CompileSeconds()
		s, err := step()
		if err != nil {
			return nil, losses, err
		}
		// Compiling inside a step (nn's first Fit) is not warm-up time.
		s -= st.CompileSeconds() - before
		if warm += s; warm > o.MaxSeconds {
			break
		}
	}
	spent := 0.0
	for len(times) < o.MaxSteps && (len(times) == 0 || spent < o.MaxSeconds) {
		s, err := step()
		if err != nil {
			return nil, losses, err
		}
		times = append(times, s)
		spent += s
	}
	return times, losses, nil
}

// Run measures every entry in turn on dev and returns the results, writing
// a line per entry to progress (when not nil) as each finishes.
func Run(dev backend.Device, entries []Entry, o Options, progress io.Writer) []Result {
	var out []Result
	for _, e := range entries {
		if progress != nil {
			fmt.Fprintf(progress, "%-12s ", e.Name)
		}
		r := Measure(dev, e, o)
		out = append(out, r)
		if progress != nil {
			if r.Error != "" {
				fmt.Fprintf(progress, "error: %s\n", r.Error)
			} else {
				fmt.Fprintf(progress, "%10.2f ms/step over %d steps, compile %.2f s, %s kernels, loss %.4g -> %.4g\n",
					r.MSPerStep, r.Steps, r.CompileSeconds, count(r.Kernels), r.FirstLoss, r.LastLoss)
			}
		}
	}
	return out
}

// count prints a count that may be unknown (negative).
func count(n int) string {
	if n < 0 {
		return "-"
	}
	return fmt.Sprint(n)
}

func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}
