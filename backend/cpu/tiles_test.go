package cpu

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/tartanml/tartan/backend/reference"
	"github.com/tartanml/tartan/op"
	"github.com/tartanml/tartan/tile"
)

// cfConv is a channels-first convolution of x (n, c, h, w) with weights
// (m, c, k, k), stride and padding on both axes, plus a per-channel bias and
// a ReLU: the layout and epilogue ONNX image models have.
func cfConv(n, c, h, w, m, k, stride, pad int) *tile.Graph {
	g := tile.NewGraph("cfconv")
	x := g.Input("x", tile.Float32, tile.Shape{n, c, h, w})
	wt := g.Input("w", tile.Float32, tile.Shape{m, c, k, k})
	b := g.Input("b", tile.Float32, tile.Shape{1, m, 1, 1})
	oh, ow := (h+2*pad-k)/stride+1, (w+2*pad-k)/stride+1
	ni, mi, ci := tile.Ix("n"), tile.Ix("m"), tile.Ix("c")
	yi, xi, ky, kx := tile.Ix("y"), tile.Ix("x"), tile.Ix("ky"), tile.Ix("kx")
	y := g.Contract(tile.Sum, tile.CombMul, tile.Shape{n, m, oh, ow}, []tile.Affine{ni, mi, yi, xi},
		[]tile.Operand{
			{Tensor: x, Index: []tile.Affine{ni, ci, yi.Times(stride).Plus(ky).AddConst(-pad), xi.Times(stride).Plus(kx).AddConst(-pad)}},
			{Tensor: wt, Index: []tile.Affine{mi, ci, ky, kx}},
		})
	g.SetOutput("y", op.ReLU(g, g.Add(y, b)))
	return g
}

func randomFeeds(g *tile.Graph, seed uint64) map[string][]float32 {
	rng := rand.New(rand.NewPCG(seed, 7))
	feeds := map[string][]float32{}
	for _, in := range g.Inputs() {
		v := make([]float32, in.Size())
		for i := range v {
			v[i] = float32(rng.NormFloat64())
		}
		feeds[in.Op().(*tile.InputOp).Name] = v
	}
	return feeds
}

// TestChannelsFirstConv checks channels-first convolutions, whose products
// have the output channels as rows and the pixels as columns and pack their
// columns K-major with bounds along the runs (packTaps), against the
// reference device: sizes that are not multiples of any block, one output
// channel, one input channel with a 1×1 kernel (K = 1), strides and
// borders, batches, on one and on several workers.
func TestChannelsFirstConv(t *testing.T) {
	for _, c := range []struct{ n, c, h, w, m, k, stride, pad int }{
		{1, 16, 23, 19, 37, 3, 1, 1},
		{1, 8, 30, 30, 1, 3, 1, 1},
		{1, 1, 40, 33, 9, 1, 1, 0},
		{2, 1, 17, 21, 5, 1, 2, 0},
		{1, 12, 29, 31, 20, 3, 2, 1},
		{3, 5, 13, 11, 70, 5, 1, 2},
		{1, 3, 45, 45, 16, 7, 2, 3},
		{2, 40, 7, 7, 130, 3, 1, 1},
		{2, 32, 9, 9, 200, 3, 1, 1}, // tiles in several rows: packed in a phase before
	} {
		g := cfConv(c.n, c.c, c.h, c.w, c.m, c.k, c.stride, c.pad)
		feeds := randomFeeds(g, uint64(c.h*c.m))
		want := runGraph(t, reference.New(), g, feeds)["y"]
		for _, workers := range []int{1, 3} {
			t.Run(fmt.Sprintf("%+v/w%d", c, workers), func(t *testing.T) {
				got := runGraph(t, New(Cache(false), Workers(workers)), g, feeds)["y"]
				scale := 0.0
				for _, x := range want {
					scale = math.Max(scale, math.Abs(float64(x)))
				}
				for i := range want {
					if d := math.Abs(float64(got[i] - want[i])); d > 1e-4*scale+1e-5 {
						t.Fatalf("y[%d] = %g, reference %g", i, got[i], want[i])
					}
				}
			})
		}
	}
}

// TestChannelsFirstConvTiles checks that a channels-first convolution with
// few output channels (the rows) is cut into at least as many tiles as
// there are workers, and that its results are the same, bit for bit, on one
// worker and on several, whatever the tiles.
func TestChannelsFirstConvTiles(t *testing.T) {
	for _, c := range []struct{ n, c, h, w, m, k, stride, pad int }{
		{1, 32, 56, 56, 64, 3, 1, 1}, // 64 rows, one kernel-sized row block
		{1, 64, 14, 14, 300, 3, 1, 1},
		{2, 3, 112, 112, 24, 7, 2, 3},
	} {
		g := cfConv(c.n, c.c, c.h, c.w, c.m, c.k, c.stride, c.pad)
		feeds := randomFeeds(g, 3)
		var first []float32
		for _, workers := range []int{1, 4, 7} {
			d := New(Cache(false), Workers(workers))
			x, err := d.Compile(g)
			if err != nil {
				t.Fatal(err)
			}
			var gk *gemmKernel
			for _, k := range x.(*Executable).kernels {
				if kk, ok := k.(*gemmKernel); ok && kk.mode == gemmTiles {
					gk = kk
				}
			}
			if gk == nil {
				t.Fatalf("%+v: no tiled matrix product", c)
			}
			got := runGraph(t, d, g, feeds)["y"]
			gk.tile(workers)
			if tiles := gk.nbi * gk.nbj; tiles < workers {
				t.Errorf("%+v on %d workers: %d×%d product cut into %d tiles", c, workers, gk.nr, gk.nc, tiles)
			}
			if first == nil {
				first = got
			}
			for i := range first {
				if math.Float32bits(got[i]) != math.Float32bits(first[i]) {
					t.Fatalf("%+v: y[%d] = %g on %d workers, %g on 1", c, i, got[i], workers, first[i])
				}
			}
			x.Close()
			d.Close()
		}
	}
}

// TestFoldedBatch checks products whose batch loops join their columns
// (foldBatch): channels-first convolutions of a few pixels per image, their
// tiles of C computed in scratch and copied into place across image
// boundaries, against the reference device, bit for bit alike on one
// worker and on several; and that a batched product whose rows read the
// batch (attention's) is not folded.
func TestFoldedBatch(t *testing.T) {
	type conv struct{ n, c, h, w, m, k, stride, pad int }
	graphs := map[string]*tile.Graph{}
	for _, c := range []conv{
		{4, 24, 7, 7, 40, 3, 1, 1},
		{3, 16, 5, 9, 70, 3, 2, 1},
		{5, 64, 7, 7, 130, 1, 1, 0}, // a 1×1 convolution: plain columns per image
		{17, 8, 3, 3, 33, 3, 1, 1},  // column blocks over many images
	} {
		graphs[fmt.Sprintf("%+v", c)] = cfConv(c.n, c.c, c.h, c.w, c.m, c.k, c.stride, c.pad)
	}
	bmm := tile.NewGraph("bmm")
	a := bmm.Input("a", tile.Float32, tile.Shape{6, 40, 24})
	b := bmm.Input("b", tile.Float32, tile.Shape{6, 24, 20})
	bi, ii, ji, ki := tile.Ix("b"), tile.Ix("i"), tile.Ix("j"), tile.Ix("k")
	bmm.SetOutput("y", bmm.Contract(tile.Sum, tile.CombMul, tile.Shape{6, 40, 20}, []tile.Affine{bi, ii, ji},
		[]tile.Operand{{Tensor: a, Index: []tile.Affine{bi, ii, ki}}, {Tensor: b, Index: []tile.Affine{bi, ki, ji}}}))
	graphs["bmm"] = bmm
	for name, g := range graphs {
		feeds := randomFeeds(g, 5)
		want := runGraph(t, reference.New(), g, feeds)["y"]
		scale := 0.0
		for _, x := range want {
			scale = math.Max(scale, math.Abs(float64(x)))
		}
		var first []float32
		for _, workers := range []int{1, 3} {
			d := New(Cache(false), Workers(workers))
			x, err := d.Compile(g)
			if err != nil {
				t.Fatal(err)
			}
			folded := 0
			for _, k := range x.(*Executable).kernels {
				if kk, ok := k.(*gemmKernel); ok && kk.fold {
					folded++
				}
			}
			if wantFold := name != "bmm"; (folded == 1) != wantFold {
				t.Errorf("%s: %d folded products", name, folded)
			}
			got := runGraph(t, d, g, feeds)["y"]
			for i := range want {
				if d := math.Abs(float64(got[i] - want[i])); d > 1e-4*scale+1e-5 {
					t.Fatalf("%s on %d workers: y[%d] = %g, reference %g", name, workers, i, got[i], want[i])
				}
			}
			if first == nil {
				first = got
			}
			for i := range first {
				if math.Float32bits(got[i]) != math.Float32bits(first[i]) {
					t.Fatalf("%s: y[%d] = %g on %d workers, %g on 1", name, i, got[i], workers, first[i])
				}
			}
			x.Close()
			d.Close()
		}
	}
}
