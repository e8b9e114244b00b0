package main

import (
	"bytes"
	"fmt"
	"image"
	"image/color"
	_ "image/gif" // registers GIF with image.Decode
	_ "image/jpeg"
	_ "image/png"
	"io"
	"math"
	"os"
	"sort"

	"golang.org/x/image/draw"

	"github.com/tartanml/tartan/internal/fileinfo"
	"github.com/tartanml/tartan/nn"
)

// predictReport is what predict's --json writes.
type predictReport struct {
	Model       string       `json:"model"`
	Device      string       `json:"device"`
	Predictions []prediction `json:"predictions"`
}

// prediction is the answer for one image.
type prediction struct {
	File  string `json:"file"`
	Class int    `json:"class"`
	Name  string `json:"name,omitempty"`
	// Inverted says whether the image was inverted (dark on light made
	// light on dark); LightBorder is the fraction of its border that is
	// light.
	Inverted    bool        `json:"inverted"`
	LightBorder number      `json:"light_border"`
	Top         []classProb `json:"top"`
}

// classProb is one class and its probability.
type classProb struct {
	Class       int    `json:"class"`
	Name        string `json:"name,omitempty"`
	Probability number `json:"probability"`
}

const predictAbout = `Loads MODEL, a model saved by tartan fit --save, and classifies each IMAGE
(PNG, JPEG or GIF). An image is made grey, inverted when its border is mostly
light (Fashion-MNIST shows light garments on black, a photo is usually a dark
object on a light background), resized to fit the model's input keeping its
proportions (the rest filled with the border's shade) and scaled to [0, 1]
like the training data. Prints per image the file, the class and the K most
probable classes with their probabilities.`

// Bounds on the images predict reads.
const (
	maxImageBytes  = 256 << 20
	maxImagePixels = 100_000_000
)

// lightLevel is the grey level (0 to 255) from which a pixel is light.
const lightLevel = 128

// predictCommand runs tartan predict.
func predictCommand(args []string, stdout, stderr io.Writer) error {
	var dev, jsonPath, invert string
	var top int
	f := newVerbFlags("predict", "predict MODEL IMAGE... [flags]", predictAbout, exitHelp)
	f.deviceFlag(&dev)
	f.IntVar(&top, "top", 3, "print the `K` most probable classes of each image")
	f.StringVar(&invert, "invert", "auto", "`MODE` auto inverts an image (dark to light, light to dark) when its\nborder is mostly light; yes inverts every image, no none")
	f.jsonFlag(&jsonPath)
	rest, err := f.parse(args, stdout)
	if err != nil {
		return err
	}
	switch {
	case len(rest) == 0:
		return usageError("predict needs MODEL, the file of a model saved by tartan fit --save, and one IMAGE or more")
	case len(rest) == 1:
		return usageError("predict needs one IMAGE or more after MODEL %s", rest[0])
	case top < 1:
		return usageError("--top %d must be at least 1", top)
	case invert != "auto" && invert != "yes" && invert != "no":
		return usageError("--invert %q is not one of auto, yes, no", invert)
	}
	path, files := rest[0], rest[1:]
	if _, err := checkOutputs(outputFlag{"json", jsonPath}); err != nil {
		return err
	}
	m, err := loadModelFile("model", path)
	if err != nil {
		return err
	}
	h, w, err := imageInput(m, path)
	if err != nil {
		return err
	}
	names := m.Labels()
	classes := m.OutputShape()[0]

	x := make([]float32, 0, len(files)*h*w)
	preds := make([]prediction, len(files))
	for i, file := range files {
		g, err := readGray(file)
		if err != nil {
			return err
		}
		light := lightBorder(g)
		inv := invert == "yes" || invert == "auto" && light > 0.5
		if inv {
			invertGray(g)
		}
		x = append(x, pixels(fitGray(g, w, h))...)
		preds[i] = prediction{File: file, Inverted: inv, LightBorder: number(light)}
	}

	d, _, err := openDevice(dev, stderr)
	if err != nil {
		return err
	}
	defer d.Close()
	if err := m.SetDevice(d); err != nil {
		return err
	}
	in, err := nn.NewArray(x, append([]int{len(files)}, m.InputShape()...)...)
	if err != nil {
		return err
	}
	samples, err := nn.FromArrays(in, nil)
	if err != nil {
		return err
	}
	out, err := m.Predict(samples, nn.BatchSize(min(len(files), 64)), nn.Verbose(0))
	if err != nil {
		return err
	}
	for i := range preds {
		p := probabilities(out.Data[i*classes : (i+1)*classes])
		order := make([]int, classes)
		for c := range order {
			order[c] = c
		}
		sort.SliceStable(order, func(a, b int) bool { return p[order[a]] > p[order[b]] })
		for _, c := range order[:min(top, classes)] {
			preds[i].Top = append(preds[i].Top, classProb{Class: c, Name: className(names, c), Probability: number(p[c])})
		}
		preds[i].Class, preds[i].Name = order[0], className(names, order[0])
		printPrediction(stdout, preds[i])
	}
	if jsonPath != "" {
		return writeJSON(jsonPath, predictReport{Model: path, Device: d.Info().ID, Predictions: preds})
	}
	return nil
}

// imageInput returns the height and width of the grey images model m
// takes: its input is [H, W, 1] or [H, W], its output one value per class.
func imageInput(m *nn.Model, path string) (h, w int, err error) {
	in := m.InputShape()
	if !(len(in) == 3 && in[2] == 1 || len(in) == 2) {
		return 0, 0, fmt.Errorf("model %s takes inputs of shape %v; predict classifies grey images, for models whose input is [H W 1] or [H W]", path, in)
	}
	if out := m.OutputShape(); len(out) != 1 || out[0] < 1 {
		return 0, 0, fmt.Errorf("model %s has outputs of shape %v; predict needs a classifier, with one value per class", path, out)
	}
	return in[0], in[1], nil
}

// className is the name of class c, or "" when there are no names.
func className(names []string, c int) string {
	if c < len(names) {
		return names[c]
	}
	return ""
}

// printPrediction prints the answer for one image:
//
//	shirt.png: 0 T-shirt/top
//	  inverted: 96% of its border is light
//	  0.9123  0 T-shirt/top
//	  0.0712  6 Shirt
func printPrediction(w io.Writer, p prediction) {
	label := func(c int, name string) string {
		if name == "" {
			return fmt.Sprint(c)
		}
		return fmt.Sprintf("%d %s", c, name)
	}
	fmt.Fprintf(w, "%s: %s\n", p.File, label(p.Class, p.Name))
	if p.Inverted {
		fmt.Fprintf(w, "  inverted: %.0f%% of its border is light\n", 100*p.LightBorder)
	}
	for _, t := range p.Top {
		fmt.Fprintf(w, "  %.4f  %s\n", t.Probability, label(t.Class, t.Name))
	}
}

// probabilities returns the model's outputs v as probabilities: v itself
// when it is a distribution (a softmax output), its softmax otherwise (a
// model that ends in logits).
func probabilities(v []float32) []float64 {
	p := make([]float64, len(v))
	sum, ok := 0.0, true
	for i, x := range v {
		p[i] = float64(x)
		ok = ok && p[i] >= 0 && p[i] <= 1
		sum += p[i]
	}
	if ok && math.Abs(sum-1) < 1e-3 {
		return p
	}
	hi := math.Inf(-1)
	for _, x := range p {
		hi = max(hi, x)
	}
	sum = 0
	for i, x := range p {
		p[i] = math.Exp(x - hi)
		sum += p[i]
	}
	for i := range p {
		p[i] /= sum
	}
	return p
}

// readGray reads a PNG, JPEG or GIF file and returns it in grey levels.
// Transparent pixels are black, as on Fashion-MNIST's background.
func readGray(path string) (*image.Gray, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("image %s is %s, not a regular file", path, fileinfo.Kind(fi.Mode()))
	}
	if fi.Size() > maxImageBytes {
		return nil, fmt.Errorf("image %s has %d bytes, more than the %d predict reads", path, fi.Size(), maxImageBytes)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	cfg, format, err := image.DecodeConfig(bytes.NewReader(b))
	if err != nil {
		return nil, fmt.Errorf("image %s: %v (predict reads PNG, JPEG and GIF)", path, err)
	}
	if cfg.Width < 1 || cfg.Height < 1 || int64(cfg.Width)*int64(cfg.Height) > maxImagePixels {
		return nil, fmt.Errorf("image %s is %d×%d pixels; predict reads images of 1 to %d pixels", path, cfg.Width, cfg.Height, maxImagePixels)
	}
	img, _, err := image.Decode(bytes.NewReader(b))
	if err != nil {
		return nil, fmt.Errorf("image %s: %s: %v", path, format, err)
	}
	return toGray(img), nil
}

// toGray converts img to grey levels (ITU-R BT.601 luma, as color.GrayModel
// does), with its origin at 0, 0.
func toGray(img image.Image) *image.Gray {
	b := img.Bounds()
	g := image.NewGray(image.Rect(0, 0, b.Dx(), b.Dy()))
	if src, ok := img.(*image.Gray); ok {
		for y := 0; y < b.Dy(); y++ {
			copy(g.Pix[y*g.Stride:y*g.Stride+b.Dx()], src.Pix[src.PixOffset(b.Min.X, b.Min.Y+y):])
		}
		return g
	}
	for y := 0; y < b.Dy(); y++ {
		for x := 0; x < b.Dx(); x++ {
			g.SetGray(x, y, color.GrayModel.Convert(img.At(b.Min.X+x, b.Min.Y+y)).(color.Gray))
		}
	}
	return g
}

// borderWidth is the width in pixels of the border that decides the
// inversion: one pixel of a 28×28 image, as much at other sizes.
func borderWidth(g *image.Gray) int {
	return max(1, min(g.Rect.Dx(), g.Rect.Dy())/28)
}

// onBorder reports whether pixel x, y lies in g's border of width r.
func onBorder(g *image.Gray, x, y, r int) bool {
	return x < r || y < r || x >= g.Rect.Dx()-r || y >= g.Rect.Dy()-r
}

// lightBorder returns the fraction of g's border pixels that are light.
func lightBorder(g *image.Gray) float64 {
	r := borderWidth(g)
	light, all := 0, 0
	for y := 0; y < g.Rect.Dy(); y++ {
		for x := 0; x < g.Rect.Dx(); x++ {
			if onBorder(g, x, y, r) {
				all++
				if g.Pix[y*g.Stride+x] >= lightLevel {
					light++
				}
			}
		}
	}
	return float64(light) / float64(all)
}

// borderShade returns the mean grey level of g's border.
func borderShade(g *image.Gray) uint8 {
	r := borderWidth(g)
	sum, all := 0, 0
	for y := 0; y < g.Rect.Dy(); y++ {
		for x := 0; x < g.Rect.Dx(); x++ {
			if onBorder(g, x, y, r) {
				sum += int(g.Pix[y*g.Stride+x])
				all++
			}
		}
	}
	return uint8((sum + all/2) / all)
}

// invertGray turns every grey level v of g into 255 - v.
func invertGray(g *image.Gray) {
	for i, v := range g.Pix {
		g.Pix[i] = 255 - v
	}
}

// fitGray returns g fitted into w×h pixels: unchanged when it has that
// size, otherwise scaled (Catmull-Rom) to fill w or h, keeping its
// proportions, centred, and the rest filled with the shade of its border.
func fitGray(g *image.Gray, w, h int) *image.Gray {
	gw, gh := g.Rect.Dx(), g.Rect.Dy()
	if gw == w && gh == h {
		return g
	}
	scale := min(float64(w)/float64(gw), float64(h)/float64(gh))
	nw := min(w, max(1, int(math.Round(float64(gw)*scale))))
	nh := min(h, max(1, int(math.Round(float64(gh)*scale))))
	dst := image.NewGray(image.Rect(0, 0, w, h))
	draw.Draw(dst, dst.Rect, image.NewUniform(color.Gray{Y: borderShade(g)}), image.Point{}, draw.Src)
	at := image.Rect((w-nw)/2, (h-nh)/2, (w-nw)/2+nw, (h-nh)/2+nh)
	draw.CatmullRom.Scale(dst, at, g, g.Rect, draw.Src, nil)
	return dst
}

// pixels returns g's grey levels scaled to [0, 1] as the training data is
// (v/255).
func pixels(g *image.Gray) []float32 {
	out := make([]float32, 0, g.Rect.Dx()*g.Rect.Dy())
	for y := 0; y < g.Rect.Dy(); y++ {
		for _, v := range g.Pix[y*g.Stride : y*g.Stride+g.Rect.Dx()] {
			out = append(out, float32(v)/255)
		}
	}
	return out
}
