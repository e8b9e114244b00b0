package main

import (
	"bytes"
	"fmt"
	"image/color"
	"math"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"

	"github.com/tartanml/tartan/nn"
)

// curveColors are the colours of the training and validation curves.
var curveColors = []color.Color{color.RGBA{R: 31, G: 119, B: 180, A: 255}, color.RGBA{R: 255, G: 127, B: 14, A: 255}}

// plotHistory draws the training curves of hist into a PNG file: the loss
// on top and the accuracy below, per epoch (numbered from 1), with the
// validation curves when there are any.
func plotHistory(path, title string, hist *nn.History) error {
	if len(hist.Epochs) == 0 {
		return fmt.Errorf("--plot: no epochs to plot")
	}
	panels := []struct{ key, label string }{{"loss", "Loss"}, {"accuracy", "Accuracy"}}
	const w, h = 16 * vg.Centimeter, 10 * vg.Centimeter
	img := vgimg.New(w, 2*h)
	dc := draw.New(img)
	tiles := draw.Tiles{Rows: 2, Cols: 1, PadTop: vg.Millimeter, PadBottom: vg.Millimeter, PadX: vg.Millimeter, PadY: 2 * vg.Millimeter}
	for i, pn := range panels {
		p := plot.New()
		p.Title.Text = fmt.Sprintf("%s: %s", title, pn.label)
		p.X.Label.Text = "Epoch"
		p.X.Tick.Marker = epochTicks{}
		p.Y.Label.Text = pn.label
		p.Add(plotter.NewGrid())
		for j, key := range []string{pn.key, "val_" + pn.key} {
			vals := hist.Metrics[key]
			if len(vals) == 0 {
				continue
			}
			pts := make(plotter.XYs, 0, len(vals))
			for k, v := range vals {
				if k < len(hist.Epochs) && !math.IsNaN(v) && !math.IsInf(v, 0) {
					pts = append(pts, plotter.XY{X: float64(hist.Epochs[k] + 1), Y: v})
				}
			}
			if len(pts) == 0 {
				continue
			}
			line, points, err := plotter.NewLinePoints(pts)
			if err != nil {
				return fmt.Errorf("--plot: %w", err)
			}
			line.Color, points.Color = curveColors[j], curveColors[j]
			if j == 1 {
				line.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
			}
			p.Add(line, points)
			p.Legend.Add(key, line, points)
		}
		p.Legend.Top = pn.key == "loss"
		p.Draw(tiles.At(dc, 0, i))
	}
	var buf bytes.Buffer
	if _, err := (vgimg.PngCanvas{Canvas: img}).WriteTo(&buf); err != nil {
		return fmt.Errorf("--plot: %w", err)
	}
	return writeAtomic(path, buf.Bytes())
}

// epochTicks marks whole epochs on the x axis, every one when there are few.
type epochTicks struct{}

// Ticks implements plot.Ticker.
func (epochTicks) Ticks(lo, hi float64) []plot.Tick {
	step := max(1, int(math.Ceil((hi-lo)/10)))
	var ts []plot.Tick
	for e := int(math.Ceil(lo)); float64(e) <= hi; e += step {
		ts = append(ts, plot.Tick{Value: float64(e), Label: fmt.Sprint(e)})
	}
	return ts
}
