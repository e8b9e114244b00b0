package nn

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/tartanml/tartan/backend"
	"github.com/tartanml/tartan/backend/cpu"
	"github.com/tartanml/tartan/grad"
	"github.com/tartanml/tartan/tile"
)

// TestRandomTranslationByHand checks shifts that ranges of one value make
// certain, on the row 1 2 3 4 (one image of 1×4×1), against outputs worked
// by hand for every fill mode and both interpolations.
func TestRandomTranslationByHand(t *testing.T) {
	row := []float32{1, 2, 3, 4}
	for _, c := range []struct {
		shift  float64 // pixels to the right
		mode   string
		interp string
		want   []float64
	}{
		{1, "reflect", "", []float64{1, 1, 2, 3}},
		{1, "wrap", "", []float64{4, 1, 2, 3}},
		{1, "nearest", "", []float64{1, 1, 2, 3}},
		{1, "constant", "", []float64{9, 1, 2, 3}},
		{2, "reflect", "", []float64{2, 1, 1, 2}},
		{2, "wrap", "", []float64{3, 4, 1, 2}},
		{2, "nearest", "", []float64{1, 1, 1, 2}},
		{2, "constant", "", []float64{9, 9, 1, 2}},
		{-1, "reflect", "", []float64{2, 3, 4, 4}},
		{-3, "reflect", "", []float64{4, 4, 3, 2}},
		{-1, "wrap", "", []float64{2, 3, 4, 1}},
		{-1, "constant", "", []float64{2, 3, 4, 9}},
		{4, "wrap", "", []float64{1, 2, 3, 4}},
		{4, "reflect", "", []float64{4, 3, 2, 1}},
		// Half a pixel, bilinear: the mean of two neighbours.
		{0.5, "reflect", "bilinear", []float64{1, 1.5, 2.5, 3.5}},
		{0.5, "wrap", "bilinear", []float64{2.5, 1.5, 2.5, 3.5}},
		{0.5, "constant", "bilinear", []float64{5, 1.5, 2.5, 3.5}},
		{-0.5, "nearest", "bilinear", []float64{1.5, 2.5, 3.5, 4}},
		// Nearest interpolation reads the pixel at x − 0.75 rounded.
		{0.75, "constant", "nearest", []float64{9, 1, 2, 3}},
		{-0.25, "constant", "nearest", []float64{1, 2, 3, 4}},
	} {
		name := fmt.Sprintf("%v %s %s", c.shift, c.mode, c.interp)
		opts := []LayerOption{WidthRange(c.shift/4, c.shift/4), FillMode(c.mode)}
		if c.mode == "constant" {
			opts = append(opts, FillValue(9))
		}
		if c.interp != "" {
			opts = append(opts, Interpolation(c.interp))
		}
		got := trainingCall(t, RandomTranslation(0, 0, opts...), 5, []int{1, 4, 1}, row, 7)
		for i := range got {
			if math.Abs(got[i]-c.want[i]) > 1e-6 {
				t.Errorf("%s: %v, want %v", name, got, c.want)
				break
			}
		}
	}
}

// extend returns the n values of a, extended by n on either side as the
// fill mode extends an axis: reflect d c b a | a b c d | d c b a, wrap
// a b c d | a b c d | a b c d, nearest a a a a | a b c d | d d d d;
// constant positions are marked −1.
func extend(n int, mode string) []int {
	var out []int
	idx := make([]int, n)
	for i := range idx {
		idx[i] = i
	}
	rev := slices.Clone(idx)
	slices.Reverse(rev)
	for _, part := range [][]int{nil, idx, nil} {
		if part == nil {
			switch mode {
			case "reflect":
				part = rev
			case "wrap":
				part = idx
			case "nearest":
				part = slices.Repeat([]int{-2}, n)
			default:
				part = slices.Repeat([]int{-1}, n)
			}
		}
		out = append(out, part...)
	}
	// nearest: the edge pixel on each side.
	for i := range n {
		if out[i] == -2 {
			out[i] = 0
		}
		if out[2*n+i] == -2 {
			out[2*n+i] = n - 1
		}
	}
	return out
}

// TestRandomTranslationShifts checks two-axis integer shifts (2 down, 3
// left) of a 4×8×2 image against the image indexed through its extension
// (extend) for every fill mode.
func TestRandomTranslationShifts(t *testing.T) {
	const h, w, c = 4, 8, 2
	const dy, dx = 2, -3
	img := make([]float32, h*w*c)
	for i := range img {
		img[i] = float32(i%7) + float32(i)/10
	}
	for _, mode := range []string{"reflect", "wrap", "nearest", "constant"} {
		got := trainingCall(t, RandomTranslation(0.1, 0.1, HeightRange(0.5, 0.5), WidthRange(-0.375, -0.375), FillMode(mode), FillValue(-1)),
			2, []int{h, w, c}, img, 3)
		ey, ex := extend(h, mode), extend(w, mode)
		for y := range h {
			for x := range w {
				sy, sx := ey[h+y-dy], ex[w+x-dx]
				for k := range c {
					want := -1.0
					if sy >= 0 && sx >= 0 {
						want = float64(img[(sy*w+sx)*c+k])
					}
					if g := got[(y*w+x)*c+k]; math.Abs(g-want) > 1e-5 {
						t.Fatalf("%s: pixel (%d, %d, %d) = %v, want %v", mode, y, x, k, g, want)
					}
				}
			}
		}
	}
}

// TestRandomTranslationDraws checks random shifts: sample s moves by
// (−f + 2f·u)·size with u from tile.UniformAt (position 2s for the height,
// 2s + 1 for the width), resampled bilinearly on the host from extend.
func TestRandomTranslationDraws(t *testing.T) {
	const n, h, w = 6, 5, 6
	const seed, stream = 21, 4
	img := make([]float32, n*h*w)
	for i := range img {
		img[i] = float32(math.Sin(float64(i)))
	}
	for _, mode := range []string{"reflect", "wrap", "nearest", "constant"} {
		got := trainingCall(t, RandomTranslation(0.4, 0.3, FillMode(mode), FillValue(0.5)), stream, []int{h, w, 1}, img, seed)
		ey, ex := extend(h, mode), extend(w, mode)
		at := func(s, y, x int) float64 {
			sy, sx := ey[h+y], ex[w+x]
			if sy < 0 || sx < 0 {
				return 0.5
			}
			return float64(img[s*h*w+sy*w+sx])
		}
		for s := range n {
			dy := (-0.4 + 0.8*tile.UniformAt(seed, stream, 2*s)) * h
			dx := (-0.3 + 0.6*tile.UniformAt(seed, stream, 2*s+1)) * w
			for y := range h {
				for x := range w {
					py, px := float64(y)-dy, float64(x)-dx
					y0, x0 := math.Floor(py), math.Floor(px)
					fy, fx := py-y0, px-x0
					iy, ix := int(y0), int(x0)
					want := (1-fy)*(1-fx)*at(s, iy, ix) + (1-fy)*fx*at(s, iy, ix+1) + fy*(1-fx)*at(s, iy+1, ix) + fy*fx*at(s, iy+1, ix+1)
					if g := got[s*h*w+y*w+x]; math.Abs(g-want) > 1e-4 {
						t.Fatalf("%s: sample %d (shift %.3f, %.3f), pixel (%d, %d) = %v, want %v", mode, s, dy, dx, y, x, g, want)
					}
				}
			}
		}
	}
}

// TestRandomTranslationGradient checks the gradient with respect to the
// image of a fractional shift against finite differences, for each fill
// mode.
func TestRandomTranslationGradient(t *testing.T) {
	for _, mode := range []string{"reflect", "wrap", "nearest", "constant"} {
		l := RandomTranslation(0.3, 0.4, FillMode(mode), FillValue(2))
		shape := tile.Shape{2, 3, 4, 1}
		if _, err := l.build([]tile.Shape{shape[1:]}); err != nil {
			t.Fatal(err)
		}
		l.base().stream = 9
		g := tile.NewGraph("translate")
		x := g.Input("x", tile.Float64, shape)
		r := g.Input("r", tile.Float64, shape)
		c := &callContext{g: g, training: true, vars: map[*Weight]*tile.Tensor{}, seed: g.Scalar(5, tile.Int64)}
		y := sumAll(g, g.Mul(l.call(c, []*tile.Tensor{x}), r))
		feeds := map[string]*tile.Value{}
		for k, in := range map[string]*tile.Tensor{"x": x, "r": r} {
			data := make([]float64, in.Size())
			for i := range data {
				data[i] = math.Sin(float64(3*i+len(k))) * 0.8
			}
			v, err := tile.ValueOf(tile.Float64, in.Shape(), data)
			if err != nil {
				t.Fatal(err)
			}
			feeds[k] = v
		}
		maxErr, where, err := grad.Check(g, y, []*tile.Tensor{x}, feeds, nil)
		if err != nil {
			t.Fatal(err)
		}
		if maxErr > 1e-6 {
			t.Errorf("%s: gradient error %g at %s", mode, maxErr, where)
		}
	}
}

// TestRandomTranslationModel checks that the layer is the identity in
// inference, survives the architecture's JSON, and trains the same on the
// CPU backend as on the reference one.
func TestRandomTranslationModel(t *testing.T) {
	build := func() *Model {
		return must(t)(Sequential("tr", Input(4, 5, 1), RandomTranslation(0.25, 0.2, FillMode("wrap"), Interpolation("nearest")),
			Flatten(), Dense(1, KernelInitializer(Constant(0.01)))))
	}
	m := build()
	arch, err := m.Architecture()
	if err != nil {
		t.Fatal(err)
	}
	frag := `{"class_name":"RandomTranslation","config":{"name":"random_translation","trainable":true,"height_factor":[-0.25,0.25],"width_factor":[-0.2,0.2],"fill_mode":"wrap","interpolation":"nearest","fill_value":0}}`
	if !strings.Contains(string(arch), frag) {
		t.Errorf("architecture lacks %s:\n%s", frag, arch)
	}
	m2, err := LoadArchitecture(arch)
	if err != nil {
		t.Fatal(err)
	}
	if a2, _ := m2.Architecture(); string(a2) != string(arch) {
		t.Errorf("architecture changed on loading:\n%s\n%s", arch, a2)
	}
	const n = 8
	x := make([]float32, n*20)
	y := make([]float32, n)
	for i := range x {
		x[i] = float32((i*13)%17) / 17
	}
	for i := range y {
		y[i] = float32(i % 2)
	}
	only := must(t)(Sequential("only", Input(4, 5, 1), RandomTranslation(0.5, 0.5)))
	if err := only.SetDevice(testDevice()); err != nil {
		t.Fatal(err)
	}
	p, err := only.Predict(samples(t, x, []int{4, 5, 1}, nil, nil), quiet)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(p.Data, x) {
		t.Errorf("inference changed the images: %v, want %v", p.Data, x)
	}
	train := func(dev backend.Device) []float32 {
		mm := build()
		if err := mm.Compile(SGD(0.1), MeanSquaredError(), OnDevice(dev), Seed(4)); err != nil {
			t.Fatal(err)
		}
		if _, err := mm.Fit(samples(t, x, []int{4, 5, 1}, y, []int{1}), BatchSize(4), Epochs(2), Shuffle(false), quiet); err != nil {
			t.Fatal(err)
		}
		return getWeight(t, mm, "dense/kernel")
	}
	ref := train(testDevice())
	plain := must(t)(Sequential("plain", Input(4, 5, 1), Flatten(), Dense(1, KernelInitializer(Constant(0.01)))))
	if err := plain.Compile(SGD(0.1), MeanSquaredError(), OnDevice(testDevice())); err != nil {
		t.Fatal(err)
	}
	if _, err := plain.Fit(samples(t, x, []int{4, 5, 1}, y, []int{1}), BatchSize(4), Epochs(2), Shuffle(false), quiet); err != nil {
		t.Fatal(err)
	}
	if slices.Equal(ref, getWeight(t, plain, "dense/kernel")) {
		t.Error("training with the translation gave the weights of training without it")
	}
	dev := cpu.New()
	defer dev.Close()
	for i, v := range train(dev) {
		if !closeTo(float64(v), float64(ref[i]), 1e-5) {
			t.Fatalf("CPU kernel element %d = %v, reference %v", i, v, ref[i])
		}
	}
}

// TestRandomTranslationErrors checks the exact argument error texts.
func TestRandomTranslationErrors(t *testing.T) {
	for _, c := range []struct {
		layer Layer
		want  string
	}{
		{RandomTranslation(1.5, 0), `layer 1 of 1 (RandomTranslation "random_translation"): height range [-1.5 1.5] must be a lower and an upper bound within [-1, 1], the lower first`},
		{RandomTranslation(0, 0.1, WidthRange(0.3, 0.2)), `layer 1 of 1 (RandomTranslation "random_translation"): width range [0.3 0.2] must be a lower and an upper bound within [-1, 1], the lower first`},
		{RandomTranslation(-0.1, 0), `layer 1 of 1 (RandomTranslation "random_translation"): height factor -0.1 must not be negative (HeightRange takes a range)`},
		{RandomTranslation(0.1, 0.1, FillMode("mirror")), `layer 1 of 1 (RandomTranslation "random_translation"): fill mode "mirror" must be "reflect", "wrap", "constant" or "nearest"`},
		{RandomTranslation(0.1, 0.1, Interpolation("bicubic")), `layer 1 of 1 (RandomTranslation "random_translation"): interpolation "bicubic" must be "bilinear" or "nearest"`},
		{RandomTranslation(0.1, 0.1, ValueRange(0, 1)), `layer 1 of 1 (RandomTranslation "random_translation"): option ValueRange does not apply (it accepts Name, Trainable, FillMode, FillValue, HeightRange, WidthRange, Interpolation)`},
		{RandomFlip("", FillMode("wrap")), `layer 1 of 1 (RandomFlip "random_flip"): option FillMode does not apply (it accepts Name, Trainable)`},
	} {
		_, err := Sequential("m", Input(4, 4, 1), c.layer)
		want := `nn: Sequential "m": ` + c.want
		if err == nil || err.Error() != want {
			t.Errorf("error\n got %v\nwant %s", err, want)
		}
	}
}
