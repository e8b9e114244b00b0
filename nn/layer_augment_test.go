package nn

import (
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/tartanml/tartan/backend"
	"github.com/tartanml/tartan/backend/cpu"
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
// them (with RandomCrop too): the same seed gives the same weights after
// training, on the reference and CPU devices, another seed other weights.
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
	train := func(seed int64, dev backend.Device) []float32 {
		mm := must(t)(Sequential("aug", Input(3, 3, 1), append(layers()[:2:2], RandomCrop(2, 3), Flatten(), Dense(1, KernelInitializer(Constant(0.01))))...))
		if err := mm.Compile(SGD(1e-6), MeanSquaredError(), OnDevice(dev), Seed(seed)); err != nil {
			t.Fatal(err)
		}
		if _, err := mm.Fit(samples(t, x, []int{3, 3, 1}, y, []int{1}), BatchSize(8), Epochs(2), Shuffle(false), quiet); err != nil {
			t.Fatal(err)
		}
		return getWeight(t, mm, "dense/kernel")
	}
	a, b, other := train(1, testDevice()), train(1, testDevice()), train(2, testDevice())
	if !slices.Equal(a, b) {
		t.Error("the same seed trained to other weights")
	}
	if slices.Equal(a, other) {
		t.Error("another seed trained to the same weights")
	}
	// The compiled CPU backend draws the same numbers.
	dev := cpu.New()
	defer dev.Close()
	for i, v := range train(1, dev) {
		if !closeTo(float64(v), float64(a[i]), 1e-6) {
			t.Fatalf("CPU kernel element %d = %v, reference %v", i, v, a[i])
		}
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

// TestRandomCrop checks the training windows (the offsets drawn from
// tile.UniformAt, one per step for the whole batch), the inference crop box
// and resizing worked by hand, and the shapes and errors.
func TestRandomCrop(t *testing.T) {
	const n, h, w, c = 3, 5, 7, 2
	x := make([]float32, n*h*w*c)
	for i := range x {
		x[i] = float32(i)
	}
	window := func(h0, w0, th, tw int) []float64 {
		var out []float64
		for s := range n {
			for y := range th {
				for xx := range tw {
					for k := range c {
						out = append(out, float64(x[((s*h+h0+y)*w+w0+xx)*c+k]))
					}
				}
			}
		}
		return out
	}
	const stream = 4
	starts := map[[2]int]bool{}
	for seed := int64(1); seed <= 12; seed++ {
		got := trainingCall(t, RandomCrop(3, 4), stream, []int{h, w, c}, x, seed)
		off := func(p, rest int) int {
			return min(int(math.Floor(float64(float32(tile.UniformAt(uint64(seed), stream, p))*float32(rest+1)))), rest)
		}
		h0, w0 := off(0, h-3), off(1, w-4)
		starts[[2]int{h0, w0}] = true
		if want := window(h0, w0, 3, 4); !slices.Equal(got, want) {
			t.Fatalf("seed %d: the crop is not the window at (%d, %d)", seed, h0, w0)
		}
	}
	if len(starts) < 4 {
		t.Errorf("12 seeds gave only the offsets %v", starts)
	}
	// Smaller than the target in training: the inference path. A 5×7 image
	// and a 5×5 target: the box is 5 by ⌊5·5/5⌋ = 5, starting at column 1.
	if got := trainingCall(t, RandomCrop(5, 5), stream, []int{h, w, c}, x, 1); !slices.Equal(got, window(0, 1, 5, 5)) {
		t.Errorf("training at the image's height: %v", got)
	}
	m := must(t)(Sequential("crop", Input(h, w, c), RandomCrop(5, 5)))
	if err := m.SetDevice(testDevice()); err != nil {
		t.Fatal(err)
	}
	out, err := m.Predict(samples(t, x, []int{h, w, c}, nil, nil), quiet)
	if err != nil {
		t.Fatal(err)
	}
	want := window(0, 1, 5, 5)
	for i := range want {
		if float64(out.Data[i]) != want[i] {
			t.Fatalf("inference crop element %d: %v, want %v", i, out.Data[i], want[i])
		}
	}
	// 4×6 to 2×3: the whole image, halved; half-pixel bilinear takes the
	// mean of every 2×2 block.
	small := []float32{
		0, 1, 2, 3, 4, 5,
		6, 7, 8, 9, 10, 11,
		12, 13, 14, 15, 16, 17,
		18, 19, 20, 21, 22, 23,
	}
	m = must(t)(Sequential("crop", Input(4, 6, 1), RandomCrop(2, 3)))
	if err := m.SetDevice(testDevice()); err != nil {
		t.Fatal(err)
	}
	out, err = m.Predict(samples(t, small, []int{4, 6, 1}, nil, nil), quiet)
	if err != nil {
		t.Fatal(err)
	}
	if want := []float32{3.5, 5.5, 7.5, 15.5, 17.5, 19.5}; !slices.Equal(out.Data, want) || fmtShape(m.outputs[0].shape) != "(None, 2, 3, 1)" {
		t.Errorf("inference resize %v %v, want (None, 2, 3, 1) %v", fmtShape(m.outputs[0].shape), out.Data, want)
	}
	arch, _ := m.Architecture()
	if !strings.Contains(string(arch), `{"class_name":"RandomCrop","config":{"name":"random_crop","trainable":true,"height":2,"width":3}}`) {
		t.Errorf("architecture: %s", arch)
	}
	if _, err := LoadArchitecture(arch); err != nil {
		t.Error(err)
	}
	// Fit differentiates through the random window.
	fm := must(t)(Sequential("fit", Input(h, w, c), RandomCrop(3, 4), Flatten(), Dense(1)))
	if err := fm.Compile(SGD(1e-4), MeanSquaredError(), OnDevice(testDevice()), Seed(3)); err != nil {
		t.Fatal(err)
	}
	before := slices.Clone(getWeight(t, fm, "dense/kernel"))
	if _, err := fm.Fit(samples(t, x, []int{h, w, c}, []float32{1, 2, 3}, []int{1}), BatchSize(3), quiet); err != nil {
		t.Fatal(err)
	}
	if slices.Equal(before, getWeight(t, fm, "dense/kernel")) {
		t.Error("training through RandomCrop left the kernel unchanged")
	}
	if _, err := Sequential("m", Input(4, 4, 1), RandomCrop(0, 2)); err == nil || err.Error() != `nn: Sequential "m": layer 1 of 1 (RandomCrop "random_crop"): height 0 and width 2 must be positive` {
		t.Errorf("error %v", err)
	}
}
