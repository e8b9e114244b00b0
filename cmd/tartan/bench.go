package main

import (
	"flag"
	"fmt"
	"github.com/tartanml/tartan/tune"
	"io"
	"math/rand/v2"
	"os"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"
	"time"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas32"

	"github.com/tartanml/tartan/backend"
	"github.com/tartanml/tartan/backend/cpu/gemm"
	"github.com/tartanml/tartan/bench"
	"github.com/tartanml/tartan/data"
	"github.com/tartanml/tartan/grad"
	"github.com/tartanml/tartan/nn"
	"github.com/tartanml/tartan/op"
	"github.com/tartanml/tartan/tile"
)

// benchReport is what tartan bench measures; --json writes it.
type benchReport struct {
	Device string       `json:"device"`
	Sgemm  []sgemmBench `json:"sgemm"`
	Conv   []convBench  `json:"conv_layers"`
	Step   stepBench    `json:"training_step"`
}

type sgemmBench struct {
	N           int     `json:"n"`
	GFLOPS      float64 `json:"gflops"`
	GonumGFLOPS float64 `json:"gonum_gflops"`
	Ratio       float64 `json:"ratio_to_gonum"`
}

type convBench struct {
	Layer      string  `json:"layer"`
	ForwardMS  float64 `json:"forward_ms"`
	BackwardMS float64 `json:"backward_ms"`
}

type stepBench struct {
	Model          string  `json:"model"`
	BatchSize      int     `json:"batch_size"`
	Steps          int     `json:"steps"`
	MSPerStep      float64 `json:"ms_per_step"`
	CompileSeconds float64 `json:"compile_seconds"`
}

// benchCommand measures the host's matrix product against gonum in the same
// run, each convolution of the showcase CNN forward and backward on the
// device, and the showcase's whole training step. Figures are medians.
// Progress goes to stderr, a line per measurement as it starts and ends
// ("bench: WHAT… 3.2 s"), so that a slow device shows what it is doing;
// stdout has the figures.
//
// With --suite it runs the benchmark suite of package bench instead: one
// training step (forward, loss, gradients, Adam update, compiled whole) of
// each model family (mlp, cnn, resnet20, mobilenetv2, transformer, stem),
// with --fragments the kernel fragments too (mbblock, stemblock, attention,
// lstm, depthwise, embedding, bnrelu6), or the entries --only names. Each
// entry compiles (against empty program caches unless --warm-cache), runs
// --warmup untimed steps and then at most --steps timed ones, stopping once
// they have taken --max-seconds (at least one is timed); it reports the
// median ms/step, the compile seconds, the kernel count and the parameter
// count (on stderr as "bench: [i/n] NAME (KIND, batch B)… FIGURES (S s)"
// while the suite runs, in the table on stdout at the end), and --json
// writes the report. --profile N then also prints, after each entry, the N
// slowest kernels of one more training step (device time per kernel on
// OpenCL and Vulkan, wall time on the CPU). --threads sets the CPU threads
// (GOMAXPROCS). --peer FILE[,FILE…] reads reports of bench/torch_suite.py
// (several files: the median per entry) and prints Tartan ÷ peer per entry
// and the geometric mean over the models; --from FILE[,FILE…] takes
// Tartan's side from earlier --json reports instead of measuring, which is
// how bench/run_suite.sh prints its table. --repeat does not apply to the
// suite, whose median is over each entry's timed steps. An entry that fails
// (a compile error, a loss that is not finite) is reported in the table and
// the exit status is 1 once the table and the report are written. Usage:
//
//	tartan bench --suite [--fragments] [--only NAME,…] [--device ID] [--threads N]
//	             [--steps N] [--max-seconds S] [--warmup N] [--batch N] [--warm-cache]
//	             [--json FILE] [--peer FILE,…] [--from FILE,…] [--profile N]
func benchCommand(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("tartan bench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	devID := fs.String("device", "", "device id (default: as for fit)")
	steps := fs.Int("steps", 100, "timed training steps (each of batch 64); with --suite, at most this many per entry")
	reps := fs.Int("repeat", 5, "repetitions of each timing; the median is reported")
	jsonPath := fs.String("json", "", "also write the figures as JSON to this file")
	var so suiteFlags
	fs.BoolVar(&so.suite, "suite", false, "run the benchmark suite of model families instead")
	fs.BoolVar(&so.fragments, "fragments", false, "with --suite: the kernel fragments too")
	fs.StringVar(&so.only, "only", "", "with --suite: only these entries, comma-separated")
	fs.StringVar(&so.peer, "peer", "", "with --suite: compare with these reports of bench/torch_suite.py, comma-separated")
	fs.StringVar(&so.from, "from", "", "with --suite: Tartan's figures from these earlier --json reports instead of measuring")
	fs.Float64Var(&so.maxSeconds, "max-seconds", 3, "with --suite: end an entry's timed steps after this many seconds")
	fs.IntVar(&so.warmup, "warmup", 2, "with --suite: untimed steps before timing")
	fs.IntVar(&so.threads, "threads", 0, "with --suite: CPU threads (GOMAXPROCS; default: all)")
	fs.IntVar(&so.batch, "batch", 0, "with --suite: run every entry at this batch size (default: each entry's); with --onnx: the batch")
	fs.BoolVar(&so.warmCache, "warm-cache", false, "with --suite: keep the usual program caches (compile seconds then show cache loads)")
	profile := fs.Int("profile", 0, "with --onnx or --suite: after timing, run once more timing each kernel and print the `N` slowest (cpu, opencl and vulkan devices)")
	onnxPath := fs.String("onnx", "", "measure inference of the ONNX model `FILE` instead (--batch sets its open leading dimension, default 1)")
	if err := fs.Parse(args); err != nil {
		if err == flag.ErrHelp {
			return err
		}
		return fmt.Errorf("%w: %v", errUsage, err)
	}
	if fs.NArg() > 0 || *steps < 1 || *reps < 1 || *steps > maxBenchSteps || *reps > maxBenchRepeat {
		return usageError("bench takes no arguments, --steps from 1 to %d and --repeat from 1 to %d", maxBenchSteps, maxBenchRepeat)
	}
	if *jsonPath != "" {
		// An unusable --json path is reported before minutes of measuring.
		if _, err := checkOutputs(outputFlag{"json", *jsonPath}); err != nil {
			return err
		}
	}
	if *profile < 0 || *profile > 0 && *onnxPath == "" && !so.suite {
		return usageError("--profile N takes a positive N, with --onnx or --suite")
	}
	so.profile = *profile
	if *onnxPath != "" {
		if so.suite {
			return usageError("--onnx and --suite are two different benchmarks: give one")
		}
		var other []string
		fs.Visit(func(f *flag.Flag) {
			switch f.Name {
			case "fragments", "only", "peer", "from", "max-seconds", "warmup", "threads", "warm-cache", "repeat":
				other = append(other, "--"+f.Name)
			}
		})
		if len(other) > 0 {
			return usageError("%s do not apply with --onnx", strings.Join(other, ", "))
		}
		batch := so.batch
		if batch == 0 {
			batch = 1
		}
		if batch < 0 {
			return usageError("--batch %d must be positive", batch)
		}
		return onnxBench(*onnxPath, batch, *steps*10, *profile, *devID, *jsonPath, stdout, stderr)
	}

	if so.suite {
		so.steps, so.device, so.json = *steps, *devID, *jsonPath
		return suiteCommand(so, stdout, stderr)
	}
	var suiteOnly []string
	fs.Visit(func(f *flag.Flag) {
		switch f.Name {
		case "fragments", "only", "peer", "from", "max-seconds", "warmup", "threads", "batch", "warm-cache":
			suiteOnly = append(suiteOnly, "--"+f.Name)
		}
	})
	if len(suiteOnly) > 0 {
		return usageError("%s only apply with --suite", strings.Join(suiteOnly, ", "))
	}
	dev, _, err := openDevice(*devID, stderr)
	if err != nil {
		return err
	}
	defer dev.Close()
	rep := benchReport{Device: dev.Info().ID}

	fmt.Fprintln(stdout, "sgemm on the host (float32, all cores) against gonum's blas32.Gemm, same run:")
	for _, n := range sgemmSizes {
		end := beginProgress(stderr, "sgemm %d³ on the host, Tartan's then gonum's", n)
		s := benchSgemm(n, *reps)
		end("")
		rep.Sgemm = append(rep.Sgemm, s)
		fmt.Fprintf(stdout, "  %4d³  %7.1f GFLOP/s   gonum %6.1f GFLOP/s   %.1fx\n", n, s.GFLOPS, s.GonumGFLOPS, s.Ratio)
	}

	fmt.Fprintf(stdout, "showcase convolutions (2x2 same, bias-free, ReLU) on %s, batch 64; backward computes what training needs:\n", rep.Device)
	for _, c := range []struct {
		name          string
		h, w, cin, co int
		inputGrad     bool
	}{{"conv2d 28x28x1 -> 64 (dK)", 28, 28, 1, 64, false}, {"conv2d_1 14x14x64 -> 32 (dK, dX)", 14, 14, 64, 32, true}} {
		end := beginProgress(stderr, "%s on %s, forward and backward", c.name, rep.Device)
		fwd, bwd, err := benchConv(dev, 64, c.h, c.w, c.cin, c.co, c.inputGrad, *reps)
		if err != nil {
			end("failed")
			return fmt.Errorf("bench %s: %w", c.name, err)
		}
		end("")
		rep.Conv = append(rep.Conv, convBench{Layer: c.name, ForwardMS: fwd, BackwardMS: bwd})
		fmt.Fprintf(stdout, "  %-34s forward %7.3f ms   backward %7.3f ms\n", c.name, fwd, bwd)
	}

	end := beginProgress(stderr, "showcase training step on %s (fashion-cnn, batch 64: compile, then %d epochs of %d steps)", rep.Device, 1+*reps, *steps)
	st, err := benchStep(dev, *steps, *reps)
	if err != nil {
		end("failed")
		return fmt.Errorf("bench training step: %w", err)
	}
	end("")
	rep.Step = st
	fmt.Fprintf(stdout, "showcase training step (fashion-cnn, Adam, batch 64): %.2f ms/step, compile %.3f s\n", st.MSPerStep, st.CompileSeconds)
	if *jsonPath != "" {
		return writeJSON(*jsonPath, rep)
	}
	return nil
}

// sgemmSizes are the sizes of bench's matrix products; tests make them
// smaller.
var sgemmSizes = []int{256, 1024, 2048}

// benchClock times the progress lines; tests replace it.
var benchClock = time.Now

// beginProgress writes "bench: WHAT… " to w as a measurement starts, so
// that a slow device shows what it is doing, and returns the function that
// ends the line when the measurement ends: with the seconds it took, after
// result when result is not empty.
func beginProgress(w io.Writer, format string, args ...any) (end func(result string)) {
	fmt.Fprintf(w, "bench: "+format+"… ", args...)
	start := benchClock()
	return func(result string) {
		took := fmt.Sprintf("%.1f s", benchClock().Sub(start).Seconds())
		if result == "" {
			fmt.Fprintln(w, took)
			return
		}
		fmt.Fprintf(w, "%s (%s)\n", result, took)
	}
}

func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[len(s)/2]
}

// The bounds of bench's counts: far beyond any useful measurement, and
// small enough that no count overflows or allocates without bound.
const maxBenchSteps, maxBenchRepeat = 1_000_000, 1000

// timeMedian runs f reps times after one warm-up and returns the median
// seconds.
func timeMedian(reps int, f func() error) (float64, error) {
	if err := f(); err != nil {
		return 0, err
	}
	ts := make([]float64, reps)
	for i := range ts {
		t := time.Now()
		if err := f(); err != nil {
			return 0, err
		}
		ts[i] = time.Since(t).Seconds()
	}
	return median(ts), nil
}

func benchSgemm(n, reps int) sgemmBench {
	r := rand.New(rand.NewPCG(1, 2))
	a, b, c := make([]float32, n*n), make([]float32, n*n), make([]float32, n*n)
	for i := range a {
		a[i], b[i] = r.Float32(), r.Float32()
	}
	flops := 2 * float64(n) * float64(n) * float64(n)
	ours, _ := timeMedian(reps, func() error {
		gemm.SgemmParallel(0, false, false, n, n, n, 1, a, n, b, n, 0, c, n)
		return nil
	})
	ga := blas32.General{Rows: n, Cols: n, Stride: n, Data: a}
	gb := blas32.General{Rows: n, Cols: n, Stride: n, Data: b}
	gc := blas32.General{Rows: n, Cols: n, Stride: n, Data: c}
	theirs, _ := timeMedian(reps, func() error {
		blas32.Gemm(blas.NoTrans, blas.NoTrans, 1, ga, gb, 0, gc)
		return nil
	})
	s := sgemmBench{N: n, GFLOPS: flops / ours / 1e9, GonumGFLOPS: flops / theirs / 1e9}
	s.Ratio = s.GFLOPS / s.GonumGFLOPS
	return s
}

// benchConv times one 2×2 'same' convolution with ReLU forward, and the
// gradients of its kernel (and of its input when inputGrad) backward, as
// compiled programs.
func benchConv(dev backend.Device, n, h, w, cin, cout int, inputGrad bool, reps int) (fwdMS, bwdMS float64, err error) {
	build := func(backward bool) (backend.Executable, error) {
		g := tile.NewGraph("bench_conv")
		x := g.Input("x", tile.Float32, tile.Shape{n, h, w, cin})
		k := g.Variable("kernel", tile.Float32, tile.Shape{2, 2, cin, cout})
		y := op.ReLU(g, op.Conv2D(g, x, k, op.ConvOptions{Padding: op.Same}))
		if !backward {
			g.SetOutput("y", op.Sum(g, y, nil, false))
		} else {
			dy := g.Input("dy", tile.Float32, y.Shape())
			loss := op.Sum(g, g.Mul(y, dy), nil, false)
			wrt := []*tile.Tensor{k}
			if inputGrad {
				wrt = append(wrt, x)
			}
			gs, err := grad.Grad(g, loss, wrt...)
			if err != nil {
				return nil, err
			}
			g.SetOutput("dk", op.Sum(g, gs[0], nil, false))
			if inputGrad {
				g.SetOutput("dx", op.Sum(g, gs[1], nil, false))
			}
		}
		if err := g.Err(); err != nil {
			return nil, err
		}
		exe, err := dev.Compile(g)
		if err != nil {
			return nil, err
		}
		r := rand.New(rand.NewPCG(3, 4))
		fill := func(m int) []float32 {
			v := make([]float32, m)
			for i := range v {
				v[i] = r.Float32() - 0.5
			}
			return v
		}
		if err := exe.SetInput("x", fill(n*h*w*cin)); err != nil {
			return nil, err
		}
		if err := exe.WriteVariable("kernel", fill(4*cin*cout)); err != nil {
			return nil, err
		}
		if backward {
			if err := exe.SetInput("dy", fill(n*h*w*cout)); err != nil {
				return nil, err
			}
		}
		return exe, nil
	}
	times := [2]float64{}
	for i, backward := range []bool{false, true} {
		exe, err := build(backward)
		if err != nil {
			return 0, 0, err
		}
		out, sink := "y", make([]float32, 1)
		if backward {
			out = "dk"
		}
		// Reading a scalar result waits for the device to finish.
		t, err := timeMedian(reps, func() error {
			if err := exe.Run(); err != nil {
				return err
			}
			return exe.ReadOutput(out, sink)
		})
		exe.Close()
		if err != nil {
			return 0, 0, err
		}
		times[i] = t * 1e3
	}
	return times[0], times[1], nil
}

// benchStep trains the showcase CNN on random images for one epoch of
// `steps` batches to compile and warm up, then reps more epochs, and
// reports the median time per step.
func benchStep(dev backend.Device, steps, reps int) (stepBench, error) {
	const batch = 64
	n := steps * batch
	r := rand.New(rand.NewPCG(5, 6))
	d := &data.Dataset{Name: "random", Images: make([]uint8, n*28*28), Labels: make([]uint8, n), N: n, H: 28, W: 28, C: 1, Classes: 10}
	for i := range d.Images {
		d.Images[i] = uint8(r.IntN(256))
	}
	for i := range d.Labels {
		d.Labels[i] = uint8(r.IntN(10))
	}
	samples, err := nn.FromDataset(d)
	if err != nil {
		return stepBench{}, err
	}
	m, err := nn.ShowcaseModel("fashion-cnn")
	if err != nil {
		return stepBench{}, err
	}
	if err := m.InitWeights(1); err != nil {
		return stepBench{}, err
	}
	if err := m.Compile(nn.Adam(1e-3), nn.SparseCategoricalCrossentropy(), nn.Metrics("accuracy"), nn.OnDevice(dev)); err != nil {
		return stepBench{}, err
	}
	hist, err := m.Fit(samples, nn.BatchSize(batch), nn.Epochs(1+reps), nn.Verbose(0))
	if err != nil {
		return stepBench{}, err
	}
	if len(hist.EpochSeconds) < 2 {
		return stepBench{}, fmt.Errorf("training stopped after %d epochs: %s", len(hist.EpochSeconds), hist.StopReason)
	}
	return stepBench{Model: "fashion-cnn", BatchSize: batch, Steps: steps,
		MSPerStep:      median(hist.EpochSeconds[1:]) / float64(steps) * 1e3,
		CompileSeconds: m.Stats().CompileSeconds}, nil
}

// suiteFlags are the settings of tartan bench --suite.
type suiteFlags struct {
	suite, fragments, warmCache   bool
	only, peer, from, device      string
	json                          string
	maxSeconds                    float64
	warmup, threads, batch, steps int
	profile                       int
}

// suiteCommand runs the benchmark suite, or reads Tartan's figures with
// --from, prints the table and, with --peer, the comparison.
func suiteCommand(so suiteFlags, stdout, stderr io.Writer) error {
	if !(so.maxSeconds > 0) || so.warmup < 1 || so.threads < 0 || so.batch < 0 {
		return usageError("--max-seconds must be above 0, --warmup positive, and --threads and --batch not negative")
	}
	var peer *bench.Report
	if so.peer != "" {
		p, err := bench.ReadReports(splitList(so.peer))
		if err != nil {
			return fmt.Errorf("--peer: %w", err)
		}
		peer = &p
	}
	var rep bench.Report
	failed := 0
	if so.from != "" {
		if so.device != "" || so.threads != 0 || so.batch != 0 || so.warmCache || so.only != "" || so.fragments || so.profile != 0 {
			return usageError("--from reads Tartan's figures from files and measures nothing: --device, --threads, --batch, --warm-cache, --only, --fragments and --profile do not apply")
		}
		r, err := bench.ReadReports(splitList(so.from))
		if err != nil {
			return fmt.Errorf("--from: %w", err)
		}
		rep = r
	} else {
		entries, err := bench.Select(splitList(so.only), so.fragments)
		if err != nil {
			return usageError("--only: %v", err)
		}
		if so.threads > 0 {
			defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(so.threads))
		}
		cache := "warm"
		if !so.warmCache {
			cache = "cold"
			restore, err := emptyCaches()
			if err != nil {
				return err
			}
			defer restore()
		}
		dev, _, err := openDevice(so.device, stderr)
		if err != nil {
			return err
		}
		defer dev.Close()
		info := dev.Info()
		rep = bench.Report{Tool: "tartan", Version: tartanVersion(), Device: info.ID, DeviceName: info.Name,
			Threads: runtime.GOMAXPROCS(0), Precision: precisionOf(dev), Cache: cache,
			MaxSteps: so.steps, MaxSeconds: so.maxSeconds}
		fmt.Fprintf(stderr, "tartan bench --suite on %s (%s), %d threads, %s caches: %d entries, at most %d steps or %g s each after %d warm-up steps\n",
			info.ID, info.Name, rep.Threads, cache, len(entries), so.steps, so.maxSeconds, so.warmup)
		opts := bench.Options{Warmup: so.warmup, MaxSteps: so.steps, MaxSeconds: so.maxSeconds, Config: bench.Config{Batch: so.batch, Seed: 1}}
		for i, e := range entries {
			batch := e.Batch
			if so.batch > 0 {
				batch = so.batch
			}
			end := beginProgress(stderr, "[%d/%d] %s (%s, batch %d)", i+1, len(entries), e.Name, e.Kind(), batch)
			r := bench.Measure(dev, e, opts)
			if r.Error != "" {
				failed++
				end("error: " + r.Error)
			} else {
				kernels := "-"
				if r.Kernels >= 0 {
					kernels = fmt.Sprint(r.Kernels)
				}
				end(fmt.Sprintf("%.2f ms/step over %d steps, compile %.2f s, %s kernels, loss %.4g -> %.4g",
					r.MSPerStep, r.Steps, r.CompileSeconds, kernels, r.FirstLoss, r.LastLoss))
			}
			rep.Entries = append(rep.Entries, r)
			if so.profile > 0 && r.Error == "" {
				fmt.Fprintf(stdout, "%s, one training step:\n", e.Name)
				if err := profileEntry(stdout, dev, e, opts.Config, so.profile); err != nil {
					return fmt.Errorf("%s: %w", e.Name, err)
				}
			}
		}
	}
	bench.WriteTable(stdout, rep)
	if peer != nil {
		fmt.Fprintln(stdout)
		bench.Compare(stdout, rep, *peer)
	}
	if so.json != "" {
		if err := writeJSON(so.json, rep); err != nil {
			return err
		}
	}
	if failed > 0 {
		return fmt.Errorf("bench --suite: %d of %d entries failed (see the table)", failed, len(rep.Entries))
	}
	return nil
}

// splitList splits a comma-separated flag value, dropping empty items.
func splitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// emptyCaches points $XDG_CACHE_HOME, under which Tartan keeps compiled
// programs and OpenCL binaries, at a new empty directory, so that compile
// times are cold; restore removes it and restores the variable. Driver
// caches outside Tartan (NVIDIA's, PoCL's) are governed by their own
// variables, which bench/run_suite.sh sets.
func emptyCaches() (restore func(), err error) {
	dir, err := os.MkdirTemp("", "tartan-bench-cache-")
	if err != nil {
		return nil, fmt.Errorf("bench --suite: an empty cache directory: %w", err)
	}
	// The tuner's decisions are not a cache of compiled code: they stay.
	oldTune, hadTune := os.LookupEnv(tune.EnvCache)
	if p, err := tune.DefaultPath(); err == nil {
		os.Setenv(tune.EnvCache, p)
	}
	old, had := os.LookupEnv("XDG_CACHE_HOME")
	os.Setenv("XDG_CACHE_HOME", dir)
	return func() {
		if hadTune {
			os.Setenv(tune.EnvCache, oldTune)
		} else {
			os.Unsetenv(tune.EnvCache)
		}
		if had {
			os.Setenv("XDG_CACHE_HOME", old)
		} else {
			os.Unsetenv("XDG_CACHE_HOME")
		}
		os.RemoveAll(dir)
	}, nil
}

// tartanVersion is the Go version and, when the binary records it, the
// source revision it was built from.
func tartanVersion() string {
	v := runtime.Version()
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return v
	}
	var rev string
	modified := false
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			modified = s.Value == "true"
		}
	}
	if rev == "" {
		return v
	}
	if len(rev) > 12 {
		rev = rev[:12]
	}
	if modified {
		rev += "+modified"
	}
	return v + " " + rev
}

// precisionOf says how the device computes float32 matrix products.
func precisionOf(dev backend.Device) string {
	if m, ok := dev.(interface{ Matmul() string }); ok {
		return "float32, matmul " + m.Matmul()
	}
	return "float32"
}
