// Command bench measures the OpenCL backend's matrix product: an n×n×n
// float32 product compiled from a tile graph (the compiler marks it "gemm")
// and run on one OpenCL device in each matrix-product precision, with its
// throughput and its error against float64 products of sampled elements. It
// prints one JSON object.
//
//	bench [-n 4096] [-runs 20] [-device opencl:1:0] [-precisions fp32,3xtf32,tf32] [-tiles 0,64,128] [-list] [-cnn 64 -steps 50]
//
// With -cnn it also trains the showcase CNN (a training step of the
// Fashion-MNIST model with Adam) on one random batch and prints the time per
// step and the slowest kernels of one profiled step.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/tartanml/tartan/backend/opencl"
	"github.com/tartanml/tartan/backend/opencl/cl"
	"github.com/tartanml/tartan/compile"
	"github.com/tartanml/tartan/device"
	"github.com/tartanml/tartan/op"
	"github.com/tartanml/tartan/tile"
	"github.com/tartanml/tartan/tune"
)

type result struct {
	Requested   string   `json:"requested"`
	Tile        int      `json:"tile"`
	TensorCores string   `json:"tensor_cores"`
	Precision   string   `json:"precision"`
	Compile     float64  `json:"compile_seconds"`
	Millis      float64  `json:"ms_per_product"`
	TFLOPS      float64  `json:"tflops"`
	MaxRelError float64  `json:"max_rel_error"`
	Launches    []string `json:"launches"`
	Error       string   `json:"error,omitempty"`
}

func main() {
	n := flag.Int("n", 4096, "matrix size")
	runs := flag.Int("runs", 20, "timed products")
	id := flag.String("device", "", "OpenCL device id (default: the first GPU, else the first device)")
	precisions := flag.String("precisions", "fp32,3xtf32,tf32", "matrix-product precisions to measure")
	tiles := flag.String("tiles", "0", "work-group tiles to measure (0: the device's choice, 64, 128)")
	list := flag.Bool("list", false, "print the device listing and setup recommendation first")
	cnn := flag.Int("cnn", 0, "also measure the showcase CNN training step at this batch size (0: no)")
	steps := flag.Int("steps", 50, "timed CNN training steps")
	buildprof := flag.String("buildprof", "", "only time building this OpenCL C file, whole and kernel by kernel")
	options := flag.String("options", "-cl-std=CL1.2", "build options for -buildprof")
	par := flag.Int("par", 0, "with -buildprof: also build the kernels in this many concurrent builds")
	shard := flag.String("shard", "", "with -buildprof: build only shard i/n of the kernels, as one program")
	flag.Parse()
	if *list {
		l := device.List()
		device.FormatTable(os.Stderr, l)
		rec := l.Recommended()
		fmt.Fprintf(os.Stderr, "recommended: %s %s: %s\n", rec.ID, rec.Name, l.Reason(rec))
	}
	cs, err := opencl.List()
	if err != nil {
		fail(err)
	}
	c := cs[0]
	for _, x := range cs {
		if *id == "" && x.Type()&cl.DeviceTypeGPU != 0 || x.ID == *id {
			c = x
			break
		}
	}
	if *buildprof != "" {
		if err := buildProfile(c, *buildprof, *options, *par, *shard); err != nil {
			fail(err)
		}
		return
	}
	out := map[string]any{"device": c.Info(), "n": *n, "runs": *runs}
	r := rand.New(rand.NewPCG(1, 2))
	a := make([]float32, *n**n)
	b := make([]float32, *n**n)
	for i := range a {
		a[i] = float32(r.NormFloat64())
		b[i] = float32(r.NormFloat64())
	}
	var results []result
	for _, p := range strings.Split(*precisions, ",") {
		for _, ts := range strings.Split(*tiles, ",") {
			tile, err := strconv.Atoi(ts)
			if err != nil {
				fail(fmt.Errorf("-tiles: %v", err))
			}
			res := measure(c, p, tile, *n, *runs, a, b)
			fmt.Fprintf(os.Stderr, "%s tile %d: %.2f TFLOP/s (%.3f ms), max relative error %.2e %s\n", res.Precision, tile, res.TFLOPS, res.Millis, res.MaxRelError, res.Error)
			results = append(results, res)
		}
	}
	out["results"] = results
	if *cnn > 0 {
		r := measureCNN(c, *cnn, *steps)
		fmt.Fprintf(os.Stderr, "CNN step, batch %d: %.3f ms/step (kernels %.3f ms, %d launches), loss %.3f -> %.3f %s\n",
			r.Batch, r.MsPerStep, r.KernelMs, r.Launches, r.LossFirst, r.LossLast, r.Error)
		out["cnn"] = r
	}
	enc := json.NewEncoder(os.Stdout)
	enc.SetIndent("", "  ")
	enc.Encode(out)
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "bench:", err)
	os.Exit(1)
}

func measure(c opencl.Candidate, precision string, tileSize, n, runs int, a, b []float32) (res result) {
	res.Requested, res.Tile = precision, tileSize
	d, err := opencl.OpenCandidate(c, opencl.WithMatmul(precision), opencl.WithGEMMTile(tileSize))
	if err != nil {
		res.Error = err.Error()
		return res
	}
	defer d.Close()
	res.Precision = d.Matmul()
	ok, why := d.TensorCores()
	res.TensorCores = fmt.Sprintf("%v: %s", ok, why)
	g := tile.NewGraph("sgemm")
	x := g.Input("a", tile.Float32, tile.Shape{n, n})
	y := g.Input("b", tile.Float32, tile.Shape{n, n})
	g.SetOutput("c", op.MatMul(g, x, y))
	t0 := time.Now()
	p, err := compile.Compile(g, d.Target())
	if err == nil && tileSize == 0 {
		// The tuner's cached decision (searched first with $TARTAN_TUNE).
		p, err = tune.Prepare(p, d)
	}
	if err != nil {
		res.Error = err.Error()
		return res
	}
	e, err := d.Load(p)
	if err != nil {
		res.Error = err.Error()
		return res
	}
	defer e.Close()
	res.Compile = time.Since(t0).Seconds()
	res.Launches = e.Launches()
	res.Precision = d.Matmul() // a build failure may have turned tensor cores off
	if err := e.SetInput("a", a); err != nil {
		res.Error = err.Error()
		return res
	}
	if err := e.SetInput("b", b); err != nil {
		res.Error = err.Error()
		return res
	}
	for range 3 {
		if err := e.Run(); err != nil {
			res.Error = err.Error()
			return res
		}
	}
	if err := e.Finish(); err != nil {
		res.Error = err.Error()
		return res
	}
	t1 := time.Now()
	for range runs {
		if err := e.Run(); err != nil {
			res.Error = err.Error()
			return res
		}
	}
	if err := e.Finish(); err != nil {
		res.Error = err.Error()
		return res
	}
	dt := time.Since(t1).Seconds() / float64(runs)
	res.Millis = dt * 1e3
	res.TFLOPS = 2 * float64(n) * float64(n) * float64(n) / dt / 1e12
	out := make([]float32, n*n)
	if err := e.ReadOutput("c", out); err != nil {
		res.Error = err.Error()
		return res
	}
	r := rand.New(rand.NewPCG(3, 4))
	for range 512 {
		i, j := r.IntN(n), r.IntN(n)
		var s, scale float64
		for k := range n {
			s += float64(a[i*n+k]) * float64(b[k*n+j])
			scale += math.Abs(float64(a[i*n+k]) * float64(b[k*n+j]))
		}
		res.MaxRelError = max(res.MaxRelError, math.Abs(float64(out[i*n+j])-s)/scale)
	}
	return res
}
