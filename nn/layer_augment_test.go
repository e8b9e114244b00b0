package nn

import (
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/tartanml/tartan/ref"
	"github.com/tartanml/tartan/tile"
)

// trainingCall builds layer l on per-sample shape in, calls it in training
// mode on x (n samples) with the scalar seed, and returns the output values.
func trainingCall(t *testing.T, l Layer, stream uint64, in []int, x []float32, seed int64) []float64 {
	t.Helper()
	if _, err := l.build([]tile.Shape{in}); err != nil {
		t.Fatal(err)
	}
	l.base().stream = stream
	per := tile.Shape(in).Size()
	shape := batchShape(len(x)/per, in)
	g := tile.NewGraph("t")
	xt := g.Input("x", tile.Float32, shape)
	c := &callContext{g: g, training: true, vars: map[*Weight]*tile.Tensor{}, seed: g.Input("seed", tile.Int64, tile.Shape{})}
	y := l.call(c, []*tile.Tensor{xt})
	g.SetOutput("y", y)
	if err := g.Err(); err != nil {
		t.Fatal(err)
	}
	xv, err := tile.ValueFromFloat32(shape, x)
	if err != nil {
		t.Fatal(err)
	}
	sv, err := tile.ValueOf(tile.Int64, tile.Shape{}, []float64{float64(seed)})
	if err != nil {
		t.Fatal(err)
	}
	out, err := ref.Run(g, map[string]*tile.Value{"x": xv, "seed": sv}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return out["y"].Data
}

// mirror returns sample s (h, w, c) flipped left to right and/or upside
// down, worked on the host.
func mirror(s []float32, h, w, c int, horizontal, vertical bool) []float64 {
	out := make([]float64, len(s))
	for y := range h {
		for x := range w {
			sy, sx := y, x
			if vertical {
				sy = h - 1 - y
			}
			if horizontal {
				sx = w - 1 - x
			}
			for k := range c {
				out[(y*w+x)*c+k] = float64(s[(sy*w+sx)*c+k])
			}
		}
	}
	return out
}

// TestRandomFlipTraining checks that in training every sample comes out as
// the flip its two uniform draws choose (tile.UniformAt, the host's copy of
// the device's Philox numbers: horizontal where u[n, 0] < ½, vertical where
// u[n, 1] < ½), that the mode limits the flips, that a seed gives the same
// output every time and another seed another one.
func TestRandomFlipTraining(t *testing.T) {
	const n, h, w, c = 32, 3, 4, 2
	x := make([]float32, n*h*w*c)
	for i := range x {
		x[i] = float32(i)
	}
	const stream = 3
	for _, mode := range []string{"horizontal", "vertical", "horizontal_and_vertical"} {
		t.Run(mode, func(t *testing.T) {
			const seed = 11
			got := trainingCall(t, RandomFlip(mode), stream, []int{h, w, c}, x, seed)
			seen := map[[2]bool]int{}
			for s := range n {
				hf := mode != "vertical" && tile.UniformAt(seed, stream, 2*s) < 0.5
				vf := mode != "horizontal" && tile.UniformAt(seed, stream, 2*s+1) < 0.5
				seen[[2]bool{hf, vf}]++
				want := mirror(x[s*h*w*c:(s+1)*h*w*c], h, w, c, hf, vf)
				if !slices.Equal(got[s*h*w*c:(s+1)*h*w*c], want) {
					t.Fatalf("sample %d (horizontal %v, vertical %v): %v, want %v", s, hf, vf, got[s*h*w*c:(s+1)*h*w*c], want)
				}
			}
			if want := map[string]int{"horizontal": 2, "vertical": 2, "horizontal_and_vertical": 4}[mode]; len(seen) != want {
				t.Errorf("%d kinds of flip among %d samples (%v), want %d", len(seen), n, seen, want)
			}
			again := trainingCall(t, RandomFlip(mode), stream, []int{h, w, c}, x, seed)
			if !slices.Equal(got, again) {
				t.Error("the same seed gave another output")
			}
			if other := trainingCall(t, RandomFlip(mode), stream, []int{h, w, c}, x, seed+1); slices.Equal(got, other) {
				t.Error("another seed gave the same output")
			}
		})
	}
}

// TestRandomContrastTraining checks the contrast factor of every sample
// against 1 − factor + 2·factor·u with u from tile.UniformAt, the
// per-channel means, and the clipping to the value range.
func TestRandomContrastTraining(t *testing.T) {
	const n, h, w, c = 8, 2, 3, 2
	x := make([]float32, n*h*w*c)
	for i := range x {
		x[i] = float32((i*53)%97) + 10
	}
	const stream, seed, factor = 2, 5, 0.4
	got := trainingCall(t, RandomContrast(factor, ValueRange(-1000, 1000)), stream, []int{h, w, c}, x, seed)
	for s := range n {
		f := 1 - factor + 2*factor*tile.UniformAt(seed, stream, s)
		for k := range c {
			mean := 0.0
			for p := range h * w {
				mean += float64(x[(s*h*w+p)*c+k])
			}
			mean /= h * w
			for p := range h * w {
				i := (s*h*w+p)*c + k
				want := (float64(x[i])-mean)*f + mean
				if math.Abs(got[i]-want) > 1e-4*math.Max(1, math.Abs(want)) {
					t.Fatalf("sample %d channel %d position %d: %v, want %v (factor %v)", s, k, p, got[i], want, f)
				}
			}
		}
	}
	clipped := trainingCall(t, RandomContrast(1, ValueRange(40, 60)), stream, []int{h, w, c}, x, seed)
	lo, hi := slices.Min(clipped), slices.Max(clipped)
	if lo != 40 || hi != 60 {
		t.Errorf("clipped output spans [%v, %v], want [40, 60]", lo, hi)
	}
}

// TestAugmentationInference checks that Predict passes images through the
// augmentation layers unchanged, that they save and load, and that Fit runs
// them: the same seed gives the same weights after training, another seed
// other weights.
func TestAugmentationInference(t *testing.T) {
	layers := func() []Layer {
		return []Layer{RandomFlip(""), RandomContrast(0.5, Name("contrast")), Flatten(), Dense(1, KernelInitializer(Constant(0.01)))}
	}
	m := must(t)(Sequential("aug", Input(3, 3, 1), layers()...))
	if got := m.Layers()[0].Name(); got != "random_flip" {
		t.Errorf("layer name %q, want random_flip", got)
	}
	arch, err := m.Architecture()
	if err != nil {
		t.Fatal(err)
	}
	for _, frag := range []string{`{"class_name":"RandomFlip","config":{"name":"random_flip","trainable":true,"mode":"horizontal_and_vertical"}}`,
		`{"class_name":"RandomContrast","config":{"name":"contrast","trainable":true,"factor":0.5,"value_range":[0,255]}}`} {
		if !strings.Contains(string(arch), frag) {
			t.Errorf("architecture lacks %s:\n%s", frag, arch)
		}
	}
	m2, err := LoadArchitecture(arch)
	if err != nil {
		t.Fatal(err)
	}
	if a2, _ := m2.Architecture(); string(a2) != string(arch) {
		t.Errorf("architecture changed on loading:\n%s\n%s", arch, a2)
	}
	n := 16
	x := make([]float32, n*9)
	y := make([]float32, n)
	for i := range x {
		x[i] = float32((i * 29) % 256)
	}
	for i := range y {
		y[i] = float32(i % 3)
	}
	if err := m.SetDevice(testDevice()); err != nil {
		t.Fatal(err)
	}
	// Predict's output is Dense of the unchanged input: compare with a model
	// without the augmentation layers and the same weights.
	plain := must(t)(Sequential("plain", Input(3, 3, 1), Flatten(), Dense(1, KernelInitializer(Constant(0.01)))))
	if err := plain.SetDevice(testDevice()); err != nil {
		t.Fatal(err)
	}
	p1, err := m.Predict(samples(t, x, []int{3, 3, 1}, nil, nil), quiet)
	if err != nil {
		t.Fatal(err)
	}
	p2, err := plain.Predict(samples(t, x, []int{3, 3, 1}, nil, nil), quiet)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(p1.Data, p2.Data) {
		t.Errorf("inference changed the images: %v vs %v", p1.Data, p2.Data)
	}
	train := func(seed int64) []float32 {
		mm := must(t)(Sequential("aug", Input(3, 3, 1), layers()...))
		if err := mm.Compile(SGD(1e-6), MeanSquaredError(), OnDevice(testDevice()), Seed(seed)); err != nil {
			t.Fatal(err)
		}
		if _, err := mm.Fit(samples(t, x, []int{3, 3, 1}, y, []int{1}), BatchSize(8), Epochs(2), Shuffle(false), quiet); err != nil {
			t.Fatal(err)
		}
		return getWeight(t, mm, "dense/kernel")
	}
	a, b, other := train(1), train(1), train(2)
	if !slices.Equal(a, b) {
		t.Error("the same seed trained to other weights")
	}
	if slices.Equal(a, other) {
		t.Error("another seed trained to the same weights")
	}
}

// TestAugmentationErrors checks the exact argument error texts.
func TestAugmentationErrors(t *testing.T) {
	for _, c := range []struct {
		in    []int
		layer Layer
		want  string
	}{
		{[]int{4, 4, 1}, RandomFlip("diagonal"), `layer 1 of 1 (RandomFlip "random_flip"): mode "diagonal" must be "horizontal", "vertical" or "horizontal_and_vertical"`},
		{[]int{4, 4}, RandomFlip("horizontal"), `layer 1 of 1 (RandomFlip "random_flip") on input (None, 4, 4): needs inputs of rank 4 (batch, height, width, channels), got rank 3`},
		{[]int{4, 4, 1}, RandomContrast(1.5), `layer 1 of 1 (RandomContrast "random_contrast"): factor 1.5 must lie in [0, 1]`},
		{[]int{4, 4, 1}, RandomContrast(0.2, ValueRange(1, 0)), `layer 1 of 1 (RandomContrast "random_contrast"): value range [1 0] must be two finite numbers, the lower first`},
		{[]int{4, 4, 1}, RandomFlip("", ValueRange(0, 1)), `layer 1 of 1 (RandomFlip "random_flip"): option ValueRange does not apply (it accepts Name, Trainable)`},
	} {
		_, err := Sequential("m", Input(c.in...), c.layer)
		want := `nn: Sequential "m": ` + c.want
		if err == nil || err.Error() != want {
			t.Errorf("error\n got %v\nwant %s", err, want)
		}
	}
}
