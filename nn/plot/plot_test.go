package plot

import (
	"bytes"
	"image"
	"image/color"
	"image/png"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"gonum.org/v1/plot/plotter"

	"github.com/tartanml/tartan/nn"
)

// history returns a History of three epochs with the given metrics.
func history(keys ...string) *nn.History {
	h := &nn.History{Epochs: []int{0, 1, 2}, Metrics: map[string][]float64{}}
	for i, k := range keys {
		h.Metrics[k] = []float64{0.9 - 0.1*float64(i), 0.5, 0.4}
	}
	return h
}

// names lists the legend entries of each panel, by panel title.
func names(panels []panel) map[string][]string {
	out := map[string][]string{}
	for _, p := range panels {
		for _, s := range p.series {
			out[p.title] = append(out[p.title], s.name)
		}
	}
	return out
}

// TestBuildSeries checks which panels and curves are drawn for histories
// with and without validation metrics and a test accuracy.
func TestBuildSeries(t *testing.T) {
	for _, c := range []struct {
		name string
		h    *nn.History
		opts []Option
		want map[string][]string
	}{
		{"training only", history("loss", "accuracy"), nil,
			map[string][]string{"Loss": {"loss"}, "Accuracy": {"accuracy"}}},
		{"with validation and test accuracy", history("loss", "accuracy", "val_loss", "val_accuracy"), []Option{TestAccuracy(0.91234), Title("m")},
			map[string][]string{"m: Loss": {"loss", "val_loss"}, "m: Accuracy": {"accuracy", "val_accuracy", "test accuracy 0.9123"}}},
		{"loss only", history("loss"), nil, map[string][]string{"Loss": {"loss"}}},
		{"loss and a test accuracy", history("loss"), []Option{TestAccuracy(0.5)},
			map[string][]string{"Loss": {"loss"}, "Accuracy": {"test accuracy 0.5000"}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := &settings{}
			for _, o := range c.opts {
				o(s)
			}
			panels, err := build(c.h, s)
			if err != nil {
				t.Fatal(err)
			}
			got := names(panels)
			if len(got) != len(c.want) {
				t.Errorf("panels %v, want %v", got, c.want)
			}
			for title, want := range c.want {
				if !slices.Equal(got[title], want) {
					t.Errorf("panel %q has %q, want %q", title, got[title], want)
				}
			}
		})
	}

	// Points: epochs numbered from 1, NaN values left out, the test line
	// level over the epochs.
	h := history("loss", "accuracy")
	h.Metrics["loss"][1] = math.NaN()
	panels, err := build(h, &settings{testAcc: 0.75, hasTestAcc: true})
	if err != nil {
		t.Fatal(err)
	}
	loss := panels[0].series[0].points
	if len(loss) != 2 || loss[0].X != 1 || loss[0].Y != 0.9 || loss[1].X != 3 || loss[1].Y != 0.4 {
		t.Errorf("loss points %v, want (1, 0.9) and (3, 0.4)", loss)
	}
	test := panels[1].series[1]
	if test.style != dotted || len(test.points) != 2 || test.points[0] != (plotter.XY{X: 1, Y: 0.75}) || test.points[1] != (plotter.XY{X: 3, Y: 0.75}) {
		t.Errorf("test accuracy series %+v, want a dotted line from (1, 0.75) to (3, 0.75)", test)
	}
}

// TestBuildErrors checks the histories and options that cannot be drawn.
func TestBuildErrors(t *testing.T) {
	short := history("loss")
	short.Metrics["loss"] = short.Metrics["loss"][:2]
	allNaN := history("loss")
	allNaN.Metrics["loss"] = []float64{math.NaN(), math.Inf(1), math.NaN()}
	for _, c := range []struct {
		name string
		h    *nn.History
		opts []Option
		want string
	}{
		{"nil", nil, nil, "no history"},
		{"no epochs", &nn.History{}, nil, "no epochs to draw"},
		{"NaN test accuracy", history("loss"), []Option{TestAccuracy(math.NaN())}, "test accuracy NaN is not a finite number"},
		{"values and epochs disagree", short, nil, "2 values of loss for 3 epochs"},
		{"nothing finite", allNaN, nil, "no finite loss or accuracy"},
		{"too small", history("loss"), []Option{Size(99, 500)}, "image size 99×500 pixels"},
		{"too large", history("loss"), []Option{Size(500, 10001)}, "from 100 to 10000"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := PNG(c.h, c.opts...)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("got %v, want an error with %q", err, c.want)
			}
		})
	}
}

// count returns how many pixels of img have exactly colour c.
func count(img image.Image, c color.RGBA) int {
	n := 0
	b := img.Bounds()
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			r, g, bl, a := img.At(x, y).RGBA()
			if uint8(r>>8) == c.R && uint8(g>>8) == c.G && uint8(bl>>8) == c.B && uint8(a>>8) == c.A {
				n++
			}
		}
	}
	return n
}

// TestHistoryWritesPNG writes the curves to a file and checks that it is
// a PNG of the size asked for, and that the validation curves and the
// test accuracy are drawn in their colours exactly when they exist.
func TestHistoryWritesPNG(t *testing.T) {
	dir := t.TempDir()
	full := filepath.Join(dir, "full.png")
	if err := History(full, history("loss", "accuracy", "val_loss", "val_accuracy"), TestAccuracy(0.6), Size(640, 800)); err != nil {
		t.Fatal(err)
	}
	plain := filepath.Join(dir, "plain.png")
	if err := History(plain, history("loss", "accuracy")); err != nil {
		t.Fatal(err)
	}
	decode := func(path string) image.Image {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		img, err := png.Decode(bytes.NewReader(b))
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		return img
	}
	a, b := decode(full), decode(plain)
	if got := a.Bounds().Size(); got != image.Pt(640, 800) {
		t.Errorf("%s is %v pixels, want 640×800", full, got)
	}
	if got := b.Bounds().Size(); got != image.Pt(DefaultWidth, DefaultHeight) {
		t.Errorf("%s is %v pixels, want the default %d×%d", plain, got, DefaultWidth, DefaultHeight)
	}
	for _, c := range []struct {
		what   string
		colour color.RGBA
	}{{"training", trainColor}, {"validation", valColor}, {"test accuracy", testColor}} {
		if n := count(a, c.colour); n < 20 {
			t.Errorf("%s: %d pixels of the %s colour, want a curve of them", full, n, c.what)
		}
	}
	if n := count(b, trainColor); n < 20 {
		t.Errorf("%s: %d pixels of the training colour", plain, n)
	}
	for _, c := range []color.RGBA{valColor, testColor} {
		if n := count(b, c); n != 0 {
			t.Errorf("%s has %d pixels of colour %v, though it has no validation curves or test accuracy", plain, n, c)
		}
	}
	// No temporary file stays behind.
	entries, _ := os.ReadDir(dir)
	if len(entries) != 2 {
		t.Errorf("the directory holds %d files, want the 2 plots", len(entries))
	}
	if err := History(filepath.Join(dir, "missing", "x.png"), history("loss")); err == nil || !strings.Contains(err.Error(), "missing") {
		t.Errorf("a missing directory: %v", err)
	}
}
