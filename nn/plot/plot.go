// Package plot draws the training curves of an nn.History as a PNG image:
// the loss in the upper panel and the accuracy in the lower one, per epoch
// (numbered from 1 as Fit's progress output numbers them), with the
// validation curves (val_loss, val_accuracy) when Fit logged them, and,
// when TestAccuracy gives it, the accuracy on a test set as a horizontal
// line labelled with its value.
//
// Training curves are solid, validation curves dashed, the test accuracy
// dotted. Epochs whose value is NaN or infinite (a run stopped by
// TerminateOnNaN) are left out of their curve.
package plot

import (
	"bytes"
	"errors"
	"fmt"
	"image"
	"image/color"
	"math"
	"os"
	"path/filepath"

	gplot "gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"

	"github.com/tartanml/tartan/nn"
)

// The default size of the image, in pixels.
const (
	DefaultWidth  = 720
	DefaultHeight = 900
)

// The bounds of Size, in pixels.
const (
	minSide = 100
	maxSide = 10000
)

// dpi is the resolution the image is drawn at: lengths in points become
// pixels at 96 per inch.
const dpi = 96

// An Option changes what History and PNG draw.
type Option func(*settings)

type settings struct {
	title         string
	testAcc       float64
	hasTestAcc    bool
	width, height int
}

// Title puts the text before each panel's title ("TITLE: Loss"), such as
// the model's name.
func Title(text string) Option { return func(s *settings) { s.title = text } }

// TestAccuracy marks the accuracy acc on the test set in the accuracy
// panel: a horizontal line over the epochs, labelled "test accuracy
// 0.9123" (four decimals) in the legend. acc must be a finite number.
func TestAccuracy(acc float64) Option {
	return func(s *settings) { s.testAcc, s.hasTestAcc = acc, true }
}

// Size sets the image's width and height in pixels, from 100 to 10000
// each; the default is DefaultWidth × DefaultHeight.
func Size(width, height int) Option {
	return func(s *settings) { s.width, s.height = width, height }
}

// Colours of the curves.
var (
	trainColor = color.RGBA{R: 31, G: 119, B: 180, A: 255}
	valColor   = color.RGBA{R: 255, G: 127, B: 14, A: 255}
	testColor  = color.RGBA{R: 44, G: 160, B: 44, A: 255}
)

// style is how a series is drawn.
type style int

const (
	solid  style = iota // a training curve
	dashed              // a validation curve
	dotted              // the test accuracy
)

// series is one curve of a panel, with its legend entry.
type series struct {
	name   string // the legend's text
	points plotter.XYs
	style  style
}

// panel is one of the stacked plots.
type panel struct {
	title, yLabel string
	legendTop     bool
	series        []series
}

// build returns the panels History draws for h: a loss panel when h logged
// "loss" or "val_loss", and an accuracy panel when it logged "accuracy" or
// "val_accuracy" or a test accuracy is to be marked. It draws nothing; the
// tests check what it returns.
func build(h *nn.History, s *settings) ([]panel, error) {
	if h == nil {
		return nil, errors.New("plot: no history")
	}
	if len(h.Epochs) == 0 {
		return nil, errors.New("plot: the history has no epochs to draw")
	}
	if s.hasTestAcc && (math.IsNaN(s.testAcc) || math.IsInf(s.testAcc, 0)) {
		return nil, fmt.Errorf("plot: the test accuracy %v is not a finite number", s.testAcc)
	}
	first, last := math.Inf(1), math.Inf(-1)
	for _, e := range h.Epochs {
		first, last = min(first, float64(e+1)), max(last, float64(e+1))
	}
	var panels []panel
	for _, q := range []struct{ key, label string }{{"loss", "Loss"}, {"accuracy", "Accuracy"}} {
		p := panel{title: q.label, yLabel: q.label, legendTop: q.key == "loss"}
		if s.title != "" {
			p.title = s.title + ": " + q.label
		}
		for _, c := range []struct {
			key   string
			style style
		}{{q.key, solid}, {"val_" + q.key, dashed}} {
			vals, ok := h.Metrics[c.key]
			if !ok {
				continue
			}
			if len(vals) != len(h.Epochs) {
				return nil, fmt.Errorf("plot: the history has %d values of %s for %d epochs", len(vals), c.key, len(h.Epochs))
			}
			pts := plotter.XYs{}
			for i, v := range vals {
				if !math.IsNaN(v) && !math.IsInf(v, 0) {
					pts = append(pts, plotter.XY{X: float64(h.Epochs[i] + 1), Y: v})
				}
			}
			if len(pts) > 0 {
				p.series = append(p.series, series{name: c.key, points: pts, style: c.style})
			}
		}
		if q.key == "accuracy" && s.hasTestAcc {
			lo, hi := first, last
			if lo == hi {
				// One epoch: a short line around its point.
				lo, hi = lo-0.25, hi+0.25
			}
			p.series = append(p.series, series{
				name:   fmt.Sprintf("test accuracy %.4f", s.testAcc),
				points: plotter.XYs{{X: lo, Y: s.testAcc}, {X: hi, Y: s.testAcc}},
				style:  dotted,
			})
		}
		if len(p.series) > 0 {
			panels = append(panels, p)
		}
	}
	if len(panels) == 0 {
		return nil, errors.New("plot: the history holds no finite loss or accuracy to draw")
	}
	return panels, nil
}

// PNG draws the curves of h and returns the PNG file's bytes.
func PNG(h *nn.History, opts ...Option) ([]byte, error) {
	s := &settings{width: DefaultWidth, height: DefaultHeight}
	for _, o := range opts {
		if o != nil {
			o(s)
		}
	}
	if s.width < minSide || s.width > maxSide || s.height < minSide || s.height > maxSide {
		return nil, fmt.Errorf("plot: image size %d×%d pixels: each side must be from %d to %d", s.width, s.height, minSide, maxSide)
	}
	panels, err := build(h, s)
	if err != nil {
		return nil, err
	}
	img := vgimg.NewWith(vgimg.UseImage(image.NewRGBA(image.Rect(0, 0, s.width, s.height))), vgimg.UseDPI(dpi))
	dc := draw.New(img)
	tiles := draw.Tiles{Rows: len(panels), Cols: 1,
		PadTop: 2 * vg.Millimeter, PadBottom: 2 * vg.Millimeter, PadLeft: 2 * vg.Millimeter, PadRight: 4 * vg.Millimeter,
		PadX: 2 * vg.Millimeter, PadY: 4 * vg.Millimeter}
	for i, pn := range panels {
		p := gplot.New()
		p.Title.Text = pn.title
		p.X.Label.Text = "Epoch"
		p.X.Tick.Marker = epochTicks{}
		p.Y.Label.Text = pn.yLabel
		p.Add(plotter.NewGrid())
		for _, sr := range pn.series {
			if err := addSeries(p, sr); err != nil {
				return nil, err
			}
		}
		p.Legend.Top = pn.legendTop
		p.Draw(tiles.At(dc, 0, i))
	}
	var buf bytes.Buffer
	if _, err := (vgimg.PngCanvas{Canvas: img}).WriteTo(&buf); err != nil {
		return nil, fmt.Errorf("plot: encoding the PNG: %w", err)
	}
	return buf.Bytes(), nil
}

// addSeries draws one series into p, with its legend entry.
func addSeries(p *gplot.Plot, sr series) error {
	if sr.style == dotted {
		line, err := plotter.NewLine(sr.points)
		if err != nil {
			return fmt.Errorf("plot: %s: %w", sr.name, err)
		}
		line.Color = testColor
		line.Width = vg.Points(1.5)
		line.Dashes = []vg.Length{vg.Points(1.5), vg.Points(2.5)}
		p.Add(line)
		p.Legend.Add(sr.name, line)
		return nil
	}
	line, points, err := plotter.NewLinePoints(sr.points)
	if err != nil {
		return fmt.Errorf("plot: %s: %w", sr.name, err)
	}
	c := trainColor
	if sr.style == dashed {
		c = valColor
		line.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
	}
	line.Color, points.Color = c, c
	p.Add(line, points)
	p.Legend.Add(sr.name, line, points)
	return nil
}

// History draws the curves of h into the PNG file at path, through a
// temporary file in the same directory and a rename, so that the file is
// never left half written. When path is a symbolic link, the file it leads
// to is replaced and the link stays.
func History(path string, h *nn.History, opts ...Option) error {
	b, err := PNG(h, opts...)
	if err != nil {
		return err
	}
	target := path
	if t, err := filepath.EvalSymlinks(path); err == nil {
		target = t
	}
	f, err := os.CreateTemp(filepath.Dir(target), ".plot-*.tmp")
	if err != nil {
		return fmt.Errorf("plot: writing %s: %w", path, err)
	}
	tmp := f.Name()
	err = f.Chmod(0o644)
	if err == nil {
		_, err = f.Write(b)
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, target)
	}
	if err != nil {
		os.Remove(tmp)
		return fmt.Errorf("plot: writing %s: %w", path, err)
	}
	return nil
}

// epochTicks marks whole epochs on the x axis, every one when there are
// few.
type epochTicks struct{}

// Ticks implements plot.Ticker.
func (epochTicks) Ticks(lo, hi float64) []gplot.Tick {
	step := max(1, int(math.Ceil((hi-lo)/10)))
	var ts []gplot.Tick
	for e := int(math.Ceil(lo)); float64(e) <= hi; e += step {
		ts = append(ts, gplot.Tick{Value: float64(e), Label: fmt.Sprint(e)})
	}
	return ts
}
