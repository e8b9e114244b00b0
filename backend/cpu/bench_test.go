package cpu

import (
	"fmt"
	"math/rand/v2"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tartanml/tartan/compile"
	"github.com/tartanml/tartan/grad"
	"github.com/tartanml/tartan/op"
	"github.com/tartanml/tartan/tile"
)

// newShowcase compiles and loads the showcase training step at the given
// batch size with Glorot-initialised weights and a random batch.
func newShowcase(tb testing.TB, d *Device, batch int) (*Executable, time.Duration) {
	tb.Helper()
	g := showcaseStep(batch)
	if err := g.Err(); err != nil {
		tb.Fatal(err)
	}
	start := time.Now()
	p, err := compile.Compile(g, d.Target())
	if err != nil {
		tb.Fatal(err)
	}
	x, err := d.Load(p)
	if err != nil {
		tb.Fatal(err)
	}
	elapsed := time.Since(start)
	for i, sp := range showcaseParams {
		if err := x.WriteVariable(sp.name, glorot(sp.shape, uint64(i+1))); err != nil {
			tb.Fatal(err)
		}
	}
	rng := rand.New(rand.NewPCG(1, 2))
	xs := make([]float32, batch*28*28)
	for i := range xs {
		xs[i] = rng.Float32()
	}
	labels := make([]int64, batch)
	for i := range labels {
		labels[i] = int64(rng.IntN(10))
	}
	for name, v := range map[string]any{"x": xs, "labels": labels, "seed": []int64{42}} {
		if err := x.SetInput(name, v); err != nil {
			tb.Fatal(err)
		}
	}
	return x, elapsed
}

// BenchmarkShowcaseStep times one training step of the showcase CNN at batch
// 64 (forward, loss, gradients, Adam update) and reports ms/step and the
// compile time.
func BenchmarkShowcaseStep(b *testing.B) {
	d := New()
	defer d.Close()
	x, compileTime := newShowcase(b, d, 64)
	defer x.Close()
	if err := x.Run(); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	cpu0 := cpuTime()
	for b.Loop() {
		if err := x.Run(); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Microseconds())/1000/float64(b.N), "ms/step")
	b.ReportMetric((cpuTime()-cpu0).Seconds()*1000/float64(b.N), "cpu-ms/step")
	b.ReportMetric(compileTime.Seconds()*1000, "compile-ms")
}

// cpuTime returns the process's user and system time so far: unlike wall
// time, it hardly depends on other processes competing for the cores.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// TestShowcaseProfile prints the time each kernel of the batch-64 training
// step takes, when TARTAN_CPU_PROFILE is set.
func TestShowcaseProfile(t *testing.T) {
	if testing.Short() || getenv("TARTAN_CPU_PROFILE") == "" {
		t.Skip("set TARTAN_CPU_PROFILE=1 to print per-kernel times")
	}
	d := New()
	defer d.Close()
	x, ct := newShowcase(t, d, 64)
	t.Logf("compile+load %v", ct)
	const reps = 20
	times := make([]time.Duration, len(x.kernels))
	cpus := make([]time.Duration, len(x.kernels))
	for range reps {
		for i, k := range x.kernels {
			s, c := time.Now(), cpuTime()
			k.run(x)
			times[i] += time.Since(s)
			cpus[i] += cpuTime() - c
		}
	}
	var total, totalCPU time.Duration
	for i, k := range x.prog.Kernels {
		kind := "loops"
		switch kr := x.kernels[i].(type) {
		case *gemmKernel:
			kind = [...]string{"gemm-tiles", "gemm-splitK"}[kr.mode]
			kind += tile.Shape{kr.nb, kr.nr, kr.nc, kr.nk}.String()
		case *windowKernel:
			kind = [...]string{"window-reduce", "window-first", "window-route"}[kr.form]
		case *loopsKernel:
			if kr.redVec {
				kind = "loops-redvec"
			}
			kind += tile.Shape(kr.s.ext).String()
			if kr.split > 1 {
				kind += " split"
			}
		}
		total += times[i]
		totalCPU += cpus[i]
		t.Logf("%3d %8.3f ms %8.3f cpu-ms  %-40s %s %v", i, float64(times[i].Microseconds())/1000/reps,
			float64(cpus[i].Microseconds())/1000/reps, kind, k.Shape, k.Source)
	}
	t.Logf("total %.3f ms/step, %.3f cpu-ms/step", float64(total.Microseconds())/1000/reps, float64(totalCPU.Microseconds())/1000/reps)
}

// BenchmarkShowcaseKernel times one kernel of the batch-64 training step,
// the one numbered by TARTAN_CPU_KERNEL, for profiling.
func BenchmarkShowcaseKernel(b *testing.B) {
	n := getenv("TARTAN_CPU_KERNEL")
	if n == "" {
		b.Skip("set TARTAN_CPU_KERNEL to a kernel number")
	}
	var idx int
	fmt.Sscan(n, &idx)
	d := New()
	defer d.Close()
	x, _ := newShowcase(b, d, 64)
	defer x.Close()
	if err := x.Run(); err != nil {
		b.Fatal(err)
	}
	// Temporaries share slots: rerun the kernels before this one so that
	// its inputs hold what they hold in a real step (its own runs do not
	// change them).
	for _, k := range x.kernels[:idx] {
		k.run(x)
	}
	k := x.kernels[idx]
	b.ResetTimer()
	cpu0 := cpuTime()
	for b.Loop() {
		k.run(x)
	}
	b.ReportMetric((cpuTime()-cpu0).Seconds()*1000/float64(b.N), "cpu-ms/op")
}

// TestShowcaseMemory reports the peak resident memory of training the
// showcase CNN at batch 64, when TARTAN_CPU_PROFILE is set.
func TestShowcaseMemory(t *testing.T) {
	if testing.Short() || getenv("TARTAN_CPU_PROFILE") == "" {
		t.Skip("set TARTAN_CPU_PROFILE=1 to measure memory")
	}
	d := New(Cache(false))
	defer d.Close()
	x, _ := newShowcase(t, d, 64)
	for range 20 {
		if err := x.Run(); err != nil {
			t.Fatal(err)
		}
	}
	slots := 0
	for _, s := range x.slots {
		slots += len(s)
	}
	status, _ := os.ReadFile("/proc/self/status")
	for _, line := range strings.Split(string(status), "\n") {
		if strings.HasPrefix(line, "VmHWM") || strings.HasPrefix(line, "VmRSS") {
			t.Log(line)
		}
	}
	t.Logf("program buffers: %.1f MiB in %d slots", float64(slots)/(1<<20), len(x.slots))
}

// BenchmarkShowcaseConv times each convolution layer of the showcase CNN at
// batch 64, as compiled programs of their own: forward (convolution, bias
// and ReLU) and backward (the gradients with respect to the layer's input,
// where the model needs it, and to its kernel and bias, from a given
// cotangent). conv1dx is the first layer with its input gradient too, a
// product whose one input channel is read by both operands.
func BenchmarkShowcaseConv(b *testing.B) {
	layers := []struct {
		name     string
		x, k     tile.Shape
		needGrad bool // the gradient with respect to the input is needed
	}{
		{"conv1", tile.Shape{64, 28, 28, 1}, tile.Shape{2, 2, 1, 64}, false},
		{"conv1dx", tile.Shape{64, 28, 28, 1}, tile.Shape{2, 2, 1, 64}, true},
		{"conv2", tile.Shape{64, 14, 14, 64}, tile.Shape{2, 2, 64, 32}, true},
	}
	d := New(Cache(false))
	defer d.Close()
	for _, l := range layers {
		for _, dir := range []string{"forward", "backward"} {
			b.Run(l.name+"/"+dir, func(b *testing.B) {
				g := tile.NewGraph(l.name + "_" + dir)
				x := g.Input("x", tile.Float32, l.x)
				k := g.Input("k", tile.Float32, l.k)
				bias := g.Input("bias", tile.Float32, tile.Shape{l.k[3]})
				y := op.ReLU(g, op.BiasAdd(g, op.Conv2D(g, x, k, op.ConvOptions{Padding: op.Same}), bias))
				if dir == "forward" {
					g.SetOutput("y", y)
				} else {
					dy := g.Input("dy", tile.Float32, y.Shape())
					wrt := []*tile.Tensor{k, bias}
					if l.needGrad {
						wrt = append(wrt, x)
					}
					gs, err := grad.VJP(g, []*tile.Tensor{y}, []*tile.Tensor{dy}, wrt...)
					if err != nil {
						b.Fatal(err)
					}
					for i, gr := range gs {
						g.SetOutput(fmt.Sprintf("d%d", i), gr)
					}
				}
				start := time.Now()
				p, err := compile.Compile(g, d.Target())
				if err != nil {
					b.Fatal(err)
				}
				ex, err := d.Load(p)
				if err != nil {
					b.Fatal(err)
				}
				compileTime := time.Since(start)
				defer ex.Close()
				rng := rand.New(rand.NewPCG(5, 6))
				for _, in := range g.Inputs() {
					v := make([]float32, in.Size())
					for i := range v {
						v[i] = rng.Float32() - 0.5
					}
					if err := ex.SetInput(in.Op().(*tile.InputOp).Name, v); err != nil {
						b.Fatal(err)
					}
				}
				if err := ex.Run(); err != nil {
					b.Fatal(err)
				}
				b.ResetTimer()
				cpu0 := cpuTime()
				for b.Loop() {
					if err := ex.Run(); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(b.Elapsed().Microseconds())/1000/float64(b.N), "ms/op")
				b.ReportMetric((cpuTime()-cpu0).Seconds()*1000/float64(b.N), "cpu-ms/op")
				b.ReportMetric(compileTime.Seconds()*1000, "compile-ms")
			})
		}
	}
}

// BenchmarkConvLayer times the three matrix products of a channels-last 3×3
// convolution with "same" padding at the sizes of a CIFAR ResNet's stages
// (16 channels at 32×32, 32 at 16×16, 64 at 8×8, batch 32): the forward
// product, the input gradient and the weight gradient, with the loss that
// feeds them, and reports the products' rate in GFLOP/s.
func BenchmarkConvLayer(b *testing.B) {
	for _, c := range []struct{ hw, ch int }{{32, 16}, {16, 32}, {8, 64}} {
		b.Run(fmt.Sprintf("c%d_%dx%d", c.ch, c.hw, c.hw), func(b *testing.B) {
			const n = 32
			g := tile.NewGraph("conv")
			x := g.Input("x", tile.Float32, tile.Shape{n, c.hw, c.hw, c.ch})
			w := g.Input("w", tile.Float32, tile.Shape{3, 3, c.ch, c.ch})
			y := op.Conv2D(g, x, w, op.ConvOptions{Padding: op.Same})
			r := g.Input("r", tile.Float32, y.Shape())
			gs, err := grad.Grad(g, op.Sum(g, g.Mul(y, r), nil, false), x, w)
			if err != nil {
				b.Fatal(err)
			}
			g.SetOutput("y", y)
			g.SetOutput("dx", gs[0])
			g.SetOutput("dw", gs[1])
			timeGraph(b, g)
			flops := 3 * 2 * float64(n*c.hw*c.hw) * float64(c.ch) * float64(9*c.ch)
			b.ReportMetric(flops*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
		})
	}
}

// BenchmarkPoolChannelsFirst times a channels-first 3×3 stride-2 max-pool
// with padding (ResNet-18's, at batch 8), which the loops executor reduces
// in chunks of output rows grouped by their clipped window ranges.
func BenchmarkPoolChannelsFirst(b *testing.B) {
	g := tile.NewGraph("pool")
	x := g.Input("x", tile.Float32, tile.Shape{8, 64, 112, 112})
	g.SetOutput("y", tile.ParseContraction(g, "O[n, c, y, x : 8, 64, 56, 56] = >(I[n, c, 2*y + i - 1, 2*x + j - 1]), i < 3, j < 3, 2*y + i - 1 < 112, 2*x + j - 1 < 112",
		map[string]*tile.Tensor{"I": x}, nil))
	timeGraph(b, g)
}

// timeGraph compiles g on a device without a program cache, feeds it random
// inputs and times its runs.
func timeGraph(b *testing.B, g *tile.Graph) {
	b.Helper()
	d := New(Cache(false))
	defer d.Close()
	ex, err := d.Compile(g)
	if err != nil {
		b.Fatal(err)
	}
	defer ex.Close()
	for name, v := range randomFeeds(g, 1) {
		if err := ex.SetInput(name, v); err != nil {
			b.Fatal(err)
		}
	}
	b.ResetTimer()
	for b.Loop() {
		if err := ex.Run(); err != nil {
			b.Fatal(err)
		}
	}
}
