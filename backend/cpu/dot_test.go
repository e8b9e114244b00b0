package cpu

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/tartanml/tartan/backend"
	"github.com/tartanml/tartan/grad"
	"github.com/tartanml/tartan/op"
	"github.com/tartanml/tartan/tile"
)

// dotGraphs are training-like graphs whose sums of products go to the dot
// plan: depthwise and ordinary convolutions with their input and kernel
// gradients (channel counts that are not multiples of 8 or 16, strides 2,
// same and valid padding), max-pool gradients and a global average pool.
func dotGraphs() map[string]func(g *tile.Graph) {
	conv := func(n, h, w, c int, dw bool, opt op.ConvOptions) func(g *tile.Graph) {
		return func(g *tile.Graph) {
			x := g.Input("x", tile.Float32, tile.Shape{n, h, w, c})
			var k, y *tile.Tensor
			if dw {
				k = g.Input("k", tile.Float32, tile.Shape{3, 3, c, 1})
				y = op.DepthwiseConv2D(g, x, k, opt)
			} else {
				k = g.Input("k", tile.Float32, tile.Shape{3, 3, c, c + 3})
				y = op.Conv2D(g, x, k, opt)
			}
			cot := g.Input("cot", tile.Float32, y.Shape())
			loss := op.Sum(g, g.Mul(op.ReLU(g, y), cot), nil, false)
			gs, err := grad.Grad(g, loss, x, k)
			if err != nil {
				panic(err)
			}
			g.SetOutput("y", y)
			g.SetOutput("dx", gs[0])
			g.SetOutput("dk", gs[1])
		}
	}
	// A max pool 3×3, stride 2, same, after a ReLU, and its gradient: the
	// gradient's phases are assembled by an elementwise kernel of selects
	// over semi-affine loads, several short rows per chunk (rowstep.go).
	pool := func(n, h, w, c int) func(g *tile.Graph) {
		return func(g *tile.Graph) {
			x := g.Input("x", tile.Float32, tile.Shape{n, h, w, c})
			y := op.MaxPool2D(g, op.ReLU(g, x), op.PoolOptions{Size: []int{3}, Strides: []int{2}, Padding: op.Same})
			cot := g.Input("cot", tile.Float32, y.Shape())
			gs, err := grad.Grad(g, op.Sum(g, g.Mul(y, cot), nil, false), x)
			if err != nil {
				panic(err)
			}
			g.SetOutput("y", y)
			g.SetOutput("dx", gs[0])
		}
	}
	same, valid := op.ConvOptions{Padding: op.Same}, op.ConvOptions{}
	s2 := op.ConvOptions{Padding: op.Same, Strides: []int{2}}
	return map[string]func(g *tile.Graph){
		"dw_c13_same":      conv(3, 7, 6, 13, true, same),
		"dw_c24_same":      conv(2, 9, 8, 24, true, same),
		"dw_c40_valid":     conv(2, 6, 7, 40, true, valid),
		"dw_c19_stride2":   conv(3, 9, 7, 19, true, s2),
		"dw_c32_stride2":   conv(2, 8, 8, 32, true, s2),
		"conv_c9_stride2":  conv(2, 7, 7, 9, false, s2),
		"pool_c5_stride2":  pool(2, 9, 7, 5),
		"pool_c19_stride2": pool(3, 8, 10, 19),
		"avgpool_c21": func(g *tile.Graph) {
			x := g.Input("x", tile.Float32, tile.Shape{5, 6, 7, 21})
			g.SetOutput("y", op.GlobalAvgPool2D(g, x))
		},
	}
}

// TestDotMatchesInterpreter compares the graphs of dotGraphs with
// kir.Interpret, with the dot plan on, and checks that the plan ran for
// the depthwise convolutions (ordinary ones are matrix products).
func TestDotMatchesInterpreter(t *testing.T) {
	d := New(Cache(false))
	defer d.Close()
	for name, build := range dotGraphs() {
		t.Run(name, func(t *testing.T) {
			g := tile.NewGraph(name)
			build(g)
			p := compileFor(t, d, g)
			x, err := d.Load(p)
			if err != nil {
				t.Fatal(err)
			}
			dots := 0
			for _, k := range x.kernels {
				if lk, ok := k.(*loopsKernel); ok && lk.dot != nil {
					dots++
				}
			}
			x.Close()
			if dots == 0 && strings.HasPrefix(name, "dw_") {
				t.Fatalf("no kernel ran as a dot plan")
			}
			checkProgram(t, d, p, 1, 3)
		})
	}
}

// TestDotSameAsChunks checks that the dot plan and the rows carried from
// one to the next (rowstep.go) give the results of chunk programs that
// evaluate every row afresh bit for bit (zeros of either sign being equal), with 1 and 3
// workers, and with blocks of one value of the outermost reduction loop.
func TestDotSameAsChunks(t *testing.T) {
	for name, build := range dotGraphs() {
		t.Run(name, func(t *testing.T) {
			var first map[string][]float32
			for _, run := range []struct {
				off     bool
				workers int
				block   int
			}{{true, 1, 0}, {false, 1, 0}, {false, 3, 0}, {false, 2, 1}} {
				disableDot, disableRowStep = run.off, run.off
				saved := dotBlockBytes
				if run.block > 0 {
					dotBlockBytes = run.block
				}
				got := dotOutputs(t, name, build, run.workers)
				disableDot, disableRowStep, dotBlockBytes = false, false, saved
				if first == nil {
					first = got
					continue
				}
				for o, v := range got {
					for i := range v {
						if v[i] != first[o][i] && !(math.IsNaN(float64(v[i])) && math.IsNaN(float64(first[o][i]))) {
							t.Fatalf("dot plan, %d workers: %s[%d] = %v, chunk programs %v", run.workers, o, i, v[i], first[o][i])
						}
					}
				}
			}
		})
	}
}

// runOutputs compiles build, runs it once on fixed random inputs and
// returns its outputs.
func dotOutputs(t *testing.T, name string, build func(g *tile.Graph), workers int) map[string][]float32 {
	t.Helper()
	d := New(Workers(workers), Cache(false))
	defer d.Close()
	g := tile.NewGraph(name)
	build(g)
	p := compileFor(t, d, g)
	x, err := d.Load(p)
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	rng := rand.New(rand.NewPCG(7, 8))
	for _, in := range p.Inputs {
		b := p.Buffers[in.Buffer]
		v := make([]float64, b.Size())
		for i := range v {
			v[i] = 2*rng.Float64() - 1
		}
		if err := x.SetInput(in.Name, backend.HostSlice(b.DType, v)); err != nil {
			t.Fatal(err)
		}
	}
	if err := x.Run(); err != nil {
		t.Fatal(err)
	}
	out := map[string][]float32{}
	for _, o := range p.Outputs {
		v := make([]float32, p.Buffers[o.Buffer].Size())
		if err := x.ReadOutput(o.Name, v); err != nil {
			t.Fatal(err)
		}
		out[o.Name] = v
	}
	return out
}

// TestDotAcc checks dotAcc and sumAcc (assembly and Go) against sums
// written out, for lane counts around the strip widths and for strides 0,
// 1 and 3.
func TestDotAcc(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 1))
	a := make([]float32, 4000)
	b := make([]float32, 4000)
	for i := range a {
		a[i], b[i] = rng.Float32()*2-1, rng.Float32()*2-1
	}
	for _, n := range []int{1, 5, 8, 13, 16, 23, 24, 40, 47} {
		for _, st := range [][2]int{{1, 1}, {1, 0}, {0, 1}, {3, 1}, {1, 3}} {
			for _, np := range []int{1, 2, 9} {
				offA, offB := make([]int, np), make([]int, np)
				for p := range np {
					offA[p], offB[p] = rng.IntN(3000), rng.IntN(3000)
				}
				acc, sum := make([]float64, n), make([]float64, n)
				want, wantSum := make([]float64, n), make([]float64, n)
				for i := range n {
					acc[i] = float64(i)
					sum[i], want[i], wantSum[i] = acc[i], acc[i], acc[i]
					for p := range np {
						want[i] += float64(a[offA[p]+st[0]*i] * b[offB[p]+st[1]*i])
						wantSum[i] += float64(a[offA[p]+st[0]*i])
					}
				}
				dotAcc(acc, a, b, offA, offB, st[0], st[1])
				sumAcc(sum, a, offA, st[0])
				for i := range n {
					if acc[i] != want[i] || sum[i] != wantSum[i] {
						t.Fatalf("n=%d strides %v points %d: lane %d: dot %v sum %v, want %v %v", n, st, np, i, acc[i], sum[i], want[i], wantSum[i])
					}
				}
			}
		}
	}
}
