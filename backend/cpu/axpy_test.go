package cpu

import (
	"fmt"
	"math"
	"testing"

	"github.com/tartanml/tartan/backend/reference"
	"github.com/tartanml/tartan/op"
	"github.com/tartanml/tartan/tile"
)

// cfDepthwise builds a channels-first depthwise convolution of x (n, c, h,
// w) by a k×k kernel per channel, with a bias and a ReLU, as the ONNX
// importer writes a Conv of group = c.
func cfDepthwise(n, c, h, w, k, stride, pad int) *tile.Graph {
	g := tile.NewGraph("cfdepthwise")
	x := g.Input("x", tile.Float32, tile.Shape{n, c, h, w})
	wt := g.Input("w", tile.Float32, tile.Shape{c, 1, k, k})
	b := g.Input("b", tile.Float32, tile.Shape{1, c, 1, 1})
	oh, ow := (h+2*pad-k)/stride+1, (w+2*pad-k)/stride+1
	ni, gi, ci := tile.Ix("n"), tile.Ix("g"), tile.Ix("c")
	yi, xi, ky, kx := tile.Ix("y"), tile.Ix("x"), tile.Ix("ky"), tile.Ix("kx")
	y := g.Contract(tile.Sum, tile.CombMul, tile.Shape{n, c, 1, oh, ow}, []tile.Affine{ni, gi, ci, yi, xi},
		[]tile.Operand{
			{Tensor: x, Index: []tile.Affine{ni, gi.Plus(ci), yi.Times(stride).Plus(ky).AddConst(-pad), xi.Times(stride).Plus(kx).AddConst(-pad)}},
			{Tensor: wt, Index: []tile.Affine{gi.Plus(ci), tile.Ix("z"), ky, kx}},
		})
	y = g.Reshape(y, tile.Shape{n, c, oh, ow})
	g.SetOutput("y", op.ReLU(g, g.Add(y, b)))
	return g
}

// TestChannelsFirstDepthwise checks channels-first depthwise convolutions,
// which the matrix-vector executor runs in axpy form, against the
// reference device: strides 1, 2 and 3, borders, rows shorter than a
// vector, longer than a block of axpyBlock and of odd lengths, batches,
// on one and on several workers, with the same bits on every number of
// workers.
func TestChannelsFirstDepthwise(t *testing.T) {
	for _, c := range []struct{ n, c, h, w, k, stride, pad int }{
		{1, 5, 23, 19, 3, 1, 1},
		{2, 3, 30, 29, 3, 2, 1},
		{1, 4, 17, 40, 5, 3, 2},
		{1, 2, 9, 300, 3, 1, 1},
		{1, 3, 12, 600, 3, 2, 1},
		{3, 7, 11, 9, 3, 1, 0},
		{1, 9, 7, 7, 3, 1, 1},
		{1, 4, 5, 3, 3, 1, 1},
		{1, 3, 10, 12, 7, 1, 3},
	} {
		g := cfDepthwise(c.n, c.c, c.h, c.w, c.k, c.stride, c.pad)
		feeds := randomFeeds(g, uint64(c.h*c.w))
		want := runGraph(t, reference.New(), g, feeds)["y"]
		var first []float32
		for _, workers := range []int{1, 3} {
			t.Run(fmt.Sprintf("%+v/w%d", c, workers), func(t *testing.T) {
				d := New(Cache(false), Workers(workers))
				defer d.Close()
				x, err := d.Compile(g)
				if err != nil {
					t.Fatal(err)
				}
				axpys := 0
				for _, k := range x.(*Executable).kernels {
					if _, ok := k.(*gemvKernel); ok {
						axpys++
					}
				}
				x.Close()
				if axpys != 1 {
					t.Errorf("%d kernels in axpy form, want 1", axpys)
				}
				got := runGraph(t, d, g, feeds)["y"]
				for i := range want {
					if d := math.Abs(float64(got[i] - want[i])); d > 1e-5*(1+math.Abs(float64(want[i]))) {
						t.Fatalf("y[%d] = %g, reference %g", i, got[i], want[i])
					}
				}
				if first == nil {
					first = got
				}
				for i := range first {
					if math.Float32bits(got[i]) != math.Float32bits(first[i]) {
						t.Fatalf("y[%d] = %g on %d workers, %g on 1", i, got[i], workers, first[i])
					}
				}
			})
		}
	}
}

// TestChannelsFirstDepthwiseEdgeNaN checks that the runs over several rows
// of a padded stride-1 depthwise convolution leave the edge columns alone:
// NaNs in the input's first and last columns reach exactly the outputs
// whose windows hold them, as on the reference device.
func TestChannelsFirstDepthwiseEdgeNaN(t *testing.T) {
	const n, c, h, w = 1, 3, 9, 6
	g := cfDepthwise(n, c, h, w, 3, 1, 1)
	feeds := randomFeeds(g, 5)
	// Channel 0 has a NaN in its last column, channel 1 in its first: rows
	// run from one row's last column into the next row's first.
	feeds["x"][4*w+w-1] = float32(math.NaN())
	feeds["x"][h*w+4*w] = float32(math.NaN())
	want := runGraph(t, reference.New(), g, feeds)["y"]
	d := New(Cache(false))
	defer d.Close()
	got := runGraph(t, d, g, feeds)["y"]
	nans := 0
	for i := range want {
		if math.IsNaN(float64(want[i])) {
			nans++
		}
		if gn, wn := math.IsNaN(float64(got[i])), math.IsNaN(float64(want[i])); gn != wn ||
			!wn && math.Abs(float64(got[i]-want[i])) > 1e-5*(1+math.Abs(float64(want[i]))) {
			t.Fatalf("y[%d] = %g, reference %g", i, got[i], want[i])
		}
	}
	if nans == 0 || nans == len(want) {
		t.Fatalf("%d of %d outputs NaN: the case tests nothing", nans, len(want))
	}
}

// TestGatherStride2 checks gatherLong's stride-2 loop for every length up
// to 40 at the end of its source (no element read past the last) and
// offsets.
func TestGatherStride2(t *testing.T) {
	for n := 1; n <= 40; n++ {
		for _, off := range []int{0, 3} {
			src := make([]float32, off+2*n-1)
			for i := range src {
				src[i] = float32(i) + 0.5
			}
			d := make([]float32, n+1)
			d[n] = -1
			gatherLong(d[:n], src, off, 2)
			for i := range n + 1 {
				if want := float32(off+2*i) + 0.5; i == n && d[i] != -1 || i < n && d[i] != want {
					t.Fatalf("n %d, offset %d: d[%d] = %v", n, off, i, d[i])
				}
			}
		}
	}
}

// TestAxpyStrides checks the vector axpy loops (AVX-512 and AVX2 where
// they run) against the scalar ones for every length up to 40 and the
// strides they take, at the end of the source slice (a stride-2 vector
// reads one element past its last).
func TestAxpyStrides(t *testing.T) {
	defer func(v bool) { useAVX512 = v }(useAVX512)
	for i := range 2 {
		useAVX512 = useAVX512 && i == 0
		testAxpyStrides(t)
	}
}

func testAxpyStrides(t *testing.T) {
	for _, st := range []int{1, 2, 3} {
		for n := 1; n <= 40; n++ {
			a := make([]float32, (n-1)*st+1)
			for i := range a {
				a[i] = float32(i%13) - 6.5
			}
			d, want := make([]float32, n), make([]float32, n)
			for i := range d {
				d[i] = float32(i) * 0.25
				want[i] = d[i] + float32(1.7*a[i*st])
			}
			axpy(d, 1.7, a, 0, st)
			for i := range d {
				if d[i] != want[i] {
					t.Fatalf("stride %d, n %d: d[%d] = %v, want %v", st, n, i, d[i], want[i])
				}
			}
		}
	}
}

// BenchmarkChannelsFirstDepthwise times depthwise convolutions of
// MobileNetV2's sizes on one worker.
func BenchmarkChannelsFirstDepthwise(b *testing.B) {
	for _, c := range []struct{ n, c, h, w, k, stride, pad int }{
		{1, 96, 112, 112, 3, 2, 1},
		{1, 576, 14, 14, 3, 1, 1},
		{1, 960, 7, 7, 3, 1, 1},
		{1, 144, 56, 56, 3, 1, 1},
	} {
		b.Run(fmt.Sprint(c), func(b *testing.B) {
			g := cfDepthwise(c.n, c.c, c.h, c.w, c.k, c.stride, c.pad)
			feeds := randomFeeds(g, 5)
			d := New(Cache(false), Workers(1))
			x, _ := d.Compile(g)
			for name, v := range feeds {
				x.SetInput(name, v)
			}
			for b.Loop() {
				x.Run()
			}
		})
	}
}

// TestMaxMinLanes checks the vector maximum and minimum on every pair of
// special values (signed zeros, infinities, NaN) against Go's built-ins.
func TestMaxMinLanes(t *testing.T) {
	var a, b []float32
	for _, x := range specialValues {
		for _, y := range specialValues {
			a, b = append(a, x), append(b, y)
		}
	}
	for _, fn := range []tile.Fn{tile.Maximum, tile.Minimum} {
		d := make([]float32, len(a))
		k := simdBinaryF(fn, d, a, b)
		binaryF(fn, d[k:], a[k:], b[k:])
		for i := range d {
			w := max(a[i], b[i])
			if fn == tile.Minimum {
				w = min(a[i], b[i])
			}
			if !sameFloat32(d[i], w) {
				t.Errorf("%v(%v, %v) = %v, want %v", fn, a[i], b[i], d[i], w)
			}
		}
	}
}
