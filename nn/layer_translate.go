package nn

import (
	"fmt"
	"math"
	"strings"

	"github.com/tartanml/tartan/op"
	"github.com/tartanml/tartan/tile"
)

// randomTranslationLayer is Keras's RandomTranslation.
type randomTranslationLayer struct {
	layerBase
	cfg randomTranslationConfig
}

type randomTranslationConfig struct {
	layerCommon
	HeightFactor  []float64 `json:"height_factor"` // [lower, upper]
	WidthFactor   []float64 `json:"width_factor"`  // [lower, upper]
	FillMode      string    `json:"fill_mode"`
	Interpolation string    `json:"interpolation"`
	FillValue     float64   `json:"fill_value"`
}

// translateSettings holds the options only RandomTranslation takes.
type translateSettings struct {
	fillMode           string
	fillValue          float64
	heightLo, heightHi *float64
	widthLo, widthHi   *float64
}

// translateOption is a LayerOption of RandomTranslation: RandomTranslation
// applies it to its own settings, and it records its name so that any
// other layer rejects it.
type translateOption struct {
	name string
	set  func(*translateSettings)
}

func (o translateOption) applyLayer(s *layerSettings) { s.given = append(s.given, o.name) }

// FillMode sets how RandomTranslation fills the points a translation moves
// in from outside the image, as Keras's fill_mode does: "reflect" (the
// default) mirrors the image about its edge (d c b a | a b c d | d c b a),
// "wrap" repeats it (a b c d | a b c d | a b c d), "constant" fills with
// FillValue (k k k k | a b c d | k k k k), and "nearest" repeats the edge
// pixel (a a a a | a b c d | d d d d).
func FillMode(mode string) LayerOption {
	return translateOption{"fill_mode", func(s *translateSettings) { s.fillMode = strings.ToLower(mode) }}
}

// FillValue sets the value RandomTranslation's "constant" fill mode fills
// with (0 by default).
func FillValue(v float64) LayerOption {
	return translateOption{"fill_value", func(s *translateSettings) { s.fillValue = v }}
}

// HeightRange replaces RandomTranslation's vertical range [−heightFactor,
// heightFactor] with [lo, hi], as a Keras height_factor given as a pair
// does: the shift is drawn uniformly from lo·height to hi·height.
func HeightRange(lo, hi float64) LayerOption {
	return translateOption{"height_range", func(s *translateSettings) { s.heightLo, s.heightHi = &lo, &hi }}
}

// WidthRange replaces RandomTranslation's horizontal range [−widthFactor,
// widthFactor] with [lo, hi], as a Keras width_factor given as a pair does.
func WidthRange(lo, hi float64) LayerOption {
	return translateOption{"width_range", func(s *translateSettings) { s.widthLo, s.widthHi = &lo, &hi }}
}

// RandomTranslation returns a layer that, in training, shifts every image
// (batch, height, width, channels) by its own random offset, as Keras's
// RandomTranslation does: down by dy = u·height and right by dx = v·width
// pixels, u drawn uniformly from [−heightFactor, heightFactor] and v from
// [−widthFactor, widthFactor] (HeightRange and WidthRange set other
// ranges; every bound lies in [−1, 1]). Output pixel (y, x) is the input
// at (y − dy, x − dx), read by Interpolation: "bilinear" (the default)
// blends the four nearest pixels, "nearest" takes the nearest one (halves
// rounding up). Points outside the image are filled as FillMode says
// ("reflect" by default; FillValue for "constant"). In inference it is
// the identity. Offsets are drawn from the step's seed and the layer's
// stream, as the other random layers' are.
func RandomTranslation(heightFactor, widthFactor float64, opts ...LayerOption) Layer {
	ts := &translateSettings{fillMode: "reflect"}
	var rest []LayerOption
	for _, o := range opts {
		if to, ok := o.(translateOption); ok {
			to.set(ts)
		}
		rest = append(rest, o)
	}
	s, err := newSettings("RandomTranslation", []string{"fill_mode", "fill_value", "height_range", "width_range", "interpolation"}, rest)
	cfg := randomTranslationConfig{layerCommon: common(s), HeightFactor: []float64{0 - heightFactor, heightFactor},
		WidthFactor: []float64{0 - widthFactor, widthFactor}, FillMode: ts.fillMode, Interpolation: s.ext.interpolation, FillValue: ts.fillValue}
	if cfg.Interpolation == "" {
		cfg.Interpolation = "bilinear"
	}
	if ts.heightLo != nil {
		cfg.HeightFactor = []float64{*ts.heightLo, *ts.heightHi}
	}
	if ts.widthLo != nil {
		cfg.WidthFactor = []float64{*ts.widthLo, *ts.widthHi}
	}
	switch {
	case err != nil:
	case ts.heightLo == nil && heightFactor < 0:
		err = fmt.Errorf("nn: RandomTranslation: height factor %g must not be negative (HeightRange takes a range)", heightFactor)
	case ts.widthLo == nil && widthFactor < 0:
		err = fmt.Errorf("nn: RandomTranslation: width factor %g must not be negative (WidthRange takes a range)", widthFactor)
	}
	return newRandomTranslation(cfg, err)
}

func newRandomTranslation(cfg randomTranslationConfig, err error) Layer {
	l := &randomTranslationLayer{layerBase: newBase("RandomTranslation", cfg.Name, cfg.Trainable, err), cfg: cfg}
	rangeOK := func(r []float64) bool {
		return len(r) == 2 && r[0] >= -1 && r[1] <= 1 && r[0] <= r[1]
	}
	l.err = firstErr(l.err,
		check(rangeOK(cfg.HeightFactor), "nn: RandomTranslation: height range %v must be a lower and an upper bound within [-1, 1], the lower first", cfg.HeightFactor),
		check(rangeOK(cfg.WidthFactor), "nn: RandomTranslation: width range %v must be a lower and an upper bound within [-1, 1], the lower first", cfg.WidthFactor),
		check(cfg.FillMode == "reflect" || cfg.FillMode == "wrap" || cfg.FillMode == "constant" || cfg.FillMode == "nearest",
			"nn: RandomTranslation: fill mode %q must be \"reflect\", \"wrap\", \"constant\" or \"nearest\"", cfg.FillMode),
		check(cfg.Interpolation == "bilinear" || cfg.Interpolation == "nearest",
			"nn: RandomTranslation: interpolation %q must be \"bilinear\" or \"nearest\"", cfg.Interpolation),
		check(!math.IsNaN(cfg.FillValue) && !math.IsInf(cfg.FillValue, 0), "nn: RandomTranslation: fill value %v must be finite", cfg.FillValue))
	return l
}

func (l *randomTranslationLayer) build(in []tile.Shape) (tile.Shape, error) {
	return imageInput(l, in)
}

// call draws two uniform numbers per sample, u[n, 0] for the vertical
// shift and u[n, 1] for the horizontal one, and resamples each image
// through two interpolation matrices, one per axis: Wy[n, y, i] is the
// weight of input row i in output row y, Wx[n, x, j] that of input column
// j in output column x, with the fill mode folded into which rows and
// columns the weights land on. The output is
// Σᵢⱼ Wy[n, y, i]·Wx[n, x, j]·x[n, i, j, c], two contractions that the
// gradient flows back through, plus for "constant" the fill value times
// the weight that fell outside the image.
func (l *randomTranslationLayer) call(c *callContext, in []*tile.Tensor) *tile.Tensor {
	x := in[0]
	if !c.training || c.seed == nil {
		return x
	}
	g := c.g
	n, h, w, ch := x.Dim(0), x.Dim(1), x.Dim(2), x.Dim(3)
	u := g.Random(c.seed, x.DType(), tile.Shape{n, 2}, l.stream)
	shift := func(col int, r []float64, size int) *tile.Tensor {
		draw := g.Reshape(g.Slice(u, []int{0, col}, []int{n, col + 1}, nil), tile.Shape{n, 1, 1})
		f := g.Add(g.Mul(draw, g.ScalarLike(draw, r[1]-r[0])), g.ScalarLike(draw, r[0]))
		return g.Mul(f, g.ScalarLike(f, float64(size)))
	}
	wy, vy := l.resampling(g, shift(0, l.cfg.HeightFactor, h), h, x.DType())
	wx, vx := l.resampling(g, shift(1, l.cfg.WidthFactor, w), w, x.DType())
	ix := func(names ...string) []tile.Affine {
		out := make([]tile.Affine, len(names))
		for i, s := range names {
			out[i] = tile.Ix(s)
		}
		return out
	}
	rows := g.Contract(tile.Sum, tile.CombMul, tile.Shape{n, h, w, ch}, ix("n", "y", "j", "c"),
		[]tile.Operand{{Tensor: wy, Index: ix("n", "y", "i")}, {Tensor: x, Index: ix("n", "i", "j", "c")}})
	y := g.Contract(tile.Sum, tile.CombMul, tile.Shape{n, h, w, ch}, ix("n", "y", "x", "c"),
		[]tile.Operand{{Tensor: wx, Index: ix("n", "x", "j")}, {Tensor: rows, Index: ix("n", "y", "j", "c")}})
	if l.cfg.FillMode == "constant" && l.cfg.FillValue != 0 {
		inside := g.Mul(g.Reshape(vy, tile.Shape{n, h, 1, 1}), g.Reshape(vx, tile.Shape{n, 1, w, 1}))
		outside := g.Sub(g.ScalarLike(inside, 1), inside)
		y = g.Add(y, g.Mul(outside, g.ScalarLike(outside, l.cfg.FillValue)))
	}
	return y
}

// resampling returns the interpolation matrix (batch, size, size) of one
// axis for the per-sample shifts d (batch, 1, 1), and for the "constant"
// fill mode the weight of each output position that lands inside the image
// (batch, size), nil otherwise.
func (l *randomTranslationLayer) resampling(g *tile.Graph, d *tile.Tensor, size int, dt tile.DType) (*tile.Tensor, *tile.Tensor) {
	n := d.Dim(0)
	out := g.Iota(dt, tile.Shape{1, size, 1}, 1)
	src := g.Sub(out, d) // (batch, size, 1): where each output point reads
	inIdx := g.Iota(dt, tile.Shape{1, 1, size}, 2)
	type tap struct{ at, weight *tile.Tensor }
	var taps []tap
	if l.cfg.Interpolation == "nearest" {
		taps = []tap{{g.Elementwise(tile.Floor, g.Add(src, g.ScalarLike(src, 0.5))), nil}}
	} else {
		lo := g.Elementwise(tile.Floor, src)
		frac := g.Sub(src, lo)
		taps = []tap{{lo, g.Sub(g.ScalarLike(frac, 1), frac)}, {g.Add(lo, g.ScalarLike(lo, 1)), frac}}
	}
	var m *tile.Tensor
	for _, t := range taps {
		at := l.fold(g, t.at, size)
		hit := g.Cast(g.Elementwise(tile.Eq, g.BroadcastTo(at, tile.Shape{n, size, size}), g.BroadcastTo(inIdx, tile.Shape{n, size, size})), dt)
		if t.weight != nil {
			hit = g.Mul(hit, t.weight)
		}
		if m == nil {
			m = hit
		} else {
			m = g.Add(m, hit)
		}
	}
	if l.cfg.FillMode != "constant" {
		return m, nil
	}
	return m, op.Sum(g, m, []int{2}, false)
}

// fold maps positions along an axis of size points (whole numbers, any
// sign) into the image as the fill mode extends it; "constant" leaves
// them, so that positions outside match no pixel.
func (l *randomTranslationLayer) fold(g *tile.Graph, at *tile.Tensor, size int) *tile.Tensor {
	s := float64(size)
	mod := func(v *tile.Tensor, p float64) *tile.Tensor {
		return g.Sub(v, g.Mul(g.Elementwise(tile.Floor, g.Div(v, g.ScalarLike(v, p))), g.ScalarLike(v, p)))
	}
	switch l.cfg.FillMode {
	case "wrap":
		return mod(at, s)
	case "nearest":
		return g.Minimum(g.Maximum(at, g.ScalarLike(at, 0)), g.ScalarLike(at, s-1))
	case "reflect":
		t := mod(at, 2*s)
		return g.Select(g.Elementwise(tile.Lt, t, g.ScalarLike(t, s)), t, g.Sub(g.ScalarLike(t, 2*s-1), t))
	}
	return at
}

func (l *randomTranslationLayer) config() any {
	cfg := l.cfg
	cfg.Name = l.name
	return cfg
}
